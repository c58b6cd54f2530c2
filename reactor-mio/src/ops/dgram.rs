//! `AA_IO_RECVFROM` and `AA_IO_SENDTO` (ABI 1.1): one datagram per try,
//! `recvfrom` writing the sender's address into the host's `AaSockAddr`
//! (`MSG_PEEK` with `AA_IO_PEEK`), `sendto(MSG_NOSIGNAL)` from the reactor's
//! copy of the destination.
//!
//! A datagram socket never comes back short in the stream sense: the
//! readiness hints stay up after a short datagram (registry G6 lowers them
//! only on stream sockets), so a second queued datagram is still read.

use async_abi::AaSockAddr;

use crate::event::Request;
use crate::ops::Attempt;
use crate::sys;

/// Tries to receive once (EINTR retried inside).
pub(super) fn recv_from(req: &Request) -> Attempt {
    let mut from = AaSockAddr::EMPTY;
    let result = sys::recv_from(req.fd, req.buf, &mut from, req.peek).map(|n| {
        if let Some(out) = req.peer {
            out.write(&from);
        }
        n as i64
    });
    Attempt::from_io(result)
}

/// Tries to send once (EINTR retried inside).
pub(super) fn send_to(req: &Request) -> Attempt {
    Attempt::from_io(sys::send_to(req.fd, req.buf, req.target.as_deref()).map(|n| n as i64))
}
