//! Networking: sockets whose blocking calls suspend the coroutine.
//!
//! [`TcpListener`], [`TcpStream`] and [`UdpSocket`] mirror `std::net`;
//! [`UnixStream`], [`UnixListener`] and [`UnixDatagram`] mirror
//! `std::os::unix::net`. The streams implement [`std::io::Read`] and
//! [`std::io::Write`] (also through `&`), so generic synchronous code
//! (`std::io::copy`, `BufReader::read_line`, `read_exact`) runs unchanged
//! inside coroutines. Host names resolve without blocking the loop
//! ([`ToSocketAddrs`], [`lookup_host`]).
//!
//! Stream requests go through the reactor's `io_submit` with
//! `AA_IO_TRY_INLINE`, so a ready socket completes without a switch (and
//! io_uring runs them natively); on a reactor that completes inline, a
//! direction whose last request did not wait makes the call in the host
//! (D-42). A pending request suspends the coroutine (the
//! wait reads `read fd 9`, `accept fd 5`, `connect 127.0.0.1:8080` in
//! deadlock reports). Datagram sockets, and streams with a read or write
//! timeout, try the system call and wait for the reactor's readiness
//! report on `EAGAIN` (`core::readiness`). Every handle is closed through
//! the reactor when dropped.

/// `FromRawFd`, `IntoRawFd`, `From<OwnedFd>` and `From<$t> for OwnedFd`
/// for a socket type whose `io` field is an `Evented<$std>`.
macro_rules! fd_traits {
    ($t:ident, $std:ty) => {
        // The one unsafe item: std's trait, forwarded to std's impl.
        #[allow(unsafe_code)]
        impl std::os::fd::FromRawFd for $t {
            /// Takes ownership of the descriptor (made non-blocking here).
            ///
            /// # Safety
            ///
            /// `fd` must be an open socket of the right kind that nothing
            /// else owns (std's contract).
            unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> $t {
                use std::os::fd::OwnedFd;
                // SAFETY: the caller's contract is std's.
                let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                $t::from(owned)
            }
        }

        impl std::os::fd::IntoRawFd for $t {
            /// Gives the descriptor up (still non-blocking), after the
            /// reactor stopped watching it.
            fn into_raw_fd(self) -> std::os::fd::RawFd {
                std::os::fd::IntoRawFd::into_raw_fd(self.io.into_inner())
            }
        }

        impl From<std::os::fd::OwnedFd> for $t {
            /// Takes ownership of the descriptor (made non-blocking here).
            fn from(fd: std::os::fd::OwnedFd) -> $t {
                let s = <$std>::from(fd);
                // FIONBIO cannot fail on an open socket.
                let _ = socket2::SockRef::from(&s).set_nonblocking(true);
                $t {
                    io: crate::net::evented::Evented::new(s),
                }
            }
        }

        impl From<$t> for std::os::fd::OwnedFd {
            /// Gives the descriptor up (still non-blocking).
            fn from(s: $t) -> std::os::fd::OwnedFd {
                s.io.into_inner().into()
            }
        }
    };
}

mod addr;
mod evented;
mod sock;
mod tcp;
mod udp;
mod unix;

pub use addr::{lookup_host, ToSocketAddrs};
pub use tcp::{Incoming, TcpListener, TcpStream};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixIncoming, UnixListener, UnixStream};

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::panic::Location;

use async_abi::AaSockAddr;

use crate::core::runtime::io::{self as rio, Describe, Interrupt, IoReq};
use crate::core::wait::{checkpoint, forced_unwind, with_me};

/// `AF_INET` / `AF_INET6` on Linux.
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

/// Runs one request for the current coroutine and applies the cancellation
/// policy (C-6 in `cancel`): data first, then the cancellation.
#[track_caller]
pub(crate) fn submit(
    fd: &impl AsRawFd,
    req: IoReq<'_>,
    what: impl Describe,
    at: &'static Location<'static>,
) -> io::Result<i64> {
    with_me("blocking I/O", |rt, me| {
        submit_as(rt, me, fd, req, what, at)
    })
}

fn submit_as(
    rt: &crate::core::runtime::Runtime,
    me: &std::rc::Rc<crate::core::state::CoroState>,
    fd: &impl AsRawFd,
    req: IoReq<'_>,
    what: impl Describe,
    at: &'static Location<'static>,
) -> io::Result<i64> {
    checkpoint(me).map_err(io::Error::from)?;
    settle(
        me,
        rio::perform(rt, me, fd.as_raw_fd(), req, what, at, false),
    )
}

/// A request's outcome under the cancellation policy (C-6 in `cancel`):
/// data first, then the cancellation.
fn settle(me: &crate::core::state::CoroState, out: rio::IoOutcome) -> io::Result<i64> {
    match out.interrupt {
        None if out.result < 0 => Err(match out.failure {
            Some(line) => io::Error::other(line.into_string()),
            None => os_error(out.result),
        }),
        None => Ok(out.result),
        // Already unwinding (a `Drop` doing I/O): an error, not a second
        // unwind.
        Some(Interrupt::Shutdown) if std::thread::panicking() => {
            Err(io::Error::from(me.cancellation().unwrap_or_else(|| {
                crate::core::error::Cancelled::of(
                    me.id(),
                    crate::core::error::CancelCause::Shutdown,
                    None,
                )
            })))
        }
        Some(Interrupt::Shutdown) => forced_unwind(),
        Some(Interrupt::Deadlock) => Err(me.deadlocked().into()),
        Some(Interrupt::Cancelled) => {
            if out.result > 0 {
                // P-08: keep the data; the cancellation waits for the next
                // suspension point.
                me.repend_cancel();
                Ok(out.result)
            } else {
                let c = me
                    .cancellation()
                    .expect("a delivered cancellation is recorded");
                Err(c.into())
            }
        }
    }
}

/// A failed request's result as the error std would give: `-errno` as the
/// OS error; an ABI status (at or below `AA_E_BASE`, never an errno) as an
/// error of the matching kind naming the status and the reactor, never as a
/// made-up errno.
pub(crate) fn os_error(result: i64) -> io::Error {
    let status = i32::try_from(result).unwrap_or(i32::MIN);
    if status > async_abi::AA_E_BASE {
        return io::Error::from_raw_os_error(-status);
    }
    let kind = match status {
        async_abi::AA_E_UNSUPPORTED => io::ErrorKind::Unsupported,
        async_abi::AA_E_INVALID => io::ErrorKind::InvalidInput,
        async_abi::AA_E_NOMEM => io::ErrorKind::OutOfMemory,
        async_abi::AA_E_TIMEOUT => io::ErrorKind::TimedOut,
        async_abi::AA_E_BUSY => io::ErrorKind::ResourceBusy,
        _ => io::ErrorKind::Other,
    };
    let reactor = crate::core::runtime::with_runtime(|rt| rt.reactor.label().to_owned())
        .unwrap_or_else(|| "?".to_owned());
    io::Error::new(
        kind,
        format!(
            "reactor \"{reactor}\" refused the request: {}",
            crate::core::runtime::status_text(status)
        ),
    )
}

/// Closes a descriptor through the reactor if a runtime runs, else directly.
pub(crate) fn close(fd: OwnedFd) {
    let mut fd = Some(fd);
    crate::core::runtime::with_runtime(|rt| {
        if let Some(fd) = fd.take() {
            rio::close(&rt.reactor, fd);
        }
    });
    drop(fd);
}

/// Encodes an address in the platform's `struct sockaddr_*` layout.
pub(crate) fn to_aa(addr: &SocketAddr) -> AaSockAddr {
    let mut b = [0u8; 128];
    let len = match addr {
        SocketAddr::V4(a) => {
            b[0..2].copy_from_slice(&AF_INET.to_ne_bytes());
            b[2..4].copy_from_slice(&a.port().to_be_bytes());
            b[4..8].copy_from_slice(&a.ip().octets());
            16
        }
        SocketAddr::V6(a) => {
            b[0..2].copy_from_slice(&AF_INET6.to_ne_bytes());
            b[2..4].copy_from_slice(&a.port().to_be_bytes());
            b[4..8].copy_from_slice(&a.flowinfo().to_be_bytes());
            b[8..24].copy_from_slice(&a.ip().octets());
            b[24..28].copy_from_slice(&a.scope_id().to_ne_bytes());
            28
        }
    };
    let mut out = AaSockAddr::EMPTY;
    out.len = len;
    for (i, chunk) in b.chunks_exact(8).enumerate() {
        out.storage[i] = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
    }
    out
}

/// Decodes an address written by the reactor.
pub(crate) fn from_aa(addr: &AaSockAddr) -> Option<SocketAddr> {
    let mut b = [0u8; 128];
    for (i, word) in addr.storage.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&word.to_ne_bytes());
    }
    let family = u16::from_ne_bytes([b[0], b[1]]);
    let port = u16::from_be_bytes([b[2], b[3]]);
    match family {
        AF_INET if addr.len >= 16 => {
            let ip = std::net::Ipv4Addr::new(b[4], b[5], b[6], b[7]);
            Some(SocketAddr::from((ip, port)))
        }
        AF_INET6 if addr.len >= 28 => {
            let flow = u32::from_be_bytes(b[4..8].try_into().ok()?);
            let octets: [u8; 16] = b[8..24].try_into().ok()?;
            let scope = u32::from_ne_bytes(b[24..28].try_into().ok()?);
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                octets.into(),
                port,
                flow,
                scope,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_statuses_are_named_not_passed_off_as_errnos() {
        let e = os_error(i64::from(async_abi::AA_E_UNSUPPORTED));
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert_eq!(e.raw_os_error(), None);
        assert!(e.to_string().contains("AA_E_UNSUPPORTED"), "{e}");
        let e = os_error(-111);
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn socket_addresses_round_trip() {
        for a in ["127.0.0.1:8080", "[::1]:443"] {
            let addr: SocketAddr = a.parse().unwrap();
            assert_eq!(from_aa(&to_aa(&addr)), Some(addr));
        }
    }
}
