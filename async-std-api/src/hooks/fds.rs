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
//! - **FD5** Each number has a generation, advanced by everything that
//!   ends or replaces its descriptor (FD2). A loop's cached readiness watch
//!   for the number (`FdWatches`, HK4) is valid only under the generation
//!   it was made in; a number whose watch is cached is marked, so that a
//!   close on another thread (which cannot reach that loop's cache) tells
//!   the loops to look again ([`remote_closes`]).
//! - **FD3** Lock-free: one relaxed atomic word per number, in chunks
//!   allocated on first use and never freed; numbers beyond the table are
//!   always unknown and never cached. Forgetting never allocates (safe from
//!   a signal handler that closes a descriptor).
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

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

impl Kind {
    fn bits(self) -> u32 {
        match self {
            Kind::File => 1,
            Kind::Other => 2,
            Kind::Written => 3,
        }
    }

    fn of(bits: u32) -> Option<Kind> {
        match bits & KIND {
            1 => Some(Kind::File),
            2 => Some(Kind::Other),
            3 => Some(Kind::Written),
            _ => None,
        }
    }
}

const CHUNK: usize = 4096;
const CHUNKS: usize = 256;

type Chunk = [AtomicU32; CHUNK];

static TABLE: [AtomicPtr<Chunk>; CHUNKS] = [const { AtomicPtr::new(ptr::null_mut()) }; CHUNKS];

/// The kind bits of an entry.
const KIND: u32 = 3;
/// FD4: blocking, no socket timeouts.
const PLAIN: u32 = 4;
/// FD5: a loop caches a readiness watch for the number.
const CACHED: u32 = 8;
/// IO6: a TCP socket (learned with *plain*, forgotten with it).
const TCP: u32 = 16;
/// FD5: the generation, above the flags.
const GEN_SHIFT: u32 = 8;

/// FD5: bumped by a close, on a thread without a runtime or of another
/// one, of a number some loop caches a watch for.
static REMOTE_CLOSES: AtomicU64 = AtomicU64::new(0);

fn slot(fd: c_int, make: bool) -> Option<&'static AtomicU32> {
    let fd = usize::try_from(fd).ok()?;
    let (c, i) = (fd / CHUNK, fd % CHUNK);
    let cell = TABLE.get(c)?;
    let mut p = cell.load(Ordering::Acquire);
    if p.is_null() {
        if !make {
            return None;
        }
        let fresh: Box<Chunk> = Box::new([const { AtomicU32::new(0) }; CHUNK]);
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

/// The hint for `fd`, learning it from `fstat` when there is none.
pub(super) fn kind(fd: c_int) -> Kind {
    match slot(fd, false).and_then(|s| Kind::of(s.load(Ordering::Relaxed))) {
        Some(k) => k,
        None => {
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

/// Records what `fd` is (FD2), keeping the rest of its entry.
pub(super) fn set(fd: c_int, k: Kind) {
    if let Some(s) = slot(fd, true) {
        let _ = s.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
            Some((old & !KIND) | k.bits())
        });
    }
}

/// A new descriptor under `fd`'s number: the previous one's entry goes
/// (FD2, FD5). Returns whether a loop cached a watch for the old one.
fn renew(fd: c_int, bits: u32) -> (Option<Kind>, bool) {
    let Some(s) = slot(fd, bits != 0) else {
        return (None, false);
    };
    let old = s
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
            let gen = (old >> GEN_SHIFT).wrapping_add(1);
            Some((gen << GEN_SHIFT) | bits)
        })
        .unwrap_or(0);
    (Kind::of(old), old & CACHED != 0)
}

/// FD2: a new descriptor under `fd`: its kind, and nothing else (a hint
/// left by the number's previous descriptor goes).
pub(super) fn reset(fd: c_int, k: Kind) {
    let (_, cached) = renew(fd, k.bits());
    if cached {
        closed_elsewhere(fd);
    }
}

/// FD4: whether `fd` is known to be plain.
#[inline]
pub(super) fn is_plain(fd: c_int) -> bool {
    slot(fd, false).is_some_and(|s| s.load(Ordering::Relaxed) & PLAIN != 0)
}

/// FD4: `fd` was found plain; `tcp`: it is a TCP socket (IO6).
pub(super) fn set_plain(fd: c_int, tcp: bool) {
    if let Some(s) = slot(fd, true) {
        s.fetch_or(if tcp { PLAIN | TCP } else { PLAIN }, Ordering::Relaxed);
    }
}

/// FD4: `fd`'s mode or timeouts may have changed.
pub(super) fn unplain(fd: c_int) {
    if let Some(s) = slot(fd, false) {
        s.fetch_and(!(PLAIN | TCP), Ordering::Relaxed);
    }
}

/// IO6: the number's generation if it is a plain TCP socket that a loop
/// caches a watch for: one load for the whole question, on every transfer.
#[inline]
pub(super) fn plain_tcp_watched(fd: c_int) -> Option<u32> {
    const ALL: u32 = PLAIN | TCP | CACHED;
    let v = slot(fd, false)?.load(Ordering::Relaxed);
    (v & ALL == ALL).then_some(v >> GEN_SHIFT)
}

/// FD5: the number's generation, and that a loop now caches a watch for
/// it; `None` for a number beyond the table (never cached).
pub(super) fn cache_under(fd: c_int) -> Option<u32> {
    let s = slot(fd, true)?;
    let old = s.fetch_or(CACHED, Ordering::Relaxed);
    Some(old >> GEN_SHIFT)
}

/// FD5: the number's generation now.
pub(super) fn generation(fd: c_int) -> u32 {
    slot(fd, false).map_or(0, |s| s.load(Ordering::Relaxed) >> GEN_SHIFT)
}

/// FD5: how many remote closes of cached numbers happened so far.
pub(super) fn remote_closes() -> u64 {
    REMOTE_CLOSES.load(Ordering::Acquire)
}

/// FD5: drops the calling thread's loop's watch for `fd`, if it has one;
/// or, when this thread runs no runtime, tells the loops to look again.
fn closed_elsewhere(fd: c_int) {
    if !super::wait::drop_watch(fd) {
        REMOTE_CLOSES.fetch_add(1, Ordering::AcqRel);
    }
}

/// Forgets `fd` (FD2, FD5): it was closed, or is about to be replaced.
/// Returns what it was known to be. A watch the calling thread's loop
/// cached for it is disposed first, so the number's descriptor is no
/// longer held by the watch's duplicate when the caller closes it.
pub(super) fn forget(fd: c_int) -> Option<Kind> {
    let (kind, cached) = renew(fd, 0);
    if cached {
        closed_elsewhere(fd);
    }
    kind
}

/// Whether a kind is a regular file's.
pub(super) fn is_file(k: Kind) -> bool {
    matches!(k, Kind::File | Kind::Written)
}
