//! The tick and the root loop: who runs next, and where the reactor is
//! polled.
//!
//! # One tick (a coroutine C on fiber F calls `suspend`)
//!
//! ```text
//!  C on F: suspend(wait)
//!   |  AA_WAIT_YIELD in wait.flags: enqueue(C, 0) first (as the host would)
//!   |  C.state = SUSPENDED (QUEUED if it was enqueued while running)
//!   |  LEAVE handlers of C              (current = C, may not suspend)
//!   |  current = NULL
//!   |  next_runnable():
//!   |    drain microtasks               (FIFO, may enqueue / defer more)
//!   |    queue non-empty? count; every 61st: run_once(r, 0), drain again
//!   |      (chaos: every busy tick also makes a random pick the head)
//!   |    pop the head
//!   |
//!   +-- popped C itself ------------------------> (no switch) ---------+
//!   +-- popped D (parked on G, or fresh on an                          |
//!   |   idle/new fiber G) --> switch F -> G     ... D runs ...         |
//!   +-- nothing --> switch F -> root: root loop (below) ...            |
//!                                                                      v
//!   control is back on F (someone popped C and switched to F)  <-------+
//!   enter(C): state RUNNING, current = C, switches += 1, ENTER handlers
//!   return C's status (the status of the enqueue that resumed it)
//!
//!  root loop (the thread's stack inside `run`):
//!   loop: next_runnable() -> switch root -> its fiber
//!         no live coroutine -> return
//!         in shutdown: resume the coroutines that still owe its reason
//!         reactor alive() > 0 -> run_once(r, -1) (block)
//!         else run_once(r, 0); still nothing -> shutdown round or deadlock
//! ```
//!
//! # Why this order
//!
//! - LEAVE before microtasks: a LEAVE handler saves per-coroutine state
//!   (output buffers) before anything else runs on the thread.
//! - `current` is NULL while microtasks and reactor callbacks run, so the
//!   result of `current()` in them does not depend on which stack drains
//!   them, and none of them can suspend (scheduler SR2).
//! - Microtasks drain before every pop, and again after a poll, so a
//!   coroutine enqueued by a microtask or a callback is in the queue before
//!   the pick, in the order it was enqueued.
//! - Fairness: the reactor is polled without blocking once every 61 ticks
//!   that found the queue non-empty (and never otherwise while it is
//!   non-empty), so a busy queue, even one coroutine yielding to itself,
//!   cannot starve I/O; 61 is prime so it does not resonate with loops of
//!   coroutines of a round size. While those polls find nothing, one is
//!   skipped if the last came less than the `poll_gap_us` option ago (50 µs
//!   by default): a poll is a system call, worth some ten switches, and
//!   coroutines that only yield reach the 61st tick every microsecond or
//!   so. I/O readiness thus reaches a busy queue within 61 ticks, or the
//!   gap and 61 ticks after an idle poll. Only the root blocks in the
//!   reactor.
//! - Chaos costs FIFO nothing: the busy-tick counter is compared with a
//!   per-scheduler threshold (`slow_tick_at`) instead of the constant 61,
//!   the same single compare. Under FIFO the threshold is 61 and the slow
//!   path is the poll; under chaos it is 0, so every busy tick takes the
//!   slow path, which polls every 61st time as FIFO does and then makes a
//!   random pick the queue's head (`RunQueue::chaos_pick`). The pop itself
//!   is the same for both policies. The pick comes after the poll and its
//!   microtasks, so coroutines they enqueue are candidates at once.
//! - Popping itself returns without a switch: a yield with nothing else
//!   runnable costs a tick, not two context switches. ENTER fires again, so
//!   LEAVE and ENTER stay paired.
//! - A finished coroutine's fiber runs the next coroutine if it has never
//!   started (and fits its stack): no switch at all (`after_finish`).

use async_abi::{AaStatus, AaWaitInfo, AA_E_INVALID, AA_OK, AA_SWITCH_ENTER, AA_SWITCH_FINISH};
use async_abi::{AA_E_NOMEM, AA_SWITCH_LEAVE};

use crate::coroutine::{self, CoroPtr, State};
use crate::fiber::FiberPtr;
use crate::scheduler::{Counters, Scheduler};
use crate::switch::{die, switch, Ctx};
use crate::{deadlock, ffi, shutdown};

/// Ticks with a non-empty queue between two non-blocking reactor polls.
pub(crate) const POLL_EVERY: u32 = 61;

/// The `suspend` slot: see the module timeline. `yield_first` is
/// `AA_WAIT_YIELD`: enqueue the caller with status 0 first, exactly as an
/// `enqueue(s, current, 0)` right before this call would (so even when the
/// suspension itself is then refused).
#[inline]
pub(crate) fn suspend(s: &Scheduler, wait: *const AaWaitInfo, yield_first: bool) -> AaStatus {
    let Some(c) = s.current.get() else {
        return AA_E_INVALID;
    };
    if s.no_suspend.get() != 0 {
        if yield_first {
            // SR2: `current` is RUNNING.
            let _ = s.enqueue_running(c, AA_OK);
        }
        return AA_E_INVALID;
    }
    let co = c.get();
    let Some(me) = co.fiber.get() else {
        die("the current coroutine has no fiber")
    };
    co.wait.set(wait);
    let queued = co.in_queue.replace(false);
    if yield_first && !queued {
        // The yield's enqueue (`enqueue_running`'s push) folded into the
        // state change: RUNNING and not in the queue, so it goes in with
        // status 0, by priority, as `Enqueue::Push` does.
        co.status.set(AA_OK);
        s.push_by_priority(c);
    }
    co.state.set(if queued || yield_first {
        State::Queued
    } else {
        State::Suspended
    });
    c.fire_handlers(s, AA_SWITCH_LEAVE);
    s.current.set(None);
    match next_runnable(s) {
        Some(n) if n == c => {}
        Some(n) => switch(s, Ctx::Fiber(me), target_of(s, n)),
        None => switch(s, Ctx::Fiber(me), Ctx::Root),
    }
    enter(s, c);
    co.status.replace(0)
}

/// Runs coroutine `c`'s entry on fiber `f`, then finishes it (C1, C2).
#[inline(always)]
pub(crate) fn run_coroutine(s: &Scheduler, f: FiberPtr, c: CoroPtr) {
    let co = c.get();
    co.started.set(true);
    co.fiber.set(Some(f));
    f.get().occupant.set(Some(c));
    enter(s, c);
    let status = co.status.replace(0);
    ffi::call_entry(co.entry, co.arg, status);
    co.state.set(State::Finished);
    c.fire_handlers(s, AA_SWITCH_FINISH);
    s.current.set(None);
    // F-I6: before the record can be freed.
    f.get().occupant.set(None);
    coroutine::release(c, &s.live, &s.queue, &s.records);
    Counters::bump(&s.counters.finished);
}

/// After fiber `f`'s coroutine finished: assigns the next coroutine to `f`
/// if it has never started (returns `None`, no switch), or parks `f` and
/// switches away (returns `None` once `f` is given a coroutine again), or,
/// when `f` cannot be parked, returns where to go as it retires.
///
/// Inlined into the fiber loop, its only caller: control comes back to a
/// parked fiber inside this function's switch, and the context engine's
/// jump leaves the CPU's return-stack predictor one entry out of step, so
/// every `ret` between the landing and the next call mispredicts; with no
/// return on the way back into the loop there is none.
#[inline(always)]
pub(crate) fn after_finish(s: &Scheduler, f: FiberPtr) -> Option<Ctx> {
    let to = match next_runnable(s) {
        Some(n) if !n.get().started.get() && n.get().stack_size <= f.get().stack.usable => {
            f.get().coro.set(Some(n));
            Counters::bump(&s.counters.inline_starts);
            return None;
        }
        Some(n) => target_of(s, n),
        None => Ctx::Root,
    };
    if !s.fibers.park(f) {
        return Some(to);
    }
    // F-I3: only references and Copy values are live here.
    switch(s, Ctx::Fiber(f), to);
    None
}

/// The root loop (`run`'s body): see the module timeline.
pub(crate) fn run_loop(s: &Scheduler) -> AaStatus {
    loop {
        if let Some(err) = s.pending_error.take() {
            return err;
        }
        if let Some(n) = next_runnable(s) {
            match target_of(s, n) {
                Ctx::Root => {} // no stack for it: pending_error is set
                to => switch(s, Ctx::Root, to),
            }
            continue;
        }
        if let Some(err) = s.pending_error.take() {
            return err; // a failed fairness poll
        }
        if s.live.len() == 0 {
            return AA_OK;
        }
        if s.shutdown.get().is_some() && shutdown::deliver_owed(s) {
            continue;
        }
        if s.reactor.alive() > 0 {
            let rc = s.reactor.run_once(-1);
            if rc < 0 {
                return s.fail(rc, run_once_failed(rc));
            }
            continue;
        }
        // Nothing runnable and no visible event: one non-blocking look
        // (callbacks of closed events may still be due), then decide.
        let rc = s.reactor.run_once(0);
        if rc < 0 {
            return s.fail(rc, run_once_failed(rc));
        }
        if rc > 0 || !s.queue.is_empty() || !s.microtasks.is_empty() {
            continue;
        }
        let resolved = match s.shutdown.get() {
            Some(reason) => shutdown::idle_round(s, reason),
            None => deadlock::resolve(s),
        };
        if let Err(status) = resolved {
            return status;
        }
    }
}

/// Drains microtasks, polls the reactor every [`POLL_EVERY`] busy ticks,
/// and pops the next coroutine (under chaos, a random pick: `slow_tick`).
#[inline]
fn next_runnable(s: &Scheduler) -> Option<CoroPtr> {
    s.microtasks.drain();
    if !s.queue.is_empty() {
        let ticks = s.ticks.get() + 1;
        if ticks >= s.slow_tick_at {
            if !slow_tick(s, ticks) {
                // The reactor failed: back to the root, which returns the
                // error (a failed `run_once` is fatal on every path).
                return None;
            }
        } else {
            s.ticks.set(ticks);
        }
    }
    s.queue.pop()
}

/// The busy tick's slow path: the non-blocking reactor poll of every
/// [`POLL_EVERY`]th busy tick, and under chaos (which takes this path on
/// every busy tick) the random pick that makes the queue's head. False if
/// the reactor's poll failed (`pending_error` is set).
#[cold]
#[inline(never)]
fn slow_tick(s: &Scheduler, ticks: u32) -> bool {
    if ticks >= POLL_EVERY {
        if !fairness_poll(s) {
            return false;
        }
    } else {
        s.ticks.set(ticks);
    }
    if s.slow_tick_at == 0 {
        // chaos X-I5: no coroutine runs while the pick fills the bags.
        debug_assert!(s.current.get().is_none(), "a pick while a coroutine runs");
        s.queue.chaos_pick();
    }
    true
}

/// The message for a failed `run_once`: the status by name (the host adds
/// the reactor's own message).
#[cold]
fn run_once_failed(rc: AaStatus) -> String {
    match async_abi::status_name(rc) {
        Some(name) => format!("reactor run_once failed with {name} ({rc})"),
        None => format!("reactor run_once failed with status {rc}"),
    }
}

/// The non-blocking reactor poll of every [`POLL_EVERY`]th busy tick.
/// A failure is fatal to the run, as on the idle path: it is recorded in
/// `pending_error` for the root loop to return, and this returns false.
#[inline(always)]
fn fairness_poll(s: &Scheduler) -> bool {
    s.ticks.set(0);
    let now = std::time::Instant::now();
    if s.poll_idle.get() && now.saturating_duration_since(s.last_poll.get()) < s.poll_gap {
        return true;
    }
    s.last_poll.set(now);
    Counters::bump(&s.counters.tick_polls);
    let rc = s.reactor.run_once(0);
    if rc < 0 {
        let msg = run_once_failed(rc);
        s.pending_error.set(Some(s.fail(rc, msg)));
        return false;
    }
    s.poll_idle.set(rc == 0);
    s.microtasks.drain();
    true
}

/// Where coroutine `n` runs: its own fiber if it started, else an idle or
/// new fiber assigned to it. If no stack can be mapped, `n` goes back to the
/// head of the queue, `run` will return `AA_E_NOMEM`, and this returns the
/// root.
#[inline]
fn target_of(s: &Scheduler, n: CoroPtr) -> Ctx {
    match n.get().fiber.get() {
        Some(f) => Ctx::Fiber(f),
        None => fresh_fiber(s, n),
    }
}

/// `target_of` for a coroutine that never started: an idle or new fiber.
#[inline(never)]
fn fresh_fiber(s: &Scheduler, n: CoroPtr) -> Ctx {
    let co = n.get();
    let fiber = match s.fibers.take(co.stack_size) {
        Some(f) => f,
        None => match s.fibers.create(s, co.stack_size) {
            Ok(f) => f,
            Err(e) => {
                s.queue.push_front(n);
                let msg = format!(
                    "cannot map a {} byte stack for coroutine {}: {e}",
                    co.stack_size, co.id
                );
                s.pending_error.set(Some(s.fail(AA_E_NOMEM, msg)));
                return Ctx::Root;
            }
        },
    };
    fiber.get().coro.set(Some(n));
    Ctx::Fiber(fiber)
}

/// `c` receives control: RUNNING, current, counted, ENTER handlers.
#[inline]
fn enter(s: &Scheduler, c: CoroPtr) {
    let co = c.get();
    co.state.set(State::Running);
    co.wait.set(std::ptr::null());
    s.current.set(Some(c));
    co.switches.set(co.switches.get() + 1);
    c.fire_handlers(s, AA_SWITCH_ENTER);
}
