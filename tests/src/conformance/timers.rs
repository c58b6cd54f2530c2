//! Tier: timers. Deadline order, one-shot and periodic timers, re-arm,
//! cancel (the reason delivered once, from a later `run_once`), a fresh
//! clock before arming, and a blocking `run_once` cut short by the nearest
//! timer.

use std::time::{Duration, Instant};

use crate::{ensure, ensure_eq};
use async_abi::*;

use super::harness::{Loop, Rec};
use super::plugin::Reactor;

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
    lp.timer("c", 3 * MS, 0, 0);
    lp.timer("a", MS, 0, 0);
    lp.timer("b", 2 * MS, 0, 0);
    all_due(5 * MS);
    lp.run_until("three timers", |log| log.len() == 3);
    ensure_eq!(
        "R-TIMER-1",
        lp.log(),
        vec![Rec::Timer("a", 0), Rec::Timer("b", 0), Rec::Timer("c", 0)]
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
    ensure_eq!("R-TIMER-2", order, ["t1", "t2", "t3", "t4"]);
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
    ensure_eq!("R-ERR-3", lp.log(), vec![Rec::Timer("t", 0)]);
    ensure_eq!("R-ERR-3", lp.cancel(t, REASON), AA_E_INVALID);
    lp.run_once(0);
    ensure_eq!("R-ERR-3", lp.log(), vec![Rec::Timer("t", 0)]);
    lp.finish();
}

/// Checks that a periodic timer keeps firing until cancelled, then gets the
/// reason exactly once and stops.
pub fn periodic_fires_until_cancelled(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("p", MS, 2 * MS, 0);
    lp.run_until("three periods", |log| fired_timers(log) == 3);
    ensure_eq!("R-EV-1", lp.cancel(t, REASON), AA_OK);
    lp.run_until("the cancellation", |log| {
        log.contains(&Rec::Timer("p", REASON))
    });
    lp.run_once(10 * MS as i64);
    let log = lp.log();
    ensure_eq!(
        "R-EV-1",
        fired_timers(&log),
        3,
        "a period fired after cancel: {log:?}"
    );
    ensure_eq!(
        "R-EV-1",
        log.iter()
            .filter(|r| **r == Rec::Timer("p", REASON))
            .count(),
        1
    );
    lp.finish();
}

/// Checks that re-arming replaces the pending deadline with no callback for
/// the old one.
pub fn rearm_replaces_the_deadline_without_a_callback(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", FAR, 0, 0);
    ensure_eq!("R-TIMER-4", lp.rearm(t, MS, 0), AA_OK);
    lp.run_until_tag("t");
    lp.run_once(5 * MS as i64);
    ensure_eq!("R-TIMER-4", lp.log(), vec![Rec::Timer("t", 0)]);
    lp.finish();
}

/// Checks that a one-shot timer that fired can be re-armed and fires again.
pub fn rearm_restarts_a_fired_one_shot(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, 0, 0);
    lp.run_until_tag("t");
    ensure_eq!("R-TIMER-4", lp.alive(), 0);
    ensure_eq!("R-TIMER-4", lp.rearm(t, MS, 0), AA_OK);
    ensure_eq!("R-TIMER-4", lp.alive(), 1);
    lp.run_until("the second firing", |log| log.len() == 2);
    ensure_eq!(
        "R-TIMER-4",
        lp.log(),
        vec![Rec::Timer("t", 0), Rec::Timer("t", 0)]
    );
    lp.finish();
}

/// Checks that `cancel` calls nothing itself, that the next `run_once`
/// delivers the reason exactly once, and that a second cancel finds nothing
/// pending.
pub fn cancel_reason_is_delivered_once_from_a_later_run_once(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", FAR, 0, 0);
    ensure_eq!("R-EV-1", lp.cancel(t, REASON), AA_OK);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![],
        "cancel called back synchronously"
    );
    lp.run_until_tag("t");
    lp.run_once(0);
    ensure_eq!("R-EV-1", lp.log(), vec![Rec::Timer("t", REASON)]);
    ensure_eq!("R-EV-1", lp.cancel(t, REASON), AA_E_INVALID);
    lp.finish();
}

/// Checks that a cancel made inside a callback is delivered by a later
/// iteration, not by the one running.
pub fn cancel_inside_a_callback_is_delivered_by_a_later_iteration(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let victim = lp.timer("victim", FAR, 0, 0);
    let a = lp.timer("a", 0, 0, 0);
    lp.on(a, move |lp, _| {
        ensure_eq!("R-EV-1", lp.cancel(victim, REASON), AA_OK)
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
        ]
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
    ensure!(
        "R-TIMER-5",
        waited >= Duration::from_millis(100),
        "timer fired after {waited:?}, before its 100 ms"
    );
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
    ensure_eq!("R-LOOP-5", lp.log(), vec![Rec::Timer("near", 0)]);
    ensure!(
        "R-LOOP-5",
        waited >= Duration::from_millis(20),
        "fired early: {waited:?}"
    );
    ensure!(
        "R-LOOP-5",
        waited < Duration::from_secs(5),
        "returned late: {waited:?}"
    );
    lp.finish();
}

/// Checks that disposing an armed timer stops it silently.
pub fn dispose_of_an_armed_timer_stops_it(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, 0, 0);
    let witness = lp.timer("witness", 10 * MS, 0, 0);
    lp.dispose(t);
    ensure_eq!("R-TIMER-6", lp.alive(), 1);
    lp.run_until_tag("witness");
    ensure_eq!("R-TIMER-6", lp.log(), vec![Rec::Timer("witness", 0)]);
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
        "R-EV-4",
        lp.log(),
        vec![Rec::Timer("p", 0), Rec::Timer("witness", 0)]
    );
    lp.finish();
}

/// Checks that closing an armed timer gives exactly one `on_closed`, from a
/// later `run_once`, and no timer callback.
pub fn close_of_an_armed_timer_gives_only_on_closed(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, 0, 0);
    ensure_eq!("R-EV-2", lp.close(t), AA_OK);
    ensure_eq!(
        "R-EV-2",
        lp.log(),
        vec![],
        "close called back synchronously"
    );
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("t")));
    lp.run_once(5 * MS as i64);
    ensure_eq!("R-EV-2", lp.log(), vec![Rec::Closed("t")]);
    ensure!("R-EV-2", lp.close(t) < 0, "a second close was accepted");
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
        "not in (deadline, arming) order"
    );
    lp.finish();
}
