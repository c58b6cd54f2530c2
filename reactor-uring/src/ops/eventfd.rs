//! Eventfd reads: the cross-thread doorbells. Each trigger has its own
//! eventfd, read by one `READ` into an 8-byte counter the op owns; the
//! reactor's waker is one more, hidden. A read completes when another
//! thread writes the eventfd; the loop then re-arms the read with the same
//! op (ops invariant O3) and, for a trigger, runs its callback.
//!
//! # Safety
//!
//! A read entry names the op's own boxed counter (`OwnedBuf::Counter`),
//! which stays in the op table until the read's final completion (O1).

use std::os::fd::RawFd;
use std::rc::Rc;

use io_uring::{opcode, squeue, types};

use crate::event::{Event, State};
use crate::ops::{Hold, NewOp, OpKey, OpKind, OwnedBuf};
use crate::reactor::Reactor;
use crate::ring::Cqe;

/// An 8-byte read of `fd` into the op's counter; with `nowait`, one that
/// may not wait inside the kernel (`Config::old_kernel`).
fn read_entry(fd: RawFd, buf: &OwnedBuf, nowait: bool) -> squeue::Entry {
    let counter = match buf {
        OwnedBuf::Counter(counter) => &**counter as *const u64 as *mut u8,
        _ => std::ptr::null_mut(),
    };
    let rw_flags = if nowait { libc::RWF_NOWAIT } else { 0 };
    opcode::Read::new(types::Fd(fd), counter, 8)
        .rw_flags(rw_flags)
        .build()
}

impl Reactor {
    /// Starts the eventfd read of a trigger (`Some(ev)`) or of the reactor's
    /// waker (`None`).
    pub(crate) fn arm_eventfd(&self, owner: Option<&Rc<Event>>, fd: RawFd) -> OpKey {
        let kind = if owner.is_some() {
            OpKind::TriggerRead
        } else {
            OpKind::WakeRead
        };
        self.start_op(
            NewOp {
                owner: owner.cloned(),
                kind,
                fd: None,
                buf: OwnedBuf::Counter(Box::new(0)),
                hold: Hold::No,
            },
            |_, buf| read_entry(fd, buf, self.nowait),
        )
    }

    /// The descriptor an eventfd read op reads.
    fn eventfd_of(&self, key: OpKey) -> Option<RawFd> {
        let ops = self.ops.borrow();
        let op = ops.get(key)?;
        match (&op.kind, &op.owner) {
            (OpKind::TriggerRead, Some(ev)) => ev.trigger.as_ref().map(|t| t.fd()),
            (OpKind::WakeRead, None) => Some(self.waker.fd()),
            _ => None,
        }
    }

    /// A trigger's read completed. Returns the number of host callbacks run.
    pub(super) fn complete_trigger_read(&self, key: OpKey, cqe: Cqe) -> i32 {
        let Some(fd) = self.eventfd_of(key) else {
            return 0;
        };
        if self.retry_when_ready(key, cqe, fd, libc::POLLIN as u32) {
            return 0;
        }
        let (ev, life) = match self.ops.borrow().get(key) {
            Some(op) => match &op.owner {
                Some(ev) => (Rc::clone(ev), op.life),
                None => return 0,
            },
            None => return 0,
        };
        let open = matches!(&*ev.state.borrow(),
            State::Trigger(t) if t.open && t.op == Some(key));
        if open && life == super::Life::Submitted && cqe.result >= 0 {
            // Trigger invariant T1: clear the flag before the callback, so a
            // fire during it is seen by the next read.
            if let Some(shared) = &ev.trigger {
                shared.take_fired();
            }
            self.repush(key);
            if ev.deliverable() {
                ev.callback.notify(&*ev, 0, 0);
                return 1;
            }
            return 0;
        }
        // Final: cancelled (cancel, close, dispose), or a failed read, which
        // ends the trigger and is reported once.
        self.retire(key);
        let failed = open && cqe.result < 0;
        if let State::Trigger(t) = &mut *ev.state.borrow_mut() {
            if t.op == Some(key) {
                t.op = None;
            }
            if failed {
                t.open = false;
            }
        }
        let mut count = 0;
        if failed {
            if let Some(shared) = &ev.trigger {
                shared.close();
            }
            self.touch(&ev);
            if ev.deliverable() {
                ev.callback.notify(&*ev, cqe.result, 0);
                count = 1;
            }
        }
        self.settle_close(&ev);
        count
    }

    /// The waker's read completed: re-arm it, unless `destroy` cancelled it.
    pub(super) fn complete_wake_read(&self, key: OpKey, cqe: Cqe) -> i32 {
        if self.retry_when_ready(key, cqe, self.waker.fd(), libc::POLLIN as u32) {
            return 0;
        }
        let life = self.ops.borrow().get(key).map(|op| op.life);
        if life == Some(super::Life::Submitted) && cqe.result >= 0 {
            self.repush(key);
        } else {
            self.retire(key);
            if cqe.result < 0 && cqe.result != -libc::ECANCELED {
                async_abi::plugin_error!(
                    "the waker's eventfd read failed: {}",
                    std::io::Error::from_raw_os_error(-cqe.result)
                );
            }
        }
        0
    }
}
