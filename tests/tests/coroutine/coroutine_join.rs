//! Joining: values, failures shared by all waiters, panics isolated.

use std::cell::Cell;
use std::rc::Rc;

use async_std_api::{current, delay, run, spawn, suspend, JoinError};
use tests::support::{yield_until, Recorder};

#[test]
fn join_returns_the_coroutines_value() {
    let v = run(|| {
        let h = spawn(|| {
            delay(5).unwrap();
            String::from("done")
        });
        h.join().unwrap()
    })
    .unwrap();
    assert_eq!(v, "done");
}

/// REF-4: awaiting a finished coroutine returns at once, without
/// suspending, as often as asked.
#[test]
fn ref4_join_of_a_finished_coroutine_returns_at_once() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let h = spawn(|| 5);
        yield_until(|| h.is_finished());
        assert!(h.is_finished());
        let r2 = r.clone();
        spawn(move || r2.push("other ran"));
        r.push(format!("joined {}", h.join().unwrap()));
    })
    .unwrap();
    // Joining did not suspend: the other coroutine runs only afterwards.
    rec.assert_events(&["joined 5", "other ran"]);
}

#[test]
fn ref4_waiting_again_on_a_finished_coroutine_gives_the_same_outcome_without_suspending() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        // A cancelled end (not a failure, which nobody awaiting it would
        // send through the error flow).
        let h = spawn(|| delay(60_000));
        let c = h.coroutine();
        yield_until(|| c.is_suspended());
        c.cancel_with("once");
        yield_until(|| c.is_finished());
        let r2 = r.clone();
        spawn(move || r2.push("other ran"));
        for _ in 0..3 {
            let e = c.wait().unwrap_err();
            r.push(format!("wait: {:?}", e.cancelled().unwrap().reason()));
        }
        let e = h.join().unwrap_err();
        r.push(format!("join: {:?}", e.cancelled().unwrap().reason()));
    })
    .unwrap();
    rec.assert_events(&[
        "wait: Some(\"once\")",
        "wait: Some(\"once\")",
        "wait: Some(\"once\")",
        "join: Some(\"once\")",
        "other ran",
    ]);
}

#[test]
fn a_panic_is_caught_at_the_coroutine_boundary_and_others_go_on() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let calm = spawn(move || {
            for i in 0..3 {
                r1.push(format!("calm {i}"));
                suspend().unwrap();
            }
            "calm done"
        });
        let bad = spawn(|| -> u32 { panic!("boom") });
        let err = bad.join().unwrap_err();
        assert!(err.is_panic());
        assert!(!err.is_cancelled() && !err.is_await_cancelled() && !err.is_interrupted());
        assert_eq!(err.panic_message(), Some("boom"));
        assert_eq!(
            err.to_string(),
            format!("coroutine {} panicked: boom", err.id())
        );
        r.push(calm.join().unwrap());
    })
    .unwrap();
    rec.assert_events(&["calm 0", "calm 1", "calm 2", "calm done"]);
}

#[test]
fn several_waiters_of_a_panicked_coroutine_get_the_same_failure() {
    run(|| {
        // It fails only once both wait for it (in any scheduling order): a
        // failure nobody awaits would go through the error flow instead.
        let waiting = Rc::new(Cell::new(0));
        let w = waiting.clone();
        let bad = spawn(move || {
            while w.get() < 2 {
                suspend().unwrap();
            }
            panic!("shared failure")
        })
        .coroutine();
        let (b1, b2) = (bad.clone(), bad.clone());
        let (c1, c2) = (waiting.clone(), waiting.clone());
        let w1 = spawn(move || {
            c1.set(c1.get() + 1);
            b1.wait().unwrap_err()
        });
        let w2 = spawn(move || {
            c2.set(c2.get() + 1);
            b2.wait().unwrap_err()
        });
        let e1 = w1.join().unwrap();
        let e2 = w2.join().unwrap();
        let e3 = bad.wait().unwrap_err();
        assert!(JoinError::same_failure(&e1, &e2));
        assert!(JoinError::same_failure(&e1, &e3));
        assert_eq!(e1.panic_message(), Some("shared failure"));
        assert_eq!(e1.to_string(), e2.to_string());
    })
    .unwrap();
}

#[test]
fn into_panic_returns_the_original_payload_to_the_first_taker() {
    run(|| {
        let c = spawn(|| std::panic::panic_any(17u32)).coroutine();
        let first = c.wait().unwrap_err();
        let second = c.wait().unwrap_err();
        assert_eq!(first.panic_message(), Some("non-string panic payload"));
        let payload = first.into_panic();
        assert_eq!(payload.downcast_ref::<u32>(), Some(&17));
        let again = second.into_panic();
        assert_eq!(
            again.downcast_ref::<String>().map(String::as_str),
            Some("non-string panic payload")
        );
    })
    .unwrap();
}

#[test]
fn try_into_panic_gives_back_a_non_panic_error() {
    run(|| {
        let h = spawn(|| ());
        h.cancel();
        let err = h.join().unwrap_err();
        let err = err.try_into_panic().unwrap_err();
        assert!(err.is_cancelled());
    })
    .unwrap();
}

#[test]
fn r_co6_awaiting_oneself_is_an_error_not_a_wait() {
    run(|| {
        let h = spawn(|| {
            let e = current().wait().unwrap_err();
            assert!(e.is_self_await());
            assert!(!e.is_failed() && !e.is_cancelled() && !e.is_interrupted());
            e.to_string()
        });
        let id = h.id();
        assert_eq!(
            h.join().unwrap(),
            format!("coroutine {id} cannot await itself: it would wait forever")
        );
    })
    .unwrap();
}

#[test]
fn dropping_a_join_handle_detaches_the_coroutine() {
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    run(move || {
        drop(spawn(move || {
            delay(5).unwrap();
            r.set(true);
        }));
    })
    .unwrap();
    assert!(ran.get());
}

#[test]
fn main_panic_unwinds_the_other_coroutines_and_resumes_in_the_caller() {
    struct Guard(Recorder, &'static str);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.push(format!("{} dropped", self.1));
        }
    }
    let rec = Recorder::new();
    let r = rec.clone();
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        run(move || {
            let r1 = r.clone();
            spawn(move || {
                let _g = Guard(r1.clone(), "sleeper");
                let _ = delay(60_000);
                r1.push("sleeper woke");
            });
            let r2 = r.clone();
            spawn(move || {
                let _g = Guard(r2.clone(), "quick");
                r2.push("quick ran");
            });
            delay(1).unwrap();
            panic!("main failed");
        })
    }))
    .unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"main failed"));
    let mut events = rec.events();
    events.sort();
    assert_eq!(events, ["quick dropped", "quick ran", "sleeper dropped"]);
}
