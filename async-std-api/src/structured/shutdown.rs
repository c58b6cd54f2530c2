//! Graceful shutdown (R-GS1, R-DL1): where unhandled failures end.
//!
//! Owns nothing: the phases and the first failure live in the core runtime
//! (`core::runtime::lifecycle`); this is the policy that moves them.
//!
//! The phases are in `core::runtime::lifecycle` (GS1-GS3): this module
//! moves them forward. Phase one (GS2) is entered by the first unhandled
//! failure reaching the global scope (EF5 in `structured::scope::flow`), by
//! [`graceful_shutdown`], or by cancelling or disposing the global scope:
//! every coroutine of every scope is cancelled (cause
//! [`Shutdown`](crate::CancelCause::Shutdown), carrying the failure if one
//! started it); no scope is closed, so cleanup may spawn; the program then
//! ends naturally. Phase two (GS3) is entered by a second unhandled failure
//! during phase one (it is attached to the first), by the main coroutine
//! panicking, or by zombies that ignore their cancellation.
//!
//! What [`run`](crate::run) returns afterwards: `Err` of kind
//! [`Failed`](crate::ErrorKind::Failed) naming the first unhandled failure
//! (one line; exit status 1 from `main`); of kind
//! [`Deadlock`](crate::ErrorKind::Deadlock) after a deadlock; otherwise the
//! main coroutine's value (or [`Cancelled`](crate::ErrorKind::Cancelled) if
//! it ended cancelled).
//!
//! Who touches what: the loop thread (coroutines and reactor callbacks).

use super::scope::state::{Mode, ScopeCancel, Walk};
use crate::core::error::CancelCause;
use crate::core::events::{self, Event};
use crate::core::failure::Failure;
use crate::core::runtime::lifecycle::{self, Phase};
use crate::core::runtime::with_runtime;

/// Starts graceful shutdown from anywhere: the RFC's
/// `Async\gracefulShutdown()` (R-GS1, phase one).
///
/// Every coroutine of every scope is cancelled (cause
/// [`CancelCause::Shutdown`]); no scope is closed, so cleanup code may still
/// spawn; the program then ends naturally, and [`run`](crate::run) returns the main
/// coroutine's value (or [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) if main ended cancelled).
/// A failure nothing handles during the shutdown starts its second phase:
/// every coroutine's stack is unwound. Calling it again does nothing.
///
/// # Panics
///
/// Outside a runtime.
///
/// # Cancellation
///
/// Not a suspension point; the caller itself is cancelled too and receives
/// it at its next suspension point (D-11).
///
/// # Examples
///
/// ```
/// use async_std_api::{delay, graceful_shutdown, run, spawn, suspend, CancelCause};
///
/// let r = run(|| {
///     let worker = spawn(|| delay(60_000));
///     suspend().unwrap();
///     graceful_shutdown();
///     // main is cancelled too: its next suspension point says so, once.
///     assert_eq!(suspend().unwrap_err().cause(), CancelCause::Shutdown);
///     let c = worker.join().unwrap_err().cancelled().unwrap().clone();
///     assert_eq!(c.cause(), CancelCause::Shutdown);
///     "clean exit"
/// });
/// assert_eq!(r.unwrap(), "clean exit");
/// ```
#[track_caller]
pub fn graceful_shutdown() {
    if with_runtime(|_| ()).is_none() {
        panic!("graceful_shutdown called outside a coroutine runtime: run the program inside async_std_api::run");
    }
    graceful(None, None);
}

/// [`graceful_shutdown`] with a reason every cancelled coroutine's
/// [`Cancelled::reason`](crate::Cancelled::reason) carries.
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{check_cancelled, graceful_shutdown_with, run};
///
/// run(|| {
///     graceful_shutdown_with("SIGTERM");
///     assert_eq!(check_cancelled().unwrap_err().reason(), Some("SIGTERM"));
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn graceful_shutdown_with(reason: impl Into<String>) {
    if with_runtime(|_| ()).is_none() {
        panic!("graceful_shutdown called outside a coroutine runtime: run the program inside async_std_api::run");
    }
    graceful(Some(reason.into()), None);
}

/// EF5: a failure nothing handled reached the global scope.
pub(crate) fn unhandled_failure(f: Failure) {
    let phase = with_runtime(|rt| {
        let first = rt.lifecycle.failure.borrow().clone();
        match first {
            Some(first) => first.attach(f.clone()),
            None => *rt.lifecycle.failure.borrow_mut() = Some(f.clone()),
        }
        rt.lifecycle.phase.get()
    });
    events::emit(Event::UnhandledFailure {
        failure: f.clone(),
        started_shutdown: phase == Some(Phase::Running),
        forced_shutdown: phase == Some(Phase::Graceful),
    });
    match phase {
        Some(Phase::Running) => graceful(None, Some(f)),
        Some(Phase::Graceful) => lifecycle::force(),
        _ => {}
    }
}

/// GS2: cancels every coroutine of every scope, closes nothing. A second
/// call does nothing.
pub(crate) fn graceful(reason: Option<String>, failure: Option<Failure>) {
    with_runtime(|rt| {
        if rt.lifecycle.phase.get() != Phase::Running {
            return;
        }
        rt.lifecycle.phase.set(Phase::Graceful);
        let cancel = ScopeCancel {
            cause: CancelCause::Shutdown,
            reason,
            failure,
            origin: super::run::global(rt).id,
        };
        let global = super::run::global(rt);
        global.walk(&Walk {
            mode: Mode::Shutdown,
            cancel: &cancel,
            at: None,
        });
    });
}
