//! The host's callbacks, typed per event kind, and how a reactor calls them.
//!
//! # Safety
//!
//! A [`HostCallback`] is made only by the shims (`ffi.rs`) from the function
//! and user data the host passed for one event; the host keeps both valid
//! until it disposes of that event (F3). Every `notify*` call therefore
//! requires what the reactor's event invariants give: the event is not
//! disposed (checked by the caller right before the call), it is called on
//! the loop thread from `run_once`, and no `RefCell` borrow of the reactor
//! or of the event is held (a callback may call back into the reactor).

use std::ffi::c_void;
use std::ptr;

use async_abi::{AaBytes, AaEvent, AaExitStatus, AaSockAddr, AaStatus};

use crate::ffi::Event;

/// A host callback of one event kind.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CallbackFn {
    Timer(unsafe extern "C" fn(*mut AaEvent, AaStatus, *mut c_void)),
    Poll(unsafe extern "C" fn(*mut AaEvent, AaStatus, u32, *mut c_void)),
    Io(unsafe extern "C" fn(*mut AaEvent, i64, *mut c_void)),
    Trigger(unsafe extern "C" fn(*mut AaEvent, AaStatus, *mut c_void)),
    Signal(unsafe extern "C" fn(*mut AaEvent, AaStatus, i32, *mut c_void)),
    Process(unsafe extern "C" fn(*mut AaEvent, AaStatus, *const AaExitStatus, *mut c_void)),
    FsWatch(unsafe extern "C" fn(*mut AaEvent, AaStatus, u32, AaBytes, *mut c_void)),
    Dns(unsafe extern "C" fn(*mut AaEvent, AaStatus, *const AaSockAddr, usize, *mut c_void)),
}

/// An event's callback and user data, as the host gave them (F3).
#[derive(Debug)]
pub struct HostCallback {
    pub(crate) f: CallbackFn,
    pub(crate) ud: *mut c_void,
}

/// The header pointer the host knows the event by.
#[inline]
fn header<E: Event>(ev: &E) -> *mut AaEvent {
    // The `Event` contract puts the header first in a `#[repr(C)]` struct.
    ev as *const E as *mut AaEvent
}

impl HostCallback {
    /// Calls the host: timers and triggers get `status`; polls `status`
    /// and `value` as ready bits; requests `status` if it is non-zero (a
    /// cancellation reason), else `value` (the result); signals `status` and
    /// `value` as the signal number; fs watches `status` and `value` as the
    /// change bits, with an empty name; processes and lookups `status` with
    /// no data (their failures and cancellations).
    ///
    /// Call it only for an event that is not disposed, from `run_once`, with
    /// no borrow of the reactor or the event held (see the module doc).
    #[inline]
    pub fn notify<E: Event>(&self, ev: &E, status: AaStatus, value: i64) {
        let ptr = header(ev);
        match self.f {
            // SAFETY: F3: the callback and `ud` were given for this event,
            // which is not disposed (the caller's check); `ptr` is the
            // event's header (the `Event` contract); no borrow is held.
            CallbackFn::Timer(f) | CallbackFn::Trigger(f) => unsafe { f(ptr, status, self.ud) },
            // SAFETY: as above.
            CallbackFn::Poll(f) => unsafe { f(ptr, status, value as u32, self.ud) },
            CallbackFn::Io(f) => {
                let result = if status != 0 {
                    i64::from(status)
                } else {
                    value
                };
                // SAFETY: as above.
                unsafe { f(ptr, result, self.ud) }
            }
            // SAFETY: as above.
            CallbackFn::Signal(f) => unsafe { f(ptr, status, value as i32, self.ud) },
            // SAFETY: as above; NULL is the ABI's "no exit status".
            CallbackFn::Process(f) => unsafe { f(ptr, status, ptr::null(), self.ud) },
            CallbackFn::FsWatch(f) => {
                let name = AaBytes {
                    ptr: ptr::null(),
                    len: 0,
                };
                // SAFETY: as above.
                unsafe { f(ptr, status, value as u32, name, self.ud) }
            }
            // SAFETY: as above; NULL with 0 addresses.
            CallbackFn::Dns(f) => unsafe { f(ptr, status, ptr::null(), 0, self.ud) },
        }
    }

    /// Tells a process watch how its child ended (`status` 0).
    pub fn notify_exit<E: Event>(&self, ev: &E, exit: &AaExitStatus) {
        if let CallbackFn::Process(f) = self.f {
            // SAFETY: F3 as in `notify`; `exit` is borrowed for the call
            // (AA-R3).
            unsafe { f(header(ev), 0, exit, self.ud) }
        }
    }

    /// Reports one change to a filesystem watch (`status` 0); `name` is
    /// borrowed for the call (AA-R3).
    pub fn notify_fs<E: Event>(&self, ev: &E, events: u32, name: &[u8]) {
        if let CallbackFn::FsWatch(f) = self.f {
            let name = AaBytes {
                ptr: if name.is_empty() {
                    ptr::null()
                } else {
                    name.as_ptr()
                },
                len: name.len(),
            };
            // SAFETY: F3 as in `notify`; `name` points into the reactor's
            // buffer, valid for the call (AA-R3).
            unsafe { f(header(ev), 0, events, name, self.ud) }
        }
    }

    /// Completes a lookup with its addresses (`status` 0); `addrs` is
    /// borrowed for the call (AA-R3).
    pub fn notify_dns<E: Event>(&self, ev: &E, addrs: &[AaSockAddr]) {
        if let CallbackFn::Dns(f) = self.f {
            // SAFETY: F3 as in `notify`; `addrs` is the reactor's vector,
            // valid for the call (AA-R3).
            unsafe { f(header(ev), 0, addrs.as_ptr(), addrs.len(), self.ud) }
        }
    }

    /// A timer callback that does nothing, for a reactor's unit tests
    /// (events made without a host).
    pub fn ignore() -> HostCallback {
        HostCallback {
            f: CallbackFn::Timer(ignore_timer),
            ud: ptr::null_mut(),
        }
    }
}

unsafe extern "C" fn ignore_timer(_: *mut AaEvent, _: AaStatus, _: *mut c_void) {}

/// An `on_closed` callback and its user data (AA-R4).
#[derive(Debug, Clone, Copy)]
pub struct ClosedCallback {
    pub(crate) f: unsafe extern "C" fn(*mut AaEvent, *mut c_void),
    pub(crate) ud: *mut c_void,
}

impl ClosedCallback {
    /// Calls `on_closed`; the same conditions as [`HostCallback::notify`].
    #[inline]
    pub fn call<E: Event>(&self, ev: &E) {
        // SAFETY: F3: given with `close` for this event, which is not
        // disposed (the caller's check); no borrow is held.
        unsafe { (self.f)(header(ev), self.ud) }
    }
}
