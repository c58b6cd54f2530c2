//! Child process watches: a child's pidfd and its exit status, for any
//! reactor (it watches the pidfd for readability, its own way, then asks
//! [`wait_exit`] with `reap`).
//!
//! # Safety
//!
//! `pidfd_open` takes no pointer; `waitid` writes a local `siginfo_t`; a
//! descriptor wrapped in an [`OwnedFd`] was just returned by the kernel and
//! is owned by nobody else.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use async_abi::AaExitStatus;

use crate::error::{Error, Result};
use crate::sys::retry;

/// Turns `-1` into the thread's last OS error.
fn check<T: PartialEq + From<i8>>(res: T) -> io::Result<T> {
    if res == T::from(-1) {
        Err(io::Error::last_os_error())
    } else {
        Ok(res)
    }
}

/// `process_new`'s checks: a pidfd for `pid`, which must be a child of this
/// process (checked without reaping it), each failure one line naming the
/// pid.
pub fn open_child(pid: i32) -> Result<OwnedFd> {
    let pidfd = pidfd_open(pid)
        .map_err(|e| Error::os(format_args!("process_new: pidfd_open({pid})"), &e))?;
    wait_exit(&pidfd, false).map_err(|e| {
        let what = if e.raw_os_error() == Some(libc::ECHILD) {
            format!("process_new: pid {pid} is not a child of this process")
        } else {
            format!("process_new: waitid(pid {pid})")
        };
        Error::os(what, &e)
    })?;
    Ok(pidfd)
}

/// `pidfd_open(pid, 0)` (Linux 5.3): a close-on-exec descriptor that is
/// readable once the process `pid` has exited.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: no pointer arguments; `syscall` returns a descriptor or -1.
    let fd = check(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) })?;
    // SAFETY: `fd` was just returned by `pidfd_open` and is ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `waitid(P_PIDFD, pidfd, WEXITED | WNOHANG)` (Linux 5.4): `Ok(None)` while
/// the child runs, its exit once it ended; with `reap` false the child is
/// left a zombie (`WNOWAIT`), so this only checks that `pidfd` is a child of
/// this process (`ECHILD` otherwise). A child that exited gives its code and
/// signal 0; one a signal killed gives code -1 and the signal.
pub fn wait_exit(pidfd: &OwnedFd, reap: bool) -> io::Result<Option<AaExitStatus>> {
    let mut options = libc::WEXITED | libc::WNOHANG;
    if !reap {
        options |= libc::WNOWAIT;
    }
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    retry(|| {
        // SAFETY: the owned descriptor; `info` is a local `siginfo_t` the
        // kernel fills.
        check(unsafe {
            libc::waitid(
                libc::P_PIDFD,
                pidfd.as_raw_fd() as libc::id_t,
                info.as_mut_ptr(),
                options,
            )
        })
    })?;
    // SAFETY: zeroed, then possibly filled by `waitid`: a valid `siginfo_t`.
    let info = unsafe { info.assume_init() };
    // SAFETY: after `waitid` with `WEXITED`, the `sigchld` fields are the
    // ones the kernel writes (all zero when no child changed state).
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        return Ok(None);
    }
    Ok(Some(if info.si_code == libc::CLD_EXITED {
        AaExitStatus {
            code: status,
            signal: 0,
        }
    } else {
        AaExitStatus {
            code: -1,
            signal: status,
        }
    }))
}
