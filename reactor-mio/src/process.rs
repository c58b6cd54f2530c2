//! Child process watches (`process_new`): a pidfd (`pidfd_open`, Linux 5.3)
//! registered for readability, which the kernel reports once the child has
//! exited; the loop then reaps it (`waitid(P_PIDFD)`, Linux 5.4) and calls
//! back once with its `AaExitStatus`.
//!
//! # Invariants
//!
//! - **PW1** A watch is active exactly while its state holds the pidfd; it
//!   is then registered under its own token and listed in the reactor's
//!   process table under that token. Ending the watch (its exit, a failed
//!   reap, cancel, close, dispose) deregisters, drops the table entry and
//!   closes the pidfd, in that order, before any callback.
//! - **PW2** `process_new` accepts only a child of this process: a pid that
//!   does not exist (or was reaped already) fails with `-ESRCH`, one that is
//!   not a child with `-ECHILD` (checked with `WNOWAIT`, which leaves an
//!   exited child to be reaped by the watch).
//! - **PW3** Only the watch reaps: a readiness report on a pidfd whose child
//!   has not exited (none is expected) re-registers it, so the exit is still
//!   reported. If someone else reaped the child first, the callback gets
//!   `-ECHILD`.
//!
//! # Access
//!
//! Loop thread only.

use std::rc::Rc;

use async_abi::{AA_EVENT_PROCESS, AA_EVF_HIDDEN};
use mio::unix::SourceFd;
use mio::{Interest, Token};

use crate::error::{Error, Result};
use crate::event::{Event, ProcessState, State};
use crate::ffi::HostCallback;
use crate::reactor::{check_flags, process_token, Reactor};
use crate::sys;

impl Reactor {
    /// `process_new` (PW2).
    pub(crate) fn process_new(
        &self,
        pid: i32,
        flags: u32,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        check_flags("process_new", flags, AA_EVF_HIDDEN)?;
        let pidfd = reactor_sdk::process::open_child(pid)?;
        let token = self.next_process_token();
        self.with_mio(|mio| {
            mio.register(
                &mut SourceFd(&std::os::fd::AsRawFd::as_raw_fd(&pidfd)),
                token,
                Interest::READABLE,
            )
        })
        .map_err(|e| Error::os(format_args!("process_new: register pidfd of {pid}"), &e))?;
        let state = State::Process(ProcessState {
            pidfd: Some(pidfd),
            token,
        });
        let ev = self.new_event(AA_EVENT_PROCESS, flags, callback, None, state);
        self.processes.borrow_mut().insert(token, Rc::clone(&ev));
        self.touch(&ev);
        Ok(ev)
    }

    /// A token no active watch uses.
    fn next_process_token(&self) -> Token {
        let processes = self.processes.borrow();
        loop {
            let id = self.next_process.get();
            self.next_process
                .set(if id >= crate::reactor::LAST_PROCESS_ID {
                    1
                } else {
                    id + 1
                });
            let token = process_token(id);
            if !processes.contains_key(&token) {
                return token;
            }
        }
    }

    /// Ends a watch (PW1); returns whether it was active.
    pub(crate) fn process_stop(&self, ev: &Event) -> bool {
        let (pidfd, token) = match &mut *ev.state.borrow_mut() {
            State::Process(p) => (p.pidfd.take(), p.token),
            _ => return false,
        };
        let Some(pidfd) = pidfd else { return false };
        let fd = std::os::fd::AsRawFd::as_raw_fd(&pidfd);
        let _ = self.with_mio(|mio| mio.deregister(&mut SourceFd(&fd)));
        self.processes.borrow_mut().remove(&token);
        drop(pidfd);
        self.touch(ev);
        true
    }

    /// A pidfd was readable: reaps the child and calls back (PW3). Returns
    /// the number of callbacks run.
    pub(crate) fn complete_process(&self, token: Token) -> i32 {
        let Some(ev) = self.processes.borrow().get(&token).cloned() else {
            return 0;
        };
        let reaped = match &*ev.state.borrow() {
            State::Process(ProcessState {
                pidfd: Some(pidfd), ..
            }) => reactor_sdk::process::wait_exit(pidfd, true),
            _ => return 0,
        };
        let outcome = match reaped {
            Ok(None) => {
                // Not exited after all: re-register, which reports the
                // pidfd again if it is readable (registrations are
                // edge-triggered, and the exit is one edge).
                if let State::Process(ProcessState {
                    pidfd: Some(pidfd), ..
                }) = &*ev.state.borrow()
                {
                    let fd = std::os::fd::AsRawFd::as_raw_fd(pidfd);
                    let _ = self.with_mio(|mio| {
                        mio.reregister(&mut SourceFd(&fd), token, Interest::READABLE)
                    });
                }
                return 0;
            }
            Ok(Some(exit)) => Ok(exit),
            Err(e) => Err(sys::neg_errno(&e) as i32),
        };
        self.process_stop(&ev);
        if !ev.deliverable() {
            return 0;
        }
        match outcome {
            Ok(exit) => ev.callback.notify_exit(&*ev, &exit),
            Err(status) => ev.callback.notify(&*ev, status, 0),
        }
        1
    }
}
