//! Descriptor readiness.
//!
//! `AaPollEvent` is an [`crate::AaEvent`] of kind `AA_EVENT_POLL`: it watches
//! one descriptor for the interest bits given to `poll_new` or
//! `poll_set_interest`.
//!
//! Semantics are edge-style and persistent: the callback runs when the
//! descriptor *becomes* ready for an interest bit. After a notification the
//! reactor may not report the same readiness again until the consumer has
//! drained it (an operation returned `EAGAIN`) or called `poll_set_interest`,
//! which re-evaluates the current readiness and reports it if present. An
//! interest of 0 disarms the event without freeing it.

use core::ffi::c_void;

use crate::{AaEvent, AaStatus};

/// Interest and readiness bit: readable (or a connection to accept).
pub const AA_POLL_READABLE: u32 = 1 << 0;
/// Interest and readiness bit: writable (or a connect finished).
pub const AA_POLL_WRITABLE: u32 = 1 << 1;
/// Readiness bit only: an error is pending on the descriptor.
pub const AA_POLL_ERROR: u32 = 1 << 2;
/// Readiness bit only: the peer hung up (read side closed).
pub const AA_POLL_HUP: u32 = 1 << 3;

/// Called with the ready bits (`status == 0`), or once with `status < 0` when
/// the watch is cancelled or fails. `[loop]`
pub type AaPollCb =
    Option<unsafe extern "C" fn(ev: *mut AaEvent, status: AaStatus, ready: u32, ud: *mut c_void)>;
