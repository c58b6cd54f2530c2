//! The runtime's shutdown phase and what ended the run: the state that
//! graceful shutdown (`structured::shutdown`, R-GS1) moves forward and the
//! core acts on.
//!
//! Phases (only ever forward):
//! 1. **GS1 Running.**
//! 2. **GS2 Graceful** (phase one): every coroutine was cancelled once;
//!    spawning still works. Entered by the layer above (an unhandled
//!    failure, `graceful_shutdown`, the global scope cancelled) or by a
//!    deadlock ([`deadlock_seen`], R-DL1: the scheduler already resumed
//!    every waiter with `AA_E_DEADLOCK`).
//! 3. **GS3 Forced** (phase two), entered by [`force`]: every live coroutine
//!    is marked *forced* (its cancellation stays pending and its next
//!    suspension point unwinds its stack; `protect` does not defer it,
//!    REF-8; an I/O wait first lets the reactor finish with the buffer,
//!    IO1), and the scheduler's `shutdown(AA_E_SHUTDOWN)` resumes every
//!    coroutine (locals dropped: timers disposed, I/O requests cancelled and
//!    waited for, descriptors closed). The mark matters: a coroutine already
//!    queued with `AA_E_CANCELLED` keeps that status and could otherwise
//!    wait again, or loop, forever.
//!
//! Who touches what: the loop thread (coroutines and reactor callbacks).

use std::cell::{Cell, RefCell};

use async_abi::AA_E_SHUTDOWN;

use super::{with_runtime, Runtime};
use crate::core::failure::Failure;

/// The shutdown phase (GS1-GS3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Running,
    Graceful,
    Forced,
}

/// The runtime's shutdown state.
pub(crate) struct Lifecycle {
    pub(crate) phase: Cell<Phase>,
    /// The first unhandled failure; later ones are attached to it.
    pub(crate) failure: RefCell<Option<Failure>>,
    /// A deadlock was resolved.
    pub(crate) deadlock: Cell<bool>,
}

impl Lifecycle {
    pub(crate) fn new() -> Lifecycle {
        Lifecycle {
            phase: Cell::new(Phase::Running),
            failure: RefCell::new(None),
            deadlock: Cell::new(false),
        }
    }
}

/// GS3: every live coroutine is marked forced (its next suspension point
/// unwinds it, whatever status a wake-up carries: one already queued with
/// `AA_E_CANCELLED` keeps that status), then the scheduler resumes them all
/// with `AA_E_SHUTDOWN` (and starts new ones with it). A second call does
/// nothing.
pub(crate) fn force() {
    with_runtime(|rt| {
        if rt.lifecycle.phase.replace(Phase::Forced) == Phase::Forced {
            return;
        }
        force_all(rt);
    });
}

/// GS3's two steps, also for a panic of the main coroutine.
pub(crate) fn force_all(rt: &Runtime) {
    for c in rt.sched.live_coroutines() {
        c.force_shutdown();
    }
    let _ = rt.sched.shutdown(AA_E_SHUTDOWN);
}

/// R-DL1: the scheduler resolved a deadlock (it resumed every waiter with
/// `AA_E_DEADLOCK`): the runtime is in graceful shutdown from now on.
pub(crate) fn deadlock_seen() {
    with_runtime(|rt| {
        rt.lifecycle.deadlock.set(true);
        if rt.lifecycle.phase.get() == Phase::Running {
            rt.lifecycle.phase.set(Phase::Graceful);
        }
    });
}
