//! The pool of threads for blocking work: what `spawn_blocking`, file
//! operations on a reactor without native file I/O, and name resolution
//! without the reactor's DNS run on, so the loop thread never blocks.
//!
//! Rules:
//! - **BP1** At most `max` threads; a thread is started only when a job is
//!   queued and no thread is idle, so a program that never blocks starts
//!   none. A thread idle for [`KEEP_ALIVE`] exits.
//! - **BP2** Jobs start in the order they were queued.
//! - **BP3** At teardown ([`Pool::close`]) idle threads exit and queued jobs
//!   that have not started are dropped (each drops its promise unkept, RM1);
//!   running jobs finish on their threads, which then exit. Nothing waits
//!   for them: the runtime's caller is not held by work it gave up on.
//!
//! - **BP4** A worker that runs out of jobs first watches the queue for
//!   [`SPIN`] before it sleeps, one worker at a time: waking a sleeping
//!   thread costs tens of microseconds on a virtual machine, and a
//!   coroutine that hands out blocking work in a loop hands out the next
//!   job within a few.
//!
//! A job is a `FnOnce` that catches its own panics (the caller wraps it),
//! so a worker thread never unwinds.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a worker waits for a job before it exits.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// How long a worker out of jobs watches the queue before it sleeps (BP4).
pub(crate) const SPIN: Duration = Duration::from_micros(50);

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    threads: usize,
    idle: usize,
    /// Workers watching the queue before they sleep (BP4): at most one.
    spinning: usize,
    closed: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    max: usize,
    /// `jobs.len()`, readable without the lock by a spinning worker.
    queued: AtomicUsize,
}

fn lock(q: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // Jobs never run under this lock, so a poisoned lock is a consistent
    // queue.
    q.lock().unwrap_or_else(|p| p.into_inner())
}

/// A runtime's blocking pool.
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

/// The default size: four threads per core, at least 8 (blocking work is
/// mostly waiting, on disks, resolvers and other people's locks).
pub(crate) fn default_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores * 4).max(8)
}

impl Pool {
    pub(crate) fn new(max: usize) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                queue: Mutex::default(),
                ready: Condvar::new(),
                max: max.max(1),
                queued: AtomicUsize::new(0),
            }),
        }
    }

    /// Queues `job` (BP1, BP2). Fails with the job's drop only if a thread
    /// was needed and none could be started and none runs (the system is
    /// out of threads): the caller's promise is then dropped unkept, and
    /// the message says why.
    pub(crate) fn submit(&self, job: Job) -> Result<(), String> {
        let mut q = lock(&self.shared.queue);
        if q.closed {
            return Err("the blocking pool is closed (the runtime is shutting down)".into());
        }
        q.jobs.push_back(job);
        self.shared.queued.store(q.jobs.len(), Ordering::Release);
        if q.spinning > 0 {
            return Ok(()); // BP4: the spinning worker takes it
        }
        if q.idle > 0 {
            drop(q);
            self.shared.ready.notify_one();
            return Ok(());
        }
        if q.threads >= self.shared.max {
            return Ok(()); // a running thread takes it when it is done
        }
        q.threads += 1;
        let n = q.threads;
        drop(q);
        let shared = self.shared.clone();
        let started = std::thread::Builder::new()
            .name(format!("async-blocking-{n}"))
            .spawn(move || work(&shared));
        match started {
            Ok(_) => Ok(()),
            Err(e) => {
                let mut q = lock(&self.shared.queue);
                q.threads -= 1;
                if q.threads > 0 {
                    return Ok(()); // a running thread will take the job
                }
                let job = q.jobs.pop_back();
                self.shared.queued.store(q.jobs.len(), Ordering::Release);
                drop(q);
                drop(job);
                Err(format!("cannot start a blocking-pool thread: {e}"))
            }
        }
    }

    /// BP3.
    pub(crate) fn close(&self) {
        let jobs = {
            let mut q = lock(&self.shared.queue);
            q.closed = true;
            self.shared.queued.store(0, Ordering::Release);
            std::mem::take(&mut q.jobs)
        };
        self.shared.ready.notify_all();
        drop(jobs);
    }

    /// `(threads started and alive, threads idle)`, for tests.
    #[cfg(test)]
    fn threads(&self) -> (usize, usize) {
        let q = lock(&self.shared.queue);
        (q.threads, q.idle)
    }
}

/// A worker: runs jobs until the pool closes or it idles for
/// [`KEEP_ALIVE`].
fn work(shared: &Shared) {
    let mut q = lock(&shared.queue);
    loop {
        if let Some(job) = q.jobs.pop_front() {
            shared.queued.store(q.jobs.len(), Ordering::Release);
            drop(q);
            job();
            q = lock(&shared.queue);
            if q.jobs.is_empty() && !q.closed && q.spinning == 0 {
                // BP4: watch for the next job a little before sleeping.
                q.spinning = 1;
                drop(q);
                let until = Instant::now() + SPIN;
                while shared.queued.load(Ordering::Acquire) == 0 && Instant::now() < until {
                    std::hint::spin_loop();
                }
                q = lock(&shared.queue);
                q.spinning = 0;
            }
            continue;
        }
        if q.closed {
            break;
        }
        q.idle += 1;
        let (next, timeout) = shared
            .ready
            .wait_timeout(q, KEEP_ALIVE)
            .unwrap_or_else(|p| p.into_inner());
        q = next;
        q.idle -= 1;
        if timeout.timed_out() && q.jobs.is_empty() {
            break;
        }
    }
    q.threads -= 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn runs_jobs_in_order_on_at_most_max_threads() {
        let pool = Pool::new(2);
        let (tx, rx) = mpsc::channel();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        for i in 0..6 {
            let tx = tx.clone();
            let gate = gate.clone();
            pool.submit(Box::new(move || {
                let (open, cv) = &*gate;
                let mut g = open.lock().unwrap();
                while !*g {
                    g = cv.wait(g).unwrap();
                }
                drop(g);
                tx.send(i).unwrap();
            }))
            .unwrap();
        }
        assert_eq!(pool.threads().0, 2, "BP1: no more than max threads");
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        let mut got: Vec<i32> = (0..6).map(|_| rx.recv().unwrap()).collect();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn close_drops_queued_jobs_and_refuses_new_ones() {
        let pool = Pool::new(1);
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        pool.submit(Box::new(move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        }))
        .unwrap();
        started_rx.recv().unwrap();
        struct Flag(Arc<Mutex<bool>>);
        impl Drop for Flag {
            fn drop(&mut self) {
                *self.0.lock().unwrap() = true;
            }
        }
        let dropped = Arc::new(Mutex::new(false));
        let flag = Flag(dropped.clone());
        pool.submit(Box::new(move || drop(flag))).unwrap();
        pool.close();
        assert!(*dropped.lock().unwrap(), "BP3: the queued job was dropped");
        assert!(pool.submit(Box::new(|| ())).is_err());
        release_tx.send(()).unwrap();
    }
}
