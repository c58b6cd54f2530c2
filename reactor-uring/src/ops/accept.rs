//! Multishot accept (`uring.multishot_accept`, Linux 5.19): one
//! `ACCEPT` with `IORING_ACCEPT_MULTISHOT` per listener, instead of one
//! `ACCEPT` per `AA_IO_ACCEPT`.
//!
//! An `AA_IO_ACCEPT` on a socket does not reach the kernel: its op is
//! parked on the listener ([`Life::Held`](super::Life::Held), registry
//! invariant G5) and the listener's multishot accept is armed if it is not.
//! Each connection the kernel reports goes to the oldest parked request, or
//! waits in the listener's `ready` queue; a request that finds a connection
//! waiting gets it from the next `run_once` (R2: never inside `io_submit`).
//! The peer address, which one multishot accept cannot write per request,
//! comes from `getpeername`; a connection whose peer is already gone
//! (`ENOTCONN`) is closed and skipped, as if it had never been accepted.
//!
//! At most [`READY_LIMIT`] connections wait per listener: reaching it
//! cancels the multishot accept (the kernel's backlog then holds the
//! rest), and the next parked request arms it again. When the multishot
//! accept ends with an error, the parked requests run as plain accepts,
//! which report the error themselves (or succeed: an old kernel's
//! `EINVAL` for the multishot flag).
//!
//! Closing the listener through the reactor (`AA_IO_CLOSE`, a poll that
//! owns it) ends the parked requests with `-ECANCELED` like any request,
//! cancels the multishot accept and closes the connections waiting in
//! `ready`; so does `destroy`. A connection reported while the listener is
//! closing is closed at once. Nothing leaks.
//!
//! # Safety
//!
//! The multishot entry names no memory (no peer address buffer), so K1
//! holds trivially. The one write into host memory outside the kernel is
//! the peer address of a parked request, written by `getpeername` into the
//! request's `AaSockAddr`, which the host keeps valid until the request's
//! callback (AA-R5), which runs right after.

use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use crate::event::State;
use crate::ops::{sys, Hold, HostAddr, NewOp, OpKey, OpKind, OwnedBuf};
use crate::reactor::Reactor;
use crate::ring::Cqe;

use super::io::Opcode;
use super::Request;

/// Connections accepted ahead of any request, per listener, before the
/// multishot accept is cancelled (G5).
pub(crate) const READY_LIMIT: usize = 64;

/// A multishot accept on `fd` (non-blocking, close-on-exec descriptors,
/// as the one-shot accept makes).
fn multishot_entry(fd: RawFd) -> squeue::Entry {
    opcode::AcceptMulti::new(types::Fd(fd))
        .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
        .build()
}

/// Writes the peer address of the connection `fd` into the host's `peer`.
/// False if the peer is already gone.
fn write_peer(peer: HostAddr, fd: RawFd) -> bool {
    let mut len = std::mem::size_of::<[u64; 16]>() as libc::socklen_t;
    // SAFETY: AA-R5: the host keeps `peer` valid, aligned and unmoved until
    // the request's callback, which has not run yet (it runs right after
    // this); `storage` is 128 bytes, the length given; `fd` is a descriptor
    // the reactor owns (Y1).
    let r = unsafe {
        let storage = std::ptr::addr_of_mut!((*peer.as_mut_ptr()).storage);
        libc::getpeername(fd, storage.cast(), &mut len)
    };
    if r != 0 {
        return false;
    }
    // SAFETY: as above.
    unsafe { (*peer.as_mut_ptr()).len = len };
    true
}

impl Reactor {
    /// Whether `req` parks on its listener's multishot accept.
    pub(crate) fn parks_accept(&self, req: &Request) -> bool {
        req.opcode == Opcode::Accept && req.socket && self.multishot_accept
    }

    /// Parks the accept request `key` on listener `fd` (G5): arms the
    /// multishot accept if none is, or has the next `run_once` hand it a
    /// connection accepted ahead.
    pub(crate) fn park_accept(&self, fd: RawFd, key: OpKey) {
        let (arm, waiting) = {
            let mut registry = self.registry.borrow_mut();
            let Some(queue) = registry.accept_queue(fd) else {
                return;
            };
            queue.waiters.push_back(key);
            (
                queue.multishot.is_none() && queue.ready.is_empty(),
                !queue.ready.is_empty(),
            )
        };
        if waiting {
            self.accept_matches.borrow_mut().push(fd);
        }
        if arm {
            self.arm_accept(fd);
        }
    }

    /// Arms the multishot accept of listener `fd`.
    fn arm_accept(&self, fd: RawFd) {
        let key = self.start_op(
            NewOp {
                owner: None,
                kind: OpKind::AcceptMulti,
                fd: Some(fd),
                buf: OwnedBuf::None,
                hold: Hold::No,
            },
            |_, _| multishot_entry(fd),
        );
        if let Some(queue) = self.registry.borrow_mut().accept_queue(fd) {
            queue.multishot = Some(key);
        }
    }

    /// Hands the listeners' waiting connections to their parked requests
    /// (the ones parked since the last iteration). Returns the callbacks
    /// run.
    pub(crate) fn run_accept_matches(&self) -> i32 {
        let listeners = std::mem::take(&mut *self.accept_matches.borrow_mut());
        listeners.into_iter().map(|fd| self.match_accepts(fd)).sum()
    }

    /// Whether parked requests wait for connections already accepted.
    pub(crate) fn has_accept_matches(&self) -> bool {
        !self.accept_matches.borrow().is_empty()
    }

    /// Pairs the oldest waiting connection with the oldest parked request
    /// of listener `listener`, as long as both exist (G5). Returns the
    /// callbacks run.
    fn match_accepts(&self, listener: RawFd) -> i32 {
        let mut count = 0;
        loop {
            let (waiter, conn) = {
                let mut registry = self.registry.borrow_mut();
                let Some(queue) = registry.accept_queue(listener) else {
                    return count;
                };
                match (queue.waiters.front(), queue.ready.pop_front()) {
                    (Some(&w), Some(conn)) => (w, conn),
                    (None, Some(conn)) => {
                        queue.ready.push_front(conn);
                        return count;
                    }
                    _ => return count,
                }
            };
            let peer = match self.ops.borrow().get(waiter).map(|op| &op.kind) {
                Some(OpKind::Request(req)) => req.peer,
                _ => None,
            };
            if let Some(peer) = peer {
                if !write_peer(peer, conn) {
                    // The peer left before anyone accepted the connection:
                    // it is dropped, and the request waits for the next.
                    sys::close_orphan(conn);
                    continue;
                }
            }
            count += self.finish_parked(waiter, conn);
        }
    }

    /// Completes the parked request `key` with the connection `conn`.
    fn finish_parked(&self, key: OpKey, conn: RawFd) -> i32 {
        let Some(op) = self.retire(key) else {
            sys::close_orphan(conn);
            return 0;
        };
        let Some(ev) = op.owner else {
            sys::close_orphan(conn);
            return 0;
        };
        if let State::Io(io) = &mut *ev.state.borrow_mut() {
            io.op = None;
        }
        self.touch(&ev);
        let mut count = 0;
        if ev.deliverable() {
            ev.callback.notify(&*ev, 0, i64::from(conn));
            count = 1;
        } else {
            // Unreachable in practice: dispose retires a parked request.
            sys::close_orphan(conn);
        }
        self.settle_close(&ev);
        count
    }

    /// A completion of a listener's multishot accept. Returns the callbacks
    /// run.
    pub(super) fn complete_accept_multi(&self, key: OpKey, cqe: Cqe) -> i32 {
        let Some(listener) = self.ops.borrow().get(key).and_then(|op| op.fd) else {
            return 0;
        };
        let mut count = 0;
        if cqe.result >= 0 {
            count += self.accepted(listener, key, cqe.result);
        }
        if cqe.more() {
            return count;
        }
        self.retire(key);
        let parked: Vec<OpKey> = {
            let mut registry = self.registry.borrow_mut();
            let Some(queue) = registry.accept_queue(listener) else {
                return count;
            };
            if cqe.result < 0 && cqe.result != -libc::ECANCELED {
                // The parked requests run as plain accepts: each reports the
                // error, or succeeds where only the multishot form failed.
                queue.waiters.drain(..).collect()
            } else {
                Vec::new()
            }
        };
        if cqe.result < 0 && cqe.result != -libc::ECANCELED {
            async_abi::plugin_debug!(
                "reactor-uring: the multishot accept on fd {listener} ended: {}; {} parked accepts run one-shot",
                std::io::Error::from_raw_os_error(-cqe.result),
                parked.len()
            );
        }
        for waiter in parked {
            self.repush(waiter);
        }
        let rearm = {
            let mut registry = self.registry.borrow_mut();
            matches!(registry.accept_queue(listener),
                Some(q) if q.multishot.is_none() && !q.waiters.is_empty() && q.ready.is_empty())
        };
        if rearm {
            self.arm_accept(listener);
        }
        count
    }

    /// A connection the multishot accept `key` reported on `listener`:
    /// to the oldest parked request, else queued (G5), else closed if the
    /// listener is closing.
    fn accepted(&self, listener: RawFd, key: OpKey, conn: RawFd) -> i32 {
        let full = {
            let mut registry = self.registry.borrow_mut();
            let Some(queue) = registry.accept_queue(listener) else {
                drop(registry);
                sys::close_orphan(conn);
                return 0;
            };
            queue.ready.push_back(conn);
            queue.ready.len() >= READY_LIMIT && queue.multishot == Some(key)
        };
        if full {
            // Enough waiting: the kernel's backlog holds the rest until a
            // request arms the multishot accept again.
            let _ = self.cancel_op(key);
        }
        self.match_accepts(listener)
    }

    /// `destroy`: closes every connection accepted ahead and returns the
    /// multishot accepts still armed, which the caller cancels and drains.
    pub(crate) fn release_listeners(&self) -> Vec<OpKey> {
        let listeners = self.registry.borrow().listeners();
        let mut armed = Vec::new();
        for fd in listeners {
            for conn in self.registry.borrow_mut().take_ready(fd) {
                sys::close_orphan(conn);
            }
            if let Some(key) = self
                .registry
                .borrow_mut()
                .accept_queue(fd)
                .and_then(|q| q.multishot)
            {
                armed.push(key);
            }
        }
        armed
    }
}
