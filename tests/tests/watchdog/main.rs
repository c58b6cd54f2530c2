//! The maximum-activity-interval watchdog (R-T1, P-19): it warns about a
//! coroutine that does not yield, naming it, and never interrupts it.

use std::time::{Duration, Instant};

use async_std_api::{delay, spawn, suspend, Builder};
use tests::support::capture_logs;

fn watched(ms: u64) -> Builder {
    Builder::new().max_activity_interval(Duration::from_millis(ms))
}

/// Busy for `d` without yielding (the bug the watchdog reports).
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn r_t1_p19_a_coroutine_that_does_not_yield_is_reported_with_its_spawn_location() {
    let ((id, line), logs) = capture_logs(|| {
        watched(50)
            .run(|| {
                let line = line!() + 1;
                let h = spawn(|| spin(Duration::from_millis(400)));
                let id = h.id();
                h.join().unwrap(); // never interrupted: it ends normally
                (id, line)
            })
            .unwrap()
    });
    let lines = logs.matching(&format!("coroutine {id} (spawned at {}:{line}:", file!()));
    assert_eq!(lines.len(), 1, "one warning per run: {logs:?}");
    assert!(
        lines[0]
            .contains("without yielding (maximum activity interval 50 ms); it is not interrupted"),
        "{lines:?}"
    );
}

#[test]
fn r_t1_a_coroutine_that_yields_or_waits_is_not_reported() {
    let ((), logs) = capture_logs(|| {
        // A generous interval: a thread preempted on a loaded machine must
        // not read as a coroutine that stopped yielding.
        watched(250)
            .run(|| {
                // Yields every 5 ms for 300 ms.
                let busy = spawn(|| {
                    let start = Instant::now();
                    while start.elapsed() < Duration::from_millis(300) {
                        spin(Duration::from_millis(5));
                        suspend().unwrap();
                    }
                });
                busy.join().unwrap();
                // The loop blocks in the reactor for 300 ms: idle, not busy.
                delay(300).unwrap();
            })
            .unwrap();
    });
    logs.assert_count("without yielding", 0);
}

#[test]
fn r_t1_off_by_default() {
    let ((), logs) = capture_logs(|| {
        Builder::new()
            .run(|| spawn(|| spin(Duration::from_millis(200))).join().unwrap())
            .unwrap();
    });
    logs.assert_count("without yielding", 0);
}
