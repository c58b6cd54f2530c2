//! The traits a Rust reactor implements: [`Reactor`] (the loop and every
//! vtable slot, as safe methods) and [`Event`] (what an `*mut AaEvent`
//! points to). The shims that call them are in [`crate::ffi`], whose
//! pointer rules F1-F5 the `# Safety` sections below cite.

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::rc::Rc;

use async_abi::sdk::dns::Hints;
use async_abi::sdk::request::Request;
use async_abi::{AaStatus, AA_E_UNSUPPORTED};

use crate::callback::{ClosedCallback, HostCallback};
use crate::core::Core;
use crate::error::{Error, Result};

/// What `io_submit` did with a request.
#[derive(Debug)]
pub enum Submitted<E> {
    /// Completed inline (`AA_IO_TRY_INLINE`) with this result: no event.
    Done(i64),
    /// Pending: the host gets this event.
    Pending(Rc<E>),
}

/// A reactor's event type: what an `*mut AaEvent` handed to the host points
/// to.
///
/// # Safety
///
/// The type must be `#[repr(C)]` with an [`async_abi::AaEvent`] as its first field,
/// which never changes after creation (the host reads it at any time before
/// `dispose`), and [`Event::fire`] must keep F4.
pub unsafe trait Event: Sized + 'static {
    /// The reactor that makes these events.
    type Reactor: Reactor<Event = Self>;

    /// Whether this is memory of this reactor's (its magic number): a
    /// foreign or stale pointer is refused with `AA_E_INVALID`.
    fn is_ours(&self) -> bool;

    /// The reactor that made the event, if it still exists.
    fn reactor(&self) -> Option<Rc<Self::Reactor>>;

    /// The host's callback (the kit's delivery loops call it).
    fn callback(&self) -> &HostCallback;

    /// Whether the event may still call back: false once disposed (the
    /// kit's delivery loops check it right before each call).
    fn deliverable(&self) -> bool;

    /// The number of deferred callbacks queued for the event
    /// (`crate::deferred`, Q1).
    fn scheduled(&self) -> &std::cell::Cell<u32>;

    /// `trigger_fire`, from any thread: marks the trigger fired and wakes
    /// the loop; `AA_E_INVALID` if the event is not a trigger.
    ///
    /// # Safety
    ///
    /// `ev` is non-NULL and a live event of this reactor (F2). Any thread
    /// may call this: read only immutable, thread-safe fields, through raw
    /// field pointers (F4).
    unsafe fn fire(ev: *const Self) -> AaStatus;
}

/// A Rust reactor: implement this (and [`Event`]) and
/// [`export_reactor!`](crate::export_reactor) gives the plugin descriptor,
/// the vtable and every shim.
///
/// Every method but [`Reactor::wake`] is called on the loop thread, after
/// [`Reactor::check_thread`] passed; an `Err` goes through
/// [`Reactor::fail`] (the message for `last_error_message`) and its status
/// to the host. The optional kinds default to `AA_E_UNSUPPORTED`; leave
/// their capability bit out of [`Reactor::CAPS`].
pub trait Reactor: Sized + 'static {
    /// The reactor's events.
    type Event: Event<Reactor = Self>;
    /// Resolved `create` options.
    type Config: Default;

    /// The plugin's name (`reactor-<name>`): the descriptor's, and the one
    /// panics are logged under.
    const NAME: &'static CStr;
    /// The plugin's vendor string.
    const VENDOR: &'static CStr;
    /// The `AA_CAP_*` bits of the vtable.
    const CAPS: u64;
    /// The ABI minor this reactor implements (`0` for 1.0, `1` for 1.1):
    /// its descriptor's `abi_minor` and its vtable's `iface_minor`.
    ///
    /// Stated by the author, never taken from the SDK's `AA_ABI_MINOR`: a
    /// reactor rebuilt against a newer SDK must not silently promise the
    /// new minor (the conformance kit and the host hold a reactor to the
    /// rules and requests of the minor it declares). Raise it when the
    /// reactor implements what the new minor added. The vtable refuses to
    /// compile with a minor newer than the SDK's, or, for minor 0, with a
    /// capability bit 1.0 does not define.
    const ABI_MINOR: u16;

    /// Reads `create`'s options (`Err(key bytes)` is an entry that is not
    /// UTF-8).
    fn configure<'a>(
        options: impl Iterator<Item = std::result::Result<(&'a str, &'a str), &'a [u8]>>,
    ) -> Result<Self::Config>;
    /// Makes a reactor bound to the calling thread.
    fn new(config: &Self::Config) -> Result<Rc<Self>>;
    /// The instance's capabilities (what this kernel allows of
    /// [`Reactor::CAPS`]).
    fn instance_caps(&self) -> u64 {
        Self::CAPS
    }
    /// The loop's bookkeeping, which the provided methods below read.
    fn core(&self) -> &Core;
    /// Fails unless called on the loop thread.
    #[inline]
    fn check_thread(&self, what: &str) -> Result<()> {
        self.core().check_thread(what)
    }
    /// Records a failure for `last_error_message` and returns its status.
    #[inline]
    fn fail(&self, err: Error) -> AaStatus {
        self.core().fail(err)
    }
    /// The last error message.
    fn last_error(&self) -> String {
        self.core().last_error()
    }
    /// `destroy`: refuses while events are alive or inside `run_once`
    /// (`Core::check_destroy`), else releases what the reactor holds.
    fn destroy(&self) -> Result<()>;
    /// One loop iteration (inside `Core::enter`): the number of callbacks
    /// run.
    fn run_once(&self, timeout_ns: i64) -> Result<i32>;
    /// Active, referenced, non-hidden events.
    #[inline]
    fn alive(&self) -> u32 {
        self.core().alive()
    }
    /// The cached clock, in ns.
    #[inline]
    fn now_ns(&self) -> u64 {
        self.core().clock()
    }
    /// `wake`, from any thread.
    ///
    /// # Safety
    ///
    /// `this` is non-NULL and a live reactor (F1). Any thread may call
    /// this: read only immutable, thread-safe fields, through raw field
    /// pointers (F4).
    unsafe fn wake(this: *const Self) -> AaStatus;

    /// `timer_new`.
    fn timer_new(
        &self,
        first_ns: u64,
        repeat_ns: u64,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Self::Event>>;
    /// `timer_rearm`.
    fn timer_rearm(&self, ev: &Rc<Self::Event>, first_ns: u64, repeat_ns: u64) -> Result<()>;
    /// `poll_new` (`fd` is checked non-negative).
    fn poll_new(
        &self,
        fd: RawFd,
        interest: u32,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Self::Event>>;
    /// `poll_set_interest`.
    fn poll_set_interest(&self, ev: &Rc<Self::Event>, interest: u32) -> Result<()>;
    /// `trigger_new`.
    fn trigger_new(&self, flags: u32, cb: HostCallback) -> Result<Rc<Self::Event>>;
    /// `io_submit`: `req` was read and checked per opcode by the SDK, and
    /// its opcode's capability is in [`Reactor::CAPS`]; `inline` is
    /// `AA_IO_TRY_INLINE`.
    ///
    /// # Safety
    ///
    /// F5: the request's buffer, address, paths and stat slot stay valid and
    /// unmoved until its callback has run (or, for `Submitted::Done`, until
    /// this call returns).
    unsafe fn io_submit(
        &self,
        req: Request,
        inline: bool,
        cb: HostCallback,
    ) -> Result<Submitted<Self::Event>>;
    /// `signal_new` (`AA_CAP_SIGNAL`).
    fn signal_new(&self, signum: i32, flags: u32, cb: HostCallback) -> Result<Rc<Self::Event>> {
        let _ = (signum, flags, cb);
        Err(unsupported::<Self>("signal_new", "signal watches"))
    }
    /// `process_new` (`AA_CAP_PROCESS`; `pid` is checked positive).
    fn process_new(&self, pid: i32, flags: u32, cb: HostCallback) -> Result<Rc<Self::Event>> {
        let _ = (pid, flags, cb);
        Err(unsupported::<Self>("process_new", "process watches"))
    }
    /// `fs_watch_new` (`AA_CAP_FS_WATCH`; `path` is a non-empty copy).
    fn fs_watch_new(&self, path: &CStr, flags: u32, cb: HostCallback) -> Result<Rc<Self::Event>> {
        let _ = (path, flags, cb);
        Err(unsupported::<Self>("fs_watch_new", "filesystem watches"))
    }
    /// `dns_resolve` (`AA_CAP_DNS`; node and service copied, not both
    /// empty; hints checked).
    fn dns_resolve(
        &self,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        cb: HostCallback,
    ) -> Result<Rc<Self::Event>> {
        let _ = (node, service, hints, cb);
        Err(unsupported::<Self>("dns_resolve", "name resolution"))
    }
    /// `set_ref`.
    fn set_ref(&self, ev: &Rc<Self::Event>, referenced: bool);
    /// `cancel` (`reason` as the host gave it).
    fn cancel(&self, ev: &Rc<Self::Event>, reason: AaStatus) -> Result<()>;
    /// `close`.
    fn close(&self, ev: &Rc<Self::Event>, on_closed: Option<ClosedCallback>) -> Result<()>;
    /// `dispose`: the host's reference, given back.
    fn dispose(&self, ev: Rc<Self::Event>);
}

/// `AA_E_UNSUPPORTED` for an optional slot a reactor does not implement.
fn unsupported<R: Reactor>(what: &str, kind: &str) -> Error {
    Error::new(
        AA_E_UNSUPPORTED,
        format!("{what}: {} has no {kind}", R::NAME.to_string_lossy()),
    )
}
