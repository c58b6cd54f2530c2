//! Tier: liveness. `alive()` counts active, referenced, non-hidden events:
//! armed timers, pending requests, closes in progress; `set_ref(false)` and
//! `AA_EVF_HIDDEN` take an event out of the count.

use crate::{ensure_eq, setup_failed};
use async_abi::*;

use super::fds;
use super::harness::{Alive, Loop, Rec};
use super::plugin::Reactor;

const MS: u64 = 1_000_000;

/// Checks that a new loop has nothing alive.
pub fn empty_loop_has_nothing_alive(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    ensure_eq!("R-LOOP-6", lp.alive(), Alive(0), "create, then alive()");
    lp.finish();
}

/// Checks that a one-shot timer counts while armed and not after it fired.
pub fn armed_timer_is_alive_until_it_fires(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    lp.timer("a", MS, 0, 0);
    lp.timer("b", 2 * MS, 0, 0);
    let did = "timer_new(one-shot 1 ms) and (one-shot 2 ms), flags 0";
    ensure_eq!("R-LOOP-6", lp.alive(), Alive(2), "{did}: alive()");
    lp.run_until_tag("a");
    lp.run_until_tag("b");
    ensure_eq!(
        "R-LOOP-6",
        lp.alive(),
        Alive(0),
        "{did}, run_once until both fired: alive()"
    );
    lp.finish();
}

/// Checks that `set_ref(false)` removes an armed timer from the count and
/// `set_ref(true)` puts it back, without changing when it fires.
pub fn set_ref_false_takes_an_event_out_of_alive(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", 5 * MS, 0, 0);
    lp.set_ref(t, false);
    let did = "timer_new(one-shot 5 ms, flags 0), set_ref(false)";
    ensure_eq!("R-LOOP-7", lp.alive(), Alive(0), "{did}: alive()");
    lp.set_ref(t, true);
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(1),
        "{did}, set_ref(true): alive()"
    );
    lp.set_ref(t, false);
    let did = format!("{did}, set_ref(true), set_ref(false), run_once until a callback");
    lp.run_until_tag("t");
    ensure_eq!(
        "R-LOOP-7",
        lp.log(),
        vec![Rec::Timer("t", 0)],
        "{did}: the callbacks (an unreferenced timer still fires)"
    );
    ensure_eq!("R-LOOP-7", lp.alive(), Alive(0), "{did}: alive()");
    lp.finish();
}

/// Checks that a timer created with `AA_EVF_HIDDEN` never counts.
pub fn hidden_timer_is_never_alive(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", MS, MS, AA_EVF_HIDDEN);
    let did = "timer_new(1 ms, repeat 1 ms, flags AA_EVF_HIDDEN)";
    ensure_eq!("R-LOOP-7", lp.alive(), Alive(0), "{did}: alive()");
    lp.set_ref(t, true);
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(0),
        "{did}, set_ref(true): alive()"
    );
    lp.run_until_tag("t");
    ensure_eq!(
        "R-LOOP-7",
        lp.alive(),
        Alive(0),
        "{did}, set_ref(true), run_once until it fired: alive()"
    );
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
    let did = "io_submit(AA_IO_READ of 4 bytes on an empty socket, flags 0), pending";
    ensure_eq!("R-LOOP-6", lp.alive(), Alive(1), "{did}: alive()");
    if fds::raw_write(a, b"x") != 1 {
        setup_failed!("write of 1 byte to the peer socket");
    }
    lp.run_until_tag("r");
    ensure_eq!(
        "R-LOOP-6",
        lp.alive(),
        Alive(0),
        "{did}, 1 byte written by the peer, run_once until the callback: alive()"
    );
    lp.finish();
}

/// Checks that an event being closed counts until `on_closed` ran.
pub fn close_in_progress_is_alive_until_on_closed(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", 3_600_000 * MS, 0, 0);
    let did = "timer_new(one-shot 1 hour, flags 0), close(the timer, on_closed)";
    ensure_eq!("R-LOOP-6", lp.close(t), AA_OK, "{did}: its status");
    ensure_eq!(
        "R-LOOP-6",
        lp.alive(),
        Alive(1),
        "{did}: alive() before on_closed"
    );
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("t")));
    ensure_eq!(
        "R-LOOP-6",
        lp.alive(),
        Alive(0),
        "{did}, run_once until on_closed: alive()"
    );
    lp.finish();
}
