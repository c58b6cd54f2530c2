//! `timeout` and `await ... until` (R-AU1..R-AU4, D-5, D-6, D-16, D-20).

use std::time::{Duration, Instant};

use async_std_api::{delay, run, spawn, timeout, Awaitable};
use tests::support::{join_cancelled, yield_until, Recorder};

#[test]
fn r_au4_a_timeout_expires_after_its_duration() {
    run(|| {
        let t = timeout(30);
        assert!(!t.is_expired() && !t.is_completed());
        delay(10).unwrap();
        assert!(!t.is_expired());
        delay(60).unwrap();
        assert!(t.is_expired() && t.is_completed());
    })
    .unwrap();
}

#[test]
fn r_au1_r_au3_join_until_the_trigger_fires_first_is_await_cancelled_and_the_coroutine_goes_on() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            delay(100).unwrap();
            r1.push("slow finished");
            7
        });
        let t = Instant::now();
        let err = h.wait_until(&timeout(20)).unwrap_err();
        assert!(t.elapsed() < Duration::from_millis(100));
        assert!(err.is_await_cancelled());
        assert!(!err.is_cancelled() && !err.is_interrupted() && !err.is_panic());
        assert_eq!(
            err.to_string(),
            format!(
                "waiting for coroutine {} ended: the until trigger completed first",
                h.id()
            )
        );
        r.push("await cancelled");
        let c = h.coroutine();
        assert!(!c.is_cancellation_requested() && !c.is_finished());
        r.push(format!("value {}", h.join().unwrap()));
    })
    .unwrap();
    rec.assert_events(&["await cancelled", "slow finished", "value 7"]);
}

#[test]
fn join_until_consumes_the_handle_but_the_coroutine_finishes_later() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            delay(50).unwrap();
            r1.push("finished anyway");
        });
        let c = h.coroutine();
        assert!(h.join_until(&timeout(5)).unwrap_err().is_await_cancelled());
        c.wait().unwrap();
        r.push(format!("finished={}", c.is_finished()));
    })
    .unwrap();
    rec.assert_events(&["finished anyway", "finished=true"]);
}

#[test]
fn d5_join_until_the_coroutine_finishes_first_returns_its_value_and_disarms_the_timer() {
    let t = Instant::now();
    let v = run(|| {
        let h = spawn(|| {
            delay(10).unwrap();
            "fast"
        });
        h.join_until(&timeout(30_000)).unwrap()
    })
    .unwrap();
    assert_eq!(v, "fast");
    // The 30 s timer was disposed with the Timeout: nothing kept the loop alive.
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn d5_d20_a_finished_coroutine_beats_an_expired_trigger() {
    run(|| {
        let h = spawn(|| 1);
        yield_until(|| h.is_finished());
        let t = timeout(0);
        assert!(t.is_expired());
        assert_eq!(h.join_until(&t).unwrap(), 1);
    })
    .unwrap();
}

#[test]
fn d5_an_expired_trigger_ends_the_wait_without_suspending() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let other = spawn(move || r1.push("other ran"));
        let h = spawn(|| delay(10).unwrap());
        let err = h.wait_until(&timeout(0)).unwrap_err();
        r.push(format!("await cancelled={}", err.is_await_cancelled()));
        other.join().unwrap();
        h.join().unwrap();
    })
    .unwrap();
    rec.assert_events(&["await cancelled=true", "other ran"]);
}

#[test]
fn a_coroutine_can_be_the_until_trigger() {
    run(|| {
        let slow = spawn(|| delay(200).is_ok());
        let trigger = spawn(|| delay(10).unwrap());
        let err = slow.wait_until(&trigger).unwrap_err();
        assert!(err.is_await_cancelled());
        assert!(trigger.is_finished());
        slow.cancel();
        // Cancelled in its delay (D-25) or, under chaos, before it started.
        join_cancelled(slow);
    })
    .unwrap();
}

#[test]
fn r_au2_d16_a_failed_until_trigger_ends_the_wait_with_its_failure_as_the_cause() {
    run(|| {
        let slow = spawn(|| delay(60_000).is_ok());
        let trigger = spawn(|| -> u32 { panic!("probe failed") });
        let err = slow.wait_until(&trigger).unwrap_err();
        // Await-cancelled, not the awaited coroutine's failure (D-6(3)).
        assert!(err.is_await_cancelled() && !err.is_failed() && !err.is_cancelled());
        let cause = err.trigger_failure().expect("the trigger's failure");
        assert_eq!(cause.panic_message(), Some("probe failed"));
        assert_eq!(
            err.to_string(),
            format!(
                "waiting for coroutine {} ended: the until trigger failed: {cause}",
                slow.id()
            )
        );
        let source = std::error::Error::source(&err).expect("a source");
        assert_eq!(source.to_string(), cause.to_string());
        // The trigger's awaiters still get the same failure object (R-CO5).
        let again = trigger.join().unwrap_err();
        assert!(async_std_api::Failure::ptr_eq(
            again.failure().unwrap(),
            cause
        ));
        // A trigger that completes normally carries no cause.
        let ok_trigger = spawn(|| ());
        let plain = slow.wait_until(&ok_trigger).unwrap_err();
        assert!(plain.is_await_cancelled() && plain.trigger_failure().is_none());
        slow.cancel();
        // Cancelled in its delay (D-25) or, under chaos, before it started.
        join_cancelled(slow);
    })
    .unwrap();
}
