//! `sync`: the primitives coroutines talk through, against tokio's on a
//! current-thread runtime, may's channel, and crossbeam between two threads
//! (the ceiling: no runtime at all).
//!
//! - ping-pong: two coroutines bounce a number through two channels of
//!   capacity 1 (ns per round trip);
//! - throughput: one producer sends 1,000,000 numbers through a channel of
//!   capacity 1,024 to one consumer (ns per message);
//! - mutex, uncontended: lock and unlock with nobody else around (ns per
//!   lock);
//! - mutex, contended: four coroutines take turns, each holding the lock
//!   across a yield (ns per lock);
//! - oneshot: make a deferred, have another coroutine resolve it, wait for
//!   it (ns per round trip).
//!
//! Excluded: runtime start-up and teardown; the median of several runs.

use std::rc::Rc;
use std::time::Instant;

use async_std_api::sync::{channel, Deferred, Mutex};
use async_std_api::{spawn, suspend, Builder};

use crate::report::{median, NsPerOp};

const REPS: usize = 5;

fn ours<T: 'static>(f: impl FnOnce() -> T + 'static) -> T {
    Builder::new()
        .scheduler("embedded")
        .reactor("embedded")
        .run(f)
        .expect("runtime")
}

/// tokio as its users build it: current-thread with its drivers.
fn tokio_rt() -> tokio::runtime::Runtime {
    crate::peers::tokio_current(true)
}

/// Ping-pong through two channels of capacity 1.
pub(crate) fn ours_pingpong(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        ours(move || {
            let (to_b, from_a) = channel::<u64>(1);
            let (to_a, from_b) = channel::<u64>(1);
            let b = spawn(move || {
                while let Ok(v) = from_a.recv() {
                    if to_a.send(v + 1).is_err() {
                        break;
                    }
                }
            });
            let start = Instant::now();
            let mut v = 0;
            for _ in 0..iters {
                to_b.send(v).expect("send");
                v = from_b.recv().expect("recv");
            }
            let elapsed = start.elapsed();
            drop(to_b);
            b.join().expect("b");
            assert_eq!(v, iters);
            elapsed
        })
    })
}

pub(crate) fn tokio_pingpong(iters: u64) -> NsPerOp {
    let rt = tokio_rt();
    median(REPS, iters, || {
        rt.block_on(async move {
            let (to_b, mut from_a) = tokio::sync::mpsc::channel::<u64>(1);
            let (to_a, mut from_b) = tokio::sync::mpsc::channel::<u64>(1);
            let b = tokio::spawn(async move {
                while let Some(v) = from_a.recv().await {
                    if to_a.send(v + 1).await.is_err() {
                        break;
                    }
                }
            });
            let start = Instant::now();
            let mut v = 0;
            for _ in 0..iters {
                to_b.send(v).await.expect("send");
                v = from_b.recv().await.expect("recv");
            }
            let elapsed = start.elapsed();
            drop(to_b);
            b.await.expect("b");
            elapsed
        })
    })
}

pub(crate) fn may_pingpong(iters: u64) -> NsPerOp {
    may::config().set_workers(1).set_stack_size(0x4000);
    median(REPS, iters, || {
        let (to_b, from_a) = may::sync::mpsc::channel::<u64>();
        let (to_a, from_b) = may::sync::mpsc::channel::<u64>();
        // SAFETY: may's `go!` is unsafe because a coroutine must not block
        // its worker thread with a blocking system call; these only use
        // may's own channels.
        let b = unsafe {
            may::coroutine::spawn(move || {
                while let Ok(v) = from_a.recv() {
                    if to_a.send(v + 1).is_err() {
                        break;
                    }
                }
            })
        };
        // SAFETY: as above.
        let a = unsafe {
            may::coroutine::spawn(move || {
                let start = Instant::now();
                let mut v = 0;
                for _ in 0..iters {
                    to_b.send(v).expect("send");
                    v = from_b.recv().expect("recv");
                }
                start.elapsed()
            })
        };
        let elapsed = a.join().expect("a");
        b.join().expect("b");
        elapsed
    })
}

pub(crate) fn crossbeam_pingpong(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        let (to_b, from_a) = crossbeam_channel::bounded::<u64>(1);
        let (to_a, from_b) = crossbeam_channel::bounded::<u64>(1);
        let b = std::thread::spawn(move || {
            while let Ok(v) = from_a.recv() {
                if to_a.send(v + 1).is_err() {
                    break;
                }
            }
        });
        let start = Instant::now();
        let mut v = 0;
        for _ in 0..iters {
            to_b.send(v).expect("send");
            v = from_b.recv().expect("recv");
        }
        let elapsed = start.elapsed();
        drop(to_b);
        b.join().expect("b");
        elapsed
    })
}

const CAP: usize = 1024;

/// One producer, one consumer, `iters` messages through a bounded channel.
pub(crate) fn ours_throughput(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        ours(move || {
            let (tx, rx) = channel::<u64>(CAP);
            let start = Instant::now();
            let producer = spawn(move || {
                for i in 0..iters {
                    tx.send(i).expect("send");
                }
            });
            let mut sum = 0u64;
            for v in rx.iter() {
                sum = sum.wrapping_add(v);
            }
            let elapsed = start.elapsed();
            producer.join().expect("producer");
            assert_eq!(sum, iters * (iters - 1) / 2);
            elapsed
        })
    })
}

pub(crate) fn tokio_throughput(iters: u64) -> NsPerOp {
    let rt = tokio_rt();
    median(REPS, iters, || {
        rt.block_on(async move {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(CAP);
            let start = Instant::now();
            let producer = tokio::spawn(async move {
                for i in 0..iters {
                    tx.send(i).await.expect("send");
                }
            });
            let mut sum = 0u64;
            while let Some(v) = rx.recv().await {
                sum = sum.wrapping_add(v);
            }
            let elapsed = start.elapsed();
            producer.await.expect("producer");
            assert_eq!(sum, iters * (iters - 1) / 2);
            elapsed
        })
    })
}

pub(crate) fn crossbeam_throughput(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        let (tx, rx) = crossbeam_channel::bounded::<u64>(CAP);
        let start = Instant::now();
        let producer = std::thread::spawn(move || {
            for i in 0..iters {
                tx.send(i).expect("send");
            }
        });
        let mut sum = 0u64;
        for v in rx.iter() {
            sum = sum.wrapping_add(v);
        }
        let elapsed = start.elapsed();
        producer.join().expect("producer");
        assert_eq!(sum, iters * (iters - 1) / 2);
        elapsed
    })
}

/// Lock and unlock with nobody else around.
pub(crate) fn ours_mutex_uncontended(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        ours(move || {
            let m = Mutex::new(0u64);
            let start = Instant::now();
            for _ in 0..iters {
                *m.lock().expect("lock") += 1;
            }
            let elapsed = start.elapsed();
            assert_eq!(*m.lock().expect("lock"), iters);
            elapsed
        })
    })
}

pub(crate) fn tokio_mutex_uncontended(iters: u64) -> NsPerOp {
    let rt = tokio_rt();
    median(REPS, iters, || {
        rt.block_on(async move {
            let m = tokio::sync::Mutex::new(0u64);
            let start = Instant::now();
            for _ in 0..iters {
                *m.lock().await += 1;
            }
            start.elapsed()
        })
    })
}

const WORKERS: u64 = 4;

/// Four coroutines take turns; each holds the lock across a yield.
pub(crate) fn ours_mutex_contended(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        ours(move || {
            let m = Rc::new(Mutex::new(0u64));
            let start = Instant::now();
            let workers: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let m = m.clone();
                    spawn(move || {
                        for _ in 0..iters / WORKERS {
                            let mut g = m.lock().expect("lock");
                            *g += 1;
                            suspend().expect("yield");
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().expect("worker");
            }
            start.elapsed()
        })
    })
}

pub(crate) fn tokio_mutex_contended(iters: u64) -> NsPerOp {
    let rt = tokio_rt();
    median(REPS, iters, || {
        rt.block_on(async move {
            let m = std::sync::Arc::new(tokio::sync::Mutex::new(0u64));
            let start = Instant::now();
            let workers: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let m = m.clone();
                    tokio::spawn(async move {
                        for _ in 0..iters / WORKERS {
                            let mut g = m.lock().await;
                            *g += 1;
                            tokio::task::yield_now().await;
                        }
                    })
                })
                .collect();
            for w in workers {
                w.await.expect("worker");
            }
            start.elapsed()
        })
    })
}

/// Make a deferred, have a helper resolve it, wait for it.
pub(crate) fn ours_oneshot(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        ours(move || {
            let (to_helper, jobs) = channel(1);
            let helper = spawn(move || {
                for r in jobs.iter() {
                    let r: async_std_api::sync::Resolver<u64> = r;
                    r.resolve(1).expect("resolve");
                }
            });
            let start = Instant::now();
            let mut sum = 0;
            for _ in 0..iters {
                let (d, r) = Deferred::new();
                to_helper.send(r).expect("send");
                sum += d.wait().expect("wait");
            }
            let elapsed = start.elapsed();
            drop(to_helper);
            helper.join().expect("helper");
            assert_eq!(sum, iters);
            elapsed
        })
    })
}

pub(crate) fn tokio_oneshot(iters: u64) -> NsPerOp {
    let rt = tokio_rt();
    median(REPS, iters, || {
        rt.block_on(async move {
            let (to_helper, mut jobs) =
                tokio::sync::mpsc::channel::<tokio::sync::oneshot::Sender<u64>>(1);
            let helper = tokio::spawn(async move {
                while let Some(r) = jobs.recv().await {
                    let _ = r.send(1);
                }
            });
            let start = Instant::now();
            let mut sum = 0;
            for _ in 0..iters {
                let (r, d) = tokio::sync::oneshot::channel();
                to_helper.send(r).await.expect("send");
                sum += d.await.expect("wait");
            }
            let elapsed = start.elapsed();
            drop(to_helper);
            helper.await.expect("helper");
            assert_eq!(sum, iters);
            elapsed
        })
    })
}
