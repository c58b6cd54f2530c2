//! `AA_IO_ACCEPT`: `accept4(SOCK_NONBLOCK | SOCK_CLOEXEC)`, the peer address
//! copied into the host's `AaSockAddr` with its length.

use async_abi::AaSockAddr;

use crate::event::Request;
use crate::ops::Attempt;
use crate::sys;

/// Tries to accept once (EINTR and ECONNABORTED retried inside).
pub(super) fn attempt(req: &Request) -> Attempt {
    let mut peer = AaSockAddr::EMPTY;
    let result = sys::accept(req.fd, &mut peer).map(|fd| {
        if let Some(out) = req.peer {
            out.write(&peer);
        }
        i64::from(fd)
    });
    Attempt::from_io(result)
}
