//! Deadlines that cancel: `time::with_timeout` (D-44).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_std_api::time::with_timeout;
use async_std_api::{
    check_cancelled, coroutines, current, current_scope, delay, on_finally, run, spawn, spawn_try,
    CancelCause, Coroutine,
};
use tests::support::{any_order, join_cancelled, one, yield_until, yield_until_waiting, Recorder};

/// Only the calling coroutine is alive: nothing the call started is left.
#[track_caller]
fn assert_alone() {
    let ids: Vec<_> = coroutines().iter().map(Coroutine::id).collect();
    assert_eq!(ids, [current().id()], "coroutines left alive");
}

#[test]
fn d44_with_timeout_returns_the_value_in_time_and_leaves_nothing_behind() {
    run(|| {
        let caller_scope = current_scope().id();
        let start = Instant::now();
        let (v, parent) = with_timeout(60_000, move || {
            delay(5).unwrap();
            // SL1: a child scope of the caller's, made for the call.
            (42, current_scope().parent().map(|p| p.id()))
        })
        .unwrap();
        assert_eq!((v, parent), (42, Some(caller_scope)));
        assert_alone();
        // The deadline's timer went with the call: the run does not wait
        // for it (generous: it is 60 s).
        assert!(start.elapsed() < Duration::from_secs(30));
    })
    .unwrap();
}

#[test]
fn d44_on_the_deadline_the_closure_and_what_it_spawned_are_cancelled_and_cleaned_up() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let err = with_timeout(20, move || {
            let r2 = r1.clone();
            on_finally(move || r2.push("closure on_finally"));
            let r3 = r1.clone();
            // What the closure spawns is the call's too (SL1).
            spawn(move || {
                if let Err(c) = delay(60_000) {
                    r3.push(format!("spawned cancelled: {:?}", c.reason()));
                }
            });
            match delay(60_000) {
                Ok(()) => r1.push("closure not cancelled"),
                Err(c) => {
                    delay(5).unwrap(); // cleanup may block (R-C3)
                    r1.push(format!(
                        "closure cancelled: {:?} {:?}",
                        c.cause(),
                        c.reason()
                    ));
                }
            }
        })
        .unwrap_err();
        r.push("with_timeout returned");
        assert!(err.is_elapsed());
        assert!(!err.is_failed() && !err.is_cancelled() && !err.is_interrupted());
        assert!(err.join_error().is_none());
        assert_eq!(
            err.to_string(),
            format!(
                "deadline of 20 ms passed: coroutine {} was cancelled",
                err.id()
            )
        );
        assert!(std::error::Error::source(&err).is_none());
        // The caller itself was not cancelled.
        assert!(!current().is_cancellation_requested());
        assert_alone();
    })
    .unwrap();
    // The two cancelled coroutines clean up in either order; the call
    // returns after both, on_finally included.
    rec.assert_steps(&[
        any_order([
            "spawned cancelled: Some(\"deadline of 20 ms passed\")",
            "closure cancelled: Scope Some(\"deadline of 20 ms passed\")",
            "closure on_finally",
        ]),
        one("with_timeout returned"),
    ]);
    let events = rec.events();
    let at = |e: &str| events.iter().position(|x| x.starts_with(e)).unwrap();
    assert!(at("closure cancelled") < at("closure on_finally"));
}

#[test]
fn d44_a_closure_that_panics_first_is_the_callers_failure_and_consumed() {
    // `run` succeeds: the failure was consumed by the call (D-3), not sent
    // on to the global scope, which would shut the runtime down.
    run(|| {
        let err = with_timeout(60_000, || -> u8 {
            delay(1).unwrap();
            panic!("bad request")
        })
        .unwrap_err();
        assert!(err.is_failed() && !err.is_elapsed());
        assert!(err.join_error().unwrap().is_panic());
        assert_eq!(err.failure().unwrap().panic_message(), Some("bad request"));
        assert_eq!(
            err.to_string(),
            format!("coroutine {} panicked: bad request", err.id())
        );
        assert_alone();
    })
    .unwrap();
}

#[test]
fn d44_a_cancelled_caller_cancels_the_closure_and_waits_for_its_cleanup() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let inner: Rc<RefCell<Option<Coroutine>>> = Rc::default();
        let (r1, slot) = (r.clone(), inner.clone());
        let caller = spawn(move || {
            let r2 = r1.clone();
            let err = with_timeout(60_000, move || {
                *slot.borrow_mut() = Some(current());
                if let Err(c) = delay(60_000) {
                    delay(5).unwrap(); // cleanup may block (R-C3)
                    r2.push(format!("closure cleaned up: {:?}", c.reason()));
                }
            })
            .unwrap_err();
            let by = err
                .join_error()
                .and_then(|e| e.interrupted_by())
                .map(|c| c.cause());
            r1.push(format!(
                "caller interrupted: {} by {by:?}",
                err.is_interrupted()
            ));
        });
        yield_until(|| inner.borrow().is_some());
        let closure = inner.borrow().clone().unwrap();
        yield_until_waiting(&[&caller.coroutine(), &closure]);
        caller.cancel();
        // It caught its cancellation and returned: it ends cancelled (D-25).
        let _ = join_cancelled(caller);
        assert!(closure.is_finished());
        assert_alone();
    })
    .unwrap();
    rec.assert_events(&[
        "closure cleaned up: Some(\"with_timeout: the caller was cancelled\")",
        "caller interrupted: true by Some(Explicit)",
    ]);
}

#[test]
fn d44_d29_a_value_returned_before_the_caller_saw_its_cancellation_wins() {
    run(|| {
        let seen = Rc::new(RefCell::new(None));
        let s = seen.clone();
        let caller = spawn(move || {
            let me = current();
            // The closure cancels its caller and returns in the same tick:
            // its value is there when the caller resumes.
            let v = with_timeout(60_000, move || {
                me.cancel();
                7
            });
            *s.borrow_mut() = Some((
                v.map_err(|e| e.to_string()),
                check_cancelled().map_err(|c| c.cause()),
            ));
        });
        let _ = join_cancelled(caller); // it returned after its cancellation (D-25)
        assert_eq!(
            seen.borrow().clone(),
            Some((Ok(7), Err(CancelCause::Explicit)))
        );
        assert_alone();
    })
    .unwrap();
}

#[test]
fn d44_p03_an_elapsed_deadline_through_question_mark_is_a_failure_not_a_cancellation() {
    run(|| {
        let h = spawn_try(|| {
            with_timeout(1, || delay(60_000).is_ok())?;
            Ok::<_, async_std_api::time::TimeoutError>(())
        });
        let err = h.join().unwrap_err();
        assert!(err.is_failed() && !err.is_cancelled());
        let inner = err
            .failure()
            .unwrap()
            .downcast_ref::<async_std_api::time::TimeoutError>()
            .unwrap();
        assert!(inner.is_elapsed());

        // The caller's own interruption, through `?`, stays a cancellation
        // (P-01): the source chain leads to it.
        let h = spawn_try(|| {
            current().cancel();
            with_timeout(60_000, || ())?;
            Ok::<_, async_std_api::time::TimeoutError>(())
        });
        let err = h.join().unwrap_err();
        assert!(err.is_cancelled() && !err.is_failed());
    })
    .unwrap();
}

#[test]
fn d44_a_zero_deadline_never_runs_the_closure_and_drops_its_captures() {
    run(|| {
        let guard = Rc::new(());
        let g = guard.clone();
        let ran = Rc::new(std::cell::Cell::new(false));
        let r = ran.clone();
        let err = with_timeout(0, move || {
            r.set(true);
            drop(g);
        })
        .unwrap_err();
        assert!(err.is_elapsed());
        assert!(!ran.get());
        assert_eq!(Rc::strong_count(&guard), 1); // the captures were dropped
        assert_alone();
    })
    .unwrap();
}
