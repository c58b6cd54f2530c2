/* A reactor plugin built for the next minor of this ABI (1.<current+1>), to
 * prove that a host of the current minor accepts it and uses only what it
 * knows (docs/abi/versioning.md, "Compatibility").
 *
 * Its descriptor and vtable say minor AA_ABI_MINOR + 1 and are longer than
 * this header's: the descriptor has a field after get_interface, the vtable
 * four slots after the last one this header knows, each a function that
 * aborts if anybody calls it, and caps has a bit no minor defines yet. It
 * serves by forwarding every known slot to a real reactor, the library named
 * by the AA_NEXT_MINOR_INNER environment variable (reactor-mio). */
#define _GNU_SOURCE
#include "async_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A capability bit of the future: no minor of this header defines it. */
#define FUTURE_CAP (1ull << 40)

typedef struct {
    AaPluginDesc base;
    const char *future_field;
} NextDesc;

typedef struct {
    AaReactorVTable base;
    void (*future_slots[4])(void);
} NextVTable;

static const AaPluginDesc *inner_desc;
static NextVTable VT;

static void future_slot(void) {
    fprintf(stderr, "next-minor fixture: a slot this host does not know was called\n");
    abort();
}

static AaStatus w_init(const AaHostApi *host, AaPluginCtx **out) {
    if (inner_desc == NULL) {
        const char *path = getenv("AA_NEXT_MINOR_INNER");
        void *lib;
        AaPluginEntryFn entry;
        if (path == NULL) {
            fprintf(stderr, "next-minor fixture: set AA_NEXT_MINOR_INNER to a reactor library\n");
            return AA_E_INVALID;
        }
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (lib == NULL) {
            fprintf(stderr, "next-minor fixture: %s\n", dlerror());
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
    size_t n, i;
    if (hdr == NULL) {
        return NULL;
    }
    n = hdr->struct_size < sizeof VT.base ? hdr->struct_size : sizeof VT.base;
    memset(&VT, 0, sizeof VT);
    memcpy(&VT.base, hdr, n);
    VT.base.hdr.struct_size = sizeof VT;
    VT.base.hdr.iface_minor = AA_ABI_MINOR + 1;
    VT.base.caps |= FUTURE_CAP;
    for (i = 0; i < 4; i++) {
        VT.future_slots[i] = future_slot;
    }
    return &VT.base.hdr;
}

static const NextDesc DESC = {
    .base =
        {
            .struct_size = sizeof(NextDesc),
            .abi_major = AA_ABI_MAJOR,
            .abi_minor = AA_ABI_MINOR + 1,
            .role = AA_ROLE_REACTOR,
            /* Named after the reactor it forwards to, whose option keys
             * (mio.*) it passes through. */
            .name = "reactor-mio",
            .version = "1.next-minor-fixture",
            .vendor = "async-abi tests: a reactor of the next minor forwarding to reactor-mio",
            .init = w_init,
            .deinit = w_deinit,
            .get_interface = w_get_interface,
        },
    .future_field = "a field this host does not know",
};

const AaPluginDesc *aa_reactor_entry_v1(void) { return &DESC.base; }
