//! Services the host gives every plugin: logging, for now.
//!
//! Plugins do not print and do not own a log subscriber: each Rust cdylib has
//! its own std and its own `tracing` dispatcher, so only an explicit bridge
//! reaches the application's one subscriber. A plugin logs through
//! [`AaHostApi::log`]; the host re-emits the record into `tracing` with the
//! plugin's target verbatim.

use core::ffi::{c_char, c_void};

use crate::AaStr;

/// Log level: an error the operator must see.
pub const AA_LOG_ERROR: u32 = 1;
/// Log level: something unexpected that the runtime survived.
pub const AA_LOG_WARN: u32 = 2;
/// Log level: normal, infrequent events (a plugin loaded).
pub const AA_LOG_INFO: u32 = 3;
/// Log level: diagnostics for developers.
pub const AA_LOG_DEBUG: u32 = 4;
/// Log level: very verbose diagnostics.
pub const AA_LOG_TRACE: u32 = 5;

/// The host's services, passed to `init`. Grows only at the end; a plugin
/// that needs a newer slot checks `struct_size` first.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaHostApi {
    /// `sizeof(AaHostApi)` as the host was compiled.
    pub struct_size: u32,
    /// The host's `AA_ABI_MAJOR`.
    pub abi_major: u16,
    /// The host's `AA_ABI_MINOR`.
    pub abi_minor: u16,
    /// Passed back as `ctx` to every host function.
    pub host_ctx: *mut c_void,
    /// NUL-terminated UTF-8, static.
    pub host_name: *const c_char,
    /// NUL-terminated UTF-8, static.
    pub host_version: *const c_char,
    /// Emits one log record. Never blocks for long; never calls back into the
    /// plugin. The strings are borrowed for the call (AA-R2). `[any]`
    pub log: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            level: u32,
            target: AaStr,
            msg: AaStr,
            file: AaStr,
            line: u32,
        ),
    >,
    /// Whether a record at `level` for `target` would be emitted; lets a
    /// plugin skip formatting. `[any]`
    pub log_enabled:
        Option<unsafe extern "C" fn(ctx: *mut c_void, level: u32, target: AaStr) -> bool>,
    /// Future host services by id; NULL for an unknown id. `[any]`
    pub get_extension: Option<unsafe extern "C" fn(ctx: *mut c_void, id: AaStr) -> *const c_void>,
}

// SAFETY: the host API is read-only after construction and its functions are
// `[any]`-thread by contract, so sharing the table between threads is sound.
unsafe impl Sync for AaHostApi {}
// SAFETY: as above.
unsafe impl Send for AaHostApi {}
