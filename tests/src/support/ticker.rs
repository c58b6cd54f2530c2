//! A coroutine that ticks every 10 ms and records the longest gap: how the
//! hooks' tests (the suite's and tests-real's) see whether a blocking call
//! held the loop.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_std_api::{delay, spawn, JoinHandle};

/// A coroutine that wakes every 10 ms until stopped, and what it saw.
#[derive(Debug)]
pub struct Ticker {
    stop: Rc<Cell<bool>>,
    handle: JoinHandle<(u32, Duration)>,
}

impl Ticker {
    /// Starts ticking (call inside a coroutine).
    pub fn start() -> Ticker {
        let stop = Rc::new(Cell::new(false));
        let s = stop.clone();
        let handle = spawn(move || {
            let (mut ticks, mut worst) = (0u32, Duration::ZERO);
            let mut last = Instant::now();
            while !s.get() {
                delay(10).expect("ticker");
                let now = Instant::now();
                worst = worst.max(now - last);
                last = now;
                ticks += 1;
            }
            (ticks, worst)
        });
        Ticker { stop, handle }
    }

    /// Stops it: how many ticks it got, and the longest gap between two.
    pub fn stop(self) -> (u32, Duration) {
        self.stop.set(true);
        self.handle.join().expect("ticker")
    }
}
