//! The C ABI: this reactor's implementation of the kit's traits
//! (`reactor_sdk::{Reactor, Event}`), from which `reactor_sdk` makes the
//! plugin descriptor, the `aa.reactor.v1` vtable and every `extern "C"`
//! shim (panic fence, pointer and flag checks, `last_error_message`).
//!
//! # Safety
//!
//! This file and `sys.rs` are the only places with `unsafe` code. The
//! pointer rules F1-F5 are the kit's (`reactor_sdk::ffi`); what is left
//! here is what only this reactor knows:
//!
//! - `wake` and `trigger_fire` (F4) read only immutable fields holding
//!   thread-safe values (`Reactor::shared`, `Event::trigger`) through raw
//!   field pointers, never a reference to the whole loop-thread object;
//! - `io_submit` turns the request's borrowed pointers into [`HostBuf`] and
//!   [`HostAddr`], which carry the AA-R5 promise (F5) into `sys.rs`.

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::ptr::addr_of;
use std::rc::Rc;

use async_abi::sdk::dns::Hints;
use async_abi::sdk::request;
use async_abi::*;
use reactor_sdk::core::Core;

pub(crate) use reactor_sdk::{ClosedCallback, HostCallback};

use crate::config::Config;
use crate::error::Result;
use crate::event::{Event, Request};
use crate::ops::Submitted;
use crate::reactor::Reactor;

reactor_sdk::export_reactor!(linked Reactor);

/// Capabilities: every event kind of the ABI, inline completion, and
/// datagram requests; not file requests (regular files are not pollable, so
/// their system calls would block the loop; the host runs them on its
/// blocking pool).
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

impl reactor_sdk::Reactor for Reactor {
    type Event = Event;
    type Config = Config;

    const NAME: &'static CStr = c"reactor-mio";
    const VENDOR: &'static CStr = c"async workspace";
    const CAPS: u64 = CAPS;
    // Implements ABI 1.2 (1.1's datagram requests; 1.2 asks nothing more
    // of a reactor that sees every edge itself): stated here, not taken
    // from the SDK, so a newer SDK changes nothing.
    const ABI_MINOR: u16 = 2;

    fn configure<'a>(
        options: impl Iterator<Item = std::result::Result<(&'a str, &'a str), &'a [u8]>>,
    ) -> Result<Config> {
        Config::from_options(options)
    }

    fn new(config: &Config) -> Result<Rc<Reactor>> {
        let reactor = Reactor::new(config)?;
        async_abi::plugin_debug!(
            "created a reactor (events_capacity {})",
            config.events_capacity
        );
        Ok(reactor)
    }

    #[inline]
    fn core(&self) -> &Core {
        &self.core
    }

    fn destroy(&self) -> Result<()> {
        Reactor::destroy(self)
    }

    #[inline]
    fn run_once(&self, timeout_ns: i64) -> Result<i32> {
        Reactor::run_once(self, timeout_ns)
    }

    unsafe fn wake(this: *const Reactor) -> AaStatus {
        // SAFETY: F1 and F4: `shared` is immutable after `create` and is an
        // `Arc` of thread-safe state; only that field is referenced.
        let shared = unsafe { &*addr_of!((*this).shared) };
        match shared.wake() {
            Ok(()) => AA_OK,
            Err(e) => reactor_sdk::error::neg_errno(&e),
        }
    }

    #[inline]
    fn timer_new(
        &self,
        first_ns: u64,
        repeat_ns: u64,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
        Reactor::timer_new(self, first_ns, repeat_ns, flags, cb)
    }

    #[inline]
    fn timer_rearm(&self, ev: &Rc<Event>, first_ns: u64, repeat_ns: u64) -> Result<()> {
        Reactor::timer_rearm(self, ev, first_ns, repeat_ns)
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

    #[inline]
    fn poll_set_interest(&self, ev: &Rc<Event>, interest: u32) -> Result<()> {
        Reactor::poll_set_interest(self, ev, interest)
    }

    fn trigger_new(&self, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::trigger_new(self, flags, cb)
    }

    #[inline]
    unsafe fn io_submit(
        &self,
        req: request::Request,
        inline: bool,
        cb: HostCallback,
    ) -> Result<Submitted> {
        // SAFETY: F5, this method's contract, is `lent`'s (an inline
        // completion ends the loan when this call returns).
        let (buf, peer) = unsafe { reactor_sdk::sys::lent(&req) };
        let req = Request {
            opcode: req.opcode,
            fd: req.fd,
            buf,
            offset: req.offset,
            peer,
            peek: req.has(AA_IO_PEEK),
            target: req.target,
        };
        Reactor::io_submit(self, req, inline, cb)
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

    #[inline]
    fn set_ref(&self, ev: &Rc<Event>, referenced: bool) {
        Reactor::set_ref(self, ev, referenced)
    }

    #[inline]
    fn cancel(&self, ev: &Rc<Event>, reason: AaStatus) -> Result<()> {
        Reactor::cancel(self, ev, reason)
    }

    #[inline]
    fn close(&self, ev: &Rc<Event>, on_closed: Option<ClosedCallback>) -> Result<()> {
        Reactor::close(self, ev, on_closed)
    }

    #[inline]
    fn dispose(&self, ev: Rc<Event>) {
        Reactor::dispose(self, ev)
    }
}
