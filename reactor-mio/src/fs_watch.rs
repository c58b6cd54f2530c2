//! Filesystem watches (`fs_watch_new`), on the kit's inotify instance
//! (`reactor_sdk::inotify`: the descriptor, the kernel watches and whom each
//! record is for, invariants FW1-FW3), one per reactor, its descriptor
//! registered under [`INOTIFY_TOKEN`].
//!
//! # Invariants
//!
//! - **FW4** An iteration reads every record queued when it looks, then
//!   calls back: changes that callbacks make are reported by a later
//!   iteration (reactor invariant R6).
//!
//! # Access
//!
//! Loop thread only; no borrow is held across a callback (R1).
//!
//! # Drop order
//!
//! `destroy` deregisters and closes the descriptor, which drops every
//! kernel watch.

use std::ffi::CStr;
use std::os::fd::AsRawFd;
use std::rc::Rc;

use async_abi::{AA_EVENT_FS_WATCH, AA_EVF_HIDDEN};
use mio::unix::SourceFd;
use mio::Interest;
use reactor_sdk::inotify::Change;

use crate::error::{Error, Result};
use crate::event::{Event, FsWatchState, State};
use crate::ffi::HostCallback;
use crate::reactor::{check_flags, Reactor, INOTIFY_TOKEN};

/// A reactor's inotify instance.
pub(crate) type Inotify = reactor_sdk::inotify::Inotify<Event>;

impl Reactor {
    /// `fs_watch_new`.
    pub(crate) fn fs_watch_new(
        &self,
        path: &CStr,
        flags: u32,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        check_flags("fs_watch_new", flags, AA_EVF_HIDDEN)?;
        self.open_inotify()?;
        let wd = self
            .inotify
            .borrow()
            .as_ref()
            .expect("opened above")
            .add(path)?;
        let state = State::FsWatch(FsWatchState { wd, active: true });
        let ev = self.new_event(AA_EVENT_FS_WATCH, flags, callback, None, state);
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.list(wd, Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// Makes the reactor's [`Inotify`] if it has none yet.
    fn open_inotify(&self) -> Result<()> {
        if self.inotify.borrow().is_some() {
            return Ok(());
        }
        let inotify = Inotify::open()?;
        self.with_mio(|mio| {
            mio.register(
                &mut SourceFd(&inotify.fd().as_raw_fd()),
                INOTIFY_TOKEN,
                Interest::READABLE,
            )
        })
        .map_err(|e| Error::os("fs_watch_new: register the inotify descriptor", &e))?;
        *self.inotify.borrow_mut() = Some(inotify);
        Ok(())
    }

    /// Stops a watch (cancel, close, dispose); returns whether it was
    /// active (FW1).
    pub(crate) fn fs_watch_stop(&self, ev: &Rc<Event>) -> bool {
        let wd = match &mut *ev.state.borrow_mut() {
            State::FsWatch(w) if w.active => {
                w.active = false;
                w.wd
            }
            _ => return false,
        };
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.remove(wd, ev);
        }
        self.touch(ev);
        true
    }

    /// The inotify descriptor was readable: reads every queued record, then
    /// calls back (FW4). Returns the number of callbacks run.
    pub(crate) fn read_inotify(&self) -> i32 {
        let mut changes = Vec::new();
        match self.inotify.borrow().as_ref() {
            Some(inotify) => inotify.read_ready(&mut changes),
            None => return 0,
        }
        self.deliver_changes(changes)
    }

    /// Calls back for each record (FW2, FW3).
    pub(crate) fn deliver_changes(&self, changes: Vec<Change>) -> i32 {
        let route = |c: &Change| {
            self.inotify
                .borrow_mut()
                .as_mut()
                .map(|inotify| inotify.route(c))
        };
        let mark = |ev: &Rc<Event>, ends: bool| {
            let active = match &mut *ev.state.borrow_mut() {
                State::FsWatch(w) if w.active => {
                    if ends {
                        w.active = false;
                    }
                    true
                }
                _ => false,
            };
            if ends {
                self.touch(ev);
            }
            active
        };
        reactor_sdk::inotify::deliver(changes, route, mark)
    }

    /// `destroy`: deregisters and closes the inotify descriptor.
    pub(crate) fn close_inotify(&self) {
        if let Some(inotify) = self.inotify.borrow_mut().take() {
            let fd = inotify.fd().as_raw_fd();
            let _ = self.with_mio(|mio| mio.deregister(&mut SourceFd(&fd)));
        }
    }
}
