//! Ordering of spawn and suspend (RFC "Suspension", REF-1..REF-3).

use async_std_api::{run, spawn, suspend};
use tests::support::Recorder;

fn example(rec: &Recorder, name: &str) {
    rec.push(format!("Hello, {name}!"));
    suspend().unwrap();
    rec.push(format!("Goodbye, {name}!"));
}

// FIFO order is the point (the RFC example's output): skipped under chaos.
#[test]
fn fifo_suspend_interleaves_two_coroutines_like_the_rfc_example() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let (a, b) = (r.clone(), r.clone());
        let w = spawn(move || example(&a, "World"));
        let u = spawn(move || example(&b, "Universe"));
        w.join().unwrap();
        u.join().unwrap();
    })
    .unwrap();
    rec.assert_events(&[
        "Hello, World!",
        "Hello, Universe!",
        "Goodbye, World!",
        "Goodbye, Universe!",
    ]);
}

// FIFO order is the point (the RFC example's output): skipped under chaos.
#[test]
fn fifo_suspend_in_the_main_flow_lets_a_spawned_coroutine_start() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let a = r.clone();
        spawn(move || example(&a, "World"));
        suspend().unwrap();
        r.push("Back to the main flow");
    })
    .unwrap();
    rec.assert_events(&["Hello, World!", "Back to the main flow", "Goodbye, World!"]);
}

#[test]
fn r_co1_spawn_never_runs_the_body_before_the_spawner_suspends() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let c = r.clone();
        let h = spawn(move || c.push("child"));
        r.push("spawned");
        assert!(!h.is_finished());
        h.join().unwrap();
        r.push("joined");
    })
    .unwrap();
    rec.assert_events(&["spawned", "child", "joined"]);
}

#[test]
fn r_co3_suspend_with_one_coroutine_returns_immediately() {
    let n = run(|| {
        for _ in 0..100 {
            suspend().unwrap();
        }
        100
    })
    .unwrap();
    assert_eq!(n, 100);
}

// FIFO order is the point (the RFC example's output): skipped under chaos.
#[test]
fn fifo_coroutines_left_running_when_main_returns_run_to_completion() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        for i in 0..3 {
            let r = r.clone();
            spawn(move || {
                suspend().unwrap();
                r.push(format!("background {i}"));
            });
        }
        r.push("main returns");
    })
    .unwrap();
    rec.assert_events(&[
        "main returns",
        "background 0",
        "background 1",
        "background 2",
    ]);
}

// FIFO order is the point (the RFC example's output): skipped under chaos.
#[test]
fn fifo_children_spawned_by_a_coroutine_start_after_it_yields() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let parent = spawn(move || {
            let r2 = r1.clone();
            let child = spawn(move || r2.push("child"));
            r1.push("parent before yield");
            suspend().unwrap();
            r1.push("parent after yield");
            child.join().unwrap();
        });
        parent.join().unwrap();
    })
    .unwrap();
    rec.assert_events(&["parent before yield", "child", "parent after yield"]);
}

#[test]
fn run_inside_a_runtime_is_refused() {
    let msg = run(|| {
        let err = run(|| ()).unwrap_err();
        assert_eq!(err.kind(), async_std_api::ErrorKind::AlreadyRunning);
        err.to_string()
    })
    .unwrap();
    assert_eq!(msg, "a runtime is already running on this thread");
}

#[test]
fn spawn_outside_a_runtime_panics_naming_the_fix() {
    let err = std::panic::catch_unwind(|| {
        spawn(|| ());
    })
    .unwrap_err();
    let msg = err
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| err.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert_eq!(
        msg,
        "spawn called outside a coroutine runtime: run the program inside async_std_api::run"
    );
}

#[test]
fn run_returns_main_value_after_a_second_runtime_on_the_same_thread() {
    assert_eq!(run(|| 1).unwrap(), 1);
    assert_eq!(run(|| spawn(|| 2).join().unwrap()).unwrap(), 2);
}
