//! `on_finally` (R-CO8, D-12, D-23, P-16): once, promptly after completion,
//! before joiners wake, also for a coroutine that never started; handler
//! failures reported apart from the coroutine's own outcome.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use async_std_api::{
    delay, on_finally, run, spawn, spawn_in, timeout, Failure, FailureOrigin, Scope,
};
use tests::support::{yield_until, yield_until_waiting, Recorder};

struct DropFlag(Recorder, &'static str);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.push(format!("{} dropped", self.1));
    }
}

#[test]
fn r_co8_on_finally_runs_once_after_the_body_and_before_joiners_wake() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            let r2 = r1.clone();
            on_finally(move || r2.push("current's handler"));
            delay(5).unwrap();
            r1.push("body");
            5
        });
        let r3 = r.clone();
        h.coroutine()
            .on_finally(move || r3.push("handle's handler"));
        let v = h.join().unwrap();
        r.push(format!("joined {v}"));
    })
    .unwrap();
    // Newest first (like `defer` and drop order): the body registered its
    // handler after main did. Then the joiner.
    rec.assert_events(&["body", "current's handler", "handle's handler", "joined 5"]);
}

#[test]
fn d12_handlers_run_exactly_once_even_if_cancelled_and_disposed_repeatedly() {
    let count = Rc::new(Cell::new(0));
    let c = count.clone();
    run(move || {
        let scope = Scope::new();
        let h = spawn_in(&scope, || delay(60_000)).unwrap();
        let c1 = c.clone();
        h.coroutine().on_finally(move || c1.set(c1.get() + 1));
        yield_until_waiting(&[&h.coroutine()]);
        for _ in 0..3 {
            h.cancel();
            scope.cancel();
            scope.dispose();
        }
        let _ = h.join();
        scope.dispose();
    })
    .unwrap();
    assert_eq!(count.get(), 1);
}

#[test]
fn d12_a_handler_registered_after_completion_runs_promptly() {
    run(|| {
        let h = spawn(|| 1);
        let c = h.coroutine();
        assert_eq!(h.join().unwrap(), 1);
        let ran = Rc::new(Cell::new(false));
        let r = ran.clone();
        c.on_finally(move || r.set(true));
        assert!(ran.get(), "ran at registration, not later");
    })
    .unwrap();
}

#[test]
fn d12_handler_failures_are_collected_and_reported_apart_from_the_outcome() {
    run(|| {
        let scope = Scope::new();
        let reported: Rc<RefCell<Vec<Failure>>> = Rc::default();
        let rep = reported.clone();
        scope
            .set_exception_handler(move |_, _, f| {
                rep.borrow_mut().push(f.clone());
                Ok(())
            })
            .unwrap();
        let h = spawn_in(&scope, || {
            on_finally(|| panic!("close failed"));
            on_finally(|| panic!("flush failed"));
            "value"
        })
        .unwrap();
        let id = h.id();
        // The coroutine's own outcome is untouched by its handlers.
        assert_eq!(h.join().unwrap(), "value");
        scope.await_completion(&timeout(5_000)).unwrap();
        let reported = reported.borrow();
        assert_eq!(reported.len(), 1, "one composite failure");
        let f = &reported[0];
        assert_eq!(f.origin(), FailureOrigin::CoroutineFinally(id));
        // Newest first: "flush failed" ran first and is the primary.
        assert_eq!(f.panic_message(), Some("flush failed"));
        assert_eq!(f.attached()[0].panic_message(), Some("close failed"));
        assert_eq!(
            f.to_string(),
            format!("an on_finally handler of coroutine {id} panicked: flush failed (and 1 more failure)")
        );
    })
    .unwrap();
}

#[test]
fn d23_p16_cancelled_before_start_runs_its_handlers_and_drops_its_captures_before_join_returns() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let flag = DropFlag(r.clone(), "capture");
        let r1 = r.clone();
        let h = spawn(move || {
            let _keep = &flag;
            r1.push("body ran");
        });
        let r2 = r.clone();
        h.coroutine().on_finally(move || r2.push("finally"));
        h.cancel();
        let c = h.coroutine();
        let err = h.join().unwrap_err();
        r.push(format!("joined: cancelled={}", err.is_cancelled()));
        assert!(!c.is_started() && c.is_finished() && c.is_cancelled());
    })
    .unwrap();
    rec.assert_events(&["capture dropped", "finally", "joined: cancelled=true"]);
}

#[test]
fn r_co8_handlers_may_suspend_and_are_not_interrupted_by_cancellation() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let body_done = Rc::new(Cell::new(false));
        let b = body_done.clone();
        let h = spawn(move || {
            let r2 = r1.clone();
            on_finally(move || {
                // Cleanup that blocks: the body is done (I6), so this
                // coroutine can no longer be cancelled.
                delay(10).unwrap();
                r2.push("cleanup done");
            });
            b.set(true);
        });
        let c = h.coroutine();
        // The body ended, and the handler (run right after it, on the same
        // stack) waits in its delay.
        yield_until(|| body_done.get() && c.is_suspended());
        c.cancel();
        assert!(!c.is_cancellation_requested());
        h.join().unwrap();
        r.push("joined");
    })
    .unwrap();
    rec.assert_events(&["cleanup done", "joined"]);
}
