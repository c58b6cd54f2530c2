//! A coroutine that ticks every 10 ms and records the longest gap: how the
//! hooks' tests (the suite's and tests-real's) see whether a blocking call
//! held the loop.
//!
//! A long gap alone does not tell a blocked loop from a busy one: a hundred
//! coroutines each starting a connection on a slow two-core machine can
//! keep the loop's CPU for 100 ms. So the ticker also asks the kernel how
//! long the loop thread was asleep within each gap (the gap less the time
//! it ran or waited for a CPU, from `/proc`'s schedstat): a call that
//! blocks the thread sleeps in the kernel for as long as it blocks; a loop
//! with work to do never sleeps, and an idle one sleeps only until its
//! next timer (at most the 10 ms tick).

use std::cell::Cell;
use std::ffi::{c_int, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_std_api::{delay, spawn, JoinHandle};

/// What a [`Ticker`] saw.
#[derive(Debug, Clone, Copy)]
pub struct Ticks {
    /// How many times it woke.
    pub count: u32,
    /// The longest time between two wakes.
    pub worst_gap: Duration,
    /// The longest the loop thread slept within one gap, or `None` where
    /// the kernel does not keep schedstat.
    pub worst_asleep: Option<Duration>,
}

/// A coroutine that wakes every 10 ms until stopped, and what it saw.
#[derive(Debug)]
pub struct Ticker {
    stop: Rc<Cell<bool>>,
    handle: JoinHandle<Ticks>,
}

impl Ticker {
    /// Starts ticking (call inside a coroutine).
    pub fn start() -> Ticker {
        let stop = Rc::new(Cell::new(false));
        let s = stop.clone();
        // Opened here, before the ticker starts counting.
        let stat = SchedStat::of_this_thread();
        let handle = spawn(move || {
            let mut seen = Ticks {
                count: 0,
                worst_gap: Duration::ZERO,
                worst_asleep: stat.as_ref().map(|_| Duration::ZERO),
            };
            let mut last = Instant::now();
            let mut last_busy = stat.as_ref().and_then(SchedStat::busy);
            while !s.get() {
                delay(10).expect("ticker");
                let now = Instant::now();
                let gap = now - last;
                seen.worst_gap = seen.worst_gap.max(gap);
                let busy = stat.as_ref().and_then(SchedStat::busy);
                if let (Some(worst), Some(b0), Some(b1)) = (&mut seen.worst_asleep, last_busy, busy)
                {
                    *worst = (*worst).max(gap.saturating_sub(b1.saturating_sub(b0)));
                }
                last = now;
                last_busy = busy;
                seen.count += 1;
            }
            seen
        });
        Ticker { stop, handle }
    }

    /// Stops it: how many ticks it got, and the longest gap between two.
    pub fn stop(self) -> (u32, Duration) {
        let t = self.ticks();
        (t.count, t.worst_gap)
    }

    /// Stops it and returns all it saw.
    pub fn ticks(self) -> Ticks {
        self.stop.set(true);
        self.handle.join().expect("ticker")
    }
}

/// The loop thread's `/proc/self/task/<tid>/schedstat`, kept open, for
/// the time it waited for a CPU; the time it ran comes from its CPU clock
/// (schedstat's run time lags by up to a scheduler tick for a running
/// thread). Both are read with raw system calls on the loop thread: a
/// hooked `open` or `pread` would be made on another thread and suspend the
/// ticker, so the two readings would not be of one moment.
struct SchedStat(OwnedFd);

impl SchedStat {
    fn of_this_thread() -> Option<SchedStat> {
        let tid = crate::conformance::fds::gettid();
        let path = CString::new(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        // SAFETY: a valid C string; the returned number, if any, is a new
        // descriptor this process owns and hands to `OwnedFd` alone.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        let fd = c_int::try_from(fd).ok().filter(|&fd| fd >= 0)?;
        // SAFETY: `fd` was just opened above and is owned by nothing else.
        Some(SchedStat(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Time the thread has run plus time it waited for a CPU, so far.
    fn busy(&self) -> Option<Duration> {
        let mut buf = [0u8; 96];
        // SAFETY: the descriptor is open for the life of `self`, and the
        // kernel writes at most `buf.len()` bytes into `buf`.
        let n = unsafe {
            libc::syscall(
                libc::SYS_pread64,
                self.0.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
                0 as libc::off_t,
            )
        };
        let n = usize::try_from(n).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let waited: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid place for the clock to write.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
            return None;
        }
        let ran = Duration::new(
            u64::try_from(ts.tv_sec).ok()?,
            u32::try_from(ts.tv_nsec).ok()?,
        );
        Some(ran + Duration::from_nanos(waited))
    }
}
