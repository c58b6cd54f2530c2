//! `protect` (R-C2, D-21, D-22, P-11, P-13): a critical section that
//! cancellation waits for.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use async_std_api::{check_cancelled, current, delay, protect, run, spawn, suspend};
use tests::support::{join_cancelled, yield_until_waiting, Recorder};

#[test]
fn r_c2_a_cancellation_during_protect_is_delivered_right_after_it() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            let written = protect(|| {
                // Blocking inside is not interrupted.
                delay(20).map(|()| "critical data")
            });
            r1.push(format!("protect returned {written:?}"));
            match check_cancelled() {
                Err(c) => r1.push(format!("then: {}", c.reason().unwrap_or(""))),
                Ok(()) => r1.push("then: not cancelled"),
            }
            // Delivered once (D-1): a later wait is normal.
            delay(1).unwrap();
            r1.push("cleanup done");
        });
        yield_until_waiting(&[&h.coroutine()]); // in protect, in its delay
        h.coroutine().cancel_with("stop");
        let c = join_cancelled(h);
        r.push(format!("joined: cancelled: {}", c.reason().unwrap_or("")));
    })
    .unwrap();
    rec.assert_events(&[
        "protect returned Ok(\"critical data\")",
        "then: stop",
        "cleanup done",
        "joined: cancelled: stop",
    ]);
}

#[test]
fn d21_p13_nested_protect_delivers_after_the_outermost_returns() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        protect(|| {
            protect(|| current().cancel_with("inner"));
            // The inner protect returned: still deferred.
            r.push(format!("after inner: {:?}", check_cancelled().is_err()));
            delay(1).unwrap();
        });
        r.push(format!("after outer: {:?}", check_cancelled().is_err()));
        r.push(format!("again: {:?}", check_cancelled().is_err()));
    })
    .unwrap();
    rec.assert_events(&["after inner: false", "after outer: true", "again: false"]);
}

#[test]
fn d22_d25_an_error_leaving_protect_propagates_and_the_cancellation_stays_pending() {
    run(|| {
        let commit = protect(|| -> Result<(), &'static str> {
            current().cancel();
            Err("commit failed")
        });
        assert_eq!(commit, Err("commit failed"));
        assert!(current().is_cancellation_requested());
        assert!(
            suspend().is_err(),
            "still pending, at the next suspension point"
        );
        // A panic leaving protect: the same.
        let delivered: Rc<Cell<Option<bool>>> = Rc::default();
        let d = delivered.clone();
        let h = spawn(move || {
            let p = catch_unwind(AssertUnwindSafe(|| {
                protect(|| {
                    current().cancel();
                    panic!("write failed");
                })
            }));
            assert!(p.is_err());
            d.set(Some(check_cancelled().is_err()));
        });
        // Caught (the panic and then the cancellation) and returned: it
        // ends cancelled (D-25), not failed.
        join_cancelled(h);
        assert_eq!(delivered.get(), Some(true));
    })
    .unwrap();
}

#[test]
fn d11_a_coroutine_that_returns_right_after_protect_ends_cancelled() {
    run(|| {
        let h = spawn(|| protect(|| current().cancel()));
        let err = h.join().unwrap_err();
        assert!(err.is_cancelled());
    })
    .unwrap();
}

#[test]
fn ref8_phase_one_of_graceful_shutdown_waits_for_protect() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            let done = protect(|| delay(30).is_ok());
            r1.push(format!("protected delay completed: {done}"));
            let c = check_cancelled().unwrap_err();
            r1.push(format!("then: {:?}", c.cause()));
        });
        yield_until_waiting(&[&h.coroutine()]);
        async_std_api::graceful_shutdown();
        // Main is cancelled too: take it (edge-triggered), then join.
        assert!(check_cancelled().is_err());
        let _ = join_cancelled(h);
    })
    .unwrap();
    rec.assert_events(&["protected delay completed: true", "then: Shutdown"]);
}

/// Drops record that they ran: a stack that is unwound drops its locals.
struct Recorded(Recorder, &'static str);

impl Drop for Recorded {
    fn drop(&mut self) {
        self.0.push(format!("dropped {}", self.1));
    }
}

#[test]
fn ref8_phase_two_unwinds_a_protected_coroutine_at_its_next_suspension_point() {
    let rec = Recorder::new();
    let r = rec.clone();
    let err = run(move || {
        let r1 = r.clone();
        let stubborn = spawn(move || {
            let _guard = Recorded(r1.clone(), "the protected coroutine's locals");
            protect(|| loop {
                // Never gives up on its own: only an unwind ends it.
                let _ = delay(5);
            })
        });
        yield_until_waiting(&[&stubborn.coroutine()]);
        // Two unhandled failures: graceful shutdown, then forced.
        let second = spawn(|| {
            if delay(60_000).is_err() {
                panic!("second");
            }
        });
        yield_until_waiting(&[&second.coroutine()]);
        spawn(|| panic!("first"));
        let _ = delay(60_000);
    })
    .unwrap_err();
    assert_eq!(err.kind(), async_std_api::ErrorKind::Failed);
    rec.assert_events(&["dropped the protected coroutine's locals"]);
}

#[test]
fn ref8_a_deadlock_resumes_a_protected_waiter() {
    let rec = Recorder::new();
    let r = rec.clone();
    let err = run(move || {
        let main = current();
        let r1 = r.clone();
        let child = spawn(move || {
            let e = protect(|| main.wait()).unwrap_err();
            r1.push(format!(
                "protected waiter resumed: {:?}",
                e.interrupted_by().unwrap().cause()
            ));
        });
        let _ = child.join();
    })
    .unwrap_err();
    assert_eq!(err.kind(), async_std_api::ErrorKind::Deadlock);
    rec.assert_events(&["protected waiter resumed: Deadlock"]);
}
