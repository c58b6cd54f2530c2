//! Unix domain sockets: [`UnixStream`], [`UnixListener`], [`UnixDatagram`],
//! mirroring `std::os::unix::net` (with Linux's abstract names through
//! std's `SocketAddr`, `std::os::linux::net::SocketAddrExt`).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::SocketAddr;
use std::panic::Location;
use std::path::Path;
use std::time::Duration;

use async_abi::AaSockAddr;
use socket2::{Domain, Socket, Type};

use super::evented::Evented;
use super::submit;
use crate::core::runtime::io::{accepted_fd, FdWait, IoReq};

/// `AF_UNIX` on Linux.
const AF_UNIX: u16 = 1;
/// `sizeof(sun_path)` on Linux.
const SUN_PATH: usize = 108;

/// A Unix address in the `struct sockaddr_un` layout the reactor passes to
/// `connect`.
fn unix_aa(addr: &SocketAddr) -> io::Result<AaSockAddr> {
    let invalid = |m: &str| io::Error::new(io::ErrorKind::InvalidInput, m.to_owned());
    let mut b = [0u8; 128];
    b[0..2].copy_from_slice(&AF_UNIX.to_ne_bytes());
    let len = if let Some(path) = addr.as_pathname() {
        let p = path.as_os_str().as_bytes();
        if p.len() >= SUN_PATH {
            return Err(invalid("path must be shorter than SUN_LEN"));
        }
        b[2..2 + p.len()].copy_from_slice(p);
        2 + p.len() + 1 // with its NUL
    } else if let Some(name) = addr.as_abstract_name() {
        if name.len() + 1 > SUN_PATH {
            return Err(invalid("abstract name must be shorter than SUN_LEN"));
        }
        b[3..3 + name.len()].copy_from_slice(name); // after the leading NUL
        2 + 1 + name.len()
    } else {
        return Err(invalid("cannot connect to an unnamed address"));
    };
    let mut out = AaSockAddr::EMPTY;
    out.len = len as u32;
    for (i, chunk) in b.chunks_exact(8).enumerate() {
        out.storage[i] = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
    }
    Ok(out)
}

fn unix_socket(ty: Type) -> io::Result<Socket> {
    Socket::new(Domain::UNIX, ty.nonblocking().cloexec(), None)
}

/// A Unix stream socket: the coroutine analogue of
/// [`std::os::unix::net::UnixStream`]. Reads, writes and `connect` suspend
/// the coroutine; it implements [`Read`] and [`Write`] (also for
/// `&UnixStream`). Requests go through the reactor (natively on io_uring),
/// as for [`TcpStream`](super::TcpStream), whose cancellation rules it
/// shares.
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use async_std_api::net::UnixStream;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let (mut a, mut b) = UnixStream::pair().unwrap();
///     let echo = spawn(move || {
///         let mut buf = [0u8; 4];
///         b.read_exact(&mut buf).unwrap();
///         b.write_all(&buf).unwrap();
///     });
///     a.write_all(b"ping").unwrap();
///     let mut back = [0u8; 4];
///     a.read_exact(&mut back).unwrap();
///     assert_eq!(&back, b"ping");
///     echo.join().unwrap();
/// })
/// .unwrap();
/// ```
pub struct UnixStream {
    io: Evented<std::os::unix::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket at `path`.
    ///
    /// # Errors
    ///
    /// The operating system's error (`NotFound`, `ConnectionRefused`);
    /// `InvalidInput` for a path longer than `sun_path`; an error carrying
    /// a [`Cancelled`](crate::Cancelled) if cancelled while it waits.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        let at = Location::caller();
        let addr = SocketAddr::from_pathname(path)?;
        connect_at(&addr, at)
    }

    /// Connects to `addr` (a path, or an abstract name made with
    /// `SocketAddr::from_abstract_name`).
    ///
    /// # Errors
    ///
    /// As [`connect`](UnixStream::connect); `InvalidInput` for an unnamed
    /// address.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn connect_addr(addr: &SocketAddr) -> io::Result<UnixStream> {
        connect_at(addr, Location::caller())
    }

    /// A connected pair, as `socketpair(2)`.
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        Ok((UnixStream::from_std(a)?, UnixStream::from_std(b)?))
    }

    /// Takes over a stream made by std, putting it in non-blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn from_std(s: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        s.set_nonblocking(true)?;
        Ok(UnixStream {
            io: Evented::new(s),
        })
    }

    /// Gives the stream back to std, in blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixStream> {
        let s = self.io.into_inner();
        s.set_nonblocking(false)?;
        Ok(s)
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// The peer's address.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }

    /// Shuts down the read half, the write half, or both.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get().shutdown(how)
    }

    /// A second handle to the same connection (a duplicated descriptor).
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn try_clone(&self) -> io::Result<UnixStream> {
        Ok(UnixStream {
            io: Evented::new(self.io.get().try_clone()?),
        })
    }

    /// Sets the read timeout (a read waiting longer fails with
    /// `WouldBlock`, as std's); `Some(ZERO)` is refused as std does.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero duration.
    pub fn set_read_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.io.set_read_timeout(dur)
    }

    /// Sets the write timeout.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero duration.
    pub fn set_write_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.io.set_write_timeout(dur)
    }

    /// The read timeout.
    ///
    /// # Errors
    ///
    /// None; the `Result` is std's signature.
    pub fn read_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.io.read_timeout())
    }

    /// The write timeout.
    ///
    /// # Errors
    ///
    /// None; the `Result` is std's signature.
    pub fn write_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.io.write_timeout())
    }

    /// Takes the pending socket error (`SO_ERROR`).
    ///
    /// # Errors
    ///
    /// The operating system's error reading it.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.get().take_error()
    }
}

#[track_caller]
fn connect_at(addr: &SocketAddr, at: &'static Location<'static>) -> io::Result<UnixStream> {
    let target = unix_aa(addr)?;
    let s = Evented::new(std::os::unix::net::UnixStream::from(OwnedFd::from(
        unix_socket(Type::STREAM)?,
    )));
    let shown = addr
        .as_pathname()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "an abstract name".to_owned());
    submit(
        &s,
        IoReq::Connect(&target),
        || format!("connect {shown}"),
        at,
    )?;
    Ok(UnixStream { io: s })
}

impl Read for UnixStream {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.stream_read(buf, false, Location::caller())
    }
}

impl Read for &UnixStream {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.stream_read(buf, false, Location::caller())
    }
}

impl Write for UnixStream {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.io.stream_write(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for &UnixStream {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.io.stream_write(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixStream")
            .field("fd", &self.io.as_raw_fd())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

/// A Unix socket server: the coroutine analogue of
/// [`std::os::unix::net::UnixListener`]; [`accept`](UnixListener::accept)
/// suspends until a connection arrives.
///
/// Binding to a path creates the socket file; as with std, it is not
/// removed when the listener is dropped (remove it yourself, or use an
/// abstract name, which leaves nothing behind).
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::linux::net::SocketAddrExt;
/// use std::os::unix::net::SocketAddr;
/// use async_std_api::net::{UnixListener, UnixStream};
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let name = format!("async-std-api-doc-{}", std::process::id());
///     let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
///     let listener = UnixListener::bind_addr(&addr).unwrap();
///     let client = spawn(move || {
///         let mut s = UnixStream::connect_addr(&addr).unwrap();
///         s.write_all(b"hi").unwrap();
///     });
///     let (mut conn, _) = listener.accept().unwrap();
///     let mut buf = [0u8; 2];
///     conn.read_exact(&mut buf).unwrap();
///     assert_eq!(&buf, b"hi");
///     client.join().unwrap();
/// })
/// .unwrap();
/// ```
pub struct UnixListener {
    io: Evented<std::os::unix::net::UnixListener>,
}

impl UnixListener {
    /// Creates a listener at `path` (the file must not exist).
    ///
    /// # Errors
    ///
    /// The operating system's error (`AddrInUse` if the file exists).
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        UnixListener::from_std(std::os::unix::net::UnixListener::bind(path)?)
    }

    /// Creates a listener at `addr` (a path or an abstract name).
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixListener> {
        UnixListener::from_std(std::os::unix::net::UnixListener::bind_addr(addr)?)
    }

    /// Takes over a listener made by std, putting it in non-blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn from_std(l: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        l.set_nonblocking(true)?;
        Ok(UnixListener {
            io: Evented::new(l),
        })
    }

    /// Gives the listener back to std, in blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixListener> {
        let l = self.io.into_inner();
        l.set_nonblocking(false)?;
        Ok(l)
    }

    /// Waits for a connection; returns it with the peer's address (usually
    /// unnamed).
    ///
    /// # Errors
    ///
    /// As [`TcpListener::accept`](super::TcpListener::accept), whose advice
    /// for accept loops applies.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let at = Location::caller();
        let mut peer = AaSockAddr::EMPTY;
        let fd = self.io.as_raw_fd();
        let r = submit(&self.io, IoReq::Accept(&mut peer), FdWait("accept", fd), at)?;
        let owned = accepted_fd(r).ok_or_else(|| io::Error::other("accept returned no socket"))?;
        let stream = UnixStream {
            io: Evented::new(std::os::unix::net::UnixStream::from(owned)),
        };
        let addr = stream.peer_addr()?;
        Ok((stream, addr))
    }

    /// An endless iterator of [`accept`](UnixListener::accept) results
    /// (without the addresses).
    pub fn incoming(&self) -> UnixIncoming<'_> {
        UnixIncoming { listener: self }
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// A second handle to the same listening socket.
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn try_clone(&self) -> io::Result<UnixListener> {
        Ok(UnixListener {
            io: Evented::new(self.io.get().try_clone()?),
        })
    }

    /// Takes the pending socket error (`SO_ERROR`).
    ///
    /// # Errors
    ///
    /// The operating system's error reading it.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.get().take_error()
    }
}

impl fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixListener")
            .field("fd", &self.io.as_raw_fd())
            .field("addr", &self.local_addr().ok())
            .finish()
    }
}

/// The iterator of [`UnixListener::incoming`]: it never returns `None`.
#[derive(Debug)]
pub struct UnixIncoming<'a> {
    listener: &'a UnixListener,
}

impl Iterator for UnixIncoming<'_> {
    type Item = io::Result<UnixStream>;

    #[track_caller]
    fn next(&mut self) -> Option<io::Result<UnixStream>> {
        Some(self.listener.accept().map(|(s, _)| s))
    }
}

/// A Unix datagram socket: the coroutine analogue of
/// [`std::os::unix::net::UnixDatagram`]. Receiving suspends until a
/// datagram arrives; sending suspends while the peer's queue is full.
/// Operations are non-blocking system calls retried on the reactor's
/// readiness reports, as for [`UdpSocket`](super::UdpSocket).
///
/// # Examples
///
/// ```
/// use async_std_api::net::UnixDatagram;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let (a, b) = UnixDatagram::pair().unwrap();
///     let r = spawn(move || {
///         let mut buf = [0u8; 8];
///         let n = b.recv(&mut buf).unwrap();
///         buf[..n].to_vec()
///     });
///     a.send(b"one").unwrap();
///     assert_eq!(r.join().unwrap(), b"one");
/// })
/// .unwrap();
/// ```
pub struct UnixDatagram {
    io: Evented<std::os::unix::net::UnixDatagram>,
}

impl UnixDatagram {
    /// Creates a socket bound to `path`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixDatagram> {
        UnixDatagram::from_std(std::os::unix::net::UnixDatagram::bind(path)?)
    }

    /// Creates a socket bound to `addr` (a path or an abstract name).
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixDatagram> {
        UnixDatagram::from_std(std::os::unix::net::UnixDatagram::bind_addr(addr)?)
    }

    /// Creates a socket bound to no address.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn unbound() -> io::Result<UnixDatagram> {
        UnixDatagram::from_std(std::os::unix::net::UnixDatagram::unbound()?)
    }

    /// A connected pair, as `socketpair(2)`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = std::os::unix::net::UnixDatagram::pair()?;
        Ok((UnixDatagram::from_std(a)?, UnixDatagram::from_std(b)?))
    }

    /// Takes over a socket made by std, putting it in non-blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn from_std(s: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        s.set_nonblocking(true)?;
        Ok(UnixDatagram {
            io: Evented::new(s),
        })
    }

    /// Gives the socket back to std, in blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixDatagram> {
        let s = self.io.into_inner();
        s.set_nonblocking(false)?;
        Ok(s)
    }

    /// Connects to the socket at `path` (does not wait).
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        self.io.get().connect(path)
    }

    /// Connects to `addr` (does not wait).
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn connect_addr(&self, addr: &SocketAddr) -> io::Result<()> {
        self.io.get().connect_addr(addr)
    }

    /// Sends `buf` to the connected peer.
    ///
    /// # Errors
    ///
    /// The operating system's error; `WouldBlock` after the write timeout;
    /// an error carrying a [`Cancelled`](crate::Cancelled) if cancelled
    /// while it waits.
    ///
    /// # Panics
    ///
    /// Outside a coroutine, when it has to wait.
    #[track_caller]
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io
            .write_op("send", Location::caller(), |s| s.send(buf))
    }

    /// Sends `buf` to the socket at `path`.
    ///
    /// # Errors
    ///
    /// As [`send`](UnixDatagram::send).
    ///
    /// # Panics
    ///
    /// As [`send`](UnixDatagram::send).
    #[track_caller]
    pub fn send_to<P: AsRef<Path>>(&self, buf: &[u8], path: P) -> io::Result<usize> {
        let path = path.as_ref();
        self.io
            .write_op("send_to", Location::caller(), |s| s.send_to(buf, path))
    }

    /// Sends `buf` to `addr`.
    ///
    /// # Errors
    ///
    /// As [`send`](UnixDatagram::send).
    ///
    /// # Panics
    ///
    /// As [`send`](UnixDatagram::send).
    #[track_caller]
    pub fn send_to_addr(&self, buf: &[u8], addr: &SocketAddr) -> io::Result<usize> {
        self.io
            .write_op("send_to", Location::caller(), |s| s.send_to_addr(buf, addr))
    }

    /// Receives one datagram from the connected peer.
    ///
    /// # Errors
    ///
    /// As [`send`](UnixDatagram::send), with the read timeout.
    ///
    /// # Panics
    ///
    /// As [`send`](UnixDatagram::send).
    #[track_caller]
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.read_op("recv", Location::caller(), |s| s.recv(buf))
    }

    /// Receives one datagram and its sender's address.
    ///
    /// # Errors
    ///
    /// As [`recv`](UnixDatagram::recv).
    ///
    /// # Panics
    ///
    /// As [`send`](UnixDatagram::send).
    #[track_caller]
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io
            .read_op("recv_from", Location::caller(), |s| s.recv_from(buf))
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// The connected peer's address.
    ///
    /// # Errors
    ///
    /// `NotConnected` if not connected.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }

    /// Shuts down the read half, the write half, or both.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get().shutdown(how)
    }

    /// A second handle to the same socket.
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn try_clone(&self) -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            io: Evented::new(self.io.get().try_clone()?),
        })
    }

    /// Sets the read timeout; see [`UnixStream::set_read_timeout`].
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero duration.
    pub fn set_read_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.io.set_read_timeout(dur)
    }

    /// Sets the write timeout.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero duration.
    pub fn set_write_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.io.set_write_timeout(dur)
    }

    /// The read timeout.
    ///
    /// # Errors
    ///
    /// None; the `Result` is std's signature.
    pub fn read_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.io.read_timeout())
    }

    /// The write timeout.
    ///
    /// # Errors
    ///
    /// None; the `Result` is std's signature.
    pub fn write_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.io.write_timeout())
    }

    /// Takes the pending socket error (`SO_ERROR`).
    ///
    /// # Errors
    ///
    /// The operating system's error reading it.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.get().take_error()
    }
}

impl fmt::Debug for UnixDatagram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnixDatagram")
            .field("fd", &self.io.as_raw_fd())
            .field("addr", &self.local_addr().ok())
            .finish()
    }
}

macro_rules! fd_access {
    ($($t:ident),*) => {$(
        impl AsRawFd for $t {
            fn as_raw_fd(&self) -> RawFd {
                self.io.as_raw_fd()
            }
        }

        impl AsFd for $t {
            /// The socket, borrowed: for options this type does not wrap.
            /// Do not close it or make it blocking.
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.io.as_fd()
            }
        }
    )*};
}

fd_access!(UnixStream, UnixListener, UnixDatagram);
fd_traits!(UnixStream, std::os::unix::net::UnixStream);
fd_traits!(UnixListener, std::os::unix::net::UnixListener);
fd_traits!(UnixDatagram, std::os::unix::net::UnixDatagram);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_addresses_take_the_sockaddr_un_layout() {
        let a = unix_aa(&SocketAddr::from_pathname("/tmp/x.sock").unwrap()).unwrap();
        assert_eq!(a.len, 2 + 11 + 1);
        let a = unix_aa(&SocketAddr::from_abstract_name(b"name").unwrap()).unwrap();
        assert_eq!(a.len, 2 + 1 + 4);
        let long = "/".repeat(SUN_PATH);
        assert!(
            SocketAddr::from_pathname(&long).is_err()
                || unix_aa(&SocketAddr::from_pathname(&long).unwrap()).is_err()
        );
    }
}
