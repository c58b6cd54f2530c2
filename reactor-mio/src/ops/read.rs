//! `AA_IO_READ`: `recv` on a socket (`MSG_PEEK` with `AA_IO_PEEK`), `pread`
//! with an offset, `read` otherwise.

use crate::event::Request;
use crate::ops::Attempt;
use crate::sys;

/// Tries the read once (EINTR retried inside).
pub(super) fn attempt(req: &Request, socket: bool) -> Attempt {
    Attempt::from_io(sys::read(req.fd, req.buf, req.offset, socket, req.peek).map(|n| n as i64))
}
