//! Without handlers (EF3-EF5): the scope is cancelled, the failure goes to
//! the responsibility points or up to the global scope and graceful
//! shutdown; cancellations never enter the flow.

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{
    delay, run, spawn, spawn_in, spawn_try, timeout, CancelCause, ErrorKind, Failure, JoinError,
    Scope,
};
use tests::support::{
    capture_logs, join_cancelled, yield_until_scope_waits, yield_until_waiting, Recorder,
};

#[test]
fn ef4_d14_a_failure_cancels_its_scope_and_the_siblings_carry_it() {
    run(|| {
        let scope = Scope::new();
        let child = Scope::inherit_from(&scope);
        let sibling = spawn_in(&scope, || delay(60_000)).unwrap();
        let nephew = spawn_in(&child, || delay(60_000)).unwrap();
        yield_until_scope_waits(&scope);
        spawn_in(&scope, || panic!("boom")).unwrap();
        let err = scope.await_completion(&timeout(5_000)).unwrap_err();
        let f = err.failure().unwrap().clone();
        assert!(scope.is_cancelled() && child.is_cancelled());
        for h in [sibling, nephew] {
            let c = join_cancelled(h);
            assert_eq!(c.cause(), CancelCause::Failure);
            assert!(Failure::ptr_eq(c.failure().unwrap(), &f));
            assert_eq!(c.scope(), Some(scope.id()));
            assert_eq!(
                c.to_string(),
                format!("coroutine {} cancelled: {f}", c.id())
            );
        }
    })
    .unwrap();
}

#[test]
fn r_tg6_hook_an_explicit_task_cancelled_by_an_implicit_failure_carries_it() {
    // What a TaskGroup builds on (R-TG6, D-14): the awaited task was
    // cancelled because a coroutine it spawned (not awaited) failed.
    run(|| {
        // The failure stops at `outer` (a child-scope handler), so it does
        // not go on to a graceful shutdown.
        let outer = Scope::new();
        outer
            .set_child_scope_exception_handler(|_, _, _| Ok(()))
            .unwrap();
        let scope = Scope::inherit_from(&outer);
        let task = spawn_in(&scope, || {
            spawn(|| panic!("Error in coroutine")); // same scope, not awaited
            delay(1_000)
        })
        .unwrap();
        // Cancelled in its delay (it returns the error: D-25, still
        // cancelled) or before it started.
        let c = join_cancelled(task);
        assert_eq!(c.cause(), CancelCause::Failure);
        assert_eq!(
            c.failure().unwrap().panic_message(),
            Some("Error in coroutine")
        );
        let _ = scope.await_completion(&timeout(0));
    })
    .unwrap();
}

#[test]
fn ef4_without_responsibility_points_it_goes_on_to_the_parent() {
    run(|| {
        let parent = Scope::new();
        let child = Scope::inherit_from(&parent);
        let grandchild = Scope::inherit_from(&child);
        let got: Rc<RefCell<Vec<(u64, Failure)>>> = Rc::default();
        let g = got.clone();
        parent
            .set_child_scope_exception_handler(move |s, _, f| {
                g.borrow_mut().push((s.id().as_u64(), f.clone()));
                Ok(())
            })
            .unwrap();
        spawn_in(&grandchild, || panic!("deep")).unwrap();
        parent.await_completion(&timeout(5_000)).unwrap();
        let got = got.borrow();
        assert_eq!(got.len(), 1, "reported once (P-15)");
        assert_eq!(got[0].1.panic_message(), Some("deep"));
        // The scopes on the way were cancelled; the handler's was not.
        assert!(grandchild.is_cancelled() && child.is_cancelled());
        assert!(!parent.is_cancelled());
    })
    .unwrap();
}

#[test]
fn ef5_ref10_an_unhandled_failure_starts_graceful_shutdown_and_run_fails() {
    let rec = Recorder::new();
    let r = rec.clone();
    let bad_id = Rc::new(std::cell::Cell::new(0));
    let b = bad_id.clone();
    let (err, logs) = capture_logs(|| {
        run(move || {
            let r1 = r.clone();
            let worker = spawn(move || {
                if let Err(c) = delay(60_000) {
                    r1.push(format!(
                        "worker: {:?} after {}",
                        c.cause(),
                        c.failure().unwrap().panic_message().unwrap()
                    ));
                    // Phase one closes nothing: cleanup may still spawn.
                    let r2 = r1.clone();
                    spawn(move || r2.push("cleanup coroutine ran"))
                        .join()
                        .unwrap();
                }
            });
            yield_until_waiting(&[&worker.coroutine()]);
            let bad = spawn(|| panic!("boom"));
            b.set(bad.id().as_u64());
            drop(bad); // nobody awaits it
                       // main is in the middle of a join when the shutdown comes.
            let e = worker.join().unwrap_err();
            r.push(format!("main: {:?}", e.interrupted_by().unwrap().cause()));
        })
        .unwrap_err()
    });
    assert_eq!(err.kind(), ErrorKind::Failed);
    let bad = bad_id.get();
    let expected = format!("unhandled failure: coroutine {bad} panicked: boom");
    assert_eq!(err.to_string(), expected);
    assert_eq!(format!("{err:?}"), expected, "one line for `fn main`");
    rec.assert_steps(&[tests::support::any_order([
        "worker: Shutdown after boom",
        "cleanup coroutine ran",
        "main: Shutdown",
    ])]);
    logs.assert_count(
        &format!("unhandled failure: coroutine {bad} panicked: boom: graceful shutdown"),
        1,
    );
}

#[test]
fn r_c1_an_unhandled_cancellation_is_suppressed() {
    let ((), logs) = capture_logs(|| {
        run(|| {
            let h = spawn(|| delay(60_000));
            let c = h.coroutine();
            drop(h);
            yield_until_waiting(&[&c]);
            c.cancel();
            let _ = c.wait();
            assert!(c.is_cancelled());
        })
        .unwrap();
    });
    logs.assert_count("unhandled", 0);
}

#[test]
fn d19_an_unawaited_await_cancelled_enters_the_flow() {
    run(|| {
        let scope = Scope::new();
        let got: Rc<RefCell<Option<Failure>>> = Rc::default();
        let g = got.clone();
        scope
            .set_exception_handler(move |_, _, f| {
                *g.borrow_mut() = Some(f.clone());
                Ok(())
            })
            .unwrap();
        let slow = spawn(|| delay(60_000));
        let slow_c = slow.coroutine();
        drop(async_std_api::spawn_try_in(
            &scope,
            move || -> Result<(), JoinError> {
                let _ = slow.join_until(&timeout(1))?;
                Ok(())
            },
        ));
        scope.await_completion(&timeout(5_000)).unwrap();
        let f = got.borrow().clone().expect("reported like any failure");
        assert!(f.downcast_ref::<JoinError>().unwrap().is_await_cancelled());
        slow_c.cancel();
    })
    .unwrap();
}

#[test]
fn the_rfc_cancellation_exception_examples_generic_handling_does_not_catch_it() {
    for catch_cancellation in [false, true] {
        let rec = Recorder::new();
        let r = rec.clone();
        run(move || {
            let coroutine =
                spawn_try(|| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
                    delay(1_000)?; // a cancellation propagates, and stays one
                    Err("Task 1".into())
                });
            let c = coroutine.coroutine();
            spawn(move || c.cancel());
            match coroutine.join() {
                // `catch (\Exception $e)`: failures only.
                Err(e) if e.is_failed() => r.push("Caught exception"),
                Err(e) if e.is_cancelled() && catch_cancellation => {
                    r.push("Caught CancellationException")
                }
                _ => {}
            }
            r.push("The end");
        })
        .unwrap();
        if catch_cancellation {
            rec.assert_events(&["Caught CancellationException", "The end"]);
        } else {
            rec.assert_events(&["The end"]);
        }
    }
}
