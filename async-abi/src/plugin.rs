//! The entry symbol and the plugin descriptor it returns.
//!
//! Loading, step by step (the host does exactly this):
//! 1. `dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)`; never closed
//!    (AA-R7).
//! 2. `dlsym` the role's entry symbol ([`crate::AA_SCHEDULER_ENTRY_SYMBOL`] or
//!    [`crate::AA_REACTOR_ENTRY_SYMBOL`]) and call it: it has no side effects.
//! 3. Check `abi_major == AA_ABI_MAJOR`, `struct_size >=` the v1.0 size, and
//!    `role`; copy `min(struct_size, sizeof)` bytes into a zeroed descriptor;
//!    require `init`, `deinit` and `get_interface`.
//! 4. `init(host, &ctx)`, then `get_interface(ctx, "aa.reactor.v1")`; check
//!    the interface header the same way and copy the vtable into a zeroed one;
//!    require the slots the role marks as required.

use core::ffi::{c_char, c_void};

use crate::{AaHostApi, AaPluginCtx, AaStatus, AaStr};

/// The plugin is a scheduler: its interface is `"aa.scheduler.v1"`.
pub const AA_ROLE_SCHEDULER: u32 = 1;

/// The plugin is a reactor: its interface is `"aa.reactor.v1"`.
pub const AA_ROLE_REACTOR: u32 = 2;

/// What a plugin's entry symbol returns. `[init]`
///
/// Static for the life of the process (AA-R7). Grows only at the end.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaPluginDesc {
    /// `sizeof(AaPluginDesc)` as the plugin was compiled.
    pub struct_size: u32,
    /// Must equal the host's `AA_ABI_MAJOR`.
    pub abi_major: u16,
    /// The minor version the plugin was compiled against.
    pub abi_minor: u16,
    /// `AA_ROLE_SCHEDULER` or `AA_ROLE_REACTOR`.
    pub role: u32,
    /// Zero.
    pub _reserved: u32,
    /// Short name, `"reactor-mio"`: NUL-terminated UTF-8, static.
    pub name: *const c_char,
    /// The plugin's own version, `"0.1.0"`: NUL-terminated UTF-8, static.
    pub version: *const c_char,
    /// Who made it: NUL-terminated UTF-8, static.
    pub vendor: *const c_char,
    /// Creates a plugin context bound to `host`, which stays valid until
    /// `deinit`. May be called again after `deinit`. `[init]`
    pub init: Option<
        unsafe extern "C" fn(host: *const AaHostApi, out: *mut *mut AaPluginCtx) -> AaStatus,
    >,
    /// Destroys a context made by `init`; nothing made from it may be alive.
    /// `[init]`
    pub deinit: Option<unsafe extern "C" fn(ctx: *mut AaPluginCtx)>,
    /// Returns the vtable for interface `id` (NUL not included), or NULL if
    /// the plugin does not provide it. The vtable begins with
    /// [`AaIfaceHeader`] and is static. `[any]`
    pub get_interface:
        Option<unsafe extern "C" fn(ctx: *mut AaPluginCtx, id: AaStr) -> *const AaIfaceHeader>,
}

// SAFETY: a descriptor is immutable static data (AA-R7): its pointers are to
// 'static strings and functions, so sharing it between threads is sound.
unsafe impl Sync for AaPluginDesc {}
// SAFETY: as above; the descriptor owns nothing and is never mutated.
unsafe impl Send for AaPluginDesc {}

/// The type of an entry symbol. `[init]`
pub type AaPluginEntryFn = unsafe extern "C" fn() -> *const AaPluginDesc;

/// The first member of every interface vtable.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaIfaceHeader {
    /// `sizeof` the whole vtable as the plugin was compiled.
    pub struct_size: u32,
    /// The interface's minor version.
    pub iface_minor: u16,
    /// Zero.
    pub _reserved: u16,
}

/// An opaque pointer-sized value that C code may use freely; documents
/// intent where a `void *` is user data passed back untouched.
pub type AaUserData = *mut c_void;
