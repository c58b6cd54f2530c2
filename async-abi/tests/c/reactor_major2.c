/* A reactor plugin of ABI major 2: it exports only aa_reactor_entry_v2 (a
 * major bump renames the entry symbol, docs/abi/versioning.md), so a host
 * of major 1 must say "ABI major 2, host supports 1", not "not a reactor
 * plugin". Nothing here is ever called by such a host. */
#include "async_abi.h"

static const AaPluginDesc DESC = {
    .struct_size = sizeof(AaPluginDesc),
    .abi_major = 2,
    .abi_minor = 0,
    .role = AA_ROLE_REACTOR,
    .name = "reactor-major2-fixture",
    .version = "2.0.0",
};

const AaPluginDesc *aa_reactor_entry_v2(void) { return &DESC; }
