//! Work a call starts and owns: [`select`] (re-exported by `combinators`)
//! and the engine of `time::with_timeout` (D-44).
//!
//! The RFC's combinators wait for triggers they do not own and cancel
//! nothing (D-7). A call here *starts* its branches, so it owns them: it
//! waits for the first to finish (or for its `until` trigger, a deadline),
//! then cancels the rest and waits for them, like tokio's `select!` and
//! `time::timeout` (which drop the losing futures) or Kotlin's `select`
//! and `withTimeout` (which cancel the child coroutines).
//!
//! Owns: one scope per call ([`Owned`]), the branches' coroutines and
//! their handles.
//!
//! Invariants:
//! - **SL1** The branches run in a scope made for the call, a child of the
//!   caller's scope: their context chain, exception handlers and error flow
//!   are the caller's, and what a branch spawns goes into the same scope
//!   (R-S1), so it is the call's too.
//! - **SL2** The call decides once, on [`combinators::first`]: the first
//!   branch to finish (its outcome moves out of its handle), else the
//!   `until` trigger, with the caller's own cancellation first (D-20);
//!   except that a branch that *returned a value* before the caller saw its
//!   cancellation wins, and the cancellation stays pending for the next
//!   suspension point (D-29, P-08): nothing handed over is dropped.
//! - **SL3** Then the scope is cancelled (once; a scope an ancestor already
//!   cancelled keeps that cancellation) and the call waits, inside
//!   `protect`, until the scope is empty: no branch, and nothing a branch
//!   spawned, outlives the call, cleanup included. A cancellation that
//!   reaches the caller meanwhile stays pending; a deadlock ends the wait.
//!   If the caller unwinds instead (forced shutdown), the guard's drop
//!   still cancels the scope, without waiting.
//! - **SL4** A failure the call does not return is reported once, through
//!   the error flow (EF2 onwards, from the call's scope): a branch that
//!   failed while the call was subscribed to it was *awaited* when it
//!   finished (D-3), so the call hands its failure to the flow itself; one
//!   that fails later (in its cleanup) is not awaited and reaches the flow
//!   on its own.
//!
//! Drop order: the [`Owned`] guard cancels the scope if the call did not
//! finish (SL3), then the scope's owning handle goes, on a closed scope,
//! so without D-9's warning.

use std::panic::Location;

use super::combinators::sealed::Token;
use super::combinators::{first, CombineError, CombineErrorKind, Trigger};
use super::scope::flow;
use super::scope::{current_scope, Scope};
use super::spawn::spawn_in_at;
use crate::core::awaitable::Awaitable;
use crate::core::cancel::protect;
use crate::core::coroutine::Coroutine;
use crate::core::error::{Cancelled, JoinError};
use crate::core::join::JoinHandle;
use crate::core::state::Outcome;
use crate::core::wait::{require_coroutine, suspend_once, with_me};
use crate::core::waiters::NotifySubscription;

/// One branch: a closure run in a coroutine of the call's scope.
pub(crate) type Branch<T> = Box<dyn FnOnce() -> T + 'static>;

/// How an owned call was decided (SL2).
pub(crate) enum Decided<T> {
    /// Branch `i` finished first with this outcome.
    Won(usize, Result<T, JoinError>),
    /// The `until` trigger completed first.
    Until,
    /// The caller was cancelled (or deadlocked) first.
    Interrupted(Cancelled),
}

/// The branches of one call and the scope they run in (SL1); cancels the
/// scope if dropped before [`Owned::finish`] (SL3).
pub(crate) struct Owned<T> {
    scope: Scope,
    branches: Vec<Coroutine>,
    handles: Vec<Option<JoinHandle<T>>>,
    name: &'static str,
    at: &'static Location<'static>,
}

impl<T: 'static> Owned<T> {
    /// Starts every branch in a new child scope of the caller's (SL1).
    /// They run once the caller suspends (REF-1).
    ///
    /// # Panics
    ///
    /// Outside a coroutine, or if the caller's scope is closed (R-S4: a
    /// closed scope starts no new work), with a message naming `name` and
    /// `what` it starts.
    #[track_caller]
    pub(crate) fn start(name: &'static str, what: &str, bodies: Vec<Branch<T>>) -> Owned<T> {
        let at = Location::caller();
        require_coroutine(name);
        let parent = current_scope();
        if parent.is_closed() {
            panic!(
                "{name} cannot start {what}: scope {} is closed (cancelled or disposed)",
                parent.id()
            );
        }
        let scope = Scope::inherit();
        let mut branches = Vec::with_capacity(bodies.len());
        let mut handles = Vec::with_capacity(bodies.len());
        for body in bodies {
            let h = spawn_in_at(&scope, body, at)
                .unwrap_or_else(|e| unreachable!("SL1: a new child of an open scope is open: {e}"));
            branches.push(h.coroutine());
            handles.push(Some(h));
        }
        Owned {
            scope,
            branches,
            handles,
            name,
            at,
        }
    }

    /// The coroutine running branch `i`.
    pub(crate) fn branch(&self, i: usize) -> &Coroutine {
        &self.branches[i]
    }

    /// Waits for the first branch to finish, `until`, or the caller's
    /// cancellation (SL2), and hands the failures it consumed but does not
    /// return to the error flow (SL4).
    pub(crate) fn decide(&mut self, until: Option<Box<dyn Awaitable>>) -> Decided<T> {
        let decided = match first(self.branches.clone(), until, self.at) {
            Ok((i, _)) => Decided::Won(i, self.take(i)),
            Err(e) => match e.kind() {
                CombineErrorKind::AwaitCancelled => Decided::Until,
                CombineErrorKind::Interrupted => {
                    let c = e.cancelled().cloned().expect("kind Interrupted");
                    match self.first_value() {
                        Some(i) => {
                            let won = self.take(i);
                            // SL2: the value was there first; the
                            // cancellation waits for the next point.
                            with_me(self.name, |_, me| me.repend_cancel());
                            Decided::Won(i, won)
                        }
                        None => Decided::Interrupted(c),
                    }
                }
                _ => unreachable!("SL2: owned branches end with an outcome, the trigger or the caller's cancellation"),
            },
        };
        // SL4: `first` has ended its session, so a branch finished by now
        // was awaited when it finished; a later one is not.
        let winner = match &decided {
            Decided::Won(i, _) => Some(*i),
            _ => None,
        };
        for (i, c) in self.branches.iter().enumerate() {
            if Some(i) == winner {
                continue;
            }
            let failed = c.state.with_outcome(|o| match o {
                Outcome::Failed(f) => Some(f.clone()),
                _ => None,
            });
            if let Some(f) = failed.flatten() {
                flow::failed(&self.scope.state, &c.state, f, false);
            }
        }
        decided
    }

    /// The lowest branch that returned a value (not yet taken), if any.
    fn first_value(&self) -> Option<usize> {
        self.branches.iter().position(|c| {
            c.state
                .with_outcome(|o| matches!(o, Outcome::Value(Some(_))))
                .unwrap_or(false)
        })
    }

    /// Branch `i`'s outcome, taken from its handle (it has finished). Not
    /// through `join`, which would deliver a cancellation pending now
    /// instead (D-20) and drop the value with the handle.
    fn take(&mut self, i: usize) -> Result<T, JoinError> {
        let h = self.handles[i].take().expect("SL2: decided once");
        h.poll_trigger(Token(()))
            .expect("SL2: the winner has finished")
    }

    /// Cancels the scope with `reason` and waits until it is empty (SL3).
    ///
    /// # Errors
    ///
    /// The caller's cancellation with cause `Deadlock` if the scheduler
    /// found the wait could never end.
    pub(crate) fn finish(self, reason: impl FnOnce() -> String) -> Result<(), Cancelled> {
        if !self.scope.is_cancelled() {
            self.scope.cancel_with(reason());
        }
        let s = &self.scope.state;
        if s.is_empty() {
            return Ok(());
        }
        let what = format!(
            "{}: wait for its branches' cleanup (scope {})",
            self.name, s.id
        );
        protect(|| {
            with_me(self.name, |rt, me| {
                let _sub = NotifySubscription::new(&s.notify, me);
                while !s.is_empty() {
                    suspend_once(rt, me, what.as_bytes(), self.at)?;
                }
                Ok(())
            })
        })
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        // SL3: an unwinding caller leaves nothing running behind it.
        if !self.scope.is_cancelled() {
            self.scope.cancel();
        }
    }
}

/// What [`select`] accepts: closures that return the same type, as a
/// tuple (up to 8), an array or a `Vec` (for closures of different types
/// in a `Vec`, box them: `Box<dyn FnOnce() -> T>` is one).
pub trait Branches<T> {
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn into_branches(self, _: Token) -> Vec<Branch<T>>;
}

impl<T, F: FnOnce() -> T + 'static> Branches<T> for Vec<F> {
    #[allow(private_interfaces)]
    fn into_branches(self, _: Token) -> Vec<Branch<T>> {
        self.into_iter().map(|f| Box::new(f) as Branch<T>).collect()
    }
}

impl<T, F: FnOnce() -> T + 'static, const N: usize> Branches<T> for [F; N] {
    #[allow(private_interfaces)]
    fn into_branches(self, _: Token) -> Vec<Branch<T>> {
        self.into_iter().map(|f| Box::new(f) as Branch<T>).collect()
    }
}

macro_rules! branches_tuple {
    ($($f:ident),+) => {
        impl<T, $($f: FnOnce() -> T + 'static),+> Branches<T> for ($($f,)+) {
            #[allow(private_interfaces, non_snake_case)]
            fn into_branches(self, _: Token) -> Vec<Branch<T>> {
                let ($($f,)+) = self;
                vec![$(Box::new($f) as Branch<T>),+]
            }
        }
    };
}

branches_tuple!(A);
branches_tuple!(A, B);
branches_tuple!(A, B, C);
branches_tuple!(A, B, C, D);
branches_tuple!(A, B, C, D, E);
branches_tuple!(A, B, C, D, E, F);
branches_tuple!(A, B, C, D, E, F, G);
branches_tuple!(A, B, C, D, E, F, G, H);

/// Runs each closure in a coroutine of its own and returns the first to
/// finish, with its index; cancels the others and waits for them (D-44).
///
/// The analogue of tokio's `select!` over closures, or Kotlin's `select`
/// over child coroutines: the branches are the call's own, started for
/// one answer, so the losers are cancelled (as the RFC's [`any`] never
/// does, D-7: use `any` to wait for coroutines someone else owns). The
/// branches run in a child scope of the caller's scope, made for the call:
/// they see the caller's context, and what they spawn belongs to the call
/// too. When the winner is known, that scope is cancelled and `select`
/// waits until everything in it has finished, cleanup and `on_finally`
/// handlers included, so nothing started here outlives the call.
///
/// The winner is the first branch to *finish*, whatever its outcome: a
/// branch that panics first ends the `select` with its failure, as a
/// panic in a `select!` branch would. To wait for the first success
/// instead, return a `Result` and use [`any`] with
/// [`ignore_errors`](super::combinators::ignore_errors).
///
/// # Errors
///
/// - [`CombineErrorKind::Input`]: the first branch to finish failed (it
///   panicked: [`JoinError::is_panic`]) or was cancelled by someone else;
///   [`CombineError::input`] has its index and [`JoinError`]. Its failure
///   is consumed here, as a `join` consumes it (D-3).
/// - [`CombineErrorKind::Interrupted`]: the caller was cancelled first;
///   every branch was cancelled and has finished.
/// - [`CombineErrorKind::Exhausted`]: no branch was given.
///
/// A loser that fails (say, in its cleanup after the cancellation) is not
/// this call's result: its failure goes through the error flow, from the
/// call's scope to the caller's, like any failure nobody awaited (SL4).
///
/// # Panics
///
/// Outside a coroutine, or if the caller's scope is closed (cancelled or
/// disposed: it starts no new work, R-S4), naming the call and the scope.
///
/// # Cancellation
///
/// A cancellation point. If the caller is cancelled while it waits, every
/// branch is cancelled and awaited before `select` returns
/// [`CombineErrorKind::Interrupted`]; a branch that had already returned
/// a value when the caller saw its cancellation wins instead, and the
/// cancellation stays pending for the next suspension point (D-29, P-08).
/// The wait for the losers' cleanup is not interrupted: a cancellation
/// that arrives meanwhile stays pending too.
///
/// # Examples
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use async_std_api::combinators::select;
/// use async_std_api::{coroutines, delay, on_finally, run};
///
/// run(|| {
///     let log = Rc::new(RefCell::new(Vec::new()));
///     let l = log.clone();
///     let (i, mirror) = select((
///         || {
///             delay(5).unwrap();
///             "fast mirror"
///         },
///         move || {
///             on_finally(move || l.borrow_mut().push("slow mirror cleaned up"));
///             delay(60_000).map(|()| "slow mirror").unwrap_or("cancelled")
///         },
///     ))
///     .unwrap();
///     assert_eq!((i, mirror), (0, "fast mirror"));
///     // The loser was cancelled and has finished, its cleanup included.
///     assert_eq!(*log.borrow(), ["slow mirror cleaned up"]);
///     assert_eq!(coroutines().len(), 1); // only this one
/// })
/// .unwrap();
/// ```
///
/// [`any`]: super::combinators::any
#[track_caller]
pub fn select<T: 'static, B: Branches<T>>(
    branches: B,
) -> Result<(usize, T), CombineError<JoinError>> {
    let bodies = branches.into_branches(Token(()));
    if bodies.is_empty() {
        with_me("select", |_, _| ());
        return Err(CombineError::exhausted());
    }
    let mut owned = Owned::start("select", "its branches", bodies);
    let decided = owned.decide(None);
    let finished = owned.finish(|| match &decided {
        Decided::Won(i, _) => format!("select: branch {i} finished first"),
        _ => String::from("select: the caller was cancelled"),
    });
    if let Err(c) = finished {
        return Err(CombineError::interrupted_by(c)); // SL3: a deadlock
    }
    match decided {
        Decided::Won(i, Ok(v)) => Ok((i, v)),
        Decided::Won(i, Err(e)) => Err(CombineError::failed_input(i, e)),
        Decided::Interrupted(c) => Err(CombineError::interrupted_by(c)),
        Decided::Until => unreachable!("select has no until trigger"),
    }
}
