//! The syscall layer: every system call the reactor makes, as safe
//! functions over typed arguments. The request calls (read, write, accept,
//! connect, the datagram ones) and [`HostBuf`] / [`HostAddr`] are the kit's
//! (`reactor_sdk::sys`, obligations S1-S3 there), shared with
//! `reactor-example`; `ffi.rs` builds the host pointers, and a request uses
//! them only before its callback runs (event.rs, invariant E3).
//!
//! # Safety
//!
//! This module and `ffi.rs` are the only places with `unsafe` code. Each
//! call goes through `syscall!`, which turns `-1` into
//! [`io::Error::last_os_error`], as mio does. The obligations are the kit's
//! S1 (descriptors) and S3 (local memory), and:
//!
//! - **S4 Ownership.** A descriptor wrapped in an [`OwnedFd`] was just
//!   returned by the kernel and is owned by nobody else.
//!
//! The signal handler and its table (`async_abi::sdk::signal`),
//! `getaddrinfo` (`reactor_sdk::dns`) and the inotify calls
//! (`reactor_sdk::inotify`) are shared with the other reactor; each states
//! its own obligations.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(crate) use reactor_sdk::sys::{
    accept, close, connect, is_connected, is_socket, is_tcp_socket, neg_errno, read, recv_from,
    send_to, socket_error, would_block, write, HostAddr, HostBuf,
};

/// Runs a libc call and turns `-1` into the thread's last OS error.
macro_rules! syscall {
    ($fn:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: the caller of the macro states the obligation of this
        // particular call (S1-S3) in its own SAFETY comment.
        let res = unsafe { libc::$fn($($arg),*) };
        if res == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(res)
        }
    }};
}

use reactor_sdk::sys::retry;

/// A new eventfd: counter 0, non-blocking, close-on-exec.
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: no pointer arguments.
    let fd = syscall!(eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC))?;
    // SAFETY: S4: `fd` was just returned by `eventfd` and is ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads a non-blocking descriptor into `buf` (a reactor-owned buffer);
/// `Ok(None)` when it has nothing (`EAGAIN`). Retries `EINTR`.
pub(crate) fn read_own(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    let res = retry(|| {
        // SAFETY: S1 (the descriptor is owned); S3: `buf` is writable for
        // its length.
        syscall!(read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()))
    });
    match res {
        Ok(n) => Ok(Some(n as usize)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// A new timerfd on `CLOCK_MONOTONIC` (the clock `Instant` reads):
/// non-blocking, close-on-exec, disarmed.
pub(crate) fn timerfd() -> io::Result<OwnedFd> {
    // SAFETY: no pointer arguments.
    let fd = syscall!(timerfd_create(
        libc::CLOCK_MONOTONIC,
        libc::TFD_NONBLOCK | libc::TFD_CLOEXEC
    ))?;
    // SAFETY: S4: `fd` was just returned by `timerfd_create` and is ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Arms a timerfd to expire once, `ns` nanoseconds from now (at least 1 ns:
/// a zero value would disarm it).
pub(crate) fn timerfd_arm(fd: &OwnedFd, ns: u64) -> io::Result<()> {
    let ns = ns.max(1);
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        },
    };
    // SAFETY: S1 (an owned descriptor); S3: `spec` is a local itimerspec and
    // the old value is not requested (NULL).
    syscall!(timerfd_settime(
        fd.as_raw_fd(),
        0,
        &spec,
        std::ptr::null_mut()
    ))?;
    Ok(())
}

/// Empties an eventfd's counter (non-blocking: nothing to read is fine).
pub(crate) fn eventfd_drain(fd: &OwnedFd) {
    let mut counter = [0u8; 8];
    let _ = read_own(fd, &mut counter);
}
