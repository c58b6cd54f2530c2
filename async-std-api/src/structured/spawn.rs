//! Starting coroutines in scopes: [`spawn`], [`spawn_try`], [`spawn_in`],
//! [`spawn_try_in`].
//!
//! Rules (the entry's are T2, T3 and SP2 in `core::entry`):
//! - **T1** `spawn` never runs the body: the spawner keeps running until it
//!   suspends (REF-1).
//! - **SP1** Every coroutine is registered in exactly one scope before it
//!   can run: the scope given (`spawn_in`), else the spawning coroutine's
//!   scope (R-S1), else the global one. A closed scope refuses (R-S4).

use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;

use async_abi::{AaStatus, AA_E_CANCELLED, AA_OK, AA_PRIORITY_HIGH, AA_PRIORITY_NORMAL};

use super::scope::{current_scope, ScopeError, ScopeRef};
use super::strategy::SpawnStrategy;
use crate::core::coroutine::Coroutine;
use crate::core::entry::try_body;
use crate::core::error::{CancelCause, Cancelled};
use crate::core::id::ScopeId;
use crate::core::join::JoinHandle;
use crate::core::runtime::{self, Runtime};
use crate::core::state::{Body, BodyResult, CoroState, Membership, HI_PRIORITY};

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
/// with [`Failure::downcast_ref`](crate::Failure::downcast_ref)). Unawaited, the failure goes through the
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
#[track_caller]
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
        let scope: Rc<dyn Membership> = match me.and_then(|m| m.scope()) {
            Some(s) => s,
            None => super::run::global(rt),
        };
        spawn_into(rt, scope, body, location)
    })
    .unwrap_or(Err(Refused::NoRuntime))
}

/// Creates and queues a coroutine in `scope` (SP1), handing it the
/// reference to its scope (the hot path: no downcast, one count).
#[inline]
fn spawn_into(
    rt: &Runtime,
    scope: Rc<dyn Membership>,
    body: Body,
    location: &'static Location<'static>,
) -> Result<Rc<CoroState>, Refused> {
    if let Some(id) = scope.closed() {
        return Err(Refused::Closed(id));
    }
    let state = rt.new_state(body, location);
    rt.sched
        .spawn(&state, rt.stack_size, location, AA_PRIORITY_NORMAL)
        .map_err(Refused::Status)?;
    scope.admit(&state);
    rt.watch_spawn(&state);
    Ok(state)
}

#[track_caller]
fn spawn_with_strategy<S: SpawnStrategy + ?Sized>(
    target: &S,
    body: Body,
    location: &'static Location<'static>,
) -> Result<Rc<CoroState>, ScopeError> {
    let scope = match target.provide_scope() {
        Some(s) => s,
        None => current_scope(),
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
        state.request_cancel(Cancelled::of(state.id(), CancelCause::Explicit, None));
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
