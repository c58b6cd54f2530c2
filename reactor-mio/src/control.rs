//! The three ways an event ends (see `async_abi::event`), plus `set_ref`.
//!
//! - **cancel** ends the pending operation: its callback runs once more,
//!   from a later `run_once`, with the reason. The event stays usable (a
//!   timer can be re-armed, a poll re-armed with `poll_set_interest`).
//! - **close** ends the handle: a pending request completes with
//!   `-ECANCELED`, then `on_closed` runs exactly once, both from a later
//!   `run_once` (AA-R4); a poll that owns its descriptor closes it.
//! - **dispose** drops the host's reference: nothing of the event runs
//!   again (event invariant E2); the memory goes with the last `Rc`.
//!
//! None of them calls the host: every callback they cause is deferred
//! (reactor invariant R2).

use std::rc::Rc;

use async_abi::AA_EVF_OWNS_FD;
use async_abi::{AaStatus, AA_EVENT_IO, AA_EVENT_POLL, AA_EVENT_TIMER, AA_EVENT_TRIGGER};
use async_abi::{AA_EVENT_DNS, AA_EVENT_FS_WATCH, AA_EVENT_PROCESS, AA_EVENT_SIGNAL};

use crate::error::{Error, Result};
use crate::event::{Event, State};
use crate::ffi::ClosedCallback;
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
        let pending = match ev.header.kind {
            AA_EVENT_TIMER => self.timer_disarm(ev),
            AA_EVENT_POLL => match &mut *ev.state.borrow_mut() {
                State::Poll(p) if p.armed && p.interest != 0 => {
                    p.armed = false;
                    true
                }
                _ => false,
            },
            AA_EVENT_IO => {
                if self.withdraw_request(ev) {
                    true
                } else if ev.scheduled.get() > 0 {
                    // Already completed; its real result is on its way.
                    return Ok(());
                } else {
                    false
                }
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
        if !pending {
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
        ev.closing.set(true);
        match ev.header.kind {
            AA_EVENT_TIMER => {
                self.timer_disarm(ev);
            }
            AA_EVENT_POLL => self.release_poll(ev),
            AA_EVENT_IO if self.withdraw_request(ev) => {
                self.defer(Deferred::Notify {
                    ev: Rc::clone(ev),
                    status: 0,
                    value: -i64::from(libc::ECANCELED),
                });
            }
            AA_EVENT_TRIGGER => {
                self.end_trigger(ev);
            }
            _ => {
                self.stop_watch(ev);
            }
        }
        self.defer(Deferred::Closed {
            ev: Rc::clone(ev),
            on_closed,
        });
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
                self.withdraw_request(&ev);
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

    /// Detaches a poll from its descriptor; one that owns it closes it now
    /// (AA-R6), completing the descriptor's other requests with
    /// `-ECANCELED`.
    fn release_poll(&self, ev: &Rc<Event>) {
        if let Some(fd) = self.withdraw_poll(ev) {
            if ev.header.flags & AA_EVF_OWNS_FD != 0 {
                // A descriptor that is already bad has nothing left to close.
                let _ = self.forget_and_close(fd);
            }
        }
        self.touch(ev);
    }

    /// Ends an open trigger; returns whether it was open.
    fn end_trigger(&self, ev: &Event) -> bool {
        let was_open = match &mut *ev.state.borrow_mut() {
            State::Trigger { open } => std::mem::replace(open, false),
            _ => false,
        };
        if let Some(flag) = &ev.trigger {
            flag.close();
            self.triggers.borrow_mut().remove(&flag.id);
        }
        was_open
    }
}
