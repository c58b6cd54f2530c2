//! Name resolution through the reactor (`dns_resolve`, `AA_CAP_DNS`).
//!
//! # Safety
//!
//! As the parent module: every call goes through the validated vtable (F1)
//! on a live reactor (F2); the callback box follows F5. The addresses the
//! callback receives are valid only during the call (AA-R3), so they are
//! copied before the closure sees them.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::rc::Rc;

use async_abi::{
    AaAddrHints, AaEvent, AaSockAddr, AaStatus, AaStr, AA_CAP_DNS, AA_E_CLOSED, AA_E_INVALID,
    AA_E_UNSUPPORTED,
};

use super::Reactor;

/// Called once with the status and the addresses found.
type OnResolved = Box<dyn Fn(AaStatus, &[AaSockAddr])>;

impl Reactor {
    /// True if the reactor resolves names itself.
    pub(crate) fn has_dns(&self) -> bool {
        let vt = &self.plugin.vt;
        self.caps & AA_CAP_DNS != 0 && vt.dns_resolve.is_some()
    }

    /// Starts resolving `node` (a host name; `service` empty) with
    /// `socktype` (`SOCK_STREAM`, `SOCK_DGRAM` or 0): `on_resolved` runs
    /// once from inside `run_once`. Dropping the event cancels the lookup.
    /// `AA_E_UNSUPPORTED` if the reactor lacks `AA_CAP_DNS`.
    pub(crate) fn resolve(
        self: &Rc<Self>,
        node: &str,
        socktype: i32,
        on_resolved: OnResolved,
    ) -> Result<DnsEvent, AaStatus> {
        let r = self.r.get();
        if r.is_null() {
            return Err(AA_E_CLOSED);
        }
        let Some(dns_resolve) = self.plugin.vt.dns_resolve else {
            return Err(AA_E_UNSUPPORTED);
        };
        if !self.has_dns() {
            return Err(AA_E_UNSUPPORTED);
        }
        let hints = AaAddrHints {
            struct_size: std::mem::size_of::<AaAddrHints>() as u32,
            family: 0, // AF_UNSPEC
            socktype,
            flags: 0,
        };
        // F8: the lookup's one callback.
        let fired = std::cell::Cell::new(false);
        let on_resolved: OnResolved = Box::new(move |status, addrs| {
            if fired.replace(true) {
                return super::called_twice("a name lookup's");
            }
            on_resolved(status, addrs);
        });
        let ud: *mut OnResolved = Box::into_raw(Box::new(on_resolved));
        let mut ev: *mut AaEvent = ptr::null_mut();
        // SAFETY: `r` is live (F2); the strings and hints are borrowed for
        // the call only (AA-R2); `dns_cb` matches `AaDnsCb`; `ud` stays valid
        // until the event is disposed (F5).
        let status = unsafe {
            dns_resolve(
                r,
                AaStr::from_str(node),
                AaStr::from_str(""),
                &hints,
                Some(dns_cb),
                ud.cast::<c_void>(),
                &mut ev,
            )
        };
        match NonNull::new(ev) {
            Some(ev) if status >= 0 => Ok(DnsEvent {
                reactor: self.clone(),
                ev,
                ud,
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

unsafe extern "C" fn dns_cb(
    _ev: *mut AaEvent,
    status: AaStatus,
    addrs: *const AaSockAddr,
    n_addrs: usize,
    ud: *mut c_void,
) {
    // SAFETY: `ud` is the box made in `Reactor::resolve`, alive until the
    // event is disposed (F5); callbacks never run after dispose.
    let f = unsafe { &*ud.cast::<OnResolved>() };
    let found: &[AaSockAddr] = if addrs.is_null() || n_addrs == 0 {
        &[]
    } else {
        // SAFETY: AA-R3: `n_addrs` addresses at `addrs`, valid for this
        // call; the closure copies what it keeps.
        unsafe { std::slice::from_raw_parts(addrs, n_addrs) }
    };
    let _ = catch_unwind(AssertUnwindSafe(|| f(status, found)));
}

/// A lookup in flight; dropping it cancels the lookup (no callback after).
pub(crate) struct DnsEvent {
    reactor: Rc<Reactor>,
    ev: NonNull<AaEvent>,
    ud: *mut OnResolved,
}

impl Drop for DnsEvent {
    fn drop(&mut self) {
        if self.reactor.r.get().is_null() {
            return; // as for `TimerEvent`
        }
        self.reactor.dispose(self.ev);
        // SAFETY: disposed above: no callback runs any more (F5).
        drop(unsafe { Box::from_raw(self.ud) });
    }
}
