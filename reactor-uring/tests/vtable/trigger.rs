//! Triggers: fired from other threads, coalescing, hidden from liveness.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use async_abi::*;

use crate::support::*;

const LIMIT: Duration = Duration::from_secs(5);

/// A raw event pointer another thread may fire (the host keeps it alive).
#[derive(Clone, Copy)]
struct Shared(*mut AaEvent, &'static AaReactorVTable);
// SAFETY: `trigger_fire` is `[any]`-thread; the test keeps the trigger
// undisposed until the threads are joined.
unsafe impl Send for Shared {}

impl Shared {
    fn fire(self) -> AaStatus {
        // SAFETY: see `Send` above.
        unsafe { (self.1.trigger_fire.unwrap())(self.0) }
    }
}

#[test]
fn a_trigger_fired_from_another_thread_calls_back_on_the_loop() {
    let mut lp = crate::uring_loop!();
    let ev = lp.trigger("t", 0);
    assert_eq!(lp.alive(), 1, "an open trigger keeps the loop alive");
    let shared = Shared(ev, lp.vt);
    let thread = std::thread::spawn(move || shared.fire());
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(thread.join().unwrap(), AA_OK);
    assert_eq!(lp.take_log(), [Rec::Trigger("t", 0)]);
    assert_eq!(lp.alive(), 1, "it stays open");
    lp.dispose(ev);
    lp.finish();
}

#[test]
fn fires_before_the_loop_notices_coalesce_into_one_callback() {
    let mut lp = crate::uring_loop!();
    let ev = lp.trigger("t", 0);
    let shared = Shared(ev, lp.vt);
    for _ in 0..5 {
        assert_eq!(shared.fire(), AA_OK);
    }
    lp.run_until(LIMIT, |log| !log.is_empty());
    lp.run_once(0);
    assert_eq!(lp.take_log(), [Rec::Trigger("t", 0)]);
    // A fire after the callback is a new one.
    assert_eq!(shared.fire(), AA_OK);
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Trigger("t", 0)]);
    lp.dispose(ev);
    lp.finish();
}

#[test]
fn many_threads_firing_never_lose_the_last_fire() {
    let mut lp = crate::uring_loop!();
    let ev = lp.trigger("t", 0);
    let shared = Shared(ev, lp.vt);
    let fired = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (barrier, fired) = (Arc::clone(&barrier), Arc::clone(&fired));
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..1000 {
                    assert_eq!(shared.fire(), AA_OK);
                }
                fired.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    // Run until every thread is done, then once more must deliver whatever
    // the last fires left: at least one callback after the last fire.
    while fired.load(Ordering::SeqCst) < 4 {
        lp.run_once(1_000_000);
    }
    for t in threads {
        t.join().unwrap();
    }
    lp.take_log();
    // The flag is either clear (everything delivered) or set with an
    // eventfd write pending: one more blocking iteration settles it.
    let pending = shared.fire();
    assert_eq!(pending, AA_OK);
    lp.run_until(LIMIT, |log| !log.is_empty());
    lp.dispose(ev);
    lp.finish();
}

#[test]
fn hidden_trigger_does_not_keep_the_loop_alive_and_cancel_closes_it() {
    let mut lp = crate::uring_loop!();
    let ev = lp.trigger("t", AA_EVF_HIDDEN);
    assert_eq!(lp.alive(), 0);
    assert_eq!(lp.cancel(ev, AA_E_CANCELLED), AA_OK);
    lp.run_once(0);
    assert_eq!(lp.take_log(), [Rec::Trigger("t", AA_E_CANCELLED)]);
    assert_eq!(Shared(ev, lp.vt).fire(), AA_E_CLOSED);
    lp.dispose(ev);
    lp.finish();
}

#[test]
fn wake_from_another_thread_interrupts_a_blocking_run_once() {
    let mut lp = crate::uring_loop!();
    // Something alive, so a blocking wait would otherwise last forever.
    let t = lp.trigger("t", 0);
    #[derive(Clone, Copy)]
    struct R(*mut AaReactor, &'static AaReactorVTable);
    // SAFETY: `wake` is `[any]`-thread and the reactor outlives the thread.
    unsafe impl Send for R {}
    let r = R(lp.r, lp.vt);
    let thread = std::thread::spawn(move || {
        let r = r;
        // SAFETY: see `Send` above.
        unsafe { (r.1.wake.unwrap())(r.0) }
    });
    assert_eq!(lp.run_once(-1), 0, "woken, no callback");
    assert_eq!(thread.join().unwrap(), AA_OK);
    lp.dispose(t);
    lp.finish();
}

#[test]
fn close_of_a_trigger_calls_on_closed_from_a_later_iteration() {
    let mut lp = crate::uring_loop!();
    let ev = lp.trigger("t", 0);
    assert_eq!(lp.close("t", ev), AA_OK);
    assert!(lp.log.borrow().is_empty());
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Closed("t")]);
    assert_eq!(lp.alive(), 0);
    lp.dispose(ev);
    lp.finish();
}
