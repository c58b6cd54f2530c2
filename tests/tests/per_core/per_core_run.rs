//! The run: every loop runs `f` on its own thread, values in loop order,
//! and how a failing loop ends the others.

use std::sync::{Arc, Mutex};

use async_std_api::per_core::{current_loop, run_per_core, LoopId, Loops};
use async_std_api::{delay, spawn, Builder, ErrorKind};

fn assert_send_sync<T: Send + Sync>() {}

/// Compile-time contract (STYLE S22): what crosses loops is `Send + Sync`.
#[test]
fn d39_what_crosses_loops_is_send_and_sync() {
    assert_send_sync::<Loops>();
    assert_send_sync::<LoopId>();
    assert_send_sync::<async_std_api::per_core::LoopJoinHandle<String>>();
    assert_send_sync::<async_std_api::per_core::LoopSender<String>>();
}

#[test]
fn d39_each_loop_runs_f_on_its_own_thread_and_the_values_come_in_loop_order() {
    let caller = std::thread::current().id();
    let seen = run_per_core(3, move |id| {
        // A coroutine of this loop sees the same loop and thread.
        let inner = spawn(|| (current_loop(), std::thread::current().id()))
            .join()
            .unwrap();
        let me = std::thread::current();
        assert_ne!(me.id(), caller);
        assert_eq!(inner, (Some(id), me.id()));
        (
            id,
            me.name().unwrap().to_owned(),
            Loops::current().unwrap().len(),
        )
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            (LoopId::new(0), "async-loop-0".to_owned(), 3),
            (LoopId::new(1), "async-loop-1".to_owned(), 3),
            (LoopId::new(2), "async-loop-2".to_owned(), 3),
        ]
    );
    assert_eq!(current_loop(), None);
    assert!(Loops::current().is_none());
}

/// The cores this thread may run on, as the kernel lists them.
fn cpus_allowed() -> String {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().to_owned()
}

#[test]
fn d39_pinned_loops_each_run_on_one_core_of_their_own() {
    let before = cpus_allowed();
    let pinned = Builder::new()
        .threads(2)
        .pin(true)
        .run_per_core(|_| cpus_allowed())
        .unwrap();
    let single = |s: &str| s.parse::<usize>().is_ok();
    assert!(pinned.iter().all(|c| single(c)), "{pinned:?}");
    if !single(&before) {
        assert_ne!(
            pinned[0], pinned[1],
            "two cores allowed ({before}), one each"
        );
    }
    let unpinned = run_per_core(2, |_| cpus_allowed()).unwrap();
    assert_eq!(unpinned, [before.clone(), before]);
}

#[test]
fn d39_a_loop_whose_f_returned_serves_the_others_until_every_f_returned() {
    // Loop 0 returns at once; loop 1 then asks it for work, which it still
    // runs (its door stays open until the last f returns).
    let r = Builder::new()
        .threads(2)
        .run_per_core(|id| {
            if id.index() == 0 {
                return None;
            }
            delay(20).unwrap();
            let h = async_std_api::per_core::spawn_on(LoopId::new(0), current_loop).unwrap();
            Some(h.join().unwrap())
        })
        .unwrap();
    assert_eq!(r, [None, Some(Some(LoopId::new(0)))]);
}

#[test]
fn d39_a_failure_in_one_loop_shuts_the_others_down_and_is_returned_naming_the_loop() {
    let ends = Arc::new(Mutex::new(Vec::new()));
    let e = ends.clone();
    let err = Builder::new()
        .threads(2)
        .on_event(|_| {}) // keeps the expected failure report off stderr
        .run_per_core(move |id| {
            if id.index() == 1 {
                spawn(|| panic!("loop one broke"));
                let _ = delay(60_000);
                e.lock().unwrap().push(format!("{id} cancelled"));
            } else {
                let c = delay(60_000).unwrap_err();
                e.lock()
                    .unwrap()
                    .push(format!("{id}: {}", c.reason().unwrap()));
            }
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(
        err.to_string()
            .starts_with("loop 1: unhandled failure: coroutine")
            && err.to_string().ends_with("panicked: loop one broke"),
        "{err}"
    );
    assert_eq!(
        err.failure().unwrap().panic_message(),
        Some("loop one broke")
    );
    let mut ends = ends.lock().unwrap().clone();
    ends.sort();
    assert_eq!(ends, ["loop 0: loop 1 failed", "loop 1 cancelled"]);
}

#[test]
fn d39_a_panicking_loop_resumes_its_panic_after_the_others_shut_down() {
    let ends = Arc::new(Mutex::new(Vec::new()));
    let e = ends.clone();
    let panic = std::panic::catch_unwind(move || {
        run_per_core(2, move |id| {
            if id.index() == 0 {
                panic!("main of loop 0");
            }
            let c = delay(60_000).unwrap_err();
            e.lock().unwrap().push(c.reason().unwrap().to_owned());
        })
    })
    .unwrap_err();
    assert_eq!(panic.downcast_ref::<&str>(), Some(&"main of loop 0"));
    assert_eq!(*ends.lock().unwrap(), ["loop 0 failed"]);
}

#[test]
fn d39_configuration_errors_name_the_loop_and_misuse_is_refused() {
    let err = run_per_core(0, |_| ()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert_eq!(
        err.to_string(),
        "run_per_core: zero threads: a run needs at least one loop"
    );
    let err = Builder::new().threads(2).run(|| ()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert_eq!(
        err.to_string(),
        "Builder::threads(2) needs Builder::run_per_core: run starts one loop"
    );
    let err = Builder::new()
        .threads(2)
        .scheduler("nope")
        .run_per_core(|_| unreachable!("no loop runs f when one cannot start"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    let text = err.to_string();
    assert!(
        text.starts_with("loop ") && text.contains("\"nope\""),
        "{text}"
    );
    let inner = async_std_api::run(|| run_per_core(1, |_| ()).unwrap_err()).unwrap();
    assert_eq!(inner.kind(), ErrorKind::AlreadyRunning);
}
