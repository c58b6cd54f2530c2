//! Tier: cross-thread triggers and `wake`. A fire from another thread
//! wakes a blocking `run_once`; fires coalesce; a hidden trigger does not
//! keep the loop alive; cancel and close end a trigger.

use std::time::{Duration, Instant};

use crate::{ensure, ensure_eq, setup_failed};
use async_abi::*;

use super::fds;
use super::harness::{Alive, Loop, Rec};
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
    let did = format!(
        "trigger_new(flags 0){}, run_once(-1) while another thread, once this one blocked, \
         called trigger_fire",
        if far_timer {
            " and timer_new(one-shot 60 s)"
        } else {
            ""
        }
    );
    let mut runs = 0;
    while lp.log().is_empty() {
        runs += 1;
        ensure!("R-TRIG-1", runs <= 3;
            did: did,
            wants: "run_once(-1) returning with the trigger's callback",
            got: "three run_once(-1) calls returned without it");
        lp.run_once(-1);
    }
    let fired = thread
        .join()
        .unwrap_or_else(|_| setup_failed!("the firing thread panicked"));
    ensure_eq!("R-TRIG-1", fired, AA_OK, "{did}: trigger_fire's status");
    let took = start.elapsed();
    ensure!("R-TRIG-1", took < Duration::from_secs(8);
        did: did,
        wants: "the fire ending the wait (the kit allows 8 s)",
        got: format!("run_once returned {took:?} after the thread started"));
    ensure_eq!(
        "R-TRIG-1",
        lp.log(),
        vec![Rec::Trigger("t", 0)],
        "{did}: the callbacks"
    );
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
    let thread = std::thread::spawn(move || {
        (0..100)
            .map(|_| fire.fire())
            .find(|s| *s != AA_OK)
            .unwrap_or(AA_OK)
    });
    let fired = thread
        .join()
        .unwrap_or_else(|_| setup_failed!("the firing thread panicked"));
    let did = "trigger_new(flags 0), trigger_fire 100 times from another thread";
    ensure_eq!(
        "R-TRIG-2",
        fired,
        AA_OK,
        "{did}: the first status that was not AA_OK"
    );
    for i in 0..3 {
        ensure_eq!(
            "R-TRIG-2",
            lp.fire(t),
            AA_OK,
            "{did}, then trigger_fire {} time(s) on the loop thread: its status",
            i + 1
        );
    }
    let did = format!("{did} and 3 times on the loop thread");
    ensure_eq!(
        "R-TRIG-2",
        lp.log(),
        vec![],
        "{did}, before any run_once: the callbacks (trigger_fire calls nothing itself)"
    );
    lp.run_until_tag("t");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-TRIG-2",
        triggers_of(&lp.log(), "t"),
        1,
        "{did}, run_once until a callback, run_once(0) twice: the callbacks with AA_OK"
    );
    ensure_eq!(
        "R-TRIG-2",
        lp.fire(t),
        AA_OK,
        "{did}, its callback ran, then trigger_fire again: its status"
    );
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
            ensure_eq!(
                "R-EV-4",
                lp.fire(t),
                AA_OK,
                "trigger_fire of the trigger inside its own callback: its status"
            );
        }
    });
    let did = "trigger_new(flags 0) whose callback fires it again twice, trigger_fire";
    ensure_eq!("R-EV-4", lp.fire(t), AA_OK, "{did}: its status");
    let mut per_iteration = Vec::new();
    while triggers_of(&lp.log(), "t") < 3 {
        let before = triggers_of(&lp.log(), "t");
        lp.run_once(100_000_000);
        per_iteration.push(triggers_of(&lp.log(), "t") - before);
        ensure!("R-EV-4", per_iteration.len() < 50;
            did: format!("{did}, run_once(100 ms) until three callbacks"),
            wants: "the callback run again by a later iteration after each fire inside it",
            got: format!("callbacks per iteration {per_iteration:?} (stalled)"));
    }
    ensure!("R-EV-4", per_iteration.iter().all(|n| *n <= 1);
        did: format!("{did}, run_once(100 ms) until three callbacks"),
        wants: "at most one callback per run_once (a fire inside the callback runs it from a \
                later iteration)",
        got: format!("callbacks per iteration {per_iteration:?}"));
    lp.run_once(0);
    ensure_eq!(
        "R-EV-4",
        triggers_of(&lp.log(), "t"),
        3,
        "{did}, run_once until three callbacks, run_once(0): the callbacks with AA_OK"
    );
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
    let did = "trigger_new(flags AA_EVF_HIDDEN)";
    ensure_eq!("R-LOOP-7", lp.alive(), Alive(0), "{did}: alive()");
    let visible = lp.trigger("visible", 0);
    let did = format!("{did}, trigger_new(flags 0)");
    ensure_eq!("R-LOOP-7", lp.alive(), Alive(1), "{did}: alive()");
    ensure_eq!(
        "R-LOOP-7",
        lp.fire(hidden),
        AA_OK,
        "{did}, trigger_fire(the hidden one): its status"
    );
    lp.run_until_tag("hidden");
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(1),
        "{did}, trigger_fire(the hidden one), run_once until its callback: alive()"
    );
    lp.dispose(visible);
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(0),
        "{did}, the hidden one fired, dispose(the visible one): alive()"
    );
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
    let did = format!(
        "{}run_once(-1) while another thread, once this one blocked, called wake",
        if far_timer {
            "timer_new(one-shot 60 s), "
        } else {
            ""
        }
    );
    ensure_eq!(
        "R-LOOP-8",
        lp.run_once(-1),
        0,
        "{did}: run_once's return (callbacks run)"
    );
    let woke = thread
        .join()
        .unwrap_or_else(|_| setup_failed!("the waking thread panicked"));
    ensure_eq!("R-LOOP-8", woke, AA_OK, "{did}: wake's status");
    let took = start.elapsed();
    ensure!("R-LOOP-8", took < Duration::from_secs(8);
        did: did,
        wants: "the wake ending the wait (the kit allows 8 s)",
        got: format!("run_once returned {took:?} after the thread started"));
    ensure_eq!("R-LOOP-8", lp.log(), vec![], "{did}: the callbacks");
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
    let did = "trigger_new(flags 0), cancel(the trigger, reason -4444)";
    ensure_eq!("R-EV-1", lp.cancel(t, REASON), AA_OK, "{did}: its status");
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(1),
        "{did}: alive() (the reason's callback is still to come)"
    );
    lp.fire(t);
    lp.run_until_tag("t");
    lp.run_once(0);
    ensure_eq!(
        "R-TRIG-3",
        lp.log(),
        vec![Rec::Trigger("t", REASON)],
        "{did}, trigger_fire, run_once until a callback, run_once(0): the callbacks"
    );
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(0),
        "{did}, the reason delivered: alive()"
    );
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
    let did = "trigger_new(flags 0), close(the trigger, on_closed)";
    ensure_eq!("R-EV-2", lp.close(t), AA_OK, "{did}: its status");
    lp.fire(t);
    ensure_eq!(
        "R-EV-2",
        lp.log(),
        vec![],
        "{did}, trigger_fire, before any run_once: the callbacks"
    );
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("t")));
    lp.fire(t);
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-TRIG-3",
        lp.log(),
        vec![Rec::Closed("t")],
        "{did}, trigger_fire, run_once until on_closed, trigger_fire, run_once(0) twice: the \
         callbacks"
    );
    lp.finish();
}
