//! The process's descriptor table, grown once before the first loop runs
//! (R6).
//!
//! Linux keeps a process's open descriptors in a table that starts with 64
//! slots and doubles when a descriptor above its size is opened. In a
//! process with more than one thread the old table is freed only after an
//! RCU grace period, which the opening thread waits for in the kernel:
//! 5-20 ms on a quiet two-core machine, more on a busy host. A loop whose
//! coroutines open their 65th, 129th, 257th... descriptor (a hundred
//! libcurl transfers open three each) would stall once per doubling, all
//! of its coroutines with it, inside `socket` or `accept`, where no hook
//! can help. So the first runtime of a process grows the table to
//! [`SLOTS`] (or the descriptor limit, when lower) by duplicating a
//! descriptor to the top slot and closing it at once: tables never shrink.
//! The cost is the kernel's memory for the slots (8 bytes each) and at
//! most one grace period, paid at start-up rather than under load.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Once;

/// How many descriptor slots the table is grown to: enough for a few
/// thousand connections without a stall; above it, each doubling stalls
/// once, as without this.
pub(crate) const SLOTS: u64 = 4096;

/// Grows the table, once per process; best effort: a failure (no
/// `/dev/null`, a low limit) leaves the table as it was.
pub(super) fn grow_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(grow);
}

fn grow() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid place for the kernel to write the limits.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return;
    }
    let top = SLOTS.min(lim.rlim_cur).saturating_sub(1);
    let Ok(top) = libc::c_int::try_from(top) else {
        return;
    };
    if top < 64 {
        return;
    }
    let Ok(null) = std::fs::File::open("/dev/null") else {
        return;
    };
    // SAFETY: `null` is open for the duration of the call; `F_DUPFD_CLOEXEC`
    // takes the lowest free descriptor at or above `top` and never touches
    // one in use.
    let dup = unsafe { libc::fcntl(null.as_raw_fd(), libc::F_DUPFD_CLOEXEC, top) };
    if dup >= 0 {
        // SAFETY: `dup` is the descriptor the call above just opened, owned
        // by nothing else; dropping it closes it.
        drop(unsafe { OwnedFd::from_raw_fd(dup) });
    }
}
