//! `select`: the first branch wins, the losers are cancelled and awaited
//! (D-44; the RFC's combinators, which cancel nothing, are D-7).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use async_std_api::combinators::{select, CombineErrorKind};
use async_std_api::{
    coroutines, current, delay, on_finally, run, spawn, spawn_in, suspend, timeout, Coroutine,
    Failure, Scope,
};
use tests::support::{any_order, join_cancelled, one, yield_until, Recorder};

/// Only the calling coroutine is alive: nothing the call started is left.
#[track_caller]
fn assert_alone() {
    let ids: Vec<_> = coroutines().iter().map(Coroutine::id).collect();
    assert_eq!(ids, [current().id()], "coroutines left alive");
}

/// A branch that waits a minute unless cancelled, then records its cleanup
/// (blocking in it: R-C3) and returns `name`.
fn slow(rec: &Recorder, name: &'static str) -> impl FnOnce() -> &'static str + 'static {
    let r = rec.clone();
    move || {
        let r1 = r.clone();
        on_finally(move || r1.push(format!("{name} on_finally")));
        if let Err(c) = delay(60_000) {
            delay(2).unwrap();
            r.push(format!("{name} cancelled: {:?}", c.reason()));
        }
        name
    }
}

#[test]
fn d44_select_returns_the_first_branch_and_the_losers_are_cancelled_and_cleaned_up() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let (left, right) = (slow(&r, "left"), slow(&r, "right"));
        let r1 = r.clone();
        let won = select((
            left,
            move || {
                // What a branch spawns is the call's too (SL1).
                spawn(move || {
                    if delay(60_000).is_err() {
                        r1.push("spawned cancelled");
                    }
                });
                delay(5).unwrap();
                "middle"
            },
            right,
        ))
        .unwrap();
        r.push(format!("select returned {won:?}"));
        assert_alone();
    })
    .unwrap();
    let why = "Some(\"select: branch 1 finished first\")";
    rec.assert_steps(&[
        any_order([
            format!("left cancelled: {why}"),
            "left on_finally".to_owned(),
            format!("right cancelled: {why}"),
            "right on_finally".to_owned(),
            "spawned cancelled".to_owned(),
        ]),
        one("select returned (1, \"middle\")"),
    ]);
}

#[test]
fn d44_select_a_branch_that_panics_first_is_its_error_and_the_others_are_cancelled() {
    let rec = Recorder::new();
    let r = rec.clone();
    // `run` succeeds: the winner's failure is consumed by the call (D-3).
    run(move || {
        let err = select(vec![
            Box::new(slow(&r, "slow")) as Box<dyn FnOnce() -> &'static str>,
            Box::new(|| {
                delay(1).unwrap();
                panic!("branch failed")
            }),
        ])
        .unwrap_err();
        assert_eq!(err.kind(), CombineErrorKind::Input);
        let (i, e) = err.input().unwrap();
        assert_eq!(i, 1);
        assert!(e.is_panic());
        assert_eq!(e.panic_message(), Some("branch failed"));
        assert_eq!(
            err.to_string(),
            format!(
                "combinator input 1 failed: coroutine {} panicked: branch failed",
                e.id()
            )
        );
        assert_alone();
    })
    .unwrap();
    rec.assert_steps(&[any_order([
        "slow cancelled: Some(\"select: branch 1 finished first\")",
        "slow on_finally",
    ])]);
}

#[test]
fn d44_select_a_cancelled_caller_cancels_every_branch_and_waits_for_them() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let (a, b) = (slow(&r, "a"), slow(&r, "b"));
        let r1 = r.clone();
        let caller = spawn(move || {
            let err = select([a, b]).unwrap_err();
            r1.push(format!(
                "caller: {:?} {:?}",
                err.kind(),
                err.cancelled().map(|c| c.cause())
            ));
        });
        // Every coroutine but this one waits: the caller and both branches.
        yield_until(|| {
            coroutines().len() == 4
                && coroutines()
                    .iter()
                    .all(|c| c.id() == current().id() || c.is_suspended())
        });
        caller.cancel();
        let _ = join_cancelled(caller); // it returned after its cancellation (D-25)
        assert_alone();
    })
    .unwrap();
    let why = "Some(\"select: the caller was cancelled\")";
    rec.assert_steps(&[
        any_order([
            format!("a cancelled: {why}"),
            "a on_finally".to_owned(),
            format!("b cancelled: {why}"),
            "b on_finally".to_owned(),
        ]),
        one("caller: Interrupted Some(Explicit)"),
    ]);
}

/// Runs `f` in a scope whose exception handler records each failure's
/// panic message; returns `f`'s value and the messages.
fn with_handler<T: 'static>(f: impl FnOnce() -> T + 'static) -> (T, Vec<String>) {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    let scope = Scope::new();
    scope
        .set_exception_handler(move |_, _, f: &Failure| {
            s.borrow_mut()
                .push(f.panic_message().unwrap_or("?").to_owned());
            Ok(())
        })
        .unwrap();
    let v = spawn_in(&scope, f).unwrap().join().unwrap();
    scope.await_completion(&timeout(10_000)).unwrap();
    let seen = seen.borrow().clone();
    (v, seen)
}

#[test]
fn d44_p15_select_a_loser_failing_in_its_cleanup_goes_to_the_error_flow_once() {
    run(|| {
        let (won, seen) = with_handler(|| {
            let won = select((
                || {
                    if delay(60_000).is_err() {
                        panic!("cleanup failed");
                    }
                    "loser"
                },
                || {
                    delay(5).unwrap();
                    "winner"
                },
            ));
            won.map_err(|e| e.to_string())
        });
        // The winner's value, and the loser's failure handled by the
        // caller's scope (SL4), exactly once.
        assert_eq!(won, Ok((1, "winner")));
        assert_eq!(seen, ["cleanup failed"]);
        assert_alone();
    })
    .unwrap();
}

#[test]
fn d44_p15_select_two_branches_failing_in_one_tick_report_each_failure_once() {
    run(|| {
        let (won, mut seen) = with_handler(|| {
            // Neither can finish before both have started, so both panic,
            // whatever the scheduler runs first; on a FIFO run queue both
            // do so before the caller resumes, while it is subscribed to
            // both (SL4's case).
            let started = Rc::new(Cell::new(0));
            let branch = |name: &'static str| {
                let s = started.clone();
                move || -> u8 {
                    s.set(s.get() + 1);
                    while s.get() < 2 {
                        let _ = suspend();
                    }
                    panic!("{name}")
                }
            };
            let err = select((branch("first"), branch("second"))).unwrap_err();
            let (i, e) = err.input().unwrap();
            (i, e.panic_message().unwrap().to_owned())
        });
        // One is the call's error; the other (awaited when it finished, in
        // the same tick) went to the error flow: each reported once.
        seen.push(won.1);
        seen.sort();
        assert_eq!(seen, ["first", "second"]);
        assert_alone();
    })
    .unwrap();
}

#[test]
fn d44_select_takes_tuples_arrays_and_vecs_and_an_empty_one_is_exhausted() {
    run(|| {
        assert_eq!(select((|| 1,)).unwrap(), (0, 1));
        // Only the last one can finish before the others are cancelled.
        let arr = [10, 20, 30].map(|n| {
            move || {
                if n < 30 {
                    let _ = delay(60_000);
                }
                n
            }
        });
        assert_eq!(select(arr).unwrap(), (2, 30));
        let none: Vec<fn() -> u8> = Vec::new();
        let err = select(none).unwrap_err();
        assert_eq!(err.kind(), CombineErrorKind::Exhausted);
        assert_eq!(err.to_string(), "combinator has no input left to wait for");
        assert_alone();
    })
    .unwrap();
}

#[test]
fn d44_select_waits_for_a_branch_that_is_still_queued_when_the_caller_is_cancelled() {
    // Cancelled before any branch ran: none runs its body (D-23), and the
    // call still returns only once they have finished.
    run(|| {
        let ran = Rc::new(std::cell::Cell::new(0));
        let (r1, r2) = (ran.clone(), ran.clone());
        current().cancel();
        let err = select((move || r1.set(r1.get() + 1), move || r2.set(r2.get() + 1))).unwrap_err();
        assert_eq!(err.kind(), CombineErrorKind::Interrupted);
        assert_eq!(ran.get(), 0);
        assert_alone();
    })
    .unwrap();
}
