//! The three ways an event ends (see `async_abi::event`), plus `set_ref`.
//!
//! - **cancel** ends the pending operation: its callback runs once more,
//!   from a later `run_once`, with the reason. For a request the kernel
//!   owns, that is when the kernel's own completion arrives: `-ECANCELED`
//!   becomes the reason, a real result (it finished first) is reported as
//!   it is. The event stays usable (a timer can be re-armed, a poll re-armed
//!   with `poll_set_interest`). An `AA_IO_CLOSE` is never stopped (ops/io.rs):
//!   it completes with its real result.
//! - **close** ends the handle: a pending request completes with
//!   `-ECANCELED` (or its real result), the kernel releases everything of
//!   the event, a descriptor a poll owns is closed through the ring, then
//!   `on_closed` runs exactly once from a later `run_once` (AA-R4).
//! - **dispose** drops the host's reference: nothing of the event runs
//!   again (event invariant E2); an operation in the kernel is cancelled and
//!   keeps the event's memory until its completion (ops invariant O1).
//!
//! None of them calls the host: every callback they cause is deferred or
//! comes with a later completion (reactor invariants R1, R2).

use std::rc::Rc;

use async_abi::AA_EVF_OWNS_FD;
use async_abi::{AaStatus, AA_EVENT_IO, AA_EVENT_POLL, AA_EVENT_TIMER, AA_EVENT_TRIGGER};
use async_abi::{AA_EVENT_DNS, AA_EVENT_FS_WATCH, AA_EVENT_PROCESS, AA_EVENT_SIGNAL};

use crate::error::{Error, Result};
use crate::event::{CloseState, Event, State};
use crate::ffi::ClosedCallback;
use crate::ops::OpKind;
use crate::reactor::{Deferred, Reactor};

impl Reactor {
    /// `cancel(ev, reason)`.
    pub(crate) fn cancel(&self, ev: &Rc<Event>, reason: AaStatus) -> Result<()> {
        if reason >= 0 {
            return Err(Error::invalid(format!(
                "cancel: reason {reason} is not a negative status"
            )));
        }
        self.check_open(ev, "cancel")?;
        let mut value = 0;
        let deferred = match ev.header.kind {
            AA_EVENT_TIMER => self.timer_disarm(ev),
            AA_EVENT_POLL => {
                let was_armed = match &mut *ev.state.borrow_mut() {
                    State::Poll(p) if p.armed && p.interest != 0 => {
                        p.armed = false;
                        true
                    }
                    _ => false,
                };
                if was_armed {
                    self.disarm_watch(ev);
                }
                was_armed
            }
            AA_EVENT_IO => {
                if self.cancel_request(ev, reason) || ev.scheduled.get() > 0 {
                    // The kernel's completion (or the result already
                    // scheduled) brings the one callback.
                    return Ok(());
                }
                false
            }
            AA_EVENT_TRIGGER => self.end_trigger(ev),
            AA_EVENT_SIGNAL => {
                if let State::Signal(s) = &*ev.state.borrow() {
                    value = i64::from(s.signum);
                }
                self.signal_stop(ev)
            }
            AA_EVENT_PROCESS => self.process_stop(ev),
            AA_EVENT_FS_WATCH => self.fs_watch_stop(ev),
            AA_EVENT_DNS => self.dns_stop(ev),
            _ => false,
        };
        if !deferred {
            return Err(Error::invalid("cancel: nothing is pending on the event"));
        }
        self.defer(Deferred::Notify {
            ev: Rc::clone(ev),
            status: reason,
            value,
        });
        Ok(())
    }

    /// `close(ev, on_closed)` (AA-R4).
    pub(crate) fn close(&self, ev: &Rc<Event>, on_closed: Option<ClosedCallback>) -> Result<()> {
        self.check_open(ev, "close")?;
        ev.on_closed.set(on_closed);
        ev.close.set(CloseState::Closing);
        match ev.header.kind {
            AA_EVENT_TIMER => {
                self.timer_disarm(ev);
            }
            AA_EVENT_POLL => self.release_poll(ev),
            AA_EVENT_IO => {
                self.cancel_request(ev, -libc::ECANCELED);
            }
            AA_EVENT_TRIGGER => {
                self.end_trigger(ev);
            }
            _ => {
                self.stop_watch(ev);
            }
        }
        self.touch(ev);
        self.settle_close(ev);
        Ok(())
    }

    /// `dispose(ev)`: takes the host's reference (E2, R4).
    pub(crate) fn dispose(&self, ev: Rc<Event>) {
        ev.disposed.set(true);
        self.forget_event();
        match ev.header.kind {
            AA_EVENT_TIMER => {
                self.timer_disarm(&ev);
            }
            AA_EVENT_POLL => self.release_poll(&ev),
            AA_EVENT_IO => {
                self.cancel_request(&ev, -libc::ECANCELED);
            }
            AA_EVENT_TRIGGER => {
                self.end_trigger(&ev);
            }
            _ => {
                self.stop_watch(&ev);
            }
        }
        self.touch(&ev);
        self.recycle(ev);
    }

    /// Stops a signal, process, fs watch or lookup (close, dispose): no
    /// callback. Returns whether it was active.
    fn stop_watch(&self, ev: &Rc<Event>) -> bool {
        match ev.header.kind {
            AA_EVENT_SIGNAL => self.signal_stop(ev),
            AA_EVENT_PROCESS => self.process_stop(ev),
            AA_EVENT_FS_WATCH => self.fs_watch_stop(ev),
            AA_EVENT_DNS => self.dns_stop(ev),
            _ => false,
        }
    }

    /// `set_ref(ev, referenced)`.
    pub(crate) fn set_ref(&self, ev: &Event, referenced: bool) {
        ev.referenced.set(referenced);
        self.touch(ev);
    }

    /// Ends a watch for good (close, dispose); a poll that owns its
    /// descriptor closes it through the ring (AA-R6), after every op on it
    /// has finished (ops invariant O4).
    fn release_poll(&self, ev: &Rc<Event>) {
        let (fd, epoch) = match &mut *ev.state.borrow_mut() {
            State::Poll(p) => {
                p.armed = false;
                (p.fd, p.epoch)
            }
            _ => return,
        };
        self.disarm_watch(ev);
        let owns = ev.header.flags & AA_EVF_OWNS_FD != 0;
        if owns && self.registry.borrow().is_open(fd, epoch) {
            self.close_fd(fd, Rc::clone(ev), OpKind::OwnedFdClose);
        }
        self.touch(ev);
    }
}
