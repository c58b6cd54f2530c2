//! Signal watches, the loop's half: the reactor's port in the process-wide
//! table (the handler's half, `async_abi::sdk::signal`, invariants SG1-SG4)
//! and the active watchers of each signal in creation order.
//!
//! # Invariants
//!
//! - **SW1** A watcher is listed under its signal exactly while its state
//!   is active; the port watches a signal exactly while that list is not
//!   empty (so the reactor owns the disposition only while it watches, and
//!   the previous one is back when the last watcher stops).
//! - **SW2** Each iteration takes the port's pending set once
//!   ([`Signals::take_batch`]) and runs one callback per active watcher of
//!   each signal in it: deliveries between two iterations coalesce into one
//!   callback per watcher. A watcher made after a delivery was taken, or
//!   stopped before its turn, is not called for it.
//!
//! # What the reactor does
//!
//! `signal_new`: [`check`], [`Signals::claim`] once (with the descriptor the
//! handler writes to wake the loop: an eventfd the loop watches, or its own
//! waker's), [`Signals::prepare`], make the event, [`Signals::add`]. Cancel,
//! close, dispose: [`Signals::remove`]. Each iteration: for each
//! `(signum, watchers)` of [`Signals::take_batch`], call back every watcher
//! still active.
//!
//! # Drop order
//!
//! Dropping [`Signals`] gives the port back: it releases its slot,
//! restoring the dispositions it held, and waits out any handler still
//! writing the wake-up descriptor (SG3), which must stay open until then.

use std::os::fd::RawFd;
use std::rc::Rc;

use async_abi::sdk::signal::{self as table, Port};
use async_abi::{AA_E_INVALID, AA_E_NOMEM};

use crate::error::{Error, Result};
use crate::traits::Event;
use crate::watch::WatchList;

/// Refuses a signal no reactor may watch (`AA_E_INVALID`, naming why).
pub fn check(signum: i32) -> Result<()> {
    match table::refusal(signum) {
        Some(why) => Err(Error::new(
            AA_E_INVALID,
            format!("signal_new: signal {signum} {why}"),
        )),
        None => Ok(()),
    }
}

/// Calls back, for each `(signum, watchers)` of a batch
/// ([`Signals::take_batch`]), every watcher still `active` and not disposed
/// (SW2), with no borrow held. Returns the number of callbacks run.
pub fn deliver<E: Event>(batch: Vec<(i32, Vec<Rc<E>>)>, active: impl Fn(&E) -> bool) -> i32 {
    let mut count = 0;
    for (signum, watchers) in batch {
        for ev in watchers {
            if active(&ev) && ev.deliverable() {
                ev.callback().notify(&*ev, 0, i64::from(signum));
                count += 1;
            }
        }
    }
    count
}

/// A reactor's signal state (see the module doc).
#[derive(Debug)]
pub struct Signals<T> {
    port: Port,
    watchers: WatchList<i32, T>,
}

impl<T> Signals<T> {
    /// Claims a port whose handler writes `wake_fd` (8 bytes, an eventfd's
    /// increment) on each delivery.
    pub fn claim(wake_fd: RawFd) -> Result<Signals<T>> {
        let port = Port::claim(wake_fd).ok_or_else(|| {
            Error::new(
                AA_E_NOMEM,
                format!(
                    "signal_new: {} reactors already watch signals",
                    table::SLOTS
                ),
            )
        })?;
        Ok(Signals {
            port,
            watchers: WatchList::default(),
        })
    }

    /// Makes the port watch `signum` if nobody watched it yet (SW1).
    pub fn prepare(&mut self, signum: i32) -> Result<()> {
        if !self.watchers.contains(signum) {
            self.port
                .watch(signum)
                .map_err(|e| Error::os(format_args!("signal_new: sigaction({signum})"), &e))?;
        }
        Ok(())
    }

    /// Lists a new watcher of `signum` (after [`Signals::prepare`]).
    pub fn add(&mut self, signum: i32, watcher: Rc<T>) {
        self.watchers.add(signum, watcher);
    }

    /// Unlists a watcher that stopped; the port stops watching a signal
    /// nobody watches any more (SW1).
    pub fn remove(&mut self, signum: i32, watcher: &Rc<T>) {
        if self.watchers.remove(signum, watcher) {
            self.port.unwatch(signum);
        }
    }

    /// The signals that arrived since the last call, each with its watchers
    /// (SW2); empty at once when none did.
    pub fn take_batch(&self) -> Vec<(i32, Vec<Rc<T>>)> {
        if !self.port.has_pending() {
            return Vec::new();
        }
        self.port
            .take_pending()
            .filter_map(|signum| Some((signum, self.watchers.get(signum)?)))
            .collect()
    }
}
