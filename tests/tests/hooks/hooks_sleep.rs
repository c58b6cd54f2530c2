//! std::thread::sleep and the C sleeps with hooks on.

use std::time::{Duration, Instant};

use async_std_api::spawn;

use crate::{hooked, Ticker};

#[test]
fn a_thousand_std_sleeps_of_100_ms_end_together() {
    let elapsed = hooked()
        .run(|| {
            let start = Instant::now();
            let sleepers: Vec<_> = (0..1000)
                .map(|_| spawn(|| std::thread::sleep(Duration::from_millis(100))))
                .collect();
            for s in sleepers {
                s.join().expect("sleeper");
            }
            start.elapsed()
        })
        .expect("runtime");
    eprintln!("1000 std sleeps of 100 ms: {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(100), "{elapsed:?}");
    // One after another: 100 s.
    assert!(elapsed < Duration::from_millis(1000), "took {elapsed:?}");
}

#[test]
fn a_std_sleep_lets_the_ticker_run() {
    let (ticks, worst) = hooked()
        .run(|| {
            let ticker = Ticker::start();
            std::thread::sleep(Duration::from_millis(300));
            ticker.stop()
        })
        .expect("runtime");
    assert!(ticks >= 15, "{ticks} ticks in 300 ms");
    assert!(worst < Duration::from_millis(100), "longest gap {worst:?}");
}

#[test]
fn c_sleeps_sleep_their_time() {
    hooked()
        .run(|| {
            let start = Instant::now();
            // SAFETY: plain C library calls with valid arguments.
            unsafe {
                assert_eq!(libc::usleep(20_000), 0);
                let ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 20_000_000,
                };
                assert_eq!(
                    libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()),
                    0
                );
                let mut now = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
                now.tv_nsec += 20_000_000;
                if now.tv_nsec >= 1_000_000_000 {
                    now.tv_nsec -= 1_000_000_000;
                    now.tv_sec += 1;
                }
                assert_eq!(
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &now,
                        std::ptr::null_mut()
                    ),
                    0
                );
            }
            assert!(
                start.elapsed() >= Duration::from_millis(60),
                "{:?}",
                start.elapsed()
            );
        })
        .expect("runtime");
}

#[test]
fn every_loop_of_run_per_core_has_the_hooks() {
    let start = Instant::now();
    let per_loop = hooked()
        .threads(2)
        .run_per_core(|_loop| {
            let sleepers: Vec<_> = (0..100)
                .map(|_| spawn(|| std::thread::sleep(Duration::from_millis(100))))
                .collect();
            let n = sleepers.len();
            for s in sleepers {
                s.join().expect("sleeper");
            }
            (async_std_api::hooks::active(), n)
        })
        .expect("loops");
    let took = start.elapsed();
    assert_eq!(per_loop, vec![(true, 100), (true, 100)]);
    // 200 sleeps of 100 ms on two loops: about 100 ms, not 10 s.
    assert!(took < Duration::from_secs(2), "took {took:?}");
}
