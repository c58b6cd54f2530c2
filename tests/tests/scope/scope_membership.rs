//! O(1) membership: spawning into a scope with 100,000 live coroutines
//! costs about what spawning into an empty one does (the reference
//! implementation's linear list went from ~3,000 to 378,000 instructions).

use std::time::{Duration, Instant};

use async_std_api::{run, spawn_in, timeout, Scope};

/// The best of several timed rounds of `n` spawns into `scope` (the
/// coroutines are cancelled before they start, afterwards).
fn spawn_cost(scope: &Scope, n: usize) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        for _ in 0..n {
            drop(spawn_in(scope, || ()).unwrap());
        }
        best = best.min(started.elapsed());
    }
    best
}

#[test]
fn spawning_into_a_scope_with_100000_live_coroutines_costs_about_the_same() {
    run(|| {
        let big = Scope::new();
        for _ in 0..100_000 {
            drop(spawn_in(&big, || ()).unwrap());
        }
        assert_eq!(big.coroutines().len(), 100_000);
        let empty = Scope::new();
        let into_empty = spawn_cost(&empty, 1_000);
        let into_big = spawn_cost(&big, 1_000);
        // A linear structure would be ~100x slower here; allow plenty of
        // noise (a loaded machine, a debug build) but not that.
        assert!(
            into_big < into_empty * 10 + Duration::from_millis(5),
            "into the big scope: {into_big:?}, into the empty one: {into_empty:?}"
        );
        big.cancel();
        empty.cancel();
        big.await_after_cancellation(None, Some(&timeout(60_000)))
            .unwrap();
        assert!(big.is_finished());
    })
    .unwrap();
}
