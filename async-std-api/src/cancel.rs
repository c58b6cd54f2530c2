//! Cancellation: the host's policy over the scheduler's `enqueue` status.
//!
//! The scheduler only resumes a coroutine with a status; what a
//! cancellation *means* is decided here (ARCHITECTURE "The host"):
//!
//! - **C-1** First request wins: a later request, and its reason, is
//!   ignored (I3 in `task::state`).
//! - **C-2** Not started: it is enqueued with `AA_E_CANCELLED`, so its entry
//!   gets a negative start status and never runs the body (T3 in `task`).
//! - **C-3** Suspended (or queued to resume): enqueued with
//!   `AA_E_CANCELLED`, which replaces a plain wake-up (D-2); its wait
//!   returns [`Cancelled`](crate::Cancelled) at the suspension point.
//! - **C-4** Running (a self-cancel): nothing happens now (P-23); the
//!   cancellation is delivered at its next suspension point.
//! - **C-5** Delivery is edge-triggered, once (D-1);
//!   `is_cancellation_requested()` stays true.
//! - **C-6** An I/O request whose waiter is cancelled is cancelled in the
//!   reactor and then waited for; data that arrived first is returned and
//!   the cancellation stays pending for the next suspension point (P-08,
//!   IO1 in `runtime::ffi::io`).

use std::rc::Rc;

use async_abi::AA_E_CANCELLED;

use crate::runtime;
use crate::task::state::CoroState;
use crate::CancelCause;

/// Requests the cancellation of `state` (C-1 .. C-4).
pub(crate) fn cancel(state: &Rc<CoroState>, reason: Option<String>) {
    if !state.request_cancel(CancelCause::Explicit, reason) {
        return;
    }
    if std::ptr::eq(runtime::running(), Rc::as_ptr(state)) {
        return; // C-4
    }
    runtime::with_runtime(|rt| rt.sched.enqueue(state, AA_E_CANCELLED));
}
