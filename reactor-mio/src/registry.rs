//! Per-descriptor state: one mio registration per fd, shared by every
//! request and poll on it.
//!
//! # What this module owns
//!
//! [`Registry`]: a slab of [`FdEntry`] indexed by [`Key`] (slot index plus
//! generation, which is also the mio `Token`), and a table from descriptor
//! number to key (a `Vec` indexed by the descriptor: they are small and
//! dense). An entry holds the pending readers (READ, ACCEPT,
//! RECVFROM) and writers (WRITE, CONNECT, SENDTO) of its descriptor in FIFO
//! order, and the poll events watching it.
//!
//! # Invariants
//!
//! - **G1** At most one entry per descriptor number, and at most one mio
//!   registration per entry (epoll refuses the same fd twice).
//! - **G2** A registration only grows (`registered` gains interest bits,
//!   never loses them) and is kept until the descriptor is closed through
//!   `AA_IO_CLOSE` or an `AA_EVF_OWNS_FD` close, which removes the entry
//!   and deregisters before `close(2)`. So a reused descriptor number always
//!   gets a fresh entry and a fresh key.
//! - **G3** A key names one entry for its whole life: removing an entry
//!   bumps its slot's generation, so a stale mio event (or a request that
//!   outlived its descriptor) finds nothing.
//! - **G4** Every event in `readers`/`writers` is an I/O request in phase
//!   `Queued` or `Connecting`; every event in `polls` is a poll.
//! - **G5** A slot index is below `u32::MAX`, so no key's token has
//!   `u32::MAX` in its low half: those tokens belong to the reactor's own
//!   sources (reactor invariant R7).
//! - **G6** Readiness hints (`read_hint`, `write_hint`) are false only
//!   after an attempt in that direction would block, or came back short on
//!   a TCP socket (fewer bytes than asked: the kernel had no more; a
//!   peek, `AA_IO_PEEK`, never counts: it leaves the data queued); every
//!   readiness report for the descriptor sets them again. epoll is
//!   edge-triggered here, so data (or room) that arrives after a hint went
//!   false produces a new report: a request that skips its first attempt
//!   because of a false hint is still woken (ops invariant O3). Once the peer
//!   closed its side (`EPOLLRDHUP` reported), the read hint stays true for
//!   good: end of stream may already be pending behind a short read, and it
//!   will not be reported again. This saves the `EAGAIN` system call a
//!   read-after-echo would otherwise make on every request (tokio does the
//!   same, with the same sticky "read closed").
//!
//! # Access
//!
//! Loop thread only, through the reactor's `RefCell`; the borrow is never
//! held across a host callback (the reactor copies what it needs first).
//!
//! # Drop order
//!
//! Dropping the registry drops the queued `Rc<Event>`s; the reactor only
//! does so in `destroy`, once no event is alive.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::rc::Rc;

use mio::unix::SourceFd;
use mio::{Interest, Token};

use crate::event::Event;

/// Names an entry: slot index in the low 32 bits, generation above (G3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key(pub(crate) usize);

impl Key {
    fn new(index: u32, generation: u32) -> Key {
        Key((generation as usize) << 32 | index as usize)
    }

    fn index(self) -> usize {
        self.0 & 0xffff_ffff
    }

    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The mio token of the entry's registration.
    pub(crate) fn token(self) -> Token {
        Token(self.0)
    }
}

/// What one descriptor's registration is for.
#[derive(Debug)]
pub(crate) struct FdEntry {
    /// The descriptor number.
    pub(crate) fd: RawFd,
    /// Whether it is a socket (detected once, with `fstat`).
    pub(crate) socket: bool,
    /// Whether it is a TCP socket: only there does a short read or write
    /// mean the kernel had no more (G6; a Unix stream's read stops at a
    /// message carrying descriptors with bytes still queued).
    pub(crate) stream: bool,
    /// A read or accept might not block (G6).
    pub(crate) read_hint: bool,
    /// A write might not block (G6).
    pub(crate) write_hint: bool,
    /// The peer closed its side; reads never block again (G6).
    pub(crate) read_closed: bool,
    /// The mio registration's interest, `None` before the first.
    pub(crate) registered: Option<Interest>,
    /// epoll refused the descriptor (a regular file): requests never wait,
    /// they are simply retried from the loop.
    pub(crate) always_ready: bool,
    /// Pending READ, ACCEPT and RECVFROM requests, oldest first.
    pub(crate) readers: VecDeque<Rc<Event>>,
    /// Pending WRITE, CONNECT and SENDTO requests, oldest first.
    pub(crate) writers: VecDeque<Rc<Event>>,
    /// Poll events watching the descriptor.
    pub(crate) polls: Vec<Rc<Event>>,
}

impl FdEntry {
    /// Records what an attempt in one direction says about readiness (G6):
    /// `got` is `None` for `EAGAIN`, else the bytes transferred.
    pub(crate) fn note_attempt(&mut self, reads: bool, asked: usize, got: Option<i64>) {
        let drained = match got {
            // Would block: certainly not ready.
            None => true,
            // Short on a stream socket: the kernel had no more to give.
            Some(n) => self.stream && n > 0 && (n as usize) < asked,
        };
        if drained {
            if reads {
                self.read_hint = self.read_closed;
            } else {
                self.write_hint = false;
            }
        }
    }

    /// A readiness report for the descriptor (G6).
    pub(crate) fn note_ready(&mut self, readable: bool, writable: bool, read_closed: bool) {
        self.read_closed |= read_closed;
        self.read_hint |= readable || read_closed;
        self.write_hint |= writable;
    }

    /// Registers this entry's descriptor (key `key`) for `want`, or widens
    /// its registration (G2); with `reevaluate`, re-registers even when the
    /// interest is unchanged, so epoll reports current readiness again. A
    /// descriptor epoll refuses (`EPERM`: a regular file) is marked always
    /// ready when `allow_always_ready`, else an error.
    pub(crate) fn ensure(
        &mut self,
        mio: &mio::Registry,
        key: Key,
        want: Interest,
        reevaluate: bool,
        allow_always_ready: bool,
    ) -> io::Result<()> {
        if self.always_ready {
            return Ok(());
        }
        let fd = self.fd;
        match self.registered {
            None => match mio.register(&mut SourceFd(&fd), key.token(), want) {
                Ok(()) => self.registered = Some(want),
                Err(e) if e.raw_os_error() == Some(libc::EPERM) && allow_always_ready => {
                    self.always_ready = true;
                }
                Err(e) => return Err(e),
            },
            Some(have) => {
                let union = have | want;
                if union != have || reevaluate {
                    mio.reregister(&mut SourceFd(&fd), key.token(), union)?;
                    self.registered = Some(union);
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    entry: Option<FdEntry>,
}

/// The descriptor table (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// The entry of each descriptor, indexed by the descriptor itself
    /// (descriptors are small and dense): one load per request, where a
    /// hash map cost a SipHash of the fd on every read and write.
    by_fd: Vec<Option<Key>>,
}

impl Registry {
    /// The entry of `fd`, if the reactor knows it.
    pub(crate) fn key_of(&self, fd: RawFd) -> Option<Key> {
        let i = usize::try_from(fd).ok()?;
        self.by_fd.get(i).copied().flatten()
    }

    /// The entry of `fd`, made (with `fstat` to check the descriptor and see
    /// whether it is a socket) if needed.
    pub(crate) fn entry_for(&mut self, fd: RawFd) -> io::Result<Key> {
        if let Some(key) = self.key_of(fd) {
            return Ok(key);
        }
        let i = usize::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
        let socket = crate::sys::is_socket(fd)?;
        let stream = socket && crate::sys::is_tcp_socket(fd);
        let entry = FdEntry {
            fd,
            socket,
            stream,
            read_hint: true,
            write_hint: true,
            read_closed: false,
            registered: None,
            always_ready: false,
            readers: VecDeque::new(),
            writers: VecDeque::new(),
            polls: Vec::new(),
        };
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    entry: None,
                });
                u32::try_from(self.slots.len() - 1)
                    .ok()
                    .filter(|&i| i != u32::MAX)
                    .expect("fewer than 2^32 - 1 descriptors (G5)")
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.entry = Some(entry);
        let key = Key::new(index, slot.generation);
        if self.by_fd.len() <= i {
            self.by_fd.resize(i + 1, None);
        }
        self.by_fd[i] = Some(key);
        Ok(key)
    }

    /// The live entry named by `key` (G3).
    pub(crate) fn get(&self, key: Key) -> Option<&FdEntry> {
        let slot = self.slots.get(key.index())?;
        if slot.generation != key.generation() {
            return None;
        }
        slot.entry.as_ref()
    }

    /// The live entry named by `key`, mutably (G3).
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut FdEntry> {
        let slot = self.slots.get_mut(key.index())?;
        if slot.generation != key.generation() {
            return None;
        }
        slot.entry.as_mut()
    }

    /// Makes sure the entry's registration covers `want` (G2): registers on
    /// first use, re-registers with the union when it grows, and re-registers
    /// anyway if `reevaluate` (EPOLL_CTL_MOD reports current readiness
    /// again). A descriptor epoll refuses with `EPERM` becomes
    /// `always_ready` when `allow_always_ready` (requests on regular files).
    pub(crate) fn ensure(
        &mut self,
        mio: &mio::Registry,
        key: Key,
        want: Interest,
        reevaluate: bool,
        allow_always_ready: bool,
    ) -> io::Result<()> {
        self.get_mut(key)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?
            .ensure(mio, key, want, reevaluate, allow_always_ready)
    }

    /// Forgets the entry of `fd` (G2): deregisters it and returns its queues
    /// so the caller can complete them. The caller then closes the fd.
    pub(crate) fn remove(&mut self, mio: &mio::Registry, fd: RawFd) -> Option<FdEntry> {
        let key = self
            .by_fd
            .get_mut(usize::try_from(fd).ok()?)
            .and_then(Option::take)?;
        let slot = &mut self.slots[key.index()];
        let entry = slot.entry.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(key.index() as u32);
        if entry.registered.is_some() {
            // The descriptor is about to be closed, which removes it from the
            // epoll set anyway; deregistering first keeps a duplicate of the
            // descriptor (dup, fork) from reporting into a reused key.
            let _ = mio.deregister(&mut SourceFd(&fd));
        }
        Some(entry)
    }

    /// Forgets every entry without touching the descriptors (`destroy`).
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.by_fd.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_round_trips_index_and_generation() {
        let key = Key::new(7, 3);
        assert_eq!(key.index(), 7);
        assert_eq!(key.generation(), 3);
        assert_eq!(key.token(), Token(3 << 32 | 7));
    }
}
