//! `POLL_ADD` operations: the watches behind `poll_new`, and the one-shot
//! readiness waits of ops that met `EAGAIN`.
//!
//! A watch is one multishot `POLL_ADD` (`IORING_POLL_ADD_MULTI`, Linux
//! 5.13+): the kernel posts a completion each time the descriptor's wait
//! queue is woken with a matching mask, which is the ABI's edge-style,
//! persistent semantics (what `EPOLLET` gives an epoll reactor). On a
//! kernel that refuses the flag (`EINVAL`) the reactor switches to one-shot
//! polls re-armed after each completion, and so may report a readiness
//! that was not consumed again (level-style; the README says so).
//!
//! Completions of a watch's earlier ops (before a `poll_set_interest`, a
//! cancel or a close) are stale: the event's [`PollState::op`] names the
//! only op whose completions are reported.
//!
//! # Safety
//!
//! No unsafe code: a `POLL_ADD` names no memory, and it is pushed through
//! the ops module's `push_entry` (ops invariant O1).

use std::os::fd::RawFd;
use std::rc::Rc;

use async_abi::{AA_POLL_ERROR, AA_POLL_HUP, AA_POLL_READABLE, AA_POLL_WRITABLE};
use io_uring::{opcode, squeue, types};

use crate::event::{Event, PollState, State};
use crate::ops::{Hold, NewOp, OpKey, OpKind, OwnedBuf};
use crate::reactor::{Deferred, Reactor};
use crate::ring::Cqe;

/// The `poll(2)` mask for `AA_POLL_*` interest bits. Read interest also asks
/// for `POLLRDHUP`, so a peer's shutdown is seen; errors and hang-ups are
/// always reported by the kernel.
pub(crate) fn mask_of(interest: u32) -> u32 {
    let mut mask = 0;
    if interest & AA_POLL_READABLE != 0 {
        mask |= (libc::POLLIN | libc::POLLRDHUP) as u32;
    }
    if interest & AA_POLL_WRITABLE != 0 {
        mask |= libc::POLLOUT as u32;
    }
    mask
}

/// The `AA_POLL_*` bits of a completion's `poll(2)` mask, limited to the
/// interest plus error and hang-up (as an epoll reactor reports them).
pub(crate) fn ready_bits(revents: u32, interest: u32) -> u32 {
    let has = |bit: libc::c_short| revents & bit as u32 != 0;
    let mut bits = 0;
    if has(libc::POLLIN) || has(libc::POLLPRI) {
        bits |= AA_POLL_READABLE;
    }
    if has(libc::POLLOUT) {
        bits |= AA_POLL_WRITABLE;
    }
    if has(libc::POLLERR) {
        bits |= AA_POLL_ERROR;
    }
    if has(libc::POLLHUP) || has(libc::POLLRDHUP) {
        // A read will not block: it returns end of stream.
        bits |= AA_POLL_HUP | AA_POLL_READABLE;
    }
    if has(libc::POLLHUP) {
        // Both directions are closed: a write fails at once.
        bits |= AA_POLL_WRITABLE;
    }
    bits & (interest | AA_POLL_ERROR | AA_POLL_HUP)
}

/// A `POLL_ADD` for `fd` and `mask`, multishot if asked.
pub(crate) fn add_entry(fd: RawFd, mask: u32, multishot: bool) -> squeue::Entry {
    opcode::PollAdd::new(types::Fd(fd), mask)
        .multi(multishot)
        .build()
}

#[cfg(test)]
thread_local! {
    /// The descriptors of the readiness waits pushed on this thread, for
    /// tests that must tell an `EAGAIN` given to the host from one the
    /// reactor waited out.
    pub(crate) static READINESS_WAITS: std::cell::RefCell<Vec<RawFd>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl Reactor {
    /// Starts the kernel watch of a poll event for `interest` (non-zero) and
    /// records it as the event's current op.
    pub(crate) fn arm_watch(&self, ev: &Rc<Event>, fd: RawFd, interest: u32) {
        let mask = mask_of(interest);
        let multishot = self.multishot_poll.get();
        let key = self.start_op(
            NewOp {
                owner: Some(Rc::clone(ev)),
                kind: OpKind::Poll { mask },
                fd: Some(fd),
                buf: OwnedBuf::None,
                hold: Hold::No,
            },
            |_, _| add_entry(fd, mask, multishot),
        );
        if let State::Poll(p) = &mut *ev.state.borrow_mut() {
            p.op = Some(key);
        }
    }

    /// Stops the kernel watch of a poll event, if any: its op is cancelled
    /// and no longer current, so whatever it still reports is stale.
    pub(crate) fn disarm_watch(&self, ev: &Event) {
        let key = match &mut *ev.state.borrow_mut() {
            State::Poll(p) => p.op.take(),
            _ => None,
        };
        if let Some(key) = key {
            // A watch the kernel never saw is simply retired: it has
            // nothing to report.
            let _ = self.cancel_op(key);
        }
    }

    /// Stages a one-shot readiness wait carrying `key` (the `EAGAIN`
    /// fallback, ops invariant O3); the caller made the op `Staged`.
    pub(crate) fn push_readiness_wait(&self, key: OpKey, fd: RawFd, mask: u32) {
        #[cfg(test)]
        READINESS_WAITS.with(|w| w.borrow_mut().push(fd));
        let entry = add_entry(fd, mask, false).user_data(key.user_data());
        self.push_entry(entry);
    }

    /// The descriptor of a watch was closed through the reactor: the watch
    /// ends, and if it was armed its callback is told `-ECANCELED` from the
    /// next `run_once` (as the epoll reactor does).
    pub(super) fn end_watch_of_closed_fd(&self, ev: &Rc<Event>, key: OpKey) {
        let was_armed = match &mut *ev.state.borrow_mut() {
            State::Poll(p) if p.op == Some(key) => {
                p.op = None;
                std::mem::replace(&mut p.armed, false) && p.interest != 0
            }
            _ => false,
        };
        if was_armed {
            self.defer(Deferred::Notify {
                ev: Rc::clone(ev),
                status: -libc::ECANCELED,
                value: 0,
            });
        }
        self.touch(ev);
    }

    /// A watch's completion. Returns the number of host callbacks run.
    pub(super) fn complete_poll(&self, key: OpKey, cqe: Cqe) -> i32 {
        let more = cqe.more();
        let (ev, life, mask) = match self.ops.borrow().get(key) {
            Some(op) => match (&op.owner, &op.kind) {
                (Some(ev), OpKind::Poll { mask }) => (Rc::clone(ev), op.life, *mask),
                _ => return 0,
            },
            None => return 0,
        };
        let current: Option<PollState> = match &*ev.state.borrow() {
            State::Poll(p) if p.op == Some(key) && p.armed => Some(*p),
            _ => None,
        };
        let Some(watch) = current.filter(|_| life == super::Life::Submitted) else {
            // Stale: a cancelled or replaced watch draining out of the
            // kernel.
            if !more {
                self.retire(key);
                self.settle_close(&ev);
            }
            return 0;
        };
        if cqe.result == -libc::EINVAL && self.multishot_poll.get() {
            // A kernel without IORING_POLL_ADD_MULTI (before 5.13).
            self.multishot_poll.set(false);
            self.replace_entry(key, add_entry(watch.fd, mask, false));
            return 0;
        }
        if cqe.result < 0 {
            // The watch failed (a descriptor closed behind the reactor's
            // back, ...): reported once, then the watch is off.
            if more {
                let _ = self.cancel_op(key);
            } else {
                self.retire(key);
            }
            if let State::Poll(p) = &mut *ev.state.borrow_mut() {
                p.op = None;
                p.armed = false;
            }
            self.touch(&ev);
            let mut count = 0;
            if ev.deliverable() {
                ev.callback.notify(&*ev, cqe.result, 0);
                count = 1;
            }
            self.settle_close(&ev);
            return count;
        }
        if !more {
            // One-shot, or a multishot the kernel ended: keep watching.
            let multishot = self.multishot_poll.get();
            self.replace_entry(key, add_entry(watch.fd, mask, multishot));
        }
        let ready = ready_bits(cqe.result as u32, watch.interest);
        if ready != 0 && ev.deliverable() {
            ev.callback.notify(&*ev, 0, i64::from(ready));
            1
        } else {
            0
        }
    }
}

impl Reactor {
    /// The completion of an owned descriptor's close (`AA_EVF_OWNS_FD`):
    /// the descriptor is forgotten, and the owner's `close`, if any, can
    /// finish. Returns the number of host callbacks run (none).
    pub(super) fn complete_owned_close(&self, key: OpKey, cqe: Cqe) -> i32 {
        let Some(op) = self.retire(key) else { return 0 };
        if let Some(ev) = &op.owner {
            if let State::Poll(p) = &*ev.state.borrow() {
                self.registry.borrow_mut().forget(p.fd);
            }
            if cqe.result < 0 {
                async_abi::plugin_debug!(
                    "closing an owned descriptor failed: {}",
                    std::io::Error::from_raw_os_error(-cqe.result)
                );
            }
            self.settle_close(ev);
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_is_limited_to_interest_plus_error_and_hangup() {
        let pollin = libc::POLLIN as u32;
        let pollout = libc::POLLOUT as u32;
        let hup = libc::POLLHUP as u32;
        assert_eq!(
            ready_bits(pollin | pollout, AA_POLL_READABLE),
            AA_POLL_READABLE
        );
        assert_eq!(ready_bits(pollout, AA_POLL_READABLE), 0);
        assert_eq!(
            ready_bits(hup, AA_POLL_WRITABLE),
            AA_POLL_HUP | AA_POLL_WRITABLE
        );
        assert_eq!(
            ready_bits(libc::POLLERR as u32, AA_POLL_READABLE),
            AA_POLL_ERROR
        );
    }

    #[test]
    fn read_interest_asks_for_peer_shutdown_too() {
        assert_eq!(
            mask_of(AA_POLL_READABLE | AA_POLL_WRITABLE),
            (libc::POLLIN | libc::POLLRDHUP | libc::POLLOUT) as u32
        );
        assert_eq!(mask_of(0), 0);
    }
}
