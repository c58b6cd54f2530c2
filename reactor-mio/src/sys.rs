//! The syscall layer: every system call the reactor makes, as safe
//! functions over typed arguments.
//!
//! # Safety
//!
//! This module and `ffi.rs` are the only places with `unsafe` code. Each
//! call goes through [`syscall!`], which turns `-1` into
//! [`io::Error::last_os_error`], as mio does. The obligations are:
//!
//! - **S1 Descriptors.** A raw descriptor is only a number to the kernel: a
//!   wrong one gives `EBADF` (or acts on another descriptor of this process,
//!   which is the host's contract to prevent, AA-R6), never undefined
//!   behaviour in Rust.
//! - **S2 Host buffers.** [`HostBuf`] and [`HostAddr`] point into host
//!   memory that the host keeps alive and unmoved until the request's
//!   callback has run (AA-R5). They are built only by `ffi.rs` through their
//!   `unsafe` constructors, which carry that promise, and a request uses them
//!   only before its callback runs (event.rs, invariant E3).
//! - **S3 Local memory.** Every other pointer handed to the kernel points to
//!   a local of the right size for the call.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::RawFd;

use async_abi::AaSockAddr;

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

/// A host buffer borrowed by one I/O request until its callback (AA-R5).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostBuf {
    ptr: *mut u8,
    len: usize,
}

impl HostBuf {
    /// Wraps the buffer of a request.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes until the
    /// request's callback has run or the request was dropped without one
    /// (AA-R5), or `len` must be 0.
    pub(crate) unsafe fn new(ptr: *mut u8, len: usize) -> HostBuf {
        HostBuf { ptr, len }
    }
}

/// Where a request writes a peer address (`AA_IO_ACCEPT`), host memory
/// borrowed until the request's callback (AA-R5).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostAddr {
    ptr: *mut AaSockAddr,
}

impl HostAddr {
    /// Wraps the address slot of a request.
    ///
    /// # Safety
    ///
    /// `ptr` must be non-NULL, aligned and valid for writes of an
    /// [`AaSockAddr`] until the request's callback has run (AA-R5).
    pub(crate) unsafe fn new(ptr: *mut AaSockAddr) -> HostAddr {
        HostAddr { ptr }
    }

    /// Writes `addr` into the host's slot.
    pub(crate) fn write(&self, addr: &AaSockAddr) {
        // SAFETY: S2: the slot is valid for writes until the callback, which
        // has not run yet (the caller completes the request after this).
        unsafe { self.ptr.write(*addr) }
    }
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

/// Whether `fd` is a socket (`fstat`), or `EBADF`.
pub(crate) fn is_socket(fd: RawFd) -> io::Result<bool> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: S1 for `fd`; S3: `st` is a local `struct stat`.
    syscall!(fstat(fd, st.as_mut_ptr()))?;
    // SAFETY: `fstat` returned 0, so it initialised `st`.
    let st = unsafe { st.assume_init() };
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// Reads into `buf`: `recv` on a socket, `pread` with an offset, `read`
/// otherwise. Retries `EINTR`.
pub(crate) fn read(fd: RawFd, buf: HostBuf, offset: i64, socket: bool) -> io::Result<usize> {
    retry(|| {
        let n = if socket {
            // SAFETY: S1; S2: `buf` is writable for `len` bytes (AA-R5).
            syscall!(recv(fd, buf.ptr.cast(), buf.len, 0))?
        } else if offset >= 0 {
            // SAFETY: S1; S2 as above.
            syscall!(pread(fd, buf.ptr.cast(), buf.len, offset))?
        } else {
            // SAFETY: S1; S2 as above.
            syscall!(read(fd, buf.ptr.cast(), buf.len))?
        };
        Ok(n as usize)
    })
}

/// Writes from `buf`: `send(MSG_NOSIGNAL)` on a socket, `pwrite` with an
/// offset, `write` otherwise. Retries `EINTR`.
pub(crate) fn write(fd: RawFd, buf: HostBuf, offset: i64, socket: bool) -> io::Result<usize> {
    retry(|| {
        let n = if socket {
            // SAFETY: S1; S2: `buf` is readable for `len` bytes (AA-R5).
            syscall!(send(fd, buf.ptr.cast(), buf.len, libc::MSG_NOSIGNAL))?
        } else if offset >= 0 {
            // SAFETY: S1; S2 as above.
            syscall!(pwrite(fd, buf.ptr.cast(), buf.len, offset))?
        } else {
            // SAFETY: S1; S2 as above.
            syscall!(write(fd, buf.ptr.cast(), buf.len))?
        };
        Ok(n as usize)
    })
}

/// Accepts a connection, non-blocking and close-on-exec, writing the peer
/// address into `peer`. Retries `EINTR` and `ECONNABORTED` (a connection
/// that was reset while queued is not the listener's failure).
pub(crate) fn accept(fd: RawFd, peer: &mut AaSockAddr) -> io::Result<RawFd> {
    retry(|| {
        let mut len = size_of::<[u64; 16]>() as libc::socklen_t;
        // SAFETY: S1; S3: `peer.storage` is the caller's 128-byte, 8-aligned
        // buffer and `len` its size.
        let res = syscall!(accept4(
            fd,
            peer.storage.as_mut_ptr().cast(),
            &mut len,
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        ));
        match res {
            Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => {
                Err(io::Error::from(io::ErrorKind::Interrupted))
            }
            Err(e) => Err(e),
            Ok(new_fd) => {
                peer.len = len;
                Ok(new_fd)
            }
        }
    })
}

/// Starts a connect to `addr`.
pub(crate) fn connect(fd: RawFd, addr: &AaSockAddr) -> io::Result<()> {
    let len = (addr.len as usize).min(size_of::<[u64; 16]>()) as libc::socklen_t;
    // Not retried on EINTR: an interrupted connect keeps going in the
    // kernel, and the caller treats EINTR as in progress.
    // SAFETY: S1; S3: `addr` is the reactor's own copy of the address, `len`
    // bytes of it are valid.
    syscall!(connect(fd, addr.storage.as_ptr().cast(), len)).map(drop)
}

/// The pending error of a socket (`SO_ERROR`), 0 if none.
pub(crate) fn socket_error(fd: RawFd) -> io::Result<i32> {
    let mut err: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: S1; S3: `err` and `len` are locals of the sizes given.
    syscall!(getsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_ERROR,
        (&mut err as *mut libc::c_int).cast(),
        &mut len,
    ))?;
    Ok(err)
}

/// Whether the socket is connected (`getpeername` succeeds); `ENOTCONN`
/// gives `false`.
pub(crate) fn is_connected(fd: RawFd) -> io::Result<bool> {
    let mut storage = [0u64; 16];
    let mut len = size_of::<[u64; 16]>() as libc::socklen_t;
    // SAFETY: S1; S3: `storage` is a local 128-byte buffer, `len` its size.
    match syscall!(getpeername(fd, storage.as_mut_ptr().cast(), &mut len)) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Closes `fd`. `EINTR` counts as closed (Linux releases the descriptor
/// before it reports the interruption), so it is never retried.
pub(crate) fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: S1: closing is asked for by `AA_IO_CLOSE` or `AA_EVF_OWNS_FD`
    // (AA-R6), after the registry forgot the descriptor.
    match syscall!(close(fd)) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        other => other.map(drop),
    }
}

/// The negative errno of an I/O error, for a request's result.
pub(crate) fn neg_errno(e: &io::Error) -> i64 {
    -i64::from(e.raw_os_error().unwrap_or(libc::EIO))
}

/// Whether the error means "not now, wait for readiness".
pub(crate) fn would_block(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAGAIN) | Some(libc::EINPROGRESS)
    )
}
