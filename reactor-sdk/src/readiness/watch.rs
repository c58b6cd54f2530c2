//! Process and filesystem watches, on the kit's pidfds
//! (`crate::process`) and inotify instance (`crate::inotify`,
//! invariants FW1-FW3), each descriptor registered with the backend.
//!
//! # Invariants
//!
//! - **W1** A process watch is active exactly while its state holds the
//!   pidfd, registered under [`process_token`] and listed in the table;
//!   ending it (its exit, a failed reap, cancel, close, dispose) undoes all
//!   three before any callback.
//! - **W2** Only the watch reaps: a report on a pidfd whose child runs on
//!   re-registers it, so the exit is still reported.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;

use async_abi::*;

use super::{Backend, Event, Kind, Readiness, INOTIFY};
use crate::error::check_flags;
use crate::inotify::{Change, Inotify};
use crate::{Error, HostCallback, Result};

/// Tokens of pidfds: apart from descriptors' (their numbers) and the
/// driver's own.
const PROCESS_BASE: u64 = 1 << 40;

/// The token of the pidfd `fd` (W1).
fn process_token(fd: RawFd) -> u64 {
    PROCESS_BASE | fd as u64
}

/// Whether `token` names a pidfd, and which.
pub(super) fn pidfd_of(token: u64) -> Option<RawFd> {
    (token & PROCESS_BASE != 0 && token < u64::MAX - 16).then_some((token & !PROCESS_BASE) as RawFd)
}

impl<B: Backend> Readiness<B> {
    pub(super) fn process_new(
        &self,
        pid: i32,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event<B>>> {
        check_flags("process_new", flags, AA_EVF_HIDDEN)?;
        let pidfd = crate::process::open_child(pid)?;
        let fd = pidfd.as_raw_fd();
        self.backend
            .borrow()
            .register(fd, process_token(fd), AA_POLL_READABLE)
            .map_err(|e| Error::os("process_new: register the pidfd", &e))?;
        let state = Kind::Process { pidfd: Some(pidfd) };
        let ev = self.new_event(AA_EVENT_PROCESS, flags, cb, state);
        self.processes.borrow_mut().insert(fd, Rc::clone(&ev));
        self.touch(&ev);
        Ok(ev)
    }

    /// Ends a process watch (W1); whether it was active.
    pub(super) fn process_stop(&self, ev: &Event<B>) -> bool {
        let pidfd = match &mut ev.state.borrow_mut().0 {
            Kind::Process { pidfd } => pidfd.take(),
            _ => None,
        };
        let Some(pidfd) = pidfd else { return false };
        let fd = pidfd.as_raw_fd();
        let _ = self.backend.borrow().deregister(fd);
        self.processes.borrow_mut().remove(&fd);
        drop(pidfd);
        self.touch(ev);
        true
    }

    /// A pidfd was readable: reaps the child and calls back (W2).
    pub(super) fn process_ready(&self, fd: RawFd) -> i32 {
        let Some(ev) = self.processes.borrow().get(&fd).cloned() else {
            return 0;
        };
        let reaped = match &ev.state.borrow().0 {
            Kind::Process { pidfd: Some(pidfd) } => crate::process::wait_exit(pidfd, true),
            _ => return 0,
        };
        let outcome = match reaped {
            Ok(None) => {
                let _ = self
                    .backend
                    .borrow()
                    .modify(fd, process_token(fd), AA_POLL_READABLE);
                return 0;
            }
            Ok(Some(exit)) => Ok(exit),
            Err(e) => Err(crate::error::neg_errno(&e)),
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

    pub(super) fn fs_watch_new(
        &self,
        path: &CStr,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event<B>>> {
        check_flags("fs_watch_new", flags, AA_EVF_HIDDEN)?;
        if self.inotify.borrow().is_none() {
            let inotify = Inotify::open()?;
            let fd = inotify.fd().as_raw_fd();
            self.backend
                .borrow()
                .register(fd, INOTIFY, AA_POLL_READABLE)
                .map_err(|e| Error::os("fs_watch_new: register the inotify descriptor", &e))?;
            *self.inotify.borrow_mut() = Some(inotify);
        }
        let wd = self
            .inotify
            .borrow()
            .as_ref()
            .expect("opened above")
            .add(path)?;
        let ev = self.new_event(
            AA_EVENT_FS_WATCH,
            flags,
            cb,
            Kind::FsWatch { wd, active: true },
        );
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.list(wd, Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// Stops a filesystem watch (FW1); whether it was active.
    pub(super) fn fs_watch_stop(&self, ev: &Rc<Event<B>>) -> bool {
        let wd = match &mut ev.state.borrow_mut().0 {
            Kind::FsWatch { wd, active } if *active => {
                *active = false;
                *wd
            }
            _ => return false,
        };
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.remove(wd, ev);
        }
        self.touch(ev);
        true
    }

    /// The inotify descriptor was readable: reads every record, then calls
    /// each watch back (FW2, FW3) with no borrow held.
    pub(super) fn inotify_ready(&self) -> i32 {
        let mut changes = Vec::new();
        let fd = match self.inotify.borrow().as_ref() {
            Some(inotify) => {
                inotify.read_ready(&mut changes);
                inotify.fd().as_raw_fd()
            }
            None => return 0,
        };
        // Read until `EAGAIN`: the next record is an edge (a level-triggered
        // backend masked the descriptor until now).
        self.backend.borrow().drained(fd, AA_POLL_READABLE);
        let route = |c: &Change| self.inotify.borrow_mut().as_mut().map(|i| i.route(c));
        let mark = |ev: &Rc<Event<B>>, ends: bool| {
            let active = match &mut ev.state.borrow_mut().0 {
                Kind::FsWatch { active, .. } if *active => {
                    *active = !ends;
                    true
                }
                _ => false,
            };
            self.touch(ev);
            active
        };
        crate::inotify::deliver(changes, route, mark)
    }
}
