//! The entry logic every coroutine runs, from its body to its finish
//! accounting.
//!
//! Lifecycle (R-CO2), as the queries report it:
//!
//! ```text
//!  spawn        picked          suspend          finish
//!  ----> queued -------> running --------> suspended ...-> finished
//!          |               (cancel: is_cancellation_requested, sticky)
//!          +-- cancel before start: never runs -----------> finished, cancelled
//! ```
//!
//! Invariants:
//! - **T2** A coroutine's entry never unwinds (C3 in `core::runtime::ffi`):
//!   every panic of the body is caught and becomes the coroutine's failure;
//!   a [`ForcedUnwind`] (shutdown) becomes a cancellation with cause
//!   `Shutdown`.
//! - **T3** A coroutine whose entry gets a negative start status never runs
//!   its body; the body (and its captures) is dropped before its waiters
//!   are woken (D-23).
//! - **SP2** The end of a coroutine, in order: its body's result is turned
//!   into an outcome (a value returned after a cancellation was requested,
//!   delivered or not, makes it `Cancelled` and the value is dropped, D-11,
//!   D-25, except for the main coroutine once delivered; a `spawn_try` error
//!   holding a cancellation is a cancellation, not a failure, R-C1; any
//!   other error or a panic is a failure, even after a cancellation, D-22);
//!   `BODY_DONE` is set (I6); its `on_finally` handlers run, newest first,
//!   each once (D-12, D-23); the outcome is stored and joiners are woken,
//!   which decides whether a failure was awaited (D-3); an explicit task of
//!   a task group then tells its group (`GroupSink`), which counts as an
//!   await if the group is awaited (R-TG2); then the scope it belongs to is
//!   told (`Membership::finished`): the error flow and the scope's
//!   accounting are the layer above's.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use async_abi::{AaStatus, AA_E_DEADLOCK, AA_E_SHUTDOWN};

use super::cancel::find_cancelled;
use super::error::{CancelCause, Cancelled};
use super::failure::{panic_message, Failure, FailureOrigin};
use super::runtime;
use super::state::{
    Body, BodyResult, CoroState, Outcome, BODY_DONE, CANCEL_REQUESTED, HAS_FINALLY, IN_GROUP,
    WATCHED,
};
use super::wait::ForcedUnwind;

/// The body of a [`spawn_try`](crate::spawn_try)-style coroutine: an `Err`
/// is its failure, unless it carries a cancellation (R-C1, P-01).
pub(crate) fn try_body<F, T, E>(f: F) -> Body
where
    F: FnOnce() -> Result<T, E> + 'static,
    T: 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    Box::new(move || match f() {
        Ok(v) => BodyResult::Value(Box::new(v)),
        Err(e) => classify(e.into()),
    })
}

/// R-C1, P-01: an error carrying a cancellation is a cancellation.
fn classify(e: Box<dyn std::error::Error + Send + Sync + 'static>) -> BodyResult {
    match find_cancelled(&*e) {
        Some(c) => BodyResult::Cancelled(Box::new(c.clone())),
        None => BodyResult::Error(e),
    }
}

/// The entry logic of every coroutine (called by the FFI trampoline).
#[inline]
pub(crate) fn run_entry(state: &Rc<CoroState>, start: AaStatus) {
    if start < 0 {
        let outcome = not_started(state, start);
        return finish_unusual(state, outcome);
    }
    state.mark_started();
    let Some(body) = state.take_body() else {
        let c = Cancelled::of(state.id(), CancelCause::Explicit, None);
        return finish_unusual(state, Outcome::Cancelled(Box::new(c)));
    };
    // T2: every panic becomes a failure, a forced unwind a cancellation.
    match catch_unwind(AssertUnwindSafe(body)) {
        // The common end: a value, never cancelled, no handler.
        Ok(BodyResult::Value(value))
            if !state.has_flag(CANCEL_REQUESTED | HAS_FINALLY | IN_GROUP) =>
        {
            state.set_flag(BODY_DONE, true);
            state.finish(Outcome::Value(Some(value)));
            finished(state, None, None);
        }
        other => {
            let outcome = body_outcome(state, other);
            finish_unusual(state, outcome);
        }
    }
}

/// T3, C1, D-23: never run; the captures are dropped first.
#[cold]
#[inline(never)]
fn not_started(state: &CoroState, start: AaStatus) -> Outcome {
    let id = state.id();
    let body = state.take_body();
    if let Err(p) = catch_unwind(AssertUnwindSafe(move || drop(body))) {
        std::mem::forget(p);
    }
    let c = match start {
        AA_E_SHUTDOWN => {
            state.request_cancel(Cancelled::of(id, CancelCause::Shutdown, None));
            Cancelled::of(id, CancelCause::Shutdown, None)
        }
        AA_E_DEADLOCK => state.deadlocked(),
        _ => {
            state.request_cancel(Cancelled::of(id, CancelCause::Explicit, None));
            state
                .cancellation()
                .unwrap_or_else(|| Cancelled::of(id, CancelCause::Explicit, None))
        }
    };
    Outcome::Cancelled(Box::new(c))
}

/// The outcome of a body that did not simply return a value (SP2).
#[cold]
#[inline(never)]
fn body_outcome(
    state: &CoroState,
    result: Result<BodyResult, Box<dyn std::any::Any + Send>>,
) -> Outcome {
    let id = state.id();
    match result {
        Ok(BodyResult::Value(value)) => {
            // D-11: it returned with its cancellation undelivered; D-25: it
            // caught a delivered one and returned: either way it ends
            // cancelled and the value is dropped. The main coroutine's value
            // is `run`'s result, which nobody else awaits: it keeps it once
            // the cancellation was delivered.
            let cancelled = match state.take_pending_cancel() {
                Some(c) => Some(c),
                None if state.is_main => None,
                None => state.cancellation(),
            };
            match cancelled {
                Some(c) => match catch_unwind(AssertUnwindSafe(move || drop(value))) {
                    Ok(()) => Outcome::Cancelled(Box::new(c)),
                    // D-22: a real failure (here, the value's destructor
                    // panicking) wins over the cancellation.
                    Err(p) => Outcome::Failed(Failure::from_panic(FailureOrigin::Coroutine(id), p)),
                },
                None => Outcome::Value(Some(value)),
            }
        }
        Ok(BodyResult::Error(e)) => {
            Outcome::Failed(Failure::from_error(FailureOrigin::Coroutine(id), e))
        }
        Ok(BodyResult::Cancelled(c)) => Outcome::Cancelled(c),
        Err(payload) if payload.is::<ForcedUnwind>() => {
            state.request_cancel(Cancelled::of(id, CancelCause::Shutdown, None));
            Outcome::Cancelled(Box::new(
                state
                    .cancellation()
                    .unwrap_or_else(|| Cancelled::of(id, CancelCause::Shutdown, None)),
            ))
        }
        Err(payload) => {
            if state.is_main {
                let message = panic_message(&*payload);
                let mut payload = Some(payload);
                runtime::with_runtime(|rt| {
                    if let Some(p) = payload.take() {
                        rt.main_panicked(p);
                    }
                });
                Outcome::Failed(Failure::from_panic_message(
                    FailureOrigin::Coroutine(id),
                    message,
                ))
            } else {
                Outcome::Failed(Failure::from_panic(FailureOrigin::Coroutine(id), payload))
            }
        }
    }
}

/// SP2 from `BODY_DONE` on, for every end but the common one.
#[cold]
#[inline(never)]
fn finish_unusual(state: &Rc<CoroState>, outcome: Outcome) {
    state.set_flag(BODY_DONE, true);
    let finally_failure = run_finally(state);
    let failed = match &outcome {
        Outcome::Failed(f) if !state.is_main => Some(f.clone()),
        _ => None,
    };
    let mut awaited = state.finish(outcome);
    if state.has_flag(IN_GROUP) {
        // R-TG2: an awaited group consumes its task's failure, as a join
        // does (D-3); the group may take the value (task_group TG2).
        if let Some((group, key)) = state.with_extra(|x| x.group.take()) {
            awaited |= group.task_finished(key, state);
        }
    }
    let unawaited = if awaited { None } else { failed };
    finished(state, unawaited, finally_failure);
}

/// Runs the `on_finally` handlers once each, newest first (D-12); handlers
/// registered meanwhile run too. Their panics are collected into one
/// failure (the first, the others attached).
fn run_finally(state: &CoroState) -> Option<Failure> {
    let mut failure: Option<Failure> = None;
    loop {
        // No extra record, no handler: nothing to allocate or run.
        let Some(mut extra) = state.extra.take() else {
            break;
        };
        let handlers = std::mem::take(&mut extra.on_finally);
        state.extra.set(Some(extra));
        if handlers.is_empty() {
            break;
        }
        for h in handlers.into_iter().rev() {
            match catch_unwind(AssertUnwindSafe(h)) {
                Ok(()) => {}
                Err(p) if p.is::<ForcedUnwind>() => {}
                Err(p) => {
                    let f = Failure::from_panic(FailureOrigin::CoroutineFinally(state.id()), p);
                    match &failure {
                        Some(first) => first.attach(f),
                        None => failure = Some(f),
                    }
                }
            }
        }
    }
    failure
}

/// The finish accounting (SP2's last step): the watchdog forgets the
/// coroutine, then the scope record it belongs to is told, which runs the
/// error flow and leaves the scope (I5); a coroutine without one (never
/// placed in a scope) only drops its extra record.
#[inline]
fn finished(state: &Rc<CoroState>, unawaited: Option<Failure>, finally_failure: Option<Failure>) {
    if state.has_flag(WATCHED) {
        unwatch(state);
    }
    match state.scope.take() {
        Some(owner) => owner.finished(state, unawaited, finally_failure),
        None => state.drop_extra(),
    }
}

#[cold]
#[inline(never)]
fn unwatch(state: &CoroState) {
    runtime::with_runtime(|rt| {
        if let Some(w) = &rt.watchdog {
            w.unregister(state.id.get());
        }
    });
}
