//! Readiness watches (`poll_new`, `poll_set_interest`): edge-style and
//! persistent, on the descriptor's shared registration.
//!
//! mio registrations are edge-triggered, which is the ABI's poll semantics:
//! a callback when the descriptor *becomes* ready for an interest bit. Two
//! places re-evaluate readiness on purpose, with `EPOLL_CTL_MOD`:
//! `poll_set_interest` (the ABI says so), and `poll_new` on a descriptor
//! that is already registered (for requests or another poll), whose
//! current readiness was reported before this watch existed.
//!
//! A poll's state is [`crate::event::PollState`]; it stays in its
//! descriptor entry's `polls` list (registry invariant G4) until it is
//! closed or disposed, or the descriptor is closed through the reactor.

use std::mem;
use std::os::fd::RawFd;
use std::rc::Rc;

use async_abi::{AA_EVENT_POLL, AA_EVF_HIDDEN, AA_EVF_OWNS_FD, AA_POLL_ERROR, AA_POLL_HUP};
use async_abi::{AA_POLL_READABLE, AA_POLL_WRITABLE};
use mio::Interest;

use crate::error::{Error, Result};
use crate::event::{Event, PollState, State};
use crate::ffi::HostCallback;
use crate::reactor::{check_flags, Reactor};
use crate::registry::Key;

/// The interest bits a poll may ask for.
const INTEREST_BITS: u32 = AA_POLL_READABLE | AA_POLL_WRITABLE;

fn check_interest(what: &str, interest: u32) -> Result<Option<Interest>> {
    if interest & !INTEREST_BITS != 0 {
        return Err(Error::invalid(format!(
            "{what}: unknown interest bits {:#x}",
            interest & !INTEREST_BITS
        )));
    }
    Ok(
        match (
            interest & AA_POLL_READABLE != 0,
            interest & AA_POLL_WRITABLE != 0,
        ) {
            (true, true) => Some(Interest::READABLE | Interest::WRITABLE),
            (true, false) => Some(Interest::READABLE),
            (false, true) => Some(Interest::WRITABLE),
            (false, false) => None,
        },
    )
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
        let want = check_interest("poll_new", interest)?;
        let key = self
            .registry
            .borrow_mut()
            .entry_for(fd)
            .map_err(|e| Error::os(format_args!("poll_new: fd {fd}"), &e))?;
        if let Some(want) = want {
            self.register(key, want, "poll_new")?;
        }
        let state = State::Poll(PollState {
            fd,
            key: Some(key),
            interest,
            armed: true,
        });
        let ev = self.new_event(AA_EVENT_POLL, flags, callback, None, state);
        if let Some(entry) = self.registry.borrow_mut().get_mut(key) {
            entry.polls.push(Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// `poll_set_interest`: 0 disarms; anything else (re-)arms and
    /// re-evaluates current readiness.
    pub(crate) fn poll_set_interest(&self, ev: &Rc<Event>, interest: u32) -> Result<()> {
        self.check_open(ev, "poll_set_interest")?;
        let want = check_interest("poll_set_interest", interest)?;
        let key = match &*ev.state.borrow() {
            State::Poll(p) => p.key,
            _ => return Err(Error::invalid("poll_set_interest: event is not a poll")),
        };
        let Some(key) = key else {
            return Err(Error::new(
                async_abi::AA_E_CLOSED,
                "poll_set_interest: the descriptor was closed",
            ));
        };
        if let Some(want) = want {
            self.register(key, want, "poll_set_interest")?;
        }
        if let State::Poll(p) = &mut *ev.state.borrow_mut() {
            p.interest = interest;
            p.armed = true;
        }
        self.touch(ev);
        Ok(())
    }

    /// Registers (or re-registers, re-evaluating readiness) for `want`. A
    /// descriptor epoll refuses (a regular file) is an error for a poll.
    fn register(&self, key: Key, want: Interest, what: &str) -> Result<()> {
        self.with_mio(|mio| {
            self.registry
                .borrow_mut()
                .ensure(mio, key, want, true, false)
        })
        .map_err(|e| Error::os(format_args!("{what}: register"), &e))
    }

    /// Takes a poll out of its descriptor's list (close, dispose) and
    /// returns its descriptor if that was still open through the reactor.
    pub(crate) fn withdraw_poll(&self, ev: &Rc<Event>) -> Option<RawFd> {
        let (fd, key) = match &mut *ev.state.borrow_mut() {
            State::Poll(p) => {
                p.armed = false;
                (p.fd, p.key.take()?)
            }
            _ => return None,
        };
        if let Some(entry) = self.registry.borrow_mut().get_mut(key) {
            entry.polls.retain(|p| !Rc::ptr_eq(p, ev));
        }
        Some(fd)
    }

    /// Calls the armed polls of `key` whose interest matches `bits` (plus
    /// error and hang-up, always reported), one at a time with no borrow
    /// held (R1). Returns the number of callbacks run.
    pub(crate) fn notify_polls(&self, key: Key, bits: u32) -> i32 {
        // The list as it was when the report came (callbacks may add or
        // remove polls meanwhile): the usual single poll as itself, more in
        // a vector kept for the purpose, so a report allocates nothing.
        let mut polls = {
            let registry = self.registry.borrow();
            match registry.get(key).map(|entry| &entry.polls[..]) {
                Some([only]) => {
                    let only = Rc::clone(only);
                    drop(registry);
                    return i32::from(self.notify_poll(&only, key, bits));
                }
                Some(many) if !many.is_empty() => {
                    let mut polls = mem::take(&mut *self.poll_scratch.borrow_mut());
                    polls.extend(many.iter().cloned());
                    polls
                }
                _ => return 0,
            }
        };
        let mut count = 0;
        for ev in polls.drain(..) {
            count += i32::from(self.notify_poll(&ev, key, bits));
        }
        *self.poll_scratch.borrow_mut() = polls;
        count
    }

    /// Calls one poll of `key` if it is armed for any of `bits` (plus error
    /// and hang-up, always reported). Returns whether it was called.
    pub(crate) fn notify_poll(&self, ev: &Rc<Event>, key: Key, bits: u32) -> bool {
        let ready = match &*ev.state.borrow() {
            State::Poll(p) if p.armed && p.interest != 0 && p.key == Some(key) => {
                bits & (p.interest | AA_POLL_ERROR | AA_POLL_HUP)
            }
            _ => 0,
        };
        if ready != 0 && ev.deliverable() {
            ev.callback.notify(&**ev, 0, i64::from(ready));
            return true;
        }
        false
    }
}
