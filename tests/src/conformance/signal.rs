//! Tier: signals (`AA_CAP_SIGNAL`). A delivery runs each active watcher of
//! the signal once from a later `run_once`; deliveries between two
//! iterations coalesce; every loop watching the signal is told; the reactor
//! owns the disposition only while it watches (the previous one is back
//! when the last watcher stops); cancel delivers the reason once; hidden
//! watchers do not count in `alive()`; uncatchable signals are refused.
//!
//! Each case uses a signal of its own (`os::case_signal`) and ignores it
//! first: the cases run on parallel threads of one process, and a reactor
//! that failed to install its handler then loses the signal instead of
//! killing the test process.

use std::sync::Barrier;

use crate::{ensure, ensure_eq};
use async_abi::*;

use super::harness::{Loop, Rec};
use super::os::{self, case_signal};
use super::plugin::Reactor;

const REASON: AaStatus = -4444;

/// Ignores `signum` for the case, and puts the default back at the end.
struct Ignored(i32);

impl Ignored {
    fn new(signum: i32) -> Ignored {
        os::set_disposition(signum, libc::SIG_IGN);
        Ignored(signum)
    }
}

impl Drop for Ignored {
    fn drop(&mut self) {
        os::set_disposition(self.0, libc::SIG_DFL);
    }
}

fn signals_of(log: &[Rec], tag: &str) -> usize {
    log.iter()
        .filter(|r| matches!(r, Rec::Signal(t, 0, _) if *t == tag))
        .count()
}

/// Checks that a raised signal calls its watcher once, with the signal's
/// number, from `run_once` (never from `raise`).
pub fn raised_signal_calls_the_watcher_once(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "raised_signal_calls_the_watcher_once",
    ) {
        return;
    }
    let sig = case_signal(0);
    let _ignored = Ignored::new(sig);
    let lp = Loop::new(reactor);
    lp.signal("s", sig, 0);
    ensure_eq!(
        "R-SIG-1",
        lp.alive(),
        1,
        "a signal watcher keeps the loop alive"
    );
    os::raise(sig);
    ensure_eq!("R-SIG-1", lp.log(), vec![], "called back outside run_once");
    lp.run_until_tag("s");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-SIG-1", lp.log(), vec![Rec::Signal("s", 0, sig)]);
    ensure_eq!("R-SIG-1", lp.alive(), 1, "the watcher keeps watching");
    lp.finish();
}

/// Checks that several deliveries before the loop looks give one callback,
/// and a later delivery another.
pub fn deliveries_before_run_once_coalesce_into_one_callback(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "deliveries_before_run_once_coalesce_into_one_callback",
    ) {
        return;
    }
    let sig = case_signal(1);
    let _ignored = Ignored::new(sig);
    let lp = Loop::new(reactor);
    lp.signal("s", sig, 0);
    for _ in 0..3 {
        os::raise(sig);
    }
    lp.run_until_tag("s");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-SIG-1", lp.log(), vec![Rec::Signal("s", 0, sig)]);
    os::raise(sig);
    lp.run_until("a second callback", |log| signals_of(log, "s") == 2);
    lp.run_once(0);
    ensure_eq!("R-SIG-1", signals_of(&lp.log(), "s"), 2);
    lp.finish();
}

/// Checks that two watchers of one signal are both called, in creation
/// order, once each.
pub fn two_watchers_of_one_signal_are_both_called(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "two_watchers_of_one_signal_are_both_called",
    ) {
        return;
    }
    let sig = case_signal(2);
    let _ignored = Ignored::new(sig);
    let lp = Loop::new(reactor);
    lp.signal("a", sig, 0);
    lp.signal("b", sig, 0);
    os::raise(sig);
    lp.run_until("both watchers", |log| log.len() >= 2);
    lp.run_once(0);
    ensure_eq!(
        "R-SIG-2",
        lp.log(),
        vec![Rec::Signal("a", 0, sig), Rec::Signal("b", 0, sig)]
    );
    lp.finish();
}

/// Checks that the reactor's handler replaces the disposition while a
/// watcher exists, and that disposing the last watcher puts the previous
/// one back.
pub fn dispose_of_the_last_watcher_restores_the_previous_disposition(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "dispose_of_the_last_watcher_restores_the_previous_disposition",
    ) {
        return;
    }
    let sig = case_signal(3);
    let _ignored = Ignored::new(sig);
    ensure_eq!("R-SIG-3", os::disposition(sig), libc::SIG_IGN);
    let lp = Loop::new(reactor);
    let a = lp.signal("a", sig, 0);
    let b = lp.signal("b", sig, 0);
    let theirs = os::disposition(sig);
    ensure!(
        "R-SIG-3",
        theirs != libc::SIG_IGN && theirs != libc::SIG_DFL,
        "the reactor owns the disposition while it watches"
    );
    lp.dispose(a);
    ensure_eq!(
        "R-SIG-3",
        os::disposition(sig),
        theirs,
        "one watcher is left"
    );
    lp.dispose(b);
    ensure_eq!(
        "R-SIG-3",
        os::disposition(sig),
        libc::SIG_IGN,
        "the previous disposition is back"
    );
    lp.finish();
}

/// Checks that cancelling a watcher calls it once with the reason (and its
/// signal's number), ends the watch (the previous disposition is back), and
/// that a second cancel finds nothing pending.
pub fn cancel_of_a_signal_watcher_delivers_the_reason_once(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "cancel_of_a_signal_watcher_delivers_the_reason_once",
    ) {
        return;
    }
    let sig = case_signal(4);
    let _ignored = Ignored::new(sig);
    let lp = Loop::new(reactor);
    let s = lp.signal("s", sig, 0);
    ensure_eq!("R-EV-1", lp.cancel(s, REASON), AA_OK);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![],
        "cancel called back synchronously"
    );
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        1,
        "the cancellation callback is still to come"
    );
    ensure_eq!(
        "R-EV-1",
        os::disposition(sig),
        libc::SIG_IGN,
        "the watch ended"
    );
    os::raise(sig);
    lp.run_until_tag("s");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-EV-1", lp.log(), vec![Rec::Signal("s", REASON, sig)]);
    ensure_eq!("R-EV-1", lp.alive(), 0);
    ensure_eq!(
        "R-EV-1",
        lp.cancel(s, REASON),
        AA_E_INVALID,
        "nothing is pending"
    );
    lp.finish();
}

/// Checks that closing a watcher gives only `on_closed` and ends the watch.
pub fn close_of_a_signal_watcher_gives_only_on_closed(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "close_of_a_signal_watcher_gives_only_on_closed",
    ) {
        return;
    }
    let sig = case_signal(5);
    let _ignored = Ignored::new(sig);
    let lp = Loop::new(reactor);
    let s = lp.signal("s", sig, 0);
    ensure_eq!("R-EV-2", lp.close(s), AA_OK);
    ensure_eq!(
        "R-EV-2",
        os::disposition(sig),
        libc::SIG_IGN,
        "the watch ended"
    );
    os::raise(sig);
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("s")));
    lp.run_once(0);
    ensure_eq!("R-EV-2", lp.log(), vec![Rec::Closed("s")]);
    lp.finish();
}

/// Checks that a hidden watcher is called but never counts in `alive()`.
pub fn hidden_signal_watcher_does_not_count_in_alive(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "hidden_signal_watcher_does_not_count_in_alive",
    ) {
        return;
    }
    let sig = case_signal(6);
    let _ignored = Ignored::new(sig);
    let lp = Loop::new(reactor);
    lp.signal("hidden", sig, AA_EVF_HIDDEN);
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    let visible = lp.signal("visible", sig, 0);
    ensure_eq!("R-LOOP-7", lp.alive(), 1);
    os::raise(sig);
    lp.run_until("both watchers", |log| log.len() >= 2);
    ensure_eq!(
        "R-LOOP-7",
        lp.log(),
        vec![
            Rec::Signal("hidden", 0, sig),
            Rec::Signal("visible", 0, sig)
        ]
    );
    ensure_eq!("R-LOOP-7", lp.alive(), 1);
    lp.dispose(visible);
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    lp.finish();
}

/// Checks that `SIGKILL`, `SIGSTOP` and numbers that are not signals are
/// refused with `AA_E_INVALID`, without a callback (AA-R8).
pub fn uncatchable_and_invalid_signals_are_refused(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "uncatchable_and_invalid_signals_are_refused",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    for signum in [libc::SIGKILL, libc::SIGSTOP, 0, -1, 1000] {
        ensure_eq!(
            "R-SIG-4",
            lp.try_signal("bad", signum, 0).err(),
            Some(AA_E_INVALID),
            "signal {signum}"
        );
        ensure!("R-SIG-4", !lp.last_error().is_empty());
    }
    ensure_eq!("R-SIG-4", lp.alive(), 0);
    lp.run_once(0);
    ensure_eq!("R-SIG-4", lp.log(), vec![]);
    lp.finish();
}

/// Checks that two loops on two threads watching one signal are both told
/// of one delivery to the process, once each.
pub fn every_loop_watching_a_signal_is_told(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_SIGNAL,
        "every_loop_watching_a_signal_is_told",
    ) {
        return;
    }
    let sig = case_signal(7);
    let _ignored = Ignored::new(sig);
    let ready = Barrier::new(2);
    let lp = Loop::new(reactor);
    lp.signal("here", sig, 0);
    let theirs = std::thread::scope(|scope| {
        let other = scope.spawn(|| {
            let lp = Loop::new(reactor);
            lp.signal("there", sig, 0);
            ready.wait();
            lp.run_until_tag("there");
            lp.run_once(0);
            let log = lp.log();
            lp.finish();
            log
        });
        ready.wait();
        os::kill_self(sig);
        lp.run_until_tag("here");
        lp.run_once(0);
        other.join().expect("the other loop's thread")
    });
    ensure_eq!("R-SIG-2", theirs, vec![Rec::Signal("there", 0, sig)]);
    ensure_eq!("R-SIG-2", lp.log(), vec![Rec::Signal("here", 0, sig)]);
    lp.finish();
}
