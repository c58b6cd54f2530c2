//! Other runtimes' thread-locals kept per coroutine (hooks FT1-FT3): a
//! tokio runtime entered by many coroutines of one thread at once, each
//! suspended inside its own `block_on`, as the `postgres` crate's clients
//! do on every query.

use std::time::{Duration, Instant};

use async_std_api::spawn;

use crate::hooked;

/// A current-thread tokio runtime with its drivers, as the `postgres`
/// crate builds one per client.
fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

#[test]
fn ten_coroutines_each_inside_its_own_tokio_block_on_wait_together() {
    hooked()
        .run(|| {
            let start = Instant::now();
            let all: Vec<_> = (0..10u64)
                .map(|i| {
                    spawn(move || {
                        let rt = tokio_rt();
                        rt.block_on(async move {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            // Still this runtime's context after the park.
                            let id = tokio::runtime::Handle::current().id();
                            (i * 2, id)
                        })
                    })
                })
                .collect();
            let got: Vec<_> = all
                .into_iter()
                .map(|h| h.join().expect("coroutine"))
                .collect();
            let took = start.elapsed();
            let values: Vec<u64> = got.iter().map(|g| g.0).collect();
            assert_eq!(values, (0..10).map(|i| i * 2).collect::<Vec<_>>());
            // Each coroutine saw its own runtime, not another's.
            let mut ids: Vec<_> = got.iter().map(|g| g.1.to_string()).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), 10, "runtimes seen: {ids:?}");
            // One after another they take a second.
            assert!(took < Duration::from_millis(700), "took {took:?}");
        })
        .expect("runtime");
}

#[test]
fn a_coroutine_outside_tokio_does_not_see_a_runtime_another_is_inside() {
    hooked()
        .run(|| {
            // `inside` stays parked in its runtime until told: the checks
            // below all run while it is inside.
            let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
            let inside = spawn(move || {
                tokio_rt().block_on(async move {
                    let v = rx.await.expect("sent");
                    (v, tokio::runtime::Handle::try_current().is_ok())
                })
            });
            tests::support::yield_until(|| inside.coroutine().is_suspended());
            // This coroutine and a new one are in no runtime, and may enter
            // one of their own.
            assert!(tokio::runtime::Handle::try_current().is_err());
            let other = spawn(|| {
                let before = tokio::runtime::Handle::try_current().is_err();
                let in_own = tokio_rt().block_on(async { 7 });
                (before, in_own)
            });
            assert_eq!(other.join().expect("other"), (true, 7));
            assert!(inside.coroutine().is_suspended(), "left its runtime early");
            tx.send(5).expect("inside waits");
            assert_eq!(inside.join().expect("inside"), (5, true));
            assert!(tokio::runtime::Handle::try_current().is_err());
        })
        .expect("runtime");
}

#[test]
fn every_loop_of_run_per_core_keeps_its_coroutines_tokio_contexts_apart() {
    // Each loop thread has its own thread-locals: its own copies swap.
    let per_loop = hooked()
        .threads(2)
        .run_per_core(|id| {
            let start = Instant::now();
            let all: Vec<_> = (0..5u64)
                .map(|i| {
                    spawn(move || {
                        tokio_rt().block_on(async move {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            i
                        })
                    })
                })
                .collect();
            let sum: u64 = all.into_iter().map(|h| h.join().expect("coroutine")).sum();
            (id.index(), sum, start.elapsed())
        })
        .expect("runtime");
    assert_eq!(per_loop.len(), 2);
    for (index, sum, took) in per_loop {
        assert_eq!(sum, 10, "loop {index}");
        assert!(
            took < Duration::from_millis(450),
            "loop {index} took {took:?}"
        );
    }
}
