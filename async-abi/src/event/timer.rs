//! Timers.
//!
//! `AaTimerEvent` is an [`crate::AaEvent`] of kind `AA_EVENT_TIMER`. It fires
//! once `first_ns` after it is armed, then every `repeat_ns` if that is not
//! zero. Deadlines are measured on the loop's monotonic clock; a reactor
//! refreshes its cached clock before arming, so a timer armed after a long
//! burst of CPU work still waits its full duration.

use core::ffi::c_void;

use crate::{AaEvent, AaStatus};

/// Called when a timer fires (`status == 0`) or is cancelled (`status < 0`,
/// the reason given to `cancel`). A one-shot timer is inactive after its
/// callback; a periodic one stays armed until cancelled. `[loop]`
pub type AaTimerCb =
    Option<unsafe extern "C" fn(ev: *mut AaEvent, status: AaStatus, ud: *mut c_void)>;
