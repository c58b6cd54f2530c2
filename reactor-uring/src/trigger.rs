//! Cross-thread triggers and the reactor's waker: the only state another
//! thread may touch.
//!
//! # What this module owns
//!
//! - [`Waker`]: the reactor's own eventfd, read by a hidden ring op; `wake`
//!   writes it.
//! - [`TriggerShared`]: one trigger's eventfd and its `fired` and `closed`
//!   flags, behind an `Arc` held by the trigger's event.
//!
//! # Invariants
//!
//! - **T1** `fired` goes false -> true only in [`TriggerShared::fire`],
//!   which then writes the eventfd once; it goes true -> false only on the
//!   loop, when the eventfd read completes, *before* the callback runs. So
//!   fires before the loop notices coalesce into one eventfd write and one
//!   callback, and a fire during or after the callback produces another.
//! - **T2** `fire` never blocks and never allocates: a swap, and at most
//!   one non-blocking `write(2)` of 8 bytes (an eventfd at its maximum
//!   already wakes its reader, so `EAGAIN` is success).
//! - **T3** `closed` is set by the loop when the trigger is cancelled,
//!   closed or disposed; a later `fire` does nothing and says so
//!   (`AA_E_CLOSED`).
//! - **T4** The eventfd stays open as long as the `TriggerShared`, which the
//!   event holds: while a thread may fire the trigger (the host keeps it
//!   undisposed, ABI), and while the ring may read it (the read op holds the
//!   event, ops invariant O1). It is never closed under a writer or reader.
//!
//! # Access
//!
//! `fire` and `Waker::wake` from any thread; everything else on the loop
//! thread.
//!
//! # Drop order
//!
//! The eventfd is closed when the `TriggerShared` (or the `Waker`) drops,
//! which is after the event (or the reactor) is freed.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_abi::{AaStatus, AA_EVENT_TRIGGER, AA_EVF_HIDDEN, AA_E_CLOSED, AA_OK};

use crate::error::{neg_errno, Error, Result};
use crate::event::{Event, State, TriggerState};
use crate::ffi::HostCallback;
use crate::ops::sys;
use crate::reactor::{check_flags, Reactor};

/// The reactor's waker: an eventfd the loop always has a read on.
#[derive(Debug)]
pub(crate) struct Waker {
    efd: OwnedFd,
}

impl Waker {
    /// A new waker.
    pub(crate) fn new() -> io::Result<Waker> {
        Ok(Waker {
            efd: sys::eventfd()?,
        })
    }

    /// Its eventfd.
    pub(crate) fn fd(&self) -> RawFd {
        self.efd.as_raw_fd()
    }

    /// Interrupts a blocking `run_once`; coalescing (the eventfd counter),
    /// never blocks, never allocates. `[any]`
    pub(crate) fn wake(&self) -> io::Result<()> {
        sys::eventfd_write(self.fd())
    }
}

/// One trigger's thread-safe state (see the module doc).
#[derive(Debug)]
pub(crate) struct TriggerShared {
    efd: OwnedFd,
    fired: AtomicBool,
    closed: AtomicBool,
}

impl TriggerShared {
    fn new() -> io::Result<TriggerShared> {
        Ok(TriggerShared {
            efd: sys::eventfd()?,
            fired: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        })
    }

    /// Its eventfd.
    pub(crate) fn fd(&self) -> RawFd {
        self.efd.as_raw_fd()
    }

    /// Fires the trigger: coalescing, no allocation (T1, T2). `[any]`
    pub(crate) fn fire(&self) -> AaStatus {
        if self.closed.load(Ordering::Acquire) {
            return AA_E_CLOSED;
        }
        if self.fired.swap(true, Ordering::AcqRel) {
            return AA_OK;
        }
        match sys::eventfd_write(self.fd()) {
            Ok(()) => AA_OK,
            Err(e) => neg_errno(&e),
        }
    }

    /// Clears `fired` once the loop saw the eventfd (T1): acquires what the
    /// firing thread wrote before `fire`.
    pub(crate) fn take_fired(&self) -> bool {
        self.fired.swap(false, Ordering::AcqRel)
    }

    /// Marks the trigger closed (T3). Loop thread.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

impl Reactor {
    /// `trigger_new`: an eventfd with a read in the ring.
    pub(crate) fn trigger_new(&self, flags: u32, callback: HostCallback) -> Result<Rc<Event>> {
        check_flags("trigger_new", flags, AA_EVF_HIDDEN)?;
        let shared = TriggerShared::new().map_err(|e| Error::os("trigger_new: eventfd", &e))?;
        let fd = shared.fd();
        let ev = self.new_event(
            AA_EVENT_TRIGGER,
            flags,
            callback,
            Some(Arc::new(shared)),
            State::Trigger(TriggerState {
                open: true,
                op: None,
            }),
        );
        let key = self.arm_eventfd(Some(&ev), fd);
        if let State::Trigger(t) = &mut *ev.state.borrow_mut() {
            t.op = Some(key);
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// Ends an open trigger (cancel, close, dispose): no more fires (T3),
    /// and its read is cancelled. Returns whether it was open.
    pub(crate) fn end_trigger(&self, ev: &Event) -> bool {
        let (was_open, key) = match &mut *ev.state.borrow_mut() {
            State::Trigger(t) => (std::mem::replace(&mut t.open, false), t.op),
            _ => (false, None),
        };
        if let Some(shared) = &ev.trigger {
            shared.close();
        }
        if let Some(key) = key {
            // A read the kernel never saw is simply retired: it has nothing
            // to report.
            let _ = self.cancel_op(key);
        }
        self.touch(ev);
        was_open
    }
}
