//! Name resolution (`dns_resolve`): `getaddrinfo` on a small pool of
//! resolver threads, results handed back to the loop through the reactor's
//! waker eventfd (whose ring `READ` completes, ending the loop's wait).
//!
//! # What this module owns
//!
//! [`Resolver`], made at the first `dns_resolve` and kept until `destroy`:
//! the pending lookups by id (the loop's side), and the [`Pool`] shared
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
//! result and exits, holding only the [`Pool`] (and through it the
//! reactor's `Arc<Waker>`: its eventfd stays open until the last thread
//! lets go).

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use async_abi::{AaSockAddr, AaStatus, AA_EVENT_DNS, AA_E_DNS_NONAME};

use crate::error::{Error, Result};
use crate::event::{DnsState, Event, State};
use crate::ffi::HostCallback;
use crate::ops::sys::dns::{getaddrinfo, Hints};
use crate::reactor::Reactor;

/// Resolver threads per reactor, at most.
pub(crate) const MAX_WORKERS: usize = 4;

/// How a resolver thread wakes the loop (`[any]`, never blocks).
pub(crate) type Wake = Box<dyn Fn() + Send + Sync>;

/// One lookup to run (DN2).
#[derive(Debug)]
struct Job {
    id: u64,
    node: Option<CString>,
    service: Option<CString>,
    hints: Hints,
}

/// One lookup's outcome.
#[derive(Debug)]
struct Done {
    id: u64,
    result: std::result::Result<Vec<AaSockAddr>, AaStatus>,
}

#[derive(Debug, Default)]
struct Jobs {
    queue: VecDeque<Job>,
    running: usize,
    shutdown: bool,
}

/// What the loop and its resolver threads share (see the module doc).
pub(crate) struct Pool {
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

/// A reactor's resolver (see the module doc).
#[derive(Debug)]
pub(crate) struct Resolver {
    pool: Arc<Pool>,
    workers: Vec<JoinHandle<()>>,
    pending: HashMap<u64, Rc<Event>>,
    next_id: u64,
}

impl Resolver {
    /// A resolver with no thread yet.
    pub(crate) fn new(wake: Wake) -> Resolver {
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

    /// Ends the pool (see the drop order).
    fn shut_down(&mut self) {
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

/// Whether `node` is under the special-use domain `invalid.` (DN4).
fn is_invalid_name(node: &CString) -> bool {
    let name = node.to_bytes().to_ascii_lowercase();
    let name = name.strip_suffix(b".").unwrap_or(&name);
    name == b"invalid" || name.ends_with(b".invalid")
}

impl Reactor {
    /// `dns_resolve`.
    pub(crate) fn dns_resolve(
        &self,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        let invalid = node.as_ref().is_some_and(is_invalid_name);
        let id = {
            let mut resolver = self.resolver.borrow_mut();
            let resolver = resolver.get_or_insert_with(|| {
                let waker = Arc::clone(&self.waker);
                Resolver::new(Box::new(move || {
                    // A failed wake-up leaves the result for the next
                    // iteration; nothing better can be done from here.
                    let _ = waker.wake();
                }))
            });
            if !invalid {
                resolver.grow(1).or_else(|e| {
                    if resolver.workers.is_empty() {
                        Err(Error::os("dns_resolve: spawning a resolver thread", &e))
                    } else {
                        Ok(())
                    }
                })?;
            }
            let id = resolver.next_id;
            resolver.next_id += 1;
            id
        };
        let state = State::Dns(DnsState { id, active: true });
        let ev = self.new_event(AA_EVENT_DNS, 0, callback, None, state);
        let mut guard = self.resolver.borrow_mut();
        let resolver = guard.as_mut().expect("made above");
        resolver.pending.insert(id, Rc::clone(&ev));
        if invalid {
            resolver.pool.finish(Done {
                id,
                result: Err(AA_E_DNS_NONAME),
            });
        } else {
            resolver.pool.jobs().queue.push_back(Job {
                id,
                node,
                service,
                hints,
            });
            resolver.pool.ready.notify_one();
        }
        drop(guard);
        self.touch(&ev);
        Ok(ev)
    }

    /// Ends a pending lookup (cancel, close, dispose): a queued job is
    /// dropped, a running one's result will be (DN1). Returns whether it
    /// was pending.
    pub(crate) fn dns_stop(&self, ev: &Event) -> bool {
        let id = match &mut *ev.state.borrow_mut() {
            State::Dns(d) if d.active => {
                d.active = false;
                d.id
            }
            _ => return false,
        };
        if let Some(resolver) = self.resolver.borrow_mut().as_mut() {
            resolver.pending.remove(&id);
            resolver.pool.jobs().queue.retain(|job| job.id != id);
        }
        self.touch(ev);
        true
    }

    /// Delivers the lookups that finished (DN1, DN3). Returns the number of
    /// callbacks run.
    pub(crate) fn run_dns(&self) -> i32 {
        let batch = {
            let resolver = self.resolver.borrow();
            let Some(resolver) = resolver.as_ref() else {
                return 0;
            };
            if !resolver.pool.any_done.swap(false, Ordering::AcqRel) {
                return 0;
            }
            let batch = std::mem::take(&mut *resolver.pool.done());
            batch
        };
        let mut count = 0;
        for done in batch {
            let ev = self
                .resolver
                .borrow_mut()
                .as_mut()
                .and_then(|r| r.pending.remove(&done.id));
            let Some(ev) = ev else { continue };
            if let State::Dns(d) = &mut *ev.state.borrow_mut() {
                d.active = false;
            }
            self.touch(&ev);
            if !ev.deliverable() {
                continue;
            }
            match &done.result {
                Ok(addrs) => ev.callback.notify_dns(&ev, addrs),
                Err(status) => ev.callback.notify(&ev, *status, 0),
            }
            count += 1;
        }
        count
    }

    /// `destroy`: ends the pool (see the drop order).
    pub(crate) fn close_resolver(&self) {
        if let Some(mut resolver) = self.resolver.borrow_mut().take() {
            resolver.shut_down();
        }
    }
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
}
