//! Cancellation: the host's policy over the scheduler's `enqueue` status,
//! [`protect`] and [`check_cancelled`].
//!
//! The scheduler only resumes a coroutine with a status; what a
//! cancellation *means* is decided here (ARCHITECTURE "The host"):
//!
//! - **C-1** First request wins: a later request, and its reason, is
//!   ignored (I3 in `task::state`).
//! - **C-2** Not started: it is enqueued with `AA_E_CANCELLED`, so its entry
//!   gets a negative start status and never runs the body (T3 in `task`);
//!   its captures are dropped and its `on_finally` handlers run before its
//!   joiners wake (D-23, P-16).
//! - **C-3** Suspended (or queued to resume): enqueued with
//!   `AA_E_CANCELLED`, which replaces a plain wake-up (D-2: cancel wins);
//!   its wait returns [`Cancelled`] at the suspension point. The awaited
//!   thing is not lost: a joined coroutine keeps its outcome.
//! - **C-4** Running (a self-cancel): nothing happens now (P-23, D-11); the
//!   cancellation is delivered at its next suspension point, or, if it
//!   returns first, it finishes with the cancellation as its result.
//! - **C-5** Delivery is edge-triggered, once (D-1);
//!   `is_cancellation_requested()` stays true. A cancelled coroutine may run
//!   its cleanup with blocking calls, unrestricted (R-C3).
//! - **C-6** An I/O request whose waiter is cancelled is cancelled in the
//!   reactor and then waited for; data that arrived first is returned and
//!   the cancellation stays pending for the next suspension point (P-08,
//!   IO1 in `runtime::ffi::io`).
//! - **C-7** Inside [`protect`] a request is recorded but deferred: the
//!   coroutine is not woken with it, and it becomes pending again when the
//!   *outermost* `protect` returns (R-C2, D-21, P-13), to be delivered at
//!   the next cancellation point ([`check_cancelled`] is one that does not
//!   suspend). An error or panic leaving `protect` propagates; the
//!   cancellation stays requested and pending (D-22, P-11).
//! - **C-8** A real failure replaces the cancellation (v1.7 override, D-22):
//!   a coroutine that panics or returns an error while being cancelled ends
//!   *failed*, and the failure goes through the error flow.
//! - **C-9** A cancellation is a distinct kind that `?` cannot turn into a
//!   failure by accident (P-01): `Cancelled` converts only into
//!   `io::Error` (kind `Other`, never `Interrupted`) and the boxed-error
//!   types, and [`find_cancelled`] finds it in any of them, so a
//!   `spawn_try` body that returns its own cancellation ends cancelled.
//!
//! A coroutine still running a while after its cancellation is reported,
//! not interrupted (D-1(c): `core::runtime::cancel_watch`); the backstops
//! that end it are `await_after_cancellation` with a token and the second
//! phase of graceful shutdown.

use std::rc::Rc;

use async_abi::AA_E_CANCELLED;

use super::error::{CancelCause, Cancelled, JoinError};
use super::runtime;
use super::state::CoroState;
use super::wait::{checkpoint, with_me};

/// Requests the cancellation of `state` with cause `Explicit` (C-1 .. C-4).
pub(crate) fn cancel(state: &Rc<CoroState>, reason: Option<String>) {
    cancel_with(
        state,
        Cancelled::of(state.id(), CancelCause::Explicit, reason),
    );
}

/// Requests the cancellation of `state` with this record (C-1 .. C-4, C-7).
pub(crate) fn cancel_with(state: &Rc<CoroState>, c: Cancelled) {
    if !state.request_cancel(c) {
        return;
    }
    runtime::cancel_watch::watch(state); // D-1(c)
    if state.is_protected() {
        return; // C-7
    }
    if std::ptr::eq(runtime::running(), Rc::as_ptr(state)) {
        return; // C-4
    }
    runtime::with_runtime(|rt| rt.sched.enqueue(state, AA_E_CANCELLED));
}

/// Runs `f` in a critical section that cancellation does not interrupt:
/// the RFC's `Async\protect()`.
///
/// A cancellation requested while `f` runs (or already pending when it
/// starts) is not delivered inside it: blocking calls in `f` complete
/// normally. It is delivered right after the *outermost* `protect` returns
/// (D-21), at the next cancellation point: [`check_cancelled`] (which does
/// not suspend), or any blocking call. If the coroutine returns before
/// that, it finishes cancelled (D-11).
///
/// If `f` panics (or returns an error the caller propagates), that failure
/// goes on, and the cancellation stays requested and pending (D-22): a real
/// failure wins over a cancellation.
///
/// Graceful shutdown's first phase cancels like any cancellation, so it
/// waits for `protect` too; its second phase and deadlock resolution unwind
/// or resume the coroutine regardless.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// Deferred as described; `protect` itself is not a cancellation point.
///
/// # Examples
///
/// ```
/// use async_std_api::{check_cancelled, current, delay, protect, run};
///
/// run(|| {
///     current().cancel(); // arrives before the critical section
///     let written = protect(|| {
///         delay(5).unwrap(); // not interrupted
///         "critical data"
///     });
///     assert_eq!(written, "critical data");
///     assert!(check_cancelled().is_err()); // delivered right after
///     assert!(check_cancelled().is_ok()); // once (D-1)
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn protect<R>(f: impl FnOnce() -> R) -> R {
    struct Leave<'a>(&'a CoroState);
    impl Drop for Leave<'_> {
        fn drop(&mut self) {
            self.0.protect_leave();
        }
    }
    let me = with_me("protect", |_, me| me.clone());
    me.protect_enter();
    let _leave = Leave(&me);
    f()
}

/// Returns the calling coroutine's pending cancellation, once, without
/// suspending: a cancellation point that costs no switch (Trio's
/// `checkpoint_if_cancelled`).
///
/// # Errors
///
/// [`Cancelled`] if a cancellation was requested and not yet delivered
/// (and the caller is not inside [`protect`]).
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point (it delivers, D-1).
///
/// # Examples
///
/// ```
/// use async_std_api::{check_cancelled, current, run};
///
/// run(|| {
///     assert!(check_cancelled().is_ok());
///     current().cancel_with("stop");
///     assert_eq!(check_cancelled().unwrap_err().reason(), Some("stop"));
///     assert!(current().is_cancellation_requested());
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn check_cancelled() -> Result<(), Cancelled> {
    with_me("check_cancelled", |_, me| checkpoint(me))
}

/// The cancellation an error carries, if any (C-9): the error itself, an
/// `io::Error` around one, a [`JoinError`] that was interrupted or whose
/// coroutine was cancelled, or any of these in its `source()` chain.
pub(crate) fn find_cancelled<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a Cancelled> {
    let mut cur: Option<&'a (dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(c) = err.downcast_ref::<Cancelled>() {
            return Some(c);
        }
        if let Some(j) = err.downcast_ref::<JoinError>() {
            if let Some(c) = j.any_cancelled() {
                return Some(c);
            }
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if let Some(inner) = io.get_ref() {
                if let Some(c) = find_cancelled(inner) {
                    return Some(c);
                }
            }
        }
        cur = err.source();
    }
    None
}
