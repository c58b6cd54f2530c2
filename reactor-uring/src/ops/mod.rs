//! Ring operations: the op table, each operation's typed lifecycle, and the
//! dispatch of completions.
//!
//! # What this module owns
//!
//! [`OpTable`]: one [`Op`] per submission the kernel may still answer,
//! keyed by [`OpKey`] (slot index and generation, which is also the entry's
//! `user_data`). An op holds the event it completes (a strong `Rc`), the
//! memory it lends the kernel ([`OwnedBuf`], boxed), the entry itself (for
//! re-arming and retries) and its [`Life`].
//!
//! # Invariants
//!
//! - **O1** An op stays in the table from the moment its entry is built
//!   until its *final* completion (one without `IORING_CQE_F_MORE`) has been
//!   reaped, whatever happens to its event meanwhile (cancel, close,
//!   dispose) — or, if the kernel never saw it (held or staged), until it
//!   is withdrawn. The table holds the event's `Rc` and the op's boxed
//!   buffers, so every pointer the kernel was given stays valid while the
//!   kernel may use it: the kernel never writes into freed memory (P-21).
//!   Host buffers named by a request stay valid by AA-R5, since the
//!   request's callback runs only after that final completion.
//! - **O2** An entry's `user_data` is its op's key, unique among live ops
//!   (a reused slot has a new generation). Entries nobody answers (cancels)
//!   carry [`IGNORED`], which no key equals.
//! - **O3** An op has at most one entry staged, in the ring or in the kernel
//!   at a time: it is pushed again (a re-armed watch, a re-armed eventfd
//!   read, a retry after `EAGAIN` or `ENOTSOCK`) only from its own final
//!   completion, and only while its life is [`Life::Submitted`].
//! - **O4** A [`Life::Held`] op has no entry anywhere: it waits for its turn
//!   in its descriptor's lane (registry invariant G4), or, for a descriptor
//!   close, for every other op on the descriptor to retire (G3), so no
//!   request can reach a closed or reused descriptor number; or it is an
//!   accept parked on its listener's multishot accept (G5, accept.rs) or a
//!   read parked on its socket's multishot receive (G6, recv.rs), which
//!   completes it without an entry of its own.
//! - **O5** Only a [`Life::Staged`] op's entry is handed over by the next
//!   `io_uring_enter` (its life then becomes `Submitted`); a staged entry
//!   whose op was cancelled, or retired, is withdrawn unsubmitted (ring
//!   invariant K1). So a request cancelled or disposed before the kernel
//!   saw it never reaches the kernel.
//! - **O6** A cancelled op is never retried or re-armed: `CancelRequested`
//!   is terminal until the final completion retires it.
//!
//! # Access
//!
//! Loop thread only. The table's `RefCell` is borrowed for lookups and
//! updates, never across a host callback or a push into the ring.
//!
//! # Safety
//!
//! `push_entry` is where an op's entry is staged for the kernel; its SAFETY
//! argument is O1 (with O5 for entries withdrawn unsubmitted). The request-specific unsafe code (host memory written on
//! an accept's completion) is in `io.rs`; plain system calls are in
//! `sys.rs`.
//!
//! # Drop order
//!
//! Ops leave the table only through [`Reactor::retire`] (a final
//! completion, or an op cancelled before the kernel saw it).
//! `destroy` refuses while an op owned by an event is in the table.

pub(crate) mod accept;
pub(crate) mod cancel;
pub(crate) mod dgram;
pub(crate) mod eventfd;
pub(crate) mod file;
pub(crate) mod inotify;
pub(crate) mod io;
pub(crate) mod pidfd;
pub(crate) mod poll;
pub(crate) mod recv;
pub(crate) mod sys;

pub(crate) use crate::registry::Lane;
pub(crate) use io::{HostAddr, Request};

use std::cell::Cell;
use std::os::fd::RawFd;
use std::rc::Rc;

use async_abi::AaSockAddr;
use io_uring::squeue;

use crate::event::Event;
use crate::reactor::Reactor;
use crate::ring::Cqe;

/// The `user_data` of entries whose completion nobody reads (O2).
pub(crate) const IGNORED: u64 = u64::MAX;

/// Names an op: slot index in the low 32 bits, generation above (O2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct OpKey(u64);

impl OpKey {
    /// A key for the registry's unit tests, which never look it up.
    #[cfg(test)]
    pub(crate) fn for_test(index: u32) -> OpKey {
        OpKey::new(index, 0)
    }

    fn new(index: u32, generation: u32) -> OpKey {
        OpKey(u64::from(generation) << 32 | u64::from(index))
    }

    fn index(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }

    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The `user_data` of the op's entries.
    pub(crate) fn user_data(self) -> u64 {
        self.0
    }

    /// The key a completion names, unless it is [`IGNORED`].
    pub(crate) fn from_user_data(user_data: u64) -> Option<OpKey> {
        (user_data != IGNORED).then_some(OpKey(user_data))
    }
}

/// What an op is for.
#[derive(Debug)]
pub(crate) enum OpKind {
    /// An `AA_IO_*` request of its owner.
    Request(Request),
    /// The `POLL_ADD` of its owner's watch.
    Poll {
        /// The `poll(2)` mask asked for.
        mask: u32,
    },
    /// The eventfd read of its owner, a trigger.
    TriggerRead,
    /// The reactor's own wake eventfd read (no owner; hidden).
    WakeRead,
    /// The close of a descriptor its owner, a poll, owned
    /// (`AA_EVF_OWNS_FD`).
    OwnedFdClose,
    /// The one-shot `POLL_ADD` on the pidfd of its owner, a process watch.
    ProcessWait,
    /// The reactor's inotify read (no owner; ops/inotify.rs).
    InotifyRead,
    /// A listener's multishot accept (no owner; ops/accept.rs).
    AcceptMulti,
    /// A stream socket's multishot receive (no owner; ops/recv.rs).
    RecvMulti,
}

/// The memory an op lends the kernel, boxed so it never moves (O1).
#[derive(Debug)]
pub(crate) enum OwnedBuf {
    /// Nothing.
    None,
    /// Accept: the peer address length the kernel reads and writes.
    AddrLen(Box<libc::socklen_t>),
    /// Connect: the reactor's copy of the address the kernel reads.
    Addr(Box<AaSockAddr>),
    /// Eventfd read: the 8-byte counter the kernel writes.
    Counter(Box<u64>),
    /// inotify read: the bytes the kernel writes (cells, so the loop may
    /// read what the kernel wrote through the pointer it was given).
    Bytes(Box<[Cell<u8>]>),
    /// Recvfrom, sendto: the message header and its `iovec` (dgram.rs).
    Msg(Box<dgram::MsgBuf>),
    /// Statx: the kernel's `struct statx` (file.rs).
    Statx(file::StatxBuf),
}

/// Where an op is in its life (STYLE S5). "Completed" is not a state: the
/// final completion takes the op out of the table (O1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Life {
    /// Waiting in user space for its turn (O4): behind another request in
    /// its descriptor's lane, or, for a descriptor close, for the
    /// descriptor's other ops. No entry anywhere.
    Held,
    /// Its entry is staged for the next `io_uring_enter` (O5): the kernel
    /// has not seen it and can still be spared it.
    Staged,
    /// Handed to the kernel, which owns its memory until the final
    /// completion. May be re-armed or retried (O3).
    Submitted,
    /// Handed to the kernel, then cancelled: an async cancel follows it.
    /// Still owned by the kernel until its final completion; never pushed
    /// again (O6).
    CancelRequested,
}

/// What the caller of [`Life::request_cancel`] must do next.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelStep {
    /// Push an async cancel naming the op: the kernel owns it.
    PushCancel,
    /// A cancel was already asked for; nothing to do.
    AlreadyRequested,
    /// The kernel never saw the op: retire it now, in user space (a staged
    /// entry is then withdrawn, O5).
    RetireNow,
}

impl Life {
    /// Records a cancellation; returns what the caller must do.
    pub(crate) fn request_cancel(&mut self) -> CancelStep {
        match *self {
            Life::Held | Life::Staged => CancelStep::RetireNow,
            Life::Submitted => {
                *self = Life::CancelRequested;
                CancelStep::PushCancel
            }
            Life::CancelRequested => CancelStep::AlreadyRequested,
        }
    }
}

/// When a new op's entry is staged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hold {
    /// At once.
    No,
    /// When its turn comes in its descriptor's lane (G4).
    Lane(Lane),
    /// When the descriptor has no other op (a descriptor close, G3).
    UntilQuiet,
    /// Never: an accept parked on its listener's multishot accept, which
    /// completes it in user space (ops/accept.rs) or hands it back to be
    /// staged as a plain accept.
    Parked,
}

/// One operation (see the module doc).
#[derive(Debug)]
pub(crate) struct Op {
    /// Where it is in its life.
    pub(crate) life: Life,
    /// The event it completes, kept alive until the final completion (O1);
    /// `None` for the reactor's own wake read.
    pub(crate) owner: Option<Rc<Event>>,
    /// What it is for.
    pub(crate) kind: OpKind,
    /// The host descriptor it acts on, if it counts in that descriptor's
    /// registry entry (requests, watches).
    pub(crate) fd: Option<RawFd>,
    /// The memory it lends the kernel.
    pub(crate) buf: OwnedBuf,
    /// Its entry, with its key as `user_data`, for re-arming and retries.
    pub(crate) entry: squeue::Entry,
    /// After an `EAGAIN`, the ring holds a one-shot poll carrying this op's
    /// key instead of `entry`; its completion pushes `entry` again.
    pub(crate) awaiting_readiness: bool,
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    op: Option<Op>,
}

/// The ops the kernel may still answer (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct OpTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
    owned: usize,
}

impl OpTable {
    /// The key the next [`OpTable::put`] will use.
    fn next_key(&mut self) -> OpKey {
        let index = match self.free.last() {
            Some(&index) => index,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    op: None,
                });
                let index = self.slots.len() - 1;
                u32::try_from(index)
                    .ok()
                    .filter(|&i| i != u32::MAX)
                    .expect("fewer than 2^32 - 1 operations in flight")
            }
        };
        OpKey::new(index, self.slots[index as usize].generation)
    }

    /// Stores `op` under `key`, which [`OpTable::next_key`] just gave.
    fn put(&mut self, key: OpKey, op: Op) {
        if self.free.last() == Some(&(key.index() as u32)) {
            self.free.pop();
        }
        if op.owner.is_some() {
            self.owned += 1;
        }
        let slot = &mut self.slots[key.index()];
        debug_assert!(slot.op.is_none() && slot.generation == key.generation());
        slot.op = Some(op);
    }

    /// The live op named by `key`.
    pub(crate) fn get(&self, key: OpKey) -> Option<&Op> {
        let slot = self.slots.get(key.index())?;
        (slot.generation == key.generation())
            .then_some(slot.op.as_ref())
            .flatten()
    }

    /// The live op named by `key`, mutably.
    pub(crate) fn get_mut(&mut self, key: OpKey) -> Option<&mut Op> {
        let slot = self.slots.get_mut(key.index())?;
        (slot.generation == key.generation())
            .then_some(slot.op.as_mut())
            .flatten()
    }

    /// Takes the op out; its slot gets a new generation (O2).
    fn remove(&mut self, key: OpKey) -> Option<Op> {
        let slot = self.slots.get_mut(key.index())?;
        if slot.generation != key.generation() {
            return None;
        }
        let op = slot.op.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(key.index() as u32);
        if op.owner.is_some() {
            self.owned -= 1;
        }
        Some(op)
    }

    /// Number of ops that hold an event: `destroy` refuses while it is not
    /// zero.
    pub(crate) fn owned(&self) -> usize {
        self.owned
    }
}

/// What a new op is.
#[derive(Debug)]
pub(crate) struct NewOp {
    /// The event it completes.
    pub(crate) owner: Option<Rc<Event>>,
    /// What it is for.
    pub(crate) kind: OpKind,
    /// The host descriptor it counts against, if any.
    pub(crate) fd: Option<RawFd>,
    /// The memory it lends the kernel.
    pub(crate) buf: OwnedBuf,
    /// When its entry is staged.
    pub(crate) hold: Hold,
}

impl Reactor {
    /// Makes an op, builds its entry with `build` (from the op's own boxed
    /// buffers, which never move) and stages it, unless it is held (O4).
    pub(crate) fn start_op(
        &self,
        new: NewOp,
        build: impl FnOnce(&OpKind, &OwnedBuf) -> squeue::Entry,
    ) -> OpKey {
        let NewOp {
            owner,
            kind,
            fd,
            buf,
            hold,
        } = new;
        let key = {
            let mut ops = self.ops.borrow_mut();
            let key = ops.next_key();
            let entry = build(&kind, &buf).user_data(key.user_data());
            if let Some(ev) = &owner {
                ev.in_flight.set(ev.in_flight.get() + 1);
            }
            ops.put(
                key,
                Op {
                    life: Life::Held,
                    owner,
                    kind,
                    fd,
                    buf,
                    entry,
                    awaiting_readiness: false,
                },
            );
            key
        };
        let now = match (fd, hold) {
            (Some(fd), Hold::Lane(lane)) => self.registry.borrow_mut().add_op(fd, key, Some(lane)),
            (Some(fd), _) => self.registry.borrow_mut().add_op(fd, key, None),
            (None, _) => true,
        };
        if now && matches!(hold, Hold::No | Hold::Lane(_)) {
            self.repush(key);
        }
        key
    }

    /// Stages an entry for the next `io_uring_enter`.
    fn push_entry(&self, entry: squeue::Entry) {
        // SAFETY: K1 holds by O1: the entry names only the op's boxed
        // buffers, which stay in the op table until the final completion
        // carrying this key is reaped (or until the entry is withdrawn
        // unsubmitted, O5), and host memory that the host keeps valid until
        // the request's callback (AA-R5), which runs only after that
        // completion.
        unsafe { self.ring.borrow_mut().push(entry) };
    }

    /// Stages an op's stored entry: for the first time (a held op whose turn
    /// came, O4), or again (O3). Its life becomes `Staged`.
    pub(crate) fn repush(&self, key: OpKey) {
        let entry = {
            let mut ops = self.ops.borrow_mut();
            let Some(op) = ops.get_mut(key) else { return };
            if op.life == Life::CancelRequested {
                return; // O6
            }
            op.life = Life::Staged;
            op.awaiting_readiness = false;
            op.entry.clone()
        };
        self.push_entry(entry);
    }

    /// Replaces an op's stored entry (a retry as another opcode, a watch
    /// that falls back to one-shot) and stages it (O3).
    pub(crate) fn replace_entry(&self, key: OpKey, entry: squeue::Entry) {
        if let Some(op) = self.ops.borrow_mut().get_mut(key) {
            op.entry = entry.user_data(key.user_data());
        }
        self.repush(key);
    }

    /// The `keep` filter of `Ring::enter` (O5): an op's entry is handed to
    /// the kernel only if the op is still staged, and the op is then
    /// `Submitted`; cancels always go.
    pub(crate) fn hand_over(&self, user_data: u64) -> bool {
        let Some(key) = OpKey::from_user_data(user_data) else {
            return true;
        };
        match self.ops.borrow_mut().get_mut(key) {
            Some(op) if op.life == Life::Staged => {
                op.life = Life::Submitted;
                true
            }
            _ => false,
        }
    }

    /// Takes an op out of the table (its final completion was reaped, or the
    /// kernel never saw it). Stages what its descriptor was holding back:
    /// the next request in its lane (G4), or the descriptor's close if it
    /// was the last op (G3, O4).
    pub(crate) fn retire(&self, key: OpKey) -> Option<Op> {
        let op = self.ops.borrow_mut().remove(key)?;
        if let Some(ev) = &op.owner {
            ev.in_flight.set(ev.in_flight.get() - 1);
        }
        if let Some(fd) = op.fd {
            let (next, closer) = self.registry.borrow_mut().remove_op(fd, key);
            for key in [next, closer].into_iter().flatten() {
                self.repush(key);
            }
        }
        Some(op)
    }

    /// Cancels an op: pushes an async cancel for it, or retires it if the
    /// kernel never saw it. Returns the op if it was retired here: the
    /// caller completes it in user space.
    pub(crate) fn cancel_op(&self, key: OpKey) -> Option<Op> {
        let step = self.ops.borrow_mut().get_mut(key)?.life.request_cancel();
        match step {
            CancelStep::PushCancel => {
                self.push_cancel(key);
                None
            }
            CancelStep::AlreadyRequested => None,
            CancelStep::RetireNow => self.retire(key),
        }
    }

    /// Handles one completion; returns the number of host callbacks run.
    pub(crate) fn complete(&self, cqe: Cqe) -> i32 {
        let Some(key) = OpKey::from_user_data(cqe.user_data) else {
            return 0;
        };
        let tag = match self.ops.borrow().get(key) {
            Some(op) => match op.kind {
                OpKind::Request(_) => 0,
                OpKind::Poll { .. } => 1,
                OpKind::TriggerRead => 2,
                OpKind::WakeRead => 3,
                OpKind::OwnedFdClose => 4,
                OpKind::ProcessWait => 5,
                OpKind::InotifyRead => 6,
                OpKind::AcceptMulti => 7,
                OpKind::RecvMulti => 8,
            },
            // Nothing else can complete: only submitted ops reach the
            // kernel (O5), and they stay until their final completion (O1).
            None => return 0,
        };
        match tag {
            0 => self.complete_request(key, cqe),
            1 => self.complete_poll(key, cqe),
            2 => self.complete_trigger_read(key, cqe),
            3 => self.complete_wake_read(key, cqe),
            4 => self.complete_owned_close(key, cqe),
            5 => self.complete_process_wait(key, cqe),
            7 => self.complete_accept_multi(key, cqe),
            8 => self.complete_recv_multi(key, cqe),
            _ => self.complete_inotify_read(key, cqe),
        }
    }

    /// The `EAGAIN` fallback shared by requests and eventfd reads: a file
    /// that refuses to wait inside the kernel (old kernels, `O_NONBLOCK`
    /// files without `FMODE_NOWAIT`) answers `EAGAIN`; the op then waits
    /// for readiness with a one-shot poll carrying its key, and its entry is
    /// staged again when that poll completes (O3). Returns whether the
    /// completion was consumed this way.
    pub(crate) fn retry_when_ready(&self, key: OpKey, cqe: Cqe, fd: RawFd, mask: u32) -> bool {
        let ready = {
            let mut ops = self.ops.borrow_mut();
            let Some(op) = ops.get_mut(key) else {
                return false;
            };
            if op.life != Life::Submitted {
                return false; // O6
            }
            if op.awaiting_readiness {
                if cqe.result < 0 {
                    // The wait itself failed: that is the op's result.
                    op.awaiting_readiness = false;
                    return false;
                }
                true
            } else if cqe.result == -libc::EAGAIN {
                // The wait is the op's one entry now (O3), staged (O5).
                op.awaiting_readiness = true;
                op.life = Life::Staged;
                false
            } else {
                return false;
            }
        };
        if ready {
            self.repush(key);
        } else {
            self.push_readiness_wait(key, fd, mask);
        }
        true
    }

    /// Closes a descriptor through the ring once every op on it has retired
    /// (O4): ends those ops (the kernel's with one cancel by descriptor,
    /// `IORING_ASYNC_CANCEL_FD`, where the kernel has it, else one cancel
    /// each; the ones it never saw at once, with `-ECANCELED` from the next
    /// `run_once`), ends the watches on it (an armed one is told
    /// `-ECANCELED`, from the next `run_once`), and holds the close until the
    /// descriptor is quiet. Returns the close's key.
    pub(crate) fn close_fd(&self, fd: RawFd, owner: Rc<Event>, kind: OpKind) -> OpKey {
        let key = self.start_op(
            NewOp {
                owner: Some(owner),
                kind,
                fd: None,
                buf: OwnedBuf::None,
                hold: Hold::UntilQuiet,
            },
            |_, _| io::close_entry(fd),
        );
        // G3: from now on the descriptor accepts no op and its lanes stop;
        // G5: connections a listener accepted ahead are closed.
        for conn in self.registry.borrow_mut().take_ready(fd) {
            sys::close_orphan(conn);
        }
        let ops_on_fd = self.registry.borrow_mut().start_closing(fd);
        let mut in_kernel = false;
        for op_key in ops_on_fd {
            let (step, watch) = {
                let mut ops = self.ops.borrow_mut();
                let Some(op) = ops.get_mut(op_key) else {
                    continue;
                };
                let watch = match (&op.kind, &op.owner) {
                    (OpKind::Poll { .. }, Some(ev)) => Some(Rc::clone(ev)),
                    _ => None,
                };
                (op.life.request_cancel(), watch)
            };
            if let Some(ev) = &watch {
                self.end_watch_of_closed_fd(ev, op_key);
            }
            match step {
                CancelStep::PushCancel => {
                    in_kernel = true;
                    if !self.features.cancel_fd {
                        self.push_cancel(op_key);
                    }
                }
                CancelStep::AlreadyRequested => in_kernel = true,
                CancelStep::RetireNow => {
                    if let Some(op) = self.retire(op_key) {
                        self.end_unsubmitted(op, -libc::ECANCELED);
                    }
                }
            }
        }
        if in_kernel && self.features.cancel_fd {
            self.push_cancel_fd(fd);
        }
        if self.registry.borrow_mut().hold_closer(fd, key) {
            self.repush(key);
        }
        key
    }

    /// Completes, in user space, an op the kernel never saw (retired by a
    /// cancel, O5): a request's callback gets `value` from the next
    /// `run_once` (R2); other kinds have nothing to report here.
    pub(crate) fn end_unsubmitted(&self, op: Op, value: i32) {
        let Some(ev) = op.owner else { return };
        if let OpKind::Request(_) = &op.kind {
            if let crate::event::State::Io(io) = &mut *ev.state.borrow_mut() {
                io.op = None;
            }
            self.defer(crate::reactor::Deferred::Notify {
                ev: Rc::clone(&ev),
                status: 0,
                value: i64::from(value),
            });
        }
        self.touch(&ev);
        self.settle_close(&ev);
    }
}
