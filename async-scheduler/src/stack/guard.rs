//! Guard pages: `madvise(MADV_GUARD_INSTALL)` where the kernel has it, else
//! `mprotect(PROT_NONE)`.
//!
//! `MADV_GUARD_INSTALL` (Linux 6.13) marks page-table entries so that any
//! access faults, *without splitting the VMA*: a slab of 64 guarded stacks
//! stays one mapping, so 100,000 stacks need about 1,600 mappings, far below
//! `vm.max_map_count` (65,530 by default). `mprotect` splits the VMA around
//! each guard (two more mappings per stack), which caps the live coroutines
//! near 32,000 with the default `vm.max_map_count`.
//!
//! Guard markers survive `MADV_DONTNEED` (the kernel documents that zapping
//! does not remove them), and the slab code never applies `MADV_DONTNEED` to
//! a guard page anyway.
//!
//! # Invariants
//!
//! - **G-I1** The mode is probed once per process, by the first install: an
//!   `EINVAL` from `madvise` selects `mprotect` for good, and is logged once
//!   at debug level.
//! - **G-I2** [`install_many`] gives several guards to one
//!   `process_madvise(PIDFD_SELF, ..)` (Linux 6.14 takes any advice for the
//!   calling process there) once `madvise` is known to take the advice; a
//!   kernel that refuses it gets one `madvise` per page instead, and is not
//!   asked again; a batch applied in part (or failed for a transient
//!   reason) is redone page by page. Installing a guard twice is harmless.
//!
//! # Safety
//!
//! `install` is called only on the first page of a slot inside a mapping the
//! caller owns (stack S-I1/S-I5): by the loop thread for a slot it carves,
//! or by the prefault helper for a slot of a slab it holds (prefault P-I1,
//! whose mapping outlives it, P-I3); changing that page's protection cannot
//! affect memory anybody else uses. The mode and batch probes are atomics,
//! so either thread may make them.

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicU8, Ordering};

/// `MADV_GUARD_INSTALL` from `<linux/mman.h>` (Linux 6.13+); libc 0.2 does not
/// define it yet.
pub(crate) const MADV_GUARD_INSTALL: libc::c_int = 102;

/// `PIDFD_SELF_THREAD` from `<linux/pidfd.h>` (Linux 6.14+): the calling
/// thread's process for `process_madvise`, without opening a pidfd (and so
/// without one that a forked child would still hold for its parent).
pub(crate) const PIDFD_SELF: libc::c_int = -10000;

/// The most pages [`install_many`] gives one `process_madvise`.
pub(crate) const MAX_BATCH: usize = 64;

/// Whether `process_madvise` takes guard advice for this process (G-I2).
static BATCH: AtomicU8 = AtomicU8::new(UNKNOWN);
const YES: u8 = 1;
const NO: u8 = 2;

const UNKNOWN: u8 = 0;
const MADVISE: u8 = 1;
const MPROTECT: u8 = 2;

/// The probed mode (G-I1).
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// How guard pages are installed in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GuardMode {
    /// `madvise(MADV_GUARD_INSTALL)`: no VMA split.
    Madvise,
    /// `mprotect(PROT_NONE)`: one VMA split per guard.
    Mprotect,
}

/// The mode in use, or `None` before the first guard was installed.
pub(crate) fn mode() -> Option<GuardMode> {
    match MODE.load(Ordering::Relaxed) {
        MADVISE => Some(GuardMode::Madvise),
        MPROTECT => Some(GuardMode::Mprotect),
        _ => None,
    }
}

/// Makes `[addr, addr + page)` a guard page.
///
/// # Errors
///
/// The OS error of `madvise` (other than the probing `EINVAL`) or
/// `mprotect`.
///
/// # Safety
///
/// `[addr, addr + page)` must be one page-aligned page of an anonymous
/// private mapping owned by the caller, which nothing uses.
pub(crate) unsafe fn install(addr: usize, page: usize) -> io::Result<()> {
    if MODE.load(Ordering::Relaxed) != MPROTECT {
        // SAFETY: the caller owns the page and nothing uses it (function
        // contract); a guard marker only makes later accesses fault.
        let rc = unsafe { libc::madvise(addr as *mut libc::c_void, page, MADV_GUARD_INSTALL) };
        if rc == 0 {
            MODE.store(MADVISE, Ordering::Relaxed);
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINVAL) || MODE.load(Ordering::Relaxed) == MADVISE {
            return Err(err);
        }
        if MODE.swap(MPROTECT, Ordering::Relaxed) != MPROTECT {
            async_abi::plugin_debug!(
                "madvise(MADV_GUARD_INSTALL) is not supported by this kernel (needs linux 6.13): \
                 guard pages use mprotect, which splits mappings and caps live coroutines near \
                 32000 with the default vm.max_map_count"
            );
        }
    }
    // SAFETY: as above; PROT_NONE on a page the caller owns.
    let rc = unsafe { libc::mprotect(addr as *mut libc::c_void, page, libc::PROT_NONE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Makes each page at `addrs` a guard page: with one system call where the
/// kernel allows it (G-I2), else one per page. The slab passes at most
/// [`MAX_BATCH`]; more are installed page by page.
///
/// # Errors
///
/// As [`install`].
///
/// # Safety
///
/// As [`install`], for every page.
pub(crate) unsafe fn install_many(addrs: &[usize], page: usize) -> io::Result<()> {
    let n = addrs.len();
    if (2..=MAX_BATCH).contains(&n)
        && MODE.load(Ordering::Relaxed) == MADVISE
        && BATCH.load(Ordering::Relaxed) != NO
    {
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; MAX_BATCH];
        for (v, &a) in iov.iter_mut().zip(addrs) {
            *v = libc::iovec {
                iov_base: a as *mut libc::c_void,
                iov_len: page,
            };
        }
        // SAFETY: `iov` holds `n` valid entries, each one page the caller
        // owns and nothing uses (function contract); the advice only makes
        // later accesses fault. `process_madvise` reads the array only.
        let r = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                PIDFD_SELF,
                iov.as_ptr(),
                n,
                MADV_GUARD_INSTALL,
                0,
            )
        };
        if r == (n * page) as libc::c_long {
            BATCH.store(YES, Ordering::Relaxed);
            return Ok(());
        }
        let refused = r < 0
            && matches!(
                io::Error::last_os_error().raw_os_error(),
                Some(libc::EBADF | libc::EINVAL | libc::ENOSYS | libc::EPERM | libc::ESRCH)
            );
        if refused {
            // An older kernel (EBADF for the pid, EINVAL for the advice):
            // page by page from now on. A partial or transient failure
            // (EINTR, ENOMEM) is redone page by page this time only.
            BATCH.store(NO, Ordering::Relaxed);
        }
    }
    for &a in addrs {
        // SAFETY: the function's contract, for this page.
        unsafe { install(a, page)? };
    }
    Ok(())
}
