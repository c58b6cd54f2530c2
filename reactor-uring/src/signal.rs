//! Signal watches (`signal_new`): the loop's half. The handler and the
//! process-wide table are in `async_abi::sdk::signal`.
//!
//! # What this module owns
//!
//! [`Signals`], made at the first `signal_new` and kept until `destroy`: the
//! reactor's port in the process-wide table, and the active watchers of
//! each signal in creation order. The port wakes the loop through the
//! reactor's own waker eventfd, whose ring `READ` is always armed: a
//! delivery completes it, so the loop's one `io_uring_enter` returns (no
//! extra descriptor, no extra op).
//!
//! # Invariants
//!
//! - **SW1** A watcher is in `watchers[signum]` exactly while its state is
//!   active; the port watches `signum` exactly while that list is not empty
//!   (so the reactor owns the disposition only while it watches, and the
//!   previous one is back when the last watcher stops).
//! - **SW2** Each iteration takes the port's pending set once, after
//!   reaping, and runs one callback per active watcher of each signal in
//!   it: deliveries between two iterations coalesce into one callback per
//!   watcher. A watcher made after a delivery was taken, or stopped before
//!   its turn, is not called for it.
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

use std::collections::HashMap;
use std::rc::Rc;

use async_abi::{AA_EVENT_SIGNAL, AA_EVF_HIDDEN, AA_E_INVALID, AA_E_NOMEM};

use crate::error::{Error, Result};
use crate::event::{Event, SignalState, State};
use crate::ffi::HostCallback;
use crate::ops::sys::{self, signal::Port};
use crate::reactor::{check_flags, Reactor};

/// A reactor's signal state (see the module doc).
#[derive(Debug)]
pub(crate) struct Signals {
    port: Port,
    watchers: HashMap<i32, Vec<Rc<Event>>>,
}

impl Reactor {
    /// `signal_new`.
    pub(crate) fn signal_new(
        &self,
        signum: i32,
        flags: u32,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        check_flags("signal_new", flags, AA_EVF_HIDDEN)?;
        if let Some(why) = sys::signal::refusal(signum) {
            return Err(Error::new(
                AA_E_INVALID,
                format!("signal_new: signal {signum} {why}"),
            ));
        }
        self.open_signals()?;
        {
            let mut signals = self.signals.borrow_mut();
            let signals = signals.as_mut().expect("opened above");
            if !signals.watchers.contains_key(&signum) {
                signals
                    .port
                    .watch(signum)
                    .map_err(|e| Error::os(format_args!("signal_new: sigaction({signum})"), &e))?;
            }
        }
        let state = State::Signal(SignalState {
            signum,
            active: true,
        });
        let ev = self.new_event(AA_EVENT_SIGNAL, flags, callback, None, state);
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals
                .watchers
                .entry(signum)
                .or_default()
                .push(Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// Makes the reactor's [`Signals`] if it has none yet.
    fn open_signals(&self) -> Result<()> {
        if self.signals.borrow().is_some() {
            return Ok(());
        }
        let port = Port::claim(self.waker.fd()).ok_or_else(|| {
            Error::new(
                AA_E_NOMEM,
                format!(
                    "signal_new: {} reactors already watch signals",
                    sys::signal::SLOTS
                ),
            )
        })?;
        *self.signals.borrow_mut() = Some(Signals {
            port,
            watchers: HashMap::new(),
        });
        Ok(())
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
            if let Some(list) = signals.watchers.get_mut(&signum) {
                list.retain(|w| !Rc::ptr_eq(w, ev));
                if list.is_empty() {
                    signals.watchers.remove(&signum);
                    signals.port.unwatch(signum);
                }
            }
        }
        self.touch(ev);
        true
    }

    /// Delivers the signals that arrived (SW2). Returns the number of
    /// callbacks run.
    pub(crate) fn run_signals(&self) -> i32 {
        let batch: Vec<(i32, Vec<Rc<Event>>)> = {
            let signals = self.signals.borrow();
            let Some(signals) = signals.as_ref() else {
                return 0;
            };
            if !signals.port.has_pending() {
                return 0;
            }
            signals
                .port
                .take_pending()
                .filter_map(|signum| Some((signum, signals.watchers.get(&signum)?.clone())))
                .collect()
        };
        let mut count = 0;
        for (signum, watchers) in batch {
            for ev in watchers {
                let active = matches!(&*ev.state.borrow(), State::Signal(s) if s.active);
                if active && ev.deliverable() {
                    ev.callback.notify(&*ev, 0, i64::from(signum));
                    count += 1;
                }
            }
        }
        count
    }

    /// `destroy`: gives the port back, restoring dispositions it still held
    /// (while the waker's eventfd is still open, SG3).
    pub(crate) fn close_signals(&self) {
        drop(self.signals.borrow_mut().take());
    }
}
