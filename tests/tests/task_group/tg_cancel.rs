//! Cancel, dispose, drop, the scope's disposal and failures (R-TG5,
//! R-TG6, D-14).

use async_std_api::{delay, run, spawn, Failure, Scope, TaskGroup, TaskGroupErrorKind};
use tests::support::{capture_logs, yield_until, yield_until_waiting};

#[test]
fn r_tg5_cancel_cancels_the_tasks_without_warnings_and_closes_the_group() {
    let ((), logs) = capture_logs(|| {
        run(|| {
            let group = TaskGroup::<()>::new();
            let t = group.spawn(|| delay(60_000).unwrap_or(())).unwrap();
            yield_until_waiting(&[&t]);
            group.cancel("stop");
            let e = group.join().unwrap_err();
            assert_eq!(e.kind(), TaskGroupErrorKind::Cancelled);
            assert_eq!(e.reason(), Some("stop"));
            assert_eq!(e.to_string(), "task group was cancelled: stop");
            assert!(group.is_cancelled());
            // The group held the only handle of its scope: disposed too.
            assert!(group.scope().is_closed());
            let e = group.spawn(|| ()).unwrap_err();
            assert_eq!(e.kind(), TaskGroupErrorKind::Closed);
            assert_eq!(
                e.to_string(),
                "task group is closed: cannot spawn a task in it"
            );
        })
        .unwrap()
    });
    assert!(logs.lines().is_empty(), "no warnings: {:?}", logs.lines());
}

#[test]
fn r_tg5_a_group_sharing_its_scope_cancels_only_its_own_tasks() {
    run(|| {
        let scope = Scope::new();
        let group = TaskGroup::<()>::with_scope(&scope);
        let t = group
            .spawn(|| {
                spawn(|| delay(60_000).unwrap_or(()));
                delay(60_000).unwrap_or(())
            })
            .unwrap();
        yield_until(|| scope.coroutines().len() == 2 && t.is_suspended());
        group.dispose();
        let _ = t.wait();
        assert!(t.is_cancelled());
        // Not the only owner: the scope and the implicit coroutine go on.
        assert!(!scope.is_closed());
        assert_eq!(scope.coroutines().len(), 1);
        scope.cancel();
    })
    .unwrap();
}

#[test]
fn r_tg5_a_bounded_group_disposes_a_shared_scope() {
    run(|| {
        let scope = Scope::new();
        let group = TaskGroup::<()>::builder()
            .scope(&scope)
            .bounded(true)
            .build();
        group
            .spawn(|| spawn(|| delay(60_000).unwrap_or(())).detach_unit())
            .unwrap();
        yield_until(|| scope.coroutines().len() == 1 && group.is_finished());
        group.dispose();
        assert!(scope.is_closed());
    })
    .unwrap();
}

trait DetachUnit {
    fn detach_unit(self);
}
impl<T> DetachUnit for async_std_api::JoinHandle<T> {
    fn detach_unit(self) {}
}

#[test]
fn r_tg5_dropping_the_group_disposes_its_own_scope() {
    run(|| {
        let group = TaskGroup::<()>::new();
        let scope = group.scope().clone();
        let t = group.spawn(|| delay(60_000).unwrap_or(())).unwrap();
        yield_until_waiting(&[&t]);
        drop(group);
        assert!(scope.is_closed());
        let _ = t.wait();
        assert!(t.is_cancelled());
    })
    .unwrap();
}

#[test]
fn r_tg5_disposing_the_scope_disposes_its_groups_without_zombie_warnings() {
    // The RFC's example: the scope's dispose cancels the group's task, with
    // no warning about it (it is disposed with its group).
    let ((), logs) = capture_logs(|| {
        run(|| {
            let scope = Scope::new();
            let group = TaskGroup::<()>::with_scope(&scope);
            let t = group
                .spawn_try(|| -> Result<(), async_std_api::Cancelled> {
                    delay(1000)?;
                    unreachable!("This line will be executed");
                })
                .unwrap();
            yield_until_waiting(&[&t]);
            scope.dispose();
            assert!(t.wait().unwrap_err().is_cancelled());
            assert!(group.is_cancelled());
            assert!(group.spawn(|| ()).is_err());
        })
        .unwrap()
    });
    assert!(logs.lines().is_empty(), "no warnings: {:?}", logs.lines());
}

#[test]
fn r_tg6_d14_an_implicit_failure_cancels_the_group_await_with_it_as_cause() {
    let handled = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let h = handled.clone();
    let r = run(move || {
        // The failure is not consumed by the await (D-27): a parent with a
        // handler takes it, so nothing reaches the global scope.
        let parent = Scope::new();
        parent
            .set_exception_handler(move |_, _, f| {
                h.borrow_mut().push(f.clone());
                Ok(())
            })
            .unwrap();
        let group = TaskGroup::<()>::with_scope(&Scope::inherit_from(&parent));
        group
            .spawn_try(|| {
                spawn(|| panic!("Error in coroutine"));
                delay(60_000)
            })
            .unwrap();
        let e = group.join().unwrap_err();
        assert_eq!(e.kind(), TaskGroupErrorKind::Cancelled);
        let cause = e.cause().unwrap();
        assert_eq!(cause.panic_message(), Some("Error in coroutine"));
        // The same object the scope failed with (D-13), as the task's own
        // cancellation carries, and as the parent's handler received.
        let task_err = &group.errors()[&0];
        let carried: &Failure = task_err.cancelled().unwrap().failure().unwrap();
        assert!(Failure::ptr_eq(cause, carried));
        assert!(Failure::ptr_eq(cause, &handled.borrow()[0]));
        assert_eq!(e.to_string(), format!("task group was cancelled: {cause}"));
        "went on"
    });
    assert_eq!(r.unwrap(), "went on");
}

#[test]
fn r_tg6_with_a_scope_handler_the_group_is_not_cancelled() {
    run(|| {
        let scope = Scope::new();
        let group = TaskGroup::<u8>::builder()
            .scope(&scope)
            .capture_results(true)
            .build();
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let s = seen.clone();
        scope
            .set_exception_handler(move |_, _, f| {
                s.borrow_mut().push(f.panic_message().unwrap().to_owned());
                Ok(())
            })
            .unwrap();
        group
            .spawn(|| {
                spawn(|| panic!("Error in coroutine"));
                delay(5).unwrap();
                1
            })
            .unwrap();
        assert_eq!(group.join().unwrap()[&0], 1);
        assert_eq!(*seen.borrow(), ["Error in coroutine"]);
    })
    .unwrap();
}

#[test]
fn r_tg_hierarchy_cancelling_the_parent_group_cancels_the_child_groups_tasks() {
    run(|| {
        let parent = TaskGroup::<()>::new();
        let inner = std::rc::Rc::new(std::cell::Cell::new(None));
        let i = inner.clone();
        let t = parent
            .spawn(move || {
                let child = TaskGroup::<()>::with_scope(&Scope::inherit());
                let c = child.spawn(|| delay(60_000).unwrap_or(())).unwrap();
                i.set(Some(c));
                let _ = child.join();
            })
            .unwrap();
        yield_until(|| {
            let c = inner.take();
            let ok = c.as_ref().is_some_and(|c| c.is_suspended()) && t.is_suspended();
            inner.set(c);
            ok
        });
        parent.cancel("parent gone");
        let c = inner.take().unwrap();
        let _ = c.wait();
        assert!(c.is_cancelled());
        let _ = t.wait();
        assert!(t.is_cancelled());
    })
    .unwrap();
}
