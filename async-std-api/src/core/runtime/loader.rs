//! Loading a plugin and negotiating its ABI: the `dlopen` module.
//!
//! Owns: the step-by-step load of `async_abi::plugin` (open, entry symbol,
//! descriptor checks, `init`, `get_interface`, vtable checks), for a shared
//! library or for a statically linked plugin's `plugin_desc()`, which goes
//! through the same checks.
//!
//! Invariants:
//! - **L1** A library is opened with `RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE`
//!   and never closed (AA-R7): every pointer a plugin hands out (descriptor,
//!   strings, vtables, functions) stays valid for the life of the process.
//! - **L2** Nothing is read from a descriptor or vtable beyond the
//!   `struct_size` the plugin declares; the copy is `min(theirs, ours)` bytes
//!   into a zeroed value, so a missing trailing slot reads as `None`.
//! - **L3** Every failure is one line, `cannot load <role> "<value>":
//!   <reason>`, and happens before any user code runs.
//! - **L4** A plugin's capability bits count only as far as its minor
//!   defines them: from a reactor whose vtable says `iface_minor` 0, only
//!   `AA_CAPS_V1_0` is kept, so the host never sends a 1.1 request (a
//!   datagram or file opcode) to a 1.0 reactor, whatever its reserved bits
//!   hold. The 1.1 slot `instance_caps` of such a plugin reads as `None`
//!   (L2). From one that says 1, only `AA_CAPS_V1_1`: the host re-arms a
//!   poll (`AA_CAP_POLL_LEVEL`, 1.2) only for a reactor that knows it asked.
//! - **L5** A library found for a built-in name (on `ASYNC_PLUGIN_PATH`)
//!   is the same code as the copy this host links, or it is not loaded:
//!   its `async_runtime_build_id` (a symbol outside the ABI, which the
//!   runtime's own `cdylib` packages export) must equal the linked crate's
//!   `BUILD_ID`, checked before its entry symbol is called. A library given
//!   by path is not checked: a third party's plugin has no build id, and
//!   the ABI negotiation is its contract.
//!
//! # Safety
//!
//! This module calls `dlopen`/`dlsym` through `libloading` and then calls
//! into foreign code through the entry symbol and the descriptor's `init` and
//! `get_interface`. The obligations are those of the ABI: the entry symbol
//! has type `AaPluginEntryFn` (a plugin that exports the name with another
//! type is outside the contract); the descriptor and interface pointers are
//! valid for `struct_size` bytes (L2) and static (L1).
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::mem::{offset_of, size_of, MaybeUninit};
use std::path::Path;
use std::ptr;

use async_abi::{
    AaPluginCtx, AaPluginDesc, AaPluginEntryFn, AaReactorVTable, AaSchedulerVTable, AaStr,
    AA_ABI_MAJOR, AA_CAPS_V1_0, AA_CAPS_V1_1, AA_IFACE_REACTOR_V1, AA_IFACE_SCHEDULER_V1,
    AA_REACTOR_ENTRY_SYMBOL, AA_ROLE_REACTOR, AA_ROLE_SCHEDULER, AA_SCHEDULER_ENTRY_SYMBOL,
};

use super::host_log::HOST_API;

/// `RTLD_NODELETE` on Linux (glibc and musl): `libloading` does not export
/// it.
const RTLD_NODELETE: i32 = 0x1000;

/// The size of an ABI 1.0 descriptor: the smallest the host accepts.
const DESC_V1_0_SIZE: usize = size_of::<AaPluginDesc>();

/// Which kind of plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Scheduler,
    Reactor,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Scheduler => "scheduler",
            Role::Reactor => "reactor",
        }
    }

    fn entry_symbol(self) -> &'static [u8] {
        match self {
            Role::Scheduler => AA_SCHEDULER_ENTRY_SYMBOL,
            Role::Reactor => AA_REACTOR_ENTRY_SYMBOL,
        }
    }

    fn code(self) -> u32 {
        match self {
            Role::Scheduler => AA_ROLE_SCHEDULER,
            Role::Reactor => AA_ROLE_REACTOR,
        }
    }

    fn iface_id(self) -> &'static [u8] {
        match self {
            Role::Scheduler => AA_IFACE_SCHEDULER_V1,
            Role::Reactor => AA_IFACE_REACTOR_V1,
        }
    }
}

/// A checked descriptor and where it came from.
#[derive(Clone, Copy)]
pub(crate) struct Image {
    pub(crate) desc: AaPluginDesc,
}

/// A plugin context with its validated interface table.
pub(crate) struct Loaded<V> {
    pub(crate) desc: AaPluginDesc,
    pub(crate) ctx: *mut AaPluginCtx,
    /// The vtable: a zeroed copy of `min(theirs, ours)` bytes (L2), boxed so
    /// its address is stable (the scheduler keeps a pointer to the reactor's).
    pub(crate) vt: Box<V>,
}

impl<V> Loaded<V> {
    /// Destroys the plugin context (`deinit`). Call only once nothing made
    /// from it is alive.
    pub(crate) fn deinit(&self) {
        if let Some(deinit) = self.desc.deinit {
            // SAFETY: `ctx` came from this descriptor's `init` and the caller
            // guarantees nothing made from it is alive (the descriptor's
            // `deinit` contract).
            unsafe { deinit(self.ctx) };
        }
    }
}

fn fail(role: Role, value: &str, reason: impl std::fmt::Display) -> String {
    format!("cannot load {} \"{value}\": {reason}", role.name())
}

/// The symbol a library built by the runtime's own `cdylib` packages
/// exports with its build id (L5): `const char *async_runtime_build_id(void)`,
/// a static NUL-terminated string.
const BUILD_ID_SYMBOL: &[u8] = b"async_runtime_build_id\0";

/// The type of [`BUILD_ID_SYMBOL`].
type BuildIdFn = unsafe extern "C" fn() -> *const std::ffi::c_char;

/// Opens a shared library given by path and returns its checked descriptor
/// (steps 1-3).
pub(crate) fn open(role: Role, path: &Path) -> Result<Image, String> {
    let value = path.display().to_string();
    let lib = dlopen(role, &value, path)?;
    entry(role, &value, lib)
}

/// Opens the library found for built-in `name` at `path` (on
/// `ASYNC_PLUGIN_PATH`): refused unless its build id is the linked copy's
/// (L5), then steps 1-3 as [`open`].
pub(crate) fn open_named(role: Role, name: &str, path: &Path) -> Result<Image, String> {
    let value = path.display().to_string();
    let lib = dlopen(role, &value, path)?;
    let ours = linked_build_id(role, name);
    let ours = ours.to_string_lossy();
    // SAFETY: a library exporting this name declares it as `BuildIdFn`
    // (L5; the runtime's cdylib packages are its only exporters).
    let theirs = match unsafe { lib.get::<BuildIdFn>(BUILD_ID_SYMBOL) } {
        // SAFETY: the function has no side effects and returns a static
        // NUL-terminated string or NULL (L5); the library is never closed.
        Ok(f) => Some(cstr(unsafe { f() })),
        Err(_) => None,
    };
    if theirs.as_deref() != Some(ours.as_ref()) {
        let dir = path.parent().unwrap_or(Path::new("")).display();
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        let reason = match theirs {
            None => format!(
                "{value} has no build id, so it is not one of this runtime's own plugin builds \
                 (load a third party's plugin by path); take {dir} off ASYNC_PLUGIN_PATH"
            ),
            Some(theirs) => format!(
                "{value} was built from {theirs}, this program links {ours}; rebuild it from the \
                 same sources and profile (cargo build -p {}) or take {dir} off ASYNC_PLUGIN_PATH",
                super::config::package_of(&file)
            ),
        };
        // L1: not closed either (its initialisers ran; nothing of it is
        // kept, the id was copied).
        std::mem::forget(lib);
        return Err(fail(role, name, reason));
    }
    entry(role, &value, lib)
}

/// The build id of the copy of built-in `name` this host links (L5).
fn linked_build_id(role: Role, name: &str) -> &'static std::ffi::CStr {
    match (role, name) {
        (Role::Scheduler, _) => async_scheduler::BUILD_ID,
        (Role::Reactor, "uring") => reactor_uring::BUILD_ID,
        (Role::Reactor, _) => reactor_mio::BUILD_ID,
    }
}

/// Step 1: `dlopen`, with the flags of L1.
fn dlopen(role: Role, value: &str, path: &Path) -> Result<libloading::os::unix::Library, String> {
    if !path.exists() {
        return Err(fail(role, value, "file not found"));
    }
    let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL | RTLD_NODELETE;
    // SAFETY: opening a library runs its initialisers; loading a file the
    // user named as a plugin (by path, or by putting its directory on
    // ASYNC_PLUGIN_PATH) is the documented contract of these options. The
    // library is never closed (L1): `entry` leaks it.
    unsafe { libloading::os::unix::Library::open(Some(path), flags) }
        .map_err(|e| fail(role, value, dlopen_reason(&e.to_string())))
}

/// Steps 2-3: the entry symbol and the descriptor it returns.
fn entry(role: Role, value: &str, lib: libloading::os::unix::Library) -> Result<Image, String> {
    // SAFETY: the entry symbol of this role has type `AaPluginEntryFn` by the
    // ABI contract (module doc).
    let found = unsafe { lib.get::<AaPluginEntryFn>(role.entry_symbol()) };
    let entry_fn: AaPluginEntryFn = match found {
        Ok(sym) => *sym,
        Err(_) => return Err(fail(role, value, no_entry_reason(role, &lib))),
    };
    // L1: never unloaded, so `entry_fn` and everything it returns stay valid.
    std::mem::forget(lib);
    // SAFETY: `entry_fn` is the plugin's entry function (type per the ABI);
    // it has no side effects and may be called at any time.
    let desc = unsafe { entry_fn() };
    check_desc(role, value, desc)
}

/// Why a library lacks the role's entry symbol: a plugin of a later ABI
/// major (a major bump renames the symbol, `aa_reactor_entry_v2`, so its
/// descriptor is never mistaken for ours) or not a plugin of this role.
fn no_entry_reason(role: Role, lib: &libloading::os::unix::Library) -> String {
    let ours = &role.entry_symbol()[..role.entry_symbol().len() - 1];
    let ours = String::from_utf8_lossy(ours);
    let stem = ours.trim_end_matches(|c: char| c.is_ascii_digit());
    for major in (AA_ABI_MAJOR + 1)..=(AA_ABI_MAJOR + 8) {
        let symbol = format!("{stem}{major}\0");
        // SAFETY: only the symbol's presence is checked; it is never called.
        if unsafe { lib.get::<*const ()>(symbol.as_bytes()) }.is_ok() {
            return format!(
                "ABI major {major}, host supports {AA_ABI_MAJOR} (the library exports {}, not {ours})",
                &symbol[..symbol.len() - 1]
            );
        }
    }
    format!("no {ours} symbol (not a {} plugin)", role.name())
}

/// Checks a statically linked plugin's descriptor the same way: the
/// scheduler for every scheduler name, `reactor-uring` for `uring` and
/// `reactor-mio` for `mio` and `embedded`.
pub(crate) fn linked(role: Role, name: &str) -> Result<Image, String> {
    let desc = match (role, name) {
        (Role::Scheduler, _) => async_scheduler::plugin_desc(),
        (Role::Reactor, "uring") => reactor_uring::plugin_desc(),
        (Role::Reactor, _) => reactor_mio::plugin_desc(),
    };
    check_desc(role, name, desc)
}

fn dlopen_reason(msg: &str) -> String {
    let lower = msg.to_ascii_lowercase();
    let not_a_library = [
        "invalid elf header",
        "file too short",
        "not an elf",
        "only et_dyn and et_exec",
        "wrong elf class",
        "elf file",
    ];
    if not_a_library.iter().any(|m| lower.contains(m)) {
        "not a shared library".to_owned()
    } else if lower.contains("no such file") {
        "file not found".to_owned()
    } else {
        // dlerror text starts with the path; keep the reason after it, one line.
        let reason = msg.split_once(": ").map_or(msg, |(_, r)| r);
        reason.replace('\n', " ")
    }
}

/// Step 3: major, size, role, required functions (L2).
fn check_desc(role: Role, value: &str, p: *const AaPluginDesc) -> Result<Image, String> {
    if p.is_null() {
        return Err(fail(role, value, "entry returned no descriptor"));
    }
    // SAFETY: `p` is a non-null descriptor pointer from the plugin's entry;
    // every descriptor begins with a `u32` struct_size (the ABI's first
    // member), which is all we read before checking the size.
    let size = unsafe { ptr::read_unaligned(p.cast::<u32>()) } as usize;
    let header = offset_of!(AaPluginDesc, role);
    if size < header {
        return Err(fail(
            role,
            value,
            format_args!("descriptor is {size} bytes, ABI 1.0 needs at least {DESC_V1_0_SIZE}"),
        ));
    }
    // SAFETY: the plugin declares at least `header` bytes (checked above),
    // which covers `abi_major` at offset 4.
    let major = unsafe {
        ptr::read_unaligned(
            p.cast::<u8>()
                .add(offset_of!(AaPluginDesc, abi_major))
                .cast::<u16>(),
        )
    };
    if major != AA_ABI_MAJOR {
        return Err(fail(
            role,
            value,
            format_args!("ABI major {major}, host supports {AA_ABI_MAJOR}"),
        ));
    }
    if size < DESC_V1_0_SIZE {
        return Err(fail(
            role,
            value,
            format_args!("descriptor is {size} bytes, ABI 1.0 needs at least {DESC_V1_0_SIZE}"),
        ));
    }
    let desc: AaPluginDesc = copy_prefix(p, size);
    if desc.role != role.code() {
        let other = match desc.role {
            AA_ROLE_SCHEDULER => "a scheduler",
            AA_ROLE_REACTOR => "a reactor",
            _ => "an unknown role",
        };
        return Err(fail(
            role,
            value,
            format_args!("the plugin is {other}, not a {}", role.name()),
        ));
    }
    if desc.init.is_none() || desc.deinit.is_none() || desc.get_interface.is_none() {
        return Err(fail(
            role,
            value,
            "descriptor lacks init, deinit or get_interface",
        ));
    }
    Ok(Image { desc })
}

/// Copies `min(theirs, size_of::<T>())` bytes into a zeroed `T` (L2).
///
/// Only used for ABI tables whose every all-zero bit pattern is valid
/// (integers, raw pointers and `Option<fn>`).
fn copy_prefix<T>(p: *const T, theirs: usize) -> T {
    let mut out = MaybeUninit::<T>::zeroed();
    let n = theirs.min(size_of::<T>());
    // SAFETY: `p` is valid for `theirs >= n` bytes (the plugin's declared
    // struct_size, L2) and `out` for `size_of::<T>() >= n`; they do not
    // overlap (ours is a fresh local).
    unsafe { ptr::copy_nonoverlapping(p.cast::<u8>(), out.as_mut_ptr().cast::<u8>(), n) };
    // SAFETY: T is an ABI table of integers, raw pointers and `Option<fn>`
    // slots, for which all-zero bytes and any prefix copied from a valid
    // table are valid values (a NULL slot is `None`).
    unsafe { out.assume_init() }
}

/// Step 4: `init`, then the interface, checked and copied.
fn negotiate<V>(
    role: Role,
    value: &str,
    image: &Image,
    required_end: usize,
    check_slots: impl Fn(&V) -> Vec<(&'static str, bool)>,
) -> Result<Loaded<V>, String> {
    let desc = image.desc;
    let init = desc.init.expect("checked by check_desc");
    let get_interface = desc.get_interface.expect("checked by check_desc");
    let mut ctx: *mut AaPluginCtx = ptr::null_mut();
    // SAFETY: `HOST_API` is a static host table (valid for the life of the
    // process, as `init` requires until `deinit`) and `ctx` is a valid out
    // pointer.
    let status = unsafe { init(&HOST_API, &mut ctx) };
    if status < 0 {
        return Err(fail(
            role,
            value,
            format_args!("init failed: {}", super::status_text(status)),
        ));
    }
    let id = role.iface_id();
    let id_str = std::str::from_utf8(&id[..id.len() - 1]).expect("ASCII id");
    // SAFETY: `ctx` came from this descriptor's `init`; the id is borrowed
    // for the call (AA-R2).
    let hdr = unsafe { get_interface(ctx, AaStr::from_str(id_str)) };
    let deinit = |ctx| {
        if let Some(d) = desc.deinit {
            // SAFETY: `ctx` came from `init` and nothing was made from it.
            unsafe { d(ctx) }
        }
    };
    if hdr.is_null() {
        deinit(ctx);
        return Err(fail(role, value, format_args!("no {id_str} interface")));
    }
    // SAFETY: a non-null interface pointer begins with `AaIfaceHeader`
    // (ABI: every vtable starts with its header) and is static (AA-R7).
    let theirs = unsafe { ptr::read_unaligned(hdr.cast::<u32>()) } as usize;
    if theirs < required_end {
        deinit(ctx);
        return Err(fail(
            role,
            value,
            format_args!(
                "interface {id_str} is {theirs} bytes, ABI 1.0 needs at least {required_end}"
            ),
        ));
    }
    let vt: V = copy_prefix(hdr.cast::<V>(), theirs);
    if let Some((slot, _)) = check_slots(&vt).into_iter().find(|(_, ok)| !ok) {
        deinit(ctx);
        return Err(fail(
            role,
            value,
            format_args!("interface {id_str} lacks the required {slot} function"),
        ));
    }
    Ok(Loaded {
        desc,
        ctx,
        vt: Box::new(vt),
    })
}

/// Initialises a scheduler plugin and fetches its vtable.
pub(crate) fn scheduler(value: &str, image: &Image) -> Result<Loaded<AaSchedulerVTable>, String> {
    let end = offset_of!(AaSchedulerVTable, shutdown) + size_of::<usize>();
    negotiate(
        Role::Scheduler,
        value,
        image,
        end,
        |v: &AaSchedulerVTable| {
            vec![
                ("create", v.create.is_some()),
                ("destroy", v.destroy.is_some()),
                ("run", v.run.is_some()),
                ("coroutine_new", v.coroutine_new.is_some()),
                ("enqueue", v.enqueue.is_some()),
                ("suspend", v.suspend.is_some()),
                ("current", v.current.is_some()),
                ("coroutine_arg", v.coroutine_arg.is_some()),
                ("coroutine_id", v.coroutine_id.is_some()),
                ("coroutine_info", v.coroutine_info.is_some()),
                ("iterate", v.iterate.is_some()),
                ("defer", v.defer.is_some()),
                ("add_switch_handler", v.add_switch_handler.is_some()),
                ("shutdown", v.shutdown.is_some()),
            ]
        },
    )
}

/// The capability bits the host reads from a reactor whose vtable says
/// `iface_minor` (L4): a 1.0 reactor's are cut to the bits 1.0 defined, a
/// 1.1 reactor's to those of 1.1.
pub(crate) fn reactor_caps(iface_minor: u16, caps: u64) -> u64 {
    match iface_minor {
        0 => caps & AA_CAPS_V1_0,
        1 => caps & AA_CAPS_V1_1,
        _ => caps,
    }
}

/// Initialises a reactor plugin and fetches its vtable; its capabilities
/// are read as its minor defines them (L4).
pub(crate) fn reactor(value: &str, image: &Image) -> Result<Loaded<AaReactorVTable>, String> {
    let mut loaded = negotiate_reactor(value, image)?;
    let vt = &mut loaded.vt;
    let caps = reactor_caps(vt.hdr.iface_minor, vt.caps);
    if caps != vt.caps {
        tracing::warn!(
            target: "async_std_api::runtime",
            "reactor \"{value}\" is ABI 1.{} and sets capability bits {:#x} its ABI does not define: ignored",
            vt.hdr.iface_minor,
            vt.caps & !caps
        );
        vt.caps = caps;
    }
    Ok(loaded)
}

fn negotiate_reactor(value: &str, image: &Image) -> Result<Loaded<AaReactorVTable>, String> {
    let end = offset_of!(AaReactorVTable, dispose) + size_of::<usize>();
    negotiate(Role::Reactor, value, image, end, |v: &AaReactorVTable| {
        vec![
            ("create", v.create.is_some()),
            ("destroy", v.destroy.is_some()),
            ("run_once", v.run_once.is_some()),
            ("alive", v.alive.is_some()),
            ("now_ns", v.now_ns.is_some()),
            ("wake", v.wake.is_some()),
            ("timer_new", v.timer_new.is_some()),
            ("timer_rearm", v.timer_rearm.is_some()),
            ("poll_new", v.poll_new.is_some()),
            ("poll_set_interest", v.poll_set_interest.is_some()),
            ("trigger_new", v.trigger_new.is_some()),
            ("trigger_fire", v.trigger_fire.is_some()),
            ("io_submit", v.io_submit.is_some()),
            ("set_ref", v.set_ref.is_some()),
            ("cancel", v.cancel.is_some()),
            ("close", v.close.is_some()),
            ("dispose", v.dispose.is_some()),
        ]
    })
}

/// The descriptor's name, version and vendor, for the load log line.
pub(crate) fn describe(desc: &AaPluginDesc) -> (String, String) {
    (cstr(desc.name), cstr(desc.version))
}

fn cstr(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return "?".to_owned();
    }
    // SAFETY: descriptor strings are NUL-terminated and static (AA-R7, L1).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reactor_keeps_only_the_capability_bits_its_minor_defined() {
        use async_abi::{
            AA_CAP_IO, AA_CAP_IO_DGRAM, AA_CAP_IO_FILE, AA_CAP_POLL_LEVEL, AA_CAP_TIMER,
        };
        let claimed = AA_CAP_TIMER
            | AA_CAP_IO
            | AA_CAP_IO_DGRAM
            | AA_CAP_IO_FILE
            | AA_CAP_POLL_LEVEL
            | 1 << 40;
        assert_eq!(reactor_caps(0, claimed), AA_CAP_TIMER | AA_CAP_IO);
        assert_eq!(
            reactor_caps(1, claimed),
            AA_CAP_TIMER | AA_CAP_IO | AA_CAP_IO_DGRAM | AA_CAP_IO_FILE
        );
        assert_eq!(reactor_caps(2, claimed), claimed);
    }

    #[test]
    fn dlopen_messages_map_to_one_reason() {
        assert_eq!(
            dlopen_reason("/etc/hostname: invalid ELF header"),
            "not a shared library"
        );
        assert_eq!(
            dlopen_reason("/tmp/x.so: file too short"),
            "not a shared library"
        );
        assert_eq!(
            dlopen_reason("/tmp/x.so: undefined symbol: foo"),
            "undefined symbol: foo"
        );
    }
}
