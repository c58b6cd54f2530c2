//! `fiber`: a fiber resume/suspend round trip (the Fiber API) against a
//! raw `corosensei` coroutine switch, the engine under it: what the API's
//! checks and type erasure cost.

use std::time::Instant;

use async_std_api::fiber::Fiber;
use corosensei::Coroutine;

use crate::report::{median, NsPerOp};

const REPS: usize = 5;

/// `Fiber::resume` + `Fiber::suspend` of a `u64`.
pub(crate) fn ours(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        let f: Fiber<u64, ()> = Fiber::new(|mut v| loop {
            v = Fiber::suspend(v + 1).expect("in a fiber");
        });
        f.start(0).expect("start");
        let start = Instant::now();
        let mut v = 0;
        for _ in 0..iters {
            v = f.resume(v).expect("suspended").expect("a value");
        }
        assert!(v >= iters);
        start.elapsed()
    })
}

/// `Coroutine::resume` + `Yielder::suspend` of a `u64`.
pub(crate) fn raw_corosensei(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        let mut co: Coroutine<u64, u64, ()> = Coroutine::new(|y, mut v: u64| loop {
            v = y.suspend(v + 1);
        });
        let start = Instant::now();
        let mut v = 0;
        for _ in 0..iters {
            v = co.resume(v).as_yield().expect("yields");
        }
        assert!(v >= iters);
        start.elapsed()
    })
}
