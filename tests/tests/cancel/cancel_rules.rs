//! The rest of cancellation (R-C1, R-C3, D-1, D-2, D-11, P-01, P-23).

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{
    check_cancelled, current, delay, run, spawn, suspend, timeout, CancelCause, JoinError,
};
use tests::support::{join_cancelled, yield_until_waiting, Recorder};

#[test]
fn d11_p23_self_cancel_does_not_unwind_and_a_return_without_suspending_ends_cancelled() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            current().cancel_with("self");
            r1.push("still running after cancel");
            42
        });
        let id = h.id();
        let err = h.join().unwrap_err();
        assert!(err.is_cancelled() && !err.is_failed());
        assert_eq!(err.to_string(), format!("coroutine {id} cancelled: self"));
    })
    .unwrap();
    rec.assert_events(&["still running after cancel"]);
}

#[test]
fn r_c1_first_reason_wins_and_the_cancelled_state_is_kept_for_every_await() {
    run(|| {
        let h = spawn(|| ());
        let c = h.coroutine();
        c.cancel_with("first");
        c.cancel_with("second");
        let a = c.wait().unwrap_err();
        let b = c.wait().unwrap_err();
        assert_eq!(a.cancelled().unwrap().reason(), Some("first"));
        assert_eq!(a.cancelled(), b.cancelled());
        assert!(!c.is_started(), "R-C1: never started");
    })
    .unwrap();
}

#[test]
fn d1_p02_delivered_once_and_requested_stays_true() {
    run(|| {
        current().cancel();
        assert_eq!(
            check_cancelled().unwrap_err().cause(),
            CancelCause::Explicit
        );
        assert!(check_cancelled().is_ok());
        assert!(suspend().is_ok());
        assert!(delay(1).is_ok());
        assert!(current().is_cancellation_requested());
    })
    .unwrap();
}

#[test]
fn r_c3_cleanup_after_a_cancellation_runs_without_restriction() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            if delay(60_000).is_err() {
                let t = timeout(1_000);
                let quick = spawn(|| 5);
                r1.push(format!("joined {}", quick.join_until(&t).unwrap()));
            }
        });
        yield_until_waiting(&[&h.coroutine()]);
        h.cancel();
        join_cancelled(h);
        r.push("cleanup over: ended cancelled");
    })
    .unwrap();
    rec.assert_events(&["joined 5", "cleanup over: ended cancelled"]);
}

/// Order-dependent (FIFO): the waiter must be queued by its wake-up when the
/// cancellation arrives.
#[test]
fn fifo_d2_a_cancellation_wins_over_a_queued_wake_up() {
    let result: Rc<RefCell<Option<Result<(), JoinError>>>> = Rc::default();
    let res = result.clone();
    run(move || {
        let target = spawn(|| suspend().unwrap()).coroutine();
        let t = target.clone();
        let waiter = spawn(move || *res.borrow_mut() = Some(t.wait()));
        suspend().unwrap(); // target yields, waiter waits for it
        suspend().unwrap(); // target finishes: the waiter is queued (status 0)
        assert!(target.is_finished());
        let w = waiter.coroutine();
        assert!(w.is_queued(), "woken, not yet resumed");
        w.cancel(); // D-2: replaces the queued wake-up
        join_cancelled(waiter);
    })
    .unwrap();
    let got = result.borrow_mut().take().unwrap();
    // D-20: the waiter's own cancellation wins over the final outcome.
    assert!(got.unwrap_err().is_interrupted());
}

#[test]
fn p01_a_cancellation_is_never_absorbed_as_a_failure() {
    run(|| {
        let h = spawn(|| delay(60_000));
        yield_until_waiting(&[&h.coroutine()]);
        h.cancel();
        let c = join_cancelled(h);
        // Converting into the general error types keeps it findable.
        let io: std::io::Error = c.clone().into();
        assert_eq!(io.kind(), std::io::ErrorKind::Other);
        assert_eq!(async_std_api::io::cancelled(&io), Some(&c));
        let boxed: Box<dyn std::error::Error + Send + Sync> = c.clone().into();
        assert!(boxed.downcast_ref::<async_std_api::Cancelled>().is_some());
    })
    .unwrap();
}
