//! Descriptor readiness watches (`poll_new`, `AA_CAP_POLL`): what
//! `io::Async` and the datagram sockets wait on.
//!
//! The reactor's semantics are edge-style and persistent (see
//! `async_abi::event::poll`): after a notification the same readiness may
//! not be reported again until the descriptor was drained (`EAGAIN`) or
//! the interest set again. The waiters in `core::readiness` rely on the
//! first: a ready bit is cleared only by the attempt that got `EAGAIN`, so
//! a readiness that arrived in between is never lost (RD2); they call
//! [`PollEvent::set_interest`] (which re-evaluates the current readiness)
//! only to arm writability for a waiter and to arm readability the first
//! time, not after each `EAGAIN` (RD3: a re-arm is a system call).
//!
//! # Safety
//!
//! As the parent module: every call goes through the validated vtable (F1)
//! on a live reactor (F2) and event; the callback box follows F5.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::rc::Rc;

use async_abi::{
    AaEvent, AaStatus, AA_CAP_POLL, AA_EVF_OWNS_FD, AA_E_CLOSED, AA_E_INVALID, AA_E_UNSUPPORTED,
};

use super::Reactor;

/// Called with `(status, ready bits)` from inside `run_once`.
type OnReady = Box<dyn Fn(AaStatus, u32)>;

impl Reactor {
    /// Watches `fd` for `interest` (`AA_POLL_*`): `on_ready` runs from
    /// inside `run_once` with the ready bits (status 0), or once with a
    /// negative status when the watch ends. `AA_E_UNSUPPORTED` if the
    /// reactor lacks `AA_CAP_POLL`.
    ///
    /// `flags` may add `AA_EVF_HIDDEN`: the watch never keeps the loop
    /// alive (its owner keeps it alive some other way while it matters).
    pub(crate) fn poll(
        self: &Rc<Self>,
        fd: RawFd,
        interest: u32,
        flags: u32,
        on_ready: OnReady,
    ) -> Result<PollEvent, AaStatus> {
        self.poll_flags(fd, interest, flags, on_ready)
    }

    /// [`Reactor::poll`] on a descriptor the reactor then owns
    /// (`AA_EVF_OWNS_FD`): it deregisters and closes it when the watch is
    /// disposed, so the descriptor number is never reused under a stale
    /// registration. On failure the descriptor is closed here.
    pub(crate) fn poll_owned(
        self: &Rc<Self>,
        fd: OwnedFd,
        interest: u32,
        flags: u32,
        on_ready: OnReady,
    ) -> Result<PollEvent, AaStatus> {
        let raw = fd.into_raw_fd();
        let made = self.poll_flags(raw, interest, flags | AA_EVF_OWNS_FD, on_ready);
        if made.is_err() {
            // SAFETY: AA-R8: a failed constructor took nothing, so `raw`
            // (ours from `into_raw_fd` above) is still ours to close.
            drop(unsafe { OwnedFd::from_raw_fd(raw) });
        }
        made
    }

    fn poll_flags(
        self: &Rc<Self>,
        fd: RawFd,
        interest: u32,
        flags: u32,
        on_ready: OnReady,
    ) -> Result<PollEvent, AaStatus> {
        let r = self.r.get();
        if r.is_null() {
            return Err(AA_E_CLOSED);
        }
        let vt = &self.plugin.vt;
        let (Some(poll_new), Some(set_interest), Some(set_ref)) =
            (vt.poll_new, vt.poll_set_interest, vt.set_ref)
        else {
            return Err(AA_E_UNSUPPORTED);
        };
        if self.caps & AA_CAP_POLL == 0 {
            return Err(AA_E_UNSUPPORTED);
        }
        let ud: *mut OnReady = Box::into_raw(Box::new(on_ready));
        let mut ev: *mut AaEvent = ptr::null_mut();
        // SAFETY: `r` is live (F2); `poll_cb` matches `AaPollCb`; `ud` stays
        // valid until the event is disposed (F5).
        let status = unsafe {
            poll_new(
                r,
                async_abi::AaOsHandle::from(fd),
                interest,
                flags,
                Some(poll_cb),
                ud.cast::<c_void>(),
                &mut ev,
            )
        };
        match NonNull::new(ev) {
            Some(ev) if status >= 0 => Ok(PollEvent {
                reactor: self.clone(),
                ev,
                ud,
                set_interest,
                set_ref,
            }),
            _ => {
                // SAFETY: AA-R8: a failed constructor created nothing and
                // never calls back, so `ud` is ours again.
                drop(unsafe { Box::from_raw(ud) });
                Err(if status < 0 { status } else { AA_E_INVALID })
            }
        }
    }
}

unsafe extern "C" fn poll_cb(_ev: *mut AaEvent, status: AaStatus, ready: u32, ud: *mut c_void) {
    // SAFETY: `ud` is the box made in `Reactor::poll`, alive until the event
    // is disposed (F5); callbacks never run after dispose.
    let f = unsafe { &*ud.cast::<OnReady>() };
    let _ = catch_unwind(AssertUnwindSafe(|| f(status, ready)));
}

/// A readiness watch; dropping it disposes the event (no callback after).
/// The descriptor itself is not closed.
pub(crate) struct PollEvent {
    reactor: Rc<Reactor>,
    ev: NonNull<AaEvent>,
    ud: *mut OnReady,
    set_interest: unsafe extern "C" fn(*mut AaEvent, u32) -> AaStatus,
    set_ref: unsafe extern "C" fn(*mut AaEvent, bool),
}

impl PollEvent {
    /// Whether the armed watch keeps the loop alive (libuv's ref/unref):
    /// a watch left armed between waits must not, or a program whose
    /// coroutines all wait on each other would never be found deadlocked.
    pub(crate) fn set_ref(&self, referenced: bool) {
        if self.reactor.r.get().is_null() {
            return;
        }
        // SAFETY: `ev` is a live event of this live reactor (F2), not yet
        // disposed (that happens in our drop).
        unsafe { (self.set_ref)(self.ev.as_ptr(), referenced) }
    }

    /// Sets the interest (0 disarms) and re-evaluates readiness: a
    /// readiness present now is reported by a later callback.
    pub(crate) fn set_interest(&self, interest: u32) -> AaStatus {
        if self.reactor.r.get().is_null() {
            return AA_E_CLOSED;
        }
        // SAFETY: `ev` is a live event of this live reactor (F2), not yet
        // disposed (that happens in our drop).
        unsafe { (self.set_interest)(self.ev.as_ptr(), interest) }
    }
}

impl Drop for PollEvent {
    fn drop(&mut self) {
        if self.reactor.r.get().is_null() {
            return; // as for `TimerEvent`
        }
        self.reactor.dispose(self.ev);
        // SAFETY: disposed above: no callback runs any more (F5).
        drop(unsafe { Box::from_raw(self.ud) });
    }
}
