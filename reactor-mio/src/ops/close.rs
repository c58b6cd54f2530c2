//! `AA_IO_CLOSE`, and the close of a descriptor owned by a poll
//! (`AA_EVF_OWNS_FD`): forget the descriptor first (deregister, complete its
//! pending requests with `-ECANCELED`), then `close(2)` it, so a reused
//! descriptor number never meets the old entry (registry invariant G2).

use std::os::fd::RawFd;

use async_abi::AA_EVENT_IO;

use crate::error::{Error, Result};
use crate::event::{IoPhase, IoState, Request, State};
use crate::ffi::HostCallback;
use crate::ops::Submitted;
use crate::reactor::{Deferred, Reactor};
use crate::sys;

impl Reactor {
    /// Forgets `fd` and closes it; the entry's requests and polls complete
    /// with `-ECANCELED` from the next `run_once`. `Err` only for a
    /// descriptor the reactor did not know and the kernel calls bad, so
    /// nothing was done (AA-R8).
    pub(crate) fn forget_and_close(&self, fd: RawFd) -> Result<i64> {
        let entry = self.with_mio(|mio| self.registry.borrow_mut().remove(mio, fd));
        let known = entry.is_some();
        if let Some(entry) = entry {
            self.cancel_entry(entry);
        }
        match sys::close(fd) {
            Ok(()) => Ok(0),
            Err(e) if !known && e.raw_os_error() == Some(libc::EBADF) => {
                Err(Error::os(format_args!("io_submit: close fd {fd}"), &e))
            }
            Err(e) => Ok(sys::neg_errno(&e)),
        }
    }

    /// `io_submit(AA_IO_CLOSE)`: closes now; the result is returned inline or
    /// delivered by the next `run_once`, after the `-ECANCELED` completions
    /// of the descriptor's other requests.
    pub(super) fn submit_close(
        &self,
        req: Request,
        inline: bool,
        callback: HostCallback,
    ) -> Result<Submitted> {
        let result = self.forget_and_close(req.fd)?;
        if inline {
            return Ok(Submitted::Done(result));
        }
        let state = State::Io(IoState {
            request: req,
            phase: IoPhase::Done,
        });
        let ev = self.new_event(AA_EVENT_IO, 0, callback, None, state);
        self.defer(Deferred::Notify {
            ev: ev.clone(),
            status: 0,
            value: result,
        });
        Ok(Submitted::Pending(ev))
    }
}
