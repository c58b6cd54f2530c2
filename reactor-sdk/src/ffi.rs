//! The C ABI glue: the plugin descriptor, the `aa.reactor.v1` vtable and one
//! `extern "C"` shim per slot, generic over the [`Reactor`] trait
//! ([`crate::traits`]) and monomorphised per reactor (no `dyn`, no extra
//! indirection per call).
//!
//! # Safety
//!
//! Every shim does five things, in order (STYLE S15): catch panics
//! ([`sdk::guard`]: a panic becomes `AA_E_PANIC` and a log line); check
//! NULLs, `struct_size` and flags; convert raw pointers into typed values
//! (`&R`, `Rc<R::Event>`); call the safe reactor; map the result to an
//! `AaStatus` (recording the message for `last_error_message` through
//! [`Reactor::fail`]).
//!
//! The pointers the host passes are trusted as far as the ABI says:
//!
//! - **F1** `r` is NULL or a reactor made by `create` and not destroyed;
//!   it is an `Rc<R>` leaked with `Rc::into_raw`, and `destroy` takes it
//!   back. `destroy` refuses inside `run_once` (a reactor's own rule; the
//!   callbacks may call anything else), so a `&R` borrowed for one call
//!   stays valid for that call.
//! - **F2** `ev` is NULL or an event made by this reactor and not disposed
//!   (the ABI: "the host never touches it again" after dispose). It points
//!   to the header of an `Rc<R::Event>` leaked with `Rc::into_raw` (the
//!   host's reference); `dispose` takes it back. [`Event::is_ours`] (a magic
//!   number) catches some misuse, not all.
//! - **F3** Host callbacks and their `ud` stay valid until the event is
//!   disposed; a reactor calls them only on the loop thread, from
//!   `run_once`, with no borrow held and never after dispose
//!   ([`HostCallback`]).
//! - **F4** `[any]` entry points (`wake`, `trigger_fire`) go to
//!   [`Reactor::wake`] and [`Event::fire`], which read only immutable fields
//!   holding thread-safe values through raw field pointers, never a
//!   reference to the whole loop-thread object.
//! - **F5** A request's `buf` and `addr` (and since ABI 1.1 its paths and
//!   the `AaStat` of a statx) follow AA-R5: valid and unmoved until the
//!   request's callback has run. [`Reactor::io_submit`] takes that promise
//!   with the request.

use std::ffi::{c_char, c_void, CStr, CString};
use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::rc::Rc;
use std::sync::Mutex;

use async_abi::sdk;
use async_abi::sdk::dns::Hints;
use async_abi::*;

use crate::callback::{CallbackFn, ClosedCallback, HostCallback};
use crate::error::{Error, Result};
pub use crate::traits::{Event, Reactor, Submitted};

/// The statics [`export_reactor!`](crate::export_reactor) makes for a
/// reactor type; not implemented by hand.
pub trait Exported: Reactor {
    /// The vtable.
    fn vtable() -> &'static AaReactorVTable;
}

// ---------------------------------------------------------------------------
// Descriptor, plugin context
// ---------------------------------------------------------------------------

/// What `init` hands out; only its address matters.
#[derive(Debug)]
struct PluginCtx {
    magic: u32,
}

const CTX_MAGIC: u32 = 0x7364_6b43;

/// Live plugin contexts of this image: the host API is forgotten when the
/// last goes.
static CONTEXTS: Mutex<usize> = Mutex::new(0);

/// The descriptor of reactor `R` (for [`export_reactor!`](crate::export_reactor)).
pub const fn desc<R: Exported>(version: &'static CStr) -> AaPluginDesc {
    AaPluginDesc {
        struct_size: size_of::<AaPluginDesc>() as u32,
        abi_major: AA_ABI_MAJOR,
        abi_minor: R::ABI_MINOR,
        role: AA_ROLE_REACTOR,
        _reserved: 0,
        name: R::NAME.as_ptr(),
        version: version.as_ptr() as *const c_char,
        vendor: R::VENDOR.as_ptr(),
        init: Some(init::<R>),
        deinit: Some(deinit::<R>),
        get_interface: Some(get_interface::<R>),
    }
}

/// [`sdk::guard`] naming the reactor and the slot.
#[inline]
fn guard<R: Reactor>(slot: &'static str, f: impl FnOnce() -> AaStatus) -> AaStatus {
    guard_or::<R, _>(slot, AA_E_PANIC, f)
}

/// [`sdk::guard_or`] naming the reactor and the slot: the reactor's name is
/// formatted only when a panic was caught, so the fence costs nothing more
/// than `catch_unwind` on the way in.
#[inline]
fn guard_or<R: Reactor, T>(slot: &'static str, fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => {
            sdk::log(
                AA_LOG_ERROR,
                "async_abi::panic",
                format_args!(
                    "panic in {} {slot}: {}",
                    R::NAME.to_string_lossy(),
                    sdk::panic_message(&*payload)
                ),
                file!(),
                line!(),
            );
            fallback
        }
    }
}

unsafe extern "C" fn init<R: Reactor>(
    host: *const AaHostApi,
    out: *mut *mut AaPluginCtx,
) -> AaStatus {
    guard::<R>("init", || {
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

unsafe extern "C" fn deinit<R: Reactor>(ctx: *mut AaPluginCtx) {
    guard_or::<R, _>("deinit", (), || {
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

unsafe extern "C" fn get_interface<R: Exported>(
    _ctx: *mut AaPluginCtx,
    id: AaStr,
) -> *const AaIfaceHeader {
    guard_or::<R, _>("get_interface", ptr::null(), || {
        // SAFETY: `id` is borrowed for the call (AA-R2).
        let id = unsafe { id.as_bytes() };
        if id == &AA_IFACE_REACTOR_V1[..AA_IFACE_REACTOR_V1.len() - 1] {
            &R::vtable().hdr
        } else {
            ptr::null()
        }
    })
}

// ---------------------------------------------------------------------------
// The vtable
// ---------------------------------------------------------------------------

/// The `aa.reactor.v1` vtable of reactor `R`: every slot filled (the
/// optional kinds answer `AA_E_UNSUPPORTED` unless `R` implements them).
pub const fn vtable<R: Reactor>() -> AaReactorVTable {
    // Evaluated when the vtable static is built: a compile error, not a
    // plugin that lies about its minor.
    assert!(
        R::ABI_MINOR <= AA_ABI_MINOR,
        "Reactor::ABI_MINOR is newer than this SDK's AA_ABI_MINOR"
    );
    assert!(
        R::ABI_MINOR > 0 || R::CAPS & !AA_CAPS_V1_0 == 0,
        "a reactor of ABI minor 0 has a capability bit 1.0 does not define"
    );
    assert!(
        R::ABI_MINOR > 1 || R::CAPS & !AA_CAPS_V1_1 == 0,
        "a reactor of ABI minor 1 has a capability bit 1.1 does not define"
    );
    AaReactorVTable {
        hdr: AaIfaceHeader {
            struct_size: size_of::<AaReactorVTable>() as u32,
            iface_minor: R::ABI_MINOR,
            _reserved: 0,
        },
        caps: R::CAPS,
        create: Some(create::<R>),
        destroy: Some(destroy::<R>),
        run_once: Some(run_once::<R>),
        alive: Some(alive::<R>),
        now_ns: Some(now_ns::<R>),
        wake: Some(wake::<R>),
        timer_new: Some(timer_new::<R>),
        timer_rearm: Some(timer_rearm::<R>),
        poll_new: Some(poll_new::<R>),
        poll_set_interest: Some(poll_set_interest::<R>),
        trigger_new: Some(trigger_new::<R>),
        trigger_fire: Some(trigger_fire::<R>),
        io_submit: Some(io_submit::<R>),
        set_ref: Some(set_ref::<R>),
        cancel: Some(cancel::<R>),
        close: Some(close::<R>),
        dispose: Some(dispose::<R>),
        last_error_message: Some(last_error_message::<R>),
        signal_new: Some(signal_new::<R>),
        process_new: Some(process_new::<R>),
        fs_watch_new: Some(fs_watch_new::<R>),
        dns_resolve: Some(dns_resolve::<R>),
        instance_caps: Some(instance_caps::<R>),
    }
}

// ---------------------------------------------------------------------------
// Pointer conversions (F1, F2)
// ---------------------------------------------------------------------------

/// The reactor behind `r`, for the duration of one call (F1).
///
/// # Safety
///
/// `r` must be NULL or a live reactor of this plugin (F1).
#[inline]
unsafe fn reactor_ref<'a, R: Reactor>(r: *const AaReactor) -> Option<&'a R> {
    // SAFETY: F1: a non-NULL `r` is a leaked `Rc<R>` that outlives this
    // call.
    unsafe { r.cast::<R>().as_ref() }
}

/// The event behind `ev`, checked for the magic number (F2).
///
/// # Safety
///
/// `ev` must be NULL or a live event of this plugin (F2).
#[inline]
unsafe fn event_ref<'a, E: Event>(ev: *const AaEvent) -> Option<&'a E> {
    // SAFETY: F2: a non-NULL `ev` points to a live `E` whose header is its
    // first field (the `Event` contract).
    let event = unsafe { ev.cast::<E>().as_ref() }?;
    event.is_ours().then_some(event)
}

/// A new strong reference to the event behind `ev` (the host keeps its own).
///
/// # Safety
///
/// As for [`event_ref`].
#[inline]
unsafe fn event_rc<E: Event>(ev: *const AaEvent) -> Option<Rc<E>> {
    // SAFETY: forwarded (F2).
    unsafe { event_ref::<E>(ev) }?;
    let ptr = ev.cast::<E>();
    // SAFETY: F2: `ptr` came from `Rc::into_raw` and the host's reference
    // keeps the count >= 1, so adding one and taking it back as an `Rc` is
    // balanced by that `Rc`'s drop.
    unsafe {
        Rc::increment_strong_count(ptr);
        Some(Rc::from_raw(ptr))
    }
}

/// Writes NULL into a non-NULL `out`, so a failing constructor leaves no
/// stale pointer (AA-R8).
///
/// # Safety
///
/// `out` must be NULL or writable.
#[inline]
unsafe fn clear_out(out: *mut *mut AaEvent) {
    if !out.is_null() {
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { out.write(ptr::null_mut()) };
    }
}

/// Hands the host its reference to a new event.
///
/// # Safety
///
/// `out` must be non-NULL and writable.
#[inline]
unsafe fn hand_out<E: Event>(out: *mut *mut AaEvent, ev: Rc<E>) -> AaStatus {
    // SAFETY: caller's contract.
    unsafe { out.write(Rc::into_raw(ev).cast_mut().cast()) };
    AA_OK
}

/// Runs a loop-thread call on the event's reactor, recording its error.
///
/// # Safety
///
/// `ev` must be NULL or a live event of this plugin (F2).
#[inline]
unsafe fn with_event<R: Reactor>(
    what: &str,
    ev: *const AaEvent,
    f: impl FnOnce(&R, Rc<R::Event>) -> Result<AaStatus>,
) -> AaStatus {
    // SAFETY: forwarded (F2).
    let Some(ev) = (unsafe { event_rc::<R::Event>(ev) }) else {
        return AA_E_INVALID;
    };
    let Some(reactor) = ev.reactor() else {
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
#[inline]
unsafe fn with_reactor<R: Reactor>(
    what: &str,
    r: *const AaReactor,
    f: impl FnOnce(&R) -> Result<AaStatus>,
) -> AaStatus {
    // SAFETY: forwarded (F1).
    let Some(reactor) = (unsafe { reactor_ref::<R>(r) }) else {
        return AA_E_INVALID;
    };
    let res = reactor.check_thread(what).and_then(|()| f(reactor));
    res.unwrap_or_else(|e| reactor.fail(e))
}

/// The constructor pattern: clear `out`, check it and the callback, run
/// `make` on the loop thread, hand the event out.
///
/// # Safety
///
/// `r` must be NULL or a live reactor (F1); `out` NULL or writable.
#[inline]
unsafe fn construct<R: Reactor, F>(
    what: &'static str,
    r: *mut AaReactor,
    cb: Option<F>,
    out: *mut *mut AaEvent,
    make: impl FnOnce(&R, F) -> Result<Rc<R::Event>>,
) -> AaStatus {
    // SAFETY: `out` is NULL or writable (slot contract).
    unsafe { clear_out(out) };
    let body = |reactor: &R| {
        let (Some(f), false) = (cb, out.is_null()) else {
            return Err(Error::invalid(format!(
                "{what}: NULL callback or out pointer"
            )));
        };
        let ev = make(reactor, f)?;
        // SAFETY: `out` is non-NULL (checked) and writable.
        Ok(unsafe { hand_out(out, ev) })
    };
    // SAFETY: F1.
    unsafe { with_reactor(what, r, body) }
}

// ---------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------

unsafe extern "C" fn create<R: Reactor>(
    ctx: *mut AaPluginCtx,
    cfg: *const AaReactorConfig,
    out: *mut *mut AaReactor,
) -> AaStatus {
    guard::<R>("create", || {
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
            None => R::Config::default(),
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
                match R::configure(options) {
                    Ok(config) => config,
                    Err(e) => return fail(e),
                }
            }
        };
        match R::new(&config) {
            Ok(reactor) => {
                // SAFETY: `out` is non-NULL and writable (checked above).
                unsafe { out.write(Rc::into_raw(reactor).cast_mut().cast()) };
                AA_OK
            }
            Err(e) => fail(e),
        }
    })
}

unsafe extern "C" fn destroy<R: Reactor>(r: *mut AaReactor) -> AaStatus {
    guard::<R>("destroy", || {
        // SAFETY: F1.
        let status =
            unsafe { with_reactor::<R>("destroy", r, |reactor| reactor.destroy().map(|()| AA_OK)) };
        if status == AA_OK {
            // SAFETY: F1: `r` is the leaked `Rc<R>` from `create`; the
            // host's reference is given back exactly once, now that
            // `destroy` succeeded (nothing alive, not inside `run_once`).
            drop(unsafe { Rc::from_raw(r.cast_const().cast::<R>()) });
        }
        status
    })
}

unsafe extern "C" fn run_once<R: Reactor>(r: *mut AaReactor, timeout_ns: i64) -> AaStatus {
    guard::<R>("run_once", || {
        // SAFETY: F1.
        unsafe { with_reactor::<R>("run_once", r, |reactor| reactor.run_once(timeout_ns)) }
    })
}

unsafe extern "C" fn alive<R: Reactor>(r: *const AaReactor) -> u32 {
    guard_or::<R, _>("alive", 0, || {
        // SAFETY: F1.
        unsafe { reactor_ref::<R>(r) }.map_or(0, R::alive)
    })
}

unsafe extern "C" fn instance_caps<R: Reactor>(r: *const AaReactor) -> u64 {
    guard_or::<R, _>("instance_caps", 0, || {
        // SAFETY: F1.
        unsafe { reactor_ref::<R>(r) }.map_or(0, R::instance_caps)
    })
}

unsafe extern "C" fn now_ns<R: Reactor>(r: *const AaReactor) -> u64 {
    guard_or::<R, _>("now_ns", 0, || {
        // SAFETY: F1.
        unsafe { reactor_ref::<R>(r) }.map_or(0, R::now_ns)
    })
}

unsafe extern "C" fn wake<R: Reactor>(r: *const AaReactor) -> AaStatus {
    guard::<R>("wake", || {
        if r.is_null() {
            return AA_E_INVALID;
        }
        // SAFETY: F1 and F4: `r` is a live reactor; `wake` reads only its
        // thread-safe fields.
        unsafe { R::wake(r.cast::<R>()) }
    })
}

unsafe extern "C" fn last_error_message<R: Reactor>(
    r: *const AaReactor,
    buf: *mut u8,
    cap: usize,
) -> usize {
    guard_or::<R, _>("last_error_message", 0, || {
        // SAFETY: F1.
        let Some(reactor) = (unsafe { reactor_ref::<R>(r) }) else {
            return 0;
        };
        // SAFETY: `buf` is writable for `cap` bytes (slot contract).
        unsafe { sdk::copy_message(&reactor.last_error(), buf, cap) }
    })
}

// ---------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------

unsafe extern "C" fn timer_new<R: Reactor>(
    r: *mut AaReactor,
    first_ns: u64,
    repeat_ns: u64,
    flags: u32,
    cb: AaTimerCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    guard::<R>("timer_new", || {
        let make = |reactor: &R, f| {
            let cb = HostCallback {
                f: CallbackFn::Timer(f),
                ud,
            };
            reactor.timer_new(first_ns, repeat_ns, flags, cb)
        };
        // SAFETY: F1; `out` per the slot contract.
        unsafe { construct::<R, _>("timer_new", r, cb, out, make) }
    })
}

unsafe extern "C" fn poll_new<R: Reactor>(
    r: *mut AaReactor,
    fd: AaOsHandle,
    interest: u32,
    flags: u32,
    cb: AaPollCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    guard::<R>("poll_new", || {
        let make = |reactor: &R, f| {
            let fd = to_fd("poll_new", fd)?;
            let cb = HostCallback {
                f: CallbackFn::Poll(f),
                ud,
            };
            reactor.poll_new(fd, interest, flags, cb)
        };
        // SAFETY: F1; `out` per the slot contract.
        unsafe { construct::<R, _>("poll_new", r, cb, out, make) }
    })
}

unsafe extern "C" fn trigger_new<R: Reactor>(
    r: *mut AaReactor,
    flags: u32,
    cb: AaTriggerCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    guard::<R>("trigger_new", || {
        let make = |reactor: &R, f| {
            let cb = HostCallback {
                f: CallbackFn::Trigger(f),
                ud,
            };
            reactor.trigger_new(flags, cb)
        };
        // SAFETY: F1; `out` per the slot contract.
        unsafe { construct::<R, _>("trigger_new", r, cb, out, make) }
    })
}

/// A descriptor number, or `-EBADF` for one no kernel would give.
fn to_fd(what: &str, fd: AaOsHandle) -> Result<i32> {
    i32::try_from(fd)
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(|| Error::new(-libc::EBADF, format!("{what}: fd {fd} is not a descriptor")))
}

unsafe extern "C" fn io_submit<R: Reactor>(
    r: *mut AaReactor,
    op: *mut AaIoOp,
    flags: u32,
    cb: AaIoCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    guard::<R>("io_submit", || {
        // SAFETY: `out` is NULL or writable (slot contract).
        unsafe { clear_out(out) };
        let body = |reactor: &R| {
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
            // (AA-R2); the SDK reads within `struct_size`.
            let req =
                unsafe { sdk::request::read(op) }.map_err(|r| Error::new(r.status, r.message))?;
            if R::CAPS & req.opcode.capability() == 0 {
                return Err(Error::new(
                    AA_E_UNSUPPORTED,
                    format!(
                        "io_submit: {} is a request {} does not run (its capability bit is \
                         clear; the host runs it on its blocking pool)",
                        req.opcode.name(),
                        R::NAME.to_string_lossy()
                    ),
                ));
            }
            let callback = HostCallback {
                f: CallbackFn::Io(f),
                ud,
            };
            // SAFETY: F5: the host keeps what the op points to valid and
            // unmoved until the callback runs (AA-R5).
            let submitted =
                unsafe { reactor.io_submit(req, flags & AA_IO_TRY_INLINE != 0, callback) }?;
            match submitted {
                Submitted::Done(result) => {
                    // SAFETY: `result` lies in the 1.0 prefix, which every
                    // op has (checked by the SDK's reader); written through
                    // the raw pointer, as the host's struct may be shorter
                    // than ours.
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

unsafe extern "C" fn signal_new<R: Reactor>(
    r: *mut AaReactor,
    signum: i32,
    flags: u32,
    cb: AaSignalCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    guard::<R>("signal_new", || {
        let make = |reactor: &R, f| {
            let cb = HostCallback {
                f: CallbackFn::Signal(f),
                ud,
            };
            reactor.signal_new(signum, flags, cb)
        };
        // SAFETY: F1; `out` per the slot contract.
        unsafe { construct::<R, _>("signal_new", r, cb, out, make) }
    })
}

unsafe extern "C" fn process_new<R: Reactor>(
    r: *mut AaReactor,
    pid: i64,
    flags: u32,
    cb: AaProcessCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    guard::<R>("process_new", || {
        let make = |reactor: &R, f| {
            let pid = i32::try_from(pid)
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| Error::invalid(format!("process_new: {pid} is not a pid")))?;
            let cb = HostCallback {
                f: CallbackFn::Process(f),
                ud,
            };
            reactor.process_new(pid, flags, cb)
        };
        // SAFETY: F1; `out` per the slot contract.
        unsafe { construct::<R, _>("process_new", r, cb, out, make) }
    })
}

unsafe extern "C" fn fs_watch_new<R: Reactor>(
    r: *mut AaReactor,
    path: AaBytes,
    flags: u32,
    cb: AaFsWatchCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    guard::<R>("fs_watch_new", || {
        let make = |reactor: &R, f| {
            if path.len == 0 || path.ptr.is_null() {
                return Err(Error::invalid("fs_watch_new: empty path"));
            }
            // SAFETY: `path` is borrowed for the call (AA-R2): `len`
            // bytes at a non-NULL `ptr`; copied before the call returns.
            let path = unsafe { std::slice::from_raw_parts(path.ptr, path.len) };
            let path = CString::new(path)
                .map_err(|_| Error::invalid("fs_watch_new: the path contains a NUL byte"))?;
            let cb = HostCallback {
                f: CallbackFn::FsWatch(f),
                ud,
            };
            reactor.fs_watch_new(&path, flags, cb)
        };
        // SAFETY: F1; `out` per the slot contract.
        unsafe { construct::<R, _>("fs_watch_new", r, cb, out, make) }
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

unsafe extern "C" fn dns_resolve<R: Reactor>(
    r: *mut AaReactor,
    node: AaStr,
    service: AaStr,
    hints: *const AaAddrHints,
    cb: AaDnsCb,
    ud: *mut c_void,
    out: *mut *mut AaEvent,
) -> AaStatus {
    guard::<R>("dns_resolve", || {
        let make = |reactor: &R, f| {
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
            let cb = HostCallback {
                f: CallbackFn::Dns(f),
                ud,
            };
            reactor.dns_resolve(node, service, hints, cb)
        };
        // SAFETY: F1; `out` per the slot contract.
        unsafe { construct::<R, _>("dns_resolve", r, cb, out, make) }
    })
}

// ---------------------------------------------------------------------------
// Per-event control
// ---------------------------------------------------------------------------

unsafe extern "C" fn timer_rearm<R: Reactor>(
    ev: *mut AaEvent,
    first_ns: u64,
    repeat_ns: u64,
) -> AaStatus {
    guard::<R>("timer_rearm", || {
        // SAFETY: F2.
        unsafe {
            with_event::<R>("timer_rearm", ev, |reactor, ev| {
                reactor
                    .timer_rearm(&ev, first_ns, repeat_ns)
                    .map(|()| AA_OK)
            })
        }
    })
}

unsafe extern "C" fn poll_set_interest<R: Reactor>(ev: *mut AaEvent, interest: u32) -> AaStatus {
    guard::<R>("poll_set_interest", || {
        // SAFETY: F2.
        unsafe {
            with_event::<R>("poll_set_interest", ev, |reactor, ev| {
                reactor.poll_set_interest(&ev, interest).map(|()| AA_OK)
            })
        }
    })
}

unsafe extern "C" fn trigger_fire<R: Reactor>(ev: *const AaEvent) -> AaStatus {
    guard::<R>("trigger_fire", || {
        if ev.is_null() {
            return AA_E_INVALID;
        }
        // SAFETY: F2 and F4: the host keeps the trigger undisposed while any
        // thread may fire it; `fire` reads only its thread-safe fields.
        unsafe { <R::Event as Event>::fire(ev.cast::<R::Event>()) }
    })
}

unsafe extern "C" fn set_ref<R: Reactor>(ev: *mut AaEvent, referenced: bool) {
    guard_or::<R, _>("set_ref", (), || {
        // SAFETY: F2.
        unsafe {
            with_event::<R>("set_ref", ev, |reactor, ev| {
                reactor.set_ref(&ev, referenced);
                Ok(AA_OK)
            })
        };
    })
}

unsafe extern "C" fn cancel<R: Reactor>(ev: *mut AaEvent, reason: AaStatus) -> AaStatus {
    guard::<R>("cancel", || {
        // SAFETY: F2.
        unsafe {
            with_event::<R>("cancel", ev, |reactor, ev| {
                reactor.cancel(&ev, reason).map(|()| AA_OK)
            })
        }
    })
}

unsafe extern "C" fn close<R: Reactor>(
    ev: *mut AaEvent,
    on_closed: AaClosedCb,
    ud: *mut c_void,
) -> AaStatus {
    guard::<R>("close", || {
        let on_closed = on_closed.map(|f| ClosedCallback { f, ud });
        // SAFETY: F2.
        unsafe {
            with_event::<R>("close", ev, |reactor, ev| {
                reactor.close(&ev, on_closed).map(|()| AA_OK)
            })
        }
    })
}

unsafe extern "C" fn dispose<R: Reactor>(ev: *mut AaEvent) {
    guard_or::<R, _>("dispose", (), || {
        // SAFETY: F2.
        if unsafe { event_ref::<R::Event>(ev) }.is_none() {
            return;
        }
        // SAFETY: F2: `ev` is the host's reference, leaked by `hand_out`;
        // dispose is called once per event (ABI), so taking it back here is
        // balanced.
        let ev = unsafe { Rc::from_raw(ev.cast_const().cast::<R::Event>()) };
        match ev.reactor() {
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

/// Exports a reactor type as a plugin: the static descriptor and vtable,
/// `pub fn plugin_desc()` (for static linking) and the entry symbol
/// `aa_reactor_entry_v1` (for a `cdylib`).
///
/// With `linked`, the entry symbol is left out: for a reactor crate that a
/// host links statically beside other reactors (two crates exporting the
/// same `#[no_mangle]` symbol cannot be linked into one program), whose
/// `cdylib` is a separate package that exports
/// `aa_reactor_entry_v1` returning `plugin_desc()` (as `reactor-mio/cdylib`
/// does).
///
/// ```ignore
/// // A reactor implementing `reactor_sdk::Reactor` itself:
/// reactor_sdk::export_reactor!(crate::reactor::Reactor);
/// // A backend of the readiness driver (`reactor_sdk::readiness::Backend`),
/// // exported as `Readiness<Epoll>`:
/// reactor_sdk::export_reactor!(backend crate::Epoll);
/// // A level-triggered poller (`reactor_sdk::readiness::LevelBackend`),
/// // exported as `Readiness<LevelTriggered<Poll>>`:
/// reactor_sdk::export_reactor!(level crate::Poll);
/// // Without the entry symbol:
/// reactor_sdk::export_reactor!(linked crate::reactor::Reactor);
/// reactor_sdk::export_reactor!(linked backend crate::Epoll);
/// reactor_sdk::export_reactor!(linked level crate::Poll);
/// ```
#[macro_export]
macro_rules! export_reactor {
    (backend $backend:ty) => {
        $crate::export_reactor!(linked backend $backend);
        $crate::export_reactor!(@entry);
    };
    (linked backend $backend:ty) => {
        impl $crate::readiness::Exported for $backend {
            #[inline]
            fn vtable() -> &'static $crate::__abi::AaReactorVTable {
                &AA_REACTOR_VTABLE
            }
        }
        $crate::export_reactor!(@statics $crate::readiness::Readiness<$backend>);
    };
    (level $backend:ty) => {
        $crate::export_reactor!(linked level $backend);
        $crate::export_reactor!(@entry);
    };
    (linked level $backend:ty) => {
        impl $crate::readiness::LevelExported for $backend {
            #[inline]
            fn vtable() -> &'static $crate::__abi::AaReactorVTable {
                &AA_REACTOR_VTABLE
            }
        }
        $crate::export_reactor!(
            @statics $crate::readiness::Readiness<$crate::readiness::LevelTriggered<$backend>>
        );
    };
    (linked $reactor:ty) => {
        impl $crate::ffi::Exported for $reactor {
            #[inline]
            fn vtable() -> &'static $crate::__abi::AaReactorVTable {
                &AA_REACTOR_VTABLE
            }
        }
        $crate::export_reactor!(@statics $reactor);
    };
    (@statics $reactor:ty) => {
        pub(crate) static AA_REACTOR_VTABLE: $crate::__abi::AaReactorVTable =
            $crate::ffi::vtable::<$reactor>();
        static AA_REACTOR_DESC: $crate::__abi::AaPluginDesc = $crate::ffi::desc::<$reactor>(
            match ::std::ffi::CStr::from_bytes_with_nul(
                concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
            ) {
                Ok(version) => version,
                Err(_) => panic!("the package version contains a NUL byte"),
            },
        );

        /// The plugin descriptor, for static linking (a statically linked
        /// reactor goes through the same negotiation as a loaded one).
        pub fn plugin_desc() -> *const $crate::__abi::AaPluginDesc {
            &AA_REACTOR_DESC
        }
    };
    (@entry) => {
        /// The reactor entry symbol: returns the static descriptor, no side
        /// effects. `[init]`
        #[no_mangle]
        pub extern "C" fn aa_reactor_entry_v1() -> *const $crate::__abi::AaPluginDesc {
            &AA_REACTOR_DESC
        }
    };
    ($reactor:ty) => {
        $crate::export_reactor!(linked $reactor);
        $crate::export_reactor!(@entry);
    };
}
