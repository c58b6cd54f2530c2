//! What a wait can end with: [`Cancelled`] (a coroutine's own cancellation)
//! and [`JoinError`] (why `join` gave no value).
//!
//! Invariants:
//! - **E1** A coroutine's failure is created once, when it finishes, and
//!   shared by reference count: every waiter gets the same [`Failure`]
//!   (R-CO5, D-13, FA1 in `task::failure`), observable with
//!   [`JoinError::same_failure`].
//! - **E2** "The awaited coroutine was cancelled" ([`JoinError::is_cancelled`]),
//!   "it failed" ([`JoinError::is_failed`]), "the until-trigger fired"
//!   ([`JoinError::is_await_cancelled`], D-19), "the waiter itself was
//!   cancelled" ([`JoinError::is_interrupted`], P-04) and "a coroutine
//!   awaited itself" ([`JoinError::is_self_await`], R-CO6) are five different
//!   kinds; exactly one predicate of the five is true.
//! - **E3** A cancellation is not a failure and a failure is not a
//!   cancellation (P-01): no predicate or conversion turns one into the
//!   other. A cancellation caused by a failure carries it
//!   ([`Cancelled::failure`], D-14).

use std::any::Any;
use std::fmt;

use super::failure::Failure;
use super::id::{CoroutineId, ScopeId};
use super::wait::with_me;

/// Why a coroutine was cancelled: a closed set that may grow.
///
/// The analogue of Trio's cancellation sources: it says *who* asked, while
/// [`Cancelled::reason`] carries free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelCause {
    /// Someone called [`Coroutine::cancel`](crate::Coroutine::cancel)
    /// (or [`JoinHandle::cancel`](crate::JoinHandle::cancel)).
    Explicit,
    /// Its scope (or an ancestor scope) was cancelled or disposed:
    /// [`ScopeRef::cancel`](crate::ScopeRef::cancel),
    /// [`dispose`](crate::ScopeRef::dispose), or the last
    /// [`Scope`](crate::Scope) handle was dropped (D-9).
    Scope,
    /// Its scope was cancelled because a coroutine in it (or in a child
    /// scope) failed and nothing handled the failure (D-14):
    /// [`Cancelled::failure`] is that failure.
    Failure,
    /// It was a zombie and the zombie timeout passed (R-S10), or the delay
    /// of [`dispose_after_timeout`](crate::ScopeRef::dispose_after_timeout)
    /// did.
    ZombieTimeout,
    /// The runtime is shutting down: graceful shutdown (an unhandled
    /// failure, [`graceful_shutdown`](crate::graceful_shutdown)) or the main
    /// coroutine panicked.
    Shutdown,
    /// The scheduler found a deadlock: nothing could ever wake this
    /// coroutine.
    Deadlock,
}

/// A coroutine's cancellation, delivered at one of its suspension points:
/// the RFC's `CancellationException`.
///
/// Returned by every blocking call ([`delay`](crate::time::delay),
/// [`suspend`](crate::suspend), joins) when the *calling* coroutine is
/// cancelled while it waits. Cancellation is edge-triggered (D-1): it is
/// delivered once; the coroutine may catch it, clean up (even with more
/// blocking calls) and return.
///
/// I/O surfaces it as an [`std::io::Error`] of kind
/// [`Other`](std::io::ErrorKind::Other) whose inner error is this value (not
/// `Interrupted`, which `read_exact` would retry and so swallow the
/// cancellation); find it with [`crate::io::cancelled`].
///
/// It is not a failure (E3): a coroutine that ends because of its own
/// cancellation (even through `?` inside
/// [`spawn_try`](crate::spawn_try)) ends *cancelled*, which is suppressed,
/// not reported as a failure (R-C1).
///
/// # Examples
///
/// ```
/// use async_std_api::{current, delay, run, CancelCause};
///
/// let r = run(|| {
///     current().cancel_with("enough");
///     let err = delay(10).unwrap_err();
///     assert_eq!(err.cause(), CancelCause::Explicit);
///     assert_eq!(err.reason(), Some("enough"));
///     assert_eq!(err.to_string(), format!("coroutine {} cancelled: enough", err.id()));
/// });
/// assert!(r.is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancelled {
    id: CoroutineId,
    cause: CancelCause,
    reason: Option<String>,
    /// The scope whose cancellation reached the coroutine.
    scope: Option<ScopeId>,
    /// The failure that caused it (D-14).
    failure: Option<Failure>,
}

impl Cancelled {
    /// A cancellation of the calling coroutine, with cause
    /// [`CancelCause::Explicit`] and `reason`: what a
    /// [`spawn_try`](crate::spawn_try) body returns to end itself
    /// *cancelled* rather than failed (R-C1: a cancellation is suppressed,
    /// never reported as a failure).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, spawn_try, CancelCause, Cancelled};
    ///
    /// run(|| {
    ///     let h = spawn_try(|| -> Result<(), Cancelled> {
    ///         Err(Cancelled::new("nothing left to do"))
    ///     });
    ///     let id = h.id();
    ///     let err = h.join().unwrap_err();
    ///     let c = err.cancelled().unwrap();
    ///     assert_eq!((c.id(), c.cause()), (id, CancelCause::Explicit));
    ///     assert_eq!(c.to_string(), format!("coroutine {id} cancelled: nothing left to do"));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn new(reason: impl Into<String>) -> Cancelled {
        let id = with_me("Cancelled::new", |_, me| me.id());
        Cancelled::of(id, CancelCause::Explicit, Some(reason.into()))
    }

    pub(crate) fn of(id: CoroutineId, cause: CancelCause, reason: Option<String>) -> Cancelled {
        Cancelled {
            id,
            cause,
            reason,
            scope: None,
            failure: None,
        }
    }

    /// The same cancellation, coming from `scope` because of `failure`.
    pub(crate) fn with_origin(mut self, scope: Option<ScopeId>, failure: Option<Failure>) -> Self {
        self.scope = scope;
        self.failure = failure;
        self
    }

    /// The cancelled coroutine.
    pub fn id(&self) -> CoroutineId {
        self.id
    }

    /// Who asked for the cancellation.
    pub fn cause(&self) -> CancelCause {
        self.cause
    }

    /// The text given to [`Coroutine::cancel_with`](crate::Coroutine::cancel_with)
    /// (or a scope's [`cancel_with`](crate::ScopeRef::cancel_with)), if any.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The scope whose cancellation reached the coroutine, if a scope's.
    pub fn scope(&self) -> Option<ScopeId> {
        self.scope
    }

    /// The failure that caused the cancellation (cause
    /// [`CancelCause::Failure`], or a graceful shutdown started by an
    /// unhandled failure): the same [`Failure`] the responsibility points
    /// receive (D-14).
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }
}

impl fmt::Display for Cancelled {
    /// One line: `coroutine 7 cancelled`, then the reason if one was given,
    /// else what the cause adds (`: scope 3 cancelled`, `: deadlock`, ...).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "coroutine {} cancelled", self.id)?;
        if let Some(reason) = &self.reason {
            return write!(f, ": {reason}");
        }
        match (self.cause, self.scope, &self.failure) {
            (CancelCause::Explicit, _, _) => Ok(()),
            (CancelCause::Scope, Some(s), _) => write!(f, ": scope {s} cancelled"),
            (CancelCause::Scope, None, _) => f.write_str(": scope cancelled"),
            (CancelCause::Failure, _, Some(failure)) => write!(f, ": {failure}"),
            (CancelCause::Failure, _, None) => f.write_str(": a failure in its scope"),
            (CancelCause::ZombieTimeout, _, _) => f.write_str(": zombie timeout"),
            (CancelCause::Shutdown, _, Some(failure)) => write!(f, ": shutdown after {failure}"),
            (CancelCause::Shutdown, _, None) => f.write_str(": shutdown"),
            (CancelCause::Deadlock, _, _) => f.write_str(": deadlock"),
        }
    }
}

impl std::error::Error for Cancelled {}

impl From<Cancelled> for std::io::Error {
    /// An I/O error of kind `Other` carrying the cancellation (never
    /// `Interrupted`: `read_exact` and `write_all` retry those).
    fn from(c: Cancelled) -> std::io::Error {
        std::io::Error::other(c)
    }
}

#[derive(Clone)]
enum Repr {
    /// The awaited coroutine failed.
    Failed(Failure),
    /// The awaited coroutine ended because it was cancelled.
    Cancelled(Cancelled),
    /// The until-trigger completed first; with its failure if it failed
    /// (D-16).
    AwaitCancelled(Option<Failure>),
    /// The waiting coroutine was cancelled while it waited.
    Interrupted(Cancelled),
    /// A coroutine tried to await itself.
    SelfAwait,
}

/// Why [`JoinHandle::join`](crate::JoinHandle::join) (or another wait on a
/// coroutine) did not give a value.
///
/// The coroutine analogue of the `Err` of `std::thread::JoinHandle::join`,
/// shaped like tokio's `JoinError`: an opaque value with predicates. Exactly
/// one of [`is_cancelled`](Self::is_cancelled),
/// [`is_failed`](Self::is_failed),
/// [`is_await_cancelled`](Self::is_await_cancelled),
/// [`is_interrupted`](Self::is_interrupted) and
/// [`is_self_await`](Self::is_self_await) is true (E2);
/// [`is_panic`](Self::is_panic) refines `is_failed`.
///
/// Several waiters of one failed coroutine get the *same* [`Failure`], not
/// copies (R-CO5): see [`JoinError::same_failure`].
///
/// `?` on a `JoinError` inside a [`spawn_try`](crate::spawn_try) body
/// propagates it: a failure of the awaited coroutine becomes this
/// coroutine's failure; an interruption (this coroutine's own cancellation)
/// or the awaited coroutine's cancellation ends this one *cancelled*, not
/// failed (a cancellation is never absorbed as a failure, E3).
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let h = spawn(|| -> u32 { panic!("boom") });
///     let err = h.join().unwrap_err();
///     assert!(err.is_panic() && err.is_failed());
///     assert_eq!(err.panic_message(), Some("boom"));
///     assert_eq!(err.to_string(), format!("coroutine {} panicked: boom", err.id()));
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct JoinError {
    id: CoroutineId,
    repr: Repr,
}

impl JoinError {
    pub(crate) fn failed(id: CoroutineId, failure: Failure) -> JoinError {
        JoinError {
            id,
            repr: Repr::Failed(failure),
        }
    }

    pub(crate) fn cancelled_with(id: CoroutineId, c: Cancelled) -> JoinError {
        JoinError {
            id,
            repr: Repr::Cancelled(c),
        }
    }

    pub(crate) fn await_cancelled(id: CoroutineId, trigger: Option<Failure>) -> JoinError {
        JoinError {
            id,
            repr: Repr::AwaitCancelled(trigger),
        }
    }

    pub(crate) fn interrupted(id: CoroutineId, by: Cancelled) -> JoinError {
        JoinError {
            id,
            repr: Repr::Interrupted(by),
        }
    }

    pub(crate) fn self_await(id: CoroutineId) -> JoinError {
        JoinError {
            id,
            repr: Repr::SelfAwait,
        }
    }

    /// The awaited coroutine.
    pub fn id(&self) -> CoroutineId {
        self.id
    }

    /// True if the awaited coroutine ended because it was cancelled: it
    /// never started, it was unwound by shutdown, it returned while its
    /// cancellation was still undelivered (D-11), or its
    /// [`spawn_try`](crate::spawn_try) body returned its cancellation.
    ///
    /// A coroutine that caught its cancellation and returned normally has a
    /// value, so joining it succeeds.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled(_))
    }

    /// The awaited coroutine's cancellation, if [`is_cancelled`](Self::is_cancelled).
    pub fn cancelled(&self) -> Option<&Cancelled> {
        match &self.repr {
            Repr::Cancelled(c) => Some(c),
            _ => None,
        }
    }

    /// True if the awaited coroutine failed: it panicked, or its
    /// [`spawn_try`](crate::spawn_try) body returned an error.
    pub fn is_failed(&self) -> bool {
        matches!(self.repr, Repr::Failed(_))
    }

    /// The awaited coroutine's failure, if [`is_failed`](Self::is_failed):
    /// the same object for every awaiter (R-CO5).
    pub fn failure(&self) -> Option<&Failure> {
        match &self.repr {
            Repr::Failed(f) => Some(f),
            _ => None,
        }
    }

    /// True if the awaited coroutine panicked.
    pub fn is_panic(&self) -> bool {
        self.failure().is_some_and(Failure::is_panic)
    }

    /// The panic message (a `&str` or `String` payload), if
    /// [`is_panic`](Self::is_panic).
    pub fn panic_message(&self) -> Option<&str> {
        self.failure().and_then(Failure::panic_message)
    }

    /// True if the wait ended because its until-trigger completed first
    /// (the RFC's `AwaitCancelledException`). The awaited coroutine was not
    /// cancelled and goes on running (R-AU3). Not a cancellation (D-19).
    pub fn is_await_cancelled(&self) -> bool {
        matches!(self.repr, Repr::AwaitCancelled(_))
    }

    /// The until-trigger's own failure, if the wait ended because the
    /// trigger (a coroutine) *failed*: the wait still ends
    /// [`is_await_cancelled`](Self::is_await_cancelled), with this as its
    /// cause and [`source`](std::error::Error::source), so it is never
    /// mistaken for a failure of the awaited coroutine (D-16, D-6(3); the
    /// RFC draft's R-AU2 threw the trigger's exception itself).
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn};
    ///
    /// run(|| {
    ///     let slow = spawn(|| delay(10_000).is_ok());
    ///     let trigger = spawn(|| -> () { panic!("probe failed") });
    ///     let err = slow.wait_until(&trigger).unwrap_err();
    ///     assert!(err.is_await_cancelled() && !err.is_failed());
    ///     assert_eq!(err.trigger_failure().and_then(|f| f.panic_message()), Some("probe failed"));
    ///     slow.cancel();
    /// })
    /// .unwrap();
    /// ```
    pub fn trigger_failure(&self) -> Option<&Failure> {
        match &self.repr {
            Repr::AwaitCancelled(f) => f.as_ref(),
            _ => None,
        }
    }

    /// True if the *waiting* coroutine was cancelled while it waited (P-04):
    /// the awaited coroutine is unaffected, and the waiter's own
    /// [`Coroutine::is_cancellation_requested`](crate::Coroutine::is_cancellation_requested)
    /// is true.
    pub fn is_interrupted(&self) -> bool {
        matches!(self.repr, Repr::Interrupted(_))
    }

    /// The waiter's own cancellation, if [`is_interrupted`](Self::is_interrupted).
    pub fn interrupted_by(&self) -> Option<&Cancelled> {
        match &self.repr {
            Repr::Interrupted(c) => Some(c),
            _ => None,
        }
    }

    /// True if a coroutine tried to await itself (R-CO6: it would wait
    /// forever). Nothing was awaited.
    pub fn is_self_await(&self) -> bool {
        matches!(self.repr, Repr::SelfAwait)
    }

    /// Consumes the error, returning the panic payload.
    ///
    /// The first waiter to call it gets the original payload; a later one
    /// (the failure is shared, E1) gets the message as a `String`.
    ///
    /// # Panics
    ///
    /// Panics if the error is not a panic ([`is_panic`](Self::is_panic) is
    /// false).
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.try_into_panic() {
            Ok(p) => p,
            Err(e) => panic!("`JoinError::into_panic` called on a non-panic error: {e}"),
        }
    }

    /// Consumes the error, returning the panic payload if it is a panic and
    /// the error itself otherwise.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match &self.repr {
            Repr::Failed(f) if f.is_panic() => Ok(f
                .take_panic_payload()
                .unwrap_or_else(|| Box::new(f.panic_message().unwrap_or_default().to_owned()))),
            _ => Err(self),
        }
    }

    /// True if `a` and `b` carry the very same failure of one coroutine (not
    /// two equal copies): what R-CO5 requires of several waiters.
    pub fn same_failure(a: &JoinError, b: &JoinError) -> bool {
        match (a.failure(), b.failure()) {
            (Some(x), Some(y)) => Failure::ptr_eq(x, y),
            _ => false,
        }
    }

    /// The cancellation inside, whichever side it belongs to (the awaited
    /// coroutine's or the waiter's own).
    pub(crate) fn any_cancelled(&self) -> Option<&Cancelled> {
        match &self.repr {
            Repr::Cancelled(c) | Repr::Interrupted(c) => Some(c),
            _ => None,
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Failed(failure) => failure.fmt(f),
            Repr::Cancelled(c) => c.fmt(f),
            Repr::AwaitCancelled(None) => write!(
                f,
                "waiting for coroutine {} ended: the until trigger completed first",
                self.id
            ),
            Repr::AwaitCancelled(Some(cause)) => write!(
                f,
                "waiting for coroutine {} ended: the until trigger failed: {cause}",
                self.id
            ),
            Repr::Interrupted(c) => {
                write!(f, "waiting for coroutine {} interrupted: {c}", self.id)
            }
            Repr::SelfAwait => write!(
                f,
                "coroutine {} cannot await itself: it would wait forever",
                self.id
            ),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JoinError").field(&self.to_string()).finish()
    }
}

impl std::error::Error for JoinError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.repr {
            Repr::Failed(f) => Some(f),
            Repr::Cancelled(c) | Repr::Interrupted(c) => Some(c),
            Repr::AwaitCancelled(Some(f)) => Some(f),
            _ => None,
        }
    }
}
