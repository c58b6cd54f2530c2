//! `spawn_on`: a `Send` closure as a coroutine on a given loop, joined from
//! a coroutine on another loop (suspending) or from a plain thread
//! (blocking); its panic reaches the joiner.

use std::sync::mpsc;

use async_std_api::per_core::{current_loop, spawn_on, LoopId, Loops};
use async_std_api::{delay, spawn, Builder, CancelCause};

#[test]
fn d39_spawn_on_runs_on_the_target_loop_and_the_joiner_suspends_meanwhile() {
    let r = Builder::new()
        .threads(2)
        .run_per_core(|id| {
            if id.index() != 0 {
                return vec![];
            }
            // Loop 1's coroutine finishes only once loop 0's ticker ran,
            // which it can only do while main waits in `join`.
            let (tick_tx, tick_rx) = mpsc::channel::<()>();
            let h = spawn_on(LoopId::new(1), move || {
                async_std_api::spawn_blocking(move || tick_rx.recv().unwrap())
                    .join()
                    .unwrap();
                (current_loop(), 6 * 7)
            })
            .unwrap();
            assert_eq!(h.loop_id(), LoopId::new(1));
            let ticker = spawn(move || {
                delay(1).unwrap();
                tick_tx.send(()).unwrap();
                "ticked"
            });
            let (on, v) = h.join().unwrap();
            assert_eq!(ticker.join().unwrap(), "ticked");
            vec![(on, v)]
        })
        .unwrap();
    assert_eq!(r[0], [(Some(LoopId::new(1)), 42)]);
}

#[test]
fn d39_a_panic_in_spawn_on_reaches_the_joiner_and_the_loops_carry_on() {
    let r = Builder::new()
        .threads(2)
        .run_per_core(|id| {
            let other = LoopId::new(1 - id.index());
            let h = spawn_on(other, move || -> u32 { panic!("boom from {other}") }).unwrap();
            let err = h.join().unwrap_err();
            assert!(err.is_panic(), "{err}");
            err.panic_message().unwrap().to_owned()
        })
        .unwrap();
    assert_eq!(r, ["boom from loop 1", "boom from loop 0"]);
}

#[test]
fn d39_a_plain_thread_spawns_on_a_loop_and_blocks_in_join() {
    let r = Builder::new()
        .threads(2)
        .run_per_core(|id| {
            if id.index() != 0 {
                return 0;
            }
            let loops = Loops::current().unwrap();
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let h = loops.spawn_on(LoopId::new(1), || current_loop().unwrap().index() + 10);
                tx.send(h.unwrap().join().unwrap()).unwrap();
            });
            // Waits for the thread on the blocking pool, not on this loop.
            async_std_api::spawn_blocking(move || rx.recv().unwrap())
                .join()
                .unwrap()
        })
        .unwrap();
    assert_eq!(r, [11, 0]);
}

#[test]
fn d39_spawn_on_a_missing_loop_or_after_the_run_is_an_error_naming_it() {
    let (tx, rx) = mpsc::channel();
    Builder::new()
        .threads(2)
        .run_per_core(move |id| {
            let loops = Loops::current().unwrap();
            if id.index() == 0 {
                let err = spawn_on(LoopId::new(5), || ()).unwrap_err();
                assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
                assert_eq!(err.to_string(), "spawn_on: no loop 5 (the run has 2 loops)");
                tx.send(loops).unwrap();
            }
        })
        .unwrap();
    let loops = rx.recv().unwrap();
    let err = loops.spawn_on(LoopId::new(1), || ()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Other);
    assert_eq!(
        err.to_string(),
        "spawn_on: loop 1 no longer accepts coroutines (every loop's closure returned, \
         or the loops are shutting down)"
    );
}

#[test]
fn d39_a_spawn_on_coroutine_cancelled_by_a_shutdown_reports_it_to_its_joiner() {
    let (tx, rx) = mpsc::channel();
    let ends = Builder::new()
        .threads(2)
        .run_per_core(move |id| {
            if id.index() == 0 {
                let loops = Loops::current().unwrap();
                let (started_tx, started) = mpsc::channel();
                let h = loops
                    .spawn_on(LoopId::new(1), move || {
                        started_tx.send(()).unwrap();
                        delay(60_000).map_err(|c| c.cause())
                    })
                    .unwrap();
                tx.send(h).unwrap();
                async_std_api::spawn_blocking(move || started.recv().unwrap())
                    .join()
                    .unwrap();
                loops.shutdown("stop");
            }
            // Caught and returned: each loop keeps its value (D-25).
            delay(60_000).unwrap_err().reason().map(str::to_owned)
        })
        .unwrap();
    assert_eq!(ends, [Some("stop".to_owned()), Some("stop".to_owned())]);
    // It caught its cancellation and returned: it ends cancelled all the
    // same, as a local join would say (D-25).
    let err = rx.recv().unwrap().join().unwrap_err();
    assert!(err.is_cancelled(), "{err}");
    let c = err.cancelled().unwrap();
    assert_eq!(
        (c.cause(), c.reason()),
        (CancelCause::Shutdown, Some("stop"))
    );
}

#[test]
fn d39_a_handle_cancels_its_coroutine_from_another_thread() {
    let r = Builder::new()
        .threads(2)
        .run_per_core(|id| {
            if id.index() != 0 {
                return None;
            }
            let (started_tx, started) = mpsc::channel();
            let h = spawn_on(LoopId::new(1), move || {
                started_tx.send(()).unwrap();
                delay(60_000).map_err(|c| c.cause())
            })
            .unwrap();
            // The cancel comes from a plain thread, once the coroutine waits.
            let h = async_std_api::spawn_blocking(move || {
                started.recv().unwrap();
                h.cancel();
                h
            })
            .join()
            .unwrap();
            let err = h.join().unwrap_err();
            Some(err.cancelled().map(|c| c.cause()))
        })
        .unwrap();
    assert_eq!(r, [Some(Some(CancelCause::Explicit)), None]);
}

#[test]
fn d39_a_panic_whose_handle_was_dropped_fails_its_loop_and_shuts_the_run_down() {
    let err = Builder::new()
        .threads(2)
        .on_event(|_| {}) // keeps the expected failure report off stderr
        .run_per_core(|id| {
            if id.index() == 0 {
                let (dropped_tx, dropped) = mpsc::channel::<()>();
                let h = spawn_on(LoopId::new(1), move || {
                    async_std_api::spawn_blocking(move || dropped.recv().unwrap())
                        .join()
                        .unwrap();
                    panic!("nobody joins this");
                })
                .unwrap();
                drop(h);
                dropped_tx.send(()).unwrap();
            }
            // Both loops wait until the failure shuts them down: loop 1 by
            // its own error flow (the failure is the cause), loop 0 by PC4.
            let c = delay(60_000).unwrap_err();
            assert_eq!(c.cause(), CancelCause::Shutdown);
            if id.index() == 0 {
                assert_eq!(c.reason(), Some("loop 1 failed"));
            } else {
                let f = c.failure().unwrap();
                assert_eq!(f.panic_message(), Some("nobody joins this"));
            }
        })
        .unwrap_err();
    assert_eq!(err.kind(), async_std_api::ErrorKind::Failed);
    assert_eq!(
        err.failure().unwrap().panic_message(),
        Some("nobody joins this")
    );
    assert!(
        err.to_string().starts_with("loop 1: unhandled failure: "),
        "{err}"
    );
}
