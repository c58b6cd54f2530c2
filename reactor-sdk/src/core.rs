//! The bookkeeping every reactor's loop keeps, whatever its backend: the
//! loop thread, the cached clock, the alive count, the events not yet
//! disposed, whether `run_once` is running, and the last error message.
//!
//! # Invariants
//!
//! - **C1** `alive` equals the number of events whose `counted` flag is set;
//!   a reactor calls [`Core::touch`] after every change of an event's state,
//!   with whether the event should count (active, referenced, not hidden,
//!   not disposed).
//! - **C2** `live_events` counts events made ([`Core::event_made`]) and not
//!   yet disposed ([`Core::event_disposed`]); [`Core::check_destroy`]
//!   refuses while it is non-zero.
//! - **C3** The clock never goes back: [`Core::refresh_clock`] keeps the
//!   cache monotonic.
//! - **C4** `running` is set exactly inside `run_once` (the guard
//!   [`Core::enter`] returns clears it, a panic included): `run_once` and
//!   `destroy` are refused from a callback.
//!
//! # Access
//!
//! Loop thread only (`Cell`s): every shim checks [`Core::check_thread`]
//! first, through `Reactor::check_thread`.

use std::cell::{Cell, RefCell};
use std::time::Instant;

use async_abi::{AaStatus, AA_E_BUSY};

use crate::error::{Error, Result};

/// A cheap identity of the calling thread, read on every shim call: the
/// thread pointer, which the ELF TLS ABI keeps in `%fs:0` on x86-64 (the
/// thread control block points to itself there) and in `tpidr_el0` on
/// AArch64. A thread-local's address would do too, but in a plugin loaded
/// with `dlopen` every such access is a `__tls_get_addr` call: about 1% of
/// an echo request's instructions, and most of what a plugin costs over
/// the statically linked reactor.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[inline]
fn thread_mark() -> usize {
    let tp: usize;
    // SAFETY: reads the thread pointer word at `%fs:0`, which every thread
    // of a Linux x86-64 process has (TLS variant II); no memory is written.
    unsafe {
        std::arch::asm!(
            "mov {}, qword ptr fs:[0]",
            out(reg) tp,
            options(nostack, readonly, preserves_flags, pure)
        )
    };
    tp
}

/// See the x86-64 version.
#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
#[inline]
fn thread_mark() -> usize {
    let tp: usize;
    // SAFETY: reads the thread pointer register; no memory is touched.
    unsafe {
        std::arch::asm!(
            "mrs {}, tpidr_el0",
            out(reg) tp,
            options(nomem, nostack, preserves_flags, pure)
        )
    };
    tp
}

/// See the x86-64 version: elsewhere, the address of a thread-local (no
/// reference count, unlike `thread::current()`).
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
#[inline]
fn thread_mark() -> usize {
    thread_local! {
        static THREAD_MARK: u8 = const { 0 };
    }
    THREAD_MARK.with(|m| m as *const u8 as usize)
}

/// A reactor's loop bookkeeping (see the module doc).
#[derive(Debug)]
pub struct Core {
    thread: usize,
    base: Instant,
    now: Cell<u64>,
    /// The cached clock may be behind: the next [`Core::clock`] reads it.
    stale: Cell<bool>,
    alive: Cell<u32>,
    live_events: Cell<usize>,
    running: Cell<bool>,
    last_error: RefCell<String>,
}

impl Default for Core {
    fn default() -> Core {
        Core::new()
    }
}

impl Core {
    /// Bookkeeping for a loop on the calling thread; the clock starts at 0.
    pub fn new() -> Core {
        Core {
            thread: thread_mark(),
            base: Instant::now(),
            now: Cell::new(0),
            stale: Cell::new(false),
            alive: Cell::new(0),
            live_events: Cell::new(0),
            running: Cell::new(false),
            last_error: RefCell::new(String::new()),
        }
    }

    /// Fails unless called on the loop thread.
    #[inline]
    pub fn check_thread(&self, what: &str) -> Result<()> {
        if self.thread == thread_mark() {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "{what}: called from a thread other than the loop thread"
            )))
        }
    }

    /// Records a failure for `last_error_message` and returns its status.
    #[inline]
    pub fn fail(&self, err: Error) -> AaStatus {
        let status = err.status;
        *self.last_error.borrow_mut() = err.message;
        status
    }

    /// The last error message.
    pub fn last_error(&self) -> String {
        self.last_error.borrow().clone()
    }

    /// Refreshes and returns the cached clock, in ns since the loop was made
    /// (C3).
    #[inline]
    pub fn refresh_clock(&self) -> u64 {
        let now = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let now = now.max(self.now.get());
        self.now.set(now);
        self.stale.set(false);
        now
    }

    /// Says the cached clock may be behind, instead of reading it: for an
    /// iteration that needs no clock itself (no timer pending), since a
    /// read is most of an empty iteration's cost. The next [`Core::clock`]
    /// reads it.
    #[inline]
    pub fn mark_clock_stale(&self) {
        self.stale.set(true);
    }

    /// The clock an iteration's due timers are run against: read afresh if
    /// `timers` are pending, else `None` and the cached clock marked stale
    /// ([`Core::mark_clock_stale`]): a new timer reads the clock itself, and
    /// `now_ns` still moves on (R-LOOP-4).
    #[inline]
    pub fn clock_for_timers(&self, timers: bool) -> Option<u64> {
        if timers {
            Some(self.refresh_clock())
        } else {
            self.mark_clock_stale();
            None
        }
    }

    /// The clock as the ABI's `now_ns` gives it: the cached value, read
    /// first if an iteration left it stale (C3 holds either way).
    #[inline]
    pub fn clock(&self) -> u64 {
        if self.stale.get() {
            return self.refresh_clock();
        }
        self.now.get()
    }

    /// The cached clock.
    #[inline]
    pub fn now(&self) -> u64 {
        self.now.get()
    }

    /// Active, referenced, non-hidden events (C1).
    #[inline]
    pub fn alive(&self) -> u32 {
        self.alive.get()
    }

    /// Reconciles an event's `counted` flag with whether it is `live` (C1).
    #[inline]
    pub fn touch(&self, counted: &Cell<bool>, live: bool) {
        if live != counted.get() {
            counted.set(live);
            let alive = self.alive.get();
            self.alive.set(if live { alive + 1 } else { alive - 1 });
        }
    }

    /// Counts a new event (C2).
    #[inline]
    pub fn event_made(&self) {
        self.live_events.set(self.live_events.get() + 1);
    }

    /// Counts a disposed event out (C2).
    #[inline]
    pub fn event_disposed(&self) {
        self.live_events
            .set(self.live_events.get().saturating_sub(1));
    }

    /// Events made and not disposed (C2).
    pub fn live_events(&self) -> usize {
        self.live_events.get()
    }

    /// Whether `run_once` is running (C4).
    #[inline]
    pub fn running(&self) -> bool {
        self.running.get()
    }

    /// `run_once`'s checks (not from a callback; `timeout_ns` -1 or >= 0);
    /// the guard marks the loop running until it is dropped (C4).
    #[inline]
    pub fn enter(&self, timeout_ns: i64) -> Result<Running<'_>> {
        if self.running.get() {
            return Err(Error::invalid("run_once: called from inside a callback"));
        }
        if timeout_ns < -1 {
            return Err(Error::invalid(format!(
                "run_once: timeout {timeout_ns} ns is neither -1 nor >= 0"
            )));
        }
        self.running.set(true);
        Ok(Running(&self.running))
    }

    /// `destroy`'s checks: not from a callback, and no event left (C2, C4).
    pub fn check_destroy(&self) -> Result<()> {
        if self.running.get() {
            return Err(Error::invalid("destroy: called from inside run_once"));
        }
        let live = self.live_events.get();
        if live > 0 {
            return Err(Error::new(
                AA_E_BUSY,
                format!("destroy: {live} events are not disposed yet"),
            ));
        }
        Ok(())
    }
}

/// Marks the loop running until dropped, a panic included (C4).
#[derive(Debug)]
pub struct Running<'a>(&'a Cell<bool>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alive_follows_touch_and_run_once_is_not_reentrant() {
        let core = Core::new();
        let counted = Cell::new(false);
        core.touch(&counted, true);
        core.touch(&counted, true);
        assert_eq!(core.alive(), 1);
        core.touch(&counted, false);
        assert_eq!(core.alive(), 0);
        let guard = core.enter(-1).unwrap();
        assert_eq!(
            core.enter(0).unwrap_err().message,
            "run_once: called from inside a callback"
        );
        assert!(core.check_destroy().is_err());
        drop(guard);
        core.event_made();
        assert_eq!(core.check_destroy().unwrap_err().status, AA_E_BUSY);
        core.event_disposed();
        assert!(core.check_destroy().is_ok());
        assert_eq!(core.enter(-2).unwrap_err().status, async_abi::AA_E_INVALID);
    }

    #[test]
    fn the_clock_never_goes_back() {
        let core = Core::new();
        let a = core.refresh_clock();
        let b = core.refresh_clock();
        assert!(b >= a);
        assert_eq!(core.now(), b);
    }

    #[test]
    fn without_timers_the_clock_is_left_stale_and_read_when_asked() {
        let core = Core::new();
        let first = core.clock_for_timers(true).expect("timers pending: a read");
        assert!(!core.stale.get());
        assert_eq!(core.clock_for_timers(false), None);
        assert!(core.stale.get(), "no timers: marked stale, not read");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let asked = core.clock();
        assert!(asked >= first + 1_000_000, "now_ns reads the stale clock");
        assert!(!core.stale.get());
    }

    #[test]
    fn only_the_loop_thread_passes_the_thread_check() {
        let core = Core::new();
        assert!(core.check_thread("run_once").is_ok());
        assert_eq!(core.thread, super::thread_mark());
        // `Core` stays on its thread: another thread's mark is compared.
        let there = std::thread::spawn(super::thread_mark).join().unwrap();
        assert_ne!(core.thread, there, "two threads have one mark");
    }
}
