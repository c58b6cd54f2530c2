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
//!
//! # Safety
//!
//! `install` is called only on the first page of a slot inside a mapping the
//! caller owns (stack S-I1/S-I5); changing that page's protection cannot
//! affect memory anybody else uses.

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicU8, Ordering};

/// `MADV_GUARD_INSTALL` from `<linux/mman.h>` (Linux 6.13+); libc 0.2 does not
/// define it yet.
pub(crate) const MADV_GUARD_INSTALL: libc::c_int = 102;

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
