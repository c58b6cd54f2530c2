//! The driver's implementation of the kit's [`crate::Reactor`] trait: the
//! whole C ABI, by delegating to the loop; [`crate::export_reactor!`]
//! `(backend B)` makes the descriptor, the vtable and every shim from it.
//!
//! # Safety
//!
//! The kit's pointer rules F1-F5 hold; what only this driver knows: `wake`
//! reads only an immutable `Arc` field through a raw field pointer (F4), and
//! `io_submit` wraps the request's buffer and address, lent until its
//! callback (F5, AA-R5), into the kit's `HostBuf` and `HostAddr` (fds.rs
//! invariant D4).

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::ptr::addr_of;
use std::rc::Rc;

use async_abi::sdk::dns::Hints;
use async_abi::sdk::request::Request;
use async_abi::*;

use super::fds::Req;
use super::{Backend, Event, Readiness};
use crate::core::Core;
use crate::event::Wake;

use crate::{ClosedCallback, HostCallback, Result, Submitted};

/// A backend [`crate::export_reactor!`]`(backend B)` exported: its
/// statics; not implemented by hand.
pub trait Exported: Backend {
    /// The vtable of `Readiness<Self>`.
    fn vtable() -> &'static AaReactorVTable;
}

impl<B: Exported> crate::ffi::Exported for Readiness<B> {
    #[inline]
    fn vtable() -> &'static AaReactorVTable {
        B::vtable()
    }
}

impl<B: Backend> crate::Reactor for Readiness<B> {
    type Event = Event<B>;
    type Config = ();

    const NAME: &'static CStr = B::NAME;
    const VENDOR: &'static CStr = B::VENDOR;
    const ABI_MINOR: u16 = B::ABI_MINOR;
    // Datagram requests are 1.1: a backend that states minor 0 does not
    // claim them.
    const CAPS: u64 = AA_CAP_TIMER
        | AA_CAP_POLL
        | AA_CAP_IO
        | AA_CAP_TRIGGER
        | if B::ABI_MINOR >= 1 {
            AA_CAP_IO_DGRAM
        } else {
            0
        }
        | AA_CAP_SIGNAL
        | AA_CAP_PROCESS
        | AA_CAP_FS_WATCH
        | AA_CAP_DNS
        // 1.2: the host re-arms what a level poller cannot see consumed.
        | if B::LEVEL_TRIGGERED && B::ABI_MINOR >= 2 {
            AA_CAP_POLL_LEVEL
        } else {
            0
        };

    /// Options are `<name>.<key>` (the name without `reactor-`); the
    /// driver reads none.
    fn configure<'a>(
        options: impl Iterator<Item = std::result::Result<(&'a str, &'a str), &'a [u8]>>,
    ) -> Result<()> {
        let name = B::NAME.to_str().unwrap_or("");
        let prefix = name.strip_prefix("reactor-").unwrap_or(name);
        crate::options::read(prefix, &[], options, |_, _, _| Ok(false))
    }

    fn new(_config: &()) -> Result<Rc<Readiness<B>>> {
        Readiness::new()
    }

    fn core(&self) -> &Core {
        &self.core
    }

    fn destroy(&self) -> Result<()> {
        Readiness::destroy(self)
    }

    fn run_once(&self, timeout_ns: i64) -> Result<i32> {
        Readiness::run_once(self, timeout_ns)
    }

    unsafe fn wake(this: *const Readiness<B>) -> AaStatus {
        // SAFETY: F1 and F4: `waker` never changes after `create` and is an
        // `Arc` of a thread-safe waker (`Wake: Send + Sync`); only that
        // field is read.
        let waker = unsafe { &*addr_of!((*this).waker) };
        match waker.wake() {
            Ok(()) => AA_OK,
            Err(e) => crate::error::neg_errno(&e),
        }
    }

    fn timer_new(
        &self,
        first: u64,
        repeat: u64,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event<B>>> {
        Readiness::timer_new(self, first, repeat, flags, cb)
    }

    fn timer_rearm(&self, ev: &Rc<Event<B>>, first: u64, repeat: u64) -> Result<()> {
        Readiness::timer_rearm(self, ev, first, repeat)
    }

    fn poll_new(
        &self,
        fd: RawFd,
        interest: u32,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event<B>>> {
        Readiness::poll_new(self, fd, interest, flags, cb)
    }

    fn poll_set_interest(&self, ev: &Rc<Event<B>>, interest: u32) -> Result<()> {
        Readiness::poll_set_interest(self, ev, interest)
    }

    fn trigger_new(&self, flags: u32, cb: HostCallback) -> Result<Rc<Event<B>>> {
        Readiness::trigger_new(self, flags, cb)
    }

    unsafe fn io_submit(
        &self,
        req: Request,
        _inline: bool,
        cb: HostCallback,
    ) -> Result<Submitted<Event<B>>> {
        // SAFETY: F5, this method's contract, is `lent`'s.
        let (buf, peer) = unsafe { crate::sys::lent(&req) };
        let req = Req {
            opcode: req.opcode,
            fd: req.fd,
            buf,
            offset: req.offset,
            peer,
            peek: req.has(AA_IO_PEEK),
            target: req.target,
        };
        Readiness::io_submit(self, req, cb)
    }

    fn signal_new(&self, signum: i32, flags: u32, cb: HostCallback) -> Result<Rc<Event<B>>> {
        Readiness::signal_new(self, signum, flags, cb)
    }

    fn process_new(&self, pid: i32, flags: u32, cb: HostCallback) -> Result<Rc<Event<B>>> {
        Readiness::process_new(self, pid, flags, cb)
    }

    fn fs_watch_new(&self, path: &CStr, flags: u32, cb: HostCallback) -> Result<Rc<Event<B>>> {
        Readiness::fs_watch_new(self, path, flags, cb)
    }

    fn dns_resolve(
        &self,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        cb: HostCallback,
    ) -> Result<Rc<Event<B>>> {
        Readiness::dns_resolve(self, node, service, hints, cb)
    }

    fn set_ref(&self, ev: &Rc<Event<B>>, referenced: bool) {
        Readiness::set_ref(self, ev, referenced)
    }

    fn cancel(&self, ev: &Rc<Event<B>>, reason: AaStatus) -> Result<()> {
        Readiness::cancel(self, ev, reason)
    }

    fn close(&self, ev: &Rc<Event<B>>, on_closed: Option<ClosedCallback>) -> Result<()> {
        Readiness::close(self, ev, on_closed)
    }

    fn dispose(&self, ev: Rc<Event<B>>) {
        Readiness::dispose(self, ev)
    }
}
