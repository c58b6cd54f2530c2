//! The C ABI: the plugin descriptor, the `aa.reactor.v1` vtable and one
//! `extern "C"` shim per slot.
//!
//! # Safety
//!
//! This file and `sys.rs` are the only places with `unsafe` code. Every
//! shim does five things, in order (STYLE S15): catch panics
//! ([`sdk::guard`]); check NULLs, `struct_size` and flags; convert raw
//! pointers into typed values (`&Reactor`, `Rc<Event>`, [`HostBuf`]); call
//! the safe reactor; map the result to an `AaStatus` (recording the message
//! for `last_error_message`).
//!
//! The pointers the host passes are trusted as far as the ABI says:
//!
//! - **F1** `r` is NULL or a reactor made by [`create`] and not destroyed;
//!   it is an `Rc<Reactor>` leaked with `Rc::into_raw`, and `destroy` takes
//!   it back. `destroy` refuses inside `run_once` (reactor invariant R1 lets
//!   callbacks call anything else), so a `&Reactor` borrowed for one call
//!   stays valid for that call.
//! - **F2** `ev` is NULL or an event made by this reactor and not disposed
//!   (the ABI: "the host never touches it again" after dispose). It points
//!   to the header of an `Rc<Event>` leaked with `Rc::into_raw` (the host's
//!   reference); `dispose` takes it back. The magic number catches some
//!   misuse, not all.
//! - **F3** Host callbacks and their `ud` stay valid until the event is
//!   disposed; they are called only on the loop thread, from `run_once`,
//!   with no borrow held (reactor invariant R1) and never after dispose
//!   (event invariant E2).
//! - **F4** `[any]` entry points (`wake`, `trigger_fire`) read only
//!   immutable fields holding thread-safe values (`Reactor::shared`,
//!   `Event::trigger`) through raw field pointers, never a reference to the
//!   whole loop-thread object.

use std::ffi::{c_char, c_void, CString};
use std::mem::size_of;
use std::ptr::{self, addr_of};
use std::rc::Rc;
use std::sync::Mutex;

use async_abi::sdk;
use async_abi::*;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::event::{Event, Request, EVENT_MAGIC};
use crate::ops::Submitted;
use crate::reactor::Reactor;
use crate::sys::dns::Hints;
use crate::sys::{HostAddr, HostBuf};

// ---------------------------------------------------------------------------
// Host callbacks
// ---------------------------------------------------------------------------

/// A host callback of one event kind.
#[derive(Debug, Clone, Copy)]
enum CallbackFn {
    Timer(unsafe extern "C" fn(*mut AaEvent, AaStatus, *mut c_void)),
    Poll(unsafe extern "C" fn(*mut AaEvent, AaStatus, u32, *mut c_void)),
    Io(unsafe extern "C" fn(*mut AaEvent, i64, *mut c_void)),
    Trigger(unsafe extern "C" fn(*mut AaEvent, AaStatus, *mut c_void)),
    Signal(unsafe extern "C" fn(*mut AaEvent, AaStatus, i32, *mut c_void)),
    Process(unsafe extern "C" fn(*mut AaEvent, AaStatus, *const AaExitStatus, *mut c_void)),
    FsWatch(unsafe extern "C" fn(*mut AaEvent, AaStatus, u32, AaBytes, *mut c_void)),
    Dns(unsafe extern "C" fn(*mut AaEvent, AaStatus, *const AaSockAddr, usize, *mut c_void)),
}

/// An event's callback and user data, as the host gave them (F3).
#[derive(Debug)]
pub(crate) struct HostCallback {
    f: CallbackFn,
    ud: *mut c_void,
}

impl HostCallback {
    /// Calls the host: timers and triggers get `status`; polls `status`
    /// and `value` as ready bits; requests `status` if it is non-zero (a
    /// cancellation reason), else `value` (the result); signals `status` and
    /// `value` as the signal number; fs watches `status` and `value` as the
    /// change bits, with an empty name; processes and lookups `status` with
    /// no data (their failures and cancellations).
    pub(crate) fn notify(&self, ev: &Event, status: AaStatus, value: i64) {
        let ptr = ev as *const Event as *mut AaEvent;
        match self.f {
            // SAFETY: F3: the callback and `ud` were given for this event,
            // which is not disposed (the caller checked `deliverable`, E2);
            // `ptr` is the event's header (E1); no borrow is held (R1).
            CallbackFn::Timer(f) | CallbackFn::Trigger(f) => unsafe { f(ptr, status, self.ud) },
            // SAFETY: as above.
            CallbackFn::Poll(f) => unsafe { f(ptr, status, value as u32, self.ud) },
            CallbackFn::Io(f) => {
                let result = if status != 0 {
                    i64::from(status)
                } else {
                    value
                };
                // SAFETY: as above.
                unsafe { f(ptr, result, self.ud) }
            }
            // SAFETY: as above.
            CallbackFn::Signal(f) => unsafe { f(ptr, status, value as i32, self.ud) },
            // SAFETY: as above; NULL is the ABI's "no exit status".
            CallbackFn::Process(f) => unsafe { f(ptr, status, ptr::null(), self.ud) },
            CallbackFn::FsWatch(f) => {
                let name = AaBytes {
                    ptr: ptr::null(),
                    len: 0,
                };
                // SAFETY: as above.
                unsafe { f(ptr, status, value as u32, name, self.ud) }
            }
            // SAFETY: as above; NULL with 0 addresses.
            CallbackFn::Dns(f) => unsafe { f(ptr, status, ptr::null(), 0, self.ud) },
        }
    }

    /// Tells a process watch how its child ended (`status` 0).
    pub(crate) fn notify_exit(&self, ev: &Event, exit: &AaExitStatus) {
        let ptr = ev as *const Event as *mut AaEvent;
        if let CallbackFn::Process(f) = self.f {
            // SAFETY: F3 as in `notify`; `exit` is borrowed for the call
            // (AA-R3).
            unsafe { f(ptr, 0, exit, self.ud) }
        }
    }

    /// Reports one change to a filesystem watch (`status` 0); `name` is
    /// borrowed for the call (AA-R3).
    pub(crate) fn notify_fs(&self, ev: &Event, events: u32, name: &[u8]) {
        let ptr = ev as *const Event as *mut AaEvent;
        if let CallbackFn::FsWatch(f) = self.f {
            let name = AaBytes {
                ptr: if name.is_empty() {
                    ptr::null()
                } else {
                    name.as_ptr()
                },
                len: name.len(),
            };
            // SAFETY: F3 as in `notify`; `name` points into the reactor's
            // buffer, valid for the call (AA-R3).
            unsafe { f(ptr, 0, events, name, self.ud) }
        }
    }

    /// Completes a lookup with its addresses (`status` 0); `addrs` is
    /// borrowed for the call (AA-R3).
    pub(crate) fn notify_dns(&self, ev: &Event, addrs: &[AaSockAddr]) {
        let ptr = ev as *const Event as *mut AaEvent;
        if let CallbackFn::Dns(f) = self.f {
            // SAFETY: F3 as in `notify`; `addrs` is the reactor's vector,
            // valid for the call (AA-R3).
            unsafe { f(ptr, 0, addrs.as_ptr(), addrs.len(), self.ud) }
        }
    }
}

/// An `on_closed` callback and its user data (AA-R4).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClosedCallback {
    f: unsafe extern "C" fn(*mut AaEvent, *mut c_void),
    ud: *mut c_void,
}

impl ClosedCallback {
    /// Calls `on_closed`.
    pub(crate) fn call(&self, ev: &Event) {
        let ptr = ev as *const Event as *mut AaEvent;
        // SAFETY: F3: given with `close` for this event, which is not
        // disposed (E2, checked by the caller); no borrow is held (R1).
        unsafe { (self.f)(ptr, self.ud) }
    }
}

// ---------------------------------------------------------------------------
// Descriptor, entry symbol, plugin context
// ---------------------------------------------------------------------------

static DESC: AaPluginDesc = AaPluginDesc {
    struct_size: size_of::<AaPluginDesc>() as u32,
    abi_major: AA_ABI_MAJOR,
    abi_minor: AA_ABI_MINOR,
    role: AA_ROLE_REACTOR,
    _reserved: 0,
    name: c"reactor-mio".as_ptr(),
    version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char,
    vendor: c"async workspace".as_ptr(),
    init: Some(init),
    deinit: Some(deinit),
    get_interface: Some(get_interface),
};

/// The plugin descriptor, for static linking (the `embedded` reactor goes
/// through the same negotiation as a loaded one).
pub fn plugin_desc() -> *const AaPluginDesc {
    &DESC
}

/// The reactor entry symbol: returns the static descriptor, no side
/// effects. `[init]`
#[no_mangle]
pub extern "C" fn aa_reactor_entry_v1() -> *const AaPluginDesc {
    &DESC
}

/// What `init` hands out; only its address matters.
#[derive(Debug)]
struct PluginCtx {
    magic: u32,
}

const CTX_MAGIC: u32 = 0x6d69_6f43;

/// Live plugin contexts: the host API is forgotten when the last goes.
static CONTEXTS: Mutex<usize> = Mutex::new(0);

unsafe extern "C" fn init(host: *const AaHostApi, out: *mut *mut AaPluginCtx) -> AaStatus {
    sdk::guard("reactor-mio init", || {
        if out.is_null() {
            return AA_E_INVALID;
        }
        if !host.is_null() {
            // SAFETY: a non-NULL `host` points to the host's table for the
            // duration of the call (AA-R2); its first fields are in every
            // version.
            let (size, major) = unsafe { ((*host).struct_size, (*host).abi_major) };
            if major != AA_ABI_MAJOR || (size as usize) < size_of::<AaHostApi>() {
                return AA_E_VERSION;
            }
        }
        let mut contexts = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `host` is NULL or a valid table that stays valid until
        // `deinit` (the `init` contract), which `set_host` requires.
        unsafe { sdk::set_host(host) };
        *contexts += 1;
        let ctx = Box::into_raw(Box::new(PluginCtx { magic: CTX_MAGIC }));
        // SAFETY: `out` is non-NULL and points to the caller's slot.
        unsafe { out.write(ctx.cast()) };
        AA_OK
    })
}

unsafe extern "C" fn deinit(ctx: *mut AaPluginCtx) {
    sdk::guard_or("reactor-mio deinit", (), || {
        if ctx.is_null() {
            return;
        }
        // SAFETY: a non-NULL `ctx` was returned by `init` (a leaked
        // `Box<PluginCtx>`) and is deinitialised once ([init] contract).
        let ctx = unsafe { Box::from_raw(ctx.cast::<PluginCtx>()) };
        debug_assert_eq!(ctx.magic, CTX_MAGIC);
        let mut contexts = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
        *contexts = contexts.saturating_sub(1);
        if *contexts == 0 {
            sdk::clear_host();
        }
    })
}

unsafe extern "C" fn get_interface(_ctx: *mut AaPluginCtx, id: AaStr) -> *const AaIfaceHeader {
    sdk::guard_or("reactor-mio get_interface", ptr::null(), || {
        // SAFETY: `id` is borrowed for the call (AA-R2).
        let id = unsafe { id.as_bytes() };
        if id == &AA_IFACE_REACTOR_V1[..AA_IFACE_REACTOR_V1.len() - 1] {
            &VTABLE.hdr
        } else {
            ptr::null()
        }
    })
}

// ---------------------------------------------------------------------------
// The vtable
// ---------------------------------------------------------------------------

/// Capabilities: every event kind of the ABI, inline completion, and
/// datagram requests; not file requests (regular files are not pollable, so
/// their system calls would block the loop).
const CAPS: u64 = AA_CAP_TIMER
    | AA_CAP_POLL
    | AA_CAP_IO
    | AA_CAP_TRIGGER
    | AA_CAP_IO_INLINE
    | AA_CAP_SIGNAL
    | AA_CAP_PROCESS
    | AA_CAP_FS_WATCH
    | AA_CAP_DNS
    | AA_CAP_IO_DGRAM;

static VTABLE: AaReactorVTable = AaReactorVTable {
    hdr: AaIfaceHeader {
        struct_size: size_of::<AaReactorVTable>() as u32,
        iface_minor: AA_ABI_MINOR,
        _reserved: 0,
    },
    caps: CAPS,
    create: Some(create),
    destroy: Some(destroy),
    run_once: Some(run_once),
    alive: Some(alive),
    now_ns: Some(now_ns),
    wake: Some(wake),
    timer_new: Some(timer_new),
    timer_rearm: Some(timer_rearm),
    poll_new: Some(poll_new),
    poll_set_interest: Some(poll_set_interest),
    trigger_new: Some(trigger_new),
    trigger_fire: Some(trigger_fire),
    io_submit: Some(io_submit),
    set_ref: Some(set_ref),
    cancel: Some(cancel),
    close: Some(close),
    dispose: Some(dispose),
    last_error_message: Some(last_error_message),
    signal_new: Some(signal_new),
    process_new: Some(process_new),
    fs_watch_new: Some(fs_watch_new),
    dns_resolve: Some(dns_resolve),
    instance_caps: Some(instance_caps),
};

// ---------------------------------------------------------------------------
// Pointer conversions (F1, F2)
// ---------------------------------------------------------------------------

/// The reactor behind `r`, for the duration of one call (F1).
///
/// # Safety
///
/// `r` must be NULL or a live reactor of this plugin (F1).
unsafe fn reactor_ref<'a>(r: *const AaReactor) -> Option<&'a Reactor> {
    // SAFETY: F1: a non-NULL `r` is a leaked `Rc<Reactor>` that outlives
    // this call.
    unsafe { r.cast::<Reactor>().as_ref() }
}

/// The event behind `ev`, checked for the magic number (F2).
///
/// # Safety
///
/// `ev` must be NULL or a live event of this plugin (F2).
unsafe fn event_ref<'a>(ev: *const AaEvent) -> Option<&'a Event> {
    // SAFETY: F2: a non-NULL `ev` points to a live `Event` whose header is
    // its first field (`#[repr(C)]`, E1).
    let event = unsafe { ev.cast::<Event>().as_ref() }?;
    (event.magic == EVENT_MAGIC).then_some(event)
}

/// A new strong reference to the event behind `ev` (the host keeps its own).
///
/// # Safety
///
/// As for [`event_ref`].
unsafe fn event_rc(ev: *const AaEvent) -> Option<Rc<Event>> {
    // SAFETY: forwarded (F2).
    unsafe { event_ref(ev) }?;
    let ptr = ev.cast::<Event>();
    // SAFETY: F2: `ptr` came from `Rc::into_raw` and the host's reference
    // keeps the count >= 1, so adding one and taking it back as an `Rc` is
    // balanced by that `Rc`'s drop.
    unsafe {
        Rc::increment_strong_count(ptr);
        Some(Rc::from_raw(ptr))
    }
}

/// Hands the host its reference to a new event.
fn into_host(ev: Rc<Event>) -> *mut AaEvent {
    Rc::into_raw(ev).cast_mut().cast()
}

/// Writes NULL into a non-NULL `out`, so a failing constructor leaves no
/// stale pointer (AA-R8).
///
/// # Safety
///
/// `out` must be NULL or writable.
unsafe fn clear_out(out: *mut *mut AaEvent) {
    if !out.is_null() {
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { out.write(ptr::null_mut()) };
    }
}

/// Runs a loop-thread call on the event's reactor, recording its error.
///
/// # Safety
///
/// `ev` must be NULL or a live event of this plugin (F2).
unsafe fn with_event(
    what: &str,
    ev: *const AaEvent,
    f: impl FnOnce(&Reactor, Rc<Event>) -> Result<AaStatus>,
) -> AaStatus {
    // SAFETY: forwarded (F2).
    let Some(ev) = (unsafe { event_rc(ev) }) else {
        return AA_E_INVALID;
    };
    let Some(reactor) = ev.reactor.upgrade() else {
        return AA_E_CLOSED;
    };
    let res = reactor.check_thread(what).and_then(|()| f(&reactor, ev));
    res.unwrap_or_else(|e| reactor.fail(e))
}

/// Runs a loop-thread call on `r`, recording its error.
///
/// # Safety
///
/// `r` must be NULL or a live reactor of this plugin (F1).
unsafe fn with_reactor(
    what: &str,
    r: *const AaReactor,
    f: impl FnOnce(&Reactor) -> Result<AaStatus>,
) -> AaStatus {
    // SAFETY: forwarded (F1).
    let Some(reactor) = (unsafe { reactor_ref(r) }) else {
        return AA_E_INVALID;
    };
    let res = reactor.check_thread(what).and_then(|()| f(reactor));
    res.unwrap_or_else(|e| reactor.fail(e))
}

// ---------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------

unsafe extern "C" fn create(
    ctx: *mut AaPluginCtx,
    cfg: *const AaReactorConfig,
    out: *mut *mut AaReactor,
) -> AaStatus {
    sdk::guard("reactor-mio create", || {
        // SAFETY: a non-NULL `cfg` is borrowed for the call (AA-R2).
        let cfg = unsafe { cfg.as_ref() };
        let err_buf = match cfg {
            Some(c) if (c.struct_size as usize) >= size_of::<AaReactorConfig>() => {
                (c.err_buf, c.err_cap)
            }
            _ => (ptr::null_mut(), 0),
        };
        let fail = |e: Error| {
            // The reason goes to `err_buf` only: the host prints it once,
            // naming the plugin, so logging it too would print it twice
            // (`AaReactorVTable::create`). A buffer with no room for a
            // character leaves the log as the one place it can go.
            if err_buf.0.is_null() || err_buf.1 < 2 {
                async_abi::plugin_error!("{}", e.message);
            } else {
                // SAFETY: `err_buf` is writable for `err_cap` bytes
                // (AaReactorConfig contract).
                unsafe { sdk::copy_message(&e.message, err_buf.0, err_buf.1) };
            }
            e.status
        };
        if out.is_null() || ctx.is_null() {
            return fail(Error::invalid("create: NULL plugin context or out pointer"));
        }
        let config = match cfg {
            None => Config::default(),
            Some(c) if (c.struct_size as usize) < size_of::<AaReactorConfig>() => {
                return fail(Error::invalid(format!(
                    "create: config struct_size {} is smaller than {}",
                    c.struct_size,
                    size_of::<AaReactorConfig>()
                )))
            }
            Some(c) if c.flags != 0 => {
                return fail(Error::invalid(format!(
                    "create: unknown config flags {:#x}",
                    c.flags
                )))
            }
            Some(c) => {
                // SAFETY: `options` holds `n_options` entries borrowed for
                // the call (AA-R2).
                let options = unsafe { sdk::options(c.options, c.n_options) };
                match Config::from_options(options) {
                    Ok(config) => config,
                    Err(e) => return fail(e),
                }
            }
        };
        match Reactor::new(&config) {
            Ok(reactor) => {
                async_abi::plugin_debug!(
                    "created a reactor (events_capacity {})",
                    config.events_capacity
                );
                // SAFETY: `out` is non-NULL and writable (checked above).
                unsafe { out.write(Rc::into_raw(reactor).cast_mut().cast()) };
                AA_OK
            }
            Err(e) => fail(e),
        }
    })
}

unsafe extern "C" fn destroy(r: *mut AaReactor) -> AaStatus {
    sdk::guard("reactor-mio destroy", || {
        // SAFETY: F1.
        let status =
            unsafe { with_reactor("destroy", r, |reactor| reactor.destroy().map(|()| AA_OK)) };
        if status == AA_OK {
            // SAFETY: F1: `r` is the leaked `Rc<Reactor>` from `create`; the
            // host's reference is given back exactly once, now that
            // `destroy` succeeded (no event alive, not inside `run_once`).
            drop(unsafe { Rc::from_raw(r.cast_const().cast::<Reactor>()) });
        }
        status
    })
}

unsafe extern "C" fn run_once(r: *mut AaReactor, timeout_ns: i64) -> AaStatus {
    sdk::guard("reactor-mio run_once", || {
        // SAFETY: F1.
        unsafe { with_reactor("run_once", r, |reactor| reactor.run_once(timeout_ns)) }
    })
}

unsafe extern "C" fn alive(r: *const AaReactor) -> u32 {
    sdk::guard_or("reactor-mio alive", 0, || {
        // SAFETY: F1.
        unsafe { reactor_ref(r) }.map_or(0, Reactor::alive)
    })
}

/// Every instance has the plugin's capabilities: epoll needs nothing a
/// kernel may lack beyond what `create` checks.
unsafe extern "C" fn instance_caps(_r: *const AaReactor) -> u64 {
    CAPS
}

unsafe extern "C" fn now_ns(r: *const AaReactor) -> u64 {
    sdk::guard_or("reactor-mio now_ns", 0, || {
        // SAFETY: F1.
        unsafe { reactor_ref(r) }.map_or(0, Reactor::now)
    })
}

unsafe extern "C" fn wake(r: *const AaReactor) -> AaStatus {
    sdk::guard("reactor-mio wake", || {
        if r.is_null() {
            return AA_E_INVALID;
        }
        // SAFETY: F1 and F4: `shared` is immutable after `create` and is an
        // `Arc` of thread-safe state; only that field is referenced.
        let shared = unsafe { &*addr_of!((*r.cast::<Reactor>()).shared) };
        match shared.wake() {
            Ok(()) => AA_OK,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        }
    })
}

unsafe extern "C" fn last_error_message(r: *const AaReactor, buf: *mut u8, cap: usize) -> usize {
    sdk::guard_or("reactor-mio last_error_message", 0, || {
        // SAFETY: F1.
        let Some(reactor) = (unsafe { reactor_ref(r) }) else {
            return 0;
        };
        // SAFETY: `buf` is writable for `cap` bytes (slot contract).
        unsafe { sdk::copy_message(&reactor.last_error(), buf, cap) }
    })
}

// ---------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------

/// Checks a constructor's `out` and hands the new event over.
///
/// # Safety
///
/// `out` must be non-NULL and writable.
unsafe fn hand_out(out: *mut *mut AaEvent, ev: Rc<Event>) -> AaStatus {
    // SAFETY: caller's contract.
    unsafe { out.write(into_host(ev)) };
    AA_OK
}

unsafe extern "C" fn timer_new(
    r: *mut AaReactor,
    first_ns: u64,
    repeat_ns: u64,
    flags: u32,
    cb: AaTimerCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    sdk::guard("reactor-mio timer_new", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &Reactor| {
            let (Some(f), false) = (cb, out.is_null()) else {
                return Err(Error::invalid("timer_new: NULL callback or out pointer"));
            };
            let callback = HostCallback {
                f: CallbackFn::Timer(f),
                ud,
            };
            let ev = reactor.timer_new(first_ns, repeat_ns, flags, callback)?;
            // SAFETY: `out` is non-NULL (checked) and writable.
            Ok(unsafe { hand_out(out, ev) })
        };
        // SAFETY: F1.
        unsafe { with_reactor("timer_new", r, body) }
    })
}

unsafe extern "C" fn poll_new(
    r: *mut AaReactor,
    fd: AaOsHandle,
    interest: u32,
    flags: u32,
    cb: AaPollCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    sdk::guard("reactor-mio poll_new", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &Reactor| {
            let (Some(f), false) = (cb, out.is_null()) else {
                return Err(Error::invalid("poll_new: NULL callback or out pointer"));
            };
            let fd = to_fd("poll_new", fd)?;
            let callback = HostCallback {
                f: CallbackFn::Poll(f),
                ud,
            };
            let ev = reactor.poll_new(fd, interest, flags, callback)?;
            // SAFETY: `out` is non-NULL (checked) and writable.
            Ok(unsafe { hand_out(out, ev) })
        };
        // SAFETY: F1.
        unsafe { with_reactor("poll_new", r, body) }
    })
}

unsafe extern "C" fn trigger_new(
    r: *mut AaReactor,
    flags: u32,
    cb: AaTriggerCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    sdk::guard("reactor-mio trigger_new", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &Reactor| {
            let (Some(f), false) = (cb, out.is_null()) else {
                return Err(Error::invalid("trigger_new: NULL callback or out pointer"));
            };
            let callback = HostCallback {
                f: CallbackFn::Trigger(f),
                ud,
            };
            let ev = reactor.trigger_new(flags, callback)?;
            // SAFETY: `out` is non-NULL (checked) and writable.
            Ok(unsafe { hand_out(out, ev) })
        };
        // SAFETY: F1.
        unsafe { with_reactor("trigger_new", r, body) }
    })
}

/// A descriptor number, or `-EBADF` for one no kernel would give.
fn to_fd(what: &str, fd: AaOsHandle) -> Result<i32> {
    i32::try_from(fd)
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(|| Error::new(-libc::EBADF, format!("{what}: fd {fd} is not a descriptor")))
}

/// Converts an `AaIoOp` into a [`Request`] (AA-R2: the op itself is read
/// through the SDK, which copies `min(struct_size, ours)` bytes, so a 1.0
/// host's shorter op is served; its buffer and address are borrowed until
/// the callback, AA-R5). File requests are refused: this reactor does not
/// run them (`AA_CAP_IO_FILE`, `AA_CAP_IO_FTRUNCATE` are not set).
///
/// # Safety
///
/// `op` must be valid for its `struct_size` bytes for the call; its `buf`
/// and `addr` must follow AA-R5.
unsafe fn to_request(op: *const AaIoOp) -> Result<Request> {
    // SAFETY: forwarded (the SDK reads within `struct_size`).
    let req = unsafe { sdk::request::read(op) }.map_err(|r| Error::new(r.status, r.message))?;
    if CAPS & req.opcode.capability() == 0 {
        return Err(Error::new(
            AA_E_UNSUPPORTED,
            format!(
                "io_submit: {} is a file request, which reactor-mio does not run \
                 (regular files are not pollable; the host runs it on its blocking pool)",
                req.opcode.name()
            ),
        ));
    }
    let peer = if req.peer.is_null() {
        None
    } else {
        // SAFETY: AA-R5: the host keeps `addr` valid until the callback; the
        // SDK checked it non-NULL and aligned.
        Some(unsafe { HostAddr::new(req.peer) })
    };
    Ok(Request {
        opcode: req.opcode,
        fd: req.fd,
        // SAFETY: AA-R5: the host keeps `buf` valid for `len` bytes until the
        // callback runs (or the request completes inline now); the SDK
        // checked a non-empty buffer non-NULL.
        buf: unsafe { HostBuf::new(req.buf, req.len) },
        offset: req.offset,
        peer,
        target: req.target.map(Box::new),
        peek: req.has(AA_IO_PEEK),
    })
}

unsafe extern "C" fn io_submit(
    r: *mut AaReactor,
    op: *mut AaIoOp,
    flags: u32,
    cb: AaIoCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    sdk::guard("reactor-mio io_submit", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &Reactor| {
            let (Some(f), false, false) = (cb, out.is_null(), op.is_null()) else {
                return Err(Error::invalid(
                    "io_submit: NULL op, callback or out pointer",
                ));
            };
            if flags & !AA_IO_TRY_INLINE != 0 {
                return Err(Error::invalid(format!(
                    "io_submit: unknown flag bits {:#x}",
                    flags & !AA_IO_TRY_INLINE
                )));
            }
            // SAFETY: `op` is non-NULL and valid for its `struct_size` bytes
            // (AA-R2); AA-R5 for its buffer and address.
            let req = unsafe { to_request(op) }?;
            let callback = HostCallback {
                f: CallbackFn::Io(f),
                ud,
            };
            match reactor.io_submit(req, flags & AA_IO_TRY_INLINE != 0, callback)? {
                Submitted::Done(result) => {
                    // SAFETY: `result` lies in the 1.0 prefix, which every
                    // op has (checked by `to_request`); written through the
                    // raw pointer, as the host's struct may be shorter than
                    // ours.
                    unsafe { ptr::addr_of_mut!((*op).result).write(result) };
                    Ok(AA_DONE)
                }
                // SAFETY: `out` is non-NULL (checked) and writable.
                Submitted::Pending(ev) => Ok(unsafe { hand_out(out, ev) }),
            }
        };
        // SAFETY: F1.
        unsafe { with_reactor("io_submit", r, body) }
    })
}

unsafe extern "C" fn signal_new(
    r: *mut AaReactor,
    signum: i32,
    flags: u32,
    cb: AaSignalCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    sdk::guard("reactor-mio signal_new", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &Reactor| {
            let (Some(f), false) = (cb, out.is_null()) else {
                return Err(Error::invalid("signal_new: NULL callback or out pointer"));
            };
            let callback = HostCallback {
                f: CallbackFn::Signal(f),
                ud,
            };
            let ev = reactor.signal_new(signum, flags, callback)?;
            // SAFETY: `out` is non-NULL (checked) and writable.
            Ok(unsafe { hand_out(out, ev) })
        };
        // SAFETY: F1.
        unsafe { with_reactor("signal_new", r, body) }
    })
}

unsafe extern "C" fn process_new(
    r: *mut AaReactor,
    pid: i64,
    flags: u32,
    cb: AaProcessCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    sdk::guard("reactor-mio process_new", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &Reactor| {
            let (Some(f), false) = (cb, out.is_null()) else {
                return Err(Error::invalid("process_new: NULL callback or out pointer"));
            };
            let pid = i32::try_from(pid)
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| Error::invalid(format!("process_new: {pid} is not a pid")))?;
            let callback = HostCallback {
                f: CallbackFn::Process(f),
                ud,
            };
            let ev = reactor.process_new(pid, flags, callback)?;
            // SAFETY: `out` is non-NULL (checked) and writable.
            Ok(unsafe { hand_out(out, ev) })
        };
        // SAFETY: F1.
        unsafe { with_reactor("process_new", r, body) }
    })
}

unsafe extern "C" fn fs_watch_new(
    r: *mut AaReactor,
    path: AaBytes,
    flags: u32,
    cb: AaFsWatchCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    sdk::guard("reactor-mio fs_watch_new", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &Reactor| {
            let (Some(f), false) = (cb, out.is_null()) else {
                return Err(Error::invalid("fs_watch_new: NULL callback or out pointer"));
            };
            if path.len == 0 || path.ptr.is_null() {
                return Err(Error::invalid("fs_watch_new: empty path"));
            }
            // SAFETY: `path` is borrowed for the call (AA-R2): `len` bytes at
            // a non-NULL `ptr`; copied before the call returns.
            let path = unsafe { std::slice::from_raw_parts(path.ptr, path.len) };
            let path = CString::new(path)
                .map_err(|_| Error::invalid("fs_watch_new: the path contains a NUL byte"))?;
            let callback = HostCallback {
                f: CallbackFn::FsWatch(f),
                ud,
            };
            let ev = reactor.fs_watch_new(&path, flags, callback)?;
            // SAFETY: `out` is non-NULL (checked) and writable.
            Ok(unsafe { hand_out(out, ev) })
        };
        // SAFETY: F1.
        unsafe { with_reactor("fs_watch_new", r, body) }
    })
}

/// A lookup's node or service: `None` when empty, else a copy (AA-R2).
///
/// # Safety
///
/// `s` must be valid for the call (AA-R2).
unsafe fn lookup_part(what: &str, s: AaStr) -> Result<Option<CString>> {
    // SAFETY: forwarded.
    let text = unsafe { s.as_str() }
        .ok_or_else(|| Error::invalid(format!("dns_resolve: the {what} is not utf-8")))?;
    if text.is_empty() {
        return Ok(None);
    }
    CString::new(text)
        .map(Some)
        .map_err(|_| Error::invalid(format!("dns_resolve: the {what} contains a NUL byte")))
}

/// Checks and copies a lookup's hints (NULL: any family and socket type).
///
/// # Safety
///
/// `hints` must be NULL or valid for the call (AA-R2).
unsafe fn lookup_hints(hints: *const AaAddrHints) -> Result<Hints> {
    // SAFETY: forwarded.
    let Some(h) = (unsafe { hints.as_ref() }) else {
        return Ok(Hints::default());
    };
    if (h.struct_size as usize) < size_of::<AaAddrHints>() {
        return Err(Error::invalid(format!(
            "dns_resolve: hints struct_size {} is smaller than {}",
            h.struct_size,
            size_of::<AaAddrHints>()
        )));
    }
    if ![libc::AF_UNSPEC, libc::AF_INET, libc::AF_INET6].contains(&h.family) {
        return Err(Error::invalid(format!(
            "dns_resolve: family {} is not AF_UNSPEC, AF_INET or AF_INET6",
            h.family
        )));
    }
    if ![0, libc::SOCK_STREAM, libc::SOCK_DGRAM].contains(&h.socktype) {
        return Err(Error::invalid(format!(
            "dns_resolve: socket type {} is not 0, SOCK_STREAM or SOCK_DGRAM",
            h.socktype
        )));
    }
    Ok(Hints {
        family: h.family,
        socktype: h.socktype,
        flags: h.flags,
    })
}

unsafe extern "C" fn dns_resolve(
    r: *mut AaReactor,
    node: AaStr,
    service: AaStr,
    hints: *const AaAddrHints,
    cb: AaDnsCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    sdk::guard("reactor-mio dns_resolve", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &Reactor| {
            let (Some(f), false) = (cb, out.is_null()) else {
                return Err(Error::invalid("dns_resolve: NULL callback or out pointer"));
            };
            // SAFETY: the strings and hints are borrowed for the call
            // (AA-R2) and copied here.
            let (node, service, hints) = unsafe {
                (
                    lookup_part("node", node)?,
                    lookup_part("service", service)?,
                    lookup_hints(hints)?,
                )
            };
            if node.is_none() && service.is_none() {
                return Err(Error::invalid(
                    "dns_resolve: node and service are both empty",
                ));
            }
            let callback = HostCallback {
                f: CallbackFn::Dns(f),
                ud,
            };
            let ev = reactor.dns_resolve(node, service, hints, callback)?;
            // SAFETY: `out` is non-NULL (checked) and writable.
            Ok(unsafe { hand_out(out, ev) })
        };
        // SAFETY: F1.
        unsafe { with_reactor("dns_resolve", r, body) }
    })
}

// ---------------------------------------------------------------------------
// Per-event control
// ---------------------------------------------------------------------------

unsafe extern "C" fn timer_rearm(ev: *mut AaEvent, first_ns: u64, repeat_ns: u64) -> AaStatus {
    sdk::guard("reactor-mio timer_rearm", || {
        // SAFETY: F2.
        unsafe {
            with_event("timer_rearm", ev, |reactor, ev| {
                reactor
                    .timer_rearm(&ev, first_ns, repeat_ns)
                    .map(|()| AA_OK)
            })
        }
    })
}

unsafe extern "C" fn poll_set_interest(ev: *mut AaEvent, interest: u32) -> AaStatus {
    sdk::guard("reactor-mio poll_set_interest", || {
        // SAFETY: F2.
        unsafe {
            with_event("poll_set_interest", ev, |reactor, ev| {
                reactor.poll_set_interest(&ev, interest).map(|()| AA_OK)
            })
        }
    })
}

unsafe extern "C" fn trigger_fire(ev: *const AaEvent) -> AaStatus {
    sdk::guard("reactor-mio trigger_fire", || {
        if ev.is_null() {
            return AA_E_INVALID;
        }
        let ev = ev.cast::<Event>();
        // SAFETY: F2 and F4: the host keeps the trigger undisposed while any
        // thread may fire it; `magic` and `trigger` are immutable after
        // creation, and only those fields are referenced.
        let (magic, trigger) = unsafe { (*addr_of!((*ev).magic), &*addr_of!((*ev).trigger)) };
        match (magic == EVENT_MAGIC, trigger) {
            (true, Some(flag)) => flag.fire(),
            _ => AA_E_INVALID,
        }
    })
}

unsafe extern "C" fn set_ref(ev: *mut AaEvent, referenced: bool) {
    sdk::guard_or("reactor-mio set_ref", (), || {
        // SAFETY: F2.
        unsafe {
            with_event("set_ref", ev, |reactor, ev| {
                reactor.set_ref(&ev, referenced);
                Ok(AA_OK)
            })
        };
    })
}

unsafe extern "C" fn cancel(ev: *mut AaEvent, reason: AaStatus) -> AaStatus {
    sdk::guard("reactor-mio cancel", || {
        // SAFETY: F2.
        unsafe {
            with_event("cancel", ev, |reactor, ev| {
                reactor.cancel(&ev, reason).map(|()| AA_OK)
            })
        }
    })
}

unsafe extern "C" fn close(ev: *mut AaEvent, on_closed: AaClosedCb, ud: *mut c_void) -> AaStatus {
    sdk::guard("reactor-mio close", || {
        let on_closed = on_closed.map(|f| ClosedCallback { f, ud });
        // SAFETY: F2.
        unsafe {
            with_event("close", ev, |reactor, ev| {
                reactor.close(&ev, on_closed).map(|()| AA_OK)
            })
        }
    })
}

unsafe extern "C" fn dispose(ev: *mut AaEvent) {
    sdk::guard_or("reactor-mio dispose", (), || {
        // SAFETY: F2.
        if unsafe { event_ref(ev) }.is_none() {
            return;
        }
        // SAFETY: F2: `ev` is the host's reference, leaked by `into_host`;
        // dispose is called once per event (ABI), so taking it back here is
        // balanced.
        let ev = unsafe { Rc::from_raw(ev.cast_const().cast::<Event>()) };
        match ev.reactor.upgrade() {
            Some(reactor) => match reactor.check_thread("dispose") {
                Ok(()) => reactor.dispose(ev),
                Err(e) => {
                    reactor.fail(e);
                    // Give the reference back rather than free loop-thread
                    // state from another thread.
                    let _ = Rc::into_raw(ev);
                }
            },
            None => drop(ev),
        }
    })
}

#[cfg(test)]
unsafe extern "C" fn ignore_timer(_: *mut AaEvent, _: AaStatus, _: *mut c_void) {}

#[cfg(test)]
impl HostCallback {
    /// A timer callback that does nothing, for unit tests.
    pub(crate) fn ignore() -> HostCallback {
        HostCallback {
            f: CallbackFn::Timer(ignore_timer),
            ud: ptr::null_mut(),
        }
    }
}
