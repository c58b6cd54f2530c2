//! D-30: `spawn_blocking` and the pool under it.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_std_api::{delay, run, spawn, spawn_blocking, Builder, ErrorKind};
use tests::support::{join_cancelled, yield_until_waiting};

#[test]
fn d30_the_work_runs_on_a_pool_thread_and_its_value_is_the_handles() {
    let (value, name) = run(|| {
        let loop_thread = std::thread::current().id();
        let h = spawn_blocking(move || {
            assert_ne!(std::thread::current().id(), loop_thread);
            let name = std::thread::current().name().map(str::to_owned);
            (6 * 7, name)
        });
        // Nothing else runs: the main coroutine waits for the pool, which
        // is not a deadlock (the trigger keeps the loop alive).
        h.join().unwrap()
    })
    .unwrap();
    assert_eq!(value, 42);
    assert!(
        name.as_deref()
            .is_some_and(|n| n.starts_with("async-blocking-")),
        "{name:?}"
    );
}

#[test]
fn d30_other_coroutines_run_while_the_work_blocks() {
    run(|| {
        // The work blocks until a coroutine has ticked through ten timer
        // waits: if the loop were blocked, it never would.
        let (release, released) = mpsc::channel::<u32>();
        let work = spawn_blocking(move || released.recv().unwrap() * 2);
        let ticker = spawn(move || {
            let mut ticks = 0;
            for _ in 0..10 {
                delay(1).unwrap();
                ticks += 1;
            }
            release.send(ticks).unwrap();
            ticks
        });
        assert_eq!(ticker.join().unwrap(), 10);
        assert_eq!(work.join().unwrap(), 20);
    })
    .unwrap();
}

#[test]
fn d30_a_panic_in_the_work_is_the_handles_failure() {
    run(|| {
        let h = spawn_blocking(|| -> u8 { panic!("disk on fire") });
        let e = h.join().unwrap_err();
        assert!(e.is_panic(), "{e}");
        assert_eq!(e.panic_message(), Some("disk on fire"));
    })
    .unwrap();
}

/// Counts its drops, wherever they happen.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn d30_cancelling_the_waiter_detaches_the_work_and_drops_its_result() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let (release, released) = mpsc::channel::<()>();
    let (started, is_started) = mpsc::channel::<()>();
    let (d, f) = (dropped.clone(), finished.clone());
    let seen = finished.clone();
    run(move || {
        let h = spawn_blocking(move || {
            started.send(()).unwrap();
            released.recv().unwrap();
            f.fetch_add(1, Ordering::SeqCst);
            Counted(d)
        });
        // Work that has not started when the runtime ends is dropped, not
        // run (BP3): wait until it runs (on a second pool thread).
        spawn_blocking(move || is_started.recv().unwrap())
            .join()
            .unwrap();
        h.cancel();
        // Cancelled at once, while the work still blocks on its thread.
        let c = join_cancelled(h);
        assert_eq!(c.cause(), async_std_api::CancelCause::Explicit, "{c}");
        assert_eq!(seen.load(Ordering::SeqCst), 0);
        release.send(()).unwrap(); // the detached work ends on its own
    })
    .unwrap();
    // The detached result is dropped on its thread or on the loop; wait for
    // the pool thread (bounded: it only had to return).
    for _ in 0..2_000 {
        if dropped.load(Ordering::SeqCst) == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the result was dropped once"
    );
}

#[test]
fn d30_at_most_blocking_threads_run_at_once_and_all_work_completes() {
    let (names, max) = Builder::new()
        .blocking_threads(2)
        .run(|| {
            let active = Arc::new(AtomicUsize::new(0));
            let max = Arc::new(AtomicUsize::new(0));
            let names = Arc::new(Mutex::new(BTreeSet::new()));
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let (active, max, names) = (active.clone(), max.clone(), names.clone());
                    spawn_blocking(move || {
                        let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                        max.fetch_max(now, Ordering::SeqCst);
                        let name = std::thread::current().name().unwrap().to_owned();
                        names.lock().unwrap().insert(name);
                        // Long enough for the others to pile up behind it.
                        std::thread::sleep(Duration::from_millis(5));
                        active.fetch_sub(1, Ordering::SeqCst);
                        i
                    })
                })
                .collect();
            let got: Vec<i32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            assert_eq!(got, (0..8).collect::<Vec<_>>());
            let names = names.lock().unwrap().clone();
            (names, max.load(Ordering::SeqCst))
        })
        .unwrap();
    assert!(max <= 2, "{max} ran at once");
    assert!(names.len() <= 2, "{names:?}");
}

#[test]
fn d30_zero_blocking_threads_is_a_configuration_error() {
    let e = Builder::new().blocking_threads(0).run(|| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert_eq!(
        e.to_string(),
        "invalid blocking_threads 0: the blocking pool needs at least one thread"
    );
}

#[test]
fn d30_a_scope_waits_for_its_blocking_work() {
    let order = run(|| {
        let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let scope = async_std_api::Scope::new();
        let o = order.clone();
        let (release, released) = mpsc::channel::<()>();
        let h = async_std_api::spawn_in(&scope, move || {
            let w = spawn_blocking(move || released.recv().unwrap());
            w.join().unwrap();
            o.borrow_mut().push("work done");
        })
        .unwrap();
        yield_until_waiting(&[&h.coroutine()]);
        release.send(()).unwrap();
        scope
            .await_completion(&async_std_api::time::timeout(60_000))
            .unwrap();
        order.borrow_mut().push("scope complete");
        let v = order.borrow().clone();
        v
    })
    .unwrap();
    assert_eq!(order, ["work done", "scope complete"]);
}
