//! Process watches in the ring: a one-shot `POLL_ADD` on the child's pidfd,
//! which the kernel completes once the child has exited; the loop then
//! reaps it (`waitid(P_PIDFD)`, a plain system call) and calls back once.
//!
//! Completions of an op that is no longer the watch's current one (the
//! watch was cancelled, closed or disposed) are stale: they retire the op
//! and let a pending `close` finish.
//!
//! # Safety
//!
//! No unsafe code: a `POLL_ADD` names no memory, and it is pushed through
//! the ops module's `push_entry` (ops invariant O1). The kernel holds its
//! own reference to the pidfd's file once the entry is submitted, so the
//! watch may close its descriptor as soon as it stops (a staged entry is
//! withdrawn unsubmitted, O5).

use std::os::fd::RawFd;
use std::rc::Rc;

use io_uring::{opcode, squeue, types};

use crate::event::{Event, State};
use crate::ops::{Hold, Life, NewOp, OpKey, OpKind, OwnedBuf};
use crate::reactor::Reactor;
use crate::ring::Cqe;

/// A one-shot `POLL_ADD` for readability of `pidfd`.
fn wait_entry(pidfd: RawFd) -> squeue::Entry {
    opcode::PollAdd::new(types::Fd(pidfd), libc::POLLIN as u32).build()
}

impl Reactor {
    /// Starts the kernel wait of a process watch on `pidfd` and records it
    /// as the event's current op.
    pub(crate) fn arm_process(&self, ev: &Rc<Event>, pidfd: RawFd) {
        let key = self.start_op(
            NewOp {
                owner: Some(Rc::clone(ev)),
                kind: OpKind::ProcessWait,
                fd: None,
                buf: OwnedBuf::None,
                hold: Hold::No,
            },
            |_, _| wait_entry(pidfd),
        );
        if let State::Process(p) = &mut *ev.state.borrow_mut() {
            p.op = Some(key);
        }
    }

    /// A pidfd's wait completed. Returns the number of host callbacks run.
    pub(super) fn complete_process_wait(&self, key: OpKey, cqe: Cqe) -> i32 {
        let (ev, life) = match self.ops.borrow().get(key) {
            Some(op) => match &op.owner {
                Some(ev) => (Rc::clone(ev), op.life),
                None => return 0,
            },
            None => return 0,
        };
        let current = matches!(&*ev.state.borrow(),
            State::Process(p) if p.op == Some(key) && p.pidfd.is_some());
        if !current || life != Life::Submitted {
            self.retire(key);
            self.settle_close(&ev);
            return 0;
        }
        let outcome = if cqe.result < 0 {
            Err(cqe.result)
        } else {
            let reaped = match &*ev.state.borrow() {
                State::Process(p) => p
                    .pidfd
                    .as_ref()
                    .map(|fd| reactor_sdk::process::wait_exit(fd, true)),
                _ => None,
            };
            match reaped {
                Some(Ok(Some(exit))) => Ok(exit),
                Some(Ok(None)) | None => {
                    // Not exited after all: keep waiting with the same op.
                    self.repush(key);
                    return 0;
                }
                Some(Err(e)) => Err(crate::error::neg_errno(&e)),
            }
        };
        self.retire(key);
        if let State::Process(p) = &mut *ev.state.borrow_mut() {
            p.op = None;
            p.pidfd = None;
        }
        self.touch(&ev);
        let mut count = 0;
        if ev.deliverable() {
            match outcome {
                Ok(exit) => ev.callback.notify_exit(&*ev, &exit),
                Err(status) => ev.callback.notify(&*ev, status, 0),
            }
            count = 1;
        }
        self.settle_close(&ev);
        count
    }
}
