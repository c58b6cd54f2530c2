//! `timers`: how late 10,000 sleeping coroutines wake up.
//!
//! What is measured: `COROS` coroutines each call `delay(200)` at (nearly)
//! the same time; each records how much later than its own start + 200 ms
//! it actually resumed. Reported: median, p99 and maximum lateness, per
//! reactor (a reactor that armed one kernel timeout per timer, or let a
//! heap of timers drift, shows up here as milliseconds of lateness).
//! tokio's `sleep` is measured the same way for reference (its timer wheel
//! has a 1 ms resolution).
//!
//! Excluded: spawning (each coroutine takes its own start time right before
//! it sleeps).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Sleeping coroutines.
pub(crate) const COROS: usize = 10_000;
/// How long each sleeps.
pub(crate) const DELAY_MS: u64 = 200;

/// Lateness percentiles in microseconds.
pub(crate) struct Lateness {
    pub(crate) median_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) max_us: f64,
}

fn summarize(mut late: Vec<Duration>) -> Lateness {
    late.sort();
    let at = |q: f64| late[((late.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    Lateness {
        median_us: at(0.5),
        p99_us: at(0.99),
        max_us: late.last().map_or(0.0, |d| d.as_secs_f64() * 1e6),
    }
}

/// This runtime on `reactor`.
pub(crate) fn ours(reactor: &str) -> Lateness {
    async_std_api::Builder::new()
        .reactor(reactor)
        .run(|| {
            let late = Rc::new(RefCell::new(Vec::with_capacity(COROS)));
            let handles: Vec<_> = (0..COROS)
                .map(|_| {
                    let late = late.clone();
                    async_std_api::spawn(move || {
                        let start = Instant::now();
                        async_std_api::delay(DELAY_MS).expect("not cancelled");
                        let slept = start.elapsed();
                        late.borrow_mut()
                            .push(slept.saturating_sub(Duration::from_millis(DELAY_MS)));
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("sleeper");
            }
            let v = late.borrow().clone();
            summarize(v)
        })
        .expect("runtime")
}

/// tokio current-thread, `tokio::time::sleep`.
pub(crate) fn tokio_sleep() -> Lateness {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    rt.block_on(async {
        let handles: Vec<_> = (0..COROS)
            .map(|_| {
                tokio::spawn(async {
                    let start = Instant::now();
                    tokio::time::sleep(Duration::from_millis(DELAY_MS)).await;
                    start
                        .elapsed()
                        .saturating_sub(Duration::from_millis(DELAY_MS))
                })
            })
            .collect();
        let mut late = Vec::with_capacity(COROS);
        for h in handles {
            late.push(h.await.expect("sleeper"));
        }
        summarize(late)
    })
}
