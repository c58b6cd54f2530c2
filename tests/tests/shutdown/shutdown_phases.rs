//! The two phases of graceful shutdown (R-GS1), its triggers, and what
//! `run` returns.

use async_std_api::{
    check_cancelled, current, delay, global_scope, graceful_shutdown, graceful_shutdown_with, run,
    spawn, suspend, CancelCause, ErrorKind, Scope,
};
use tests::support::{
    any_order, capture_logs, join_cancelled, yield_until_scope_waits, yield_until_waiting, Recorder,
};

struct Guard(Recorder, &'static str);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.push(format!("{} dropped", self.1));
    }
}

#[test]
fn r_gs1_graceful_shutdown_cancels_every_scope_and_closes_none() {
    let rec = Recorder::new();
    let r = rec.clone();
    let v = run(move || {
        let scope = Scope::new();
        let r1 = r.clone();
        let s = scope.clone();
        async_std_api::spawn_in(&scope, move || {
            let c = delay(60_000).unwrap_err();
            r1.push(format!(
                "in scope: {:?}: {}",
                c.cause(),
                c.reason().unwrap()
            ));
            // Spawning is still allowed, even in this scope.
            let r2 = r1.clone();
            async_std_api::spawn_in(&s, move || r2.push("spawned during shutdown"))
                .unwrap()
                .join()
                .unwrap();
        })
        .unwrap();
        yield_until_scope_waits(&scope);
        graceful_shutdown_with("maintenance");
        assert!(!scope.is_closed());
        assert_eq!(
            check_cancelled().unwrap_err().cause(),
            CancelCause::Shutdown
        );
        scope
            .await_after_cancellation(None, Some(&async_std_api::timeout(5_000)))
            .unwrap();
        graceful_shutdown(); // again: nothing
        "main's value"
    })
    .unwrap();
    assert_eq!(v, "main's value");
    rec.assert_events(&["in scope: Shutdown: maintenance", "spawned during shutdown"]);
}

#[test]
fn r_gs1_cancelling_the_global_scope_starts_graceful_shutdown() {
    run(|| {
        let h = spawn(|| delay(60_000));
        yield_until_waiting(&[&h.coroutine()]);
        global_scope().cancel();
        assert!(global_scope().is_cancelled() && !global_scope().is_closed());
        assert!(suspend().is_err());
        assert_eq!(join_cancelled(h).cause(), CancelCause::Shutdown);
    })
    .unwrap();
}

#[test]
fn r_gs1_a_second_unhandled_failure_starts_phase_two() {
    let rec = Recorder::new();
    let r = rec.clone();
    let (err, logs) = capture_logs(|| {
        run(move || {
            // A coroutine that ignores its cancellation: only phase two ends it.
            let r1 = r.clone();
            let stubborn = spawn(move || {
                let _g = Guard(r1.clone(), "stubborn");
                loop {
                    if delay(5).is_err() {
                        r1.push("stubborn ignored its cancellation");
                    }
                }
            });
            // One whose cleanup fails: the second unhandled failure.
            let cleanup = spawn(|| {
                if delay(60_000).is_err() {
                    panic!("cleanup failed");
                }
            })
            .coroutine();
            yield_until_waiting(&[&cleanup, &stubborn.coroutine()]);
            drop(spawn(|| panic!("first")));
            let _ = delay(60_000);
            let _ = delay(60_000);
        })
        .unwrap_err()
    });
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(
        err.to_string()
            .ends_with("panicked: first (and 1 more failure)"),
        "{err}"
    );
    // Whether it ignored phase one's cancellation before phase two came
    // depends on the scheduling order; in the end its stack was unwound.
    let mut events = rec.events();
    assert_eq!(events.pop().as_deref(), Some("stubborn dropped"));
    assert!(
        events
            .iter()
            .all(|e| e == "stubborn ignored its cancellation"),
        "{events:?}"
    );
    logs.assert_count("unhandled failure during graceful shutdown", 1);
}

/// Checks that phase two reaches a coroutine that phase one had already
/// queued with its cancellation (it keeps that wake-up status): its next
/// suspension point unwinds it, so it cannot wait, or loop, forever.
#[test]
fn r_gs1_phase_two_unwinds_a_coroutine_already_queued_with_its_cancellation() {
    let rec = Recorder::new();
    let r = rec.clone();
    let (err, _logs) = capture_logs(|| {
        run(move || {
            let r1 = r.clone();
            let stubborn = spawn(move || {
                let _g = Guard(r1.clone(), "stubborn");
                loop {
                    if delay(60_000).is_err() {
                        r1.push("stubborn ignored its cancellation");
                    }
                }
            })
            .coroutine();
            yield_until_waiting(&[&stubborn]);
            // Two unhandled failures from one coroutine, before `stubborn`
            // runs again: its body's (phase one queues `stubborn` with its
            // cancellation) and its `on_finally` handler's (phase two).
            drop(spawn(|| {
                async_std_api::on_finally(|| panic!("second"));
                panic!("first");
            }));
            let _ = delay(60_000);
            let _ = delay(60_000);
        })
        .unwrap_err()
    });
    assert_eq!(err.kind(), ErrorKind::Failed);
    // Forced: it never gets to ignore the cancellation; its stack unwinds.
    rec.assert_events(&["stubborn dropped"]);
}

#[test]
fn r_gs1_main_ending_cancelled_makes_run_fail_in_one_line() {
    let err = run(|| {
        graceful_shutdown();
        // main returns with its cancellation undelivered (D-11).
    })
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Cancelled);
    assert_eq!(
        err.to_string(),
        "the main coroutine ended cancelled: coroutine 1 cancelled: shutdown"
    );
}

#[test]
fn r_dl1_a_deadlock_puts_the_runtime_in_graceful_shutdown() {
    let rec = Recorder::new();
    let r = rec.clone();
    let (err, logs) = capture_logs(|| {
        run(move || {
            let main = current();
            let m = main.clone();
            let a = spawn(move || m.wait().unwrap_err()); // waits for main
            let r1 = r.clone();
            // Also waits for main; nobody awaits it. After the deadlock it
            // fails: a failure *during* graceful shutdown.
            drop(spawn(move || {
                let e = main.wait().unwrap_err();
                r1.push(format!("b: {:?}", e.interrupted_by().unwrap().cause()));
                panic!("after the deadlock");
            }));
            let e = a.join().unwrap_err(); // main waits for a: deadlock
            r.push(format!("main: {:?}", e.interrupted_by().unwrap().cause()));
        })
        .unwrap_err()
    });
    rec.assert_steps(&[any_order(["b: Deadlock", "main: Deadlock"])]);
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(
        err.to_string().ends_with("panicked: after the deadlock"),
        "{err}"
    );
    logs.assert_count("deadlock: 3 coroutines wait", 1);
    logs.assert_count("unhandled failure during graceful shutdown", 1);
}
