//! `waitpid`, `wait4`, `wait`, `waitid`: waiting for children.
//!
//! - **PR1** A wait for one child by pid watches the child's pidfd on the
//!   reactor (readable when it exits), then reaps it with the real call and
//!   `WNOHANG`. A child the pidfd cannot name (already reaped: `ESRCH`, or
//!   `pidfd_open` unavailable) goes to the real call, which reports it.
//! - **PR2** A wait for any child, a process group, or for stop and
//!   continue events (which a pidfd does not report) polls with `WNOHANG`,
//!   pausing 1 ms, doubling up to 50 ms, between tries.
//! - **PR3** `WNOHANG` calls are the real call.
#![allow(unsafe_code)]
// The `#[no_mangle]` entry points are public to the linker, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::c_int;
use std::time::Duration;

use libc::{pid_t, rusage};

use super::wait::{self, Woke};
use super::{fail, real};

/// Waits until `try_now()` (the real call with `WNOHANG`) reports
/// something: PR1 for `pid > 0` without stop/continue options, else PR2.
/// `try_now` returns `Some(result)` when the real call had an answer.
fn wait_child(
    pid: pid_t,
    options: c_int,
    call: &'static str,
    mut try_now: impl FnMut() -> Option<c_int>,
) -> c_int {
    if let Some(r) = try_now() {
        return r;
    }
    let what = format!("hooked {call}(pid {pid})");
    let by_pidfd = pid > 0 && options & (libc::WUNTRACED | libc::WCONTINUED) == 0;
    let pidfd = if by_pidfd {
        // SAFETY: pidfd_open takes a pid and flags and touches no memory.
        (unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) }) as c_int
    } else {
        -1
    };
    if pidfd >= 0 {
        // A watch for this wait only: the pidfd is closed below with the C
        // library's own call, which the cached watches would not see.
        let woke = wait::fds_ready(&[(pidfd, async_abi::AA_POLL_READABLE)], None, &what);
        // SAFETY: our own pidfd.
        unsafe { real::close(pidfd) };
        match woke {
            Woke::Cancelled => return fail(libc::ECANCELED),
            Woke::Ready | Woke::TimedOut | Woke::Unavailable => {}
        }
    }
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(r) = try_now() {
            return r;
        }
        if !wait::sleep(pause, &what) {
            return fail(libc::ECANCELED);
        }
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Hooked `waitpid(2)`.
///
/// # Safety
///
/// As `waitpid(2)`.
#[no_mangle]
pub unsafe extern "C" fn waitpid(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t {
    if !wait::active() || options & libc::WNOHANG != 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::waitpid(pid, status, options) };
    }
    wait_child(pid, options, "waitpid", || {
        // SAFETY: the caller's status pointer, as passed.
        let r = unsafe { real::waitpid(pid, status, options | libc::WNOHANG) };
        (r != 0).then_some(r)
    })
}

/// Hooked `wait4(2)`.
///
/// # Safety
///
/// As `wait4(2)`.
#[no_mangle]
pub unsafe extern "C" fn wait4(
    pid: pid_t,
    status: *mut c_int,
    options: c_int,
    usage: *mut rusage,
) -> pid_t {
    if !wait::active() || options & libc::WNOHANG != 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::wait4(pid, status, options, usage) };
    }
    wait_child(pid, options, "wait4", || {
        // SAFETY: the caller's out pointers, as passed.
        let r = unsafe { real::wait4(pid, status, options | libc::WNOHANG, usage) };
        (r != 0).then_some(r)
    })
}

/// Hooked `wait(2)`: `waitpid(-1, status, 0)`.
///
/// # Safety
///
/// As `wait(2)`.
#[no_mangle]
pub unsafe extern "C" fn wait(status: *mut c_int) -> pid_t {
    // SAFETY: the caller's contract.
    unsafe { waitpid(-1, status, 0) }
}

/// Hooked `waitid(2)`.
///
/// # Safety
///
/// As `waitid(2)`.
#[no_mangle]
pub unsafe extern "C" fn waitid(
    idtype: libc::idtype_t,
    id: libc::id_t,
    info: *mut libc::siginfo_t,
    options: c_int,
) -> c_int {
    if !wait::active() || options & libc::WNOHANG != 0 || info.is_null() {
        // SAFETY: the caller's contract.
        return unsafe { real::waitid(idtype, id, info, options) };
    }
    let pid = if idtype == libc::P_PID {
        id as pid_t
    } else {
        -1
    };
    let events = if options & (libc::WSTOPPED | libc::WCONTINUED) != 0 {
        libc::WUNTRACED
    } else {
        0
    };
    wait_child(pid, events, "waitid", || {
        // SAFETY: the caller's siginfo, cleared so "nothing yet" is seen.
        unsafe {
            (*info) = std::mem::zeroed();
            let r = real::waitid(idtype, id, info, options | libc::WNOHANG);
            if r != 0 || (*info).si_pid() != 0 {
                Some(r)
            } else {
                None
            }
        }
    })
}
