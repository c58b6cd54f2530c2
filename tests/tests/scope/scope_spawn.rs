//! Spawning into scopes (R-S1, R-S2, R-S4, P-17) and the tree (R-S11).

use async_std_api::{
    current_scope, global_scope, run, spawn, spawn_in, spawn_try_in, timeout, Scope,
    ScopeErrorKind, ScopeRef,
};
use tests::support::{any_order, Recorder};

#[test]
fn r_s1_the_rfc_sibling_tasks_all_land_in_the_same_scope() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        let id = scope.id();
        let r1 = r.clone();
        spawn_in(&scope, move || {
            r1.push(format!("Sibling task 1 in {}", current_scope().id() == id));
            let r2 = r1.clone();
            spawn(move || {
                r2.push(format!("Sibling task 2 in {}", current_scope().id() == id));
                let r3 = r2.clone();
                spawn(move || {
                    r3.push(format!("Sibling task 3 in {}", current_scope().id() == id));
                });
            });
        })
        .unwrap();
        scope.await_completion(&timeout(5_000)).unwrap();
        assert!(scope.child_scopes().is_empty(), "siblings, not children");
    })
    .unwrap();
    rec.assert_events(&[
        "Sibling task 1 in true",
        "Sibling task 2 in true",
        "Sibling task 3 in true",
    ]);
}

#[test]
fn r_s2_new_is_a_root_inherit_is_a_child_of_the_current_scope() {
    run(|| {
        let server = Scope::new();
        assert_eq!(server.parent().unwrap(), global_scope());
        let server_id = server.id();
        let (request_parent, root_parent) = spawn_in(&server, move || {
            let request = Scope::inherit();
            let root = Scope::new();
            (request.parent().unwrap().id(), root.parent().unwrap().id())
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(request_parent, server_id);
        assert_eq!(root_parent, global_scope().id());
        let child = Scope::inherit_from(&server);
        let grandchild = Scope::inherit_from(&child);
        assert_eq!(server.child_scopes(), [ScopeRef::clone(&child)]);
        assert_eq!(child.child_scopes(), [ScopeRef::clone(&grandchild)]);
        drop(grandchild);
        assert!(
            child.child_scopes().is_empty(),
            "a dropped child leaves its parent"
        );
    })
    .unwrap();
}

#[test]
fn r_s4_p17_spawning_into_a_closed_scope_fails_synchronously() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        let r1 = r.clone();
        spawn_in(&scope, move || r1.push("Task 1")).unwrap();
        scope.cancel();
        let r2 = r.clone();
        let err = spawn_in(&scope, move || r2.push("Task 2")).unwrap_err();
        assert_eq!(err.kind(), ScopeErrorKind::Closed);
        assert_eq!(err.scope(), scope.id());
        assert_eq!(
            err.to_string(),
            format!(
                "cannot spawn a coroutine in scope {}: the scope is closed",
                scope.id()
            )
        );
        assert_eq!(
            spawn_try_in(&scope, || Ok::<_, std::io::Error>(()))
                .unwrap_err()
                .kind(),
            ScopeErrorKind::Closed
        );
    })
    .unwrap();
    // Task 1 was cancelled before it started; Task 2 was never created.
    rec.assert_events(&[]);
}

#[test]
fn r_s4_a_plain_spawn_in_a_closed_scope_panics_naming_the_scope_and_the_fix() {
    let msg = std::rc::Rc::new(std::cell::RefCell::new(String::new()));
    let m = msg.clone();
    let id = run(move || {
        let inner = Scope::new();
        let id = inner.id();
        let h = spawn_in(&inner, move || {
            // D-11: cancelling its own scope does not interrupt it here.
            current_scope().cancel();
            let p = std::panic::catch_unwind(|| drop(spawn(|| ()))).unwrap_err();
            *m.borrow_mut() = p.downcast_ref::<String>().cloned().unwrap();
        })
        .unwrap();
        // It returned with its cancellation undelivered: it ends cancelled.
        assert!(h.join().unwrap_err().is_cancelled());
        id
    })
    .unwrap();
    assert_eq!(
        *msg.borrow(),
        format!(
            "cannot spawn a coroutine in scope {id}: the scope is closed (use spawn_in to handle it as an error)"
        )
    );
}

#[test]
fn r_s11_child_of_a_closed_scope_starts_closed_and_cancelled() {
    run(|| {
        let parent = Scope::new();
        parent.dispose();
        let child = Scope::inherit_from(&parent);
        assert!(child.is_closed() && child.is_cancelled());
        assert_eq!(
            spawn_in(&child, || ()).unwrap_err().kind(),
            ScopeErrorKind::Closed
        );
    })
    .unwrap();
}

/// Order-dependent steps are grouped where the order is free.
#[test]
fn r_s11_introspection_lists_coroutines_and_children_and_tells_finished() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        assert!(scope.is_finished(), "nothing in it yet");
        let child = Scope::inherit_from(&scope);
        let r1 = r.clone();
        let a = spawn_in(&scope, move || r1.push("a")).unwrap().coroutine();
        let r2 = r.clone();
        let b = spawn_in(&child, move || r2.push("b")).unwrap().coroutine();
        assert_eq!(scope.coroutines(), std::slice::from_ref(&a));
        assert_eq!(child.coroutines(), std::slice::from_ref(&b));
        assert!(!scope.is_finished() && !child.is_finished());
        scope.await_completion(&timeout(5_000)).unwrap();
        assert!(scope.is_finished() && child.is_finished());
        assert!(!scope.is_closed() && !scope.is_cancelled());
        assert!(scope.coroutines().is_empty());
    })
    .unwrap();
    rec.assert_steps(&[any_order(["a", "b"])]);
}
