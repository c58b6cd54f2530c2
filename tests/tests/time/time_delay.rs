//! `delay` and `sleep` (R-AU4, REF-24).

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_std_api::{delay, run, sleep, spawn};
use tests::support::{join_cancelled, yield_until, Recorder};

#[test]
fn a_100_ms_delay_waits_at_least_100_ms() {
    let elapsed = run(|| {
        let t = Instant::now();
        delay(100).unwrap();
        t.elapsed()
    })
    .unwrap();
    assert!(elapsed >= Duration::from_millis(100), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[test]
fn concurrent_delays_finish_in_reverse_order_well_under_their_sum() {
    let rec = Recorder::new();
    let r = rec.clone();
    let t = Instant::now();
    run(move || {
        let hs: Vec<_> = [300u64, 150, 50]
            .into_iter()
            .map(|ms| {
                let r = r.clone();
                spawn(move || {
                    delay(ms).unwrap();
                    r.push(format!("{ms} ms"));
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    })
    .unwrap();
    let elapsed = t.elapsed();
    rec.assert_events(&["50 ms", "150 ms", "300 ms"]);
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(
        elapsed < Duration::from_millis(490),
        "sum is 500 ms: {elapsed:?}"
    );
}

#[test]
fn a_delay_after_cpu_heavy_work_still_waits_its_full_duration() {
    let waited = run(|| {
        let busy = Instant::now();
        let mut x = 0u64;
        while busy.elapsed() < Duration::from_millis(80) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let t = Instant::now();
        delay(100).unwrap();
        t.elapsed()
    })
    .unwrap();
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
}

// FIFO order is the point (the other coroutine runs in the yield): skipped
// under chaos.
#[test]
fn fifo_a_zero_delay_is_a_yield() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        spawn(move || r1.push("other"));
        r.push("before");
        delay(0).unwrap();
        r.push("after");
    })
    .unwrap();
    rec.assert_events(&["before", "other", "after"]);
}

#[test]
fn sleep_takes_a_duration() {
    let elapsed = run(|| {
        let t = Instant::now();
        sleep(Duration::from_millis(30)).unwrap();
        t.elapsed()
    })
    .unwrap();
    assert!(elapsed >= Duration::from_millis(30), "{elapsed:?}");
}

#[test]
fn r_au4_d25_a_cancelled_delay_disposes_its_timer_so_run_ends_early() {
    let t = Instant::now();
    run(|| {
        let cancelled: Rc<Cell<Option<bool>>> = Rc::default();
        let k = cancelled.clone();
        let h = spawn(move || k.set(Some(delay(60_000).is_err())));
        yield_until(|| h.coroutine().is_suspended());
        h.cancel();
        // Caught (the delay's error) and returned: cancelled (D-25).
        join_cancelled(h);
        assert_eq!(cancelled.get(), Some(true));
    })
    .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}
