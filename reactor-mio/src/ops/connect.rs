//! `AA_IO_CONNECT` on a non-blocking socket: `connect`, and on
//! `EINPROGRESS` wait for writability, then read `SO_ERROR`.
//!
//! Readiness can be spurious (a re-registration reports it again, an event
//! for another request on the descriptor wakes the queue), so "writable and
//! `SO_ERROR` is 0" is not taken as proof: `getpeername` must also succeed.
//! `ENOTCONN` there means the connect is still in progress.

use crate::event::{IoPhase, Request};
use crate::ops::Attempt;
use crate::sys;

/// Starts the connect (phase `Queued`) or checks on it (`Connecting`).
pub(super) fn attempt(req: &Request, phase: &mut IoPhase) -> Attempt {
    let Some(target) = req.target.as_deref() else {
        return Attempt::Done(-i64::from(libc::EINVAL));
    };
    match *phase {
        IoPhase::Queued => match sys::connect(req.fd, target) {
            Ok(()) => Attempt::Done(0),
            Err(e) => match e.raw_os_error() {
                Some(libc::EINPROGRESS | libc::EALREADY | libc::EINTR) => {
                    *phase = IoPhase::Connecting;
                    Attempt::WouldBlock
                }
                // A Unix socket whose listener's backlog is full: nothing is
                // in progress, the connect itself is retried when writable.
                Some(libc::EAGAIN) => Attempt::WouldBlock,
                _ => Attempt::Done(sys::neg_errno(&e)),
            },
        },
        IoPhase::Connecting => match sys::socket_error(req.fd) {
            Err(e) => Attempt::Done(sys::neg_errno(&e)),
            Ok(0) => match sys::is_connected(req.fd) {
                Ok(true) => Attempt::Done(0),
                Ok(false) => Attempt::WouldBlock,
                Err(e) => Attempt::Done(sys::neg_errno(&e)),
            },
            Ok(err) => Attempt::Done(-i64::from(err)),
        },
        IoPhase::Done => Attempt::Done(-i64::from(libc::EINVAL)),
    }
}
