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
        lines[0].contains(
            "without yielding (maximum activity interval 50 ms): it is running on the CPU, \
             not in a system call (a busy loop or a long computation); it is not interrupted"
        ),
        "{lines:?}"
    );
}

/// Blocks the loop thread in `std::thread::sleep` (hooks off): the call a
/// watchdog warning should name, from a function it should find.
#[inline(never)]
fn blocks_in_std_sleep() {
    std::thread::sleep(Duration::from_millis(400));
    std::hint::black_box(());
}

#[test]
fn the_warning_names_the_blocking_call_and_the_code_that_made_it() {
    let (id, logs) = capture_logs(|| {
        watched(50)
            .run(|| {
                let h = spawn(blocks_in_std_sleep);
                let id = h.id();
                h.join().unwrap();
                id
            })
            .unwrap()
    });
    let lines = logs.matching(&format!("coroutine {id} (spawned at"));
    assert_eq!(lines.len(), 1, "one warning: {logs:?}");
    assert!(
        lines[0].contains("it is blocked in the system call clock_nanosleep (std::thread::sleep")
            || lines[0].contains("it is blocked in the system call nanosleep (std::thread::sleep"),
        "{lines:?}"
    );
    assert!(lines[0].contains("blocks_in_std_sleep"), "{lines:?}");
}

#[test]
fn warn_blocking_turns_a_default_watchdog_on_in_a_debug_build() {
    let (id, logs) = capture_logs(|| {
        Builder::new()
            .warn_blocking(true)
            .run(|| {
                let h = spawn(|| spin(Duration::from_millis(400)));
                let id = h.id();
                h.join().unwrap();
                id
            })
            .unwrap()
    });
    // The suite is a debug build: 100 ms is the default interval.
    let lines = logs.matching(&format!("coroutine {id} (spawned at"));
    assert_eq!(lines.len(), 1, "{logs:?}");
    assert!(
        lines[0].contains("(maximum activity interval 100 ms)"),
        "{lines:?}"
    );
    // An explicit interval of zero keeps it off.
    let ((), logs) = capture_logs(|| {
        Builder::new()
            .warn_blocking(true)
            .max_activity_interval(Duration::ZERO)
            .run(|| spawn(|| spin(Duration::from_millis(300))).join().unwrap())
            .unwrap();
    });
    logs.assert_count("without yielding", 0);
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
