//! The peers: raw stack switching (`context`, `corosensei`), tokio's
//! current-thread runtime, and may with one worker.

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::report::{median, NsPerOp};

const REPS: usize = 5;

/// Sets the thread's MXCSR to its power-on default (all exceptions masked, no
/// sticky flags), so the "FP work" variants differ from the measuring side by
/// exactly the flags that floating-point work sets.
#[allow(deprecated)] // _mm_setcsr is the only stable way to write MXCSR.
pub(crate) fn reset_mxcsr() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: 0x1F80 is the architectural default MXCSR value (all exceptions
    // masked, round to nearest, no FTZ/DAZ); writing it is always valid.
    unsafe {
        std::arch::x86_64::_mm_setcsr(0x1F80)
    };
}

/// Sets the inexact flag the way ordinary float arithmetic does.
pub(crate) fn do_fp_work() {
    black_box(black_box(1.0f64) / black_box(3.0f64));
}

/// `context`: the measuring side and one coroutine jump to each other.
pub(crate) fn context_round_trip(fp: bool, iters: u64) -> NsPerOp {
    use context::stack::ProtectedFixedSizeStack;
    use context::{Context, Transfer};

    extern "C" fn plain(mut t: Transfer) -> ! {
        loop {
            // SAFETY: `t.context` is the suspended measuring side, which is
            // alive and waiting for exactly this resume.
            t = unsafe { t.context.resume(0) };
        }
    }
    extern "C" fn with_fp(mut t: Transfer) -> ! {
        do_fp_work();
        loop {
            // SAFETY: as in `plain`.
            t = unsafe { t.context.resume(0) };
        }
    }
    let stack = ProtectedFixedSizeStack::new(64 * 1024).expect("stack");
    reset_mxcsr();
    // SAFETY: `stack` outlives every use of the context made on it (both live
    // until the end of this function, and the coroutine never returns).
    let mut t = Transfer::new(
        unsafe { Context::new(&stack, if fp { with_fp } else { plain }) },
        0,
    );
    // SAFETY: `t.context` is the fresh coroutine, started once here.
    t = unsafe { t.context.resume(0) };
    let mut slot = Some(t);
    median(REPS, iters, || {
        let mut t = slot.take().expect("the coroutine's context");
        reset_mxcsr();
        let start = Instant::now();
        for _ in 0..iters {
            // SAFETY: `t.context` is the coroutine, suspended in its loop.
            t = unsafe { t.context.resume(0) };
        }
        let elapsed = start.elapsed();
        slot = Some(t);
        elapsed
    })
}

/// `corosensei`: resume and suspend.
pub(crate) fn corosensei_round_trip(fp: bool, iters: u64) -> NsPerOp {
    use corosensei::{Coroutine, Yielder};
    reset_mxcsr();
    let mut co = Coroutine::new(move |y: &Yielder<(), ()>, ()| {
        if fp {
            do_fp_work();
        }
        loop {
            y.suspend(());
        }
    });
    co.resume(());
    median(REPS, iters, || {
        reset_mxcsr();
        let start = Instant::now();
        for _ in 0..iters {
            co.resume(());
        }
        start.elapsed()
    })
}

/// A tokio current-thread runtime: with its I/O and time drivers
/// (`enable_all`, what `#[tokio::main(flavor = "current_thread")]` builds)
/// or without any.
pub(crate) fn tokio_current(drivers: bool) -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_current_thread();
    if drivers {
        b.enable_all();
    }
    b.build().expect("tokio runtime")
}

/// tokio current-thread: two tasks that keep yielding to each other.
pub(crate) fn tokio_yield_round_trip(iters: u64, drivers: bool) -> NsPerOp {
    let rt = tokio_current(drivers);
    median(REPS, iters, || {
        rt.block_on(async {
            let other = tokio::spawn(async move {
                for _ in 0..iters {
                    tokio::task::yield_now().await;
                }
            });
            let start = Instant::now();
            for _ in 0..iters {
                tokio::task::yield_now().await;
            }
            let elapsed = start.elapsed();
            other.await.expect("yielder");
            elapsed
        })
    })
}

/// tokio current-thread: spawn an empty task and await it.
pub(crate) fn tokio_spawn_join(iters: u64, drivers: bool) -> NsPerOp {
    let rt = tokio_current(drivers);
    median(REPS, iters, || {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                tokio::spawn(async {}).await.expect("empty task");
            }
            start.elapsed()
        })
    })
}

pub(crate) fn may_setup() {
    may::config().set_workers(1).set_stack_size(0x4000);
}

/// One timed run of may with one worker: two coroutines that keep
/// yielding to each other, `iters` round trips (call [`may_setup`] first).
pub(crate) fn may_yield_once(iters: u64) -> Duration {
    let (tx, rx) = std::sync::mpsc::channel::<Duration>();
    // SAFETY: may's `spawn` is unsafe because a coroutine must not use
    // thread-local storage across yields or block the worker thread; these
    // closures only yield and count.
    let h = unsafe {
        may::coroutine::spawn(move || {
            // SAFETY: as above.
            let other = may::coroutine::spawn(move || {
                for _ in 0..iters {
                    may::coroutine::yield_now();
                }
            });
            let start = Instant::now();
            for _ in 0..iters {
                may::coroutine::yield_now();
            }
            let elapsed = start.elapsed();
            other.join().expect("yielder");
            tx.send(elapsed).expect("send");
        })
    };
    h.join().expect("may coroutine");
    rx.recv().expect("elapsed")
}

/// may with one worker: spawn an empty coroutine and join it.
pub(crate) fn may_spawn_join(iters: u64) -> NsPerOp {
    may_setup();
    median(REPS, iters, || {
        let (tx, rx) = std::sync::mpsc::channel::<Duration>();
        // SAFETY: see `may_yield_once`; the closures hold no TLS.
        let h = unsafe {
            may::coroutine::spawn(move || {
                let start = Instant::now();
                for _ in 0..iters {
                    // The enclosing `unsafe` block covers this spawn: its
                    // empty closure holds no TLS.
                    may::coroutine::spawn(|| {}).join().expect("empty");
                }
                tx.send(start.elapsed()).expect("send");
            })
        };
        h.join().expect("may coroutine");
        rx.recv().expect("elapsed")
    })
}
