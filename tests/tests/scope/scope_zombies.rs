//! The zombie policy (R-S10, P-18): zombies do not count as active, and
//! once nothing else runs they get the zombie timeout, then are cancelled.

use std::time::{Duration, Instant};

use async_std_api::{delay, spawn_in, Builder, Scope};
use tests::support::{capture_logs, yield_until_scope_waits, yield_until_waiting, Recorder};

fn builder(zombie_ms: u64) -> Builder {
    Builder::new().zombie_timeout(Duration::from_millis(zombie_ms))
}

#[test]
fn r_s10_p18_zombies_are_cancelled_after_the_timeout_once_nothing_else_runs() {
    let rec = Recorder::new();
    let r = rec.clone();
    let started = Instant::now();
    let ((), logs) = capture_logs(|| {
        builder(50)
            .run(move || {
                let scope = Scope::new();
                let r1 = r.clone();
                spawn_in(&scope, move || match delay(60_000) {
                    Ok(()) => r1.push("zombie slept a minute"),
                    Err(c) => r1.push(format!("zombie cancelled: {:?}", c.cause())),
                })
                .unwrap();
                yield_until_scope_waits(&scope);
                scope.dispose_safely();
                // main ends here: only the zombie is left.
            })
            .unwrap();
    });
    rec.assert_events(&["zombie cancelled: ZombieTimeout"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "bounded by the timeout"
    );
    logs.assert_count(
        "zombie timeout (50 ms): cancelling 1 zombie coroutine(s)",
        1,
    );
}

#[test]
fn r_s10_the_timeout_starts_only_when_nothing_active_is_left() {
    let rec = Recorder::new();
    let r = rec.clone();
    builder(30)
        .run(move || {
            let scope = Scope::new();
            let r1 = r.clone();
            spawn_in(&scope, move || match delay(60) {
                Ok(()) => r1.push("zombie finished"),
                Err(c) => r1.push(format!("zombie cancelled: {:?}", c.cause())),
            })
            .unwrap();
            yield_until_scope_waits(&scope);
            scope.dispose_safely();
            // main stays active longer than the zombie needs: no timeout.
            delay(120).unwrap();
            r.push("main done");
        })
        .unwrap();
    rec.assert_events(&["zombie finished", "main done"]);
}

#[test]
fn p18_zombies_that_ignore_their_cancellation_are_unwound() {
    struct Guard(Recorder);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.push("zombie unwound");
        }
    }
    let rec = Recorder::new();
    let r = rec.clone();
    let started = Instant::now();
    let ((), logs) = capture_logs(|| {
        builder(20)
            .run(move || {
                let scope = Scope::new();
                let r1 = r.clone();
                spawn_in(&scope, move || {
                    let _g = Guard(r1.clone());
                    loop {
                        if let Err(c) = delay(5) {
                            r1.push(format!("ignored {:?}", c.cause()));
                        }
                    }
                })
                .unwrap();
                yield_until_scope_waits(&scope);
                scope.dispose_safely();
            })
            .unwrap();
    });
    rec.assert_events(&["ignored ZombieTimeout", "zombie unwound"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    logs.assert_count(
        "still run after their cancellation: forcing the shutdown",
        1,
    );
}

#[test]
fn r_s10_zombies_do_not_count_as_active_for_await_completion() {
    Builder::new()
        .run(|| {
            let scope = Scope::new();
            let z = spawn_in(&scope, || delay(40).is_ok()).unwrap();
            yield_until_waiting(&[&z.coroutine()]);
            scope.dispose_safely();
            assert!(z.coroutine().is_zombie());
            assert!(!scope.is_finished(), "it still runs");
            scope
                .await_completion(&async_std_api::timeout(0))
                .expect("nothing active");
            assert!(z.join().unwrap(), "the zombie ran to its end");
        })
        .unwrap();
}
