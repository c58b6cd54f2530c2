//! D-38: `time::interval`, a persistent periodic timer.

use std::time::{Duration, Instant};

use async_std_api::{live_events, run, spawn, time};
use tests::support::{join_cancelled, yield_until_waiting};

#[test]
fn d38_ticks_come_a_period_apart_on_one_reactor_event() {
    run(|| {
        let before = live_events();
        let start = Instant::now();
        let mut every = time::interval(Duration::from_millis(4));
        assert_eq!(live_events(), before + 1, "one timer for every tick");
        for _ in 0..5 {
            every.tick().unwrap();
            assert_eq!(live_events(), before + 1, "nothing re-registered per wait");
        }
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert_eq!(every.period(), Duration::from_millis(4));
        drop(every);
        assert_eq!(live_events(), before, "dropping it disarms the timer");
    })
    .unwrap();
}

#[test]
fn d38_a_tick_that_fired_while_busy_is_taken_at_once_and_missed_ones_are_skipped() {
    run(|| {
        let period = Duration::from_millis(25);
        let start = Instant::now();
        let mut every = time::interval(period);
        // Busy (not suspended) past three ticks: 25, 50 and 75 ms.
        while start.elapsed() < Duration::from_millis(80) {
            std::hint::spin_loop();
        }
        let t = Instant::now();
        every.tick().unwrap(); // the late tick, kept: at once
        let first = t.elapsed();
        every.tick().unwrap(); // the next point of the grid: 100 ms
        let second = t.elapsed();
        assert!(first < period, "the kept tick waited {first:?}");
        assert!(
            second >= Duration::from_millis(10),
            "missed ticks were made up in a burst: {second:?}"
        );
        assert!(start.elapsed() >= 4 * period, "the grid is kept");
    })
    .unwrap();
}

#[test]
fn d38_a_cancelled_tick_leaves_the_interval_usable() {
    run(|| {
        let every = std::rc::Rc::new(std::cell::RefCell::new(time::interval(
            Duration::from_secs(60),
        )));
        let e = every.clone();
        let waiter = spawn(move || e.borrow_mut().tick());
        yield_until_waiting(&[&waiter.coroutine()]);
        waiter.cancel();
        join_cancelled(waiter);
        drop(every); // disarmed: nothing keeps the loop alive
    })
    .unwrap();
}
