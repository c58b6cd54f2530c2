//! Signal watches (`signal_new`): the loop's half, on the kit's
//! (`reactor_sdk::signal`: the port and the watchers per signal, invariants
//! SW1-SW2). The handler and the process-wide table are in
//! `async_abi::sdk::signal`.
//!
//! # What this module owns
//!
//! [`Signals`], made at the first `signal_new` and kept until `destroy`: the
//! kit's state (the reactor's port in the process-wide table, and the
//! active watchers of each signal in creation order). The port wakes the loop through the
//! reactor's own waker eventfd, whose ring `READ` is always armed: a
//! delivery completes it, so the loop's one `io_uring_enter` returns (no
//! extra descriptor, no extra op).
//!
//! SW2 here: the pending set is taken once per iteration, after reaping.
//!
//! # Access
//!
//! Loop thread only. The port's atomics are shared with the handler
//! (`async_abi::sdk::signal`, invariants SG1-SG4).
//!
//! # Drop order
//!
//! `destroy` drops [`Signals`] before the waker's read is drained: the port
//! releases its slot and waits out any handler still writing the waker
//! (SG3), which the reactor's `Arc<Waker>` keeps open until then.

use std::rc::Rc;

use async_abi::{AA_EVENT_SIGNAL, AA_EVF_HIDDEN};

use crate::error::Result;
use crate::event::{Event, SignalState, State};
use crate::ffi::HostCallback;
use crate::reactor::{check_flags, Reactor};

/// A reactor's signal state (see the module doc).
pub(crate) type Signals = reactor_sdk::signal::Signals<Event>;

impl Reactor {
    /// `signal_new`.
    pub(crate) fn signal_new(
        &self,
        signum: i32,
        flags: u32,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        check_flags("signal_new", flags, AA_EVF_HIDDEN)?;
        reactor_sdk::signal::check(signum)?;
        if self.signals.borrow().is_none() {
            *self.signals.borrow_mut() = Some(Signals::claim(self.waker.fd())?);
        }
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals.prepare(signum)?;
        }
        let state = State::Signal(SignalState {
            signum,
            active: true,
        });
        let ev = self.new_event(AA_EVENT_SIGNAL, flags, callback, None, state);
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals.add(signum, Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// Stops a signal watch (cancel, close, dispose); returns whether it was
    /// active (SW1).
    pub(crate) fn signal_stop(&self, ev: &Rc<Event>) -> bool {
        let signum = match &mut *ev.state.borrow_mut() {
            State::Signal(s) if s.active => {
                s.active = false;
                s.signum
            }
            _ => return false,
        };
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals.remove(signum, ev);
        }
        self.touch(ev);
        true
    }

    /// Delivers the signals that arrived (SW2). Returns the number of
    /// callbacks run.
    pub(crate) fn run_signals(&self) -> i32 {
        let batch = match self.signals.borrow().as_ref() {
            Some(signals) => signals.take_batch(),
            None => return 0,
        };
        reactor_sdk::signal::deliver(
            batch,
            |ev| matches!(&*ev.state.borrow(), State::Signal(s) if s.active),
        )
    }

    /// `destroy`: gives the port back, restoring dispositions it still held
    /// (while the waker's eventfd is still open, SG3).
    pub(crate) fn close_signals(&self) {
        drop(self.signals.borrow_mut().take());
    }
}
