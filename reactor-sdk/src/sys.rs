//! The system calls a readiness reactor runs requests with: each tried
//! once, non-blocking, after the descriptor was reported ready (or at
//! once), and `EAGAIN` ([`would_block`]) means "wait for the next edge".
//! `reactor-mio` and `reactor-example` run their requests on these.
//!
//! # Safety
//!
//! Each call goes through `syscall!`, which turns `-1` into
//! [`io::Error::last_os_error`], as mio does. The obligations are:
//!
//! - **S1 Descriptors.** A raw descriptor is only a number to the kernel: a
//!   wrong one gives `EBADF` (or acts on another descriptor of this process,
//!   which is the host's contract to prevent, AA-R6), never undefined
//!   behaviour in Rust.
//! - **S2 Host buffers.** [`HostBuf`] and [`HostAddr`] point into host
//!   memory that the host keeps alive and unmoved until the request's
//!   callback has run (AA-R5). They are built only through their `unsafe`
//!   constructors, which carry that promise, and a reactor uses them only
//!   before the request's callback runs.
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
pub struct HostBuf {
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
    #[inline]
    pub unsafe fn new(ptr: *mut u8, len: usize) -> HostBuf {
        HostBuf { ptr, len }
    }

    /// The buffer's length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (a request with no data).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer's address, for a kernel that runs the request later (a
    /// completion reactor's ring entry): S2 bounds its use as the buffer's.
    #[inline]
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The length one request hands the kernel: a ring entry moves at most
    /// `u32::MAX` bytes (a short read or write, as the ABI allows).
    #[inline]
    pub fn kernel_len(&self) -> u32 {
        u32::try_from(self.len).unwrap_or(u32::MAX)
    }
}

/// Where a request writes a peer address (`AA_IO_ACCEPT`), host memory
/// borrowed until the request's callback (AA-R5).
#[derive(Debug, Clone, Copy)]
pub struct HostAddr {
    ptr: *mut AaSockAddr,
}

impl HostAddr {
    /// Wraps the address slot of a request.
    ///
    /// # Safety
    ///
    /// `ptr` must be non-NULL, aligned and valid for writes of an
    /// [`AaSockAddr`] until the request's callback has run (AA-R5).
    #[inline]
    pub unsafe fn new(ptr: *mut AaSockAddr) -> HostAddr {
        HostAddr { ptr }
    }

    /// The slot's address, for a kernel that writes it later (an accept or
    /// a recvmsg in a ring): S2 bounds its use as the slot's.
    #[inline]
    pub fn as_mut_ptr(&self) -> *mut AaSockAddr {
        self.ptr
    }

    /// Writes `addr` into the host's slot.
    #[inline]
    pub fn write(&self, addr: &AaSockAddr) {
        // SAFETY: S2: the slot is valid for writes until the callback, which
        // has not run yet (the caller completes the request after this).
        unsafe { self.ptr.write(*addr) }
    }
}

/// The host memory a checked request lends until its callback (AA-R5):
/// its data buffer and, for an accept or a recvfrom, its peer-address
/// slot. Every Rust reactor wraps them the same way; this is the one place.
///
/// # Safety
///
/// `req` came from `async_abi::sdk::request::read` on an `io_submit` whose
/// host keeps the request's memory alive and unmoved until the callback
/// (the shim contract F5): `read` checked a non-empty buffer non-NULL (a
/// statx's aligned and large enough) and a peer slot NULL or aligned.
#[inline]
pub unsafe fn lent(req: &async_abi::sdk::request::Request) -> (HostBuf, Option<HostAddr>) {
    // SAFETY: the caller's F5 promise covers `buf` for `len` bytes.
    let buf = unsafe { HostBuf::new(req.buf, req.len) };
    // SAFETY: as above, for the non-NULL, aligned peer slot.
    let peer = (!req.peer.is_null()).then(|| unsafe { HostAddr::new(req.peer) });
    (buf, peer)
}

/// Retries `f` while it fails with `EINTR`.
#[inline]
pub fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Whether `fd` is a socket (`fstat`), or `EBADF`.
#[inline]
pub fn is_socket(fd: RawFd) -> io::Result<bool> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: S1 for `fd`; S3: `st` is a local `struct stat`.
    syscall!(fstat(fd, st.as_mut_ptr()))?;
    // SAFETY: `fstat` returned 0, so it initialised `st`.
    let st = unsafe { st.assume_init() };
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

/// Whether the socket `fd` is a TCP socket: a stream (`SO_TYPE`) of the
/// IPv4 or IPv6 family (`SO_DOMAIN`). A short read on it means the kernel
/// had no more bytes queued (TCP urgent data aside), which a Unix stream
/// does not promise: its reads stop at a message that carries descriptors
/// or credentials.
pub fn is_tcp_socket(fd: RawFd) -> bool {
    let mut domain: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: S1 for `fd`; S3: `domain` and `len` are locals of the sizes
    // getsockopt(SO_DOMAIN) writes.
    let res = syscall!(getsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_DOMAIN,
        (&mut domain as *mut libc::c_int).cast(),
        &mut len
    ));
    res.is_ok() && matches!(domain, libc::AF_INET | libc::AF_INET6) && is_stream_socket(fd)
}

/// Whether the socket `fd` is a stream socket (`SO_TYPE` is `SOCK_STREAM`).
#[inline]
pub fn is_stream_socket(fd: RawFd) -> bool {
    let mut kind: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: S1 for `fd`; S3: `kind` and `len` are locals of the sizes
    // getsockopt(SO_TYPE) writes.
    let res = syscall!(getsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TYPE,
        (&mut kind as *mut libc::c_int).cast(),
        &mut len
    ));
    res.is_ok() && kind == libc::SOCK_STREAM
}

/// Reads into `buf`: `recv` on a socket (`MSG_PEEK` if `peek`), `pread`
/// with an offset, `read` otherwise. Retries `EINTR`.
#[inline]
pub fn read(fd: RawFd, buf: HostBuf, offset: i64, socket: bool, peek: bool) -> io::Result<usize> {
    let flags = if peek { libc::MSG_PEEK } else { 0 };
    retry(|| {
        let n = if socket {
            // SAFETY: S1; S2: `buf` is writable for `len` bytes (AA-R5).
            syscall!(recv(fd, buf.ptr.cast(), buf.len, flags))?
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
#[inline]
pub fn write(fd: RawFd, buf: HostBuf, offset: i64, socket: bool) -> io::Result<usize> {
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

/// Receives one datagram into `buf` (`MSG_PEEK` if `peek`), writing the
/// sender's address and its length into `from` (length 0 for a sender
/// without an address). Retries `EINTR`.
#[inline]
pub fn recv_from(fd: RawFd, buf: HostBuf, from: &mut AaSockAddr, peek: bool) -> io::Result<usize> {
    let flags = if peek { libc::MSG_PEEK } else { 0 };
    retry(|| {
        let mut len = size_of::<[u64; 16]>() as libc::socklen_t;
        // SAFETY: S1; S2: `buf` is writable for `len` bytes (AA-R5); S3:
        // `from.storage` is a local 128-byte, 8-aligned buffer and `len` its
        // size.
        let n = syscall!(recvfrom(
            fd,
            buf.ptr.cast(),
            buf.len,
            flags,
            from.storage.as_mut_ptr().cast(),
            &mut len,
        ))?;
        from.len = len;
        Ok(n as usize)
    })
}

/// Sends `buf` as one datagram to `to` (the socket's peer when `None`),
/// never raising `SIGPIPE`. Retries `EINTR`.
#[inline]
pub fn send_to(fd: RawFd, buf: HostBuf, to: Option<&AaSockAddr>) -> io::Result<usize> {
    let (addr, len) = match to {
        Some(to) => (
            to.storage.as_ptr().cast::<libc::sockaddr>(),
            (to.len as usize).min(size_of::<[u64; 16]>()) as libc::socklen_t,
        ),
        None => (std::ptr::null(), 0),
    };
    retry(|| {
        // SAFETY: S1; S2: `buf` is readable for `len` bytes (AA-R5); S3: `to`
        // is the reactor's own copy of the address, `len` bytes of it valid
        // (or NULL with 0).
        let n = syscall!(sendto(
            fd,
            buf.ptr.cast(),
            buf.len,
            libc::MSG_NOSIGNAL,
            addr,
            len,
        ))?;
        Ok(n as usize)
    })
}

/// Accepts a connection, non-blocking and close-on-exec, writing the peer
/// address into `peer`. Retries `EINTR` and `ECONNABORTED` (a connection
/// that was reset while queued is not the listener's failure).
#[inline]
pub fn accept(fd: RawFd, peer: &mut AaSockAddr) -> io::Result<RawFd> {
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
#[inline]
pub fn connect(fd: RawFd, addr: &AaSockAddr) -> io::Result<()> {
    let len = (addr.len as usize).min(size_of::<[u64; 16]>()) as libc::socklen_t;
    // Not retried on EINTR: an interrupted connect keeps going in the
    // kernel, and the caller treats EINTR as in progress.
    // SAFETY: S1; S3: `addr` is the reactor's own copy of the address, `len`
    // bytes of it are valid.
    syscall!(connect(fd, addr.storage.as_ptr().cast(), len)).map(drop)
}

/// The pending error of a socket (`SO_ERROR`), 0 if none.
#[inline]
pub fn socket_error(fd: RawFd) -> io::Result<i32> {
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
#[inline]
pub fn is_connected(fd: RawFd) -> io::Result<bool> {
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
#[inline]
pub fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: S1: closing is asked for by `AA_IO_CLOSE` or `AA_EVF_OWNS_FD`
    // (AA-R6), after the registry forgot the descriptor.
    match syscall!(close(fd)) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        other => other.map(drop),
    }
}

/// The negative errno of an I/O error, for a request's result.
#[inline]
pub fn neg_errno(e: &io::Error) -> i64 {
    -i64::from(e.raw_os_error().unwrap_or(libc::EIO))
}

/// Whether the error means "not now, wait for readiness".
#[inline]
pub fn would_block(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAGAIN) | Some(libc::EINPROGRESS)
    )
}
