//! D-26: a structured wait never returns while coroutines of its scope
//! still run. A responsibility point that receives a failure gets it once
//! the cancelled siblings finished their cleanup, with the failures that
//! arrived meanwhile attached; its own cancellation and its token still end
//! the wait at once, carrying the failure. None of these depend on the
//! scheduling order (they run under the chaos scheduler too).

use std::cell::Cell;
use std::rc::Rc;

use async_std_api::{
    delay, run, spawn, spawn_in, suspend, timeout, Failure, Scope, ScopeErrorKind,
};
use tests::support::{yield_until, yield_until_scope_waits, Recorder};

/// A sibling whose cleanup takes several blocking steps after its
/// cancellation, recording each.
fn slow_cleanup(r: Recorder, name: &'static str) -> impl FnOnce() + 'static {
    move || {
        if delay(60_000).is_err() {
            for i in 0..3 {
                delay(2).unwrap();
                r.push(format!("{name} cleanup {i}"));
            }
        }
    }
}

#[test]
fn d26_await_completion_returns_the_failure_only_after_the_siblings_cleanup() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        let child = Scope::inherit_from(&scope);
        spawn_in(&scope, slow_cleanup(r.clone(), "sibling")).unwrap();
        spawn_in(&child, slow_cleanup(r.clone(), "nephew")).unwrap();
        spawn_in(&scope, || {
            delay(5).unwrap();
            panic!("boom");
        })
        .unwrap();
        let err = scope.await_completion(&timeout(10_000)).unwrap_err();
        r.push(format!(
            "await returned {:?}: {}",
            err.kind(),
            err.failure().unwrap().panic_message().unwrap()
        ));
        // Nothing of the scope runs any more.
        assert!(scope.is_finished() && child.is_finished());
    })
    .unwrap();
    let events = rec.events();
    assert_eq!(
        events.last().map(String::as_str),
        Some("await returned Failed: boom")
    );
    let mut cleanup: Vec<_> = events[..events.len() - 1].to_vec();
    cleanup.sort();
    assert_eq!(
        cleanup,
        [
            "nephew cleanup 0",
            "nephew cleanup 1",
            "nephew cleanup 2",
            "sibling cleanup 0",
            "sibling cleanup 1",
            "sibling cleanup 2",
        ]
    );
}

#[test]
fn d26_failures_arriving_during_the_cleanup_are_attached_before_the_wait_returns() {
    run(|| {
        let scope = Scope::new();
        spawn_in(&scope, || {
            if delay(60_000).is_err() {
                delay(5).unwrap();
                panic!("second, during cleanup");
            }
        })
        .unwrap();
        spawn_in(&scope, || {
            if delay(60_000).is_err() {
                delay(10).unwrap();
                panic!("third, during cleanup");
            }
        })
        .unwrap();
        yield_until_scope_waits(&scope);
        spawn_in(&scope, || panic!("first")).unwrap();
        let err = scope.await_completion(&timeout(10_000)).unwrap_err();
        assert_eq!(err.kind(), ScopeErrorKind::Failed);
        let first = err.failure().unwrap();
        assert_eq!(first.panic_message(), Some("first"));
        let mut attached: Vec<String> = first
            .attached()
            .iter()
            .map(|f| f.panic_message().unwrap().to_owned())
            .collect();
        attached.sort();
        assert_eq!(
            attached,
            ["second, during cleanup", "third, during cleanup"]
        );
    })
    .unwrap();
}

#[test]
fn d26_every_responsibility_point_gets_the_same_failure_once_the_scope_is_idle() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        spawn_in(&scope, slow_cleanup(r.clone(), "sibling")).unwrap();
        spawn_in(&scope, || {
            delay(5).unwrap();
            panic!("shared");
        })
        .unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|i| {
                let (s, r) = (scope.clone(), r.clone());
                spawn(move || {
                    let err = s.await_completion(&timeout(10_000)).unwrap_err();
                    r.push(format!("waiter {i} returned, idle={}", s.is_finished()));
                    err.failure().unwrap().clone()
                })
            })
            .collect();
        let got: Vec<Failure> = waiters.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(Failure::ptr_eq(&got[0], &got[1]), "the same object (D-13)");
    })
    .unwrap();
    let events = rec.events();
    let cleanup_done = events
        .iter()
        .position(|e| e == "sibling cleanup 2")
        .unwrap();
    for i in 0..2 {
        let at = events
            .iter()
            .position(|e| e == &format!("waiter {i} returned, idle=true"))
            .unwrap_or_else(|| panic!("waiter {i} did not return idle: {events:?}"));
        assert!(at > cleanup_done, "{events:?}");
    }
}

#[test]
fn d26_the_token_still_ends_the_wait_at_once_and_carries_the_failure() {
    run(|| {
        let release = Rc::new(Cell::new(false));
        let fire = Rc::new(Cell::new(false));
        let scope = Scope::new();
        let rel = release.clone();
        let cleanup = spawn_in(&scope, move || {
            if delay(60_000).is_err() {
                // A cleanup that outlives the token.
                while !rel.get() {
                    let _ = suspend();
                }
            }
        })
        .unwrap()
        .coroutine();
        // The token: a coroutine that finishes once the failure was
        // delivered (no timing involved).
        let f = fire.clone();
        let token = spawn(move || yield_until(|| f.get()));
        let (s, f) = (scope.clone(), fire.clone());
        let main = async_std_api::current();
        spawn(move || {
            // Main waits, and the sibling is in its delay (not cancelled
            // before it started, which would leave no cleanup to wait for).
            yield_until(|| main.is_suspended() && cleanup.is_suspended());
            spawn_in(&s, || panic!("boom")).unwrap();
            yield_until(|| s.is_cancelled());
            f.set(true);
        });
        let err = scope.await_completion(&token).unwrap_err();
        assert_eq!(err.kind(), ScopeErrorKind::AwaitCancelled);
        assert_eq!(err.failure().unwrap().panic_message(), Some("boom"));
        assert!(!scope.is_finished(), "the cleanup still runs");
        assert!(err.to_string().contains("the scope had failed"), "{err}");
        release.set(true);
    })
    .unwrap();
}

#[test]
fn d26_the_waiters_own_cancellation_ends_the_wait_at_once_and_carries_the_failure() {
    run(|| {
        let release = Rc::new(Cell::new(false));
        let received = Rc::new(Cell::new(false));
        let scope = Scope::new();
        let rel = release.clone();
        let cleanup = spawn_in(&scope, move || {
            if delay(60_000).is_err() {
                while !rel.get() {
                    let _ = suspend();
                }
            }
        })
        .unwrap()
        .coroutine();
        let (s, got) = (scope.clone(), received.clone());
        let waiter = spawn(move || {
            let err = s.await_completion(&timeout(10_000)).unwrap_err();
            assert_eq!(err.kind(), ScopeErrorKind::Interrupted);
            assert_eq!(err.interrupted_by().unwrap().reason(), Some("stop"));
            assert_eq!(err.failure().unwrap().panic_message(), Some("boom"));
            got.set(true);
        });
        yield_until(|| waiter.coroutine().is_suspended() && cleanup.is_suspended());
        spawn_in(&scope, || panic!("boom")).unwrap();
        yield_until(|| scope.is_cancelled());
        waiter.coroutine().cancel_with("stop");
        yield_until(|| waiter.is_finished());
        assert!(received.get());
        assert!(!scope.is_finished(), "the cleanup still runs");
        release.set(true);
    })
    .unwrap();
}

#[test]
fn d26_an_explicit_cancel_during_the_wait_still_ends_it_at_once() {
    // R-S6: a cancellation (not a failure) ends await_completion at once;
    // await_after_cancellation then waits for the cleanup.
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        spawn_in(&scope, slow_cleanup(r.clone(), "member")).unwrap();
        yield_until_scope_waits(&scope);
        let s = scope.clone();
        spawn(move || {
            suspend().unwrap();
            s.cancel_with("stop");
        });
        let err = scope.await_completion(&timeout(10_000)).unwrap_err();
        r.push(format!("await: {:?}", err.kind()));
        scope
            .await_after_cancellation(None, Some(&timeout(10_000)))
            .unwrap();
        r.push("after cancellation: idle");
    })
    .unwrap();
    rec.assert_events(&[
        "await: Cancelled",
        "member cleanup 0",
        "member cleanup 1",
        "member cleanup 2",
        "after cancellation: idle",
    ]);
}
