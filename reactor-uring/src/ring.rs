//! The ring wrapper: a reactor's one `IoUring`, its staging queue, and the
//! single `io_uring_enter` of each loop iteration.
//!
//! # What this module owns
//!
//! [`Ring`]: the io_uring instance (its descriptor and the three shared
//! mappings), the staging queue of entries not yet handed to the kernel,
//! and the last seen count of dropped completions.
//!
//! # Invariants
//!
//! - **K1** Handing an entry to the kernel is the moment the kernel may
//!   start borrowing the memory it names, so [`Ring::push`] is `unsafe`: its
//!   caller promises that every buffer, address and length pointer in the
//!   entry stays valid and unmoved until the completion carrying its
//!   `user_data` was reaped, unless the entry is withdrawn before any
//!   `io_uring_enter` (the `keep` filter of [`Ring::enter`] refuses it), in
//!   which case the kernel never sees it. The ops module keeps that promise
//!   with its invariant O1 and names the owner of each buffer at each call
//!   site.
//! - **K2** Nothing is lost or refused for lack of room: entries wait in
//!   `staged` and move into the submission queue, in FIFO order, only inside
//!   [`Ring::enter`], as many as fit, as often as it takes. So submission
//!   order is push order (a cancel is never submitted before its target),
//!   and until an `enter` an entry can still be withdrawn.
//! - **K3** [`Ring::push`] never makes a system call; [`Ring::enter`] makes
//!   one `io_uring_enter` per call that submits everything staged and waits
//!   in the same call. It makes more only while the staged entries do not
//!   fit in the submission queue (one extra submit per full queue), and
//!   none for a non-blocking call with nothing to submit and nothing held
//!   back by the kernel.
//! - **K4** Completions are never dropped: `create` requires
//!   `IORING_FEAT_NODROP`, so a full completion queue parks completions in
//!   the kernel, which hands them over at the next `io_uring_enter` that
//!   asks for events (every [`Ring::enter`] that waits, or that finds the
//!   `IORING_SQ_CQ_OVERFLOW` flag set).
//! - **K5** Deferred task running (`IORING_SETUP_DEFER_TASKRUN`, when the
//!   probe kept it) posts completions only inside an `io_uring_enter` that
//!   asks for events. The ring is then made with
//!   `IORING_SETUP_TASKRUN_FLAG`, so the kernel raises `IORING_SQ_TASKRUN`
//!   while such work waits, and a non-blocking [`Ring::enter`] enters (with
//!   `GETEVENTS`) whenever the flag is up: `run_once(0)` reaps what
//!   finished, as without the flag; and every non-blocking enter asks for
//!   events too, so what a submission causes at once (a cancel ending a
//!   request) is posted in that same call, in the order it would be
//!   without the flag. Only the loop thread enters the ring
//!   (every shim checks the thread), as `IORING_SETUP_SINGLE_ISSUER` and
//!   deferred task running require.
//!
//! # Access
//!
//! Loop thread only, through the reactor's `RefCell`; the borrow is never
//! held across a host callback.
//!
//! # Safety
//!
//! The unsafe code here is the call that hands an entry to the kernel
//! (`SubmissionQueue::push`), under K1.
//!
//! # Drop order
//!
//! Dropping the ring unmaps the queues and closes the ring's descriptor.
//! The reactor drops it only when no operation that names memory is in
//! flight (`destroy` answers `AA_E_BUSY` until then and drains its own
//! eventfd read first).

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use io_uring::types::{SubmitArgs, Timespec};
use io_uring::{cqueue, squeue, IoUring, Probe};

/// One completion, copied out of the completion queue so no borrow of the
/// ring outlives reaping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cqe {
    /// The `user_data` of the entry it completes.
    pub(crate) user_data: u64,
    /// Its result: a count, a descriptor, poll bits, or `-errno`.
    pub(crate) result: i32,
    /// `IORING_CQE_F_*` bits.
    pub(crate) flags: u32,
}

impl Cqe {
    /// Whether more completions will follow for the same entry (a
    /// multishot operation that is still armed).
    pub(crate) fn more(&self) -> bool {
        cqueue::more(self.flags)
    }
}

/// How [`Ring::enter`] waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Do not wait: submit what is queued, if anything.
    Poll,
    /// Wait for at least one completion.
    Forever,
    /// Wait for at least one completion or this long, whichever is first.
    For(Duration),
}

/// The ring (see the module doc).
pub(crate) struct Ring {
    uring: IoUring,
    staged: VecDeque<squeue::Entry>,
    dropped: u32,
    /// The ring defers task running (K5): a non-blocking enter asks for
    /// events too.
    defer_taskrun: bool,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("sq_entries", &self.uring.params().sq_entries())
            .field("cq_entries", &self.uring.params().cq_entries())
            .field("staged", &self.staged.len())
            .finish()
    }
}

impl Ring {
    /// Wraps a ring made by `probe`.
    pub(crate) fn new(uring: IoUring) -> Ring {
        Ring {
            uring,
            staged: VecDeque::new(),
            dropped: 0,
            defer_taskrun: false,
        }
    }

    /// Records that the ring was made with `IORING_SETUP_DEFER_TASKRUN`
    /// (K5).
    pub(crate) fn set_defer_taskrun(&mut self, on: bool) {
        self.defer_taskrun = on;
    }

    /// The kernel's parameters of this ring.
    pub(crate) fn params(&self) -> &io_uring::Parameters {
        self.uring.params()
    }

    /// Asks the kernel which opcodes it supports.
    pub(crate) fn register_probe(&self, probe: &mut Probe) -> io::Result<()> {
        self.uring.submitter().register_probe(probe)
    }

    /// Stages one entry for the next [`Ring::enter`]; never a system call
    /// (K3), never refused (K2).
    ///
    /// # Safety
    ///
    /// K1: every pointer in `entry` (buffers, addresses, lengths, counters)
    /// must stay valid and unmoved until the completion carrying its
    /// `user_data` has been reaped by [`Ring::reap`], unless `enter`'s
    /// `keep` filter withdraws the entry.
    pub(crate) unsafe fn push(&mut self, entry: squeue::Entry) {
        self.staged.push_back(entry);
    }

    /// Moves staged entries into the submission queue while they fit (K2),
    /// dropping those `keep` withdraws; returns whether none is left.
    fn flush(&mut self, keep: &mut dyn FnMut(u64) -> bool) -> bool {
        let mut sq = self.uring.submission();
        while let Some(entry) = self.staged.front() {
            // Room first: `keep` records the hand-over, which must happen.
            if sq.is_full() {
                return false;
            }
            if keep(entry.get_user_data()) {
                // SAFETY: K1 is the promise of the `push` that staged this
                // entry, and `keep` did not withdraw it; the queue has room,
                // so the push succeeds.
                let pushed = unsafe { sq.push(entry) };
                debug_assert!(pushed.is_ok());
            }
            self.staged.pop_front();
        }
        true
    }

    /// Submits everything staged (each entry `keep` accepts; the others are
    /// withdrawn, K1) and waits as asked, in one `io_uring_enter` (K3).
    /// Interruptions, timeouts and a kernel that is momentarily out of room
    /// are not errors: the caller reaps what there is and comes back.
    pub(crate) fn enter(
        &mut self,
        wait: Wait,
        keep: &mut dyn FnMut(u64) -> bool,
    ) -> io::Result<()> {
        // K2: a submission queue too small for the backlog is submitted
        // (without waiting) as often as it takes to empty the backlog.
        while !self.flush(keep) {
            match self.uring.submit() {
                Ok(_) => {}
                Err(e) if transient(&e) => break,
                Err(e) => return Err(e),
            }
        }
        let res = match wait {
            Wait::Poll => {
                let mut sq = self.uring.submission();
                sq.sync();
                // K5: `taskrun` is deferred work the kernel posts only
                // when asked (`submit` then adds GETEVENTS).
                let needed = !sq.is_empty() || sq.cq_overflow() || sq.taskrun();
                drop(sq);
                if !needed {
                    return Ok(());
                }
                if self.defer_taskrun {
                    // K5: the work this very submission causes (a cancel
                    // that ends a request, a request that completes at
                    // once) is posted in the same call, as without the
                    // flag, so completions keep their order.
                    let len = self.uring.submission().len() as u32;
                    // SAFETY: no argument pointer; `len` is the number of
                    // entries in the submission queue, all handed over
                    // under K1.
                    unsafe {
                        self.uring.submitter().enter::<libc::sigset_t>(
                            len, 0, 1, // IORING_ENTER_GETEVENTS
                            None,
                        )
                    }
                } else {
                    self.uring.submit()
                }
            }
            Wait::Forever => self.uring.submit_and_wait(1),
            Wait::For(timeout) => {
                let ts = Timespec::from(timeout);
                let args = SubmitArgs::new().timespec(&ts);
                self.uring.submitter().submit_with_args(1, &args)
            }
        };
        match res {
            Ok(_) => Ok(()),
            Err(e) if transient(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Copies every completion now in the completion queue into `out`.
    /// Returns how many completions the kernel dropped since the last call
    /// (always 0 with `IORING_FEAT_NODROP`, K4; counted for the log).
    pub(crate) fn reap(&mut self, out: &mut Vec<Cqe>) -> u32 {
        let mut cq = self.uring.completion();
        cq.sync();
        out.extend(cq.by_ref().map(|e| Cqe {
            user_data: e.user_data(),
            result: e.result(),
            flags: e.flags(),
        }));
        let dropped = cq.overflow();
        drop(cq);
        let new = dropped.wrapping_sub(self.dropped);
        self.dropped = dropped;
        new
    }

    /// Registers a provided-buffer ring of `entries` entries at `addr` as
    /// buffer group `bgid` (Linux 5.19).
    ///
    /// # Safety
    ///
    /// `addr` must be page-aligned memory of `entries` `io_uring_buf`
    /// entries that stays valid until [`Ring::unregister_buf_ring`] or the
    /// ring's drop, and every buffer an entry names must stay valid while
    /// the kernel may write it (until the completion that reports it, or
    /// the unregistration).
    pub(crate) unsafe fn register_buf_ring(
        &self,
        addr: u64,
        entries: u16,
        bgid: u16,
    ) -> io::Result<()> {
        // SAFETY: the caller's promise, as `register_buf_ring_with_flags`
        // asks.
        unsafe {
            self.uring
                .submitter()
                .register_buf_ring_with_flags(addr, entries, bgid, 0)
        }
    }

    /// Unregisters buffer group `bgid`: the kernel no longer takes buffers
    /// from it.
    pub(crate) fn unregister_buf_ring(&self, bgid: u16) -> io::Result<()> {
        self.uring.submitter().unregister_buf_ring(bgid)
    }

    /// The capacity of the completion queue.
    pub(crate) fn cq_capacity(&self) -> usize {
        self.uring.params().cq_entries() as usize
    }
}

/// Errors of `io_uring_enter` that only mean "come back later": a signal
/// (`EINTR`), the wait's timeout (`ETIME`), or a kernel momentarily out of
/// room for completions or requests (`EBUSY`, `EAGAIN`).
fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::ETIME) | Some(libc::EBUSY) | Some(libc::EAGAIN)
    )
}
