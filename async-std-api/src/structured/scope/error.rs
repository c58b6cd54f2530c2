//! [`ScopeError`]: why a scope operation (spawning into it, waiting for it,
//! setting a handler) did not succeed.

use std::fmt;
use std::panic::Location;

use crate::core::error::{CancelCause, Cancelled};
use crate::core::failure::Failure;
use crate::core::id::ScopeId;

/// What kind of failure a [`ScopeError`] is: a closed set that may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScopeErrorKind {
    /// The scope is closed (cancelled or disposed): nothing can be spawned
    /// in it (R-S4).
    Closed,
    /// A coroutine of the scope or of one of its descendants tried to wait
    /// for it: it would wait for itself (R-S8).
    FromInside,
    /// The scope was cancelled (before or while waiting, R-S6).
    Cancelled,
    /// A coroutine of the scope (or of a child scope) failed and nothing
    /// handled it: the waiter is a responsibility point and receives the
    /// failure (the RFC's error flow, step 5).
    Failed,
    /// The cancellation token given to the wait completed first.
    AwaitCancelled,
    /// The waiting coroutine itself was cancelled while it waited.
    Interrupted,
    /// `await_after_cancellation` on a scope that was not cancelled.
    NotCancelled,
    /// An exception handler cannot be set on the global scope.
    GlobalScope,
    /// `dispose_after_timeout` was given a timeout outside the RFC's bounds
    /// (more than 0 and less than 10 minutes, R-S9).
    InvalidTimeout,
}

#[derive(Clone)]
enum Repr {
    Plain,
    Closed,
    FromInside(&'static Location<'static>),
    Cancelled {
        cause: CancelCause,
        reason: Option<String>,
        failure: Option<Failure>,
    },
    Failed(Failure),
    /// The waiter's own cancellation, and the failure the wait had already
    /// received (D-26).
    Interrupted(Cancelled, Option<Failure>),
    /// The token completed first, after the wait had received this failure
    /// (D-26), if any.
    AwaitCancelled(Option<Failure>),
    InvalidTimeout(u64),
}

/// Why a scope operation did not succeed.
///
/// An opaque error with a [`kind`](ScopeError::kind) and accessors, whose
/// `Display` is one line naming the scope and the reason.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn_in, Scope, ScopeErrorKind};
///
/// run(|| {
///     let scope = Scope::new();
///     scope.cancel();
///     let err = spawn_in(&scope, || ()).unwrap_err();
///     assert_eq!(err.kind(), ScopeErrorKind::Closed);
///     assert_eq!(
///         err.to_string(),
///         format!("cannot spawn a coroutine in scope {}: the scope is closed", scope.id())
///     );
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct ScopeError {
    scope: ScopeId,
    kind: ScopeErrorKind,
    repr: Repr,
}

impl ScopeError {
    pub(crate) fn closed(scope: ScopeId) -> Self {
        ScopeError {
            scope,
            kind: ScopeErrorKind::Closed,
            repr: Repr::Closed,
        }
    }

    pub(crate) fn from_inside(scope: ScopeId, created_at: &'static Location<'static>) -> Self {
        ScopeError {
            scope,
            kind: ScopeErrorKind::FromInside,
            repr: Repr::FromInside(created_at),
        }
    }

    pub(crate) fn cancelled(
        scope: ScopeId,
        cause: CancelCause,
        reason: Option<String>,
        failure: Option<Failure>,
    ) -> Self {
        ScopeError {
            scope,
            kind: ScopeErrorKind::Cancelled,
            repr: Repr::Cancelled {
                cause,
                reason,
                failure,
            },
        }
    }

    pub(crate) fn failed(scope: ScopeId, f: Failure) -> Self {
        ScopeError {
            scope,
            kind: ScopeErrorKind::Failed,
            repr: Repr::Failed(f),
        }
    }

    pub(crate) fn interrupted(scope: ScopeId, by: Cancelled) -> Self {
        ScopeError {
            scope,
            kind: ScopeErrorKind::Interrupted,
            repr: Repr::Interrupted(by, None),
        }
    }

    pub(crate) fn await_cancelled(scope: ScopeId) -> Self {
        ScopeError {
            scope,
            kind: ScopeErrorKind::AwaitCancelled,
            repr: Repr::AwaitCancelled(None),
        }
    }

    pub(crate) fn invalid_timeout(scope: ScopeId, ms: u64) -> Self {
        ScopeError {
            scope,
            kind: ScopeErrorKind::InvalidTimeout,
            repr: Repr::InvalidTimeout(ms),
        }
    }

    /// The failure a wait had received when it was interrupted or its token
    /// completed (D-26): kept on the error, so it is not lost.
    pub(crate) fn with_failure(mut self, f: Option<Failure>) -> Self {
        match &mut self.repr {
            Repr::Interrupted(_, slot) | Repr::AwaitCancelled(slot) => *slot = f,
            _ => {}
        }
        self
    }

    pub(crate) fn plain(scope: ScopeId, kind: ScopeErrorKind) -> Self {
        ScopeError {
            scope,
            kind,
            repr: Repr::Plain,
        }
    }

    /// The scope.
    pub fn scope(&self) -> ScopeId {
        self.scope
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ScopeErrorKind {
        self.kind
    }

    /// The failure: the one a responsibility point received
    /// ([`ScopeErrorKind::Failed`]), the one that cancelled the scope
    /// ([`ScopeErrorKind::Cancelled`] with cause
    /// [`CancelCause::Failure`]), or the one an `await_completion` had
    /// received when its caller was cancelled or its token completed before
    /// the scope was idle ([`ScopeErrorKind::Interrupted`],
    /// [`ScopeErrorKind::AwaitCancelled`], D-26).
    pub fn failure(&self) -> Option<&Failure> {
        match &self.repr {
            Repr::Failed(f) => Some(f),
            Repr::Cancelled { failure, .. } => failure.as_ref(),
            Repr::Interrupted(_, f) | Repr::AwaitCancelled(f) => f.as_ref(),
            _ => None,
        }
    }

    /// Why the scope was cancelled, if [`ScopeErrorKind::Cancelled`].
    pub fn cancel_cause(&self) -> Option<CancelCause> {
        match &self.repr {
            Repr::Cancelled { cause, .. } => Some(*cause),
            _ => None,
        }
    }

    /// The reason given to the scope's `cancel_with`, if any.
    pub fn reason(&self) -> Option<&str> {
        match &self.repr {
            Repr::Cancelled { reason, .. } => reason.as_deref(),
            _ => None,
        }
    }

    /// The waiter's own cancellation, if [`ScopeErrorKind::Interrupted`].
    pub fn interrupted_by(&self) -> Option<&Cancelled> {
        match &self.repr {
            Repr::Interrupted(c, _) => Some(c),
            _ => None,
        }
    }
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.scope;
        match &self.repr {
            Repr::Closed => write!(
                f,
                "cannot spawn a coroutine in scope {id}: the scope is closed"
            ),
            Repr::FromInside(at) => write!(
                f,
                "cannot await scope {id} from inside it or one of its child scopes: it would \
                 wait for itself (scope created at {at})"
            ),
            Repr::Cancelled {
                reason: Some(r), ..
            } => write!(f, "scope {id} cancelled: {r}"),
            Repr::Cancelled {
                failure: Some(fail),
                ..
            } => write!(f, "scope {id} cancelled: {fail}"),
            Repr::Cancelled { .. } => write!(f, "scope {id} cancelled"),
            Repr::Failed(fail) => write!(f, "scope {id} failed: {fail}"),
            Repr::Interrupted(c, None) => write!(f, "waiting for scope {id} interrupted: {c}"),
            Repr::Interrupted(c, Some(fail)) => write!(
                f,
                "waiting for scope {id} interrupted: {c} (the scope had failed: {fail})"
            ),
            Repr::AwaitCancelled(None) => write!(
                f,
                "waiting for scope {id} ended: the cancellation token completed first"
            ),
            Repr::AwaitCancelled(Some(fail)) => write!(
                f,
                "waiting for scope {id} ended: the cancellation token completed before the \
                 scope was idle (the scope had failed: {fail})"
            ),
            Repr::InvalidTimeout(ms) => write!(
                f,
                "cannot dispose scope {id} after {ms} ms: the timeout must be more than 0 and \
                 less than 600000 ms (10 minutes)"
            ),
            Repr::Plain => match self.kind {
                ScopeErrorKind::NotCancelled => write!(
                    f,
                    "cannot await scope {id} after cancellation: it was not cancelled (call \
                     cancel first)"
                ),
                ScopeErrorKind::GlobalScope => write!(
                    f,
                    "cannot set an exception handler on the global scope (scope {id})"
                ),
                other => write!(f, "scope {id}: {other:?}"),
            },
        }
    }
}

impl fmt::Debug for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ScopeError")
            .field(&self.to_string())
            .finish()
    }
}

impl std::error::Error for ScopeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.repr {
            Repr::Failed(f) => Some(f),
            Repr::Interrupted(c, _) => Some(c),
            _ => None,
        }
    }
}
