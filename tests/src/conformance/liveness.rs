//! Tier: liveness. `alive()` counts active, referenced, non-hidden events:
//! armed timers, pending requests, closes in progress; `set_ref(false)` and
//! `AA_EVF_HIDDEN` take an event out of the count.

use crate::ensure_eq;
use async_abi::*;

use super::fds;
use super::harness::{Loop, Rec};
use super::plugin::Reactor;

const MS: u64 = 1_000_000;

/// Checks that a new loop has nothing alive.
pub fn empty_loop_has_nothing_alive(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    ensure_eq!("R-LOOP-6", lp.alive(), 0);
    lp.finish();
}

/// Checks that a one-shot timer counts while armed and not after it fired.
pub fn armed_timer_is_alive_until_it_fires(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    lp.timer("a", MS, 0, 0);
    lp.timer("b", 2 * MS, 0, 0);
    ensure_eq!("R-LOOP-6", lp.alive(), 2);
    lp.run_until_tag("a");
    lp.run_until_tag("b");
    ensure_eq!("R-LOOP-6", lp.alive(), 0);
    lp.finish();
}

/// Checks that `set_ref(false)` removes an armed timer from the count and
/// `set_ref(true)` puts it back, without changing when it fires.
pub fn set_ref_false_takes_an_event_out_of_alive(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", 5 * MS, 0, 0);
    lp.set_ref(t, false);
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    lp.set_ref(t, true);
    ensure_eq!("R-LOOP-7", lp.alive(), 1);
    lp.set_ref(t, false);
    lp.run_until_tag("t");
    ensure_eq!("R-LOOP-7", lp.log(), vec![Rec::Timer("t", 0)]);
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    lp.finish();
}

/// Checks that a timer created with `AA_EVF_HIDDEN` never counts.
pub fn hidden_timer_is_never_alive(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, MS, AA_EVF_HIDDEN);
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    lp.set_ref(t, true);
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    lp.run_until_tag("t");
    ensure_eq!("R-LOOP-7", lp.alive(), 0);
    lp.finish();
}

/// Checks that a pending request counts until its callback.
pub fn pending_request_is_alive_until_it_completes(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_IO,
        "pending_request_is_alive_until_it_completes",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    let mut buf = [0u8; 4];
    lp.read("r", b, &mut buf, 0).pending();
    ensure_eq!("R-LOOP-6", lp.alive(), 1);
    ensure_eq!("R-LOOP-6", fds::raw_write(a, b"x"), 1);
    lp.run_until_tag("r");
    ensure_eq!("R-LOOP-6", lp.alive(), 0);
    lp.finish();
}

/// Checks that an event being closed counts until `on_closed` ran.
pub fn close_in_progress_is_alive_until_on_closed(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", 3_600_000 * MS, 0, 0);
    ensure_eq!("R-LOOP-6", lp.close(t), AA_OK);
    ensure_eq!("R-LOOP-6", lp.alive(), 1);
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("t")));
    ensure_eq!("R-LOOP-6", lp.alive(), 0);
    lp.finish();
}
