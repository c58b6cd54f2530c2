//! The RFC's Supervisor: a failing task stops its own children, not its
//! siblings.

use async_std_api::{delay, run, spawn, spawn_in, spawn_try_in, timeout, Supervisor};
use tests::support::{any_order, yield_until_waiting, Recorder};

#[test]
fn the_rfc_supervisor_example_only_task_2_prints() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let supervisor = Supervisor::new();
        let r1 = r.clone();
        spawn_try_in(&supervisor, move || {
            let r2 = r1.clone();
            spawn(move || r2.push("This code is not been executed"));
            Err::<(), _>("Task 1")
        })
        .unwrap();
        let r3 = r.clone();
        spawn_in(&supervisor, move || r3.push("Task 2")).unwrap();
        supervisor
            .scope()
            .await_completion(&timeout(5_000))
            .unwrap();
        let f = supervisor.failures();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].error().unwrap().to_string(), "Task 1");
        assert!(!supervisor.scope().is_cancelled());
    })
    .unwrap();
    rec.assert_events(&["Task 2"]);
}

#[test]
fn a_failing_task_cancels_its_children_and_not_its_siblings() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let supervisor = Supervisor::new();
        let r1 = r.clone();
        let sibling = spawn_in(&supervisor, move || {
            delay(40).unwrap();
            r1.push("sibling finished");
        })
        .unwrap();
        let r2 = r.clone();
        spawn_in(&supervisor, move || {
            let r3 = r2.clone();
            let child = spawn(move || match delay(60_000) {
                Ok(()) => r3.push("child slept"),
                Err(c) => r3.push(format!("child: {:?}", c.cause())),
            })
            .coroutine();
            yield_until_waiting(&[&child]);
            panic!("task failed");
        })
        .unwrap();
        sibling.join().unwrap();
        supervisor
            .scope()
            .await_completion(&timeout(5_000))
            .unwrap();
        assert_eq!(supervisor.failures().len(), 1);
        // Every task scope was disposed with its task.
        assert!(supervisor
            .scope()
            .child_scopes()
            .iter()
            .all(|s| s.is_closed()));
    })
    .unwrap();
    rec.assert_steps(&[any_order(["child: Scope", "sibling finished"])]);
}
