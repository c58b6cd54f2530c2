//! Waiting for a scope (R-S6, R-S7, R-S8): responsibility points.

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{
    delay, run, spawn, spawn_in, suspend, timeout, CancelCause, Failure, Scope, ScopeError,
    ScopeErrorKind,
};
use tests::support::{join_cancelled, yield_until_scope_waits, yield_until_waiting, Recorder};

#[test]
fn r_s6_await_completion_waits_for_the_scope_and_its_descendants() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        let child = Scope::inherit_from(&scope);
        let grandchild = Scope::inherit_from(&child);
        let r1 = r.clone();
        spawn_in(&grandchild, move || {
            delay(30).unwrap();
            r1.push("grandchild done");
        })
        .unwrap();
        scope.await_completion(&timeout(5_000)).unwrap();
        r.push("awaited");
    })
    .unwrap();
    rec.assert_events(&["grandchild done", "awaited"]);
}

#[test]
fn r_s6_the_rfc_example_a_deep_failure_reaches_the_responsibility_point() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        spawn_in(&scope, || {
            spawn(|| {
                spawn(|| panic!("Error occurred"));
            });
        })
        .unwrap();
        match scope.await_completion(&timeout(5_000)) {
            Err(e) => r.push(e.failure().unwrap().panic_message().unwrap()),
            Ok(()) => r.push("no error"),
        }
        assert!(scope.is_cancelled(), "no handler: the scope was cancelled");
    })
    .unwrap();
    rec.assert_events(&["Error occurred"]);
}

#[test]
fn r_s6_every_responsibility_point_receives_the_same_failure() {
    // The RFC's "Error Handling" example: two awaiters in another scope.
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        let waiting = Rc::new(std::cell::Cell::new(0));
        let w = waiting.clone();
        spawn_in(&scope, move || {
            // Fail once both responsibility points wait (any order).
            while w.get() < 2 {
                suspend().unwrap();
            }
            panic!("Task 1");
        })
        .unwrap();
        let scope2 = Scope::new();
        let caught: Rc<RefCell<Vec<Failure>>> = Rc::default();
        for name in ["exception1", "exception2"] {
            let s = scope.clone();
            let c = caught.clone();
            let r1 = r.clone();
            let w = waiting.clone();
            spawn_in(&scope2, move || {
                w.set(w.get() + 1);
                if let Err(e) = s.await_completion(&timeout(5_000)) {
                    let f = e.failure().unwrap().clone();
                    r1.push(format!("Caught {name}: {}", f.panic_message().unwrap()));
                    c.borrow_mut().push(f);
                }
            })
            .unwrap();
        }
        scope2.await_completion(&timeout(5_000)).unwrap();
        let c = caught.borrow();
        r.push(if Failure::ptr_eq(&c[0], &c[1]) {
            "The same exception"
        } else {
            "Different exceptions"
        });
    })
    .unwrap();
    let mut events = rec.events();
    let last = events.pop().unwrap();
    events.sort();
    assert_eq!(
        events,
        ["Caught exception1: Task 1", "Caught exception2: Task 1"]
    );
    assert_eq!(last, "The same exception");
}

#[test]
fn r_s6_on_a_cancelled_scope_it_errs_at_once() {
    run(|| {
        let scope = Scope::new();
        spawn_in(&scope, || delay(60_000)).unwrap();
        spawn_in(&scope, || delay(60_000)).unwrap();
        scope.cancel();
        let err = scope.await_completion(&timeout(5_000)).unwrap_err();
        assert_eq!(err.kind(), ScopeErrorKind::Cancelled);
        assert_eq!(err.cancel_cause(), Some(CancelCause::Scope));
        assert_eq!(err.to_string(), format!("scope {} cancelled", scope.id()));
        let s2 = Scope::new();
        s2.cancel_with("server shutdown");
        assert_eq!(
            s2.await_completion(&timeout(0)).unwrap_err().to_string(),
            format!("scope {} cancelled: server shutdown", s2.id())
        );
    })
    .unwrap();
}

#[test]
fn r_s6_the_mandatory_token_bounds_the_wait() {
    run(|| {
        let scope = Scope::new();
        let h = spawn_in(&scope, || delay(60_000)).unwrap();
        let err = scope.await_completion(&timeout(10)).unwrap_err();
        assert_eq!(err.kind(), ScopeErrorKind::AwaitCancelled);
        assert_eq!(
            err.to_string(),
            format!(
                "waiting for scope {} ended: the cancellation token completed first",
                scope.id()
            )
        );
        assert!(!h.is_finished(), "the scope is not affected");
        scope.cancel();
    })
    .unwrap();
}

#[test]
fn r_s6_d25_a_waiter_cancelled_while_waiting_is_interrupted() {
    run(|| {
        let scope = Scope::new();
        spawn_in(&scope, || delay(60_000)).unwrap();
        let s = scope.clone();
        let got: Rc<RefCell<Option<ScopeError>>> = Rc::default();
        let g = got.clone();
        let w = spawn(move || {
            *g.borrow_mut() = Some(s.await_completion(&timeout(60_000)).unwrap_err());
        });
        yield_until_waiting(&[&w.coroutine()]);
        w.cancel();
        // The waiter caught its cancellation and returned: cancelled (D-25).
        let c = join_cancelled(w);
        let err = got.borrow_mut().take().expect("the wait ended");
        assert_eq!(err.kind(), ScopeErrorKind::Interrupted);
        assert_eq!(err.interrupted_by().unwrap().cause(), CancelCause::Explicit);
        assert_eq!(err.interrupted_by(), Some(&c));
        assert!(!scope.is_cancelled());
        scope.cancel();
    })
    .unwrap();
}

#[test]
fn r_s8_awaiting_a_scope_from_inside_it_or_a_child_is_an_error() {
    run(|| {
        let scope = Scope::new();
        let child = Scope::inherit_from(&scope);
        let s = scope.clone();
        let from_self = spawn_in(&scope, move || {
            s.await_completion(&timeout(1_000)).unwrap_err()
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(from_self.kind(), ScopeErrorKind::FromInside);
        assert_eq!(
            from_self.to_string(),
            format!(
                "cannot await scope {} from inside it or one of its child scopes: it would wait \
                 for itself (scope created at {})",
                scope.id(),
                scope.created_at()
            )
        );
        let s = scope.clone();
        let from_child = spawn_in(&child, move || {
            s.await_completion(&timeout(1_000)).unwrap_err()
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(from_child.kind(), ScopeErrorKind::FromInside);
        // The global scope cannot be awaited from anywhere (R-S8's note).
        let g = async_std_api::global_scope();
        assert_eq!(
            g.await_completion(&timeout(0)).unwrap_err().kind(),
            ScopeErrorKind::FromInside
        );
    })
    .unwrap();
}

#[test]
fn r_s8_d11_a_coroutine_that_cancelled_its_own_scope_gets_from_inside_and_keeps_its_cancellation() {
    run(|| {
        let scope = Scope::new();
        let s = scope.clone();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let log = seen.clone();
        let inside = spawn_in(&scope, move || {
            s.cancel(); // D-11: nothing happens at the call
            for _ in 0..2 {
                let e = s.await_after_cancellation(None, None).unwrap_err();
                log.borrow_mut().push(format!("{:?}", e.kind()));
            }
            let e = s.await_completion(&timeout(1_000)).unwrap_err();
            log.borrow_mut().push(format!("{:?}", e.kind()));
            // The misuse did not consume the cancellation: it is delivered
            // at the next cancellation point, once (D-1).
            let c = async_std_api::check_cancelled().unwrap_err();
            log.borrow_mut().push(format!("{:?}", c.cause()));
            log.borrow_mut()
                .push(format!("{}", async_std_api::check_cancelled().is_ok()));
        })
        .unwrap();
        let c = join_cancelled(inside);
        assert_eq!(c.cause(), CancelCause::Scope);
        assert_eq!(
            *seen.borrow(),
            ["FromInside", "FromInside", "FromInside", "Scope", "true"]
        );
    })
    .unwrap();
}

#[test]
fn r_s7_the_rfc_await_after_cancellation_example() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        let s = scope.clone();
        let r1 = r.clone();
        let outside = spawn(move || {
            if let Err(e) = s.await_completion(&timeout(60_000)) {
                s.await_after_cancellation(None, None).unwrap();
                r1.push(format!("Caught exception: {e}"));
            }
        });
        let s = scope.clone();
        let r2 = r.clone();
        spawn_in(&scope, move || {
            s.cancel();
            if delay(1000).is_err() {
                // finally { sleep(1); echo "Finally" }
                delay(10).unwrap();
                r2.push("Finally");
            }
        })
        .unwrap();
        outside.join().unwrap();
        r.push(format!("id {}", scope.id()));
    })
    .unwrap();
    let id = rec
        .events()
        .last()
        .unwrap()
        .trim_start_matches("id ")
        .to_owned();
    rec.assert_events(&[
        "Finally",
        &format!("Caught exception: scope {id} cancelled"),
        &format!("id {id}"),
    ]);
}

#[test]
fn r_s7_requires_a_cancelled_scope_and_hands_each_failure_to_the_handler() {
    run(|| {
        let scope = Scope::new();
        let err = scope.await_after_cancellation(None, None).unwrap_err();
        assert_eq!(err.kind(), ScopeErrorKind::NotCancelled);
        assert_eq!(
            err.to_string(),
            format!(
                "cannot await scope {} after cancellation: it was not cancelled (call cancel first)",
                scope.id()
            )
        );
        for name in ["a", "b"] {
            spawn_in(&scope, move || {
                if delay(60_000).is_err() {
                    panic!("cleanup {name} failed");
                }
            })
            .unwrap();
        }
        yield_until_scope_waits(&scope);
        scope.cancel();
        let seen = RefCell::new(Vec::new());
        let handler = |f: Failure| seen.borrow_mut().push(f.panic_message().unwrap().to_owned());
        scope
            .await_after_cancellation(Some(&handler), Some(&timeout(5_000)))
            .unwrap();
        let mut seen = seen.into_inner();
        seen.sort();
        assert_eq!(seen, ["cleanup a failed", "cleanup b failed"]);
        assert!(scope.is_finished());
    })
    .unwrap();
}
