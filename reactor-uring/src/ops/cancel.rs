//! Async cancels: `IORING_OP_ASYNC_CANCEL` by key, or, for a descriptor
//! being closed, by descriptor (`IORING_ASYNC_CANCEL_FD | _ALL`, Linux
//! 5.19+).
//!
//! A cancel only *asks*: the target's own final completion still arrives
//! (`-ECANCELED`, or its real result if it finished first), and only that
//! completion releases the target's memory (ops invariant O1). So a cancel
//! entry's completion is never read: it carries [`IGNORED`].
//!
//! # Safety
//!
//! A cancel entry names no memory (the target is named by its `user_data`
//! or its descriptor), so pushing it lends the kernel nothing: K1 holds
//! trivially.

use std::io;
use std::os::fd::RawFd;

use io_uring::types::{CancelBuilder, Fd};
use io_uring::{opcode, squeue};

use crate::ops::{OpKey, IGNORED};
use crate::reactor::Reactor;
use crate::ring::{Ring, Wait};

/// The `user_data` of the probe's cancel.
const PROBE: u64 = IGNORED - 1;

/// An async cancel of the op named `key`.
fn by_key(key: OpKey) -> squeue::Entry {
    opcode::AsyncCancel::new(key.user_data())
        .build()
        .user_data(IGNORED)
}

/// An async cancel of every op on `fd`.
fn by_fd(fd: RawFd) -> squeue::Entry {
    opcode::AsyncCancel2::new(CancelBuilder::fd(Fd(fd)).all()).build()
}

impl Reactor {
    /// Pushes a cancel of the op named `key` (its completion is ignored).
    pub(crate) fn push_cancel(&self, key: OpKey) {
        // SAFETY: K1: the entry names no memory (see the module doc).
        unsafe { self.ring.borrow_mut().push(by_key(key)) };
    }

    /// Pushes a cancel of every op on `fd` (needs `Features::cancel_fd`).
    pub(crate) fn push_cancel_fd(&self, fd: RawFd) {
        // SAFETY: K1: the entry names no memory (see the module doc).
        unsafe { self.ring.borrow_mut().push(by_fd(fd).user_data(IGNORED)) };
    }
}

/// Whether the kernel cancels by descriptor (`IORING_ASYNC_CANCEL_FD`,
/// Linux 5.19): a cancel of every op on `fd` (none are in flight) answers
/// `-EINVAL` on older kernels and a count or `-ENOENT` on newer ones. Runs
/// one `io_uring_enter` on a ring with nothing else in flight.
pub(crate) fn probe_cancel_fd(ring: &mut Ring, fd: RawFd) -> io::Result<bool> {
    // SAFETY: K1: the entry names no memory (see the module doc).
    unsafe { ring.push(by_fd(fd).user_data(PROBE)) };
    let mut cqes = Vec::new();
    for _ in 0..16 {
        ring.enter(Wait::Forever, &mut |_| true)?;
        ring.reap(&mut cqes);
        if let Some(cqe) = cqes.iter().find(|c| c.user_data == PROBE) {
            return Ok(cqe.result != -libc::EINVAL);
        }
    }
    Err(io::Error::other("no completion for the cancel probe"))
}
