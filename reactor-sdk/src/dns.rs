//! Name resolution (`dns_resolve`): `getaddrinfo` on a small pool of
//! resolver threads, results handed back to the loop through a wake-up the
//! reactor gives (its waker).
//!
//! # What this module owns
//!
//! [`Resolver`], made at the first `dns_resolve` and kept until `destroy`:
//! the pending lookups by id with what the reactor keeps for each (its
//! event; the loop's side), and the [`Pool`] shared
//! with the resolver threads (the queue of jobs, the list of finished ones,
//! and how to wake the loop). Threads are started on demand, at most
//! [`MAX_WORKERS`], never one per request.
//!
//! # Invariants
//!
//! - **DN1** A lookup is in `pending` exactly while it is active; its
//!   result is delivered only if it is still there when the result is
//!   taken. So a cancelled, closed or disposed lookup never calls back with
//!   a late result: cancel delivers the reason (from a later `run_once`,
//!   reactor invariant R2) and the worker's result is dropped.
//! - **DN2** A job owns copies of its strings and hints and refers to its
//!   lookup by id only: a resolver thread never touches an event, the
//!   reactor or host memory, so a lookup may be disposed, and the reactor
//!   destroyed, while a thread is inside `getaddrinfo`.
//! - **DN3** A thread pushes its result, sets `any_done`, then wakes the
//!   loop; the loop clears `any_done` before it takes the list. So a result
//!   is never left behind without a wake-up still to come.
//! - **DN4** A node under `.invalid` (RFC 6761 section 6.4) fails with
//!   `AA_E_DNS_NONAME` without a query, through the same finished list (so
//!   from a later `run_once`, and cancellable like any lookup).
//!
//! # Access
//!
//! `pending` and the thread handles: loop thread. [`Pool`]: any thread,
//! under its locks, held for O(1) and never across `getaddrinfo` or a wake.
//!
//! # Drop order
//!
//! `destroy` (no lookup alive) sets `shutdown`, empties the queue and wakes
//! the threads. If none is inside `getaddrinfo`, they are joined (they exit
//! at once); otherwise they are detached: each finishes its call, drops its
//! result and exits, holding only the [`Pool`] (and through it the waker's
//! descriptor, kept open until the last thread lets go).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use async_abi::sdk::dns::{getaddrinfo, Hints};
use async_abi::{AaSockAddr, AaStatus, AA_E_DNS_NONAME};

use crate::error::{Error, Result};
use crate::traits::Event;

/// Resolver threads per reactor, at most.
pub const MAX_WORKERS: usize = 4;

/// How a resolver thread wakes the loop (`[any]`, never blocks).
pub type Wake = Box<dyn Fn() + Send + Sync>;

/// One lookup to run (DN2).
#[derive(Debug)]
struct Job {
    id: u64,
    node: Option<CString>,
    service: Option<CString>,
    hints: Hints,
}

/// One lookup's outcome, from [`Resolver::take_done`].
#[derive(Debug)]
pub struct Done {
    /// The lookup's id, from [`Resolver::reserve`].
    pub id: u64,
    /// The addresses, or an `AA_E_DNS_*` / `-errno` status.
    pub result: std::result::Result<Vec<AaSockAddr>, AaStatus>,
}

#[derive(Debug, Default)]
struct Jobs {
    queue: VecDeque<Job>,
    running: usize,
    shutdown: bool,
}

/// What the loop and its resolver threads share (see the module doc).
pub struct Pool {
    jobs: Mutex<Jobs>,
    ready: Condvar,
    done: Mutex<Vec<Done>>,
    any_done: AtomicBool,
    wake: Wake,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("jobs", &self.jobs)
            .field("any_done", &self.any_done)
            .finish_non_exhaustive()
    }
}

impl Pool {
    fn jobs(&self) -> MutexGuard<'_, Jobs> {
        // A panic under the lock cannot leave the queue half-updated (push,
        // pop, retain and counters): poisoning is ignored.
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn done(&self) -> MutexGuard<'_, Vec<Done>> {
        self.done.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands a result to the loop (DN3). `[any]`
    fn finish(&self, done: Done) {
        self.done().push(done);
        self.any_done.store(true, Ordering::Release);
        (self.wake)();
    }

    /// A resolver thread: runs jobs until `shutdown`.
    fn work(self: Arc<Pool>) {
        loop {
            let job = {
                let mut jobs = self.jobs();
                loop {
                    if jobs.shutdown {
                        return;
                    }
                    if let Some(job) = jobs.queue.pop_front() {
                        jobs.running += 1;
                        break job;
                    }
                    jobs = self.ready.wait(jobs).unwrap_or_else(|e| e.into_inner());
                }
            };
            let result = getaddrinfo(job.node.as_ref(), job.service.as_ref(), job.hints);
            self.jobs().running -= 1;
            self.finish(Done { id: job.id, result });
        }
    }
}

/// A reactor's resolver (see the module doc); `T` is what the reactor keeps
/// per pending lookup (its event).
#[derive(Debug)]
pub struct Resolver<T> {
    pool: Arc<Pool>,
    workers: Vec<JoinHandle<()>>,
    pending: HashMap<u64, T>,
    next_id: u64,
}

impl<T> Resolver<T> {
    /// A resolver with no thread yet; `wake` wakes the loop from a resolver
    /// thread.
    pub fn new(wake: Wake) -> Resolver<T> {
        Resolver {
            pool: Arc::new(Pool {
                jobs: Mutex::new(Jobs::default()),
                ready: Condvar::new(),
                done: Mutex::new(Vec::new()),
                any_done: AtomicBool::new(false),
                wake,
            }),
            workers: Vec::new(),
            pending: HashMap::new(),
            next_id: 1,
        }
    }

    /// Starts one more thread if every thread is (or is about to be) busy.
    fn grow(&mut self, queued: usize) -> std::io::Result<()> {
        let busy = {
            let jobs = self.pool.jobs();
            jobs.running + jobs.queue.len()
        };
        if busy + queued <= self.workers.len() || self.workers.len() >= MAX_WORKERS {
            return Ok(());
        }
        let pool = Arc::clone(&self.pool);
        let handle = std::thread::Builder::new()
            .name("aa-dns".into())
            .spawn(move || pool.work())?;
        self.workers.push(handle);
        Ok(())
    }

    /// The id of a new lookup of `node`, with a thread ready to run it
    /// (none for a name under `.invalid`, DN4). Fails only when no thread
    /// exists and none could be started.
    pub fn reserve(&mut self, node: Option<&CString>) -> Result<u64> {
        if !node.is_some_and(is_invalid_name) {
            self.grow(1).or_else(|e| {
                if self.workers.is_empty() {
                    Err(Error::os("dns_resolve: spawning a resolver thread", &e))
                } else {
                    Ok(())
                }
            })?;
        }
        let id = self.next_id;
        self.next_id += 1;
        Ok(id)
    }

    /// Queues lookup `id` (from [`Resolver::reserve`]) for `owner`.
    pub fn start(
        &mut self,
        id: u64,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        owner: T,
    ) {
        self.pending.insert(id, owner);
        if node.as_ref().is_some_and(is_invalid_name) {
            self.pool.finish(Done {
                id,
                result: Err(AA_E_DNS_NONAME),
            });
        } else {
            self.pool.jobs().queue.push_back(Job {
                id,
                node,
                service,
                hints,
            });
            self.pool.ready.notify_one();
        }
    }

    /// Ends lookup `id` (cancel, close, dispose): a queued job is dropped, a
    /// running one's result will be (DN1). Returns its owner if it was
    /// pending.
    pub fn stop(&mut self, id: u64) -> Option<T> {
        let owner = self.pending.remove(&id);
        self.pool.jobs().queue.retain(|job| job.id != id);
        owner
    }

    /// The lookups that finished since the last call (DN3); empty at once
    /// when none did.
    pub fn take_done(&self) -> Vec<Done> {
        if !self.pool.any_done.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut *self.pool.done())
    }

    /// The owner of a finished lookup, if it is still pending (DN1): deliver
    /// its result only then.
    pub fn finish(&mut self, id: u64) -> Option<T> {
        self.pending.remove(&id)
    }

    /// Ends the pool (see the drop order).
    pub fn shut_down(&mut self) {
        let running = {
            let mut jobs = self.pool.jobs();
            jobs.shutdown = true;
            jobs.queue.clear();
            jobs.running
        };
        self.pool.ready.notify_all();
        let workers = std::mem::take(&mut self.workers);
        if running == 0 {
            for worker in workers {
                let _ = worker.join();
            }
        }
    }
}

/// Delivers the lookups that finished (DN1, DN3), one callback at a time
/// with no borrow of `resolver` held: `end` marks each lookup's event
/// inactive (and reconciles its alive count) before its callback. Returns
/// the number of callbacks run.
pub fn deliver<E: Event>(
    resolver: &RefCell<Option<Resolver<Rc<E>>>>,
    mut end: impl FnMut(&Rc<E>),
) -> i32 {
    let batch = match resolver.borrow().as_ref() {
        Some(resolver) => resolver.take_done(),
        None => return 0,
    };
    let mut count = 0;
    for done in batch {
        let owner = resolver
            .borrow_mut()
            .as_mut()
            .and_then(|r| r.finish(done.id));
        let Some(ev) = owner else { continue };
        end(&ev);
        if !ev.deliverable() {
            continue;
        }
        match &done.result {
            Ok(addrs) => ev.callback().notify_dns(&*ev, addrs),
            Err(status) => ev.callback().notify(&*ev, *status, 0),
        }
        count += 1;
    }
    count
}

/// Whether `node` is under the special-use domain `invalid.` (DN4).
fn is_invalid_name(node: &CString) -> bool {
    let name = node.to_bytes().to_ascii_lowercase();
    let name = name.strip_suffix(b".").unwrap_or(&name);
    name == b"invalid" || name.ends_with(b".invalid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_under_invalid_are_recognised_in_any_case() {
        for name in ["invalid", "x.invalid", "A.B.INVALID.", "invalid."] {
            assert!(is_invalid_name(&CString::new(name).unwrap()), "{name}");
        }
        for name in ["localhost", "invalid.example", "notinvalid"] {
            assert!(!is_invalid_name(&CString::new(name).unwrap()), "{name}");
        }
    }

    #[test]
    fn an_invalid_name_fails_without_a_thread_and_a_stopped_lookup_is_not_finished() {
        let mut resolver: Resolver<&str> = Resolver::new(Box::new(|| {}));
        let node = CString::new("x.invalid").unwrap();
        let a = resolver.reserve(Some(&node)).unwrap();
        resolver.start(a, Some(node.clone()), None, Hints::default(), "a");
        let b = resolver.reserve(Some(&node)).unwrap();
        resolver.start(b, Some(node), None, Hints::default(), "b");
        assert_eq!(resolver.stop(b), Some("b"));
        let done = resolver.take_done();
        assert_eq!(done.len(), 2);
        assert!(resolver.workers.is_empty());
        let owners: Vec<_> = done
            .iter()
            .map(|d| {
                (
                    resolver.finish(d.id),
                    d.result.as_ref().map(Vec::len).map_err(|e| *e),
                )
            })
            .collect();
        assert_eq!(
            owners,
            vec![
                (Some("a"), Err(AA_E_DNS_NONAME)),
                (None, Err(AA_E_DNS_NONAME))
            ]
        );
        resolver.shut_down();
    }
}
