//! Starting coroutines ([`spawn`], [`spawn_try`], [`spawn_in`],
//! [`spawn_try_in`]) and the entry logic every coroutine runs, up to its
//! finish accounting.
//!
//! Rules (see also `task` T1-T3):
//! - **SP1** Every coroutine is registered in exactly one scope before it
//!   can run: the scope given (`spawn_in`), else the spawning coroutine's
//!   scope (R-S1), else the global one. A closed scope refuses (R-S4).
//! - **SP2** The end of a coroutine, in order: its body's result is turned
//!   into an outcome (a value returned after a cancellation was requested,
//!   delivered or not, makes it `Cancelled` and the value is dropped, D-11,
//!   D-25, except for the main coroutine once delivered; a `spawn_try` error
//!   holding a cancellation is a cancellation, not a failure, R-C1; any
//!   other error or a panic is a failure, even after a cancellation, D-22); `BODY_DONE` is set (I6); its
//!   `on_finally` handlers run, newest first, each once (D-12, D-23); the
//!   outcome is stored and joiners are woken, which decides whether a
//!   failure was awaited (D-3); an explicit task of a task group then tells
//!   its group, which counts as an await if the group is awaited (R-TG2);
//!   then the scope's accounting and the error flow (`scope::flow`).

use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;

use async_abi::{AaStatus, AA_E_CANCELLED, AA_E_DEADLOCK, AA_E_SHUTDOWN, AA_PRIORITY_HIGH};
use async_abi::{AA_OK, AA_PRIORITY_NORMAL};

use super::failure::{Failure, FailureOrigin};
use super::state::{
    Body, BodyResult, CoroState, Outcome, BODY_DONE, CANCEL_REQUESTED, HAS_FINALLY, HI_PRIORITY,
    IN_GROUP,
};
use super::wait::ForcedUnwind;
use super::{Coroutine, JoinHandle};
use crate::cancel::find_cancelled;
use crate::runtime::{self, Runtime};
use crate::scope::state::ScopeState;
use crate::scope::{ScopeError, ScopeId, ScopeRef};
use crate::strategy::SpawnStrategy;
use crate::{CancelCause, Cancelled};

/// Starts a new coroutine running `f` and returns a handle to join it.
///
/// The coroutine analogue of [`std::thread::spawn`] and the RFC's `spawn`:
/// the body does not run now; the caller goes on until it suspends
/// (Guaranteed: the body never runs before `spawn` returns. Currently, but
/// not guaranteed: coroutines start in spawn order, after the spawner
/// suspends). The coroutine goes to the calling coroutine's scope (R-S1;
/// the global scope from the main coroutine). The spawn location is
/// recorded for introspection and deadlock reports.
///
/// Dropping the [`JoinHandle`] detaches the coroutine: it keeps running.
/// If it panics and nobody awaits it, the panic goes through its scope's
/// error flow (handler, cancellation of the scope, responsibility points,
/// parent, and finally graceful shutdown: see [`ScopeRef::set_exception_handler`]).
///
/// # Panics
///
/// Outside a runtime ("spawn called outside a coroutine runtime: run the
/// program inside async_std_api::run"), if the current scope is closed
/// (use [`spawn_in`] to get that as an error), or if the scheduler cannot
/// create a coroutine (out of memory).
///
/// # Cancellation
///
/// `spawn` does not suspend, so it is not a cancellation point.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn};
///
/// let v = run(|| {
///     let h = spawn(|| "hello");
///     assert!(!h.is_finished()); // not started yet
///     h.join().unwrap()
/// })
/// .unwrap();
/// assert_eq!(v, "hello");
/// ```
#[track_caller]
#[inline]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let location = Location::caller();
    let body: Body = Box::new(move || BodyResult::Value(Box::new(f())));
    match spawn_here(body, location) {
        Ok(state) => JoinHandle {
            state,
            _value: PhantomData,
        },
        Err(refused) => refused.panic(),
    }
}

/// Starts a new coroutine whose body returns a `Result`: an `Err` is the
/// coroutine's *failure*, like an uncaught exception in the RFC, so `?`
/// inside the body flows the way an exception would.
///
/// Joining gives `Ok(value)`, or a [`JoinError`](crate::JoinError) whose
/// [`failure`](crate::JoinError::failure) holds the error (downcast it
/// with [`Failure::downcast_ref`]). Unawaited, the failure goes through the
/// scope's error flow, as a panic would.
///
/// One exception (R-C1, P-01): an `Err` that *is* a cancellation (a
/// [`Cancelled`], an `io::Error` carrying one, a `JoinError` that was
/// interrupted or whose coroutine was cancelled, found anywhere in the
/// error's `source()` chain) ends the coroutine *cancelled*, which is
/// suppressed, not a failure. So `delay(10)?` in a `spawn_try` body that
/// gets cancelled ends it cancelled. Wrapping the cancellation into an
/// error type that hides it (no `source()`) turns it into a failure.
///
/// # Panics
///
/// As [`spawn`].
///
/// # Cancellation
///
/// As [`spawn`].
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn_try};
///
/// run(|| {
///     let h = spawn_try(|| -> Result<u8, std::num::ParseIntError> {
///         let n: u8 = "300".parse()?;
///         Ok(n)
///     });
///     let err = h.join().unwrap_err();
///     assert!(err.is_failed() && !err.is_panic());
///     let parse = err.failure().unwrap().downcast_ref::<std::num::ParseIntError>();
///     assert!(parse.is_some());
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn spawn_try<F, T, E>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> Result<T, E> + 'static,
    T: 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    let location = Location::caller();
    match spawn_here(try_body(f), location) {
        Ok(state) => JoinHandle {
            state,
            _value: PhantomData,
        },
        Err(refused) => refused.panic(),
    }
}

/// Starts a new coroutine in the scope `target` provides, through its
/// hooks: the RFC's `spawn with $target`.
///
/// `target` is a [`Scope`](crate::Scope), a [`ScopeRef`], or any
/// [`SpawnStrategy`] (a TaskGroup, [`hi_priority`](crate::hi_priority), a
/// [`Supervisor`](crate::Supervisor)); see [`SpawnStrategy`] for the order
/// of the hooks. A plain `spawn` inside the new coroutine goes to the same
/// scope (R-S1).
///
/// # Errors
///
/// [`ScopeErrorKind::Closed`](crate::ScopeErrorKind::Closed) if the scope is
/// closed (cancelled or disposed, R-S4): nothing was created, and `f` is
/// dropped.
///
/// # Panics
///
/// Outside a runtime, or if the scheduler cannot create a coroutine; a
/// panic of a strategy hook continues here.
///
/// # Cancellation
///
/// Not a suspension point.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn_in, Scope};
///
/// run(|| {
///     let scope = Scope::new();
///     let h = spawn_in(&scope, || 6 * 7).unwrap();
///     assert_eq!(h.coroutine().scope().unwrap().id(), scope.id());
///     assert_eq!(h.join().unwrap(), 42);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn spawn_in<S, F, T>(target: &S, f: F) -> Result<JoinHandle<T>, ScopeError>
where
    S: SpawnStrategy + ?Sized,
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let location = Location::caller();
    let body: Body = Box::new(move || BodyResult::Value(Box::new(f())));
    spawn_with_strategy(target, body, location).map(|state| JoinHandle {
        state,
        _value: PhantomData,
    })
}

/// [`spawn_in`] with the spawn location given (a task group's queued task
/// keeps the location of its `queue` call).
pub(crate) fn spawn_in_at<S, F, T>(
    target: &S,
    f: F,
    location: &'static Location<'static>,
) -> Result<JoinHandle<T>, ScopeError>
where
    S: SpawnStrategy + ?Sized,
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let body: Body = Box::new(move || BodyResult::Value(Box::new(f())));
    spawn_with_strategy(target, body, location).map(|state| JoinHandle {
        state,
        _value: PhantomData,
    })
}

/// [`spawn_try`] in the scope `target` provides: see [`spawn_in`].
///
/// # Errors
///
/// As [`spawn_in`].
///
/// # Panics
///
/// As [`spawn_in`].
///
/// # Cancellation
///
/// Not a suspension point.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn_try_in, timeout, Scope, ScopeErrorKind};
///
/// run(|| {
///     let scope = Scope::new();
///     spawn_try_in(&scope, || Err::<(), _>("no database")).unwrap();
///     let err = scope.await_completion(&timeout(5_000)).unwrap_err();
///     assert_eq!(err.kind(), ScopeErrorKind::Failed);
///     assert_eq!(err.failure().unwrap().error().unwrap().to_string(), "no database");
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn spawn_try_in<S, F, T, E>(target: &S, f: F) -> Result<JoinHandle<T>, ScopeError>
where
    S: SpawnStrategy + ?Sized,
    F: FnOnce() -> Result<T, E> + 'static,
    T: 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    let location = Location::caller();
    spawn_with_strategy(target, try_body(f), location).map(|state| JoinHandle {
        state,
        _value: PhantomData,
    })
}

fn try_body<F, T, E>(f: F) -> Body
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

/// Why a spawn was refused (small: the hot path returns it by value).
pub(crate) enum Refused {
    NoRuntime,
    Closed(ScopeId),
    Status(AaStatus),
}

impl Refused {
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn panic(self) -> ! {
        match self {
            Refused::NoRuntime => panic!(
                "spawn called outside a coroutine runtime: run the program inside async_std_api::run"
            ),
            Refused::Closed(id) => panic!(
                "{} (use spawn_in to handle it as an error)",
                ScopeError::closed(id)
            ),
            Refused::Status(s) => panic!(
                "cannot spawn a coroutine: the scheduler refused ({})",
                runtime::status_text(s)
            ),
        }
    }
}

/// The plain spawn (SP1): in the running coroutine's scope.
#[inline]
fn spawn_here(body: Body, location: &'static Location<'static>) -> Result<Rc<CoroState>, Refused> {
    runtime::with_current(|rt, me| {
        let scope = match me.and_then(|m| m.scope()) {
            Some(s) => s,
            None => rt.global.clone(),
        };
        spawn_into(rt, &scope, body, location)
    })
    .unwrap_or(Err(Refused::NoRuntime))
}

/// Creates and queues a coroutine in `scope` (SP1).
#[inline]
fn spawn_into(
    rt: &Runtime,
    scope: &Rc<ScopeState>,
    body: Body,
    location: &'static Location<'static>,
) -> Result<Rc<CoroState>, Refused> {
    if scope.is_closed() {
        return Err(Refused::Closed(scope.id));
    }
    let state = rt.new_state(body, location);
    rt.sched
        .spawn(&state, rt.stack_size, location, AA_PRIORITY_NORMAL)
        .map_err(Refused::Status)?;
    scope.add_member(&state);
    rt.watch_spawn(&state);
    Ok(state)
}

fn spawn_with_strategy<S: SpawnStrategy + ?Sized>(
    target: &S,
    body: Body,
    location: &'static Location<'static>,
) -> Result<Rc<CoroState>, ScopeError> {
    let scope = match target.provide_scope() {
        Some(s) => s,
        None => crate::scope::current_scope(),
    };
    let scope_ref = ScopeRef {
        state: scope.state.clone(),
    };
    let opts = target.spawn_options(&scope_ref);
    let priority = if opts.hi_priority {
        AA_PRIORITY_HIGH
    } else {
        AA_PRIORITY_NORMAL
    };
    let created = runtime::with_runtime(|rt| {
        let s = &scope.state;
        if s.is_closed() {
            return Err(Refused::Closed(s.id));
        }
        let state = rt.new_state(body, location);
        rt.sched
            .create_coroutine(&state, rt.stack_size, location, priority)
            .map_err(Refused::Status)?;
        state.set_flag(HI_PRIORITY, opts.hi_priority);
        s.add_member(&state);
        rt.watch_spawn(&state);
        Ok(state)
    })
    .unwrap_or(Err(Refused::NoRuntime));
    let state = match created {
        Ok(state) => state,
        Err(Refused::Closed(id)) => return Err(ScopeError::closed(id)),
        Err(other) => other.panic(),
    };
    let coroutine = Coroutine {
        state: state.clone(),
    };
    let hook = catch_unwind(AssertUnwindSafe(|| {
        target.before_coroutine_enqueue(&coroutine, &scope_ref)
    }));
    if let Err(p) = hook {
        // Never run it: its body (and captures) are dropped by its entry.
        state.request_cancel(Cancelled::new(state.id(), CancelCause::Explicit, None));
        runtime::with_runtime(|rt| rt.sched.enqueue(&state, AA_E_CANCELLED));
        resume_unwind(p);
    }
    let status = runtime::with_runtime(|rt| rt.sched.enqueue(&state, AA_OK)).unwrap_or(AA_OK);
    if status < 0 {
        Refused::Status(status).panic();
    }
    target.after_coroutine_enqueue(&coroutine, &scope_ref);
    Ok(state)
}

// ---- the entry (SP2) ----

/// The entry logic of every coroutine (called by the FFI trampoline).
#[inline]
pub(crate) fn run_entry(state: &Rc<CoroState>, start: AaStatus) {
    if start < 0 {
        let outcome = not_started(state, start);
        return finish_unusual(state, outcome);
    }
    state.mark_started();
    let Some(body) = state.take_body() else {
        let c = Cancelled::new(state.id(), CancelCause::Explicit, None);
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
            crate::scope::flow::coroutine_finished(state, None, None);
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
            state.request_cancel(Cancelled::new(id, CancelCause::Shutdown, None));
            Cancelled::new(id, CancelCause::Shutdown, None)
        }
        AA_E_DEADLOCK => state.deadlocked(),
        _ => {
            state.request_cancel(Cancelled::new(id, CancelCause::Explicit, None));
            state
                .cancellation()
                .unwrap_or_else(|| Cancelled::new(id, CancelCause::Explicit, None))
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
            state.request_cancel(Cancelled::new(id, CancelCause::Shutdown, None));
            Outcome::Cancelled(Box::new(
                state
                    .cancellation()
                    .unwrap_or_else(|| Cancelled::new(id, CancelCause::Shutdown, None)),
            ))
        }
        Err(payload) => {
            if state.is_main {
                let message = super::failure::panic_message(&*payload);
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
    crate::scope::flow::coroutine_finished(state, unawaited, finally_failure);
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
