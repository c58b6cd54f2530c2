/* A reactor skeleton written in plain C against async_abi.h alone: it proves
 * the header is real C that a third party can implement. The generated
 * layout asserts are included by the test that compiles this file. */
#include "async_abi.h"
#include "layout_asserts.h"

#include <string.h>

static AaStatus sk_create(AaPluginCtx *ctx, const AaReactorConfig *cfg, AaReactor **out) {
    (void)ctx;
    if (cfg == NULL || out == NULL || cfg->struct_size < sizeof(AaReactorConfig)) {
        return AA_E_INVALID;
    }
    *out = NULL;
    return AA_E_UNSUPPORTED;
}

static AaStatus sk_destroy(AaReactor *r) { (void)r; return AA_OK; }
static AaStatus sk_run_once(AaReactor *r, int64_t timeout_ns) { (void)r; (void)timeout_ns; return 0; }
static uint32_t sk_alive(const AaReactor *r) { (void)r; return 0; }
static uint64_t sk_now_ns(const AaReactor *r) { (void)r; return 0; }
static AaStatus sk_wake(const AaReactor *r) { (void)r; return AA_OK; }
static AaStatus sk_timer_new(AaReactor *r, uint64_t first_ns, uint64_t repeat_ns, uint32_t flags,
                             AaTimerCb cb, void *ud, AaEvent **out) {
    (void)r; (void)first_ns; (void)repeat_ns; (void)flags; (void)cb; (void)ud; (void)out;
    return AA_E_UNSUPPORTED;
}
/* ABI 1.1: an op from a 1.0 host is offsetof(AaIoOp, path) bytes long;
 * read only struct_size bytes of it, the missing tail as zero. */
static AaStatus sk_io_submit(AaReactor *r, AaIoOp *op, uint32_t flags, AaIoCb cb, void *ud, AaEvent **out) {
    (void)r; (void)flags; (void)cb; (void)ud; (void)out;
    AaIoOp copy;
    if (op == NULL || op->struct_size < offsetof(AaIoOp, path)) {
        return AA_E_INVALID;
    }
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, op, op->struct_size < sizeof copy ? op->struct_size : sizeof copy);
    if (copy.opcode == AA_IO_READ && copy.op_flags == 0 && (flags & AA_IO_TRY_INLINE)) {
        op->result = 0; /* within the 1.0 prefix: writable in any size */
        return AA_DONE;
    }
    /* An opcode this reactor does not run (all of 1.1's here). */
    return AA_E_UNSUPPORTED;
}
static uint64_t sk_instance_caps(const AaReactor *r) { (void)r; return AA_CAP_TIMER | AA_CAP_IO | AA_CAP_IO_INLINE; }
static void sk_set_ref(AaEvent *ev, bool referenced) { (void)ev; (void)referenced; }
static AaStatus sk_cancel(AaEvent *ev, AaStatus reason) { (void)ev; (void)reason; return AA_E_INVALID; }
static AaStatus sk_close(AaEvent *ev, AaClosedCb on_closed, void *ud) { (void)ev; (void)on_closed; (void)ud; return AA_E_INVALID; }
static void sk_dispose(AaEvent *ev) { (void)ev; }

static const AaReactorVTable SK_VTABLE = {
    .hdr = { .struct_size = sizeof(AaReactorVTable), .iface_minor = AA_ABI_MINOR, ._reserved = 0 },
    .caps = AA_CAP_TIMER | AA_CAP_IO | AA_CAP_IO_INLINE,
    .create = sk_create,
    .destroy = sk_destroy,
    .run_once = sk_run_once,
    .alive = sk_alive,
    .now_ns = sk_now_ns,
    .wake = sk_wake,
    .timer_new = sk_timer_new,
    .io_submit = sk_io_submit,
    .set_ref = sk_set_ref,
    .cancel = sk_cancel,
    .close = sk_close,
    .dispose = sk_dispose,
    .instance_caps = sk_instance_caps,
};

static AaStatus sk_init(const AaHostApi *host, AaPluginCtx **out) {
    if (host == NULL || host->abi_major != AA_ABI_MAJOR) {
        return AA_E_VERSION;
    }
    if (host->log != NULL) {
        AaStr target = { (const uint8_t *)"skeleton", 8 };
        AaStr msg = { (const uint8_t *)"init", 4 };
        AaStr file = { (const uint8_t *)__FILE__, sizeof(__FILE__) - 1 };
        host->log(host->host_ctx, AA_LOG_DEBUG, target, msg, file, __LINE__);
    }
    *out = (AaPluginCtx *)&SK_VTABLE;
    return AA_OK;
}

static void sk_deinit(AaPluginCtx *ctx) { (void)ctx; }

static const AaIfaceHeader *sk_get_interface(AaPluginCtx *ctx, AaStr id) {
    (void)ctx;
    if (id.len == strlen(AA_IFACE_REACTOR_V1) && memcmp(id.ptr, AA_IFACE_REACTOR_V1, id.len) == 0) {
        return &SK_VTABLE.hdr;
    }
    return NULL;
}

static const AaPluginDesc SK_DESC = {
    .struct_size = sizeof(AaPluginDesc),
    .abi_major = AA_ABI_MAJOR,
    .abi_minor = AA_ABI_MINOR,
    .role = AA_ROLE_REACTOR,
    .name = "c-skeleton",
    .version = "0.0.1",
    .vendor = "tests",
    .init = sk_init,
    .deinit = sk_deinit,
    .get_interface = sk_get_interface,
};

const AaPluginDesc *aa_reactor_entry_v1(void) { return &SK_DESC; }
