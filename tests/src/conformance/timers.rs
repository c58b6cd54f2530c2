//! Tier: timers. Deadline order, one-shot and periodic timers, re-arm,
//! cancel (the reason delivered once, from a later `run_once`), a fresh
//! clock before arming, and a blocking `run_once` cut short by the nearest
//! timer.

use std::time::{Duration, Instant};

use crate::{ensure, ensure_eq};
use async_abi::*;

use super::harness::{Alive, Loop, Rec};
use super::plugin::Reactor;
use super::rules;

const MS: u64 = 1_000_000;
const FAR: u64 = 3_600_000 * MS;
const REASON: AaStatus = -4242;

/// Lets `ns` pass before the first `run_once`, so every timer armed so far
/// is due in the same iteration. Not synchronisation: it turns an ordering
/// bug that only shows under load (several timers due at once) into one
/// that shows every time.
fn all_due(ns: u64) {
    std::thread::sleep(Duration::from_nanos(ns));
}

fn fired_timers(log: &[Rec]) -> usize {
    log.iter().filter(|r| matches!(r, Rec::Timer(_, 0))).count()
}

/// Checks that timers armed out of order fire in deadline order, also when
/// all are due in one iteration: the case waits past the last deadline
/// before the first `run_once`, so a reactor that runs due timers in
/// arming order fails every time, not only under load.
pub fn timers_fire_in_deadline_order(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    // 20 ms apart: a reactor may read a fresh clock at each arming (R-TIMER-1
    // measures from "the loop clock at its arming"), so the case must not
    // fail when the kit's own process is preempted between two armings on
    // a loaded machine (1 ms apart, a 2 ms preemption reordered them).
    lp.timer("c", 60 * MS, 0, 0);
    lp.timer("a", 20 * MS, 0, 0);
    lp.timer("b", 40 * MS, 0, 0);
    all_due(80 * MS);
    lp.run_until("three timers", |log| log.len() == 3);
    ensure_eq!(
        "R-TIMER-1",
        lp.log(),
        vec![Rec::Timer("a", 0), Rec::Timer("b", 0), Rec::Timer("c", 0)],
        "timer_new(one-shot, flags 0) of c (60 ms), a (20 ms), b (40 ms) in that order, 80 ms \
         of sleep so all are due, then run_once(100 ms) until three callbacks: the callbacks"
    );
    lp.finish();
}

/// Checks that timers of equal duration fire in the order they were armed,
/// all due in one iteration (the case waits past their deadline first).
pub fn equal_durations_fire_in_arming_order(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    for tag in ["t1", "t2", "t3", "t4"] {
        lp.timer(tag, MS, 0, 0);
    }
    all_due(3 * MS);
    lp.run_until("four timers", |log| log.len() == 4);
    let order: Vec<_> = lp.log().iter().map(Rec::tag).collect();
    ensure_eq!(
        "R-TIMER-2",
        order,
        ["t1", "t2", "t3", "t4"],
        "timer_new(one-shot 1 ms, flags 0) of t1, t2, t3, t4 in that order, 3 ms of sleep so \
         all are due, then run_once(100 ms) until four callbacks: the order of the callbacks"
    );
    lp.finish();
}

/// Checks that a one-shot timer fires exactly once, then has nothing to
/// cancel.
pub fn one_shot_fires_once_then_is_inactive(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, 0, 0);
    lp.run_until_tag("t");
    lp.run_once(5 * MS as i64);
    lp.run_once(0);
    let did = "timer_new(one-shot 1 ms, flags 0), run_once until it fired, run_once(5 ms), \
               run_once(0)";
    ensure_eq!(
        "R-TIMER-3",
        lp.log(),
        vec![Rec::Timer("t", 0)],
        "{did}: the callbacks"
    );
    ensure_eq!(
        "R-ERR-3",
        lp.cancel(t, REASON),
        AA_E_INVALID,
        "{did}, then cancel(the fired timer, reason {REASON}): its status"
    );
    lp.run_once(0);
    ensure_eq!(
        "R-ERR-3",
        lp.log(),
        vec![Rec::Timer("t", 0)],
        "{did}, cancel(the fired timer, reason {REASON}), run_once(0): the callbacks"
    );
    lp.finish();
}

/// Checks that a periodic timer keeps firing until cancelled, then gets the
/// reason exactly once and stops.
pub fn periodic_fires_until_cancelled(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("p", MS, 2 * MS, 0);
    lp.run_until("three periods", |log| fired_timers(log) == 3);
    let did = "timer_new(1 ms, repeat 2 ms, flags 0), run_once until three periods fired, \
               cancel(the timer, reason -4242)";
    ensure_eq!("R-EV-1", lp.cancel(t, REASON), AA_OK, "{did}: its status");
    lp.run_until("the cancellation", |log| {
        log.contains(&Rec::Timer("p", REASON))
    });
    lp.run_once(10 * MS as i64);
    let log = lp.log();
    ensure_eq!(
        "R-TIMER-3",
        fired_timers(&log),
        3,
        "{did}, run_once until the reason came, run_once(10 ms): the periods fired (AA_OK \
         callbacks) in the log {log:?}"
    );
    ensure_eq!(
        "R-EV-1",
        log.iter()
            .filter(|r| **r == Rec::Timer("p", REASON))
            .count(),
        1,
        "{did}, run_once until the reason came, run_once(10 ms): callbacks with the reason \
         in the log {log:?}"
    );
    lp.finish();
}

/// Checks that re-arming replaces the pending deadline with no callback for
/// the old one.
pub fn rearm_replaces_the_deadline_without_a_callback(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", FAR, 0, 0);
    let did = "timer_new(one-shot 1 hour, flags 0), timer_rearm(1 ms, repeat 0)";
    ensure_eq!("R-TIMER-4", lp.rearm(t, MS, 0), AA_OK, "{did}: its status");
    lp.run_until_tag("t");
    lp.run_once(5 * MS as i64);
    ensure_eq!(
        "R-TIMER-4",
        lp.log(),
        vec![Rec::Timer("t", 0)],
        "{did}, run_once until it fired, run_once(5 ms): the callbacks"
    );
    lp.finish();
}

/// Checks that a one-shot timer that fired can be re-armed and fires again.
pub fn rearm_restarts_a_fired_one_shot(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, 0, 0);
    lp.run_until_tag("t");
    let did = "timer_new(one-shot 1 ms, flags 0), run_once until it fired";
    ensure_eq!("R-TIMER-4", lp.alive(), Alive(0), "{did}: alive()");
    ensure_eq!(
        "R-TIMER-4",
        lp.rearm(t, MS, 0),
        AA_OK,
        "{did}, timer_rearm(1 ms, repeat 0): its status"
    );
    ensure_eq!(
        "R-TIMER-4",
        lp.alive(),
        Alive(1),
        "{did}, timer_rearm(1 ms, repeat 0): alive()"
    );
    lp.run_until("the second firing", |log| log.len() == 2);
    ensure_eq!(
        "R-TIMER-4",
        lp.log(),
        vec![Rec::Timer("t", 0), Rec::Timer("t", 0)],
        "{did}, timer_rearm(1 ms, repeat 0), run_once until a second callback: the callbacks"
    );
    lp.finish();
}

/// Checks that `cancel` calls nothing itself, that the next `run_once`
/// delivers the reason exactly once, and that a second cancel finds nothing
/// pending.
pub fn cancel_reason_is_delivered_once_from_a_later_run_once(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", FAR, 0, 0);
    let did = "timer_new(one-shot 1 hour, flags 0), cancel(the timer, reason -4242)";
    ensure_eq!("R-EV-1", lp.cancel(t, REASON), AA_OK, "{did}: its status");
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![],
        "{did}: the callbacks before any run_once (cancel calls nothing itself)"
    );
    lp.run_until_tag("t");
    lp.run_once(0);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![Rec::Timer("t", REASON)],
        "{did}, run_once until a callback, run_once(0): the callbacks"
    );
    ensure_eq!(
        "R-EV-1",
        lp.cancel(t, REASON),
        AA_E_INVALID,
        "{did}, the reason delivered, then a second cancel(reason -4242): its status"
    );
    lp.finish();
}

/// Checks that a cancel made inside a callback is delivered by a later
/// iteration, not by the one running.
pub fn cancel_inside_a_callback_is_delivered_by_a_later_iteration(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let victim = lp.timer("victim", FAR, 0, 0);
    let a = lp.timer("a", 0, 0, 0);
    lp.on(a, move |lp, _| {
        ensure_eq!(
            "R-EV-1",
            lp.cancel(victim, REASON),
            AA_OK,
            "inside the callback of timer a (0 ms): cancel(timer victim of 1 hour, reason \
             -4242): its status"
        )
    });
    lp.run_until_tag("a");
    lp.mark("iteration");
    lp.run_until_tag("victim");
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![
            Rec::Timer("a", 0),
            Rec::Mark("iteration"),
            Rec::Timer("victim", REASON)
        ],
        "timer_new(victim, 1 hour) and (a, 0 ms), a's callback cancels victim with reason \
         -4242; run_once until a ran, a mark, run_once until victim's callback: the log"
    );
    lp.finish();
}

/// Checks that a timer armed after 50 ms of CPU work (with no iteration in
/// between) waits its full duration from the arming, not from the last
/// iteration: the reactor refreshes its clock before arming.
pub fn timer_armed_after_cpu_work_waits_its_full_duration(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    lp.run_once(0);
    let busy = Instant::now();
    let mut x = 0u64;
    while busy.elapsed() < Duration::from_millis(50) {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
    let armed = Instant::now();
    lp.timer("t", 100 * MS, 0, 0);
    lp.run_until_tag("t");
    let waited = armed.elapsed();
    ensure!("R-TIMER-5", waited >= Duration::from_millis(100);
        did: "run_once(0), 50 ms of CPU work with no iteration, timer_new(one-shot 100 ms, \
              flags 0), run_once until it fired",
        wants: "the callback at least 100 ms after timer_new returned",
        got: format!("the callback {waited:?} after timer_new returned"));
    lp.finish();
}

/// Checks that one `run_once(-1)` returns once the nearest timer is due,
/// having run its callback in that same call, without waiting for farther
/// ones.
pub fn blocking_run_once_returns_when_the_nearest_timer_is_due(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    lp.timer("far", FAR, 0, 0);
    let start = Instant::now();
    lp.timer("near", 20 * MS, 0, 0);
    // One call: a timer that falls due during the wait fires in the same
    // run_once, which returns only once it ran.
    lp.run_once(-1);
    let waited = start.elapsed();
    let did = "timer_new(one-shot 1 hour) and (one-shot 20 ms), then one run_once(-1)";
    ensure_eq!(
        "R-LOOP-5",
        lp.log(),
        vec![Rec::Timer("near", 0)],
        "{did}: the callbacks when it returned"
    );
    ensure!("R-LOOP-5", waited >= Duration::from_millis(20);
        did: did,
        wants: "run_once returning once the 20 ms timer was due, not before",
        got: format!("returned after {waited:?}"));
    ensure!("R-LOOP-5", waited < Duration::from_secs(5);
        did: did,
        wants: "run_once returning once the 20 ms timer was due (the kit allows 5 s)",
        got: format!("returned after {waited:?}"));
    lp.finish();
}

/// Checks that disposing an armed timer stops it silently.
pub fn dispose_of_an_armed_timer_stops_it(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, 0, 0);
    let witness = lp.timer("witness", 10 * MS, 0, 0);
    lp.dispose(t);
    let did = "timer_new(t, one-shot 1 ms) and (witness, one-shot 10 ms), dispose(t)";
    ensure_eq!(
        "R-TIMER-6",
        lp.alive(),
        Alive(1),
        "{did}: alive() (only the witness)"
    );
    lp.run_until_tag("witness");
    ensure_eq!(
        "R-TIMER-6",
        lp.log(),
        vec![Rec::Timer("witness", 0)],
        "{did}, run_once until the witness fired: the callbacks"
    );
    lp.dispose(witness);
    lp.finish();
}

/// Checks that a periodic timer disposed inside its own callback never runs
/// again.
pub fn dispose_inside_its_own_callback_stops_a_periodic_timer(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("p", MS, MS, 0);
    lp.on(t, move |lp, _| lp.dispose(t));
    lp.timer("witness", 20 * MS, 0, 0);
    lp.run_until_tag("witness");
    ensure_eq!(
        "R-TIMER-6",
        lp.log(),
        vec![Rec::Timer("p", 0), Rec::Timer("witness", 0)],
        "timer_new(p, 1 ms, repeat 1 ms) whose callback calls dispose(p), and (witness, \
         one-shot 20 ms), run_once until the witness fired: the callbacks"
    );
    lp.finish();
}

/// Checks that closing an armed timer gives exactly one `on_closed`, from a
/// later `run_once`, and no timer callback.
pub fn close_of_an_armed_timer_gives_only_on_closed(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, 0, 0);
    let did = "timer_new(one-shot 1 ms, flags 0), close(the timer, on_closed)";
    ensure_eq!("R-EV-2", lp.close(t), AA_OK, "{did}: its status");
    ensure_eq!(
        "R-EV-2",
        lp.log(),
        vec![],
        "{did}: the callbacks before any run_once (close calls nothing itself)"
    );
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("t")));
    lp.run_once(5 * MS as i64);
    ensure_eq!(
        "R-EV-2",
        lp.log(),
        vec![Rec::Closed("t")],
        "{did}, run_once until on_closed, run_once(5 ms, past the deadline): the callbacks"
    );
    let again = lp.close(t);
    ensure!("R-EV-2", again < 0;
        did: format!("{did}, on_closed delivered, then a second close"),
        wants: "a negative status",
        got: rules::status(again));
    lp.finish();
}

/// Checks that a few hundred timers armed in scrambled order fire in
/// deadline order, each once, equal deadlines in arming order. Each
/// timer's deadline is known exactly: the clock is refreshed at arming
/// (R-TIMER-5), so `now_ns()` right after `timer_new` plus the duration is
/// the deadline, and the expected order does not depend on how long the
/// arming took (under load, 300 arms can take longer than the 2 ms between
/// durations). All are due before the first iteration.
pub fn many_timers_fire_in_deadline_order(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let mut armed: Vec<(u64, usize, &'static str)> = Vec::new();
    for i in 0..300u64 {
        let slot = (i * 7) % 10;
        let duration = (slot + 1) * 2 * MS;
        // One unique tag per timer, for the life of the process (the log
        // keeps `&'static str` tags).
        let tag: &'static str = Box::leak(format!("t{i}").into_boxed_str());
        lp.timer(tag, duration, 0, 0);
        armed.push((lp.now_ns() + duration, armed.len(), tag));
    }
    all_due(25 * MS);
    lp.run_until("300 timers", |log| log.len() == 300);
    armed.sort();
    let expected: Vec<&str> = armed.iter().map(|(_, _, tag)| *tag).collect();
    let fired: Vec<&str> = lp.log().iter().map(Rec::tag).collect();
    ensure_eq!(
        "R-TIMER-1",
        fired,
        expected,
        "timer_new(one-shot, flags 0) of t0..t299 with durations 2..20 ms in scrambled \
         order, 25 ms of sleep so all are due, run_once until 300 callbacks: their order \
         (by deadline, then arming)"
    );
    lp.finish();
}
