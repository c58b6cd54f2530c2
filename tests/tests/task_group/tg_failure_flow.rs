//! D-27: only a handler or waiter that received a failure itself consumes
//! it. A task group's awaiter that gets "task group was cancelled" because
//! an implicit coroutine of its scope failed (R-TG6, D-14) does not: the
//! failure goes on to the scope's parent. A failed *explicit* task is
//! consumed by the group's await, as a join consumes (D-3).

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{delay, run, spawn, ErrorKind, Failure, Scope, TaskGroup};
use tests::support::capture_logs;

/// A parent scope whose exception handler keeps every failure it gets.
fn handled_parent() -> (Scope, Rc<RefCell<Vec<Failure>>>) {
    let got = Rc::new(RefCell::new(Vec::new()));
    let parent = Scope::new();
    let g = got.clone();
    parent
        .set_exception_handler(move |_, _, f| {
            g.borrow_mut().push(f.clone());
            Ok(())
        })
        .unwrap();
    (parent, got)
}

#[test]
fn d27_an_implicit_failure_in_a_group_scope_reaches_the_parent_handler() {
    run(|| {
        let (parent, handled) = handled_parent();
        let group = TaskGroup::<()>::with_scope(&Scope::inherit_from(&parent));
        group
            .spawn(|| {
                spawn(|| panic!("implicit")); // the scope's, not the group's
                let _ = delay(60_000);
            })
            .unwrap();
        let e = group.join().unwrap_err();
        assert!(e.is_cancelled(), "R-TG6: {e}");
        let cause = e.cause().expect("D-14: the failure is the cause").clone();
        assert_eq!(cause.panic_message(), Some("implicit"));
        let handled = handled.borrow();
        assert_eq!(handled.len(), 1, "the parent's handler got it once");
        assert!(Failure::ptr_eq(&handled[0], &cause), "the same object");
    })
    .unwrap();
}

#[test]
fn d27_without_any_handler_the_failure_reaches_the_global_scope() {
    let (r, logs) = capture_logs(|| {
        run(|| {
            let group = TaskGroup::<()>::new();
            group
                .spawn(|| {
                    spawn(|| panic!("nobody handles me"));
                    let _ = delay(60_000);
                })
                .unwrap();
            // The failure reached the global scope, which started graceful
            // shutdown: this waiter (main) is cancelled too.
            assert!(group.join().unwrap_err().is_interrupted());
        })
    });
    let err = r.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(err.to_string().contains("nobody handles me"), "{err}");
    logs.assert_count("unhandled failure", 1);
}

#[test]
fn d27_d3_a_failed_explicit_task_is_consumed_by_the_groups_await() {
    run(|| {
        let (parent, handled) = handled_parent();
        let group = TaskGroup::<()>::with_scope(&Scope::inherit_from(&parent));
        group.spawn(|| panic!("explicit")).unwrap();
        let e = group.join().unwrap_err();
        assert!(e.is_failed(), "{e}");
        let errors = e.errors();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[&0].panic_message(), Some("explicit"));
        assert!(handled.borrow().is_empty(), "consumed by the await (D-3)");
    })
    .unwrap();
}

#[test]
fn d27_a_scope_await_completion_still_consumes_what_it_receives() {
    // Contrast: a responsibility point receives the failure itself (R-S6).
    run(|| {
        let (parent, handled) = handled_parent();
        let scope = Scope::inherit_from(&parent);
        async_std_api::spawn_in(&scope, || panic!("received")).unwrap();
        let e = scope
            .await_completion(&async_std_api::timeout(10_000))
            .unwrap_err();
        assert_eq!(e.failure().unwrap().panic_message(), Some("received"));
        assert!(handled.borrow().is_empty());
    })
    .unwrap();
}
