//! Tier: cross-thread triggers and `wake`. A fire from another thread
//! wakes a blocking `run_once`; fires coalesce; a hidden trigger does not
//! keep the loop alive; cancel and close end a trigger.

use std::time::{Duration, Instant};

use crate::{ensure, ensure_eq};
use async_abi::*;

use super::fds;
use super::harness::{Loop, Rec};
use super::plugin::Reactor;

const REASON: AaStatus = -4444;

fn triggers_of(log: &[Rec], tag: &'static str) -> usize {
    log.iter().filter(|r| **r == Rec::Trigger(tag, 0)).count()
}

/// Waits (without sleeping) until thread `tid` is blocked, so the fire
/// really interrupts a blocking wait. Gives up after a few seconds: firing
/// early must work too.
fn until_blocked(tid: i32) {
    let start = Instant::now();
    while !fds::is_sleeping(tid) && start.elapsed() < Duration::from_secs(3) {
        std::thread::yield_now();
    }
}

/// Checks that `trigger_fire` from another thread wakes a `run_once(-1)`
/// blocked in the OS and that the callback runs exactly once.
pub fn fire_from_another_thread_wakes_a_blocking_run_once(reactor: &Reactor) {
    fire_wakes_a_blocking_run_once(
        reactor,
        "fire_from_another_thread_wakes_a_blocking_run_once",
        false,
    );
}

/// Checks R-TRIG-1 with a far timer armed: the fire must end the wait
/// that the timer bounds, not be taken for the timer cutting it short (a
/// loop that re-waits until the timer's deadline would take 60 s here).
pub fn fire_wakes_run_once_while_a_far_timer_is_armed(reactor: &Reactor) {
    fire_wakes_a_blocking_run_once(
        reactor,
        "fire_wakes_run_once_while_a_far_timer_is_armed",
        true,
    );
}

/// A fire from another thread, once the loop thread blocks in
/// `run_once(-1)` (with a timer due in 60 s armed if `far_timer`), runs the
/// trigger's callback once and ends the wait promptly.
fn fire_wakes_a_blocking_run_once(reactor: &Reactor, case: &str, far_timer: bool) {
    if super::skip_without(reactor, AA_CAP_TRIGGER, case) {
        return;
    }
    let lp = Loop::new(reactor);
    let far = far_timer.then(|| lp.timer("far", 60_000_000_000, 0, 0));
    let t = lp.trigger("t", 0);
    let fire = lp.fire_handle(t);
    let tid = fds::gettid();
    let start = Instant::now();
    let thread = std::thread::spawn(move || {
        until_blocked(tid);
        fire.fire()
    });
    let mut runs = 0;
    while lp.log().is_empty() {
        runs += 1;
        ensure!(
            "R-TRIG-1",
            runs <= 3,
            "run_once(-1) kept returning without the trigger"
        );
        lp.run_once(-1);
    }
    ensure_eq!("R-TRIG-1", thread.join().expect("firing thread"), AA_OK);
    ensure!(
        "R-TRIG-1",
        start.elapsed() < Duration::from_secs(8),
        "the fire took {:?} to end the wait",
        start.elapsed()
    );
    ensure_eq!("R-TRIG-1", lp.log(), vec![Rec::Trigger("t", 0)]);
    if let Some(far) = far {
        lp.dispose(far);
    }
    lp.finish();
}

/// Checks that several fires before the loop notices give one callback, and
/// a fire after it gives another.
pub fn fires_before_the_loop_runs_coalesce_into_one_callback(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_TRIGGER,
        "fires_before_the_loop_runs_coalesce_into_one_callback",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let t = lp.trigger("t", 0);
    let fire = lp.fire_handle(t);
    let thread = std::thread::spawn(move || (0..100).all(|_| fire.fire() == AA_OK));
    ensure!("R-TRIG-2", thread.join().expect("firing thread"));
    for _ in 0..3 {
        ensure_eq!("R-TRIG-2", lp.fire(t), AA_OK);
    }
    ensure_eq!(
        "R-TRIG-2",
        lp.log(),
        vec![],
        "trigger_fire called back synchronously"
    );
    lp.run_until_tag("t");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-TRIG-2", triggers_of(&lp.log(), "t"), 1);
    ensure_eq!("R-TRIG-2", lp.fire(t), AA_OK);
    lp.run_until("a second callback", |log| triggers_of(log, "t") == 2);
    lp.finish();
}

/// Checks that a fire made inside the trigger's own callback runs it once
/// more, in a later iteration (no loop inside one `run_once`).
pub fn fire_inside_the_callback_runs_it_again_in_a_later_iteration(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_TRIGGER,
        "fire_inside_the_callback_runs_it_again_in_a_later_iteration",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let t = lp.trigger("t", 0);
    let mut left = 2;
    lp.on(t, move |lp, _| {
        if left > 0 {
            left -= 1;
            ensure_eq!("R-EV-4", lp.fire(t), AA_OK);
        }
    });
    ensure_eq!("R-EV-4", lp.fire(t), AA_OK);
    let mut per_iteration = Vec::new();
    while triggers_of(&lp.log(), "t") < 3 {
        let before = triggers_of(&lp.log(), "t");
        lp.run_once(100_000_000);
        per_iteration.push(triggers_of(&lp.log(), "t") - before);
        ensure!(
            "R-EV-4",
            per_iteration.len() < 50,
            "trigger stalled: {per_iteration:?}"
        );
    }
    ensure!(
        "R-EV-4",
        per_iteration.iter().all(|n| *n <= 1),
        "{per_iteration:?}"
    );
    lp.run_once(0);
    ensure_eq!("R-EV-4", triggers_of(&lp.log(), "t"), 3);
    lp.finish();
}

/// Checks that an open trigger keeps the loop alive unless hidden.
pub fn hidden_trigger_does_not_count_in_alive(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_TRIGGER,
        "hidden_trigger_does_not_count_in_alive",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let hidden = lp.trigger("hidden", AA_EVF_HIDDEN);
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    let visible = lp.trigger("visible", 0);
    ensure_eq!("R-LOOP-7", lp.alive(), 1);
    ensure_eq!("R-LOOP-7", lp.fire(hidden), AA_OK);
    lp.run_until_tag("hidden");
    ensure_eq!("R-LOOP-7", lp.alive(), 1);
    lp.dispose(visible);
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    lp.finish();
}

/// Checks that `wake` from another thread makes a blocked `run_once(-1)`
/// return with no callback.
pub fn wake_from_another_thread_interrupts_run_once(reactor: &Reactor) {
    wake_ends_a_blocking_run_once(reactor, false);
}

/// Checks R-LOOP-8 with a far timer armed: `wake` ends a `run_once(-1)`
/// that the timer bounds, with no callback.
pub fn wake_ends_run_once_while_a_far_timer_is_armed(reactor: &Reactor) {
    wake_ends_a_blocking_run_once(reactor, true);
}

/// A `wake` from another thread, once the loop thread blocks in
/// `run_once(-1)` (with a timer due in 60 s armed if `far_timer`), ends the
/// wait promptly and runs nothing.
fn wake_ends_a_blocking_run_once(reactor: &Reactor, far_timer: bool) {
    let lp = Loop::new(reactor);
    let far = far_timer.then(|| lp.timer("far", 60_000_000_000, 0, 0));
    let wake = lp.wake_handle();
    let tid = fds::gettid();
    let start = Instant::now();
    let thread = std::thread::spawn(move || {
        until_blocked(tid);
        wake.wake()
    });
    ensure_eq!("R-LOOP-8", lp.run_once(-1), 0);
    ensure_eq!("R-LOOP-8", thread.join().expect("waking thread"), AA_OK);
    ensure!(
        "R-LOOP-8",
        start.elapsed() < Duration::from_secs(8),
        "the wake took {:?} to end the wait",
        start.elapsed()
    );
    ensure_eq!("R-LOOP-8", lp.log(), vec![]);
    if let Some(far) = far {
        lp.dispose(far);
    }
    lp.finish();
}

/// Checks that cancelling a trigger calls it once with the reason and that
/// later fires run nothing.
pub fn cancel_of_a_trigger_delivers_the_reason_once(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_TRIGGER,
        "cancel_of_a_trigger_delivers_the_reason_once",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let t = lp.trigger("t", 0);
    ensure_eq!("R-EV-1", lp.cancel(t, REASON), AA_OK);
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        1,
        "the cancellation callback is still to come"
    );
    lp.fire(t);
    lp.run_until_tag("t");
    lp.run_once(0);
    ensure_eq!("R-EV-1", lp.log(), vec![Rec::Trigger("t", REASON)]);
    ensure_eq!("R-EV-1", lp.alive(), 0);
    lp.finish();
}

/// Checks that closing a trigger gives one `on_closed` from a later
/// `run_once` and that fires after it run nothing.
pub fn close_of_a_trigger_gives_on_closed_and_no_more_callbacks(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_TRIGGER,
        "close_of_a_trigger_gives_on_closed_and_no_more_callbacks",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let t = lp.trigger("t", 0);
    ensure_eq!("R-EV-2", lp.close(t), AA_OK);
    lp.fire(t);
    ensure_eq!("R-EV-2", lp.log(), vec![]);
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("t")));
    lp.fire(t);
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-EV-2", lp.log(), vec![Rec::Closed("t")]);
    lp.finish();
}
