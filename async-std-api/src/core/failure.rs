//! [`Failure`]: what a coroutine that did not succeed leaves behind, shared by
//! everyone it is reported to (the RFC's uncaught exception object).
//!
//! Owns: the failure value (a panic payload and its message, or the error a
//! [`spawn_try`](crate::spawn_try) body returned), where it came from, and the
//! failures attached to it later.
//!
//! Invariants:
//! - **FA1** A failure is created once, where it happened, and shared by
//!   reference count from then on: every awaiter, responsibility point and
//!   handler gets the same object (R-CO5, D-13, P-14), observable with
//!   [`Failure::ptr_eq`]. Nothing ever rebuilds or copies it.
//! - **FA2** One shape whatever the count (P-12): a primary failure plus the
//!   later failures attached to it ([`Failure::attached`]), never a bare
//!   value for one failure and a group for two. Attaching only appends.
//! - **FA3** A cancellation is never a failure: the runtime never builds a
//!   `Failure` from a coroutine's own [`Cancelled`](crate::Cancelled)
//!   (unhandled cancellation is suppressed, R-C1), so generic failure
//!   handling cannot absorb one by accident (P-01).
//!
//! A `Failure` is `Send + Sync` (an `Arc` with `Mutex`es inside, touched
//! only at creation, attach and payload take), so it can travel inside an
//! [`std::io::Error`], a [`Cancelled`](crate::Cancelled) or the
//! [`Error`](crate::Error) that [`run`](crate::run) returns.

use std::any::Any;
use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use super::id::{CoroutineId, ScopeId};

/// What kind of failure a [`Failure`] is: a closed set that may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// A panic (the RFC's uncaught exception).
    Panic,
    /// An error returned by a [`spawn_try`](crate::spawn_try) body, or by a
    /// scope's exception handler that rethrew.
    Error,
}

/// Where a [`Failure`] happened: a closed set that may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureOrigin {
    /// The body of this coroutine.
    Coroutine(CoroutineId),
    /// An [`on_finally`](crate::Coroutine::on_finally) handler of this
    /// coroutine (reported apart from the coroutine's own outcome, D-12).
    CoroutineFinally(CoroutineId),
    /// An exception handler of this scope
    /// ([`set_exception_handler`](crate::ScopeRef::set_exception_handler)).
    ExceptionHandler(ScopeId),
    /// An [`on_finally`](crate::ScopeRef::on_finally) handler of this scope.
    ScopeFinally(ScopeId),
    /// A promise: the error given to a [`sync::Resolver`](crate::sync::Resolver)'s
    /// or a [`sync::Promise`](crate::sync::Promise)'s `reject`.
    Rejected,
}

enum Repr {
    Panic {
        message: String,
        /// The original payload, until someone takes it.
        payload: Mutex<Option<Box<dyn Any + Send + 'static>>>,
    },
    Error(Box<dyn StdError + Send + Sync + 'static>),
}

struct Inner {
    origin: FailureOrigin,
    repr: Repr,
    /// FA2.
    attached: Mutex<Vec<Failure>>,
}

/// A coroutine's failure: a panic, or an error its body returned. The RFC's
/// uncaught exception, shared by reference count.
///
/// The analogue of the `Box<dyn Any + Send>` that
/// `std::thread::JoinHandle::join` returns, made shareable: `Clone` shares
/// the same failure (it never copies it), so every awaiter of one coroutine,
/// every responsibility point of its scope and every handler it reaches
/// holds the *same* object (R-CO5, D-13); [`Failure::ptr_eq`] tells.
///
/// One stable shape whatever the count (P-12): a primary failure, plus the
/// failures that happened later in the same scope (siblings that failed
/// while the scope was being cancelled, D-4) [`attached`](Failure::attached)
/// to it. Cancellations of siblings are never attached: they are not
/// failures.
///
/// Dropping a `Failure` drops one reference; the panic payload or error is
/// dropped with the last one.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn, FailureKind};
///
/// run(|| {
///     let c = spawn(|| -> u8 { panic!("boom") }).coroutine();
///     let a = c.wait().unwrap_err();
///     let b = c.wait().unwrap_err();
///     let (fa, fb) = (a.failure().unwrap(), b.failure().unwrap());
///     assert!(async_std_api::Failure::ptr_eq(fa, fb));
///     assert_eq!(fa.kind(), FailureKind::Panic);
///     assert_eq!(fa.to_string(), format!("coroutine {} panicked: boom", c.id()));
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct Failure(Arc<Inner>);

impl Failure {
    /// A failure from a caught panic.
    pub(crate) fn from_panic(origin: FailureOrigin, payload: Box<dyn Any + Send>) -> Failure {
        let message = panic_message(&*payload);
        Failure::new(
            origin,
            Repr::Panic {
                message,
                payload: Mutex::new(Some(payload)),
            },
        )
    }

    /// A failure from a panic whose payload is kept elsewhere (the main
    /// coroutine's, resumed by [`run`](crate::run)).
    pub(crate) fn from_panic_message(origin: FailureOrigin, message: String) -> Failure {
        Failure::new(
            origin,
            Repr::Panic {
                message,
                payload: Mutex::new(None),
            },
        )
    }

    /// A failure from a returned error.
    pub(crate) fn from_error(
        origin: FailureOrigin,
        error: Box<dyn StdError + Send + Sync + 'static>,
    ) -> Failure {
        Failure::new(origin, Repr::Error(error))
    }

    fn new(origin: FailureOrigin, repr: Repr) -> Failure {
        Failure(Arc::new(Inner {
            origin,
            repr,
            attached: Mutex::new(Vec::new()),
        }))
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> FailureKind {
        match self.0.repr {
            Repr::Panic { .. } => FailureKind::Panic,
            Repr::Error(_) => FailureKind::Error,
        }
    }

    /// True if it is a panic.
    pub fn is_panic(&self) -> bool {
        self.kind() == FailureKind::Panic
    }

    /// Where it happened.
    pub fn origin(&self) -> FailureOrigin {
        self.0.origin
    }

    /// The coroutine whose body or `on_finally` handler failed, if a
    /// coroutine's.
    pub fn coroutine(&self) -> Option<CoroutineId> {
        match self.0.origin {
            FailureOrigin::Coroutine(id) | FailureOrigin::CoroutineFinally(id) => Some(id),
            _ => None,
        }
    }

    /// The panic message (a `&str` or `String` payload), if a panic.
    pub fn panic_message(&self) -> Option<&str> {
        match &self.0.repr {
            Repr::Panic { message, .. } => Some(message),
            Repr::Error(_) => None,
        }
    }

    /// Takes the original panic payload, if a panic and nobody took it yet
    /// (the failure is shared: the first taker gets it, FA1).
    pub fn take_panic_payload(&self) -> Option<Box<dyn Any + Send + 'static>> {
        match &self.0.repr {
            Repr::Panic { payload, .. } => lock(payload).take(),
            Repr::Error(_) => None,
        }
    }

    /// The returned error, if an error.
    pub fn error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        match &self.0.repr {
            Repr::Error(e) => Some(&**e),
            Repr::Panic { .. } => None,
        }
    }

    /// The returned error as a concrete type, if it is one.
    pub fn downcast_ref<E: StdError + 'static>(&self) -> Option<&E> {
        self.error().and_then(|e| e.downcast_ref::<E>())
    }

    /// The failures attached to this one since it happened (FA2), oldest
    /// first: later failures in the same scope (D-4), or failures of
    /// `on_finally` handlers after the first one.
    pub fn attached(&self) -> Vec<Failure> {
        lock(&self.0.attached).clone()
    }

    /// Attaches a later failure (FA2); attaching a failure to itself does
    /// nothing.
    pub(crate) fn attach(&self, later: Failure) {
        if !Failure::ptr_eq(self, &later) {
            lock(&self.0.attached).push(later);
        }
    }

    /// True if `a` and `b` are the very same failure (not two equal copies):
    /// what R-CO5 requires of several awaiters.
    pub fn ptr_eq(a: &Failure, b: &Failure) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// The primary failure's line, without the attached count.
    fn fmt_primary(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.0.origin {
            FailureOrigin::Coroutine(id) => format!("coroutine {id}"),
            FailureOrigin::CoroutineFinally(id) => {
                format!("an on_finally handler of coroutine {id}")
            }
            FailureOrigin::ExceptionHandler(id) => format!("the exception handler of scope {id}"),
            FailureOrigin::ScopeFinally(id) => format!("an on_finally handler of scope {id}"),
            FailureOrigin::Rejected => "a promise".to_owned(),
        };
        match &self.0.repr {
            Repr::Panic { message, .. } => write!(f, "{what} panicked: {message}"),
            Repr::Error(e) => write!(f, "{what} failed: {e}"),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the value
    // half-written (each holder does one push or one take).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl fmt::Display for Failure {
    /// One line: the primary failure, then how many were attached, as
    /// `coroutine 7 panicked: boom (and 2 more failures)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_primary(f)?;
        match lock(&self.0.attached).len() {
            0 => Ok(()),
            1 => f.write_str(" (and 1 more failure)"),
            n => write!(f, " (and {n} more failures)"),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Failure").field(&self.to_string()).finish()
    }
}

/// By identity (FA1): two failures are equal if they are the same object.
impl PartialEq for Failure {
    fn eq(&self, other: &Failure) -> bool {
        Failure::ptr_eq(self, other)
    }
}

impl Eq for Failure {}

impl StdError for Failure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.0.repr {
            Repr::Error(e) => Some(&**e),
            Repr::Panic { .. } => None,
        }
    }
}

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
