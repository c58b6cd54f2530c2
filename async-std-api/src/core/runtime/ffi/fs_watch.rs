//! Filesystem watches: the reactor's `fs_watch_new` (`AA_CAP_FS_WATCH`)
//! behind a safe wrapper, modelled on [`Reactor::signal`].
//!
//! Owns: each watch's event and the closure its callbacks run, from
//! [`Reactor::fs_watch`] until the [`FsWatchEvent`] is dropped.
//!
//! Invariants (the parent module's F1-F5 apply):
//! - **FW1** The closure box is the event's `ud`: created before
//!   `fs_watch_new`, freed only after the event was disposed (F5), or at
//!   once if `fs_watch_new` failed (AA-R8: nothing was created, no callback
//!   will run).
//! - **FW2** A change's name is lent for the callback only (AA-R3): the
//!   closure gets a borrowed slice and must copy what it keeps.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::rc::Rc;

use async_abi::{
    AaBytes, AaEvent, AaStatus, AA_CAP_FS_WATCH, AA_E_CLOSED, AA_E_INVALID, AA_E_UNSUPPORTED,
};

use super::Reactor;

/// What a watch's callbacks run: `(status, AA_FS_* bits, name)`.
pub(crate) type OnChange = Box<dyn Fn(AaStatus, u32, &[u8])>;

impl Reactor {
    /// Whether the reactor can watch the filesystem (`AA_CAP_FS_WATCH` and
    /// the slot).
    pub(crate) fn has_fs_watch(&self) -> bool {
        self.plugin.vt.fs_watch_new.is_some() && self.plugin.vt.caps & AA_CAP_FS_WATCH != 0
    }

    /// Watches `path` (a file, or a directory's entries): `on_change` runs
    /// from inside `run_once` for each change (status 0) or once with a
    /// negative status (the watch ended). `AA_E_UNSUPPORTED` if the
    /// reactor lacks `AA_CAP_FS_WATCH`; `-errno` (`-ENOENT`, `-EACCES`,
    /// `-ENOSPC`) or `AA_E_INVALID` (empty path, NUL byte) as the reactor
    /// refuses it.
    pub(crate) fn fs_watch(
        self: &Rc<Self>,
        path: &[u8],
        on_change: OnChange,
    ) -> Result<FsWatchEvent, AaStatus> {
        let r = self.r.get();
        if r.is_null() {
            return Err(AA_E_CLOSED);
        }
        let Some(fs_watch_new) = self.plugin.vt.fs_watch_new else {
            return Err(AA_E_UNSUPPORTED);
        };
        if !self.has_fs_watch() {
            return Err(AA_E_UNSUPPORTED);
        }
        let ud: *mut OnChange = Box::into_raw(Box::new(on_change));
        let mut ev: *mut AaEvent = ptr::null_mut();
        let bytes = AaBytes {
            ptr: if path.is_empty() {
                ptr::null()
            } else {
                path.as_ptr()
            },
            len: path.len(),
        };
        // SAFETY: `r` is live (F2); `bytes` borrows `path` for the call
        // only, as the slot allows (AA-R2); `fs_watch_cb` matches
        // `AaFsWatchCb`; `ud` stays valid until the event is disposed (FW1).
        let status = unsafe { fs_watch_new(r, bytes, 0, Some(fs_watch_cb), ud.cast(), &mut ev) };
        match NonNull::new(ev) {
            Some(ev) if status >= 0 => Ok(FsWatchEvent {
                reactor: self.clone(),
                ev,
                ud,
            }),
            _ => {
                // SAFETY: AA-R8: a failed constructor created nothing and
                // never calls back, so `ud` is ours again (FW1).
                drop(unsafe { Box::from_raw(ud) });
                Err(if status < 0 { status } else { AA_E_INVALID })
            }
        }
    }
}

unsafe extern "C" fn fs_watch_cb(
    _ev: *mut AaEvent,
    status: AaStatus,
    events: u32,
    name: AaBytes,
    ud: *mut c_void,
) {
    // SAFETY: `ud` is the closure box made in `Reactor::fs_watch`, alive
    // until the event is disposed (FW1), and callbacks never run after
    // dispose.
    let f = unsafe { &*ud.cast::<OnChange>() };
    let name: &[u8] = if name.ptr.is_null() || name.len == 0 {
        &[]
    } else {
        // SAFETY: AA-R3: the reactor lends `len` readable bytes at `ptr` for
        // the duration of this call; the slice does not outlive it (FW2).
        unsafe { std::slice::from_raw_parts(name.ptr, name.len) }
    };
    let _ = catch_unwind(AssertUnwindSafe(|| f(status, events, name)));
}

/// A filesystem watch; dropping it disposes the event (no callback after).
pub(crate) struct FsWatchEvent {
    reactor: Rc<Reactor>,
    ev: NonNull<AaEvent>,
    ud: *mut OnChange,
}

impl Drop for FsWatchEvent {
    fn drop(&mut self) {
        if self.reactor.r.get().is_null() {
            return; // as for `TimerEvent`: a leaked reactor may still call
        }
        self.reactor.dispose(self.ev);
        // SAFETY: disposed above: no callback runs any more (F5, FW1).
        drop(unsafe { Box::from_raw(self.ud) });
    }
}
