//! Readiness watches (`poll_new`, `poll_set_interest`): edge-style and
//! persistent, one multishot `POLL_ADD` per armed watch (ops/poll.rs).
//!
//! `poll_set_interest` replaces the watch's kernel op: the old one is
//! cancelled (what it still reports is stale) and a new one is armed, which
//! reports the descriptor's current readiness at once if it has any — the
//! re-evaluation the ABI asks for. An interest of 0 only disarms.
//!
//! A poll's state is [`crate::event::PollState`].

use std::os::fd::RawFd;
use std::rc::Rc;

use async_abi::{AA_EVENT_POLL, AA_EVF_HIDDEN, AA_EVF_OWNS_FD, AA_E_CLOSED};
use async_abi::{AA_POLL_READABLE, AA_POLL_WRITABLE};

use crate::error::{Error, Result};
use crate::event::{Event, PollState, State};
use crate::ffi::HostCallback;
use crate::reactor::{check_flags, Reactor};

/// The interest bits a poll may ask for.
const INTEREST_BITS: u32 = AA_POLL_READABLE | AA_POLL_WRITABLE;

fn check_interest(what: &str, interest: u32) -> Result<()> {
    if interest & !INTEREST_BITS != 0 {
        return Err(Error::invalid(format!(
            "{what}: unknown interest bits {:#x}",
            interest & !INTEREST_BITS
        )));
    }
    Ok(())
}

impl Reactor {
    /// `poll_new`.
    pub(crate) fn poll_new(
        &self,
        fd: RawFd,
        interest: u32,
        flags: u32,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        check_flags("poll_new", flags, AA_EVF_HIDDEN | AA_EVF_OWNS_FD)?;
        check_interest("poll_new", interest)?;
        let epoch = {
            let mut registry = self.registry.borrow_mut();
            let entry = registry
                .open(fd)
                .map_err(|e| Error::os(format_args!("poll_new: fd {fd}"), &e))?;
            // G7: kept while the poll may hold its epoch without an op.
            entry.polled = true;
            entry.epoch
        };
        let state = State::Poll(PollState {
            fd,
            interest,
            armed: true,
            epoch,
            op: None,
        });
        let ev = self.new_event(AA_EVENT_POLL, flags, callback, None, state);
        if interest != 0 {
            self.arm_watch(&ev, fd, interest);
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// `poll_set_interest`: 0 disarms; anything else (re-)arms and
    /// re-evaluates current readiness.
    pub(crate) fn poll_set_interest(&self, ev: &Rc<Event>, interest: u32) -> Result<()> {
        self.check_open(ev, "poll_set_interest")?;
        check_interest("poll_set_interest", interest)?;
        let (fd, epoch) = match &*ev.state.borrow() {
            State::Poll(p) => (p.fd, p.epoch),
            _ => return Err(Error::invalid("poll_set_interest: event is not a poll")),
        };
        if !self.registry.borrow().is_open(fd, epoch) {
            return Err(Error::new(
                AA_E_CLOSED,
                "poll_set_interest: the descriptor was closed",
            ));
        }
        self.disarm_watch(ev);
        if let State::Poll(p) = &mut *ev.state.borrow_mut() {
            p.interest = interest;
            p.armed = true;
        }
        if interest != 0 {
            self.arm_watch(ev, fd, interest);
        }
        self.touch(ev);
        Ok(())
    }
}
