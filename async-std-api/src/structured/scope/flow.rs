//! The error flow (the RFC's "Error Handling" list) and a coroutine's finish
//! accounting.
//!
//! When a coroutine ends with a failure F (a panic, or an error its
//! [`spawn_try`](crate::spawn_try) body returned):
//!
//! 1. **EF1** If at least one await was registered when it finished, F went
//!    to them and is *consumed* (D-3, D-17: decided at completion). A later
//!    `join` still returns the same, stored F.
//! 2. **EF2** Otherwise F goes to the coroutine's scope S. If S has an
//!    exception handler (for a failure from a child scope: its child-scope
//!    handler, else its exception handler), the handler is called once per
//!    failure (D-4): `Ok` absorbs F; `Err(F')` (or a panic in the handler,
//!    which becomes a failure) continues with F' at S's parent.
//! 3. **EF3** With no handler: if S already failed, F is attached to S's
//!    first failure (D-4, P-12), and handed to the responsibility points
//!    waiting now (an `await_after_cancellation` error handler sees each
//!    failure once); it goes no further (the first one already went on).
//! 4. **EF4** Otherwise F becomes S's failure; S is cancelled (children
//!    first; every coroutine gets a [`Cancelled`](crate::Cancelled) with
//!    cause [`Failure`](crate::CancelCause::Failure) carrying F, D-14); if
//!    responsibility points (`await_completion` callers) wait on S, they all
//!    receive F (the same object) and it stops there; else it continues at
//!    S's parent.
//! 5. **EF5** At the global scope, F starts graceful shutdown; a second one
//!    during shutdown starts its second phase (R-GS1).
//!
//! Not failures, so never in this flow: a coroutine's cancellation
//! (unhandled cancellation is suppressed, R-C1), including the siblings'
//! cancellations caused by F (filtered out, D-4). An uncaught
//! await-cancelled error is an ordinary failure (D-19): it reaches this
//! flow like any error a `spawn_try` body returns.
//!
//! Failures of a coroutine's `on_finally` handlers are collected into one
//! failure (the first, with the others attached) and sent through the same
//! flow from the coroutine's scope, separately from its own outcome (D-12).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use super::state::{Mode, ScopeCancel, ScopeState, Walk};
use super::ScopeRef;
use crate::core::coroutine::Coroutine;
use crate::core::error::CancelCause;
use crate::core::failure::{Failure, FailureOrigin};
use crate::core::runtime;
use crate::core::state::CoroState;
use crate::structured::shutdown;

/// A member's finish accounting reached the error flow (called from
/// `ScopeState`'s `Membership::finished`): its unawaited failure, then its
/// `on_finally` failures, each from its scope.
#[cold]
#[inline(never)]
pub(super) fn report(
    scope: &Rc<ScopeState>,
    state: &Rc<CoroState>,
    unawaited: Option<Failure>,
    finally_failure: Option<Failure>,
) {
    if let Some(f) = unawaited {
        failed(scope, state, f, false);
    }
    if let Some(f) = finally_failure {
        failed(scope, state, f, false);
    }
}

/// Runs the flow for `f` arriving at `scope` from a coroutine of it (or,
/// with `from_child`, from one of its child scopes), `co` being the failing
/// coroutine.
pub(crate) fn failed(scope: &Rc<ScopeState>, co: &Rc<CoroState>, f: Failure, from_child: bool) {
    let mut s = scope.clone();
    let mut f = f;
    let mut from_child = from_child;
    loop {
        if s.is_global {
            // EF5.
            shutdown::unhandled_failure(f);
            return;
        }
        // EF2.
        let handler = if from_child {
            s.child_handler
                .borrow()
                .clone()
                .or_else(|| s.handler.borrow().clone())
        } else {
            s.handler.borrow().clone()
        };
        if let Some(h) = handler {
            let scope_ref = ScopeRef { state: s.clone() };
            let coroutine = Coroutine { state: co.clone() };
            match catch_unwind(AssertUnwindSafe(|| h(&scope_ref, &coroutine, &f))) {
                Ok(Ok(())) => return,
                Ok(Err(next)) => f = next,
                Err(p) => f = Failure::from_panic(FailureOrigin::ExceptionHandler(s.id), p),
            }
            let Some(parent) = s.parent.clone() else {
                shutdown::unhandled_failure(f);
                return;
            };
            s = parent;
            from_child = true;
            continue;
        }
        // EF3.
        if let Some(first) = s.failure() {
            first.attach(f.clone());
            if s.has_resp_points() {
                s.resp_deliver(f);
            }
            return;
        }
        // EF4.
        s.set_failure(f.clone());
        let cancel = ScopeCancel {
            cause: CancelCause::Failure,
            reason: None,
            failure: Some(f.clone()),
            origin: s.id,
        };
        s.walk(&Walk {
            mode: Mode::Cancel,
            cancel: &cancel,
            at: None,
        });
        if s.has_resp_points() {
            s.resp_deliver(f);
            return;
        }
        let Some(parent) = s.parent.clone() else {
            shutdown::unhandled_failure(f);
            return;
        };
        s = parent;
        from_child = true;
    }
}

/// [`failed`] for a failure that has no coroutine of its own (a scope's
/// `on_finally` handler): reported with the running coroutine, or, outside
/// coroutines, straight to the runtime.
pub(crate) fn failed_in_context(scope: &Rc<ScopeState>, f: Failure, from_child: bool) {
    let co = runtime::with_running(|_, me| me.clone());
    match co {
        Some(co) => failed(scope, &co, f, from_child),
        None => shutdown::unhandled_failure(f),
    }
}
