//! The zombie policy (R-S10, P-18): zombies do not count as active, and
//! once nothing else is left they get the zombie timeout, then they are
//! cancelled.
//!
//! Owns: the set of zombies (O(1) add and remove, `slab`), the policy timer.
//!
//! Rules:
//! - **Z1** A coroutine becomes a zombie only through `dispose_safely` (or
//!   `dispose_after_timeout`), D-18; it leaves the set when it finishes.
//! - **Z2** The timer is armed while the global scope is idle (no active
//!   coroutine anywhere: `global_idle`) and zombies exist; it is disarmed
//!   when something active starts again or the last zombie finishes. It is
//!   a *visible* timer: it keeps the loop alive for at most the timeout, so
//!   zombies waiting for something that never comes are cancelled rather
//!   than reported as a deadlock, and a `delay` inside a zombie cannot keep
//!   the program alive beyond the timeout.
//! - **Z3** When it fires the first time, every zombie is cancelled (cause
//!   [`ZombieTimeout`](crate::CancelCause::ZombieTimeout)) and the timer is
//!   armed again; if zombies still run when it fires the second time, the
//!   runtime forces the shutdown (phase two: stacks unwound), so zombies
//!   that ignore their cancellation cannot keep the program alive.
//!
//! The timeout is [`Builder::zombie_timeout`](crate::Builder::zombie_timeout)
//! (`ASYNC_ZOMBIE_COROUTINE_TIMEOUT`, config `[runtime]
//! zombie_coroutine_timeout`, in ms), 5 s by default as in the RFC's
//! `async.zombie_coroutine_timeout`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use super::run::structure;
use super::scope::state::scope_of;
use crate::core::cancel::cancel_with;
use crate::core::error::{CancelCause, Cancelled};
use crate::core::events::{self, Event};
use crate::core::runtime::{lifecycle, status_text, with_runtime, Runtime, TimerEvent};
use crate::core::slab::Slab;
use crate::core::state::CoroState;

/// The runtime's zombies and policy timer.
pub(crate) struct Zombies {
    set: RefCell<Slab<Rc<CoroState>>>,
    timer: RefCell<Option<TimerEvent>>,
    /// The timer that fired last: its callback may still be on the stack
    /// when it is replaced, so it is dropped only later.
    spent: RefCell<Option<TimerEvent>>,
    /// Z3: how many times the timer fired with zombies left.
    rounds: Cell<u32>,
    /// Z2: the global scope is idle.
    idle: Cell<bool>,
    pub(crate) timeout: Duration,
}

impl Zombies {
    pub(crate) fn new(timeout: Duration) -> Zombies {
        Zombies {
            set: RefCell::new(Slab::new()),
            timer: RefCell::new(None),
            spent: RefCell::new(None),
            rounds: Cell::new(0),
            idle: Cell::new(false),
            timeout,
        }
    }

    /// Drops the timer (teardown, before the reactor goes).
    pub(crate) fn clear(&self) {
        drop(self.timer.borrow_mut().take());
        drop(self.spent.borrow_mut().take());
        drop(std::mem::take(&mut *self.set.borrow_mut()));
    }
}

/// The runtime's zombies.
fn zombies(rt: &Runtime) -> &Zombies {
    &structure(rt).zombies
}

/// Z1: `m` became a zombie.
pub(crate) fn add(m: &Rc<CoroState>) {
    with_runtime(|rt| {
        let key = zombies(rt).set.borrow_mut().insert(m.clone());
        m.with_extra(|x| x.zombie_key = Some(key));
        arm_if_due(rt);
    });
}

/// Z1: a zombie finished.
pub(crate) fn remove(m: &CoroState) {
    let Some(key) = m.with_extra(|x| x.zombie_key.take()) else {
        return;
    };
    with_runtime(|rt| {
        let z = zombies(rt);
        let removed = z.set.borrow_mut().remove(key);
        drop(removed);
        if z.set.borrow().is_empty() {
            drop(z.timer.borrow_mut().take());
            z.rounds.set(0);
        }
    });
}

/// Z2: no active coroutine is left anywhere.
pub(crate) fn global_idle() {
    with_runtime(|rt| {
        zombies(rt).idle.set(true);
        arm_if_due(rt);
    });
}

/// Z2: something active runs again.
pub(crate) fn global_busy() {
    with_runtime(|rt| {
        let z = zombies(rt);
        z.idle.set(false);
        if z.timer.borrow().is_some() {
            drop(z.timer.borrow_mut().take());
            z.rounds.set(0);
        }
    });
}

fn arm_if_due(rt: &Runtime) {
    let z = zombies(rt);
    if !z.idle.get() || z.set.borrow().is_empty() || z.timer.borrow().is_some() {
        return;
    }
    arm(rt);
}

fn arm(rt: &Runtime) {
    let z = zombies(rt);
    let nanos = u64::try_from(z.timeout.as_nanos()).unwrap_or(u64::MAX);
    let timer = rt
        .reactor
        .timer(nanos, Box::new(|_status| fire()))
        .map_err(|s| {
            tracing::error!(
                target: "async_std_api::scope",
                "cannot arm the zombie timer: {}",
                status_text(s)
            )
        })
        .ok();
    *z.timer.borrow_mut() = timer;
}

/// Z3 (inside the reactor's `run_once`).
fn fire() {
    with_runtime(|rt| {
        let z = zombies(rt);
        // The event that called us is this timer: it must outlive this
        // call, so it is parked in `spent` (and the one parked before, a
        // different event, is dropped).
        let fired = z.timer.borrow_mut().take();
        let older = z.spent.replace(fired);
        drop(older);
        let list: Vec<Rc<CoroState>> = z.set.borrow().iter().cloned().collect();
        if list.is_empty() {
            return;
        }
        let round = z.rounds.get() + 1;
        z.rounds.set(round);
        if round == 1 {
            events::emit(Event::ZombiesCancelled {
                zombies: list.iter().map(|m| m.event_ref()).collect(),
                timeout: z.timeout,
            });
            for m in &list {
                let c = Cancelled::of(m.id(), CancelCause::ZombieTimeout, None)
                    .with_origin(scope_of(m).map(|s| s.id), None);
                cancel_with(m, c);
            }
            arm(rt);
        } else {
            events::emit(Event::ZombiesForced { count: list.len() });
            lifecycle::force();
        }
    });
}
