//! Filesystem watches.
//!
//! `AaFsWatchEvent` is an [`crate::AaEvent`] of kind `AA_EVENT_FS_WATCH`: it
//! reports changes to a file or to the entries of a directory.

use core::ffi::c_void;

use crate::{AaBytes, AaEvent, AaStatus};

/// Change bit: an entry was renamed, created or deleted.
pub const AA_FS_RENAME: u32 = 1 << 0;
/// Change bit: an entry's contents or metadata changed.
pub const AA_FS_CHANGE: u32 = 1 << 1;

/// Called for each change (`status == 0`) with the entry's name relative to
/// the watched directory (empty for the watched file itself; valid only
/// during the call, AA-R3), or once with `status < 0`. `[loop]`
pub type AaFsWatchCb = Option<
    unsafe extern "C" fn(
        ev: *mut AaEvent,
        status: AaStatus,
        events: u32,
        name: AaBytes,
        ud: *mut c_void,
    ),
>;
