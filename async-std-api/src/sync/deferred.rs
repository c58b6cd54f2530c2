//! [`Deferred`] and its [`Resolver`]: a value that arrives later, once (the
//! design's DeferredResume, a oneshot); [`Future`] and its [`Promise`]: one
//! outcome shared by every coroutine that awaits it.
//!
//! Rules:
//! - **DF1** A deferred or future settles once: the first `resolve` or
//!   `reject` wins; a later one is an error to its caller, with the value
//!   back. Dropping every resolver (or promise) of a pending one settles it
//!   as abandoned, so no waiter waits forever.
//! - **DF2** A wait is a cancellation point. A wait cancelled while the
//!   deferred is still pending takes nothing: the value, when it comes,
//!   stays in the deferred for a later wait. A wait whose deferred was
//!   settled before the waiter saw its cancellation (both in the same tick)
//!   completes: it takes the value (or its rejection) and the cancellation
//!   stays pending for the next suspension point (D-29, as I/O keeps data
//!   that arrived, P-08), so a resolver told the value was delivered is
//!   never wrong. Resolving a deferred whose receiving side is gone gives
//!   the value back to the resolver.
//! - **DF3** A future's outcome is shared, not cloned: every awaiter gets
//!   the same `Rc<T>`, or the same [`Failure`] (R-CO5).

use std::cell::RefCell;
use std::fmt;
use std::panic::Location;
use std::rc::Rc;

use super::queue::WaitText;
use crate::core::awaitable::sealed::Sealed;
use crate::core::awaitable::Awaitable;
use crate::core::error::Cancelled;
use crate::core::failure::{Failure, FailureOrigin};
use crate::core::wait::{checkpoint, suspend_once, with_me};
use crate::core::waiters::{Completion, Subscription};
use crate::structured::combinators::sealed::{Token, Watch};
use crate::structured::combinators::Trigger;

/// How a deferred or future was settled.
enum State<T> {
    Pending,
    Resolved(T),
    Rejected(Failure),
    /// Every resolver was dropped first (DF1).
    Abandoned,
    /// A deferred's value was taken by a wait.
    Taken,
}

struct Shared<T> {
    state: RefCell<State<T>>,
    done: Completion,
    /// Live resolvers (DF1).
    resolvers: std::cell::Cell<usize>,
    /// The receiving side still exists (DF2).
    receiver: std::cell::Cell<bool>,
    created_at: &'static Location<'static>,
    what: WaitText,
}

impl<T> Shared<T> {
    fn new(at: &'static Location<'static>) -> Rc<Shared<T>> {
        Rc::new(Shared {
            state: RefCell::new(State::Pending),
            done: Completion::new(),
            resolvers: std::cell::Cell::new(1),
            receiver: std::cell::Cell::new(true),
            created_at: at,
            what: WaitText::default(),
        })
    }

    /// DF1: settles if pending; else gives the state back.
    fn settle(&self, s: State<T>) -> Result<(), State<T>> {
        if !matches!(*self.state.borrow(), State::Pending) {
            return Err(s);
        }
        *self.state.borrow_mut() = s;
        self.done.complete();
        Ok(())
    }

    /// Suspends until settled (DF2); `what` for deadlock reports.
    #[track_caller]
    fn wait(&self, what: &str, at: &'static Location<'static>) -> Result<(), Cancelled> {
        with_me(what, |rt, me| {
            checkpoint(me)?;
            if self.done.is_done() {
                return Ok(());
            }
            let _sub = Subscription::new(&self.done, me);
            let what = self
                .what
                .get(|| format!("{what} (created at {})", self.created_at));
            while !self.done.is_done() {
                if let Err(c) = suspend_once(rt, me, what.as_bytes(), at) {
                    if !self.done.is_done() {
                        return Err(c);
                    }
                    // DF2: settled before the cancellation was seen: the
                    // wait completes, the cancellation waits (D-29).
                    me.repend_cancel();
                }
            }
            Ok(())
        })
    }
}

/// A value that arrives later, once: the receiving side of a oneshot (the
/// design's DeferredResume). Made with [`Deferred::new`], which also gives
/// the [`Resolver`] that settles it.
///
/// [`wait`](Deferred::wait) suspends the calling coroutine until a
/// resolver resolves or rejects it, then takes the value. A `Deferred` is an
/// [`Awaitable`] (an `until` trigger) and a combinator input.
///
/// # Examples
///
/// ```
/// use async_std_api::sync::Deferred;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let (deferred, resolver) = Deferred::new();
///     spawn(move || resolver.resolve("config loaded").unwrap());
///     assert_eq!(deferred.wait().unwrap(), "config loaded");
/// })
/// .unwrap();
/// ```
pub struct Deferred<T> {
    shared: Rc<Shared<T>>,
}

/// What settles a [`Deferred`]: clone it to resolve from several places
/// (the first settles it, DF1). Dropping every resolver of a pending
/// deferred settles it as abandoned.
pub struct Resolver<T> {
    shared: Rc<Shared<T>>,
}

impl<T> Deferred<T> {
    /// A pending deferred and its resolver.
    #[track_caller]
    pub fn new() -> (Deferred<T>, Resolver<T>) {
        let shared = Shared::new(Location::caller());
        (
            Deferred {
                shared: shared.clone(),
            },
            Resolver { shared },
        )
    }

    /// Waits until it is settled and takes the value.
    ///
    /// # Errors
    ///
    /// A [`DeferredError`]: rejected (with the failure), abandoned (every
    /// resolver dropped), already taken by an earlier wait, or interrupted
    /// (the caller's cancellation while it was still pending; the value, if
    /// it comes, stays for a later wait, DF2).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point. A deferred settled in the same tick as the
    /// caller's cancellation, before the caller resumed, is taken: `wait`
    /// returns its outcome and the cancellation stays pending for the next
    /// suspension point (DF2, D-29).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::sync::Deferred;
    /// use async_std_api::{check_cancelled, current, run, spawn};
    ///
    /// run(|| {
    ///     let (deferred, resolver) = Deferred::new();
    ///     let me = current();
    ///     spawn(move || {
    ///         resolver.resolve(7).unwrap();
    ///         me.cancel(); // the same tick: the value was handed over first
    ///     });
    ///     assert_eq!(deferred.wait().unwrap(), 7);
    ///     assert!(check_cancelled().is_err()); // still pending, delivered here
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn wait(&self) -> Result<T, DeferredError> {
        self.shared
            .wait("await sync::Deferred", Location::caller())
            .map_err(|c| DeferredError(ErrRepr::Interrupted(c)))?;
        self.take()
    }

    /// Takes the value if it is settled; never suspends.
    ///
    /// # Errors
    ///
    /// As [`wait`](Deferred::wait), plus [`DeferredErrorKind::Pending`].
    pub fn try_wait(&self) -> Result<T, DeferredError> {
        if !self.shared.done.is_done() {
            return Err(DeferredError(ErrRepr::Pending));
        }
        self.take()
    }

    fn take(&self) -> Result<T, DeferredError> {
        let mut state = self.shared.state.borrow_mut();
        match std::mem::replace(&mut *state, State::Taken) {
            State::Resolved(v) => Ok(v),
            State::Rejected(f) => {
                *state = State::Rejected(f.clone());
                Err(DeferredError(ErrRepr::Rejected(f)))
            }
            State::Abandoned => {
                *state = State::Abandoned;
                Err(DeferredError(ErrRepr::Abandoned))
            }
            State::Taken => Err(DeferredError(ErrRepr::Taken)),
            State::Pending => {
                *state = State::Pending;
                Err(DeferredError(ErrRepr::Pending))
            }
        }
    }

    /// True once it is settled (its value may have been taken).
    pub fn is_settled(&self) -> bool {
        self.shared.done.is_done()
    }
}

impl<T> Drop for Deferred<T> {
    fn drop(&mut self) {
        self.shared.receiver.set(false);
    }
}

impl<T> Resolver<T> {
    /// Resolves the deferred with `value`, waking its waiter.
    ///
    /// # Errors
    ///
    /// [`ResolveError`] with the value back if it was already settled, or
    /// if the [`Deferred`] is gone (its waiter gave up: DF2).
    pub fn resolve(&self, value: T) -> Result<(), ResolveError<T>> {
        if !self.shared.receiver.get() {
            return Err(ResolveError { value, gone: true });
        }
        self.shared
            .settle(State::Resolved(value))
            .map_err(|s| match s {
                State::Resolved(value) => ResolveError { value, gone: false },
                _ => unreachable!("settle gives back what it was given"),
            })
    }

    /// Rejects the deferred: its waiter gets the error as a [`Failure`].
    ///
    /// # Errors
    ///
    /// [`ResolveError`] (with `()`) if it was already settled or is gone.
    pub fn reject(
        &self,
        error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Result<(), ResolveError<()>> {
        if !self.shared.receiver.get() {
            return Err(ResolveError {
                value: (),
                gone: true,
            });
        }
        let f = Failure::from_error(FailureOrigin::Rejected, error.into());
        self.shared
            .settle(State::Rejected(f))
            .map_err(|_| ResolveError {
                value: (),
                gone: false,
            })
    }

    /// True once the deferred is settled.
    pub fn is_settled(&self) -> bool {
        self.shared.done.is_done()
    }
}

impl<T> Clone for Resolver<T> {
    fn clone(&self) -> Self {
        self.shared.resolvers.set(self.shared.resolvers.get() + 1);
        Resolver {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Resolver<T> {
    fn drop(&mut self) {
        let n = self.shared.resolvers.get() - 1;
        self.shared.resolvers.set(n);
        if n == 0 {
            let _ = self.shared.settle(State::Abandoned); // DF1
        }
    }
}

impl<T> fmt::Debug for Deferred<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deferred")
            .field("settled", &self.is_settled())
            .field("created_at", &self.shared.created_at)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Resolver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolver")
            .field("settled", &self.is_settled())
            .finish_non_exhaustive()
    }
}

#[allow(private_interfaces)] // sealed: see `awaitable`
impl<T> Sealed for Deferred<T> {
    fn completion(&self) -> &Completion {
        &self.shared.done
    }
    fn describe(&self) -> String {
        format!("sync::Deferred (created at {})", self.shared.created_at)
    }
    fn failure(&self) -> Option<Failure> {
        match &*self.shared.state.borrow() {
            State::Rejected(f) => Some(f.clone()),
            _ => None,
        }
    }
}

impl<T> Awaitable for Deferred<T> {}

impl<T> Trigger for Deferred<T> {
    type Output = T;
    type Error = DeferredError;
    fn poll_trigger(&self, _: Token) -> Option<Result<T, DeferredError>> {
        self.shared.done.is_done().then(|| self.take())
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Once(&self.shared.done)
    }
}

/// A shared outcome that many coroutines can await: every awaiter gets the
/// same `Rc<T>` or the same [`Failure`] (DF3). Made with [`Future::new`],
/// which also gives the [`Promise`] that settles it. Clone it to hand it
/// out.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use async_std_api::sync::Future;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let (future, promise) = Future::new();
///     let readers: Vec<_> = (0..3)
///         .map(|_| {
///             let f = future.clone();
///             spawn(move || f.wait().unwrap())
///         })
///         .collect();
///     promise.resolve(vec![1, 2, 3]).unwrap();
///     let got: Vec<Rc<Vec<i32>>> = readers.into_iter().map(|r| r.join().unwrap()).collect();
///     assert!(Rc::ptr_eq(&got[0], &got[2])); // shared, not cloned
/// })
/// .unwrap();
/// ```
pub struct Future<T> {
    shared: Rc<Shared<Rc<T>>>,
}

/// What settles a [`Future`] (clone it to settle from several places; the
/// first wins, DF1).
pub struct Promise<T> {
    inner: Resolver<Rc<T>>,
}

impl<T> Future<T> {
    /// A pending future and its promise.
    #[track_caller]
    pub fn new() -> (Future<T>, Promise<T>) {
        // No single receiver that could go away: `receiver` stays true, so
        // resolving always stores the value.
        let shared = Shared::new(Location::caller());
        (
            Future {
                shared: shared.clone(),
            },
            Promise {
                inner: Resolver { shared },
            },
        )
    }

    /// Waits until it is settled; every awaiter gets the same outcome.
    ///
    /// # Errors
    ///
    /// A [`DeferredError`]: rejected (the same failure for everyone),
    /// abandoned, or interrupted (the caller's cancellation while it was
    /// still pending).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point; one settled in the same tick as the caller's
    /// cancellation gives its outcome, as [`Deferred::wait`] (DF2, D-29).
    #[track_caller]
    pub fn wait(&self) -> Result<Rc<T>, DeferredError> {
        self.shared
            .wait("await sync::Future", Location::caller())
            .map_err(|c| DeferredError(ErrRepr::Interrupted(c)))?;
        self.outcome()
    }

    /// The outcome if it is settled; never suspends.
    ///
    /// # Errors
    ///
    /// As [`wait`](Future::wait), plus [`DeferredErrorKind::Pending`].
    pub fn try_wait(&self) -> Result<Rc<T>, DeferredError> {
        self.outcome()
    }

    fn outcome(&self) -> Result<Rc<T>, DeferredError> {
        match &*self.shared.state.borrow() {
            State::Resolved(v) => Ok(v.clone()),
            State::Rejected(f) => Err(DeferredError(ErrRepr::Rejected(f.clone()))),
            State::Abandoned => Err(DeferredError(ErrRepr::Abandoned)),
            State::Pending => Err(DeferredError(ErrRepr::Pending)),
            State::Taken => unreachable!("DF3: a future's value is never taken"),
        }
    }

    /// True once it is settled.
    pub fn is_settled(&self) -> bool {
        self.shared.done.is_done()
    }
}

impl<T> Clone for Future<T> {
    fn clone(&self) -> Self {
        Future {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Promise<T> {
    /// Resolves the future with `value`, waking every awaiter.
    ///
    /// # Errors
    ///
    /// [`ResolveError`] with the value back if it was already settled.
    pub fn resolve(&self, value: T) -> Result<(), ResolveError<T>> {
        self.inner
            .resolve(Rc::new(value))
            .map_err(|e| ResolveError {
                value: Rc::try_unwrap(e.value)
                    .unwrap_or_else(|_| unreachable!("the Rc was never shared")),
                gone: e.gone,
            })
    }

    /// Rejects the future: every awaiter gets the same [`Failure`].
    ///
    /// # Errors
    ///
    /// [`ResolveError`] if it was already settled.
    pub fn reject(
        &self,
        error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Result<(), ResolveError<()>> {
        self.inner.reject(error)
    }
}

impl<T> Clone for Promise<T> {
    fn clone(&self) -> Self {
        Promise {
            inner: self.inner.clone(),
        }
    }
}

impl<T> fmt::Debug for Future<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Future")
            .field("settled", &self.is_settled())
            .field("created_at", &self.shared.created_at)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Promise<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Promise")
            .field("settled", &self.inner.is_settled())
            .finish_non_exhaustive()
    }
}

#[allow(private_interfaces)] // sealed: see `awaitable`
impl<T> Sealed for Future<T> {
    fn completion(&self) -> &Completion {
        &self.shared.done
    }
    fn describe(&self) -> String {
        format!("sync::Future (created at {})", self.shared.created_at)
    }
    fn failure(&self) -> Option<Failure> {
        match &*self.shared.state.borrow() {
            State::Rejected(f) => Some(f.clone()),
            _ => None,
        }
    }
}

impl<T> Awaitable for Future<T> {}

impl<T> Trigger for Future<T> {
    type Output = Rc<T>;
    type Error = DeferredError;
    fn poll_trigger(&self, _: Token) -> Option<Result<Rc<T>, DeferredError>> {
        self.shared.done.is_done().then(|| self.outcome())
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Once(&self.shared.done)
    }
}

/// Why a resolution did not take: the value is back in it.
pub struct ResolveError<T> {
    /// The value that was not delivered.
    pub value: T,
    gone: bool,
}

impl<T> ResolveError<T> {
    /// True if the receiving side was gone (else it was already settled).
    pub fn is_gone(&self) -> bool {
        self.gone
    }
}

impl<T> fmt::Debug for ResolveError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ResolveError")
            .field(&self.to_string())
            .finish()
    }
}

impl<T> fmt::Display for ResolveError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.gone {
            "cannot resolve: nobody awaits it any more"
        } else {
            "cannot resolve: it was already settled"
        })
    }
}

impl<T> std::error::Error for ResolveError<T> {}

/// What kind of failure a [`DeferredError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeferredErrorKind {
    /// It was rejected: [`DeferredError::failure`].
    Rejected,
    /// Every resolver (or promise) was dropped before settling it.
    Abandoned,
    /// A deferred's value was already taken by an earlier wait.
    Taken,
    /// Not settled yet (`try_wait`).
    Pending,
    /// The waiter itself was cancelled.
    Interrupted,
}

#[derive(Clone)]
enum ErrRepr {
    Rejected(Failure),
    Abandoned,
    Taken,
    Pending,
    Interrupted(Cancelled),
}

/// Why a [`Deferred`] or [`Future`] wait gave no value.
#[derive(Clone)]
pub struct DeferredError(ErrRepr);

impl DeferredError {
    /// What kind of failure this is.
    pub fn kind(&self) -> DeferredErrorKind {
        match self.0 {
            ErrRepr::Rejected(_) => DeferredErrorKind::Rejected,
            ErrRepr::Abandoned => DeferredErrorKind::Abandoned,
            ErrRepr::Taken => DeferredErrorKind::Taken,
            ErrRepr::Pending => DeferredErrorKind::Pending,
            ErrRepr::Interrupted(_) => DeferredErrorKind::Interrupted,
        }
    }

    /// The rejection, shared by every awaiter.
    pub fn failure(&self) -> Option<&Failure> {
        match &self.0 {
            ErrRepr::Rejected(f) => Some(f),
            _ => None,
        }
    }

    /// The waiter's own cancellation.
    pub fn cancelled(&self) -> Option<&Cancelled> {
        match &self.0 {
            ErrRepr::Interrupted(c) => Some(c),
            _ => None,
        }
    }
}

impl fmt::Display for DeferredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            ErrRepr::Rejected(fail) => write!(f, "rejected: {fail}"),
            ErrRepr::Abandoned => f.write_str("abandoned: every resolver was dropped"),
            ErrRepr::Taken => f.write_str("its value was already taken"),
            ErrRepr::Pending => f.write_str("not settled yet"),
            ErrRepr::Interrupted(c) => write!(f, "waiting interrupted: {c}"),
        }
    }
}

impl fmt::Debug for DeferredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DeferredError")
            .field(&self.to_string())
            .finish()
    }
}

impl std::error::Error for DeferredError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            ErrRepr::Rejected(f) => Some(f),
            ErrRepr::Interrupted(c) => Some(c),
            _ => None,
        }
    }
}
