//! `AA_IO_READ`: `recv` on a socket, `pread` with an offset, `read`
//! otherwise.

use crate::event::Request;
use crate::ops::Attempt;
use crate::sys;

/// Tries the read once (EINTR retried inside).
pub(super) fn attempt(req: &Request, socket: bool) -> Attempt {
    Attempt::from_io(sys::read(req.fd, req.buf, req.offset, socket).map(|n| n as i64))
}
