//! `libasync_scheduler.so`: the `async-scheduler` scheduler as a shared library, which the host
//! loads by path (`ASYNC_SCHEDULER=/path/libasync_scheduler.so`) or, for a
//! built-in name, from an `ASYNC_PLUGIN_PATH` directory instead of its
//! statically linked copy.
//!
//! Two symbols, both returning static data and free of side effects:
//! `aa_scheduler_entry_v1` (the ABI's entry, `AA_SCHEDULER_ENTRY_SYMBOL`) and
//! `async_runtime_build_id`, outside the ABI: the build id the host
//! compares with the copy of `async-scheduler` it links, before it loads this file
//! by name (ARCHITECTURE "Plugins, names and configuration").

use std::ffi::c_char;

use async_abi::AaPluginDesc;

/// The scheduler entry symbol: returns the static descriptor of `async-scheduler`. `[init]`
#[no_mangle]
pub extern "C" fn aa_scheduler_entry_v1() -> *const AaPluginDesc {
    async_scheduler::plugin_desc()
}

/// The build this library was made from: `async_scheduler::BUILD_ID`, a static
/// NUL-terminated string.
#[no_mangle]
pub extern "C" fn async_runtime_build_id() -> *const c_char {
    async_scheduler::BUILD_ID.as_ptr()
}
