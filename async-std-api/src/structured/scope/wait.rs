//! Waiting for a scope: [`await_completion`] (R-S6, R-S8) and
//! [`await_after_cancellation`] (R-S7).
//!
//! Both are loops on the scope's [`Notify`](crate::task::state::Notify) and
//! the token's completion, re-checking their conditions after every resume
//! (W2). The waiter is a *responsibility point* while it waits: the failures
//! the scope receives are delivered to it (EF4 in `scope::flow`).
//!
//! Precedence when several things are ready at once (D-20): the waiter's own
//! cancellation, then a delivered failure, then the scope's cancellation,
//! then the scope's completion, then the token. A wait from inside the
//! scope (R-S8) is refused before all of them: it is a misuse that never
//! waits, so, like a self-await (R-CO6), it is not a cancellation point and
//! leaves a pending cancellation pending.
//!
//! A delivered failure does not end `await_completion` at once (D-26): the
//! scope was cancelled by it, and the wait goes on until the scope and its
//! descendants are idle, so the caller never runs on while the siblings'
//! cleanup still does, and the failures that arrive meanwhile are attached
//! to the first by then (EF3). The waiter's own cancellation and the token
//! still end the wait at once; they then carry the failure
//! ([`ScopeError::failure`]), which this point consumed.

use std::panic::Location;
use std::rc::Rc;

use super::state::scope_of;
use super::state::{ScopeCancel, ScopeState};
use super::{ScopeError, ScopeErrorKind};
use crate::core::awaitable::Awaitable;
use crate::core::failure::Failure;
use crate::core::state::CoroState;
use crate::core::wait::{checkpoint, suspend_once, with_me};
use crate::core::waiters::{NotifySubscription, Subscription};

/// Leaves the responsibility points when dropped (the wait returns or
/// unwinds).
struct RespGuard<'a>(&'a ScopeState);

impl Drop for RespGuard<'_> {
    fn drop(&mut self) {
        self.0.resp_leave();
    }
}

fn cancelled(s: &ScopeState, c: ScopeCancel) -> ScopeError {
    ScopeError::cancelled(s.id, c.cause, c.reason, c.failure)
}

/// R-S8: a coroutine inside `s` (or a descendant) cannot wait for it.
fn check_outside(s: &ScopeState, me: &CoroState) -> Result<(), ScopeError> {
    match scope_of(me) {
        Some(mine) if mine.is_within(s) => Err(ScopeError::from_inside(s.id, s.created_at)),
        _ => Ok(()),
    }
}

/// The RFC's `Scope::awaitCompletion(cancellation)`.
#[track_caller]
pub(super) fn await_completion(
    s: &Rc<ScopeState>,
    until: &dyn Awaitable,
    at: &'static Location<'static>,
) -> Result<(), ScopeError> {
    with_me("await_completion", |rt, me| {
        // R-S8 first: a wait from inside is a mistake that never waits (as
        // R-CO6's self-await), so it must not consume the caller's pending
        // cancellation, which stays for its next suspension point.
        check_outside(s, me)?;
        checkpoint(me).map_err(|c| ScopeError::interrupted(s.id, c))?;
        if let Some(c) = s.cancel_record() {
            return Err(cancelled(s, c));
        }
        if s.is_idle() {
            return Ok(());
        }
        let token = until.completion();
        if token.is_done() {
            return Err(ScopeError::await_cancelled(s.id));
        }
        let cursor = s.resp_enter();
        let _resp = RespGuard(s);
        let _scope = NotifySubscription::new(&s.notify, me);
        let _token = Subscription::new(token, me);
        let what = format!(
            "await completion of scope {} until {}",
            s.id,
            until.describe()
        );
        // D-26: the first failure delivered here, returned once the scope
        // is idle.
        let mut failed: Option<Failure> = None;
        loop {
            let resumed = suspend_once(rt, me, what.as_bytes(), at);
            // Read before anything can end the wait: a failure delivered
            // here is consumed by this point, so it must leave with it.
            if failed.is_none() {
                failed = s.resp_failure_at(cursor);
            }
            if let Err(c) = resumed {
                return Err(ScopeError::interrupted(s.id, c).with_failure(failed));
            }
            if let Some(f) = &failed {
                if s.is_idle() {
                    return Err(ScopeError::failed(s.id, f.clone()));
                }
                if token.is_done() {
                    return Err(ScopeError::await_cancelled(s.id).with_failure(failed));
                }
                continue;
            }
            if let Some(c) = s.cancel_record() {
                return Err(cancelled(s, c));
            }
            if s.is_idle() {
                return Ok(());
            }
            if token.is_done() {
                return Err(ScopeError::await_cancelled(s.id));
            }
        }
    })
}

/// The RFC's `Scope::awaitAfterCancellation(errorHandler, cancellation)`.
#[track_caller]
pub(super) fn await_after_cancellation(
    s: &Rc<ScopeState>,
    error_handler: Option<&dyn Fn(Failure)>,
    until: Option<&dyn Awaitable>,
    at: &'static Location<'static>,
) -> Result<(), ScopeError> {
    with_me("await_after_cancellation", |rt, me| {
        // R-S8 before the cancellation point, as above: a coroutine that
        // cancelled its own scope gets `FromInside`, not its cancellation.
        check_outside(s, me)?;
        checkpoint(me).map_err(|c| ScopeError::interrupted(s.id, c))?;
        if !s.is_cancelled() {
            return Err(ScopeError::plain(s.id, ScopeErrorKind::NotCancelled));
        }
        let mut cursor = s.resp_enter();
        let _resp = RespGuard(s);
        let token = until.map(|u| u.completion());
        let _scope = NotifySubscription::new(&s.notify, me);
        let _token = token.map(|t| Subscription::new(t, me));
        let what = match until {
            Some(u) => format!(
                "await scope {} after cancellation until {}",
                s.id,
                u.describe()
            ),
            None => format!("await scope {} after cancellation", s.id),
        };
        loop {
            while let Some(f) = s.resp_failure_at(cursor) {
                cursor += 1;
                match error_handler {
                    Some(h) => h(f),
                    None => return Err(ScopeError::failed(s.id, f)),
                }
            }
            if s.is_empty() {
                return Ok(());
            }
            if token.is_some_and(|t| t.is_done()) {
                return Err(ScopeError::await_cancelled(s.id));
            }
            suspend_once(rt, me, what.as_bytes(), at)
                .map_err(|c| ScopeError::interrupted(s.id, c))?;
        }
    })
}
