//! The whole C ABI of this reactor: the kit's two traits, implemented by
//! delegating to the loop. `reactor_sdk::export_reactor!` makes the
//! descriptor, the vtable and every shim from them (panics caught, pointers
//! and flags checked, `last_error_message` kept).
//!
//! # Safety
//!
//! The kit's pointer rules F1-F5 hold; what only this reactor knows:
//! `wake` and `trigger_fire` read only an immutable `Arc` field through a
//! raw field pointer (F4), and `io_submit` wraps the request's buffer and
//! address, lent until its callback (F5, AA-R5), into the kit's `HostBuf`
//! and `HostAddr` (io.rs invariant D4).

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::ptr::addr_of;
use std::rc::Rc;

use async_abi::sdk::dns::Hints;
use async_abi::sdk::request::Request;
use async_abi::*;
use reactor_sdk::core::Core;
use reactor_sdk::sys::{HostAddr, HostBuf};
use reactor_sdk::timer::Timed;
use reactor_sdk::{ClosedCallback, HostCallback, Result, Submitted};

use crate::event::{Event, Kind, EVENT_MAGIC};
use crate::io::Req;
use crate::reactor::Reactor;

reactor_sdk::export_reactor!(Reactor);

// SAFETY: `Event` is `#[repr(C)]` with its `AaEvent` header first, never
// changed (E1); `fire` keeps F4.
unsafe impl reactor_sdk::Event for Event {
    type Reactor = Reactor;

    fn is_ours(&self) -> bool {
        self.magic == EVENT_MAGIC
    }

    fn reactor(&self) -> Option<Rc<Reactor>> {
        self.reactor.upgrade()
    }

    fn callback(&self) -> &HostCallback {
        &self.callback
    }

    fn deliverable(&self) -> bool {
        !self.disposed.get()
    }

    #[inline]
    fn scheduled(&self) -> &std::cell::Cell<u32> {
        &self.scheduled
    }

    unsafe fn fire(ev: *const Event) -> AaStatus {
        // SAFETY: F2 and F4: `magic` and `trigger` never change after
        // creation; only those fields are read.
        let (magic, trigger) = unsafe { (*addr_of!((*ev).magic), &*addr_of!((*ev).trigger)) };
        match (magic == EVENT_MAGIC, trigger) {
            (true, Some(fire)) => fire.fire(),
            _ => AA_E_INVALID,
        }
    }
}

impl Timed for Event {
    fn armed_generation(&self) -> Option<u64> {
        match &*self.state.borrow() {
            Kind::Timer {
                armed: true,
                generation,
                ..
            } => Some(*generation),
            _ => None,
        }
    }
}

impl reactor_sdk::Reactor for Reactor {
    type Event = Event;
    type Config = ();

    const NAME: &'static CStr = c"reactor-example";
    const VENDOR: &'static CStr = c"async workspace";
    const CAPS: u64 = AA_CAP_TIMER
        | AA_CAP_POLL
        | AA_CAP_IO
        | AA_CAP_TRIGGER
        | AA_CAP_IO_DGRAM
        | AA_CAP_SIGNAL
        | AA_CAP_PROCESS
        | AA_CAP_FS_WATCH
        | AA_CAP_DNS;

    /// Options are `example.<key>`; this reactor reads none.
    fn configure<'a>(
        options: impl Iterator<Item = std::result::Result<(&'a str, &'a str), &'a [u8]>>,
    ) -> Result<()> {
        reactor_sdk::options::read("example", &[], options, |_, _, _| Ok(false))
    }

    fn new(_config: &()) -> Result<Rc<Reactor>> {
        Reactor::new()
    }

    fn core(&self) -> &Core {
        &self.core
    }

    fn destroy(&self) -> Result<()> {
        Reactor::destroy(self)
    }

    fn run_once(&self, timeout_ns: i64) -> Result<i32> {
        Reactor::run_once(self, timeout_ns)
    }

    unsafe fn wake(this: *const Reactor) -> AaStatus {
        // SAFETY: F1 and F4: `waker` never changes after `create` and is an
        // `Arc` of a thread-safe waker; only that field is read.
        let waker = unsafe { &*addr_of!((*this).waker) };
        match waker.wake() {
            Ok(()) => AA_OK,
            Err(e) => reactor_sdk::error::neg_errno(&e),
        }
    }

    fn timer_new(
        &self,
        first: u64,
        repeat: u64,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
        Reactor::timer_new(self, first, repeat, flags, cb)
    }

    fn timer_rearm(&self, ev: &Rc<Event>, first: u64, repeat: u64) -> Result<()> {
        Reactor::timer_rearm(self, ev, first, repeat)
    }

    fn poll_new(
        &self,
        fd: RawFd,
        interest: u32,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
        Reactor::poll_new(self, fd, interest, flags, cb)
    }

    fn poll_set_interest(&self, ev: &Rc<Event>, interest: u32) -> Result<()> {
        Reactor::poll_set_interest(self, ev, interest)
    }

    fn trigger_new(&self, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::trigger_new(self, flags, cb)
    }

    unsafe fn io_submit(
        &self,
        req: Request,
        _inline: bool,
        cb: HostCallback,
    ) -> Result<Submitted<Event>> {
        let peer = if req.peer.is_null() {
            None
        } else {
            // SAFETY: F5 (AA-R5): the host keeps `addr` valid until the
            // callback; the SDK checked it non-NULL and aligned.
            Some(unsafe { HostAddr::new(req.peer) })
        };
        let req = Req {
            opcode: req.opcode,
            fd: req.fd,
            // SAFETY: F5 (AA-R5): the host keeps `buf` valid for `len` bytes
            // until the callback runs; the SDK checked a non-empty one
            // non-NULL.
            buf: unsafe { HostBuf::new(req.buf, req.len) },
            offset: req.offset,
            peer,
            target: req.target,
            peek: req.has(AA_IO_PEEK),
        };
        Reactor::io_submit(self, req, cb)
    }

    fn signal_new(&self, signum: i32, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::signal_new(self, signum, flags, cb)
    }

    fn process_new(&self, pid: i32, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::process_new(self, pid, flags, cb)
    }

    fn fs_watch_new(&self, path: &CStr, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::fs_watch_new(self, path, flags, cb)
    }

    fn dns_resolve(
        &self,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
        Reactor::dns_resolve(self, node, service, hints, cb)
    }

    fn set_ref(&self, ev: &Rc<Event>, referenced: bool) {
        Reactor::set_ref(self, ev, referenced)
    }

    fn cancel(&self, ev: &Rc<Event>, reason: AaStatus) -> Result<()> {
        Reactor::cancel(self, ev, reason)
    }

    fn close(&self, ev: &Rc<Event>, on_closed: Option<ClosedCallback>) -> Result<()> {
        Reactor::close(self, ev, on_closed)
    }

    fn dispose(&self, ev: Rc<Event>) {
        Reactor::dispose(self, ev)
    }
}
