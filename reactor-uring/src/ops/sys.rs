//! The few plain system calls the reactor makes outside the ring: making
//! and writing eventfds, telling sockets from other descriptors, closing a
//! descriptor nobody will ever see, opening and reaping pidfds, and
//! managing inotify watches. The signal handler and its table are in
//! [`signal`], `getaddrinfo` (run by resolver threads) in [`dns`]; each
//! states its own obligations.
//!
//! # Safety
//!
//! Each call goes through `syscall!`, which turns `-1` into
//! [`io::Error::last_os_error`]. The obligations are:
//!
//! - **Y1 Descriptors.** A raw descriptor is only a number to the kernel: a
//!   wrong one gives `EBADF` (or acts on another descriptor of this process,
//!   which is the host's contract to prevent, AA-R6), never undefined
//!   behaviour in Rust.
//! - **Y2 Local memory.** Every pointer handed to the kernel points to a
//!   local (or a field of an owned value) of the size given in the call.
//! - **Y3 Ownership.** A descriptor wrapped in an [`OwnedFd`] was just
//!   returned by the kernel and is owned by nobody else.

// The signal table lives in the plugin SDK, shared with the other reactor
// (`getaddrinfo` is the kit's, in `reactor_sdk::dns`).
pub(crate) use async_abi::sdk::signal;

use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use async_abi::AaExitStatus;

/// Runs a libc call and turns `-1` into the thread's last OS error.
macro_rules! syscall {
    ($fn:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: the caller of the macro states the obligation of this
        // particular call (Y1-Y3) in its own SAFETY comment.
        let res = unsafe { libc::$fn($($arg),*) };
        if res == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(res)
        }
    }};
}

/// A new eventfd: counter 0, non-blocking, close-on-exec.
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: no pointer arguments.
    let fd = syscall!(eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC))?;
    // SAFETY: Y3: `fd` was just returned by `eventfd` and is ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds 1 to an eventfd's counter. Never blocks: a counter at its maximum
/// (`EAGAIN`) already wakes every reader, so that is success too.
pub(crate) fn eventfd_write(fd: RawFd) -> io::Result<()> {
    let one: u64 = 1;
    loop {
        // SAFETY: Y1; Y2: `one` is a local u64, and 8 bytes are written.
        match syscall!(write(fd, (&one as *const u64).cast(), 8)) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Whether `fd` is a socket (`fstat`), or `EBADF`.
pub(crate) fn is_socket(fd: RawFd) -> io::Result<bool> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: Y1 for `fd`; Y2: `st` is a local `struct stat`.
    syscall!(fstat(fd, st.as_mut_ptr()))?;
    // SAFETY: `fstat` returned 0, so it initialised `st`.
    let st = unsafe { st.assume_init() };
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// Closes a descriptor that no one else knows: one a disposed accept
/// produced after its event was gone. `EINTR` counts as closed (Linux
/// releases the descriptor before it reports the interruption).
pub(crate) fn close_orphan(fd: RawFd) {
    // SAFETY: Y1; the descriptor came from a completed accept whose event
    // was disposed, so the host never saw it and nothing else uses it.
    let _ = syscall!(close(fd));
}

/// Retries `f` while it fails with `EINTR`.
fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// `pidfd_open(pid, 0)` (Linux 5.3): a close-on-exec descriptor that is
/// readable once the process `pid` has exited.
pub(crate) fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: no pointer arguments; `syscall` returns a descriptor or -1.
    let fd = syscall!(syscall(libc::SYS_pidfd_open, pid, 0))?;
    // SAFETY: Y3: `fd` was just returned by `pidfd_open` and is ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `waitid(P_PIDFD, pidfd, WEXITED | WNOHANG)` (Linux 5.4): `Ok(None)` while
/// the child runs, its exit once it ended; with `reap` false the child is
/// left a zombie (`WNOWAIT`), so this only checks that `pidfd` is a child of
/// this process (`ECHILD` otherwise). A child that exited gives its code and
/// signal 0; one a signal killed gives code -1 and the signal.
pub(crate) fn wait_exit(pidfd: &OwnedFd, reap: bool) -> io::Result<Option<AaExitStatus>> {
    let mut options = libc::WEXITED | libc::WNOHANG;
    if !reap {
        options |= libc::WNOWAIT;
    }
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    retry(|| {
        // SAFETY: Y1; Y2: `info` is a local `siginfo_t` the kernel fills.
        syscall!(waitid(
            libc::P_PIDFD,
            pidfd.as_raw_fd() as libc::id_t,
            info.as_mut_ptr(),
            options,
        ))
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

/// A new inotify instance: non-blocking, close-on-exec.
pub(crate) fn inotify_init() -> io::Result<OwnedFd> {
    // SAFETY: no pointer arguments.
    let fd = syscall!(inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC))?;
    // SAFETY: Y3: `fd` was just returned by `inotify_init1` and is ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `inotify_add_watch`: the watch descriptor of `path` (the same one for
/// every watch of the same inode).
pub(crate) fn inotify_add(fd: &OwnedFd, path: &CStr, mask: u32) -> io::Result<i32> {
    // SAFETY: Y1 (owned descriptor); Y2: `path` is NUL-terminated and
    // borrowed for the call.
    syscall!(inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), mask))
}

/// `inotify_rm_watch`. `EINVAL` (the kernel already dropped the watch: its
/// inode was deleted) is not an error.
pub(crate) fn inotify_rm(fd: &OwnedFd, wd: i32) {
    // SAFETY: Y1 (owned descriptor); no pointer arguments.
    let _ = syscall!(inotify_rm_watch(fd.as_raw_fd(), wd));
}
