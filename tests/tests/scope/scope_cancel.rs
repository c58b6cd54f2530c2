//! Cancelling a scope (R-S3, R-S5, D-8, D-11, D-18).

use async_std_api::{
    current, current_scope, delay, run, spawn, spawn_in, suspend, timeout, CancelCause, Scope,
};
use tests::support::{
    any_order, capture_logs, join_cancelled, one, yield_until_scope_waits, yield_until_waiting,
    Recorder,
};

/// A coroutine in `scope` that records how its wait ended.
fn sleeper(scope: &Scope, rec: &Recorder, name: &'static str) {
    let r = rec.clone();
    spawn_in(scope, move || match delay(60_000) {
        Ok(()) => r.push(format!("{name} woke")),
        Err(c) => r.push(format!(
            "{name} cancelled: {:?} by scope {}",
            c.cause(),
            c.scope().map(|s| s.as_u64()).unwrap_or(0)
        )),
    })
    .unwrap();
}

/// Order-dependent (FIFO): the delivery order shows the bottom-up order.
#[test]
fn fifo_r_s3_d8_cancel_goes_children_first_bottom_up_and_closes_the_tree() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let parent = Scope::new();
        let child = Scope::inherit_from(&parent);
        let grandchild = Scope::inherit_from(&child);
        sleeper(&parent, &r, "parent");
        sleeper(&child, &r, "child");
        sleeper(&grandchild, &r, "grandchild");
        yield_until_scope_waits(&parent);
        parent.cancel();
        for s in [&parent, &child, &grandchild] {
            assert!(s.is_cancelled() && s.is_closed(), "D-8: cancel closes");
        }
        parent
            .await_after_cancellation(None, Some(&timeout(5_000)))
            .unwrap();
        r.push(format!("origin {}", parent.id()));
    })
    .unwrap();
    let origin = rec
        .events()
        .last()
        .unwrap()
        .trim_start_matches("origin ")
        .to_owned();
    rec.assert_events(&[
        &format!("grandchild cancelled: Scope by scope {origin}"),
        &format!("child cancelled: Scope by scope {origin}"),
        &format!("parent cancelled: Scope by scope {origin}"),
        &format!("origin {origin}"),
    ]);
}

#[test]
fn r_s3_cancel_never_reaches_parents_or_siblings() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let parent = Scope::new();
        let left = Scope::inherit_from(&parent);
        let right = Scope::inherit_from(&parent);
        let r1 = r.clone();
        spawn_in(&parent, move || {
            delay(20).unwrap();
            r1.push("parent done");
        })
        .unwrap();
        let r2 = r.clone();
        spawn_in(&right, move || {
            delay(20).unwrap();
            r2.push("right done");
        })
        .unwrap();
        sleeper(&left, &r, "left");
        yield_until_scope_waits(&left);
        left.cancel();
        assert!(!parent.is_cancelled() && !right.is_cancelled());
        parent.await_completion(&timeout(5_000)).unwrap();
    })
    .unwrap();
    let left_id = rec
        .events()
        .iter()
        .find(|e| e.starts_with("left"))
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_owned();
    rec.assert_steps(&[
        one(format!("left cancelled: Scope by scope {left_id}")),
        any_order(["parent done", "right done"]),
    ]);
}

#[test]
fn r_s5_cancel_with_a_reason_on_a_cancelled_scope_is_ignored_with_a_warning() {
    let (id, logs) = capture_logs(|| {
        run(|| {
            let scope = Scope::new();
            let h = spawn_in(&scope, || delay(60_000)).unwrap();
            yield_until_waiting(&[&h.coroutine()]);
            scope.cancel_with("first");
            scope.cancel_with("second");
            scope.cancel(); // no reason: silently nothing
            let c = join_cancelled(h);
            assert_eq!(c.reason(), Some("first"));
            scope.id()
        })
        .unwrap()
    });
    logs.assert_count(
        &format!("scope {id} is already cancelled: cancel_with ignored"),
        1,
    );
}

#[test]
fn d11_cancelling_its_own_scope_does_not_interrupt_the_caller() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        sleeper(&scope, &r, "sibling");
        yield_until_scope_waits(&scope);
        let r1 = r.clone();
        let me = spawn_in(&scope, move || {
            current_scope().cancel();
            r1.push("still running after cancel");
            let c = suspend().unwrap_err();
            r1.push(format!("then: {:?}", c.cause()));
            assert!(current().is_cancellation_requested());
        })
        .unwrap();
        let c = me.coroutine();
        assert_eq!(join_cancelled(me).cause(), CancelCause::Scope);
        assert!(c.is_cancelled() && scope.is_cancelled());
        scope.await_after_cancellation(None, None).unwrap();
    })
    .unwrap();
    let mut events = rec.events();
    assert_eq!(events.remove(0), "still running after cancel");
    events.sort();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0], "sibling cancelled: Scope by scope 2");
    assert_eq!(events[1], "then: Scope");
}

#[test]
fn r_s3_the_rfc_scope_cancellation_example_prints_nothing() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        spawn_in(&scope, move || {
            let r1 = r.clone();
            spawn(move || {
                delay(1000).unwrap();
                r1.push("Task 1");
            });
            let r2 = r.clone();
            spawn(move || {
                delay(2000).unwrap();
                r2.push("Task 2");
            });
        })
        .unwrap();
        scope.cancel();
    })
    .unwrap();
    rec.assert_events(&[]);
}

#[test]
fn d18_cancel_always_cancels_zombies_included() {
    let (cause, logs) = capture_logs(|| {
        run(|| {
            let scope = Scope::new();
            let h = spawn_in(&scope, || delay(60_000)).unwrap();
            yield_until_waiting(&[&h.coroutine()]);
            scope.dispose_safely();
            assert!(h.coroutine().is_zombie());
            scope.cancel();
            join_cancelled(h).cause()
        })
        .unwrap()
    });
    // dispose_safely closed the scope without cancelling it, so the
    // explicit cancel that follows still cancels (with its own cause).
    assert_eq!(cause, CancelCause::Scope);
    logs.assert_count("is a zombie", 1);
}
