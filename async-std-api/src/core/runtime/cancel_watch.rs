//! The cancellation watchdog (D-1(c)): a cancelled coroutine that has not
//! finished within the cancellation timeout is reported once, as
//! [`Event::StuckInCancellation`], naming it, where it was spawned, where
//! it waits and for what. It is never interrupted: cleanup may block (R-C3);
//! the backstops that end it are the caller's own (a token on
//! `await_after_cancellation`) and the second phase of graceful shutdown.
//!
//! Owns: the list of watched cancellations and one timer.
//!
//! Rules:
//! - **CW1** A coroutine is watched from the moment a cancellation request
//!   for it is recorded (`core::cancel`) until it finishes or is reported;
//!   the list holds it weakly, so a finished coroutine's record is not kept.
//! - **CW2** At most one timer is armed, for the earliest deadline still
//!   watched. It is *hidden* (`AA_EVF_HIDDEN`): it never keeps the loop
//!   alive or hides a deadlock. When it fires, the finished entries are
//!   dropped, the overdue ones reported and dropped, and the timer is armed
//!   again for the next deadline, if any.
//! - **CW3** Nothing is done while the timeout is off, and nothing on a
//!   coroutine's hot paths either way: the cost is one entry per
//!   cancellation.
//!
//! Who touches what: the loop thread only (coroutines and the timer's
//! callback inside the reactor's `run_once`).

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use async_abi::{AA_CORO_SUSPENDED, AA_EVF_HIDDEN};

use super::{with_runtime, Runtime, TimerEvent};
use crate::core::events::{self, CoroutineRef, Event};
use crate::core::state::CoroState;

/// One watched cancellation (CW1).
struct Entry {
    who: Weak<CoroState>,
    since: Instant,
}

/// The runtime's cancellation watchdog.
pub(crate) struct CancelWatch {
    timeout: Option<Duration>,
    entries: RefCell<Vec<Entry>>,
    timer: RefCell<Option<TimerEvent>>,
    /// The timer that fired last: it is still on the stack while its
    /// callback runs, so it is dropped only at the next firing.
    spent: RefCell<Option<TimerEvent>>,
}

impl CancelWatch {
    pub(crate) fn new(timeout: Option<Duration>) -> CancelWatch {
        CancelWatch {
            timeout,
            entries: RefCell::new(Vec::new()),
            timer: RefCell::new(None),
            spent: RefCell::new(None),
        }
    }

    /// Drops the timers (teardown, before the reactor goes).
    pub(crate) fn clear(&self) {
        drop(self.timer.borrow_mut().take());
        drop(self.spent.borrow_mut().take());
        self.entries.borrow_mut().clear();
    }
}

/// CW1: a cancellation of `state` was just recorded.
pub(crate) fn watch(state: &Rc<CoroState>) {
    with_runtime(|rt| {
        let w = &rt.cancel_watch;
        let Some(timeout) = w.timeout else {
            return; // CW3
        };
        w.entries.borrow_mut().push(Entry {
            who: Rc::downgrade(state),
            since: Instant::now(),
        });
        if w.timer.borrow().is_none() {
            arm(rt, timeout);
        }
    });
}

/// CW2: one hidden timer, `after` from now.
fn arm(rt: &Runtime, after: Duration) {
    let nanos = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
    let timer = rt
        .reactor
        .timer_with_flags(nanos, AA_EVF_HIDDEN, Box::new(|_status| fire()))
        .ok();
    *rt.cancel_watch.timer.borrow_mut() = timer;
}

/// CW2 (inside the reactor's `run_once`).
fn fire() {
    with_runtime(|rt| {
        let w = &rt.cancel_watch;
        let Some(timeout) = w.timeout else {
            return;
        };
        let fired = w.timer.borrow_mut().take();
        drop(w.spent.replace(fired));
        let now = Instant::now();
        let mut overdue = Vec::new();
        let mut next: Option<Duration> = None;
        w.entries.borrow_mut().retain(|e| {
            let Some(state) = e.who.upgrade() else {
                return false;
            };
            if state.is_finished() {
                return false;
            }
            let ran = now.duration_since(e.since);
            if ran >= timeout {
                overdue.push((state, ran));
                return false;
            }
            let left = timeout - ran;
            next = Some(next.map_or(left, |n| n.min(left)));
            true
        });
        // Reported outside the borrow: a handler may cancel more.
        for (state, since) in overdue {
            events::emit(stuck(rt, &state, since));
        }
        if let Some(after) = next {
            if w.timer.borrow().is_none() {
                arm(rt, after);
            }
        }
    });
}

/// What is known of a coroutine stuck in its cancellation.
fn stuck(rt: &Runtime, state: &CoroState, since: Duration) -> Event {
    let suspended = rt.sched.coroutine_state(state) == Some(AA_CORO_SUSPENDED);
    Event::StuckInCancellation {
        coroutine: CoroutineRef {
            id: state.id(),
            spawned_at: state.location,
        },
        suspended_at: if suspended {
            state.last_suspend.get()
        } else {
            None
        },
        waiting_for: if suspended {
            rt.sched.awaiting_info(state)
        } else {
            None
        },
        since,
    }
}
