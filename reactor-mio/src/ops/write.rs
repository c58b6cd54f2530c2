//! `AA_IO_WRITE`: `send(MSG_NOSIGNAL)` on a socket (a reset peer gives
//! `-EPIPE`, never `SIGPIPE`), `pwrite` with an offset, `write` otherwise.

use crate::event::Request;
use crate::ops::Attempt;
use crate::sys;

/// Tries the write once (EINTR retried inside).
pub(super) fn attempt(req: &Request, socket: bool) -> Attempt {
    Attempt::from_io(sys::write(req.fd, req.buf, req.offset, socket).map(|n| n as i64))
}
