//! Multishot receive with a provided-buffer ring (`uring.multishot_recv`,
//! Linux 6.0): one `RECV` with `IORING_RECV_MULTISHOT` per stream socket,
//! instead of one `RECV` per `AA_IO_READ`.
//!
//! The kernel picks a buffer from the reactor's buffer ring ([`BufRing`],
//! buffer group [`BGID`], made at the first multishot receive) for each
//! report; the loop copies the bytes into the socket's receive queue
//! (registry invariant G6) and gives the buffer back at once, so the ring
//! never stays short because a socket has unread data. An `AA_IO_READ` on a
//! stream socket does not reach the kernel: its op is parked on the socket
//! ([`Life::Held`](super::Life::Held)) and takes the queued bytes, in
//! order, when there are some; a read that finds bytes already queued
//! completes from the next `run_once` (R2). A read takes bytes only as it
//! completes, so cancelling a parked read loses nothing: the bytes wait for
//! the next read. End of stream and an error are delivered after the data;
//! end of stream then repeats, as `recv` does.
//!
//! Reaching [`RECV_LIMIT`] unread bytes on a socket cancels its multishot
//! receive, so the rest waits in the kernel's socket buffer (and TCP's
//! window pushes back on the peer); a read that leaves the queue below the
//! limit arms it again. The reports the kernel posted before the cancel
//! took effect are still queued, so a socket holds at most the limit plus
//! one batch of reports, which the buffer ring bounds (`ENTRIES` x
//! `BUF_SIZE`, 512 KiB).
//!
//! A peek (`AA_IO_PEEK`) parks too and copies without taking. Reads at an
//! offset and `AA_IO_RECVFROM` are not parked. When the kernel refuses the
//! multishot form (`EINVAL`, before 6.0) or the buffer ring cannot be made,
//! the feature is off for the rest of the reactor's life and parked reads
//! go back to the kernel as plain `RECV`s, in order, through their
//! descriptor's read lane (G4).
//!
//! Closing the socket through the reactor ends the parked reads with
//! `-ECANCELED`, cancels the multishot receive and frees the queue with the
//! registry entry; `destroy` cancels every multishot receive, waits for
//! their final completions, then unregisters and frees the buffer ring.
//!
//! # Safety
//!
//! - The buffer ring's entry array and buffers are allocated here and never
//!   move; the reactor keeps them until `destroy` drained every multishot
//!   receive and unregistered the group (or forever, if the kernel never
//!   answered: then they are leaked, not freed).
//! - A buffer is read only after the completion that reports it, for the
//!   length reported, and handed back to the kernel (the ring's tail is
//!   published with a release store) only after that read.
//! - The copy into a host buffer writes at most the request's length into
//!   the buffer the host lent until the request's callback (AA-R5), which
//!   runs right after.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::{cqueue, opcode, squeue, types};

use crate::event::State;
use crate::ops::{Hold, NewOp, OpKey, OpKind, OwnedBuf};
use crate::reactor::Reactor;
use crate::ring::{Cqe, Ring};

use super::io::Opcode;
use super::Request;

/// The buffer group of the reactor's buffer ring.
pub(crate) const BGID: u16 = 0;
/// Buffers in the ring (a power of two).
const ENTRIES: u16 = 128;
/// Bytes per buffer: the most one report carries.
const BUF_SIZE: usize = 4096;
/// Unread bytes per socket above which its multishot receive is cancelled
/// (G6).
pub(crate) const RECV_LIMIT: usize = 64 * 1024;

/// The provided-buffer ring: `ENTRIES` buffers of `BUF_SIZE` bytes.
#[derive(Debug)]
pub(crate) struct BufRing {
    entries: *mut BufRingEntry,
    bufs: *mut u8,
    tail: u16,
}

impl BufRing {
    fn ring_layout() -> Layout {
        let bytes = usize::from(ENTRIES) * std::mem::size_of::<BufRingEntry>();
        Layout::from_size_align(bytes.max(4096), 4096).expect("a valid layout")
    }

    fn bufs_layout() -> Layout {
        Layout::from_size_align(usize::from(ENTRIES) * BUF_SIZE, 4096).expect("a valid layout")
    }

    /// Allocates the ring, registers it as [`BGID`] and provides every
    /// buffer.
    pub(crate) fn new(ring: &Ring) -> std::io::Result<BufRing> {
        // SAFETY: both layouts have a non-zero size.
        let (entries, bufs) = unsafe {
            (
                alloc_zeroed(Self::ring_layout()).cast::<BufRingEntry>(),
                alloc_zeroed(Self::bufs_layout()),
            )
        };
        if entries.is_null() || bufs.is_null() {
            // SAFETY: each non-null pointer came from `alloc_zeroed` with
            // its layout.
            unsafe { Self::free(entries, bufs) };
            return Err(std::io::Error::from_raw_os_error(libc::ENOMEM));
        }
        // SAFETY: `entries` is page-aligned memory of ENTRIES entries and
        // `bufs` holds ENTRIES buffers of BUF_SIZE bytes; both stay valid
        // until `release` unregisters the group (module doc).
        if let Err(e) = unsafe { ring.register_buf_ring(entries as u64, ENTRIES, BGID) } {
            // SAFETY: never registered: the kernel does not know them.
            unsafe { Self::free(entries, bufs) };
            return Err(e);
        }
        let mut this = BufRing {
            entries,
            bufs,
            tail: 0,
        };
        for bid in 0..ENTRIES {
            this.stage(bid);
        }
        this.publish();
        Ok(this)
    }

    /// # Safety
    ///
    /// Each non-null pointer came from `alloc_zeroed` with its layout and
    /// the kernel no longer uses it.
    unsafe fn free(entries: *mut BufRingEntry, bufs: *mut u8) {
        // SAFETY: the caller's promise.
        unsafe {
            if !entries.is_null() {
                dealloc(entries.cast(), Self::ring_layout());
            }
            if !bufs.is_null() {
                dealloc(bufs, Self::bufs_layout());
            }
        }
    }

    /// Writes buffer `bid` at the ring's local tail (not yet visible to the
    /// kernel).
    fn stage(&mut self, bid: u16) {
        let slot = usize::from(self.tail & (ENTRIES - 1));
        // SAFETY: `slot` < ENTRIES, inside the entry array; the kernel reads
        // only entries below the published tail, and this one is above it.
        unsafe {
            let entry = &mut *self.entries.add(slot);
            entry.set_addr(self.bufs.add(usize::from(bid) * BUF_SIZE) as u64);
            entry.set_len(BUF_SIZE as u32);
            entry.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the staged buffers visible to the kernel.
    fn publish(&self) {
        // SAFETY: the tail field of the first entry is the ring's tail
        // (`io_uring_buf_ring`), a naturally aligned u16 the kernel reads
        // atomically.
        unsafe {
            let tail = BufRingEntry::tail(self.entries).cast::<AtomicU16>();
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    /// The `len` bytes the kernel wrote into buffer `bid`.
    fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let len = len.min(BUF_SIZE);
        let bid = usize::from(bid % ENTRIES);
        // SAFETY: the buffer is inside the allocation; the completion that
        // reported it was reaped, so the kernel is done writing it, and it
        // is handed back only after this borrow ends (`give_back`).
        unsafe { std::slice::from_raw_parts(self.bufs.add(bid * BUF_SIZE), len) }
    }

    /// Hands buffer `bid` back to the kernel.
    fn give_back(&mut self, bid: u16) {
        self.stage(bid % ENTRIES);
        self.publish();
    }

    /// Unregisters the group and frees the memory, or leaks it if the
    /// kernel may still write into it (`in_use`).
    pub(crate) fn release(self, ring: &Ring, in_use: bool) {
        if in_use || ring.unregister_buf_ring(BGID).is_err() {
            async_abi::plugin_error!("destroy: the kernel did not release the buffer ring; leaked");
            return;
        }
        // SAFETY: unregistered, and no receive is in flight: the kernel no
        // longer uses either allocation.
        unsafe { Self::free(self.entries, self.bufs) };
    }
}

/// A multishot receive on `fd` from buffer group [`BGID`].
fn multishot_entry(fd: RawFd) -> squeue::Entry {
    opcode::RecvMulti::new(types::Fd(fd), BGID).build()
}

/// Copies `src` into the host buffer of `req` (at most its length).
fn copy_to_host(req: &Request, src: &[u8]) -> usize {
    let n = src.len().min(req.buf.len());
    if n > 0 {
        // SAFETY: AA-R5: the host lent `len` bytes at `ptr` until the
        // request's callback, which runs right after; `n` <= `len`; the
        // reactor's queue never overlaps host memory.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), req.buf.as_mut_ptr(), n) };
    }
    n
}

impl Reactor {
    /// Whether `req` parks on its socket's multishot receive (`stream`: the
    /// descriptor is a stream socket).
    pub(crate) fn parks_read(&self, req: &Request, stream: bool) -> bool {
        stream
            && self.multishot_recv.get()
            && req.opcode == Opcode::Read
            && req.socket
            && req.offset < 0
            && !req.nowait
    }

    /// Parks the read `key` on socket `fd` (G6): it completes from the next
    /// `run_once` if bytes (or the end) are queued, else when some arrive.
    pub(crate) fn park_read(&self, fd: RawFd, key: OpKey) {
        let ready = {
            let mut registry = self.registry.borrow_mut();
            let Some(queue) = registry.recv_queue(fd) else {
                return;
            };
            queue.waiters.push_back(key);
            !queue.unread().is_empty() || queue.end.is_some()
        };
        let empty = matches!(self.ops.borrow().get(key).map(|op| &op.kind),
            Some(OpKind::Request(req)) if req.buf.is_empty());
        if ready || empty {
            self.recv_matches.borrow_mut().push(fd);
        } else {
            self.arm_recv(fd);
        }
    }

    /// Arms the multishot receive of `fd` unless one is armed, the stream
    /// ended, or the queue is at its limit (G6).
    fn arm_recv(&self, fd: RawFd) {
        let wanted = matches!(self.registry.borrow_mut().recv_queue(fd),
            Some(q) if q.multishot.is_none() && q.end.is_none() && q.unread().len() < RECV_LIMIT);
        if !wanted {
            return;
        }
        if self.bufs.borrow().is_none() {
            match BufRing::new(&self.ring.borrow()) {
                Ok(bufs) => *self.bufs.borrow_mut() = Some(bufs),
                Err(e) => {
                    async_abi::plugin_debug!(
                        "reactor-uring: no provided-buffer ring ({e}); reads use one RECV each"
                    );
                    self.recv_fallback(fd);
                    return;
                }
            }
        }
        let key = self.start_op(
            NewOp {
                owner: None,
                kind: OpKind::RecvMulti,
                fd: Some(fd),
                buf: OwnedBuf::None,
                hold: Hold::No,
            },
            |_, _| multishot_entry(fd),
        );
        if let Some(queue) = self.registry.borrow_mut().recv_queue(fd) {
            queue.multishot = Some(key);
        }
    }

    /// Turns the feature off and hands `fd`'s parked reads back to the
    /// kernel as plain `RECV`s, in order, through the read lane (G4).
    fn recv_fallback(&self, fd: RawFd) {
        self.multishot_recv.set(false);
        let parked: Vec<OpKey> = match self.registry.borrow_mut().recv_queue(fd) {
            Some(queue) => queue.waiters.drain(..).collect(),
            None => Vec::new(),
        };
        for key in parked {
            if self.registry.borrow_mut().enlane_read(fd, key) {
                self.repush(key);
            }
        }
    }

    /// Serves the reads parked since the last iteration on sockets with
    /// bytes queued. Returns the callbacks run.
    pub(crate) fn run_recv_matches(&self) -> i32 {
        let sockets = std::mem::take(&mut *self.recv_matches.borrow_mut());
        sockets.into_iter().map(|fd| self.match_reads(fd)).sum()
    }

    /// Whether parked reads wait for bytes already queued.
    pub(crate) fn has_recv_matches(&self) -> bool {
        !self.recv_matches.borrow().is_empty()
    }

    /// A report of a socket's multishot receive. Returns the callbacks run.
    pub(super) fn complete_recv_multi(&self, key: OpKey, cqe: Cqe) -> i32 {
        let Some(fd) = self.ops.borrow().get(key).and_then(|op| op.fd) else {
            return 0;
        };
        if let Some(bid) = cqueue::buffer_select(cqe.flags) {
            let full = {
                let mut bufs = self.bufs.borrow_mut();
                let Some(bufs) = bufs.as_mut() else {
                    return 0;
                };
                let full = if cqe.result > 0 {
                    let bytes = bufs.bytes(bid, cqe.result as usize);
                    match self.registry.borrow_mut().recv_queue(fd) {
                        Some(queue) => {
                            queue.data.extend_from_slice(bytes);
                            queue.unread().len() >= RECV_LIMIT
                        }
                        None => false,
                    }
                } else {
                    false
                };
                bufs.give_back(bid);
                full
            };
            if full && cqe.more() {
                // Enough waiting (G6): the kernel's socket buffer holds the
                // rest.
                let _ = self.cancel_op(key);
            }
        }
        if !cqe.more() {
            self.retire(key);
            match cqe.result {
                r if r > 0 || r == -libc::ECANCELED || r == -libc::ENOBUFS => {}
                r if r == -libc::EINVAL && self.recv_never_reported(fd) => {
                    // EINVAL before anything arrived: a kernel without the
                    // multishot form.
                    async_abi::plugin_debug!(
                        "reactor-uring: the kernel refused a multishot RECV (EINVAL); reads use one RECV each"
                    );
                    self.recv_fallback(fd);
                    return 0;
                }
                r => {
                    if let Some(queue) = self.registry.borrow_mut().recv_queue(fd) {
                        queue.end = Some(r);
                    }
                }
            }
        }
        self.match_reads(fd)
    }

    /// Whether `fd`'s queue never received anything (so an `EINVAL` is the
    /// kernel refusing the multishot form).
    fn recv_never_reported(&self, fd: RawFd) -> bool {
        matches!(self.registry.borrow_mut().recv_queue(fd),
            Some(q) if q.data.is_empty() && q.end.is_none())
    }

    /// Completes parked reads of `fd` from its queue, oldest first, while
    /// there are bytes or an end to give (G6); then arms the multishot
    /// receive again if reads still wait. Returns the callbacks run.
    fn match_reads(&self, fd: RawFd) -> i32 {
        let mut count = 0;
        loop {
            let served = {
                let mut registry = self.registry.borrow_mut();
                let Some(queue) = registry.recv_queue(fd) else {
                    return count;
                };
                let Some(&waiter) = queue.waiters.front() else {
                    break;
                };
                let ops = self.ops.borrow();
                let Some(OpKind::Request(req)) = ops.get(waiter).map(|op| &op.kind) else {
                    queue.waiters.pop_front();
                    continue;
                };
                let peek = req.has(async_abi::AA_IO_PEEK);
                if req.buf.is_empty() {
                    Some((waiter, 0))
                } else if !queue.unread().is_empty() {
                    let n = copy_to_host(req, queue.unread());
                    if !peek {
                        queue.consume(n);
                    }
                    Some((waiter, n as i64))
                } else if let Some(end) = queue.end {
                    if end < 0 && !peek {
                        // An error is reported once; the stream has ended.
                        queue.end = Some(0);
                    }
                    Some((waiter, i64::from(end)))
                } else {
                    None
                }
            };
            let Some((waiter, value)) = served else { break };
            count += self.finish_parked_read(waiter, value);
        }
        let waiting = matches!(self.registry.borrow_mut().recv_queue(fd),
            Some(q) if !q.waiters.is_empty());
        if waiting {
            self.arm_recv(fd);
        }
        count
    }

    /// Completes the parked read `key` with `value`.
    fn finish_parked_read(&self, key: OpKey, value: i64) -> i32 {
        let Some(op) = self.retire(key) else { return 0 };
        let Some(ev) = op.owner else { return 0 };
        if let State::Io(io) = &mut *ev.state.borrow_mut() {
            io.op = None;
        }
        self.touch(&ev);
        let mut count = 0;
        if ev.deliverable() {
            ev.callback.notify(&*ev, 0, value);
            count = 1;
        }
        self.settle_close(&ev);
        count
    }

    /// `destroy`: the multishot receives still armed, which the caller
    /// cancels and drains before [`Reactor::release_bufs`].
    pub(crate) fn armed_receives(&self) -> Vec<OpKey> {
        self.registry.borrow().armed_receives()
    }

    /// `destroy`, after draining: unregisters and frees the buffer ring
    /// (leaks it if the kernel did not release every multishot receive,
    /// `in_use`).
    pub(crate) fn release_bufs(&self, in_use: bool) {
        let Some(bufs) = self.bufs.borrow_mut().take() else {
            return;
        };
        bufs.release(&self.ring.borrow(), in_use);
    }
}
