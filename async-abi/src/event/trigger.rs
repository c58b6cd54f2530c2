//! Cross-thread triggers.
//!
//! `AaTriggerEvent` is an [`crate::AaEvent`] of kind `AA_EVENT_TRIGGER`: the
//! one event that another thread may fire. `trigger_fire` is `[any]`-thread,
//! never blocks and never allocates; fires coalesce, so several fires before
//! the loop notices produce one callback. The callback runs on the loop
//! thread. A trigger stays active (and, unless hidden, keeps the loop alive)
//! until it is closed or disposed.

use core::ffi::c_void;

use crate::{AaEvent, AaStatus};

/// Called on the loop thread after one or more `trigger_fire` calls
/// (`status == 0`), or once with `status < 0` when cancelled. `[loop]`
pub type AaTriggerCb =
    Option<unsafe extern "C" fn(ev: *mut AaEvent, status: AaStatus, ud: *mut c_void)>;
