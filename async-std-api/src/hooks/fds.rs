//! What the hooks remember about a descriptor number: whether it is a
//! regular file, to route its transfers (the page cache and the blocking
//! pool) without asking the kernel on every call; and whether it is
//! *plain* (blocking, no socket timeouts), so a transfer that must wait
//! does not ask the kernel for its mode and timeouts every time.
//!
//! - **FD1** An entry is a hint, never a descriptor's state: the hooks
//!   change nothing about a descriptor, and a wrong hint only routes a
//!   transfer the slow way (a file read that stops short at what the page
//!   cache held, or a socket's remaining bytes read on the pool).
//! - **FD2** Every hooked call that creates a descriptor (`open`,
//!   `socket`, `accept`, `dup`, ...) sets its entry, and every hooked call
//!   that ends one (`close`, `dup2`/`dup3` over it) forgets it, on any
//!   thread, hooks on or off: a number reused after a hooked close never
//!   inherits the old descriptor's kind. Descriptors made or closed behind
//!   the hooks' back (raw system calls, the C library's own `fopen`) are
//!   learned again from `fstat` only when their entry is unknown.
//! - **FD4** *Plain* is learned from the kernel (`F_GETFL`, `SO_RCVTIMEO`,
//!   `SO_SNDTIMEO`) when a transfer first has to wait, and forgotten by
//!   every hooked call that could change it, on any thread, hooks on or
//!   off: `fcntl(F_SETFL)`, `ioctl(FIONBIO)`, `setsockopt` of a timeout,
//!   and whatever ends the number (FD2). A change made behind the hooks'
//!   back (a raw system call, another process sharing the file) is seen
//!   only once the number is forgotten: until then a descriptor made
//!   non-blocking that way waits instead of returning `EAGAIN`.
//! - **FD3** Lock-free: one relaxed atomic byte per number, in chunks
//!   allocated on first use and never freed; numbers beyond the table are
//!   always unknown. Forgetting never allocates (safe from a signal
//!   handler that closes a descriptor).
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// What a descriptor number is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A regular file or block device.
    File,
    /// A regular file a hooked call wrote to: its close may wait for the
    /// disk (ext4 flushes a file rewritten after a truncation when it is
    /// closed; NFS flushes every written file).
    Written,
    /// Anything else (socket, pipe, FIFO, terminal, eventfd, ...).
    Other,
}

const CHUNK: usize = 4096;
const CHUNKS: usize = 256;

type Chunk = [AtomicU8; CHUNK];

static TABLE: [AtomicPtr<Chunk>; CHUNKS] = [const { AtomicPtr::new(ptr::null_mut()) }; CHUNKS];

fn slot(fd: c_int, make: bool) -> Option<&'static AtomicU8> {
    let fd = usize::try_from(fd).ok()?;
    let (c, i) = (fd / CHUNK, fd % CHUNK);
    let cell = TABLE.get(c)?;
    let mut p = cell.load(Ordering::Acquire);
    if p.is_null() {
        if !make {
            return None;
        }
        let fresh: Box<Chunk> = Box::new([const { AtomicU8::new(0) }; CHUNK]);
        let fresh = Box::into_raw(fresh);
        match cell.compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => p = fresh,
            Err(other) => {
                // SAFETY: `fresh` came from `Box::into_raw` above and was
                // never shared (the exchange failed).
                drop(unsafe { Box::from_raw(fresh) });
                p = other;
            }
        }
    }
    // SAFETY: chunks are never freed (FD3), so a published pointer stays
    // valid for the program's life.
    Some(unsafe { &(*p)[i] })
}

/// The kind bits of an entry; the rest is [`PLAIN`].
const KIND: u8 = 3;

/// FD4: blocking, no socket timeouts.
const PLAIN: u8 = 4;

/// The hint for `fd`, learning it from `fstat` when there is none.
pub(super) fn kind(fd: c_int) -> Kind {
    match slot(fd, false).map(|s| s.load(Ordering::Relaxed) & KIND) {
        Some(1) => Kind::File,
        Some(2) => Kind::Other,
        Some(3) => Kind::Written,
        _ => {
            let k = if super::is_file(fd) {
                Kind::File
            } else {
                Kind::Other
            };
            set(fd, k);
            k
        }
    }
}

/// Records what `fd` is (FD2).
pub(super) fn set(fd: c_int, k: Kind) {
    let v = match k {
        Kind::File => 1,
        Kind::Other => 2,
        Kind::Written => 3,
    };
    if let Some(s) = slot(fd, true) {
        let _ = s.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
            Some((old & !KIND) | v)
        });
    }
}

/// FD2: a new descriptor under `fd`: its kind, and nothing else (a hint
/// left by the number's previous descriptor goes).
pub(super) fn reset(fd: c_int, k: Kind) {
    let v = match k {
        Kind::File => 1,
        Kind::Other => 2,
        Kind::Written => 3,
    };
    if let Some(s) = slot(fd, true) {
        s.store(v, Ordering::Relaxed);
    }
}

/// FD4: whether `fd` is known to be plain.
#[inline]
pub(super) fn is_plain(fd: c_int) -> bool {
    slot(fd, false).is_some_and(|s| s.load(Ordering::Relaxed) & PLAIN != 0)
}

/// FD4: `fd` was found plain.
pub(super) fn set_plain(fd: c_int) {
    if let Some(s) = slot(fd, true) {
        s.fetch_or(PLAIN, Ordering::Relaxed);
    }
}

/// FD4: `fd`'s mode or timeouts may have changed.
pub(super) fn unplain(fd: c_int) {
    if let Some(s) = slot(fd, false) {
        s.fetch_and(!PLAIN, Ordering::Relaxed);
    }
}

/// Forgets `fd` (FD2): it was closed, or is about to be replaced.
/// Returns what it was known to be.
pub(super) fn forget(fd: c_int) -> Option<Kind> {
    match slot(fd, false)?.swap(0, Ordering::Relaxed) & KIND {
        1 => Some(Kind::File),
        2 => Some(Kind::Other),
        3 => Some(Kind::Written),
        _ => None,
    }
}

/// Whether a kind is a regular file's.
pub(super) fn is_file(k: Kind) -> bool {
    matches!(k, Kind::File | Kind::Written)
}
