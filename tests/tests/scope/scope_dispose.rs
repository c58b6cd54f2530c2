//! Disposal (R-S9, R-S5, D-9, D-10): dropping the last handle, `dispose`,
//! `dispose_safely`, `dispose_after_timeout`.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_std_api::{delay, run, spawn, spawn_in, timeout, CancelCause, Scope, ScopeErrorKind};
use tests::support::{capture_logs, join_cancelled, yield_until_waiting, Recorder};

#[test]
fn d9_dropping_last_scope_handle_cancels_with_warning() {
    let ((sid, created, cid, at), logs) = capture_logs(|| {
        run(|| {
            let scope = Scope::new();
            let created = scope.created_at();
            let view = async_std_api::ScopeRef::clone(&scope);
            let h = spawn_in(&scope, || delay(60_000)).unwrap();
            yield_until_waiting(&[&h.coroutine()]);
            let (sid, cid, at) = (scope.id(), h.id(), h.coroutine().spawn_location());
            drop(scope);
            // A non-owning view does not keep it alive: it was disposed.
            assert!(view.is_closed() && view.is_cancelled());
            let c = join_cancelled(h);
            assert_eq!(c.cause(), CancelCause::Scope);
            (sid, created, cid, at)
        })
        .unwrap()
    });
    logs.assert_count(
        &format!(
            "scope {sid} (created at {created}) dropped while 1 coroutine still ran: cancelling \
             coroutine {cid} (spawned at {at})"
        ),
        1,
    );
}

#[test]
fn d9_clones_share_ownership_and_detach_gives_it_up() {
    let ((), logs) = capture_logs(|| {
        run(|| {
            let scope = Scope::new();
            let clone = scope.clone();
            let h = spawn_in(&scope, || delay(5).is_ok()).unwrap();
            drop(scope);
            assert!(!clone.is_closed(), "a clone still owns it");
            let view = clone.detach();
            assert!(!view.is_closed(), "detached: not disposed");
            assert!(h.join().unwrap());
            // An idle scope dropped: closed, silently.
            let idle = Scope::new();
            let v = async_std_api::ScopeRef::clone(&idle);
            drop(idle);
            assert!(v.is_closed());
        })
        .unwrap();
    });
    logs.assert_count("dropped while", 0);
}

#[test]
fn r_s9_dispose_cancels_with_a_warning_naming_each_coroutine() {
    let ((sid, cid, line), logs) = capture_logs(|| {
        run(|| {
            let scope = Scope::new();
            let h = spawn_in(&scope, || delay(60_000)).unwrap();
            yield_until_waiting(&[&h.coroutine()]);
            let line = line!() + 1;
            scope.dispose();
            scope.dispose(); // R-S5: again is fine, and warns no more
            assert!(scope.is_closed() && scope.is_cancelled());
            let cid = h.id();
            assert_eq!(join_cancelled(h).cause(), CancelCause::Scope);
            (scope.id(), cid, line)
        })
        .unwrap()
    });
    let lines = logs.matching(&format!("scope {sid} disposed at {}:{line}:", file!()));
    assert_eq!(lines.len(), 1, "{logs:?}");
    assert!(lines[0].contains(&format!(
        ": cancelling coroutine {cid} (spawned at {}:",
        file!()
    )));
}

#[test]
fn r_s9_the_rfc_dispose_safely_example_leaves_zombies_that_finish() {
    let rec = Recorder::new();
    let r = rec.clone();
    let ((), logs) = capture_logs(|| {
        run(move || {
            let scope = Scope::new();
            let r0 = r.clone();
            spawn_in(&scope, move || {
                let r1 = r0.clone();
                spawn(move || {
                    delay(10).unwrap();
                    r1.push("Task 1");
                });
                let r2 = r0.clone();
                spawn(move || {
                    // The RFC says 20 ms; a wider gap keeps the order on a
                    // loaded machine whatever the scheduling policy.
                    delay(100).unwrap();
                    r2.push("Task 2");
                });
                r0.push("Root task");
            })
            .unwrap()
            .join()
            .unwrap();
            scope.dispose_safely();
            assert!(scope.is_closed() && !scope.is_cancelled());
        })
        .unwrap();
    });
    rec.assert_events(&["Root task", "Task 1", "Task 2"]);
    logs.assert_count("is a zombie: scope", 2);
}

#[test]
fn d10_d25_the_rfc_dispose_after_timeout_service_example() {
    struct Service {
        scope: Scope,
    }
    impl Drop for Service {
        fn drop(&mut self) {
            self.scope.dispose_after_timeout(50).unwrap();
        }
    }
    let rec = Recorder::new();
    let r = rec.clone();
    let started = Instant::now();
    // What Task 2 caught: it ends cancelled (D-25), so it cannot return it.
    let caught: Rc<Cell<Option<CancelCause>>> = Rc::default();
    let k = caught.clone();
    let (cause, logs) = capture_logs(|| {
        run(move || {
            let service = Service {
                scope: Scope::new(),
            };
            let r0 = r.clone();
            let task2 = spawn_in(&service.scope, move || {
                let r2 = r0.clone();
                let task2 = spawn(move || {
                    delay(20).unwrap();
                    r2.push("Task 2");
                    match delay(5_000) {
                        Ok(()) => r2.push("Task 2 next line never executed"),
                        Err(c) => k.set(Some(c.cause())),
                    }
                });
                r0.push("Task 1");
                task2
            })
            .unwrap()
            .join()
            .unwrap();
            delay(5).unwrap();
            drop(service);
            join_cancelled(task2).cause()
        })
        .unwrap()
    });
    rec.assert_events(&["Task 1", "Task 2"]);
    assert_eq!(caught.get(), Some(CancelCause::ZombieTimeout));
    assert_eq!(cause, CancelCause::ZombieTimeout);
    logs.assert_count("is a zombie", 1);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the zombie's 5 s delay did not keep the program alive"
    );
}

#[test]
fn r_s9_dispose_after_timeout_out_of_bounds_is_an_error_and_does_nothing() {
    run(|| {
        let scope = Scope::new();
        let h = spawn_in(&scope, || delay(5)).unwrap();
        for ms in [0, 600_000, u64::MAX] {
            let err = scope.dispose_after_timeout(ms).unwrap_err();
            assert_eq!(err.kind(), ScopeErrorKind::InvalidTimeout);
            assert_eq!(err.scope(), scope.id());
            assert_eq!(
                err.to_string(),
                format!(
                    "cannot dispose scope {} after {ms} ms: the timeout must be more than 0 and \
                     less than 600000 ms (10 minutes)",
                    scope.id()
                )
            );
        }
        // Nothing was done: the scope is open and its coroutine unharmed.
        assert!(!scope.is_closed() && !scope.is_cancelled());
        h.join().unwrap().unwrap();
        scope.dispose_after_timeout(599_999).unwrap();
        assert!(scope.is_closed());
    })
    .unwrap();
}

#[test]
fn r_s6_await_completion_on_a_safely_disposed_scope_does_not_wait_for_zombies() {
    run(|| {
        let scope = Scope::new();
        let h = spawn_in(&scope, || delay(50).is_ok()).unwrap();
        yield_until_waiting(&[&h.coroutine()]);
        scope.dispose_safely();
        scope.await_completion(&timeout(0)).unwrap();
        assert!(!h.is_finished());
        assert!(h.join().unwrap());
    })
    .unwrap();
}
