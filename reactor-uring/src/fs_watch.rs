//! Filesystem watches (`fs_watch_new`), on the kit's inotify instance
//! (`reactor_sdk::inotify`: the descriptor, the kernel watches and whom each
//! record is for, invariants FW1-FW3), one per reactor, read through the
//! ring.
//!
//! # What this module owns
//!
//! [`Inotify`], made at the first `fs_watch_new` and kept until `destroy`:
//! the kit's instance and the ring `READ` that is always armed on its
//! descriptor (ops/inotify.rs: the op owns its buffer).
//!
//! # Invariants
//!
//! - **FW4** Each completed `READ` is parsed, re-armed, then called back:
//!   the re-armed read reaches the kernel at the next `io_uring_enter`, so
//!   changes that callbacks make are reported by a later iteration (reactor
//!   invariant R6).
//!
//! # Access
//!
//! Loop thread only; no borrow is held across a callback (R1).
//!
//! # Drop order
//!
//! `destroy` cancels the `READ` and waits for its final completion (the
//! kernel may write its buffer until then), then closes the descriptor,
//! which drops every kernel watch.

use std::ffi::CStr;
use std::os::fd::AsRawFd;
use std::rc::Rc;

use async_abi::{AA_EVENT_FS_WATCH, AA_EVF_HIDDEN};
use reactor_sdk::inotify::Change;

use crate::error::Result;
use crate::event::{Event, FsWatchState, State};
use crate::ffi::HostCallback;
use crate::ops::OpKey;
use crate::reactor::{check_flags, Reactor};

/// A reactor's inotify instance (see the module doc).
#[derive(Debug)]
pub(crate) struct Inotify {
    /// The kit's instance: the descriptor and the watches.
    pub(crate) watches: reactor_sdk::inotify::Inotify<Event>,
    /// The `READ` in flight, until `destroy` drains it (or it failed).
    pub(crate) op: Option<OpKey>,
}

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
            .watches
            .add(path)?;
        let state = State::FsWatch(FsWatchState { wd, active: true });
        let ev = self.new_event(AA_EVENT_FS_WATCH, flags, callback, None, state);
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.watches.list(wd, Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// Makes the reactor's [`Inotify`] and arms its `READ`, if it has none
    /// yet.
    fn open_inotify(&self) -> Result<()> {
        if self.inotify.borrow().is_some() {
            return Ok(());
        }
        let watches = reactor_sdk::inotify::Inotify::open()?;
        let raw = watches.fd().as_raw_fd();
        *self.inotify.borrow_mut() = Some(Inotify { watches, op: None });
        let key = self.arm_inotify(raw);
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.op = Some(key);
        }
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
            inotify.watches.remove(wd, ev);
        }
        self.touch(ev);
        true
    }

    /// Calls back for each record (FW2, FW3).
    pub(crate) fn deliver_changes(&self, changes: Vec<Change>) -> i32 {
        let route = |c: &Change| {
            self.inotify
                .borrow_mut()
                .as_mut()
                .map(|inotify| inotify.watches.route(c))
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

    /// `destroy`, first step: takes the `READ` to drain (with the waker's,
    /// reactor.rs) before the descriptor may close.
    pub(crate) fn take_inotify_op(&self) -> Option<OpKey> {
        self.inotify.borrow_mut().as_mut().and_then(|i| i.op.take())
    }

    /// `destroy`, last step: closes the inotify descriptor.
    pub(crate) fn close_inotify(&self) {
        self.inotify.borrow_mut().take();
    }
}
