//! Coroutines: [`spawn`], [`JoinHandle`], [`Coroutine`], [`current`],
//! [`suspend`], and the entry logic every coroutine runs.
//!
//! Invariants (see also `state` I1-I4 and `wait` W1-W4):
//! - **T1** `spawn` never runs the body: the spawner keeps running until it
//!   suspends (REF-1).
//! - **T2** A coroutine's entry never unwinds (C3): every panic of the body
//!   is caught and becomes the coroutine's failure; a [`ForcedUnwind`]
//!   (shutdown) becomes a cancellation with cause `Shutdown`.
//! - **T3** A coroutine whose entry gets a negative start status never runs
//!   its body; the body (and its captures) is dropped before its waiters
//!   are woken (D-23).

pub(crate) mod error;
pub(crate) mod state;
pub(crate) mod wait;

use std::fmt;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;

use async_abi::{AaStatus, AA_CORO_QUEUED, AA_CORO_SUSPENDED, AA_E_DEADLOCK, AA_E_SHUTDOWN, AA_OK};

use error::{panic_message, Failure};
pub use error::{CancelCause, Cancelled, JoinError};
use state::{Body, CoroState, Outcome};
pub(crate) use wait::ForcedUnwind;
use wait::{join_what, wait_for, with_me, WaitEnd, JOIN_WHAT_CAP};

use crate::awaitable::Awaitable;
use crate::runtime;

/// A coroutine's id: unique for the runtime's lifetime, never 0.
///
/// Displays as the bare number (`17`), as in the deadlock report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoroutineId(pub(crate) u64);

impl CoroutineId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for CoroutineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The entry logic of every coroutine (called by the FFI trampoline).
pub(crate) fn run_entry(state: &Rc<CoroState>, start: AaStatus) {
    let id = state.id();
    if start < 0 {
        // T3 / C1: never run; drop the captures first.
        let body = state.take_body();
        if let Err(p) = catch_unwind(AssertUnwindSafe(move || drop(body))) {
            std::mem::forget(p);
        }
        let cancelled = match start {
            AA_E_SHUTDOWN => {
                state.request_cancel(CancelCause::Shutdown, None);
                Cancelled::new(id, CancelCause::Shutdown, None)
            }
            AA_E_DEADLOCK => state.deadlocked(),
            _ => {
                state.request_cancel(CancelCause::Explicit, None);
                state
                    .cancellation()
                    .unwrap_or_else(|| Cancelled::new(id, CancelCause::Explicit, None))
            }
        };
        state.finish(Outcome::Failed(Rc::new(Failure::Cancelled(cancelled))));
        return;
    }
    state.mark_started();
    let Some(body) = state.take_body() else {
        return;
    };
    // T2.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => state.finish(Outcome::Value(Some(value))),
        Err(payload) if payload.is::<ForcedUnwind>() => {
            state.request_cancel(CancelCause::Shutdown, None);
            let c = Cancelled::new(id, CancelCause::Shutdown, None);
            state.finish(Outcome::Failed(Rc::new(Failure::Cancelled(c))));
        }
        Err(payload) => {
            let message = panic_message(&*payload);
            let payload = if state.is_main {
                let mut payload = Some(payload);
                runtime::with_runtime(|rt| {
                    if let Some(p) = payload.take() {
                        rt.main_panicked(p);
                    }
                });
                None
            } else {
                Some(payload)
            };
            let failure = Failure::Panic {
                message,
                payload: std::cell::RefCell::new(payload),
            };
            state.finish(Outcome::Failed(Rc::new(failure)));
        }
    }
}

/// Starts a new coroutine running `f` and returns a handle to join it.
///
/// The coroutine analogue of [`std::thread::spawn`] and the RFC's `spawn`:
/// the body does not run now; the caller goes on until it suspends
/// (Guaranteed: the body never runs before `spawn` returns. Currently, but
/// not guaranteed: coroutines start in spawn order, after the spawner
/// suspends). The spawn location is recorded for introspection and deadlock
/// reports.
///
/// Dropping the [`JoinHandle`] detaches the coroutine: it keeps running.
///
/// # Panics
///
/// Outside a runtime ("spawn called outside a coroutine runtime: run the
/// program inside async_std_api::run"), or if the scheduler cannot create a
/// coroutine (out of memory).
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
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let location = Location::caller();
    let spawned = runtime::with_runtime(|rt| {
        let body: Body = Box::new(move || Box::new(f()) as Box<dyn std::any::Any>);
        let state = rt.new_state(body, location);
        rt.sched
            .spawn(&state, rt.stack_size, location)
            .map(|()| state)
    });
    match spawned {
        Some(Ok(state)) => JoinHandle {
            state,
            _value: PhantomData,
        },
        Some(Err(status)) => spawn_refused(status),
        None => panic!(
            "spawn called outside a coroutine runtime: run the program inside async_std_api::run"
        ),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn spawn_refused(status: AaStatus) -> ! {
    panic!(
        "cannot spawn a coroutine: the scheduler refused ({})",
        runtime::status_text(status)
    )
}

/// The running coroutine.
///
/// The RFC's `currentCoroutine()`. The main function given to
/// [`run`](crate::run) is a coroutine too.
///
/// # Panics
///
/// Outside a coroutine, with a message naming the fix.
///
/// # Examples
///
/// ```
/// use async_std_api::{current, run, spawn};
///
/// run(|| {
///     let h = spawn(|| current().id());
///     let id = h.id();
///     assert_eq!(h.join().unwrap(), id);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn current() -> Coroutine {
    with_me("current", |_, me| Coroutine { state: me.clone() })
}

/// Yields: lets every other runnable coroutine run, then continues.
///
/// The RFC's `suspend` (and `std::thread::yield_now`). With no other
/// runnable coroutine it returns at once (R-CO3).
///
/// # Errors
///
/// [`Cancelled`] if the calling coroutine was cancelled before or while it
/// yielded.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point: a pending cancellation is returned as `Err`, once.
///
/// # Examples
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use async_std_api::{run, spawn, suspend};
///
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let l = log.clone();
/// run(move || {
///     let l2 = l.clone();
///     spawn(move || l2.borrow_mut().push("child"));
///     l.borrow_mut().push("main before");
///     suspend().unwrap();
///     l.borrow_mut().push("main after");
/// })
/// .unwrap();
/// assert_eq!(*log.borrow(), ["main before", "child", "main after"]);
/// ```
#[track_caller]
#[inline]
pub fn suspend() -> Result<(), Cancelled> {
    let at = Location::caller();
    // The hot path returns a status only; the rare outcomes (a pending
    // cancellation, an error status) are built out of line.
    let status = with_me("suspend", |rt, me| {
        if me.has_pending_cancel() {
            return wait::PENDING_CANCEL;
        }
        rt.sched.yield_now(me, b"suspend", at)
    });
    if status >= AA_OK {
        return Ok(());
    }
    wait::not_resumed_ok(status)
}

/// Waits for `target` (and `until`), then reads its outcome without taking
/// the value.
fn wait_state(
    target: &Rc<CoroState>,
    until: Option<&dyn Awaitable>,
    at: &'static Location<'static>,
) -> Result<(), JoinError> {
    wait_end(target, until, at)?;
    outcome_of(target)
}

/// Waits for `target` to finish (or `until`); the errors are the waiter's
/// own (interrupted, await-cancelled), not the target's outcome.
#[inline]
fn wait_end(
    target: &Rc<CoroState>,
    until: Option<&dyn Awaitable>,
    at: &'static Location<'static>,
) -> Result<(), JoinError> {
    let id = target.id();
    if until.is_none() && target.is_finished() {
        // REF-4: no suspension, no scheduler round trip. (W1 still applies
        // below when a wait is needed.)
        if let Some(Some(c)) = runtime::with_running(|_, me| me.take_pending_cancel()) {
            return Err(JoinError::interrupted(id, c));
        }
        return Ok(());
    }
    let end = with_me("join", |rt, me| {
        assert!(
            !Rc::ptr_eq(me, target),
            "a coroutine cannot wait for itself (coroutine {id})"
        );
        let done = &target.done;
        match until {
            None => {
                let mut buf = [0; JOIN_WHAT_CAP];
                wait_for(rt, me, done, None, join_what(id.0, &mut buf), at)
            }
            Some(u) => {
                let what = format!("join coroutine {id} until {}", u.describe());
                wait_for(rt, me, done, Some(u.completion()), what.as_bytes(), at)
            }
        }
    });
    match end {
        WaitEnd::Done => Ok(()),
        WaitEnd::Trigger => Err(JoinError::await_cancelled(id)),
        WaitEnd::Interrupted(c) => Err(JoinError::interrupted(id, c)),
    }
}

fn outcome_of(target: &CoroState) -> Result<(), JoinError> {
    let id = target.id();
    match target.with_outcome(|o| match o {
        Outcome::Value(_) => None,
        Outcome::Failed(f) => Some(f.clone()),
    }) {
        Some(Some(f)) => Err(JoinError::failed(id, f)),
        _ => Ok(()),
    }
}

/// An owned permission to join a coroutine: get its value, or why it has
/// none.
///
/// The coroutine analogue of [`std::thread::JoinHandle`]. It is not `Clone`
/// (the value can be taken once); [`coroutine`](JoinHandle::coroutine) gives
/// a cloneable, untyped [`Coroutine`] for observing and cancelling.
///
/// Dropping a `JoinHandle` detaches the coroutine: it keeps running, and
/// its value is dropped when it finishes.
///
/// # Examples
///
/// ```
/// use async_std_api::{delay, run, spawn};
///
/// run(|| {
///     let h = spawn(|| {
///         delay(10).unwrap();
///         7
///     });
///     assert_eq!(h.join().unwrap(), 7);
/// })
/// .unwrap();
/// ```
pub struct JoinHandle<T> {
    state: Rc<CoroState>,
    _value: PhantomData<T>,
}

impl<T: 'static> JoinHandle<T> {
    /// Waits for the coroutine to finish and returns its value: the RFC's
    /// `await $coroutine`.
    ///
    /// Returns at once, without suspending, if it has already finished
    /// (REF-4).
    ///
    /// # Errors
    ///
    /// [`JoinError::is_panic`] if it panicked; [`JoinError::is_cancelled`]
    /// if it was cancelled before it produced a value;
    /// [`JoinError::is_interrupted`] if the *calling* coroutine was
    /// cancelled while it waited (the awaited one goes on running).
    ///
    /// # Panics
    ///
    /// If a coroutine joins itself, or outside a coroutine when the target
    /// has not finished.
    ///
    /// # Cancellation
    ///
    /// A cancellation point: the caller's pending cancellation wins over an
    /// outcome (D-20) and is returned as `is_interrupted()`. The awaited
    /// coroutine is not cancelled; join it again later if needed (through
    /// [`coroutine`](JoinHandle::coroutine), since `join` consumed the
    /// handle, or use [`wait_until`](JoinHandle::wait_until) first).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, spawn};
    ///
    /// run(|| {
    ///     let h = spawn(|| 1 + 1);
    ///     assert_eq!(h.join().unwrap(), 2);
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T, JoinError> {
        wait_end(&self.state, None, Location::caller())?;
        self.take_result()
    }

    /// Waits for the coroutine, but no longer than until `until` completes:
    /// the RFC's `await $coroutine until $trigger`.
    ///
    /// # Errors
    ///
    /// As [`join`](JoinHandle::join), plus [`JoinError::is_await_cancelled`]
    /// if `until` completed first. That is not a cancellation (D-19): the
    /// awaited coroutine keeps running (R-AU3); keep a
    /// [`Coroutine`] from [`coroutine`](JoinHandle::coroutine) to observe or
    /// cancel it, or use [`wait_until`](JoinHandle::wait_until), which keeps
    /// the handle.
    ///
    /// # Panics
    ///
    /// As [`join`](JoinHandle::join).
    ///
    /// # Cancellation
    ///
    /// As [`join`](JoinHandle::join); when several causes are ready at
    /// once, the caller's cancellation wins, then the coroutine's outcome,
    /// then the trigger (D-20).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn, timeout};
    ///
    /// run(|| {
    ///     let slow = spawn(|| delay(1000).is_ok());
    ///     let c = slow.coroutine();
    ///     let err = slow.join_until(&timeout(10)).unwrap_err();
    ///     assert!(err.is_await_cancelled());
    ///     assert!(!c.is_finished());
    ///     c.cancel(); // we no longer need it
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn join_until(self, until: &impl Awaitable) -> Result<T, JoinError> {
        wait_end(&self.state, Some(until), Location::caller())?;
        self.take_result()
    }

    /// Waits like [`join_until`](JoinHandle::join_until) but does not take
    /// the value, so the coroutine can be joined again afterwards.
    ///
    /// # Errors
    ///
    /// As [`join_until`](JoinHandle::join_until).
    ///
    /// # Panics
    ///
    /// As [`join`](JoinHandle::join).
    ///
    /// # Cancellation
    ///
    /// As [`join_until`](JoinHandle::join_until).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn, timeout};
    ///
    /// run(|| {
    ///     let h = spawn(|| {
    ///         delay(50).unwrap();
    ///         "late"
    ///     });
    ///     assert!(h.wait_until(&timeout(1)).unwrap_err().is_await_cancelled());
    ///     assert_eq!(h.join().unwrap(), "late");
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn wait_until(&self, until: &impl Awaitable) -> Result<(), JoinError> {
        wait_state(&self.state, Some(until), Location::caller())
    }

    /// The outcome of the finished coroutine: its value (taken: only the
    /// handle can, once) or its failure.
    fn take_result(self) -> Result<T, JoinError> {
        let state = self.state;
        let taken = state.with_outcome(|o| match o {
            Outcome::Value(v) => Ok(v.take()),
            Outcome::Failed(f) => Err(f.clone()),
        });
        let result = match taken {
            Some(Ok(Some(v))) => match v.downcast::<T>() {
                Ok(v) => Ok(*v),
                Err(_) => unreachable!("a coroutine's value has its JoinHandle's type"),
            },
            Some(Err(f)) => Err(JoinError::failed(state.id(), f)),
            _ => unreachable!("a finished coroutine's value is taken once, by its JoinHandle"),
        };
        runtime::recycle_state(state);
        result
    }

    /// Requests the coroutine's cancellation; see [`Coroutine::cancel`].
    pub fn cancel(&self) {
        crate::cancel::cancel(&self.state, None);
    }

    /// An untyped, cloneable handle to the same coroutine.
    pub fn coroutine(&self) -> Coroutine {
        Coroutine {
            state: self.state.clone(),
        }
    }

    /// The coroutine's id.
    pub fn id(&self) -> CoroutineId {
        self.state.id()
    }

    /// True once the coroutine has finished (its value or failure is
    /// ready: `join` will not suspend).
    pub fn is_finished(&self) -> bool {
        self.state.is_finished()
    }
}

impl<T> JoinHandle<T> {
    pub(crate) fn coroutine_state(&self) -> &CoroState {
        &self.state
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.state.id())
            .field("finished", &self.state.is_finished())
            .finish()
    }
}

/// A coroutine, untyped and cloneable: the RFC's `Coroutine` object.
///
/// Obtained from [`JoinHandle::coroutine`] or [`current`]. It observes
/// ([`is_suspended`](Coroutine::is_suspended), ...), cancels and waits, but
/// cannot take the value (only the [`JoinHandle`] can). Dropping it does
/// nothing to the coroutine.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn, suspend};
///
/// run(|| {
///     let c = spawn(|| suspend().is_ok()).coroutine();
///     assert!(c.is_queued() && !c.is_started());
///     c.wait().unwrap();
///     assert!(c.is_finished() && !c.is_cancelled());
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct Coroutine {
    pub(crate) state: Rc<CoroState>,
}

impl Coroutine {
    /// Its id.
    pub fn id(&self) -> CoroutineId {
        self.state.id()
    }

    /// Requests cancellation: the RFC's `$coroutine->cancel()`.
    ///
    /// - not started yet: it never starts; its body is dropped unrun and
    ///   joining it gives [`JoinError::is_cancelled`];
    /// - suspended: it is resumed with [`Cancelled`] at its suspension
    ///   point;
    /// - running (it cancels itself): [`Cancelled`] is delivered at its next
    ///   suspension point (`cancel` is not itself a suspension point, P-23);
    /// - finished: nothing happens.
    ///
    /// The first request wins; later ones (and their reasons) are ignored.
    /// Delivery is edge-triggered: once delivered, later waits succeed
    /// (D-1), while [`is_cancellation_requested`](Coroutine::is_cancellation_requested)
    /// stays true.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn, suspend};
    ///
    /// run(|| {
    ///     let h = spawn(|| delay(10_000).map_err(|c| c.to_string()));
    ///     suspend().unwrap(); // let it start and block in delay
    ///     h.cancel();
    ///     let id = h.id();
    ///     assert_eq!(h.join().unwrap(), Err(format!("coroutine {id} cancelled")));
    /// })
    /// .unwrap();
    /// ```
    pub fn cancel(&self) {
        crate::cancel::cancel(&self.state, None);
    }

    /// Requests cancellation with a reason, shown by [`Cancelled::reason`]
    /// and in its message. See [`cancel`](Coroutine::cancel).
    pub fn cancel_with(&self, reason: impl Into<String>) {
        crate::cancel::cancel(&self.state, Some(reason.into()));
    }

    /// True once its body started running.
    pub fn is_started(&self) -> bool {
        self.state.is_started()
    }

    /// True while it waits in the run queue (to start or to resume).
    pub fn is_queued(&self) -> bool {
        self.sched_state() == Some(AA_CORO_QUEUED)
    }

    /// True if it is the running coroutine.
    pub fn is_running(&self) -> bool {
        std::ptr::eq(runtime::running(), Rc::as_ptr(&self.state))
    }

    /// True while it is suspended, waiting to be woken.
    pub fn is_suspended(&self) -> bool {
        self.sched_state() == Some(AA_CORO_SUSPENDED)
    }

    /// True once it has finished after a cancellation was requested (or
    /// without ever producing a value because of one).
    pub fn is_cancelled(&self) -> bool {
        self.state.is_cancelled()
    }

    /// True once a cancellation was requested; stays true (D-1).
    pub fn is_cancellation_requested(&self) -> bool {
        self.state.is_cancellation_requested()
    }

    /// True once it has finished (returned, panicked, or was cancelled
    /// before it started).
    pub fn is_finished(&self) -> bool {
        self.state.is_finished()
    }

    /// Where it was spawned (the RFC's `getSpawnLocation`).
    pub fn spawn_location(&self) -> &'static Location<'static> {
        self.state.location
    }

    /// Waits until it finishes, without taking its value: the untyped
    /// `await`.
    ///
    /// # Errors
    ///
    /// As [`JoinHandle::join`].
    ///
    /// # Panics
    ///
    /// As [`JoinHandle::join`].
    ///
    /// # Cancellation
    ///
    /// As [`JoinHandle::join`].
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, spawn};
    ///
    /// run(|| {
    ///     let c = spawn(|| panic!("oops")).coroutine();
    ///     let (a, b) = (c.wait().unwrap_err(), c.wait().unwrap_err());
    ///     assert!(async_std_api::JoinError::same_failure(&a, &b));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn wait(&self) -> Result<(), JoinError> {
        wait_state(&self.state, None, Location::caller())
    }

    /// Waits until it finishes or `until` completes.
    ///
    /// # Errors
    ///
    /// As [`JoinHandle::join_until`].
    ///
    /// # Panics
    ///
    /// As [`JoinHandle::join`].
    ///
    /// # Cancellation
    ///
    /// As [`JoinHandle::join_until`].
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn, timeout};
    ///
    /// run(|| {
    ///     let c = spawn(|| delay(5).unwrap()).coroutine();
    ///     assert!(c.wait_until(&timeout(2000)).is_ok());
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn wait_until(&self, until: &impl Awaitable) -> Result<(), JoinError> {
        wait_state(&self.state, Some(until), Location::caller())
    }

    fn sched_state(&self) -> Option<u32> {
        runtime::with_runtime(|rt| rt.sched.coroutine_state(&self.state)).flatten()
    }
}

impl PartialEq for Coroutine {
    fn eq(&self, other: &Coroutine) -> bool {
        Rc::ptr_eq(&self.state, &other.state)
    }
}

impl Eq for Coroutine {}

impl fmt::Debug for Coroutine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coroutine")
            .field("id", &self.state.id())
            .field("spawned_at", &self.state.location)
            .field("finished", &self.state.is_finished())
            .finish()
    }
}
