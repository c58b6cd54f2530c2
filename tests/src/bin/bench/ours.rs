//! This runtime, measured through its public API (`async-std-api`), with the
//! scheduler statically linked (the embedded default) and the engine chosen
//! by a scheduler option.

use std::time::{Duration, Instant};

use async_std_api::{spawn, suspend, Builder};

use crate::peers::{do_fp_work, reset_mxcsr};
use crate::report::{median, NsPerOp};

const REPS: usize = 5;

fn builder(engine: Option<&str>) -> Builder {
    let mut b = Builder::new().scheduler("embedded").reactor("embedded");
    if let Some(e) = engine {
        b = b.scheduler_option("engine", e);
    }
    b
}

/// Two coroutines (main and one spawned) suspend to each other: each
/// `suspend()` switches directly to the other, so one loop iteration of the
/// measuring side is one round trip.
pub(crate) fn switch_round_trip(engine: Option<&str>, fp: bool, iters: u64) -> NsPerOp {
    median(REPS, iters, || switch_once(engine, fp, iters))
}

/// One timed run of [`switch_round_trip`].
pub(crate) fn switch_once(engine: Option<&str>, fp: bool, iters: u64) -> Duration {
    reset_mxcsr();
    builder(engine)
        .run(move || {
            let other = spawn(move || {
                if fp {
                    do_fp_work();
                }
                for _ in 0..iters + 1 {
                    suspend().expect("not cancelled");
                }
            });
            suspend().expect("not cancelled"); // let the other start
            let start = Instant::now();
            for _ in 0..iters {
                suspend().expect("not cancelled");
            }
            let elapsed = start.elapsed();
            other.join().expect("yielder");
            elapsed
        })
        .expect("runtime")
}

/// Spawn an empty coroutine and join it, from the main coroutine.
pub(crate) fn spawn_join(engine: Option<&str>, iters: u64) -> NsPerOp {
    median(REPS, iters, || spawn_join_once(engine, iters))
}

/// One timed run of [`spawn_join`].
pub(crate) fn spawn_join_once(engine: Option<&str>, iters: u64) -> Duration {
    builder(engine)
        .run(move || {
            for _ in 0..1000 {
                spawn(|| ()).join().expect("warm-up");
            }
            let start = Instant::now();
            for _ in 0..iters {
                spawn(|| ()).join().expect("empty coroutine");
            }
            start.elapsed()
        })
        .expect("runtime")
}
