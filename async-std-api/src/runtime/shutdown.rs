//! Graceful shutdown (R-GS1, R-DL1): where unhandled failures end.
//!
//! Owns: the runtime's shutdown phase and the failure that started it.
//!
//! Phases (only ever forward):
//! 1. **GS1 Running.**
//! 2. **GS2 Graceful** (phase one), entered by the first unhandled failure
//!    reaching the global scope (EF5 in `scope::flow`), by
//!    [`graceful_shutdown`](crate::graceful_shutdown), by cancelling or
//!    disposing the global scope, or by a deadlock (R-DL1: the scheduler
//!    already resumed every waiter with `AA_E_DEADLOCK`). Every coroutine of
//!    every scope is cancelled (cause [`Shutdown`](crate::CancelCause::Shutdown),
//!    carrying the failure if one started it); no scope is closed, so
//!    cleanup may spawn; the program then ends naturally.
//! 3. **GS3 Forced** (phase two), entered by a second unhandled failure
//!    during phase one (it is attached to the first), by the main
//!    coroutine panicking, or by zombies that ignore their cancellation:
//!    every live coroutine is marked *forced* (its cancellation stays
//!    pending and its next suspension point unwinds its stack; `protect`
//!    does not defer it, REF-8; an I/O wait first lets the reactor finish
//!    with the buffer, IO1), and the scheduler's `shutdown(AA_E_SHUTDOWN)`
//!    resumes every coroutine (locals dropped: timers disposed, I/O
//!    requests cancelled and waited for, descriptors closed). The mark
//!    matters: a coroutine already queued with `AA_E_CANCELLED` keeps that
//!    status and could otherwise wait again, or loop, forever.
//!
//! What [`run`](crate::run) returns afterwards: `Err` of kind
//! [`Failed`](crate::ErrorKind::Failed) naming the first unhandled failure
//! (one line; exit status 1 from `main`); of kind
//! [`Deadlock`](crate::ErrorKind::Deadlock) after a deadlock; otherwise the
//! main coroutine's value (or [`Cancelled`](crate::ErrorKind::Cancelled) if
//! it ended cancelled).
//!
//! Who touches what: the loop thread (coroutines and reactor callbacks).

use std::cell::{Cell, RefCell};

use async_abi::AA_E_SHUTDOWN;

use super::with_runtime;
use crate::scope::state::{Mode, ScopeCancel, Walk};
use crate::task::failure::Failure;
use crate::CancelCause;

/// The shutdown phase (GS1-GS3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Running,
    Graceful,
    Forced,
}

/// The runtime's shutdown state.
pub(crate) struct Shutdown {
    pub(crate) phase: Cell<Phase>,
    /// The first unhandled failure.
    pub(crate) failure: RefCell<Option<Failure>>,
    /// A deadlock was resolved.
    pub(crate) deadlock: Cell<bool>,
}

impl Shutdown {
    pub(crate) fn new() -> Shutdown {
        Shutdown {
            phase: Cell::new(Phase::Running),
            failure: RefCell::new(None),
            deadlock: Cell::new(false),
        }
    }
}

/// EF5: a failure nothing handled reached the global scope.
pub(crate) fn unhandled_failure(f: Failure) {
    let shown = f.clone();
    let handled = with_runtime(move |rt| {
        let first = rt.shutdown.failure.borrow().clone();
        match first {
            Some(first) => first.attach(f.clone()),
            None => *rt.shutdown.failure.borrow_mut() = Some(f.clone()),
        }
        match rt.shutdown.phase.get() {
            Phase::Running => {
                tracing::error!(
                    target: "async_std_api::runtime",
                    "unhandled failure: {f}: graceful shutdown"
                );
                graceful(None, Some(f));
            }
            Phase::Graceful => {
                tracing::error!(
                    target: "async_std_api::runtime",
                    "unhandled failure during graceful shutdown: {f}: forcing the shutdown"
                );
                force();
            }
            Phase::Forced => {
                tracing::error!(target: "async_std_api::runtime", "unhandled failure: {f}");
            }
        }
    });
    if handled.is_none() {
        tracing::error!(target: "async_std_api::runtime", "unhandled failure: {shown}");
    }
}

/// GS2: cancels every coroutine of every scope, closes nothing. A second
/// call does nothing.
pub(crate) fn graceful(reason: Option<String>, failure: Option<Failure>) {
    with_runtime(|rt| {
        if rt.shutdown.phase.get() != Phase::Running {
            return;
        }
        rt.shutdown.phase.set(Phase::Graceful);
        let cancel = ScopeCancel {
            cause: CancelCause::Shutdown,
            reason,
            failure,
            origin: rt.global.id,
        };
        let global = rt.global.clone();
        global.walk(&Walk {
            mode: Mode::Shutdown,
            cancel: &cancel,
            at: None,
        });
    });
}

/// GS3: every live coroutine is marked forced (its next suspension point
/// unwinds it, whatever status a wake-up carries: one already queued with
/// `AA_E_CANCELLED` keeps that status), then the scheduler resumes them all
/// with `AA_E_SHUTDOWN` (and starts new ones with it).
pub(crate) fn force() {
    with_runtime(|rt| {
        if rt.shutdown.phase.replace(Phase::Forced) == Phase::Forced {
            return;
        }
        force_all(rt);
    });
}

/// GS3's two steps, also for a panic of the main coroutine.
pub(crate) fn force_all(rt: &super::Runtime) {
    for c in rt.sched.live_coroutines() {
        c.force_shutdown();
    }
    let _ = rt.sched.shutdown(AA_E_SHUTDOWN);
}

/// R-DL1: the scheduler resolved a deadlock (it resumed every waiter with
/// `AA_E_DEADLOCK`): the runtime is in graceful shutdown from now on.
pub(crate) fn deadlock_seen() {
    with_runtime(|rt| {
        rt.shutdown.deadlock.set(true);
        if rt.shutdown.phase.get() == Phase::Running {
            rt.shutdown.phase.set(Phase::Graceful);
        }
    });
}
