//! Unix signals.
//!
//! `AaSignalEvent` is an [`crate::AaEvent`] of kind `AA_EVENT_SIGNAL`. It
//! fires every time the process receives `signum` while the event is active.
//! The reactor that advertises `AA_CAP_SIGNAL` owns the signal dispositions
//! of the signals it watches for as long as it watches them.

use core::ffi::c_void;

use crate::{AaEvent, AaStatus};

/// Called on the loop thread for each delivery of the signal
/// (`status == 0`; deliveries may coalesce), or once with `status < 0`.
/// `[loop]`
pub type AaSignalCb =
    Option<unsafe extern "C" fn(ev: *mut AaEvent, status: AaStatus, signum: i32, ud: *mut c_void)>;
