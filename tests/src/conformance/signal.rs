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

use crate::{ensure, ensure_eq, setup_failed};
use async_abi::*;

use super::harness::{Alive, Loop, Rec};
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
        Alive(1),
        "signal_new(signal {sig}, flags 0): alive()"
    );
    os::raise(sig);
    ensure_eq!(
        "R-SIG-1",
        lp.log(),
        vec![],
        "signal_new(signal {sig}, flags 0), raise({sig}), before any run_once: the callbacks"
    );
    lp.run_until_tag("s");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-SIG-1",
        lp.log(),
        vec![Rec::Signal("s", 0, sig)],
        "signal_new(signal {sig}, flags 0), raise({sig}), run_once until a callback, run_once(0) \
         twice: the callbacks (status, signal)",
    );
    ensure_eq!(
        "R-SIG-1",
        lp.alive(),
        Alive(1),
        "signal_new(signal {sig}, flags 0), raise({sig}), its callback ran: alive() (the watcher \
         keeps watching)",
    );
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
    ensure_eq!(
        "R-SIG-1",
        lp.log(),
        vec![Rec::Signal("s", 0, sig)],
        "signal_new(signal {sig}, flags 0), raise({sig}) three times, run_once until a callback, \
         run_once(0) twice: the callbacks",
    );
    os::raise(sig);
    lp.run_until("a second callback", |log| signals_of(log, "s") == 2);
    lp.run_once(0);
    ensure_eq!(
        "R-SIG-1",
        signals_of(&lp.log(), "s"),
        2,
        "signal_new(signal {sig}, flags 0), raise({sig}) three times, one callback, raise({sig}) \
         again, run_once until a second callback, run_once(0): the callbacks with AA_OK",
    );
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
        vec![Rec::Signal("a", 0, sig), Rec::Signal("b", 0, sig)],
        "signal_new(a, signal {sig}) and (b, signal {sig}), flags 0, raise({sig}), run_once \
         until two callbacks, run_once(0): the callbacks",
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
    if os::disposition(sig) != libc::SIG_IGN {
        setup_failed!("signal {sig} set to SIG_IGN by the kit reads back as another disposition");
    }
    let lp = Loop::new(reactor);
    let a = lp.signal("a", sig, 0);
    let b = lp.signal("b", sig, 0);
    let theirs = os::disposition(sig);
    ensure!("R-SIG-3", theirs != libc::SIG_IGN && theirs != libc::SIG_DFL;
        did: format!("SIG_IGN set for signal {sig}, signal_new(a) and (b) of it, flags 0"),
        wants: "the reactor's own handler as the disposition while it watches",
        got: format!("the disposition {theirs:#x} (SIG_DFL is 0, SIG_IGN 1)"));
    lp.dispose(a);
    ensure_eq!(
        "R-SIG-3",
        os::disposition(sig),
        theirs,
        "SIG_IGN (1) set for signal {sig}, signal_new(a) and (b) of it, dispose(a): the \
         disposition (the reactor's handler while b watches)",
    );
    lp.dispose(b);
    ensure_eq!(
        "R-SIG-3",
        os::disposition(sig),
        libc::SIG_IGN,
        "SIG_IGN (1) set for signal {sig}, signal_new(a) and (b) of it, dispose(a), dispose(b): \
         the disposition (SIG_IGN is 1)",
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
    ensure_eq!(
        "R-EV-1",
        lp.cancel(s, REASON),
        AA_OK,
        "signal_new(signal {sig}, flags 0), cancel(the watcher, reason -4242): its status"
    );
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![],
        "signal_new(signal {sig}, flags 0), cancel(the watcher, reason -4242): the callbacks \
         before any run_once (cancel calls nothing itself)",
    );
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(1),
        "signal_new(signal {sig}, flags 0), cancel(the watcher, reason -4242): alive() (the \
         reason's callback is still to come)",
    );
    ensure_eq!(
        "R-EV-1",
        os::disposition(sig),
        libc::SIG_IGN,
        "SIG_IGN (1) set for signal {sig}, signal_new(it, flags 0), cancel(the watcher, reason \
         -4242): the disposition (the watch ended: SIG_IGN is back)",
    );
    os::raise(sig);
    lp.run_until_tag("s");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![Rec::Signal("s", REASON, sig)],
        "signal_new(signal {sig}, flags 0), cancel(the watcher, reason -4242), raise({sig}), \
         run_once until a callback, run_once(0) twice: the callbacks",
    );
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(0),
        "signal_new(signal {sig}, flags 0), cancel(reason -4242), the reason delivered: alive()"
    );
    ensure_eq!(
        "R-EV-1",
        lp.cancel(s, REASON),
        AA_E_INVALID,
        "signal_new(signal {sig}, flags 0), cancel(reason -4242), the reason delivered, then a \
         second cancel(reason -4242): its status",
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
    ensure_eq!(
        "R-EV-2",
        lp.close(s),
        AA_OK,
        "signal_new(signal {sig}, flags 0), close(the watcher, on_closed): its status"
    );
    ensure_eq!(
        "R-EV-2",
        os::disposition(sig),
        libc::SIG_IGN,
        "SIG_IGN (1) set for signal {sig}, signal_new(it, flags 0), close(the watcher): the \
         disposition (the watch ended: SIG_IGN is back)",
    );
    os::raise(sig);
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("s")));
    lp.run_once(0);
    ensure_eq!(
        "R-EV-2",
        lp.log(),
        vec![Rec::Closed("s")],
        "signal_new(signal {sig}, flags 0), close(the watcher, on_closed), raise({sig}), \
         run_once until on_closed, run_once(0): the callbacks",
    );
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
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(0),
        "signal_new(signal {sig}, flags AA_EVF_HIDDEN): alive()"
    );
    let visible = lp.signal("visible", sig, 0);
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(1),
        "signal_new(signal {sig}, flags AA_EVF_HIDDEN), signal_new(signal {sig}, flags 0): alive()"
    );
    os::raise(sig);
    lp.run_until("both watchers", |log| log.len() >= 2);
    ensure_eq!(
        "R-LOOP-7",
        lp.log(),
        vec![
            Rec::Signal("hidden", 0, sig),
            Rec::Signal("visible", 0, sig)
        ],
        "a hidden and a visible watcher of signal {sig}, raise({sig}), run_once until two \
         callbacks: the callbacks"
    );
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(1),
        "a hidden and a visible watcher of signal {sig}, both called: alive()"
    );
    lp.dispose(visible);
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(0),
        "a hidden and a visible watcher of signal {sig}, both called, dispose(the visible one): \
         alive()",
    );
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
            "signal_new(signal {signum}, flags 0): its status (None: refused, Some: the status)"
        );
        ensure!("R-SIG-4", !lp.last_error().is_empty();
            did: format!("signal_new(signal {signum}, flags 0), refused"),
            wants: "a last_error_message describing the refusal",
            got: "an empty last_error_message");
    }
    ensure_eq!(
        "R-SIG-4",
        lp.alive(),
        Alive(0),
        "signal_new of SIGKILL, SIGSTOP, 0, -1, 1000, each refused: alive()"
    );
    lp.run_once(0);
    ensure_eq!(
        "R-SIG-4",
        lp.log(),
        vec![],
        "signal_new of SIGKILL, SIGSTOP, 0, -1, 1000, each refused, run_once(0): the callbacks"
    );
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
        other
            .join()
            .unwrap_or_else(|_| setup_failed!("the other loop's thread panicked"))
    });
    ensure_eq!(
        "R-SIG-2",
        theirs,
        vec![Rec::Signal("there", 0, sig)],
        "signal_new(signal {sig}) on this loop and on a loop of another thread, kill(getpid(), \
         {sig}), each loop run until its callback: the other loop's callbacks",
    );
    ensure_eq!(
        "R-SIG-2",
        lp.log(),
        vec![Rec::Signal("here", 0, sig)],
        "signal_new(signal {sig}) on this loop and on a loop of another thread, kill(getpid(), \
         {sig}), each loop run until its callback: this loop's callbacks",
    );
    lp.finish();
}
