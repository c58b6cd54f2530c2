//! Child process exits.
//!
//! `AaProcessEvent` is an [`crate::AaEvent`] of kind `AA_EVENT_PROCESS`: it
//! fires once when the child `pid` exits, and reaps it.

use core::ffi::c_void;

use crate::{AaEvent, AaStatus};

/// How a child process ended.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaExitStatus {
    /// The exit code if the process exited, else -1.
    pub code: i32,
    /// The signal that terminated the process, else 0.
    pub signal: i32,
}

/// Called once when the process exits (`status == 0`) or the watch fails or
/// is cancelled (`status < 0`, `exit` then NULL). `[loop]`
pub type AaProcessCb = Option<
    unsafe extern "C" fn(
        ev: *mut AaEvent,
        status: AaStatus,
        exit: *const AaExitStatus,
        ud: *mut c_void,
    ),
>;
