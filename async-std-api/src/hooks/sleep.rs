//! `sleep`, `usleep`, `nanosleep`, `clock_nanosleep`: a reactor timer.
//!
//! - **SL1** A sleep of zero yields (other coroutines run; `sched_yield`
//!   on a thread means the same).
//! - **SL2** A cancelled sleep ends early and reports an interruption with
//!   nothing left to sleep: `EINTR` with `*rem` zeroed (`nanosleep`,
//!   `clock_nanosleep` with a relative time), `-1`/`EINTR` (`usleep`), 0
//!   (`sleep`). std's `thread::sleep` asserts that `nanosleep` fails only
//!   with `EINTR` and then sleeps what `rem` says is left: with `rem` zero
//!   it returns, and the cancellation is raised at the coroutine's next
//!   suspension point in the runtime's API.
//! - **SL3** `clock_nanosleep` with `TIMER_ABSTIME` sleeps until the
//!   clock reads the given time (read once: a realtime clock set back
//!   meanwhile does not lengthen the sleep). Unknown clocks go to the real
//!   call, which reports the error.
#![allow(unsafe_code)]
// The `#[no_mangle]` entry points are public to the linker, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_int, c_uint};
use std::time::Duration;

use libc::{clockid_t, timespec, useconds_t};

use super::wait;
use super::{fail, real};

fn what(d: Duration) -> String {
    format!("hooked sleep ({} ms)", d.as_millis())
}

/// A valid `timespec` as a duration; `None` if it is invalid (negative, or
/// nanoseconds out of range), for the real call to reject.
fn duration(t: &timespec) -> Option<Duration> {
    if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
        return None;
    }
    Some(Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

/// SL2: writes zero into `rem`, if given.
fn zero(rem: *mut timespec) {
    if !rem.is_null() {
        // SAFETY: a non-null out pointer the caller passed.
        unsafe {
            *rem = timespec {
                tv_sec: 0,
                tv_nsec: 0,
            }
        };
    }
}

/// Hooked `nanosleep(2)`.
///
/// # Safety
///
/// As `nanosleep(2)`.
#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    let d = if req.is_null() {
        None
    } else {
        // SAFETY: a non-null request the caller passed.
        duration(unsafe { &*req })
    };
    match d {
        Some(d) if wait::active() => {
            if wait::sleep(d, &what(d)) {
                0
            } else {
                zero(rem);
                fail(libc::EINTR)
            }
        }
        // SAFETY: the caller's contract.
        _ => unsafe { real::nanosleep(req, rem) },
    }
}

/// Hooked `clock_nanosleep(2)`: returns the error number, as it does.
///
/// # Safety
///
/// As `clock_nanosleep(2)`.
#[no_mangle]
pub unsafe extern "C" fn clock_nanosleep(
    clock: clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    let known = matches!(
        clock,
        libc::CLOCK_REALTIME | libc::CLOCK_MONOTONIC | libc::CLOCK_BOOTTIME | libc::CLOCK_TAI
    );
    let t = if req.is_null() {
        None
    } else {
        // SAFETY: a non-null request the caller passed.
        duration(unsafe { &*req })
    };
    let (Some(t), true, true) = (t, known, wait::active()) else {
        // SAFETY: the caller's contract.
        return unsafe { real::clock_nanosleep(clock, flags, req, rem) };
    };
    let d = if flags & libc::TIMER_ABSTIME != 0 {
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid out pointer.
        unsafe { libc::clock_gettime(clock, &mut now) };
        duration(&now).map_or(Duration::ZERO, |now| t.saturating_sub(now))
    } else {
        t
    };
    if wait::sleep(d, &what(d)) {
        0
    } else {
        if flags & libc::TIMER_ABSTIME == 0 {
            zero(rem);
        }
        libc::EINTR
    }
}

/// Hooked `usleep(3)`.
///
/// # Safety
///
/// As `usleep(3)`.
#[no_mangle]
pub unsafe extern "C" fn usleep(us: useconds_t) -> c_int {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return unsafe { real::usleep(us) };
    }
    let d = Duration::from_micros(u64::from(us));
    if wait::sleep(d, &what(d)) {
        0
    } else {
        fail(libc::EINTR)
    }
}

/// Hooked `sleep(3)`: returns the seconds left, 0 when it slept them all
/// or was cancelled (SL2).
///
/// # Safety
///
/// As `sleep(3)`.
#[no_mangle]
pub unsafe extern "C" fn sleep(secs: c_uint) -> c_uint {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return unsafe { real::sleep(secs) };
    }
    let d = Duration::from_secs(u64::from(secs));
    let _ = wait::sleep(d, &what(d));
    0
}
