//! Per-descriptor state: what the reactor knows about each host descriptor
//! it was given.
//!
//! # What this module owns
//!
//! [`Registry`]: a table indexed by descriptor number (a vector: no
//! hashing on the path of every request) of [`FdEntry`]: whether the
//! descriptor is a socket (detected once, with `fstat`), the keys of the
//! live ops on it (requests and watches), its two request lanes, and the
//! held close waiting for the ops, if the descriptor is being closed
//! through the reactor.
//!
//! # Invariants
//!
//! - **G1** An entry is made the first time a descriptor is used (after
//!   `fstat` proves it open) and forgotten when the reactor closes it
//!   (`AA_IO_CLOSE`, `AA_EVF_OWNS_FD`) or, for a regular file, when its
//!   last op retires (G7), so a reused number is detected afresh. Each entry has an `epoch` no other entry had.
//! - **G2** `ops` holds exactly the keys of live ops whose `fd` is this
//!   descriptor (the ops module adds a key when it makes the op and removes
//!   it when it retires it).
//! - **G3** Once `closing` is set, no new op is accepted on the descriptor
//!   ([`Registry::open`] answers `EBADF`), its lanes stop advancing, and the
//!   held close is handed back to be staged exactly once: when `ops`
//!   becomes empty (or at once if it already is). This is ops invariant O4.
//! - **G4** A lane (reads, writes) holds the keys of the stream requests
//!   on the descriptor in submission order; only its head is staged or in
//!   the kernel, the others are held (ops invariant O4), and the next is
//!   handed back to be staged when the head retires. So requests in one
//!   direction complete in submission order, each with the bytes that came
//!   for it — which the kernel alone does not promise: it wakes two
//!   `RECV`s waiting on one socket newest first.
//!
//! - **G5** A listener's accept queue holds either parked requests or
//!   connections accepted ahead, never both once the loop matched them
//!   (each `run_once` hands the oldest connection to the oldest request),
//!   and every connection in `ready` is a descriptor the reactor owns until
//!   a request takes it: closing the listener through the reactor, or
//!   destroying the reactor, closes them (nothing leaks).
//!
//! - **G6** A stream socket's receive queue delivers, in order, the bytes
//!   its multishot receive reported, then its end (end of stream, or the
//!   error); a read takes bytes only when it completes, so a cancelled
//!   read loses nothing. Reaching `RECV_LIMIT` unread bytes cancels the
//!   multishot receive (what the kernel reported before the cancel, at
//!   most one buffer ring's worth, is still queued), and a read that finds
//!   the queue below the limit arms one again.
//!
//! - **G7** The entry of a regular file (or block device) that was never
//!   polled is forgotten when its last op retires (unless it is being
//!   closed through the reactor, G3): it holds nothing between ops (no
//!   receive or accept queue, empty lanes), and a number the host closes
//!   itself (a file the hooks read through the ring, then `close(2)`) must
//!   not leave its kind to whatever the number is reused for. The `fstat`
//!   the next op makes is nothing next to a file request that reached the
//!   ring (the page cache could not serve it at once). A socket's entry
//!   stays (G5, G6), a pipe's too (its requests are a stream's: one `fstat`
//!   per read would show), and so does a polled one, whose poll holds its
//!   epoch while armed for nothing.
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

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

use crate::ops::sys;
use crate::ops::OpKey;

/// A request lane of a descriptor (G4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// Reads (`AA_IO_READ` without an offset).
    Read = 0,
    /// Writes (`AA_IO_WRITE` without an offset).
    Write = 1,
}

/// A listener's multishot accept (ops/accept.rs): the accept requests
/// parked on it, the connections it accepted ahead of them, and its op.
#[derive(Debug, Default)]
pub(crate) struct AcceptQueue {
    /// Parked `AA_IO_ACCEPT` requests, oldest first (G5).
    pub(crate) waiters: VecDeque<OpKey>,
    /// Connections accepted before a request asked, oldest first (G5).
    pub(crate) ready: VecDeque<RawFd>,
    /// The armed multishot `ACCEPT`, if any.
    pub(crate) multishot: Option<OpKey>,
}

/// A stream socket's multishot receive (ops/recv.rs): the reads parked on
/// it, the bytes it received ahead of them, and how the stream ended.
#[derive(Debug, Default)]
pub(crate) struct RecvQueue {
    /// Parked `AA_IO_READ` requests, oldest first (G6).
    pub(crate) waiters: VecDeque<OpKey>,
    /// Bytes received and not yet read: `data[start..]` (G6).
    pub(crate) data: Vec<u8>,
    /// Where the unread bytes of `data` begin.
    pub(crate) start: usize,
    /// End of stream (0) or the error that ended the receive (`-errno`),
    /// delivered after the data (G6).
    pub(crate) end: Option<i32>,
    /// The armed multishot `RECV`, if any.
    pub(crate) multishot: Option<OpKey>,
}

impl FdEntry {
    /// Whether no request of `lane` is held or in the kernel (G4), so one
    /// made now at once cannot overtake an earlier one.
    pub(crate) fn idle(&self, lane: Lane) -> bool {
        self.lanes[lane as usize].is_empty() && !self.closing
    }
}

impl RecvQueue {
    /// The unread bytes.
    pub(crate) fn unread(&self) -> &[u8] {
        &self.data[self.start..]
    }

    /// Marks `n` unread bytes read.
    pub(crate) fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.data.len() {
            self.data.clear();
            self.start = 0;
        } else if self.start > self.data.len() / 2 && self.start > 4096 {
            self.data.drain(..self.start);
            self.start = 0;
        }
    }
}

/// What the reactor knows about one descriptor.
#[derive(Debug)]
pub(crate) struct FdEntry {
    /// Whether it is a socket: requests use `RECV`/`SEND`.
    pub(crate) socket: bool,
    /// Whether it is a stream socket (`SOCK_STREAM`): reads may park on a
    /// multishot receive.
    pub(crate) stream: bool,
    /// Identifies this entry among every entry the number ever had (G1).
    pub(crate) epoch: u64,
    /// Live ops on it (G2).
    ops: Vec<OpKey>,
    /// Stream requests in submission order, by [`Lane`] (G4).
    lanes: [VecDeque<OpKey>; 2],
    /// Being closed through the reactor: no new op is accepted (G3).
    closing: bool,
    /// The held close, while ops remain (G3).
    closer: Option<OpKey>,
    /// A listener's multishot accept state, from its first parked accept.
    pub(crate) accept: Option<Box<AcceptQueue>>,
    /// A stream socket's multishot receive state, from its first parked
    /// read.
    pub(crate) recv: Option<Box<RecvQueue>>,
    /// A poll watched it (whose epoch must stay valid while it has no op:
    /// armed for nothing, or between two watches): kept past its ops (G7).
    pub(crate) polled: bool,
    /// A regular file or a block device, forgotten with its last op (G7).
    pub(crate) regular: bool,
}

/// Entries by descriptor number: a vector indexed by the number (the
/// kernel hands out the lowest free one, so it stays dense), with no
/// hashing on the path of every request.
#[derive(Debug, Default)]
struct FdTable {
    slots: Vec<Option<Box<FdEntry>>>,
}

impl FdTable {
    fn slot(fd: RawFd) -> Option<usize> {
        usize::try_from(fd).ok()
    }

    fn get(&self, fd: &RawFd) -> Option<&FdEntry> {
        self.slots.get(Self::slot(*fd)?)?.as_deref()
    }

    fn get_mut(&mut self, fd: &RawFd) -> Option<&mut FdEntry> {
        self.slots.get_mut(Self::slot(*fd)?)?.as_deref_mut()
    }

    fn contains_key(&self, fd: &RawFd) -> bool {
        self.get(fd).is_some()
    }

    /// Stores `entry` for `fd`, which is not negative (`Registry::open`).
    fn insert(&mut self, fd: RawFd, entry: FdEntry) {
        let Some(i) = Self::slot(fd) else { return };
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(Box::new(entry));
    }

    fn remove(&mut self, fd: &RawFd) {
        if let Some(slot) = Self::slot(*fd).and_then(|i| self.slots.get_mut(i)) {
            *slot = None;
        }
    }

    fn iter(&self) -> impl Iterator<Item = (RawFd, &FdEntry)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i as RawFd, e.as_deref()?)))
    }

    fn values(&self) -> impl Iterator<Item = &FdEntry> {
        self.slots.iter().filter_map(|e| e.as_deref())
    }
}

/// The descriptor table (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    by_fd: FdTable,
    epochs: u64,
}

impl Registry {
    /// The entry of `fd`, made (after `fstat`) if needed. `EBADF` for a
    /// descriptor that is not open, or that is being closed (G3).
    pub(crate) fn open(&mut self, fd: RawFd) -> io::Result<&mut FdEntry> {
        if fd < 0 {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        if !self.by_fd.contains_key(&fd) {
            let kind = sys::file_type(fd)?;
            let socket = kind == libc::S_IFSOCK;
            let stream = socket && sys::is_stream(fd);
            self.epochs += 1;
            self.by_fd.insert(
                fd,
                FdEntry {
                    socket,
                    stream,
                    epoch: self.epochs,
                    ops: Vec::new(),
                    lanes: Default::default(),
                    closing: false,
                    closer: None,
                    accept: None,
                    recv: None,
                    polled: false,
                    regular: kind == libc::S_IFREG || kind == libc::S_IFBLK,
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

    /// Records a new op on `fd` (G2), at the end of `lane` if it has one
    /// (G4). Returns whether it may be staged now: it has no lane, or it is
    /// its lane's head.
    pub(crate) fn add_op(&mut self, fd: RawFd, key: OpKey, lane: Option<Lane>) -> bool {
        let Some(entry) = self.by_fd.get_mut(&fd) else {
            return true;
        };
        entry.ops.push(key);
        match lane {
            Some(lane) => {
                let lane = &mut entry.lanes[lane as usize];
                lane.push_back(key);
                lane.len() == 1
            }
            None => true,
        }
    }

    /// Forgets a retired op on `fd` (G2). Returns what to stage now: the
    /// next request of its lane if it was the head (G4), and the held close
    /// if it was the last op of a closing descriptor (G3).
    pub(crate) fn remove_op(&mut self, fd: RawFd, key: OpKey) -> (Option<OpKey>, Option<OpKey>) {
        let Some(entry) = self.by_fd.get_mut(&fd) else {
            return (None, None);
        };
        if let Some(at) = entry.ops.iter().position(|k| *k == key) {
            entry.ops.swap_remove(at);
        }
        if let Some(queue) = &mut entry.accept {
            if queue.multishot == Some(key) {
                queue.multishot = None;
            }
            queue.waiters.retain(|k| *k != key);
        }
        if let Some(queue) = &mut entry.recv {
            if queue.multishot == Some(key) {
                queue.multishot = None;
            }
            queue.waiters.retain(|k| *k != key);
        }
        let mut next = None;
        for lane in &mut entry.lanes {
            if lane.front() == Some(&key) {
                lane.pop_front();
                if !entry.closing {
                    next = lane.front().copied();
                }
            } else if let Some(at) = lane.iter().position(|k| *k == key) {
                lane.remove(at);
            }
        }
        let closer = if entry.ops.is_empty() {
            entry.closer.take()
        } else {
            None
        };
        if entry.ops.is_empty() && entry.regular && !entry.polled && !entry.closing {
            // G7: nothing of a file outlives its ops.
            self.by_fd.remove(&fd);
        }
        (next, closer)
    }

    /// Starts closing `fd` (G3) and returns its live ops, which the caller
    /// ends.
    pub(crate) fn start_closing(&mut self, fd: RawFd) -> Vec<OpKey> {
        match self.by_fd.get_mut(&fd) {
            Some(entry) => {
                entry.closing = true;
                entry.ops.to_vec()
            }
            None => Vec::new(),
        }
    }

    /// Holds `closer` until `fd` is quiet (G3). Returns true if it already
    /// is: the caller stages the close now.
    pub(crate) fn hold_closer(&mut self, fd: RawFd, closer: OpKey) -> bool {
        match self.by_fd.get_mut(&fd) {
            Some(entry) if !entry.ops.is_empty() => {
                entry.closer = Some(closer);
                false
            }
            _ => true,
        }
    }

    /// The descriptor turned out not to be a socket (its number was reused
    /// behind the reactor's back).
    pub(crate) fn mark_not_socket(&mut self, fd: RawFd) {
        if let Some(entry) = self.by_fd.get_mut(&fd) {
            entry.socket = false;
        }
    }

    /// The accept queue of `fd`, made on first use; `None` if the reactor
    /// does not know `fd` or it is closing (G3).
    pub(crate) fn accept_queue(&mut self, fd: RawFd) -> Option<&mut AcceptQueue> {
        match self.by_fd.get_mut(&fd) {
            Some(entry) if !entry.closing => {
                Some(entry.accept.get_or_insert_with(Default::default))
            }
            _ => None,
        }
    }

    /// The receive queue of `fd`, made on first use; `None` if the reactor
    /// does not know `fd` or it is closing (G3).
    pub(crate) fn recv_queue(&mut self, fd: RawFd) -> Option<&mut RecvQueue> {
        match self.by_fd.get_mut(&fd) {
            Some(entry) if !entry.closing => Some(entry.recv.get_or_insert_with(Default::default)),
            _ => None,
        }
    }

    /// Every multishot receive still armed (for `destroy`).
    pub(crate) fn armed_receives(&self) -> Vec<OpKey> {
        self.by_fd
            .values()
            .filter_map(|e| e.recv.as_ref().and_then(|q| q.multishot))
            .collect()
    }

    /// Appends `key` to `fd`'s read lane (a parked read handed back to
    /// the kernel, G4). Returns whether it is the lane's head.
    pub(crate) fn enlane_read(&mut self, fd: RawFd, key: OpKey) -> bool {
        match self.by_fd.get_mut(&fd) {
            Some(entry) => {
                let lane = &mut entry.lanes[Lane::Read as usize];
                lane.push_back(key);
                lane.len() == 1
            }
            None => true,
        }
    }

    /// Takes the connections accepted ahead on `fd` (it is being closed, or
    /// the reactor destroyed): the caller closes them (G5).
    pub(crate) fn take_ready(&mut self, fd: RawFd) -> Vec<RawFd> {
        match self.by_fd.get_mut(&fd).and_then(|e| e.accept.as_mut()) {
            Some(queue) => queue.ready.drain(..).collect(),
            None => Vec::new(),
        }
    }

    /// Every descriptor with connections accepted ahead or a multishot
    /// accept armed (for `destroy`).
    pub(crate) fn listeners(&self) -> Vec<RawFd> {
        self.by_fd
            .iter()
            .filter(|(_, e)| e.accept.is_some())
            .map(|(fd, _)| fd)
            .collect()
    }

    /// Forgets `fd` after the reactor closed it (G1).
    pub(crate) fn forget(&mut self, fd: RawFd) {
        self.by_fd.remove(&fd);
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    /// G7: a regular file's entry goes with its last op, so the number
    /// starts afresh; a socket's, a pipe's and a polled file's stay.
    #[test]
    fn a_file_entry_goes_with_its_last_op_others_stay() {
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        let polled = std::fs::File::open("/proc/self/stat").unwrap();
        let (sock, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let (r, _w) = std::io::pipe().unwrap();
        let mut reg = Registry::default();
        let fds = [
            file.as_raw_fd(),
            sock.as_raw_fd(),
            r.as_raw_fd(),
            polled.as_raw_fd(),
        ];
        let first = reg.open(fds[0]).unwrap().epoch;
        reg.open(fds[1]).unwrap();
        reg.open(fds[2]).unwrap();
        reg.open(fds[3]).unwrap().polled = true;
        for (i, fd) in fds.into_iter().enumerate() {
            let key = OpKey::for_test(i as u32);
            reg.add_op(fd, key, None);
            reg.remove_op(fd, key);
        }
        let kept: Vec<bool> = fds.iter().map(|fd| reg.by_fd.contains_key(fd)).collect();
        assert_eq!(kept, [false, true, true, true]);
        assert_ne!(reg.open(fds[0]).unwrap().epoch, first, "a new entry");
    }
}
