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
//! never waits for the helper (but for one case: a reservation the kernel
//! refuses while the helper holds slabs of that class, where waiting for
//! them beats failing the spawn).
//!
//! # Invariants
//!
//! - **P-I1** A slab given to the helper belongs to it until it comes back
//!   on the done channel: the loop hands out none of its slots before then,
//!   so the helper's advice touches pages nobody uses.
//! - **P-I2** At most [`AHEAD`] slabs per size class are with the helper or
//!   ready and unadopted: what a burst that stops leaves resident is bounded
//!   (two slabs' top pages per size class, 512 KiB with the default stack
//!   size).
//! - **P-I3** The helper is joined before the allocator unmaps anything
//!   (slab.rs drop), so no advice races an `munmap`; slabs still queued
//!   then are skipped, not prepared. In a child forked while the helper
//!   lived there is no helper: the child neither joins nor submits, and
//!   leaks the handle and channels rather than touch state the fork froze.
//! - **P-I4** A slab whose guards the helper did not install comes back
//!   with `guarded == false`, and the loop installs them itself as for a
//!   fresh slab (slab A-I1): after an error, and always where guards are
//!   `mprotect`s (guard G-I1), which write-lock the memory map and would
//!   stall the loop's faults. A failed populate costs nothing but the fault
//!   it meant to save; only a kernel that refuses the advice stops the
//!   helper asking for it.
//! - **P-I5** Under `auto` (the default) the helper starts only if the
//!   process has fewer live schedulers than CPUs the loop thread may run on
//!   (`available_parallelism`, which follows its affinity and the cgroup's
//!   quota), so that the helper can use a core no loop does. The question
//!   is asked once, when a size class starts its [`START_AFTER`]th slab,
//!   and the answer kept. Measured on the
//!   development VM (2 cores), a million suspended coroutines (README,
//!   "Prefaulting a burst"): one mio loop 6.1-8.2 s with the helper
//!   against 8.2-8.7 s without; two pinned loops 6.1-6.2 s without helpers
//!   against 7.4-7.8 s with one forced beside each (it inherits its loop's
//!   pinning).
//!
//! # Who touches what
//!
//! The loop thread owns [`Prefault`] (through the allocator); the helper
//! thread owns the jobs it holds. They share only atomics: the process-wide
//! probes of what the kernel takes (`POPULATE` here, the guard mode and
//! batching in guard.rs) and the stop flag.
//!
//! # Safety
//!
//! The helper calls `process_madvise` (guards, populate) only on pages of
//! slabs it holds (P-I1), inside mappings that outlive it (P-I3).

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use super::guard;

/// The slab whose start makes a size class ask for the helper: a program
/// that never needs more than `START_AFTER - 1` slabs of one stack size
/// (448 stacks of the default size) never starts the thread.
pub(crate) const START_AFTER: usize = 8;

/// Slabs per size class with the helper or ready at once (P-I2).
pub(crate) const AHEAD: usize = 2;

/// When the allocator of one scheduler prepares slabs on a helper thread
/// (the `stack_prefault` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// If, when a class starts its [`START_AFTER`]th slab, this process has
    /// fewer live schedulers than the loop thread may use CPUs (P-I5): a
    /// pinned loop, or one loop per core, keeps every fault on its own
    /// thread, since a helper would only take turns with the loops on their
    /// cores.
    Auto,
    /// When a class starts its [`START_AFTER`]th slab.
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
    /// Counts one more scheduler alive, until this is dropped.
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

/// How the helper populates (P-I4): not asked yet, or known to take one
/// `process_madvise` per batch (Linux 6.14+ for this advice).
const BATCHED: u8 = 0;
/// `process_madvise` refused the advice: one `madvise` per page.
const PER_PAGE: u8 = 1;
/// `madvise` refused it too (Linux before 5.14): no populate at all.
const NEVER: u8 = 2;

/// The populate probe (P-I4), shared by every helper of the process.
static POPULATE: AtomicU8 = AtomicU8::new(BATCHED);

/// Whether the helper can populate pages on this kernel (false once a
/// refusal was seen): the tests skip their residency checks without it.
#[cfg(test)]
pub(crate) fn populates() -> bool {
    POPULATE.load(Ordering::Relaxed) != NEVER
}

/// Whether an error means the kernel refuses the advice for good (an older
/// kernel), rather than failing this once.
fn refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EBADF | libc::EINVAL | libc::ENOSYS | libc::EPERM | libc::ESRCH)
    )
}

/// One slab for the helper to prepare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Job {
    /// The size class it belongs to (slab.rs `classes` index).
    pub(crate) class: u32,
    /// The slab's lowest address: its first slot's guard page.
    pub(crate) addr: usize,
    /// Slots in the slab.
    pub(crate) slots: usize,
    /// Bytes from one slot to the next (a guard page and the usable bytes).
    pub(crate) stride: usize,
    /// The page size.
    pub(crate) page: usize,
    /// Set by the helper: every slot's guard page is installed (P-I4).
    pub(crate) guarded: bool,
}

/// The helper thread and its two channels.
#[derive(Debug)]
pub(crate) struct Prefault {
    jobs: Option<mpsc::Sender<Job>>,
    done: Option<mpsc::Receiver<Job>>,
    thread: Option<thread::JoinHandle<()>>,
    /// Set on drop: queued slabs are skipped (P-I3).
    stop: Arc<AtomicBool>,
    /// The helper's thread id once it ran; the helper drops its clone when
    /// it ends (the tests of P-I3 watch that).
    #[cfg_attr(not(test), allow(dead_code))]
    tid: Arc<AtomicI32>,
    /// The process that started the helper (P-I3: a forked child has none).
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
        let stop = Arc::new(AtomicBool::new(false));
        let tid = Arc::new(AtomicI32::new(0));
        let (helper_stop, helper_tid) = (stop.clone(), tid.clone());
        let thread = thread::Builder::new()
            // At most 15 bytes: the kernel's limit for a thread's name.
            .name("aa-prefault".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                // SAFETY: gettid has no preconditions.
                helper_tid.store(unsafe { libc::gettid() }, Ordering::Relaxed);
                for mut job in inbox {
                    if helper_stop.load(Ordering::Relaxed) {
                        break;
                    }
                    prepare(&mut job);
                    if outbox.send(job).is_err() {
                        break;
                    }
                }
                drop(helper_tid);
            })?;
        Ok(Prefault {
            jobs: Some(jobs),
            done: Some(done),
            thread: Some(thread),
            stop,
            tid,
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
        })
    }

    /// Whether this process is a child forked while the helper lived.
    fn forked(&self) -> bool {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        pid != self.pid
    }

    /// Gives a slab to the helper (P-I1). Returns it if the helper is gone
    /// (or this is a forked child, P-I3), so the caller can carve it.
    pub(crate) fn submit(&self, job: Job) -> Result<(), Job> {
        match &self.jobs {
            Some(tx) if !self.forked() => tx.send(job).map_err(|e| e.0),
            _ => Err(job),
        }
    }

    /// A slab the helper has finished, if any.
    pub(crate) fn ready(&self) -> Option<Job> {
        if self.forked() {
            return None;
        }
        self.done.as_ref()?.try_recv().ok()
    }

    /// The next slab the helper finishes, waiting for it; `None` if the
    /// helper is gone. Only for a reservation the kernel refused (module
    /// doc) and the tests: otherwise the loop never waits for the helper.
    pub(crate) fn wait(&self) -> Option<Job> {
        if self.forked() {
            return None;
        }
        self.done.as_ref()?.recv().ok()
    }

    /// A watch on the helper: it fails to upgrade once the helper ended.
    #[cfg(test)]
    pub(crate) fn watch(&self) -> std::sync::Weak<AtomicI32> {
        Arc::downgrade(&self.tid)
    }
}

impl Drop for Prefault {
    fn drop(&mut self) {
        if self.forked() {
            // P-I3: no helper in this process, and the channels' locks may
            // have been frozen held by the fork: leak all three.
            std::mem::forget(self.jobs.take());
            std::mem::forget(self.done.take());
            std::mem::forget(self.thread.take());
            return;
        }
        // P-I3: the helper skips what is still queued and ends once the
        // job channel is closed.
        self.stop.store(true, Ordering::Relaxed);
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The helper's work on one slab: every slot's guard (P-I4), then every
/// slot's top page populated.
fn prepare(job: &mut Job) {
    job.guarded = guard::mode() == Some(guard::GuardMode::Madvise) && {
        let guards: Vec<usize> = (0..job.slots).map(|i| job.addr + i * job.stride).collect();
        guards
            .chunks(guard::MAX_BATCH)
            // SAFETY: each page is the guard page of a slot of a slab the
            // helper holds (P-I1): no slot of it is handed out, and its
            // mapping outlives the helper (P-I3).
            .all(|chunk| unsafe { guard::install_many(chunk, job.page) }.is_ok())
    };
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
    if POPULATE.load(Ordering::Relaxed) == BATCHED {
        for chunk in tops.chunks(guard::MAX_BATCH) {
            // SAFETY: `chunk` holds valid entries, each the top page of a
            // slot of a slab the helper holds (P-I1) in a mapping that
            // outlives it (P-I3); populating changes no content (a page
            // already present is left alone) and `process_madvise` only
            // reads the array.
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
                if refused(&io::Error::last_os_error()) {
                    POPULATE.store(PER_PAGE, Ordering::Relaxed);
                    break;
                }
                // A failure this once (ENOMEM, EINTR): the loop's first
                // touches fault these pages in instead.
                return;
            }
        }
        if POPULATE.load(Ordering::Relaxed) == BATCHED {
            return;
        }
    }
    if POPULATE.load(Ordering::Relaxed) == PER_PAGE {
        for v in tops {
            // SAFETY: as above, for one page.
            if unsafe { libc::madvise(v.iov_base, v.iov_len, MADV_POPULATE_WRITE) } != 0 {
                if refused(&io::Error::last_os_error()) {
                    POPULATE.store(NEVER, Ordering::Relaxed);
                }
                return;
            }
        }
    }
}
