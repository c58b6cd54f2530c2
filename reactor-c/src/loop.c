/* loop.c: one iteration (docs/abi/loop.md) and what it drives directly: the
 * clock, the deferred callbacks, the descriptor table, timers, polls,
 * triggers and wake. Requests are in io.c, signals in signal.c. */
#define _GNU_SOURCE
#include "reactor.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAKE_TAG UINT64_MAX /* epoll data of the wake eventfd; descriptors use their number */

/* --- clock --------------------------------------------------------------- */

uint64_t rc_clock(Reactor *r) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (now > r->now) {
        r->now = now;
    }
    return r->now;
}

uint64_t rc_now_ns(const AaReactor *r) { return ((const Reactor *)r)->now; }

uint32_t rc_alive(const AaReactor *r) { return ((const Reactor *)r)->alive; }

AaStatus rc_wake(const AaReactor *ar) {
    const Reactor *r = (const Reactor *)ar;
    uint64_t one = 1;
    /* EAGAIN means the counter is full: the loop is woken already. */
    if (write(r->wakefd, &one, sizeof one) < 0 && errno != EAGAIN) {
        return -errno;
    }
    return AA_OK;
}

/* --- deferred callbacks -------------------------------------------------- */

bool rc_reserve(Reactor *r, size_t n) {
    if (r->deferred_len + n <= r->deferred_cap) {
        return true;
    }
    size_t cap = r->deferred_cap ? r->deferred_cap * 2 : 16;
    while (cap < r->deferred_len + n) {
        cap *= 2;
    }
    Deferred *items = realloc(r->deferred, cap * sizeof *items);
    if (items == NULL) {
        return false;
    }
    r->deferred = items;
    r->deferred_cap = cap;
    return true;
}

static Deferred *defer_slot(Event *ev) {
    Reactor *r = ev->r;
    /* Callers that can report a failure reserved room first; the others
     * (dispose, which returns nothing) get a log line if memory ran out. */
    if (!rc_reserve(r, 1)) {
        rc_log(r, AA_LOG_ERROR, "out of memory: a callback for event %p is lost", (void *)ev);
        return NULL;
    }
    Deferred *d = &r->deferred[r->deferred_len++];
    memset(d, 0, sizeof *d);
    d->ev = ev;
    ev->scheduled++;
    return d;
}

void rc_defer(Event *ev, AaStatus status, int64_t value) {
    Deferred *d = defer_slot(ev);
    if (d != NULL) {
        d->status = status;
        d->value = value;
    }
    ev_touch(ev);
}

void rc_defer_closed(Event *ev, AaClosedCb on_closed, void *ud) {
    Deferred *d = defer_slot(ev);
    if (d != NULL) {
        d->closed = true;
        d->on_closed = on_closed;
        d->closed_ud = ud;
    }
    ev_touch(ev);
}

/* The event's own callback with a status (timers, polls, triggers, signals)
 * or a result (requests). */
static void notify(Event *ev, AaStatus status, int64_t value) {
    AaEvent *h = &ev->hdr;
    switch (h->kind) {
    case AA_EVENT_TIMER: ev->cb.timer(h, status, ev->ud); break;
    case AA_EVENT_POLL: ev->cb.poll(h, status, (uint32_t)value, ev->ud); break;
    case AA_EVENT_IO: ev->cb.io(h, status < 0 ? status : value, ev->ud); break;
    case AA_EVENT_TRIGGER: ev->cb.trigger(h, status, ev->ud); break;
    case AA_EVENT_SIGNAL: ev->cb.signal(h, status, (int32_t)value, ev->ud); break;
    default: break;
    }
}

static int deliver(Deferred *batch, size_t len) {
    int count = 0;
    for (size_t i = 0; i < len; i++) {
        Deferred d = batch[i];
        Event *ev = d.ev;
        ev->scheduled--;
        if (d.closed) {
            ev->close = CLOSED;
        }
        ev_touch(ev);
        if (ev->disposed) {
            ev_release(ev);
            continue;
        }
        if (d.closed) {
            if (d.on_closed != NULL) {
                d.on_closed(&ev->hdr, d.closed_ud);
                count++;
            }
        } else {
            notify(ev, d.status, d.value);
            count++;
        }
    }
    return count;
}

void loop_drop_deferred(Reactor *r) {
    for (size_t i = 0; i < r->deferred_len; i++) {
        r->deferred[i].ev->scheduled--;
        ev_release(r->deferred[i].ev);
    }
    free(r->deferred);
    free(r->spare);
    r->deferred = r->spare = NULL;
    r->deferred_len = r->deferred_cap = r->spare_cap = 0;
}

/* --- descriptors --------------------------------------------------------- */

FdState *fd_get(Reactor *r, int fd) {
    return fd >= 0 && (size_t)fd < r->fds_cap ? r->fds[fd] : NULL;
}

FdState *fd_open(Reactor *r, int fd, AaStatus *err) {
    FdState *fs = fd_get(r, fd);
    if (fs != NULL) {
        return fs;
    }
    fs = calloc(1, sizeof *fs);
    if (fs == NULL) {
        *err = AA_E_NOMEM;
        return NULL;
    }
    fs->fd = fd;
    /* One edge-triggered registration for every direction serves every
     * request and poll on the descriptor. Adding it reports the current
     * readiness, so nothing that happened before is missed. It comes before
     * the table grows: a descriptor that is not open fails here, and never
     * makes the table as large as its number. */
    struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                            .data.u64 = (uint64_t)fd};
    if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &e) == 0) {
        fs->registered = true;
    } else if (errno == EPERM) {
        fs->always_ready = true; /* a regular file: its calls never wait */
    } else {
        *err = -errno;
        free(fs);
        return NULL;
    }
    if ((size_t)fd >= r->fds_cap) {
        size_t cap = r->fds_cap ? r->fds_cap : 64;
        while (cap <= (size_t)fd) {
            cap *= 2;
        }
        FdState **fds = realloc(r->fds, cap * sizeof *fds);
        if (fds == NULL) {
            if (fs->registered) {
                epoll_ctl(r->epfd, EPOLL_CTL_DEL, fd, NULL);
            }
            free(fs);
            *err = AA_E_NOMEM;
            return NULL;
        }
        memset(fds + r->fds_cap, 0, (cap - r->fds_cap) * sizeof *fds);
        r->fds = fds;
        r->fds_cap = cap;
    }
    r->fds[fd] = fs;
    return fs;
}

void fd_mark_dirty(Reactor *r, FdState *fs) {
    if (fs->dirty) {
        return;
    }
    if (r->dirty_len == r->dirty_cap) {
        size_t cap = r->dirty_cap ? r->dirty_cap * 2 : 16;
        int *dirty = realloc(r->dirty, cap * sizeof *dirty);
        if (dirty == NULL) {
            rc_log(r, AA_LOG_ERROR, "out of memory: fd %d waits for its next edge", fs->fd);
            return;
        }
        r->dirty = dirty;
        r->dirty_cap = cap;
    }
    fs->dirty = true;
    r->dirty[r->dirty_len++] = fs->fd;
}

void fd_maybe_free(Reactor *r, FdState *fs) {
    if (fs == NULL || fs->readers != NULL || fs->writers != NULL || fs->polls != NULL) {
        return;
    }
    if (fs->registered) {
        /* Fails harmlessly if the host closed the descriptor behind our back. */
        epoll_ctl(r->epfd, EPOLL_CTL_DEL, fs->fd, NULL);
    }
    r->fds[fs->fd] = NULL;
    free(fs);
}

/* AA_IO_CLOSE's first half, and a poll owning its descriptor: every request
 * waiting on `fd` completes with -ECANCELED, every armed poll on it gets
 * -ECANCELED once and is detached (poll_set_interest then returns
 * AA_E_CLOSED), the registration goes; then the descriptor is closed. The
 * caller reserved room for the deferred callbacks. */
int rc_forget_fd(Reactor *r, int fd, bool close_it) {
    FdState *fs = fd_get(r, fd);
    if (fs != NULL) {
        Event *queues[2] = {fs->readers, fs->writers};
        fs->readers = fs->writers = NULL;
        for (int q = 0; q < 2; q++) {
            for (Event *ev = queues[q], *next; ev != NULL; ev = next) {
                next = ev->u.io.next;
                ev->u.io.next = NULL;
                ev->u.io.queued = false;
                rc_defer(ev, 0, -ECANCELED);
            }
        }
        Event *polls = fs->polls;
        fs->polls = NULL;
        for (Event *ev = polls, *next; ev != NULL; ev = next) {
            next = ev->u.poll.next;
            ev->u.poll.next = NULL;
            bool was_active = ev_active(ev);
            ev->u.poll.fs = NULL;
            ev->u.poll.armed = false;
            if (was_active) {
                rc_defer(ev, -ECANCELED, 0);
            }
            ev_touch(ev);
        }
        fd_maybe_free(r, fs);
    }
    if (close_it && close(fd) < 0) {
        return -errno;
    }
    return 0;
}

/* --- timers: a min-heap on (deadline, seq) -------------------------------- */

/* seq grows with every arming, so equal deadlines fire in arming order and
 * an iteration runs only timers armed before it started (a callback that
 * re-arms its timer for 0 ns cannot keep one run_once going forever). */
static bool before(const Event *a, const Event *b) {
    return a->u.timer.deadline != b->u.timer.deadline ? a->u.timer.deadline < b->u.timer.deadline
                                                        : a->u.timer.seq < b->u.timer.seq;
}

static void heap_set(Reactor *r, size_t i, Event *ev) {
    r->heap[i] = ev;
    ev->u.timer.heap_index = (int)i;
}

static void sift_up(Reactor *r, size_t i) {
    Event *ev = r->heap[i];
    while (i > 0 && before(ev, r->heap[(i - 1) / 2])) {
        heap_set(r, i, r->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(r, i, ev);
}

static void sift_down(Reactor *r, size_t i) {
    Event *ev = r->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= r->heap_len) {
            break;
        }
        if (c + 1 < r->heap_len && before(r->heap[c + 1], r->heap[c])) {
            c++;
        }
        if (!before(r->heap[c], ev)) {
            break;
        }
        heap_set(r, i, r->heap[c]);
        i = c;
    }
    heap_set(r, i, ev);
}

static bool heap_reserve(Reactor *r) {
    if (r->heap_len < r->heap_cap) {
        return true;
    }
    size_t cap = r->heap_cap ? r->heap_cap * 2 : 64;
    Event **heap = realloc(r->heap, cap * sizeof *heap);
    if (heap == NULL) {
        return false;
    }
    r->heap = heap;
    r->heap_cap = cap;
    return true;
}

bool timer_disarm(Event *ev) {
    Reactor *r = ev->r;
    int i = ev->u.timer.heap_index;
    if (i < 0) {
        return false;
    }
    ev->u.timer.heap_index = -1;
    Event *last = r->heap[--r->heap_len];
    if ((size_t)i < r->heap_len) {
        heap_set(r, (size_t)i, last);
        sift_up(r, (size_t)i);
        sift_down(r, (size_t)last->u.timer.heap_index);
    }
    return true;
}

/* Arms (or re-arms) from a fresh clock: a timer armed after a long burst of
 * work still waits its full duration. The caller reserved heap room. */
void timer_arm(Event *ev, uint64_t first_ns, uint64_t repeat_ns) {
    Reactor *r = ev->r;
    timer_disarm(ev);
    uint64_t now = rc_clock(r);
    ev->u.timer.deadline = first_ns > UINT64_MAX - now ? UINT64_MAX : now + first_ns;
    ev->u.timer.repeat = repeat_ns;
    ev->u.timer.seq = r->next_seq++;
    heap_set(r, r->heap_len++, ev);
    sift_up(r, r->heap_len - 1);
}

static int run_timers(Reactor *r, uint64_t now, uint64_t horizon) {
    int count = 0;
    while (r->heap_len > 0) {
        Event *ev = r->heap[0];
        if (ev->u.timer.deadline > now || ev->u.timer.seq >= horizon) {
            break;
        }
        timer_disarm(ev);
        if (ev->u.timer.repeat > 0) {
            /* A late periodic timer skips the periods it missed. */
            uint64_t next = ev->u.timer.deadline + ev->u.timer.repeat;
            ev->u.timer.deadline = next > now ? next : now + ev->u.timer.repeat;
            ev->u.timer.seq = r->next_seq++;
            heap_set(r, r->heap_len++, ev); /* room: one was just taken out */
            sift_up(r, r->heap_len - 1);
        }
        ev_touch(ev);
        ev->cb.timer(&ev->hdr, 0, ev->ud);
        count++;
    }
    return count;
}

AaStatus rc_timer_new(AaReactor *ar, uint64_t first_ns, uint64_t repeat_ns, uint32_t flags,
                      AaTimerCb cb, void *ud, AaEvent **out) {
    Reactor *r = (Reactor *)ar;
    if (cb == NULL || out == NULL) {
        return rc_fail(r, AA_E_INVALID, "timer_new: the callback or out is NULL");
    }
    if (flags & ~(uint32_t)AA_EVF_HIDDEN) {
        return rc_fail(r, AA_E_INVALID, "timer_new: unknown flag bits %#x",
                       flags & ~(uint32_t)AA_EVF_HIDDEN);
    }
    Event *ev = heap_reserve(r) ? ev_new(r, AA_EVENT_TIMER, flags, ud) : NULL;
    if (ev == NULL) {
        return rc_fail(r, AA_E_NOMEM, "timer_new: out of memory");
    }
    ev->cb.timer = cb;
    ev->u.timer.heap_index = -1;
    timer_arm(ev, first_ns, repeat_ns);
    ev_touch(ev);
    *out = &ev->hdr;
    return AA_OK;
}

AaStatus rc_timer_rearm(AaEvent *aev, uint64_t first_ns, uint64_t repeat_ns) {
    Event *ev = ev_check(aev);
    if (ev == NULL || ev->hdr.kind != AA_EVENT_TIMER) {
        return ev ? rc_fail(ev->r, AA_E_INVALID, "timer_rearm: the event is not a timer")
                  : AA_E_INVALID;
    }
    if (ev->close != OPEN) {
        return rc_fail(ev->r, AA_E_CLOSED, "timer_rearm: the timer is closed or closing");
    }
    if (ev->u.timer.heap_index < 0 && !heap_reserve(ev->r)) {
        return rc_fail(ev->r, AA_E_NOMEM, "timer_rearm: out of memory");
    }
    timer_arm(ev, first_ns, repeat_ns);
    ev_touch(ev);
    return AA_OK;
}

/* --- polls --------------------------------------------------------------- */

static uint32_t ready_bits(uint32_t epoll_events) {
    uint32_t bits = 0;
    if (epoll_events & EPOLLIN) bits |= AA_POLL_READABLE;
    if (epoll_events & EPOLLOUT) bits |= AA_POLL_WRITABLE;
    if (epoll_events & EPOLLERR) bits |= AA_POLL_ERROR;
    /* The peer hung up: a read returns end of stream, so it is readable. */
    if (epoll_events & (EPOLLRDHUP | EPOLLHUP)) bits |= AA_POLL_HUP | AA_POLL_READABLE;
    if (epoll_events & EPOLLHUP) bits |= AA_POLL_WRITABLE;
    return bits;
}

/* Reports `bits` to the armed polls of `fd` (only to those waiting for a
 * re-evaluation when `recheck`), each at most once per iteration. Marks
 * first, then calls one at a time, looking the list up again after each
 * callback: a callback may close, dispose or create polls on the fd. */
static int polls_notify(Reactor *r, int fd, uint32_t bits, bool recheck) {
    FdState *fs = fd_get(r, fd);
    if (fs == NULL) {
        return 0;
    }
    for (Event *p = fs->polls; p != NULL; p = p->u.poll.next) {
        if (recheck && !p->u.poll.recheck) {
            continue;
        }
        p->u.poll.recheck = false;
        uint32_t ready = bits & (p->u.poll.interest | AA_POLL_ERROR | AA_POLL_HUP);
        if (ev_active(p) && p->u.poll.reported != r->iteration && ready != 0) {
            p->u.poll.due = ready;
        }
    }
    int count = 0;
    for (;;) {
        fs = fd_get(r, fd);
        Event *p = fs ? fs->polls : NULL;
        while (p != NULL && p->u.poll.due == 0) {
            p = p->u.poll.next;
        }
        if (p == NULL) {
            return count;
        }
        uint32_t ready = p->u.poll.due;
        p->u.poll.due = 0;
        if (ev_active(p)) {
            p->u.poll.reported = r->iteration;
            p->cb.poll(&p->hdr, 0, ready, p->ud);
            count++;
        }
    }
}

/* The current readiness of `fd`, asked once, for polls that were just made
 * or given a new interest: an edge that came before them is not repeated. */
static int polls_recheck(Reactor *r, int fd) {
    FdState *fs = fd_get(r, fd);
    bool wanted = false;
    for (Event *p = fs ? fs->polls : NULL; p != NULL; p = p->u.poll.next) {
        wanted |= p->u.poll.recheck;
    }
    if (!wanted) {
        return 0;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN | POLLOUT | POLLRDHUP};
    uint32_t bits = 0;
    if (poll(&pfd, 1, 0) > 0) {
        bits = ready_bits((pfd.revents & POLLIN ? EPOLLIN : 0) |
                          (pfd.revents & POLLOUT ? EPOLLOUT : 0) |
                          (pfd.revents & POLLERR ? EPOLLERR : 0) |
                          (pfd.revents & POLLRDHUP ? EPOLLRDHUP : 0) |
                          (pfd.revents & POLLHUP ? EPOLLHUP : 0));
    }
    return polls_notify(r, fd, bits, true);
}

bool poll_withdraw(Event *ev) {
    FdState *fs = ev->u.poll.fs;
    if (fs == NULL) {
        return false;
    }
    for (Event **link = &fs->polls; *link != NULL; link = &(*link)->u.poll.next) {
        if (*link == ev) {
            *link = ev->u.poll.next;
            break;
        }
    }
    ev->u.poll.next = NULL;
    ev->u.poll.fs = NULL;
    ev->u.poll.armed = false;
    fd_maybe_free(ev->r, fs);
    return true;
}

static AaStatus check_interest(Reactor *r, const char *what, uint32_t interest) {
    uint32_t stray = interest & ~(uint32_t)(AA_POLL_READABLE | AA_POLL_WRITABLE);
    return stray ? rc_fail(r, AA_E_INVALID, "%s: unknown interest bits %#x", what, stray) : AA_OK;
}

AaStatus rc_poll_new(AaReactor *ar, AaOsHandle fd, uint32_t interest, uint32_t flags,
                     AaPollCb cb, void *ud, AaEvent **out) {
    Reactor *r = (Reactor *)ar;
    if (cb == NULL || out == NULL) {
        return rc_fail(r, AA_E_INVALID, "poll_new: the callback or out is NULL");
    }
    uint32_t allowed = AA_EVF_HIDDEN | AA_EVF_OWNS_FD;
    if (flags & ~allowed) {
        return rc_fail(r, AA_E_INVALID, "poll_new: unknown flag bits %#x", flags & ~allowed);
    }
    if (check_interest(r, "poll_new", interest) != AA_OK) {
        return AA_E_INVALID;
    }
    if (fd < 0 || fd > INT_MAX) {
        return rc_fail(r, -EBADF, "poll_new: fd %lld is not a descriptor", (long long)fd);
    }
    AaStatus err = AA_OK;
    FdState *fs = fd_open(r, (int)fd, &err);
    if (fs == NULL) {
        return rc_fail(r, err, "poll_new: fd %d: %s", (int)fd,
                       err == AA_E_NOMEM ? "out of memory" : strerror(-err));
    }
    if (fs->always_ready) {
        fd_maybe_free(r, fs);
        return rc_fail(r, -EPERM, "poll_new: fd %d cannot be watched (a regular file?)", (int)fd);
    }
    Event *ev = ev_new(r, AA_EVENT_POLL, flags, ud);
    if (ev == NULL) {
        fd_maybe_free(r, fs);
        return rc_fail(r, AA_E_NOMEM, "poll_new: out of memory");
    }
    ev->cb.poll = cb;
    ev->u.poll.fd = (int)fd;
    ev->u.poll.fs = fs;
    ev->u.poll.interest = interest;
    ev->u.poll.armed = true;
    ev->u.poll.reported = UINT64_MAX;
    /* Polls are listed in creation order. */
    Event **link = &fs->polls;
    while (*link != NULL) {
        link = &(*link)->u.poll.next;
    }
    *link = ev;
    if (interest != 0) {
        ev->u.poll.recheck = true;
        fd_mark_dirty(r, fs);
    }
    ev_touch(ev);
    *out = &ev->hdr;
    return AA_OK;
}

AaStatus rc_poll_set_interest(AaEvent *aev, uint32_t interest) {
    Event *ev = ev_check(aev);
    if (ev == NULL || ev->hdr.kind != AA_EVENT_POLL) {
        return ev ? rc_fail(ev->r, AA_E_INVALID, "poll_set_interest: the event is not a poll")
                  : AA_E_INVALID;
    }
    Reactor *r = ev->r;
    if (ev->close != OPEN) {
        return rc_fail(r, AA_E_CLOSED, "poll_set_interest: the poll is closed or closing");
    }
    if (ev->u.poll.fs == NULL) {
        return rc_fail(r, AA_E_CLOSED, "poll_set_interest: fd %d was closed through the reactor",
                       ev->u.poll.fd);
    }
    if (check_interest(r, "poll_set_interest", interest) != AA_OK) {
        return AA_E_INVALID;
    }
    ev->u.poll.interest = interest;
    ev->u.poll.armed = true;
    if (interest != 0) {
        ev->u.poll.recheck = true;
        fd_mark_dirty(r, ev->u.poll.fs);
    }
    ev_touch(ev);
    return AA_OK;
}

/* --- triggers ------------------------------------------------------------ */

AaStatus rc_trigger_new(AaReactor *ar, uint32_t flags, AaTriggerCb cb, void *ud, AaEvent **out) {
    Reactor *r = (Reactor *)ar;
    if (cb == NULL || out == NULL) {
        return rc_fail(r, AA_E_INVALID, "trigger_new: the callback or out is NULL");
    }
    if (flags & ~(uint32_t)AA_EVF_HIDDEN) {
        return rc_fail(r, AA_E_INVALID, "trigger_new: unknown flag bits %#x",
                       flags & ~(uint32_t)AA_EVF_HIDDEN);
    }
    Event *ev = ev_new(r, AA_EVENT_TRIGGER, flags, ud);
    if (ev == NULL) {
        return rc_fail(r, AA_E_NOMEM, "trigger_new: out of memory");
    }
    ev->cb.trigger = cb;
    atomic_init(&ev->u.trigger.open, 1);
    atomic_init(&ev->u.trigger.fired, 0);
    ev->u.trigger.next = r->triggers;
    if (r->triggers != NULL) {
        r->triggers->u.trigger.prev = ev;
    }
    r->triggers = ev;
    ev_touch(ev);
    *out = &ev->hdr;
    return AA_OK;
}

/* [any]: atomics and one eventfd write; no allocation, no lock, no message
 * (last_error_message belongs to the loop thread). */
AaStatus rc_trigger_fire(const AaEvent *aev) {
    Event *ev = ev_check((AaEvent *)aev);
    if (ev == NULL || ev->hdr.kind != AA_EVENT_TRIGGER) {
        return AA_E_INVALID;
    }
    if (!atomic_load(&ev->u.trigger.open)) {
        return AA_E_CLOSED;
    }
    /* Fires coalesce: only the first since the loop last looked wakes it. */
    if (atomic_exchange(&ev->u.trigger.fired, 1) == 0) {
        return rc_wake((const AaReactor *)ev->r);
    }
    return AA_OK;
}

bool trigger_end(Event *ev) { return atomic_exchange(&ev->u.trigger.open, 0) != 0; }

void trigger_unlink(Event *ev) {
    Reactor *r = ev->r;
    if (ev->u.trigger.prev != NULL) {
        ev->u.trigger.prev->u.trigger.next = ev->u.trigger.next;
    } else if (r->triggers == ev) {
        r->triggers = ev->u.trigger.next;
    }
    if (ev->u.trigger.next != NULL) {
        ev->u.trigger.next->u.trigger.prev = ev->u.trigger.prev;
    }
    ev->u.trigger.next = ev->u.trigger.prev = NULL;
}

/* One callback per trigger fired since the last look: a fire made during a
 * callback (its own included) is for the next iteration. */
static int run_triggers(Reactor *r) {
    for (Event *t = r->triggers; t != NULL; t = t->u.trigger.next) {
        if (atomic_exchange(&t->u.trigger.fired, 0) && atomic_load(&t->u.trigger.open)) {
            t->u.trigger.due = true;
        }
    }
    int count = 0;
    for (;;) {
        Event *t = r->triggers;
        while (t != NULL && !t->u.trigger.due) {
            t = t->u.trigger.next;
        }
        if (t == NULL) {
            return count;
        }
        t->u.trigger.due = false;
        if (atomic_load(&t->u.trigger.open)) {
            t->cb.trigger(&t->hdr, 0, t->ud);
            count++;
        }
    }
}

/* --- one iteration ------------------------------------------------------- */

/* epoll_pwait2 takes a timespec, so a timer wakes the wait to the
 * microsecond; epoll_wait's whole milliseconds (rounded up, never a busy
 * 0 ms wait) are the fallback on kernels before 5.11. */
static int wait_for_os(Reactor *r, int64_t timeout_ns) {
#ifdef SYS_epoll_pwait2
    static _Atomic int no_pwait2;
    if (!atomic_load(&no_pwait2)) {
        struct timespec ts, *tp = NULL;
        if (timeout_ns >= 0) {
            ts.tv_sec = timeout_ns / 1000000000;
            ts.tv_nsec = timeout_ns % 1000000000;
            tp = &ts;
        }
        int n = (int)syscall(SYS_epoll_pwait2, r->epfd, r->events, r->max_events, tp, NULL, 0);
        if (n >= 0 || errno != ENOSYS) {
            return n;
        }
        atomic_store(&no_pwait2, 1);
    }
#endif
    int ms = -1;
    if (timeout_ns >= 0) {
        int64_t rounded = timeout_ns / 1000000 + (timeout_ns % 1000000 != 0);
        ms = rounded > INT_MAX ? INT_MAX : (int)rounded;
    }
    return epoll_wait(r->epfd, r->events, r->max_events, ms);
}

AaStatus rc_run_once(AaReactor *ar, int64_t timeout_ns) {
    Reactor *r = (Reactor *)ar;
    if (r->running) {
        return rc_fail(r, AA_E_INVALID, "run_once: called from inside a callback");
    }
    if (timeout_ns < -1) {
        return rc_fail(r, AA_E_INVALID, "run_once: timeout %lld ns is neither -1 nor >= 0",
                       (long long)timeout_ns);
    }
    r->running = true;
    r->iteration++;

    /* This iteration's share of deferred work, taken up front: what the
     * iteration's own callbacks queue waits for the next one. */
    Deferred *batch = r->deferred;
    size_t batch_len = r->deferred_len, batch_cap = r->deferred_cap;
    r->deferred = r->spare;
    r->deferred_cap = r->spare_cap;
    r->deferred_len = 0;
    r->spare = NULL;
    r->spare_cap = 0;
    int *dirty = r->dirty;
    size_t dirty_len = r->dirty_len, dirty_cap = r->dirty_cap;
    r->dirty = NULL;
    r->dirty_len = r->dirty_cap = 0;
    uint64_t horizon = r->next_seq;

    /* 1-2: clock, due timers. */
    int count = run_timers(r, rc_clock(r), horizon);

    /* 3: wait for the OS, cut short by the nearest timer; never block when
     * there is work already. A wait the timer cut short with nothing else
     * to do waits again, so run_once(-1) returns once a timer fired. */
    bool has_work = count > 0 || batch_len > 0 || dirty_len > 0;
    int n = 0;
    AaStatus failure = AA_OK;
    for (;;) {
        int64_t wait = has_work ? 0 : timeout_ns;
        bool timer_bound = false;
        if (wait != 0 && r->heap_len > 0) {
            uint64_t d = r->heap[0]->u.timer.deadline;
            uint64_t left = d > r->now ? d - r->now : 0;
            int64_t until = left > INT64_MAX ? INT64_MAX : (int64_t)left;
            if (wait < 0 || until < wait) {
                wait = until;
                timer_bound = true;
            }
        }
        n = wait_for_os(r, wait);
        if (n < 0) {
            if (errno != EINTR) {
                failure = rc_fail(r, -errno, "run_once: epoll_wait: %s", strerror(errno));
            }
            n = 0;
        }
        int fired = run_timers(r, rc_clock(r), horizon);
        count += fired;
        if (n > 0 || fired > 0 || !timer_bound || wait == 0 || failure != AA_OK) {
            break;
        }
    }

    /* 4: complete what the OS reported, then what did not need to wait. */
    bool woken = false;
    for (int i = 0; i < n; i++) {
        struct epoll_event e = r->events[i];
        if (e.data.u64 == WAKE_TAG) {
            uint64_t value;
            while (read(r->wakefd, &value, sizeof value) > 0) {
            }
            woken = true;
            continue;
        }
        int fd = (int)e.data.u64;
        uint32_t bits = ready_bits(e.events);
        if (bits & (AA_POLL_READABLE | AA_POLL_ERROR)) {
            count += io_drain(r, fd, true);
        }
        if (bits & (AA_POLL_WRITABLE | AA_POLL_ERROR)) {
            count += io_drain(r, fd, false);
        }
        count += polls_notify(r, fd, bits, false);
    }
    for (size_t i = 0; i < dirty_len; i++) {
        FdState *fs = fd_get(r, dirty[i]);
        if (fs == NULL || !fs->dirty) {
            continue;
        }
        fs->dirty = false;
        count += io_drain(r, dirty[i], true);
        count += io_drain(r, dirty[i], false);
        count += polls_recheck(r, dirty[i]);
    }
    if (woken) {
        count += run_triggers(r);
    }
    count += signal_run(r);

    /* 5: cancellations, early results and on_closed. */
    count += deliver(batch, batch_len);

    /* Keep the larger of the two spent buffers for the next iteration. */
    if (r->deferred_len == 0 && batch_cap > r->deferred_cap) {
        free(r->deferred);
        r->deferred = batch;
        r->deferred_cap = batch_cap;
    } else {
        r->spare = batch;
        r->spare_cap = batch_cap;
    }
    if (r->dirty == NULL) {
        r->dirty = dirty;
        r->dirty_cap = dirty_cap;
    } else {
        free(dirty);
    }
    r->running = false;
    return failure != AA_OK ? failure : count;
}
