//! Timers: arming, re-arming and firing, over a user-space heap of
//! deadlines with one kernel wait for the nearest.
//!
//! No timer is a kernel object: the kit's heap (`reactor_sdk::timer`) orders
//! the deadlines,
//! and each loop iteration passes the nearest one to its single
//! `io_uring_enter` as the wait's timeout (`IORING_ENTER_EXT_ARG`), so a
//! thousand timers cost no submission and no completion. (The reference
//! implementation armed one `IORING_OP_TIMEOUT` per timer and measured tens
//! of milliseconds of lateness.)
//!
//! A deadline is `now + first_ns` on the reactor's clock, refreshed right
//! before it is computed: the cached clock may be stale after a long burst
//! of CPU work, and a deadline computed from it would fire early. A
//! periodic timer re-arms from its previous deadline, not from when its
//! callback ran, so it does not drift; if the loop fell behind by whole
//! periods, the missed ones are skipped, not replayed.
//!
//! The timer's own state is [`crate::event::TimerState`].

/// The deadlines of every armed timer.
pub(crate) type TimerHeap = reactor_sdk::timer::TimerHeap<crate::event::Event>;

use std::rc::Rc;

use reactor_sdk::timer::{fire_due, next_deadline};

use async_abi::{AA_EVENT_TIMER, AA_EVF_HIDDEN};

use crate::error::{Error, Result};
use crate::event::{Event, State, TimerState};
use crate::ffi::HostCallback;
use crate::reactor::{check_flags, Reactor};

impl Reactor {
    /// `timer_new`: arms a timer `first_ns` from a freshly read clock.
    pub(crate) fn timer_new(
        &self,
        first_ns: u64,
        repeat_ns: u64,
        flags: u32,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        check_flags("timer_new", flags, AA_EVF_HIDDEN)?;
        let deadline = self.refresh_clock().saturating_add(first_ns);
        let state = State::Timer(TimerState {
            armed: true,
            deadline,
            repeat: repeat_ns,
            generation: 0,
        });
        let ev = self.new_event(AA_EVENT_TIMER, flags, callback, None, state);
        self.timers.borrow_mut().push(&ev, deadline, 0);
        self.touch(&ev);
        Ok(ev)
    }

    /// `timer_rearm`: replaces the pending deadline, if any, without a
    /// callback for it.
    pub(crate) fn timer_rearm(&self, ev: &Rc<Event>, first_ns: u64, repeat_ns: u64) -> Result<()> {
        self.check_open(ev, "timer_rearm")?;
        let deadline = self.refresh_clock().saturating_add(first_ns);
        let (was_armed, generation) = {
            let mut state = ev.state.borrow_mut();
            let State::Timer(t) = &mut *state else {
                return Err(Error::invalid("timer_rearm: event is not a timer"));
            };
            let was_armed = t.armed;
            t.armed = true;
            t.deadline = deadline;
            t.repeat = repeat_ns;
            t.generation += 1;
            (was_armed, t.generation)
        };
        let mut timers = self.timers.borrow_mut();
        timers.push(ev, deadline, generation);
        if was_armed {
            timers.note_stale();
        }
        drop(timers);
        self.touch(ev);
        Ok(())
    }

    /// Stops a timer's pending deadline, if any; returns whether it had one.
    pub(crate) fn timer_disarm(&self, ev: &Event) -> bool {
        let was_armed = match &mut *ev.state.borrow_mut() {
            State::Timer(t) if t.armed => {
                t.armed = false;
                t.generation += 1;
                true
            }
            _ => false,
        };
        if was_armed {
            self.timers.borrow_mut().note_stale();
        }
        self.touch(ev);
        was_armed
    }

    /// The nearest armed deadline, if any.
    pub(crate) fn next_timer(&self) -> Option<u64> {
        self.timers.borrow_mut().next_deadline()
    }

    /// Fires every timer due at `now` that was armed at or before `horizon`
    /// (reactor invariant R6), one callback at a time with no borrow held
    /// (R1). Returns the number of callbacks run.
    pub(crate) fn run_timers(&self, now: u64, horizon: u64) -> i32 {
        let advance = |ev: &Event, deadline: u64| match &mut *ev.state.borrow_mut() {
            State::Timer(t) if t.repeat > 0 => {
                t.deadline = next_deadline(deadline, t.repeat, now);
                t.generation += 1;
                Some((t.deadline, t.generation))
            }
            State::Timer(t) => {
                t.armed = false;
                None
            }
            _ => None,
        };
        fire_due(&self.timers, now, horizon, advance, |ev| self.touch(ev))
    }
}
