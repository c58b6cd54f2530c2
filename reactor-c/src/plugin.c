/* plugin.c: what the host sees first. The entry symbol and its descriptor,
 * the vtable, create/destroy with the option rules of
 * docs/abi/reactor-guide.md, last_error_message, and the three ways an event
 * ends (docs/abi/event.md): cancel, close, dispose; plus set_ref. */
#define _GNU_SOURCE
#include "reactor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The context init returns: the host's services (logging). */
typedef struct {
    const AaHostApi *host;
} Ctx;

/* --- errors and logs ----------------------------------------------------- */

AaStatus rc_fail(Reactor *r, AaStatus status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    r->error_len = n < 0 ? 0 : strlen(r->error);
    return status;
}

static void log_to(const AaHostApi *host, uint32_t level, const char *fmt, va_list ap) {
    if (host == NULL || host->log == NULL) {
        return;
    }
    AaStr target = {(const uint8_t *)"reactor_c", 9};
    if (host->log_enabled != NULL && !host->log_enabled(host->host_ctx, level, target)) {
        return;
    }
    char msg[512];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    if (n < 0) {
        return;
    }
    AaStr text = {(const uint8_t *)msg, strlen(msg)};
    AaStr file = {(const uint8_t *)__FILE__, strlen(__FILE__)};
    host->log(host->host_ctx, level, target, text, file, __LINE__);
}

void rc_log(const Reactor *r, uint32_t level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_to(r->ctx != NULL ? ((const Ctx *)r->ctx)->host : NULL, level, fmt, ap);
    va_end(ap);
}

static void ctx_log(AaPluginCtx *ctx, uint32_t level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_to(ctx != NULL ? ((const Ctx *)ctx)->host : NULL, level, fmt, ap);
    va_end(ap);
}

/* --- events -------------------------------------------------------------- */

Event *ev_new(Reactor *r, uint32_t kind, uint32_t flags, void *ud) {
    Event *ev = calloc(1, sizeof *ev);
    if (ev == NULL) {
        return NULL;
    }
    ev->hdr.struct_size = sizeof(AaEvent);
    ev->hdr.kind = kind;
    ev->hdr.flags = flags;
    ev->magic = RC_EVENT_MAGIC;
    ev->r = r;
    ev->ud = ud;
    ev->referenced = true;
    ev->close = OPEN;
    r->live_events++;
    return ev;
}

Event *ev_check(AaEvent *ev) {
    Event *e = (Event *)ev;
    return e != NULL && e->magic == RC_EVENT_MAGIC ? e : NULL;
}

/* Whether the event can still produce a callback of its own. */
bool ev_active(const Event *ev) {
    switch (ev->hdr.kind) {
    case AA_EVENT_TIMER: return ev->u.timer.heap_index >= 0;
    case AA_EVENT_POLL:
        return ev->u.poll.armed && ev->u.poll.interest != 0 && ev->u.poll.fs != NULL;
    case AA_EVENT_IO: return ev->u.io.queued;
    case AA_EVENT_TRIGGER: return atomic_load(&ev->u.trigger.open) != 0;
    case AA_EVENT_SIGNAL: return ev->u.signal.active;
    default: return false;
    }
}

/* alive() counts active, referenced, non-hidden events (docs/abi/loop.md),
 * and an event with a callback still owed (a cancellation, a close in
 * progress) is active until that callback ran. Every state change ends
 * with ev_touch, which keeps r->alive equal to the number of such events. */
void ev_touch(Event *ev) {
    bool live = !ev->disposed && ev->referenced && !(ev->hdr.flags & AA_EVF_HIDDEN) &&
                (ev_active(ev) || ev->scheduled > 0 || ev->close == CLOSING);
    if (live != ev->counted) {
        ev->counted = live;
        if (live) {
            ev->r->alive++;
        } else {
            ev->r->alive--;
        }
    }
}

void ev_release(Event *ev) {
    if (ev->disposed && ev->scheduled == 0) {
        ev->magic = 0;
        free(ev);
    }
}

/* --- create and destroy -------------------------------------------------- */

/* Writes `s` (len bytes) quoted, with escapes, so a key holding a newline
 * cannot break the one-line message. */
static void quote(char *out, size_t cap, const uint8_t *s, size_t len) {
    size_t o = 0;
    if (cap < 8) {
        return;
    }
    out[o++] = '"';
    for (size_t i = 0; i < len && o + 6 < cap; i++) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
}

/* One option; 0 or AA_E_INVALID with the reason in `why`. */
static AaStatus apply_option(Reactor *r, const AaKv *kv, char *why, size_t cap) {
    const uint8_t *key = kv->key.ptr;
    size_t len = kv->key.len;
    char shown[160];
    quote(shown, sizeof shown, key, len);
    size_t prefix = strlen(RC_OPTION_PREFIX);
    if (len >= prefix && memcmp(key, RC_OPTION_PREFIX, prefix) == 0) {
        const uint8_t *name = key + prefix;
        size_t name_len = len - prefix;
        if (name_len == 6 && memcmp(name, "events", 6) == 0) {
            char value[32] = {0};
            char *end = NULL;
            long n = 0;
            bool ok = kv->value.len > 0 && kv->value.len < sizeof value;
            if (ok) {
                memcpy(value, kv->value.ptr, kv->value.len);
                errno = 0;
                n = strtol(value, &end, 10);
                ok = errno == 0 && *end == '\0' && n >= 1 && n <= 4096;
            }
            if (!ok) {
                char v[160];
                quote(v, sizeof v, kv->value.ptr, kv->value.len);
                snprintf(why, cap,
                         "invalid value %s for reactor option %s: expected an integer from 1 to "
                         "4096",
                         v, shown);
                return AA_E_INVALID;
            }
            r->max_events = (int)n;
            return AA_OK;
        }
        snprintf(why, cap, "unknown reactor option %s (known: c.events)", shown);
        return AA_E_INVALID;
    }
    const uint8_t *dot = len > 0 ? memchr(key, '.', len) : NULL;
    if (dot == NULL || dot == key) {
        snprintf(why, cap,
                 "unknown reactor option %s: reactor options are written c.<option> (known: "
                 "c.events)",
                 shown);
        return AA_E_INVALID;
    }
    return AA_OK; /* another plugin's option: one list serves every reactor */
}

/* The one error channel of create (docs/abi/reactor-guide.md, item 10): the
 * reason goes into err_buf, which the host prints once, naming the plugin;
 * only without a buffer does it go to the log. */
static AaStatus create_failed(AaPluginCtx *ctx, const AaReactorConfig *cfg, bool has_buf,
                              AaStatus status, const char *why) {
    if (has_buf && cfg->err_buf != NULL && cfg->err_cap > 0) {
        snprintf((char *)cfg->err_buf, cfg->err_cap, "%s", why);
    } else {
        ctx_log(ctx, AA_LOG_WARN, "create: %s", why);
    }
    return status;
}

static AaStatus rc_create(AaPluginCtx *ctx, const AaReactorConfig *cfg, AaReactor **out) {
    size_t v1_0 = offsetof(AaReactorConfig, n_options) + sizeof(size_t);
    if (cfg == NULL || out == NULL || cfg->struct_size < v1_0) {
        return create_failed(ctx, cfg, false, AA_E_INVALID,
                             "the config is NULL or smaller than ABI 1.0's, or out is NULL");
    }
    bool has_buf = cfg->struct_size >= offsetof(AaReactorConfig, err_cap) + sizeof(size_t);
    char why[512];
    Reactor *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return create_failed(ctx, cfg, has_buf, AA_E_NOMEM, "out of memory");
    }
    r->ctx = ctx;
    r->max_events = 256;
    r->signal_slot = -1;
    r->epfd = -1;
    r->wakefd = -1;
    for (size_t i = 0; i < cfg->n_options; i++) {
        AaStatus st = apply_option(r, &cfg->options[i], why, sizeof why);
        if (st != AA_OK) {
            free(r);
            return create_failed(ctx, cfg, has_buf, st, why);
        }
    }
    r->events = calloc((size_t)r->max_events, sizeof *r->events);
    if (r->events == NULL) {
        free(r);
        return create_failed(ctx, cfg, has_buf, AA_E_NOMEM, "out of memory");
    }
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (r->epfd < 0) {
        int e = errno;
        snprintf(why, sizeof why, "epoll_create1: %s", strerror(e));
        free(r->events);
        free(r);
        return create_failed(ctx, cfg, has_buf, -e, why);
    }
    r->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    /* The wake descriptor is level-triggered: it stays readable until
     * run_once drains it, so a wake before the wait is never lost. */
    struct epoll_event wake = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
    if (r->wakefd < 0 || epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->wakefd, &wake) < 0) {
        int e = errno;
        snprintf(why, sizeof why, "eventfd: %s", strerror(e));
        close(r->epfd);
        if (r->wakefd >= 0) {
            close(r->wakefd);
        }
        free(r->events);
        free(r);
        return create_failed(ctx, cfg, has_buf, -e, why);
    }
    rc_clock(r);
    rc_log(r, AA_LOG_DEBUG, "created a loop (epoll fd %d, %d events per wait)", r->epfd,
           r->max_events);
    *out = (AaReactor *)r;
    return AA_OK;
}

static AaStatus rc_destroy(AaReactor *ar) {
    Reactor *r = (Reactor *)ar;
    if (r == NULL) {
        return AA_E_INVALID;
    }
    if (r->running) {
        return rc_fail(r, AA_E_INVALID, "destroy: called from inside run_once");
    }
    if (r->live_events > 0) {
        return rc_fail(r, AA_E_BUSY, "destroy: %zu events are not disposed yet",
                       r->live_events);
    }
    /* Every event is disposed: what is left are deferred items of disposed
     * events (each frees its event once it is the last), and descriptor
     * states with nothing in them. */
    loop_drop_deferred(r);
    signal_release(r);
    for (size_t i = 0; i < r->fds_cap; i++) {
        free(r->fds[i]);
    }
    free(r->fds);
    free(r->dirty);
    free(r->heap);
    free(r->events);
    close(r->wakefd);
    close(r->epfd);
    free(r);
    return AA_OK;
}

/* --- cancel, close, dispose, set_ref ------------------------------------- */

static AaStatus rc_cancel(AaEvent *aev, AaStatus reason) {
    Event *ev = ev_check(aev);
    if (ev == NULL) {
        return AA_E_INVALID;
    }
    Reactor *r = ev->r;
    if (reason >= 0) {
        return rc_fail(r, AA_E_INVALID, "cancel: reason %d is not a negative status", reason);
    }
    if (ev->close != OPEN) {
        return rc_fail(r, AA_E_CLOSED, "cancel: the event is closed or closing");
    }
    if (!rc_reserve(r, 1)) {
        return rc_fail(r, AA_E_NOMEM, "cancel: out of memory");
    }
    int64_t value = 0;
    bool pending = false;
    switch (ev->hdr.kind) {
    case AA_EVENT_TIMER: pending = timer_disarm(ev); break;
    case AA_EVENT_POLL:
        /* A cancelled poll stays attached to its descriptor: poll_set_interest
         * re-arms it (docs/abi/poll.md). */
        pending = ev_active(ev);
        ev->u.poll.armed = false;
        ev->u.poll.recheck = false;
        break;
    case AA_EVENT_IO:
        pending = io_withdraw(ev);
        if (!pending && ev->scheduled > 0) {
            return AA_OK; /* completed already: its real result is on its way */
        }
        break;
    case AA_EVENT_TRIGGER: pending = trigger_end(ev); break;
    case AA_EVENT_SIGNAL:
        value = ev->u.signal.signum;
        pending = signal_stop(ev);
        break;
    default: break;
    }
    if (!pending) {
        return rc_fail(r, AA_E_INVALID, "cancel: nothing is pending on the event");
    }
    rc_defer(ev, reason, value);
    ev_touch(ev);
    return AA_OK;
}

/* How many deferred callbacks closing `fd` through the reactor may queue. */
static size_t fd_waiters(Reactor *r, int fd) {
    FdState *fs = fd_get(r, fd);
    size_t n = 0;
    if (fs == NULL) {
        return 0;
    }
    for (Event *e = fs->readers; e != NULL; e = e->u.io.next) n++;
    for (Event *e = fs->writers; e != NULL; e = e->u.io.next) n++;
    for (Event *e = fs->polls; e != NULL; e = e->u.poll.next) n++;
    return n;
}

static AaStatus rc_close(AaEvent *aev, AaClosedCb on_closed, void *ud) {
    Event *ev = ev_check(aev);
    if (ev == NULL) {
        return AA_E_INVALID;
    }
    Reactor *r = ev->r;
    if (ev->close != OPEN) {
        return rc_fail(r, AA_E_CLOSED, "close: the event is closed or closing");
    }
    bool owns = ev->hdr.kind == AA_EVENT_POLL && (ev->hdr.flags & AA_EVF_OWNS_FD);
    size_t need = 2 + (owns ? fd_waiters(r, ev->u.poll.fd) : 0);
    if (!rc_reserve(r, need)) {
        return rc_fail(r, AA_E_NOMEM, "close: out of memory");
    }
    ev->close = CLOSING;
    /* Closing ends the handle: its pending operation completes first with
     * -ECANCELED (a request), or silently (every other kind); then one
     * on_closed (AA-R4). */
    switch (ev->hdr.kind) {
    case AA_EVENT_TIMER: timer_disarm(ev); break;
    case AA_EVENT_POLL:
        if (poll_withdraw(ev) && owns) {
            rc_forget_fd(r, ev->u.poll.fd, true);
        }
        break;
    case AA_EVENT_IO:
        if (io_withdraw(ev)) {
            rc_defer(ev, 0, -ECANCELED);
        }
        break;
    case AA_EVENT_TRIGGER: trigger_end(ev); break;
    case AA_EVENT_SIGNAL: signal_stop(ev); break;
    default: break;
    }
    rc_defer_closed(ev, on_closed, ud);
    ev_touch(ev);
    return AA_OK;
}

static void rc_dispose(AaEvent *aev) {
    Event *ev = ev_check(aev);
    if (ev == NULL || ev->disposed) {
        return;
    }
    Reactor *r = ev->r;
    ev->disposed = true;
    r->live_events--;
    switch (ev->hdr.kind) {
    case AA_EVENT_TIMER: timer_disarm(ev); break;
    case AA_EVENT_POLL:
        if (poll_withdraw(ev) && (ev->hdr.flags & AA_EVF_OWNS_FD)) {
            rc_forget_fd(r, ev->u.poll.fd, true);
        }
        break;
    case AA_EVENT_IO: io_withdraw(ev); break;
    case AA_EVENT_TRIGGER:
        trigger_end(ev);
        trigger_unlink(ev);
        break;
    case AA_EVENT_SIGNAL:
        signal_stop(ev);
        signal_unlink(ev);
        break;
    default: break;
    }
    ev_touch(ev);
    ev_release(ev);
}

static void rc_set_ref(AaEvent *aev, bool referenced) {
    Event *ev = ev_check(aev);
    if (ev != NULL) {
        ev->referenced = referenced;
        ev_touch(ev);
    }
}

static size_t rc_last_error_message(const AaReactor *ar, uint8_t *buf, size_t cap) {
    const Reactor *r = (const Reactor *)ar;
    if (r == NULL) {
        return 0;
    }
    if (cap > 0 && buf != NULL) {
        size_t n = r->error_len < cap - 1 ? r->error_len : cap - 1;
        memcpy(buf, r->error, n);
        buf[n] = 0;
    }
    return r->error_len;
}

#if AA_IMPLEMENTS_MINOR >= 1
static uint64_t rc_instance_caps(const AaReactor *r) {
    (void)r;
    return RC_CAPS;
}
#endif

/* --- the vtable and the descriptor --------------------------------------- */

static const AaReactorVTable VTABLE = {
    .hdr = {.struct_size = sizeof(AaReactorVTable), .iface_minor = AA_PLUGIN_MINOR},
    .caps = RC_CAPS,
    /* required */
    .create = rc_create,
    .destroy = rc_destroy,
    .run_once = rc_run_once,
    .alive = rc_alive,
    .now_ns = rc_now_ns,
    .wake = rc_wake,
    .timer_new = rc_timer_new,
    .timer_rearm = rc_timer_rearm,
    .poll_new = rc_poll_new,
    .poll_set_interest = rc_poll_set_interest,
    .trigger_new = rc_trigger_new,
    .trigger_fire = rc_trigger_fire,
    .io_submit = rc_io_submit,
    .set_ref = rc_set_ref,
    .cancel = rc_cancel,
    .close = rc_close,
    .dispose = rc_dispose,
    /* optional */
    .last_error_message = rc_last_error_message,
    .signal_new = rc_signal_new,
    .process_new = NULL,  /* no AA_CAP_PROCESS: the host waits on its pool */
    .fs_watch_new = NULL, /* no AA_CAP_FS_WATCH: fs::watch is unsupported */
    .dns_resolve = NULL,  /* no AA_CAP_DNS: the host resolves on its pool */
#if AA_IMPLEMENTS_MINOR >= 1
    .instance_caps = rc_instance_caps,
#endif
};

static AaStatus rc_init(const AaHostApi *host, AaPluginCtx **out) {
    if (out == NULL || host == NULL || host->abi_major != AA_ABI_MAJOR) {
        return AA_E_VERSION;
    }
    Ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        return AA_E_NOMEM;
    }
    ctx->host = host;
    *out = (AaPluginCtx *)ctx;
    return AA_OK;
}

static void rc_deinit(AaPluginCtx *ctx) { free(ctx); }

static const AaIfaceHeader *rc_get_interface(AaPluginCtx *ctx, AaStr id) {
    (void)ctx;
    size_t n = strlen(AA_IFACE_REACTOR_V1);
    if (id.len == n && memcmp(id.ptr, AA_IFACE_REACTOR_V1, n) == 0) {
        return &VTABLE.hdr;
    }
    return NULL;
}

static const AaPluginDesc DESC = {
    .struct_size = sizeof(AaPluginDesc),
    .abi_major = AA_ABI_MAJOR,
    .abi_minor = AA_PLUGIN_MINOR,
    .role = AA_ROLE_REACTOR,
    .name = RC_NAME,
    .version = "0.1.0",
    .vendor = "async-abi reference C reactor",
    .init = rc_init,
    .deinit = rc_deinit,
    .get_interface = rc_get_interface,
};

/* The entry symbol: no side effects, a static descriptor (AA-R7). */
__attribute__((visibility("default"))) const AaPluginDesc *aa_reactor_entry_v1(void) {
    return &DESC;
}
