//! Child process watches (`process_new`): a pidfd (`pidfd_open`, Linux 5.3)
//! that the ring polls (ops/pidfd.rs); the kernel completes the poll once
//! the child has exited, and the loop reaps it (`waitid(P_PIDFD)`, Linux
//! 5.4) and calls back once with its `AaExitStatus`.
//!
//! # Invariants
//!
//! - **PW1** A watch is active exactly while its state holds the pidfd.
//!   Ending it (its exit, a failed reap or poll, cancel, close, dispose)
//!   drops the pidfd and cancels the current op, before any callback; an op
//!   the kernel still holds completes later as stale and only then releases
//!   the event (ops invariant O1), which is what a pending `close` waits
//!   for.
//! - **PW2** `process_new` accepts only a child of this process: a pid that
//!   does not exist (or was reaped already) fails with `-ESRCH`, one that is
//!   not a child with `-ECHILD` (checked with `WNOWAIT`, which leaves an
//!   exited child to be reaped by the watch).
//! - **PW3** Only the watch reaps: a poll completion for a child that has
//!   not exited (none is expected) re-arms the same op. If someone else
//!   reaped the child first, the callback gets `-ECHILD`.
//!
//! # Access
//!
//! Loop thread only.

use std::os::fd::AsRawFd;
use std::rc::Rc;

use async_abi::{AA_EVENT_PROCESS, AA_EVF_HIDDEN};

use crate::error::Result;
use crate::event::{Event, ProcessState, State};
use crate::ffi::HostCallback;
use crate::reactor::{check_flags, Reactor};

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
        let raw = pidfd.as_raw_fd();
        let state = State::Process(ProcessState {
            pidfd: Some(pidfd),
            op: None,
        });
        let ev = self.new_event(AA_EVENT_PROCESS, flags, callback, None, state);
        self.arm_process(&ev, raw);
        self.touch(&ev);
        Ok(ev)
    }

    /// Ends a watch (PW1); returns whether it was active.
    pub(crate) fn process_stop(&self, ev: &Event) -> bool {
        let (pidfd, key) = match &mut *ev.state.borrow_mut() {
            State::Process(p) => (p.pidfd.take(), p.op.take()),
            _ => return false,
        };
        if let Some(key) = key {
            // A wait the kernel never saw is simply retired: it has nothing
            // to report.
            let _ = self.cancel_op(key);
        }
        let was_active = pidfd.is_some();
        drop(pidfd);
        self.touch(ev);
        was_active
    }
}
