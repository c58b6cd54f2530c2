//! The maximum-activity-interval watchdog (R-T1, P-19): a warning naming a
//! coroutine (id and spawn location) that runs longer than the interval
//! without yielding. Off by default
//! ([`Builder::max_activity_interval`](crate::Builder::max_activity_interval)).
//!
//! Owns: the watchdog thread and what it shares with the loop thread.
//!
//! How it observes a coroutine that never yields, from another thread:
//! - **WD1** The loop thread publishes one word per switch: when a
//!   coroutine gets control (`ffi::current::enter`), one relaxed atomic
//!   store of `id << 20 | seq` (`seq` counts switches, so a coroutine that
//!   yields to itself still changes the word). Nothing else on the hot
//!   path; with the watchdog off, `enter` only tests a null pointer.
//! - **WD2** When the scheduler is about to poll the reactor (blocking or
//!   not), the word becomes [`IDLE`]: with the watchdog on, the host hands
//!   the scheduler a copy of the reactor's vtable whose `run_once` marks
//!   idle, then calls the reactor's. So a loop blocked in the reactor is
//!   never taken for a running coroutine.
//! - **WD3** The watchdog thread samples the word every quarter interval;
//!   the same non-idle word for a whole interval is a coroutine that did not
//!   yield: one warning per such run (per word).
//! - **WD4** Spawn locations cross threads in a table keyed by coroutine
//!   id, written at spawn and removed at finish (only while the watchdog is
//!   on: a `Mutex`, never touched by the watchdog except to read one entry
//!   when it warns). The watchdog touches no loop-thread state except the
//!   atomic word and this table.
//! - **WD6** A warning says where the loop thread is: the system call it is
//!   blocked in and the code that called it, read from the kernel and the
//!   thread's stack without stopping it (`blocked`, BL1-BL3). The loop
//!   thread's id is taken when the watchdog starts, on that thread.
//! - **WD5** It only warns. The RFC allows a scheduler to interrupt the
//!   coroutine; this runtime does not (unwinding a stack at an arbitrary
//!   instruction is not sound in Rust).
//!
//! Drop order: the runtime stops and joins the thread after the scheduler's
//! `run` returned (`Watchdog::stop`), before teardown.

use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::core::events::{report, Event, Handler};
use crate::core::id::CoroutineId;

/// The word while no coroutine runs (WD2).
pub(crate) const IDLE: u64 = 0;

/// Bits of the switch counter in the word (WD1).
const SEQ_BITS: u32 = 20;

/// The word for coroutine `id` at switch `seq` (never [`IDLE`]: ids are
/// never 0).
#[inline]
pub(crate) fn pack(id: u64, seq: u64) -> u64 {
    (id << SEQ_BITS) | (seq & ((1 << SEQ_BITS) - 1))
}

fn id_of(word: u64) -> u64 {
    word >> SEQ_BITS
}

/// What the loop thread and the watchdog thread share.
pub(crate) struct Shared {
    /// WD1, WD2.
    pub(crate) word: AtomicU64,
    /// WD4.
    sites: Mutex<HashMap<u64, &'static Location<'static>>>,
    /// WD6: the loop thread's kernel id.
    tid: libc::pid_t,
    stop: AtomicBool,
    wake: (Mutex<()>, Condvar),
}

/// The watchdog: its thread and the shared state.
pub(crate) struct Watchdog {
    pub(crate) shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the watchdog thread. It logs through the dispatcher that is
    /// current on the calling (loop) thread.
    pub(crate) fn start(interval: Duration, events: Option<Handler>) -> Watchdog {
        let shared = Arc::new(Shared {
            word: AtomicU64::new(IDLE),
            sites: Mutex::new(HashMap::new()),
            // Called on the loop thread, which starts the watchdog (WD6).
            tid: loop_tid(),
            stop: AtomicBool::new(false),
            wake: (Mutex::new(()), Condvar::new()),
        });
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("async-watchdog".to_owned())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || watch(&s, interval, events));
            })
            .ok();
        if thread.is_none() {
            tracing::warn!(
                target: "async_std_api::watchdog",
                "cannot start the watchdog thread: no maximum activity interval"
            );
        }
        Watchdog { shared, thread }
    }

    /// WD4: a coroutine was spawned.
    pub(crate) fn register(&self, id: u64, at: &'static Location<'static>) {
        lock(&self.shared.sites).insert(id, at);
    }

    /// WD4: a coroutine finished.
    pub(crate) fn unregister(&self, id: u64) {
        lock(&self.shared.sites).remove(&id);
    }

    /// Stops and joins the thread.
    pub(crate) fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.wake.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The calling thread's kernel id.
fn loop_tid() -> libc::pid_t {
    // std has no stable gettid; the thread's id in /proc/thread-self.
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// WD3: the watchdog thread's loop.
fn watch(s: &Shared, interval: Duration, events: Option<Handler>) {
    let period = (interval / 4).max(Duration::from_millis(1));
    let mut last = IDLE;
    let mut since = Instant::now();
    let mut warned = IDLE;
    loop {
        {
            let guard = lock(&s.wake.0);
            if s.stop.load(Ordering::Relaxed) {
                return;
            }
            let _ = s.wake.1.wait_timeout(guard, period);
        }
        if s.stop.load(Ordering::Relaxed) {
            return;
        }
        let word = s.word.load(Ordering::Relaxed);
        let now = Instant::now();
        if word != last || word == IDLE {
            last = word;
            since = now;
            continue;
        }
        let ran = now.duration_since(since);
        if ran >= interval && warned != word {
            warned = word;
            let id = id_of(word);
            let spawned_at = lock(&s.sites).get(&id).copied();
            // WD6: looked at while the thread still holds the loop.
            let blocked_in = super::blocked::describe(s.tid);
            report(
                events.as_ref(),
                Event::ActivityExceeded {
                    coroutine: CoroutineId(id),
                    spawned_at,
                    blocked_in,
                    ran,
                    interval,
                },
            );
        }
    }
}
