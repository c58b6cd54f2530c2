//! More of the RFC's scope examples, as recorded events.

use async_std_api::{
    current_scope, delay, on_finally, run, spawn, spawn_in, timeout, Scope, ScopeErrorKind,
};
use tests::support::{capture_logs, Recorder};

#[test]
fn r_s9_the_rfc_dispose_example_cancels_and_warns_instead_of_leaving_zombies() {
    let rec = Recorder::new();
    let r = rec.clone();
    let ((), logs) = capture_logs(|| {
        run(move || {
            let scope = Scope::new();
            let r0 = r.clone();
            spawn_in(&scope, move || {
                let r1 = r0.clone();
                spawn(move || {
                    if delay(10).is_ok() {
                        r1.push("Task 1");
                    }
                });
                let r2 = r0.clone();
                spawn(move || {
                    if delay(20).is_ok() {
                        r2.push("Task 2");
                    }
                });
                r0.push("Root task");
            })
            .unwrap()
            .join()
            .unwrap();
            scope.dispose();
            scope
                .await_after_cancellation(None, Some(&timeout(5_000)))
                .unwrap();
        })
        .unwrap();
    });
    rec.assert_events(&["Root task"]);
    let warnings = logs.matching("disposed at");
    assert_eq!(warnings.len(), 1, "{logs:?}");
    assert!(
        warnings[0].contains(": cancelling coroutine"),
        "{warnings:?}"
    );
    assert_eq!(warnings[0].matches("(spawned at").count(), 2, "names both");
}

#[test]
fn r_co8_the_rfc_on_finally_examples() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        // Scope: a failing task, the scope's handler-less cancellation, its
        // finally handler, and the responsibility point.
        let scope = Scope::new();
        spawn_in(&scope, || panic!("Task 1")).unwrap();
        let r1 = r.clone();
        scope.on_finally(move || r1.push("Task 1 completed"));
        let e = scope.await_completion(&timeout(5_000)).unwrap_err();
        assert_eq!(e.kind(), ScopeErrorKind::Failed);
        r.push(format!(
            "caught: {}",
            e.failure().unwrap().panic_message().unwrap()
        ));
        // Coroutine: `$coroutine->onFinally()` on a throwing task, and
        // `onFinally(fn() => fclose($file))` from inside.
        let r2 = r.clone();
        let task = spawn(move || {
            let r3 = r2.clone();
            on_finally(move || r3.push("file closed"));
            panic!("Task 1");
        });
        let r4 = r.clone();
        task.coroutine()
            .on_finally(move || r4.push("Task completed"));
        assert!(task.join().unwrap_err().is_panic());
    })
    .unwrap();
    rec.assert_events(&[
        "Task 1 completed",
        "caught: Task 1",
        // Newest first: the body registered its handler after main did.
        "file closed",
        "Task completed",
    ]);
}

#[test]
fn r_s6_the_rfc_await_all_child_tasks_example() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        // processBackgroundJobs: one scope for the jobs, awaited.
        let scope = Scope::new();
        for job in ["a", "b"] {
            let r1 = r.clone();
            spawn_in(&scope, move || {
                // processJob: a child scope for the job's tasks, awaited
                // from the job (outside that child scope: allowed).
                let job_scope = Scope::inherit();
                for task in ["task1", "task2"] {
                    let r2 = r1.clone();
                    spawn_in(&job_scope, move || {
                        delay(5).unwrap();
                        r2.push(format!("{job}: {task}"));
                    })
                    .unwrap();
                }
                job_scope.await_completion(&timeout(300_000)).unwrap();
                r1.push(format!("{job}: done in scope {}", current_scope().id()));
            })
            .unwrap();
        }
        scope.await_completion(&timeout(300_000)).unwrap();
        r.push(format!("all jobs done ({})", scope.id()));
    })
    .unwrap();
    let last = rec.events().last().cloned().unwrap();
    let sid = last
        .trim_start_matches("all jobs done (")
        .trim_end_matches(')')
        .to_owned();
    let mut events = rec.events();
    events.pop();
    // Each job's tasks before the job's "done"; jobs interleave freely.
    for job in ["a", "b"] {
        let done = events
            .iter()
            .position(|e| *e == format!("{job}: done in scope {sid}"))
            .unwrap();
        for task in ["task1", "task2"] {
            let t = events
                .iter()
                .position(|e| *e == format!("{job}: {task}"))
                .unwrap();
            assert!(t < done, "{events:?}");
        }
    }
    assert_eq!(events.len(), 6);
}
