//! What a wait can end with: [`Cancelled`] (a coroutine's own cancellation)
//! and [`JoinError`] (why `join` gave no value).
//!
//! Invariants:
//! - **E1** A coroutine's failure is created once, when it finishes, and
//!   shared by reference count: every waiter gets the same failure (R-CO5,
//!   D-13), observable with [`JoinError::same_failure`].
//! - **E2** "The awaited coroutine was cancelled" ([`JoinError::is_cancelled`]),
//!   "the until-trigger fired" ([`JoinError::is_await_cancelled`], D-19) and
//!   "the waiter itself was cancelled" ([`JoinError::is_interrupted`], P-04)
//!   are three different kinds; no predicate answers true for two of them.

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use super::CoroutineId;

/// Why a coroutine was cancelled: a closed set that may grow.
///
/// The analogue of Trio's cancellation sources: it says *who* asked, while
/// [`Cancelled::reason`] carries free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelCause {
    /// Someone called [`Coroutine::cancel`](crate::task::Coroutine::cancel)
    /// (or [`JoinHandle::cancel`](crate::task::JoinHandle::cancel)).
    Explicit,
    /// The scheduler found a deadlock: nothing could ever wake this
    /// coroutine.
    Deadlock,
    /// The runtime is shutting down (the main coroutine panicked).
    Shutdown,
}

/// A coroutine's cancellation, delivered at one of its suspension points:
/// the RFC's `CancellationException`.
///
/// Returned by every blocking call ([`delay`](crate::time::delay),
/// [`suspend`](crate::task::suspend), joins) when the *calling* coroutine is
/// cancelled while it waits. Cancellation is edge-triggered (D-1): it is
/// delivered once; the coroutine may catch it, clean up (even with more
/// blocking calls) and return.
///
/// I/O surfaces it as an [`std::io::Error`] of kind
/// [`Other`](std::io::ErrorKind::Other) whose inner error is this value (not
/// `Interrupted`, which `read_exact` would retry and so swallow the
/// cancellation); find it with [`crate::io::cancelled`].
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
}

impl Cancelled {
    pub(crate) fn new(id: CoroutineId, cause: CancelCause, reason: Option<String>) -> Cancelled {
        Cancelled { id, cause, reason }
    }

    /// The cancelled coroutine.
    pub fn id(&self) -> CoroutineId {
        self.id
    }

    /// Who asked for the cancellation.
    pub fn cause(&self) -> CancelCause {
        self.cause
    }

    /// The text given to [`Coroutine::cancel_with`](crate::task::Coroutine::cancel_with),
    /// if any.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "coroutine {} cancelled", self.id)?;
        match (&self.reason, self.cause) {
            (Some(reason), _) => write!(f, ": {reason}"),
            (None, CancelCause::Explicit) => Ok(()),
            (None, CancelCause::Deadlock) => f.write_str(": deadlock"),
            (None, CancelCause::Shutdown) => f.write_str(": shutdown"),
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

/// How a coroutine failed: shared by all of its waiters (E1).
pub(crate) enum Failure {
    /// It never produced a value because it was cancelled (before it
    /// started, or unwound by shutdown).
    Cancelled(Cancelled),
    /// Its body panicked.
    Panic {
        message: String,
        /// The original payload; the first `into_panic` takes it.
        payload: RefCell<Option<Box<dyn Any + Send + 'static>>>,
    },
}

enum Repr {
    /// The awaited coroutine failed (cancelled or panicked).
    Failed(Rc<Failure>),
    /// The until-trigger completed first.
    AwaitCancelled,
    /// The waiting coroutine was cancelled while it waited.
    Interrupted(Cancelled),
}

/// Why [`JoinHandle::join`](crate::task::JoinHandle::join) (or another wait
/// on a coroutine) did not give a value.
///
/// The coroutine analogue of the `Err` of `std::thread::JoinHandle::join`,
/// shaped like tokio's `JoinError`: an opaque value with predicates. Exactly
/// one of [`is_cancelled`](Self::is_cancelled), [`is_panic`](Self::is_panic),
/// [`is_await_cancelled`](Self::is_await_cancelled) and
/// [`is_interrupted`](Self::is_interrupted) is true.
///
/// Several waiters of one failed coroutine get the *same* failure, not
/// copies (R-CO5): see [`JoinError::same_failure`]. A `JoinError` is `!Send`
/// for that reason (the failure is reference-counted).
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let h = spawn(|| -> u32 { panic!("boom") });
///     let err = h.join().unwrap_err();
///     assert!(err.is_panic());
///     assert_eq!(err.panic_message(), Some("boom"));
///     assert_eq!(err.to_string(), format!("coroutine {} panicked: boom", err.id()));
/// })
/// .unwrap();
/// ```
pub struct JoinError {
    id: CoroutineId,
    repr: Repr,
}

impl JoinError {
    pub(crate) fn failed(id: CoroutineId, failure: Rc<Failure>) -> JoinError {
        JoinError {
            id,
            repr: Repr::Failed(failure),
        }
    }

    pub(crate) fn await_cancelled(id: CoroutineId) -> JoinError {
        JoinError {
            id,
            repr: Repr::AwaitCancelled,
        }
    }

    pub(crate) fn interrupted(id: CoroutineId, by: Cancelled) -> JoinError {
        JoinError {
            id,
            repr: Repr::Interrupted(by),
        }
    }

    /// The awaited coroutine.
    pub fn id(&self) -> CoroutineId {
        self.id
    }

    /// True if the awaited coroutine was cancelled before it produced a
    /// value (it never started, or it was unwound by shutdown).
    ///
    /// A coroutine that caught its cancellation and returned normally has a
    /// value, so joining it succeeds.
    pub fn is_cancelled(&self) -> bool {
        matches!(&self.repr, Repr::Failed(f) if matches!(**f, Failure::Cancelled(_)))
    }

    /// The awaited coroutine's cancellation, if [`is_cancelled`](Self::is_cancelled).
    pub fn cancelled(&self) -> Option<&Cancelled> {
        match &self.repr {
            Repr::Failed(f) => match &**f {
                Failure::Cancelled(c) => Some(c),
                Failure::Panic { .. } => None,
            },
            _ => None,
        }
    }

    /// True if the awaited coroutine panicked.
    pub fn is_panic(&self) -> bool {
        matches!(&self.repr, Repr::Failed(f) if matches!(**f, Failure::Panic { .. }))
    }

    /// The panic message (a `&str` or `String` payload), if
    /// [`is_panic`](Self::is_panic).
    pub fn panic_message(&self) -> Option<&str> {
        match &self.repr {
            Repr::Failed(f) => match &**f {
                Failure::Panic { message, .. } => Some(message),
                Failure::Cancelled(_) => None,
            },
            _ => None,
        }
    }

    /// True if the wait ended because its until-trigger completed first
    /// (the RFC's `AwaitCancelledException`). The awaited coroutine was not
    /// cancelled and goes on running (R-AU3). Not a cancellation (D-19).
    pub fn is_await_cancelled(&self) -> bool {
        matches!(self.repr, Repr::AwaitCancelled)
    }

    /// True if the *waiting* coroutine was cancelled while it waited (P-04):
    /// the awaited coroutine is unaffected, and the waiter's own
    /// [`Coroutine::is_cancellation_requested`](crate::task::Coroutine::is_cancellation_requested)
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

    /// Consumes the error, returning the panic payload.
    ///
    /// The first waiter to call it gets the original payload; a later one
    /// (the failure is shared, E1) gets the message as a `String`.
    ///
    /// # Panics
    ///
    /// Panics if the error is not a panic ([`is_panic`](Self::is_panic) is
    /// false).
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
            Repr::Failed(f) => match &**f {
                Failure::Panic { message, payload } => Ok(payload
                    .borrow_mut()
                    .take()
                    .unwrap_or_else(|| Box::new(message.clone()))),
                Failure::Cancelled(_) => Err(self),
            },
            _ => Err(self),
        }
    }

    /// True if `a` and `b` carry the very same failure of one coroutine (not
    /// two equal copies): what R-CO5 requires of several waiters.
    pub fn same_failure(a: &JoinError, b: &JoinError) -> bool {
        match (&a.repr, &b.repr) {
            (Repr::Failed(x), Repr::Failed(y)) => Rc::ptr_eq(x, y),
            _ => false,
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Failed(failure) => match &**failure {
                Failure::Cancelled(c) => c.fmt(f),
                Failure::Panic { message, .. } => {
                    write!(f, "coroutine {} panicked: {message}", self.id)
                }
            },
            Repr::AwaitCancelled => write!(
                f,
                "waiting for coroutine {} ended: the until trigger completed first",
                self.id
            ),
            Repr::Interrupted(c) => {
                write!(f, "waiting for coroutine {} interrupted: {c}", self.id)
            }
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JoinError").field(&self.to_string()).finish()
    }
}

impl std::error::Error for JoinError {}

/// The message of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
