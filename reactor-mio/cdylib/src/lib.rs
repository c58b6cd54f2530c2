//! `libreactor_mio.so`: the `reactor-mio` reactor as a shared library, which the host
//! loads by path (`ASYNC_REACTOR=/path/libreactor_mio.so`) or, for a
//! built-in name, from an `ASYNC_PLUGIN_PATH` directory instead of its
//! statically linked copy.
//!
//! Two symbols, both returning static data and free of side effects:
//! `aa_reactor_entry_v1` (the ABI's entry, `AA_REACTOR_ENTRY_SYMBOL`) and
//! `async_runtime_build_id`, outside the ABI: the build id the host
//! compares with the copy of `reactor-mio` it links, before it loads this file
//! by name (ARCHITECTURE "Plugins, names and configuration").

use std::ffi::c_char;

use async_abi::AaPluginDesc;

/// The reactor entry symbol: returns the static descriptor of `reactor-mio`. `[init]`
#[no_mangle]
pub extern "C" fn aa_reactor_entry_v1() -> *const AaPluginDesc {
    reactor_mio::plugin_desc()
}

/// The build this library was made from: `reactor_mio::BUILD_ID`, a static
/// NUL-terminated string.
#[no_mangle]
pub extern "C" fn async_runtime_build_id() -> *const c_char {
    reactor_mio::BUILD_ID.as_ptr()
}
