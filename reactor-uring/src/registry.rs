//! Per-descriptor state: what the reactor knows about each host descriptor
//! it was given.
//!
//! # What this module owns
//!
//! [`Registry`]: a map from descriptor number to [`FdEntry`]: whether the
//! descriptor is a socket (detected once, with `fstat`), the keys of the
//! ops in flight on it (requests and watches), and the parked close waiting
//! for them, if the descriptor is being closed through the reactor.
//!
//! # Invariants
//!
//! - **G1** An entry is made the first time a descriptor is used (after
//!   `fstat` proves it open) and forgotten when the reactor closes it
//!   (`AA_IO_CLOSE`, `AA_EVF_OWNS_FD`), so a reused number is detected
//!   afresh. Each entry has an `epoch` no other entry had.
//! - **G2** `ops` holds exactly the keys of live ops whose `fd` is this
//!   descriptor (the ops module adds a key when it makes the op and removes
//!   it when it retires it).
//! - **G3** Once `closer` is set, no new op is accepted on the descriptor
//!   ([`Registry::open`] answers `EBADF`), and the closer is handed back to
//!   be pushed exactly once: when `ops` becomes empty (or at once if it
//!   already is). This is ops invariant O4.
//!
//! # Access
//!
//! Loop thread only, through the reactor's `RefCell`; the borrow is never
//! held across a host callback or a push into the ring.
//!
//! # Drop order
//!
//! Entries hold only keys and numbers: dropping the registry frees nothing
//! else and closes no descriptor (AA-R6).

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::RawFd;

use crate::ops::sys;
use crate::ops::OpKey;

/// What the reactor knows about one descriptor.
#[derive(Debug)]
pub(crate) struct FdEntry {
    /// Whether it is a socket: requests use `RECV`/`SEND`.
    pub(crate) socket: bool,
    /// Identifies this entry among every entry the number ever had (G1).
    pub(crate) epoch: u64,
    /// Live ops on it (G2).
    ops: HashSet<OpKey>,
    /// Being closed through the reactor: no new op is accepted (G3).
    closing: bool,
    /// The parked close, while ops remain (G3).
    closer: Option<OpKey>,
}

/// The descriptor table (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    by_fd: HashMap<RawFd, FdEntry>,
    epochs: u64,
}

impl Registry {
    /// The entry of `fd`, made (after `fstat`) if needed. `EBADF` for a
    /// descriptor that is not open, or that is being closed (G3).
    pub(crate) fn open(&mut self, fd: RawFd) -> io::Result<&mut FdEntry> {
        if !self.by_fd.contains_key(&fd) {
            let socket = sys::is_socket(fd)?;
            self.epochs += 1;
            self.by_fd.insert(
                fd,
                FdEntry {
                    socket,
                    epoch: self.epochs,
                    ops: HashSet::new(),
                    closing: false,
                    closer: None,
                },
            );
        }
        let entry = self.by_fd.get_mut(&fd).expect("inserted above");
        if entry.closing {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        Ok(entry)
    }

    /// Whether the entry of epoch `epoch` is still the descriptor's, and
    /// not being closed.
    pub(crate) fn is_open(&self, fd: RawFd, epoch: u64) -> bool {
        matches!(self.by_fd.get(&fd), Some(e) if e.epoch == epoch && !e.closing)
    }

    /// Records a new op on `fd` (G2).
    pub(crate) fn add_op(&mut self, fd: RawFd, key: OpKey) {
        if let Some(entry) = self.by_fd.get_mut(&fd) {
            entry.ops.insert(key);
        }
    }

    /// Forgets a retired op on `fd` (G2); returns the parked close to push
    /// if that was the last op of a closing descriptor (G3).
    pub(crate) fn remove_op(&mut self, fd: RawFd, key: OpKey) -> Option<OpKey> {
        let entry = self.by_fd.get_mut(&fd)?;
        entry.ops.remove(&key);
        if entry.ops.is_empty() {
            entry.closer.take()
        } else {
            None
        }
    }

    /// The live ops on `fd`.
    pub(crate) fn ops_on(&self, fd: RawFd) -> Vec<OpKey> {
        self.by_fd
            .get(&fd)
            .map(|e| e.ops.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Parks `closer` on `fd` (G3). Returns true if `fd` has no op left, in
    /// which case the caller pushes the close now (and it is not kept).
    pub(crate) fn set_closer(&mut self, fd: RawFd, closer: OpKey) -> bool {
        let Some(entry) = self.by_fd.get_mut(&fd) else {
            return true;
        };
        // From now until the close completes and forgets the descriptor, it
        // refuses new ops (G3).
        entry.closing = true;
        if entry.ops.is_empty() {
            true
        } else {
            entry.closer = Some(closer);
            false
        }
    }

    /// A parked close was cancelled before it ran: the descriptor stays
    /// open and accepts ops again.
    pub(crate) fn clear_closer(&mut self, fd: RawFd, closer: OpKey) {
        if let Some(entry) = self.by_fd.get_mut(&fd) {
            if entry.closer == Some(closer) {
                entry.closer = None;
                entry.closing = false;
            }
        }
    }

    /// The descriptor turned out not to be a socket (its number was reused
    /// behind the reactor's back).
    pub(crate) fn mark_not_socket(&mut self, fd: RawFd) {
        if let Some(entry) = self.by_fd.get_mut(&fd) {
            entry.socket = false;
        }
    }

    /// Forgets `fd` after the reactor closed it (G1).
    pub(crate) fn forget(&mut self, fd: RawFd) {
        self.by_fd.remove(&fd);
    }
}
