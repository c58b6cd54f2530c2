//! Exception handlers (EF2, D-4, R-S11): absorb, pass on, per failure.

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{
    global_scope, run, spawn_in, spawn_try_in, suspend, timeout, Failure, FailureOrigin, Scope,
    ScopeErrorKind,
};
use tests::support::Recorder;

#[test]
fn ef2_the_rfc_exception_handler_example_absorbs_the_failure() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        let r1 = r.clone();
        scope
            .set_exception_handler(move |_scope, coroutine, e| {
                r1.push(format!(
                    "Caught exception: {} in coroutine: {}",
                    e.panic_message().unwrap(),
                    coroutine.spawn_location()
                ));
                Ok(())
            })
            .unwrap();
        let line = line!() + 1;
        spawn_in(&scope, || panic!("Task 1")).unwrap();
        scope.await_completion(&timeout(5_000)).unwrap();
        assert!(!scope.is_cancelled(), "absorbed: the scope goes on");
        r.push(format!("line {line}"));
    })
    .unwrap();
    let line = rec
        .events()
        .last()
        .unwrap()
        .trim_start_matches("line ")
        .to_owned();
    let events = rec.events();
    assert_eq!(events.len(), 2);
    assert!(
        events[0].starts_with(&format!(
            "Caught exception: Task 1 in coroutine: {}:{line}:",
            file!()
        )),
        "{events:?}"
    );
}

#[test]
fn ef2_d4_the_handler_is_called_once_per_failure() {
    run(|| {
        let scope = Scope::new();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s = seen.clone();
        scope
            .set_exception_handler(move |_, _, f| {
                s.borrow_mut().push(f.panic_message().unwrap().to_owned());
                Ok(())
            })
            .unwrap();
        for name in ["a", "b", "c"] {
            spawn_in(&scope, move || panic!("{name}")).unwrap();
        }
        scope.await_completion(&timeout(5_000)).unwrap();
        let mut seen = seen.borrow().clone();
        seen.sort();
        assert_eq!(seen, ["a", "b", "c"]);
    })
    .unwrap();
}

#[test]
fn ef2_an_err_from_the_handler_goes_on_to_the_parent() {
    run(|| {
        let parent = Scope::new();
        let child = Scope::inherit_from(&parent);
        let at_parent: Rc<RefCell<Vec<Failure>>> = Rc::default();
        let p = at_parent.clone();
        parent
            .set_exception_handler(move |_, _, f| {
                p.borrow_mut().push(f.clone());
                Ok(())
            })
            .unwrap();
        let passed: Rc<RefCell<Option<Failure>>> = Rc::default();
        let ps = passed.clone();
        child
            .set_exception_handler(move |_, _, f| {
                *ps.borrow_mut() = Some(f.clone());
                Err(f.clone()) // rethrow
            })
            .unwrap();
        spawn_in(&child, || panic!("from the child")).unwrap();
        parent.await_completion(&timeout(5_000)).unwrap();
        let got = at_parent.borrow();
        assert_eq!(got.len(), 1);
        assert!(Failure::ptr_eq(&got[0], passed.borrow().as_ref().unwrap()));
        assert!(!child.is_cancelled() && !parent.is_cancelled());
    })
    .unwrap();
}

#[test]
fn ef2_a_panicking_handler_is_a_failure_of_the_handler_at_the_parent() {
    run(|| {
        let parent = Scope::new();
        let child = Scope::inherit_from(&parent);
        let at_parent: Rc<RefCell<Vec<Failure>>> = Rc::default();
        let p = at_parent.clone();
        parent
            .set_exception_handler(move |_, _, f| {
                p.borrow_mut().push(f.clone());
                Ok(())
            })
            .unwrap();
        child
            .set_exception_handler(|_, _, _| panic!("the handler broke"))
            .unwrap();
        spawn_in(&child, || panic!("original")).unwrap();
        parent.await_completion(&timeout(5_000)).unwrap();
        let got = at_parent.borrow();
        assert_eq!(got[0].origin(), FailureOrigin::ExceptionHandler(child.id()));
        assert_eq!(
            got[0].to_string(),
            format!(
                "the exception handler of scope {} panicked: the handler broke",
                child.id()
            )
        );
    })
    .unwrap();
}

#[test]
fn ef2_the_child_scope_handler_takes_failures_from_children_only() {
    // The RFC's Service example: the main scope keeps serving while request
    // scopes fail.
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let service = Scope::new();
        let r1 = r.clone();
        service
            .set_child_scope_exception_handler(move |_, _, e| {
                r1.push(format!("Occurred an exception: {}", e.error().unwrap()));
                Ok(())
            })
            .unwrap();
        let r2 = r.clone();
        service
            .set_exception_handler(move |_, _, e| {
                r2.push(format!("own: {}", e.panic_message().unwrap()));
                Ok(())
            })
            .unwrap();
        for i in 0..2 {
            // Each request scope's lifetime is its task's (detached: the
            // handle going out of scope here does not dispose it).
            let request = Scope::inherit_from(&service).detach();
            spawn_try_in(&request, move || {
                Err::<(), _>(format!("request {i} failed"))
            })
            .unwrap();
        }
        spawn_in(&service, || panic!("listener")).unwrap();
        service.await_completion(&timeout(5_000)).unwrap();
        assert!(!service.is_cancelled());
    })
    .unwrap();
    let mut events = rec.events();
    events.sort();
    assert_eq!(
        events,
        [
            "Occurred an exception: request 0 failed",
            "Occurred an exception: request 1 failed",
            "own: listener"
        ]
    );
}

#[test]
fn r_s11_no_exception_handler_on_the_global_scope() {
    run(|| {
        let g = global_scope();
        let err = g.set_exception_handler(|_, _, _| Ok(())).unwrap_err();
        assert_eq!(err.kind(), ScopeErrorKind::GlobalScope);
        assert_eq!(
            err.to_string(),
            format!(
                "cannot set an exception handler on the global scope (scope {})",
                g.id()
            )
        );
        assert_eq!(
            g.set_child_scope_exception_handler(|_, _, _| Ok(()))
                .unwrap_err()
                .kind(),
            ScopeErrorKind::GlobalScope
        );
        suspend().unwrap();
    })
    .unwrap();
}
