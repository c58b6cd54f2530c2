//! Slabs prepared ahead of a burst, on a helper thread.
//!
//! A coroutine's first run costs its stack two kernel operations: the guard
//! page below it (guard.rs) and the page fault of its top page, where the
//! fiber record and the first frames go (fiber.rs F-I8). On the development
//! VM they were about 80% of a million coroutines' first runs (`perf
//! record` of `bench --profile million`), all of it on the loop thread
//! while the machine's other cores sat idle. Once a size class has carved
//! [`START_AFTER`] slabs, the allocator hands the slabs it will carve next
//! to a helper thread, which installs their guards and populates their top
//! pages (`MADV_POPULATE_WRITE`, which changes no content) while the loop
//! runs coroutines; the loop adopts a slab only when the helper has
//! finished it, and carves one itself whenever none is ready, so the loop
//! never waits for the helper.
//!
//! # Invariants
//!
//! - **P-I1** A slab given to the helper belongs to it until it comes back
//!   on the done channel: the loop hands out none of its slots before then,
//!   so the helper's advice touches pages nobody uses.
//! - **P-I2** At most [`AHEAD`] slabs per size class are with the helper or
//!   ready and unadopted: what a burst that stops leaves resident is bounded
//!   (two slabs' top pages, 512 KiB with the default stack size).
//! - **P-I3** The helper is joined before the allocator unmaps anything
//!   (slab.rs drop), so no advice races an `munmap`.
//! - **P-I4** A slab whose guards the helper could not install comes back
//!   with `guarded == false`, and the loop installs them itself as for a
//!   fresh slab (slab A-I1); a failed populate costs nothing but the fault
//!   it meant to save.
//! - **P-I5** Under `auto` (the default) the helper starts only if the
//!   process has fewer live schedulers than CPUs the loop thread may run on
//!   (`available_parallelism`, which follows its affinity and the cgroup's
//!   quota), so that the helper can use a core no loop does. Measured on the
//!   development VM (2 cores), a million suspended coroutines (README,
//!   "Prefaulting a burst"): one mio loop 6.1-8.2 s with the helper
//!   against 8.2-8.7 s without; two pinned loops 6.1-6.2 s without helpers
//!   against 7.4-7.8 s with one forced beside each (it inherits its loop's
//!   pinning).
//!
//! # Who touches what
//!
//! The loop thread owns [`Prefault`] (through the allocator); the helper
//! thread owns the jobs it holds and sees no other state.
//!
//! # Safety
//!
//! The helper calls `process_madvise` (guards, populate) only on pages of
//! slabs it holds (P-I1), inside mappings that outlive it (P-I3).

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use super::guard;

/// Slabs a size class carves itself before the helper starts: a program
/// with a few hundred coroutines never starts the thread.
pub(crate) const START_AFTER: usize = 8;

/// Slabs per size class with the helper or ready at once (P-I2).
pub(crate) const AHEAD: usize = 2;

/// When the allocator of one scheduler prepares slabs on a helper thread
/// (the `stack_prefault` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Only while this process has fewer live schedulers than the loop
    /// thread may use CPUs (P-I5): a pinned loop, or one loop per core, keeps
    /// every fault on its own thread, since a helper would only take turns
    /// with the loops on their cores.
    Auto,
    /// Whenever a class has carved [`START_AFTER`] slabs.
    On,
    /// Never.
    Off,
}

/// Schedulers alive in this process (P-I5).
static SCHEDULERS: AtomicUsize = AtomicUsize::new(0);

/// Counts one scheduler alive for as long as it is held (P-I5).
#[derive(Debug)]
pub(crate) struct Alive(());

impl Alive {
    pub(crate) fn new() -> Alive {
        SCHEDULERS.fetch_add(1, Ordering::Relaxed);
        Alive(())
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        SCHEDULERS.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Mode {
    /// Whether a helper may start now, asked on the loop thread.
    pub(crate) fn allows_start(self) -> bool {
        match self {
            Mode::On => true,
            Mode::Off => false,
            Mode::Auto => thread::available_parallelism()
                .is_ok_and(|cpus| SCHEDULERS.load(Ordering::Relaxed) < cpus.get()),
        }
    }
}

/// `MADV_POPULATE_WRITE` from `<linux/mman.h>` (Linux 5.14+).
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// Whether `process_madvise` takes the populate advice (0 unknown, 1 yes,
/// 2 no: one `madvise` per page, 3 neither: the helper only installs
/// guards).
static POPULATE: AtomicU8 = AtomicU8::new(0);

/// One slab for the helper to prepare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Job {
    /// The size class it belongs to (slab.rs `classes` index).
    pub(crate) class: u32,
    /// Its lowest address and slots.
    pub(crate) addr: usize,
    pub(crate) slots: usize,
    pub(crate) stride: usize,
    pub(crate) page: usize,
    /// Set by the helper: every slot's guard page is installed (P-I4).
    pub(crate) guarded: bool,
}

/// The helper thread and its two channels.
#[derive(Debug)]
pub(crate) struct Prefault {
    jobs: Option<mpsc::Sender<Job>>,
    done: mpsc::Receiver<Job>,
    thread: Option<thread::JoinHandle<()>>,
    /// The helper's thread id, once it ran: read by the tests of P-I3 only.
    #[cfg_attr(not(test), allow(dead_code))]
    tid: Arc<AtomicI32>,
    /// The process that started the helper: a forked child has no helper
    /// to join.
    pid: libc::pid_t,
}

impl Prefault {
    /// Starts the helper thread.
    ///
    /// # Errors
    ///
    /// The OS error of creating the thread; the allocator then carves every
    /// slab itself.
    pub(crate) fn start() -> io::Result<Prefault> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (outbox, done) = mpsc::channel::<Job>();
        let tid = Arc::new(AtomicI32::new(0));
        let helper_tid = tid.clone();
        let thread = thread::Builder::new()
            .name("aa-stack-prefault".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                // SAFETY: gettid has no preconditions.
                helper_tid.store(unsafe { libc::gettid() }, Ordering::Relaxed);
                for mut job in inbox {
                    prepare(&mut job);
                    if outbox.send(job).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Prefault {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
            tid,
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
        })
    }

    /// Gives a slab to the helper (P-I1). Returns it if the helper is gone,
    /// so the caller can carve it itself.
    pub(crate) fn submit(&self, job: Job) -> Result<(), Job> {
        match &self.jobs {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }

    /// A slab the helper has finished, if any.
    pub(crate) fn ready(&self) -> Option<Job> {
        self.done.try_recv().ok()
    }

    /// The next slab the helper finishes, waiting for it (tests only: the
    /// loop never waits for the helper).
    #[cfg(test)]
    pub(crate) fn wait(&self) -> Option<Job> {
        self.done.recv().ok()
    }

    /// The helper thread's id, 0 before it first ran.
    #[cfg(test)]
    pub(crate) fn tid(&self) -> i32 {
        self.tid.load(Ordering::Relaxed)
    }
}

impl Drop for Prefault {
    fn drop(&mut self) {
        // P-I3: closing the job channel ends the helper's loop after the
        // jobs it holds (at most AHEAD per class, P-I2).
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            // SAFETY: getpid has no preconditions.
            if unsafe { libc::getpid() } == self.pid {
                let _ = t.join();
            }
            // In a child forked while the helper lived the thread does not
            // exist: joining would wait forever, and nothing can race the
            // child's `munmap`.
        }
    }
}

/// The helper's work on one slab: every slot's guard, then every slot's top
/// page populated.
fn prepare(job: &mut Job) {
    let guards: Vec<usize> = (0..job.slots).map(|i| job.addr + i * job.stride).collect();
    job.guarded = guards
        .chunks(guard::MAX_BATCH)
        // SAFETY: each page is the guard page of a slot of a slab the
        // helper holds (P-I1): no slot of it is handed out.
        .all(|chunk| unsafe { guard::install_many(chunk, job.page) }.is_ok());
    let tops: Vec<libc::iovec> = (1..=job.slots)
        .map(|i| libc::iovec {
            iov_base: (job.addr + i * job.stride - job.page) as *mut libc::c_void,
            iov_len: job.page,
        })
        .collect();
    populate(&tops);
}

/// Populates each page of `tops` (zero-filled, as a first touch would be).
fn populate(tops: &[libc::iovec]) {
    if POPULATE.load(Ordering::Relaxed) <= 1 {
        for chunk in tops.chunks(guard::MAX_BATCH) {
            // SAFETY: `chunk` holds valid entries, each the top page of a
            // slot of a slab the helper holds (P-I1); populating changes no
            // content (a page already present is left alone) and
            // `process_madvise` only reads the array.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_process_madvise,
                    guard::PIDFD_SELF,
                    chunk.as_ptr(),
                    chunk.len(),
                    MADV_POPULATE_WRITE,
                    0,
                )
            };
            if r < 0 {
                POPULATE.store(2, Ordering::Relaxed);
                break;
            }
            POPULATE.store(1, Ordering::Relaxed);
        }
        if POPULATE.load(Ordering::Relaxed) == 1 {
            return;
        }
    }
    if POPULATE.load(Ordering::Relaxed) == 2 {
        for v in tops {
            // SAFETY: as above, for one page.
            if unsafe { libc::madvise(v.iov_base, v.iov_len, MADV_POPULATE_WRITE) } != 0 {
                POPULATE.store(3, Ordering::Relaxed);
                return;
            }
        }
    }
}
