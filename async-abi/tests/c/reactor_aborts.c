/* A faulty reactor for the conformance kit's own tests: it forwards every
 * slot to a real reactor (the library named by AA_ABORTS_INNER), except that
 * trigger_new aborts the process and timer_rearm never returns. The kit must
 * report the trigger cases as failed with SIGABRT, the re-arm cases as timed
 * out, and still print its summary. */
#define _GNU_SOURCE
#include "async_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const AaPluginDesc *inner_desc;
static AaReactorVTable VT;

static AaStatus w_trigger_new(AaReactor *r, uint32_t flags, AaTriggerCb cb, void *ud,
                              AaEvent **out) {
    (void)r, (void)flags, (void)cb, (void)ud, (void)out;
    fprintf(stderr, "aborts fixture: trigger_new aborts\n");
    abort();
}

static AaStatus w_timer_rearm(AaEvent *ev, uint64_t first_ns, uint64_t repeat_ns) {
    (void)ev, (void)first_ns, (void)repeat_ns;
    fprintf(stderr, "aborts fixture: timer_rearm hangs\n");
    for (;;) {
        pause();
    }
    return AA_E_INTERNAL;
}

static AaStatus w_init(const AaHostApi *host, AaPluginCtx **out) {
    if (inner_desc == NULL) {
        const char *path = getenv("AA_ABORTS_INNER");
        void *lib;
        AaPluginEntryFn entry;
        if (path == NULL || (lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) == NULL) {
            fprintf(stderr, "aborts fixture: set AA_ABORTS_INNER to a reactor library\n");
            return AA_E_INVALID;
        }
        *(void **)&entry = dlsym(lib, AA_REACTOR_ENTRY_SYMBOL);
        if (entry == NULL || (inner_desc = entry()) == NULL) {
            return AA_E_INVALID;
        }
    }
    return inner_desc->init(host, out);
}

static void w_deinit(AaPluginCtx *ctx) { inner_desc->deinit(ctx); }

static const AaIfaceHeader *w_get_interface(AaPluginCtx *ctx, AaStr id) {
    const AaIfaceHeader *hdr = inner_desc->get_interface(ctx, id);
    size_t n;
    if (hdr == NULL) {
        return NULL;
    }
    n = hdr->struct_size < sizeof VT ? hdr->struct_size : sizeof VT;
    memset(&VT, 0, sizeof VT);
    memcpy(&VT, hdr, n);
    VT.trigger_new = w_trigger_new;
    VT.timer_rearm = w_timer_rearm;
    return &VT.hdr;
}

static const AaPluginDesc DESC = {
    .struct_size = sizeof(AaPluginDesc),
    .abi_major = AA_ABI_MAJOR,
    .abi_minor = AA_ABI_MINOR,
    .role = AA_ROLE_REACTOR,
    .name = "reactor-mio",
    .version = "0.0.0-aborts-fixture",
    .init = w_init,
    .deinit = w_deinit,
    .get_interface = w_get_interface,
};

const AaPluginDesc *aa_reactor_entry_v1(void) { return &DESC; }
