//! Child process watches ([`ProcessEvent`], over the reactor's
//! `process_new`), and the few system calls the process, pipe and stdio
//! surfaces make themselves (descriptor flags, pipes, signals, reaping, a
//! `poll(2)` for the orphan reaper and for stdio on the blocking pool).
//!
//! Invariants:
//! - **PR1** (F5) A watch's `ud` box is freed only after the event was
//!   disposed (our drop); its one callback may have run before.
//! - **PR2** The reactor reaps the child and then calls back, in one step of
//!   `run_once` on the loop thread (`docs/abi/process.md`). So until the
//!   callback ran, the pid names our unreaped child (a zombie at worst), and
//!   a signal sent or a `waitpid` made from the loop thread cannot reach a
//!   recycled pid.
//! - **PR3** Disposing a watch before its callback leaves the child
//!   unreaped (the ABI's "not reaped" for dispose): whoever disposes it
//!   reaps the child or hands it on (the process surface's orphan reaper).
//! - **PR4** A watch is created unreferenced: it keeps the loop alive only
//!   while [`ProcessEvent::set_ref`] says someone waits for it, so a child
//!   nobody waits for is not mistaken for pending work by deadlock
//!   detection.
//!
//! # Safety
//!
//! See the parent module for the plugin calls. The system calls take only
//! descriptors borrowed for the call (`BorrowedFd`), local out-structures
//! the kernel fills, or plain integers.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::rc::Rc;

use async_abi::{
    AaEvent, AaExitStatus, AaStatus, AA_CAP_PROCESS, AA_E_CLOSED, AA_E_INVALID, AA_E_UNSUPPORTED,
};

use super::Reactor;

/// What a watch reports once: the child's exit, or why there is none
/// (`-ECHILD`: something else reaped it).
pub(crate) type ExitFn = Box<dyn Fn(Result<AaExitStatus, AaStatus>)>;

impl Reactor {
    /// Watches the child `pid` for its exit (`process_new`): `on_exit`
    /// runs once, from inside `run_once`, after the reactor reaped the
    /// child (PR2). The watch starts unreferenced (PR4). `AA_E_UNSUPPORTED`
    /// if the reactor lacks `AA_CAP_PROCESS`; the reactor's status (a
    /// negative errno such as `-ENOSYS` without pidfds) if it refuses.
    pub(crate) fn process(
        self: &Rc<Self>,
        pid: u32,
        on_exit: ExitFn,
    ) -> Result<ProcessEvent, AaStatus> {
        let r = self.r.get();
        if r.is_null() {
            return Err(AA_E_CLOSED);
        }
        let vt = &self.plugin.vt;
        let (Some(process_new), Some(set_ref)) = (vt.process_new, vt.set_ref) else {
            return Err(AA_E_UNSUPPORTED);
        };
        if self.caps & AA_CAP_PROCESS == 0 {
            self.fell_back(AA_CAP_PROCESS);
            return Err(AA_E_UNSUPPORTED);
        }
        // F8: the watch's one callback.
        let fired = std::cell::Cell::new(false);
        let on_exit: ExitFn = Box::new(move |report| {
            if fired.replace(true) {
                return super::called_twice("a process watch's");
            }
            on_exit(report);
        });
        let ud: *mut ExitFn = Box::into_raw(Box::new(on_exit));
        let mut ev: *mut AaEvent = ptr::null_mut();
        // SAFETY: `r` is live (F2); `process_cb` matches `AaProcessCb`; `ud`
        // stays valid until the event is disposed (PR1).
        let status =
            unsafe { process_new(r, i64::from(pid), 0, Some(process_cb), ud.cast(), &mut ev) };
        match NonNull::new(ev) {
            Some(ev) if status >= 0 => {
                // SAFETY: `ev` is a live event of this live reactor (PR4).
                unsafe { set_ref(ev.as_ptr(), false) };
                Ok(ProcessEvent {
                    reactor: self.clone(),
                    ev,
                    ud,
                    set_ref,
                })
            }
            _ => {
                // SAFETY: AA-R8: a failed constructor created nothing and
                // never calls back, so `ud` is ours again.
                drop(unsafe { Box::from_raw(ud) });
                Err(if status < 0 { status } else { AA_E_INVALID })
            }
        }
    }
}

unsafe extern "C" fn process_cb(
    _ev: *mut AaEvent,
    status: AaStatus,
    exit: *const AaExitStatus,
    ud: *mut c_void,
) {
    // SAFETY: `ud` is the `ExitFn` box made in `Reactor::process`, alive
    // until the event is disposed (PR1); callbacks never run after dispose.
    let f = unsafe { &*ud.cast::<ExitFn>() };
    let report = if status >= 0 && !exit.is_null() {
        // SAFETY: `exit` is valid for the duration of the callback (AA-R3).
        Ok(unsafe { *exit })
    } else if status < 0 {
        Err(status)
    } else {
        Err(AA_E_INVALID)
    };
    let _ = catch_unwind(AssertUnwindSafe(|| f(report)));
}

/// A watch for one child's exit; dropping it disposes the event (no
/// callback after, and the child is not reaped if it had not exited: PR3).
pub(crate) struct ProcessEvent {
    reactor: Rc<Reactor>,
    ev: NonNull<AaEvent>,
    ud: *mut ExitFn,
    set_ref: unsafe extern "C" fn(*mut AaEvent, bool),
}

impl ProcessEvent {
    /// Whether the watch keeps the loop alive (PR4): true while a
    /// coroutine waits for the exit.
    pub(crate) fn set_ref(&self, referenced: bool) {
        if self.reactor.r.get().is_null() {
            return;
        }
        // SAFETY: `ev` is a live event of this live reactor (F2), not yet
        // disposed (that happens in our drop).
        unsafe { (self.set_ref)(self.ev.as_ptr(), referenced) }
    }
}

impl Drop for ProcessEvent {
    fn drop(&mut self) {
        if self.reactor.r.get().is_null() {
            return; // as for `TimerEvent`: a leaked reactor may still call it
        }
        self.reactor.dispose(self.ev);
        // SAFETY: disposed above: no callback runs any more (PR1).
        drop(unsafe { Box::from_raw(self.ud) });
    }
}

// ---- system calls ----

/// `-1` into the OS error.
fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Retries a call that failed with `EINTR`.
fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Sets or clears `O_NONBLOCK` on the open file description behind `fd`
/// (shared by every descriptor duplicated from it, in any process).
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: `fcntl(F_GETFL)` on a descriptor borrowed for the call.
    let flags = cvt(unsafe { libc::fcntl(raw, libc::F_GETFL) })?;
    let new = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if new != flags {
        // SAFETY: `fcntl(F_SETFL)` with integer flags on the same descriptor.
        cvt(unsafe { libc::fcntl(raw, libc::F_SETFL, new) })?;
    }
    Ok(())
}

/// A pipe whose two ends are close-on-exec and non-blocking:
/// `(read end, write end)`.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a local array of the two descriptors `pipe2` writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
    // SAFETY: `pipe2` succeeded: both descriptors are new and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sends `signal` to the process `pid` (PR2 makes this safe from the loop
/// thread while the child's watch has not reported).
pub(crate) fn kill(pid: u32, signal: i32) -> io::Result<()> {
    let pid = pid_t(pid)?;
    // SAFETY: `kill` takes two integers.
    cvt(unsafe { libc::kill(pid, signal) }).map(drop)
}

fn pid_t(pid: u32) -> io::Result<libc::pid_t> {
    libc::pid_t::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a process id"))
}

/// Reaps the child `pid` if it has exited (`waitpid(WNOHANG)`): its raw
/// wait status (`ExitStatusExt::from_raw`), or `None` while it runs.
pub(crate) fn try_reap(pid: u32) -> io::Result<Option<i32>> {
    let pid = pid_t(pid)?;
    let mut status: libc::c_int = 0;
    // SAFETY: `status` is a local the kernel writes.
    let got = retry(|| cvt(unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) }))?;
    Ok((got == pid).then_some(status))
}

/// Blocks until the child `pid` has exited, without reaping it
/// (`waitid(WEXITED | WNOWAIT)`): for a pool thread, which then leaves the
/// reaping to the loop thread (PR2's rule for the fallback too).
pub(crate) fn wait_exited(pid: u32) -> io::Result<()> {
    let pid = pid_t(pid)?;
    let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
    retry(|| {
        // SAFETY: `info` is a local `siginfo_t` the kernel fills.
        cvt(unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOWAIT,
            )
        })
    })
    .map(drop)
}

/// Blocks until the child `pid` exits and reaps it (`waitpid(pid, 0)`):
/// the orphan reaper's last resort without pidfds.
pub(crate) fn reap_blocking(pid: u32) -> io::Result<i32> {
    let pid = pid_t(pid)?;
    let mut status: libc::c_int = 0;
    // SAFETY: `status` is a local the kernel writes.
    retry(|| cvt(unsafe { libc::waitpid(pid, &mut status, 0) }))?;
    Ok(status)
}

/// `pidfd_open(pid, 0)` (Linux 5.3): a close-on-exec descriptor that is
/// readable once the process has exited.
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid = pid_t(pid)?;
    // SAFETY: no pointer arguments; returns a descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor `pidfd_open` just returned, ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Reaps the process behind `pidfd` if it has exited
/// (`waitid(P_PIDFD, WEXITED | WNOHANG)`, Linux 5.4): true once it is gone
/// (reaped now, or by someone else before: `ECHILD`).
pub(crate) fn reap_pidfd(pidfd: BorrowedFd<'_>) -> bool {
    let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
    let r = retry(|| {
        // SAFETY: `info` is a local `siginfo_t` the kernel fills; the
        // descriptor is borrowed for the call.
        cvt(unsafe {
            libc::waitid(
                libc::P_PIDFD,
                pidfd.as_raw_fd() as libc::id_t,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOHANG,
            )
        })
    });
    match r {
        // SAFETY: zeroed, then possibly filled by `waitid`: a valid
        // `siginfo_t`, whose `si_pid` is 0 when no child changed state.
        Ok(_) => (unsafe { info.assume_init().si_pid() }) != 0,
        Err(e) => e.raw_os_error() == Some(libc::ECHILD),
    }
}

/// Which way a descriptor is waited for in [`poll`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ready {
    /// `POLLIN`.
    Read,
    /// `POLLOUT`.
    Write,
}

/// Blocks in `poll(2)` until one of `fds` is ready (or hung up, or in
/// error); returns which are. For threads that may block: a pool thread or
/// the orphan reaper, never the loop.
pub(crate) fn poll(fds: &[(BorrowedFd<'_>, Ready)]) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|(fd, r)| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: match r {
                Ready::Read => libc::POLLIN,
                Ready::Write => libc::POLLOUT,
            },
            revents: 0,
        })
        .collect();
    retry(|| {
        // SAFETY: `pfds` is a local array of `len` pollfds over descriptors
        // borrowed for the call.
        cvt(unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, -1) })
    })?;
    Ok(pfds.iter().map(|p| p.revents != 0).collect())
}

/// One `write(2)` to `fd` (no retry: `EINTR` and `EAGAIN` go to the
/// caller), for standard output and error on a pool thread.
pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is readable for `buf.len()` bytes; the descriptor is
    // borrowed for the call.
    let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
