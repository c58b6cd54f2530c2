//! Joining: [`JoinHandle`] and the waits on a coroutine's completion.
//!
//! A join reads the outcome once the coroutine finished (REF-4: at once,
//! without suspending, if it already has). The value is taken by the
//! handle, once; a failure or cancellation is shared by every waiter (E1).

use std::fmt;
use std::marker::PhantomData;
use std::panic::Location;
use std::rc::Rc;

use super::awaitable::Awaitable;
use super::cancel::cancel;
use super::coroutine::Coroutine;
use super::error::JoinError;
use super::id::CoroutineId;
use super::runtime;
use super::state::{CoroState, Outcome};
use super::wait::{join_what, wait_for, wait_for_inlined, with_me, WaitEnd, JOIN_WHAT_CAP};

/// Waits for `target` (and `until`), then reads its outcome without taking
/// the value.
#[track_caller]
pub(crate) fn wait_state(
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
#[track_caller]
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
        if Rc::ptr_eq(me, target) {
            return WaitEnd::SelfAwait; // R-CO6
        }
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
        WaitEnd::Trigger => Err(JoinError::await_cancelled(
            id,
            until.and_then(|u| u.failure()),
        )),
        WaitEnd::Interrupted(c) => Err(JoinError::interrupted(id, c)),
        WaitEnd::SelfAwait => Err(JoinError::self_await(id)),
    }
}

/// [`wait_end`] without a trigger (a plain join), inlined whole into the
/// join with its wait loop (`wait::wait_for_inlined` says why): the same
/// steps and errors.
#[inline(always)]
#[track_caller]
fn wait_finished(target: &Rc<CoroState>, at: &'static Location<'static>) -> Result<(), JoinError> {
    if target.is_finished() {
        return wait_end(target, None, at);
    }
    let end = with_me(
        "join",
        #[inline(always)]
        |rt, me| {
            if Rc::ptr_eq(me, target) {
                return WaitEnd::SelfAwait; // R-CO6
            }
            let mut buf = [0; JOIN_WHAT_CAP];
            let what = join_what(target.id.get(), &mut buf);
            wait_for_inlined(rt, me, &target.done, None, what, at)
        },
    );
    match end {
        WaitEnd::Done => Ok(()),
        other => Err(join_interrupted(target.id(), other)),
    }
}

/// The error of a plain join that did not end `Done` (as in [`wait_end`]).
#[cold]
#[inline(never)]
fn join_interrupted(id: CoroutineId, end: WaitEnd) -> JoinError {
    match end {
        WaitEnd::Interrupted(c) => JoinError::interrupted(id, c),
        WaitEnd::SelfAwait => JoinError::self_await(id),
        WaitEnd::Done | WaitEnd::Trigger => {
            unreachable!("a join without a trigger ends done, interrupted or self-awaited")
        }
    }
}

fn outcome_of(target: &CoroState) -> Result<(), JoinError> {
    let id = target.id();
    match target.with_outcome(|o| match o {
        Outcome::Value(_) => Ok(()),
        Outcome::Failed(f) => Err(JoinError::failed(id, f.clone())),
        Outcome::Cancelled(c) => Err(JoinError::cancelled_with(id, (**c).clone())),
    }) {
        Some(r) => r,
        None => Ok(()),
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
    pub(crate) state: Rc<CoroState>,
    pub(crate) _value: PhantomData<T>,
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
    /// [`JoinError::is_failed`] if it panicked or (a
    /// [`spawn_try`](crate::spawn_try) body) returned an error;
    /// [`JoinError::is_cancelled`] if it ended because it was cancelled;
    /// [`JoinError::is_self_await`] if it is the calling coroutine;
    /// [`JoinError::is_interrupted`] if the *calling* coroutine was
    /// cancelled while it waited (the awaited one goes on running).
    ///
    /// # Panics
    ///
    /// Outside a coroutine when the target has not finished. (A coroutine
    /// joining itself gets [`JoinError::is_self_await`], R-CO6.)
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
    // Inlined into every caller, on purpose: a coroutine resumes inside
    // the scheduler's `suspend` with the CPU's return-stack predictor one
    // entry out of step (the context engine's jump), so each `ret` from
    // there up to the caller's frame mispredicts; with the wait loop in
    // the caller's own frame there is one (out of `suspend`) instead of
    // two, about 10% of a spawn+join. What runs before the suspension
    // (`join_what`, the subscription) and after it (`take_result`) stays
    // out of line, so a call site grows by about 500 bytes.
    #[track_caller]
    #[inline(always)]
    pub fn join(self) -> Result<T, JoinError> {
        wait_finished(&self.state, Location::caller())?;
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
    #[inline(never)]
    fn take_result(self) -> Result<T, JoinError> {
        let state = self.state;
        let id = state.id();
        let taken = state.with_outcome(|o| match o {
            Outcome::Value(v) => Ok(v.take()),
            Outcome::Failed(f) => Err(JoinError::failed(id, f.clone())),
            Outcome::Cancelled(c) => Err(JoinError::cancelled_with(id, (**c).clone())),
        });
        let result = match taken {
            Some(Ok(Some(v))) => match v.downcast::<T>() {
                Ok(v) => Ok(*v),
                Err(_) => unreachable!("a coroutine's value has its JoinHandle's type"),
            },
            Some(Err(e)) => Err(e),
            _ => unreachable!("a finished coroutine's value is taken once, by its JoinHandle"),
        };
        runtime::recycle_state(state);
        result
    }

    /// Requests the coroutine's cancellation; see [`Coroutine::cancel`].
    pub fn cancel(&self) {
        cancel(&self.state, None);
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
