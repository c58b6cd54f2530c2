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
            let inside = spawn(|| {
                tokio_rt().block_on(async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    tokio::runtime::Handle::try_current().is_ok()
                })
            });
            tests::support::yield_until(|| inside.coroutine().is_suspended());
            // `inside` is parked in its runtime: this coroutine and a new
            // one are in none, and may enter one of their own.
            assert!(tokio::runtime::Handle::try_current().is_err());
            let other = spawn(|| {
                let before = tokio::runtime::Handle::try_current().is_err();
                let in_own = tokio_rt().block_on(async { 7 });
                (before, in_own)
            });
            assert_eq!(other.join().expect("other"), (true, 7));
            assert!(inside.join().expect("inside"), "lost its own context");
            assert!(tokio::runtime::Handle::try_current().is_err());
        })
        .expect("runtime");
}
