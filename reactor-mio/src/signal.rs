//! Signal watches (`signal_new`): the loop's half, on the kit's
//! (`reactor_sdk::signal`: the port and the watchers per signal, invariants
//! SW1-SW2). The handler and the process-wide table are in
//! `async_abi::sdk::signal`.
//!
//! # What this module owns
//!
//! [`Signals`], made at the first `signal_new` and kept until `destroy`: the
//! kit's state and the eventfd the handler writes to wake this loop
//! (registered under [`SIGNAL_TOKEN`]).
//!
//! # Access
//!
//! Loop thread only. The port's atomics are shared with the handler
//! (`async_abi::sdk::signal`, invariants SG1-SG4).
//!
//! # Drop order
//!
//! `destroy` deregisters the eventfd and drops [`Signals`]: the port first
//! (it releases its slot and waits out any handler still writing, SG3), then
//! the eventfd.

use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use async_abi::{AA_EVENT_SIGNAL, AA_EVF_HIDDEN};
use mio::unix::SourceFd;
use mio::Interest;

use crate::error::{Error, Result};
use crate::event::{Event, SignalState, State};
use crate::ffi::HostCallback;
use crate::reactor::{check_flags, Reactor, SIGNAL_TOKEN};
use crate::sys;

/// A reactor's signal state (see the module doc). Field order is drop
/// order: the port goes before the descriptor it writes.
#[derive(Debug)]
pub(crate) struct Signals {
    kit: reactor_sdk::signal::Signals<Event>,
    efd: OwnedFd,
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
        reactor_sdk::signal::check(signum)?;
        self.open_signals()?;
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals.kit.prepare(signum)?;
        }
        let state = State::Signal(SignalState {
            signum,
            active: true,
        });
        let ev = self.new_event(AA_EVENT_SIGNAL, flags, callback, None, state);
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals.kit.add(signum, Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// Makes the reactor's [`Signals`] if it has none yet.
    fn open_signals(&self) -> Result<()> {
        if self.signals.borrow().is_some() {
            return Ok(());
        }
        let efd = sys::eventfd().map_err(|e| Error::os("signal_new: eventfd", &e))?;
        let kit = reactor_sdk::signal::Signals::claim(efd.as_raw_fd())?;
        self.with_mio(|mio| {
            mio.register(
                &mut SourceFd(&efd.as_raw_fd()),
                SIGNAL_TOKEN,
                Interest::READABLE,
            )
        })
        .map_err(|e| Error::os("signal_new: register the signal eventfd", &e))?;
        *self.signals.borrow_mut() = Some(Signals { kit, efd });
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
            signals.kit.remove(signum, ev);
        }
        self.touch(ev);
        true
    }

    /// The signal eventfd was readable: empties it (the signals themselves
    /// are taken by [`Reactor::run_signals`]).
    pub(crate) fn drain_signal_fd(&self) {
        if let Some(signals) = self.signals.borrow().as_ref() {
            sys::eventfd_drain(&signals.efd);
        }
    }

    /// Delivers the signals that arrived (SW2). Returns the number of
    /// callbacks run.
    pub(crate) fn run_signals(&self) -> i32 {
        let batch = match self.signals.borrow().as_ref() {
            Some(signals) => signals.kit.take_batch(),
            None => return 0,
        };
        reactor_sdk::signal::deliver(
            batch,
            |ev| matches!(&*ev.state.borrow(), State::Signal(s) if s.active),
        )
    }

    /// `destroy`: gives the port back (restoring dispositions it still
    /// held) and closes the eventfd.
    pub(crate) fn close_signals(&self) {
        if let Some(signals) = self.signals.borrow_mut().take() {
            let fd = signals.efd.as_raw_fd();
            let _ = self.with_mio(|mio| mio.deregister(&mut SourceFd(&fd)));
            drop(signals);
        }
    }
}
