//! [`TcpListener`] and [`TcpStream`].

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::panic::Location;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::addr::{addrs_of, ToSocketAddrs};
use super::evented::Evented;
use super::{from_aa, submit, to_aa};
use crate::core::runtime::io::{accepted_fd, FdWait, IoReq};
use crate::core::wait::require_coroutine;

/// `EINPROGRESS` on Linux: a non-blocking connect under way.
const EINPROGRESS: i32 = 115;

fn new_socket(addr: &SocketAddr) -> io::Result<Socket> {
    // Non-blocking and close-on-exec from the start.
    Socket::new(
        Domain::for_address(*addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )
}

/// Tries `f` on each address of `addrs` until one works (std's order and
/// errors).
pub(crate) fn each_addr<A: ToSocketAddrs, T>(
    addrs: A,
    at: &'static Location<'static>,
    mut f: impl FnMut(&SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for addr in addrs_of(&addrs, at)? {
        match f(&addr) {
            Ok(v) => return Ok(v),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve to any addresses",
        )
    }))
}

/// A TCP socket server, listening for connections.
///
/// The coroutine analogue of [`std::net::TcpListener`]: [`accept`]
/// suspends the calling coroutine until a connection arrives. The socket is
/// closed when the value is dropped (through the reactor, so it first
/// forgets the descriptor).
///
/// [`accept`]: TcpListener::accept
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use async_std_api::net::{TcpListener, TcpStream};
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let client = spawn(move || {
///         let mut s = TcpStream::connect(addr).unwrap();
///         s.write_all(b"ping").unwrap();
///     });
///     let (mut conn, _) = listener.accept().unwrap();
///     let mut buf = [0u8; 4];
///     conn.read_exact(&mut buf).unwrap();
///     assert_eq!(&buf, b"ping");
///     client.join().unwrap();
/// })
/// .unwrap();
/// ```
pub struct TcpListener {
    io: Evented<std::net::TcpListener>,
}

impl TcpListener {
    /// Creates a listener bound to the first address of `addr` that works
    /// (`SO_REUSEADDR` set, backlog 1024).
    ///
    /// A host name (`"localhost:80"`) is resolved without blocking the
    /// loop (see [`ToSocketAddrs`]).
    ///
    /// # Errors
    ///
    /// The operating system's error for the last address tried (address in
    /// use, permission denied), or `InvalidInput` if nothing resolved.
    ///
    /// # Cancellation
    ///
    /// Does not suspend; not a cancellation point.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::net::TcpListener;
    ///
    /// let l = TcpListener::bind("127.0.0.1:0").unwrap();
    /// assert!(l.local_addr().unwrap().port() > 0);
    /// ```
    #[track_caller]
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        each_addr(addr, Location::caller(), |a| {
            let s = new_socket(a)?;
            s.set_reuse_address(true)?;
            s.bind(&SockAddr::from(*a))?;
            s.listen(1024)?;
            Ok(TcpListener {
                io: Evented::new(s.into()),
            })
        })
    }

    /// [`bind`](TcpListener::bind) with `SO_REUSEPORT` also set: several
    /// listeners (one per loop of a [`run_per_core`](crate::per_core::run_per_core),
    /// or per process) may bind the same address, each with its own accept
    /// queue, and the kernel spreads incoming connections over them. Every
    /// listener of the group must set it (std has no such option, so this
    /// sits beside `bind`, which is unchanged).
    ///
    /// # Errors
    ///
    /// As [`bind`](TcpListener::bind); `AddrInUse` if a listener without
    /// `SO_REUSEPORT` (or another user's) holds the address.
    ///
    /// # Cancellation
    ///
    /// Does not suspend; not a cancellation point.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::net::TcpListener;
    ///
    /// let a = TcpListener::bind_reuseport("127.0.0.1:0").unwrap();
    /// let addr = a.local_addr().unwrap();
    /// let b = TcpListener::bind_reuseport(addr).unwrap(); // the same port
    /// assert_eq!(b.local_addr().unwrap(), addr);
    /// assert!(TcpListener::bind(addr).is_err());
    /// ```
    #[track_caller]
    pub fn bind_reuseport(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        each_addr(addr, Location::caller(), |a| {
            let s = new_socket(a)?;
            s.set_reuse_address(true)?;
            s.set_reuse_port(true)?;
            s.bind(&SockAddr::from(*a))?;
            s.listen(1024)?;
            Ok(TcpListener {
                io: Evented::new(s.into()),
            })
        })
    }

    /// The local address it listens on.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// Waits for a connection and returns it with the peer's address.
    ///
    /// # Errors
    ///
    /// The operating system's error, or an error of kind `Other` carrying a
    /// [`Cancelled`](crate::Cancelled) ([`crate::io::cancelled`]) if the
    /// calling coroutine is cancelled while it waits.
    ///
    /// What an accept loop should do with them: stop on a cancellation (it
    /// is delivered once, so the next `accept` would wait for good); wait a
    /// little on `EMFILE`/`ENFILE` (out of descriptors) and
    /// `ENOBUFS`/`ENOMEM`, which no retry fixes until a connection closes
    /// (the `echo_server` example sleeps 50 ms); log and go on for the rest
    /// (`ECONNABORTED`: a peer that gave up while queued). A loop that
    /// retries at once is still fair to the other coroutines, since the
    /// runtime makes it give the loop back every few hundred operations
    /// (D-28), but it burns a core meanwhile.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// The pending accept is cancelled in the reactor and waited for; a
    /// connection accepted in the meantime is returned (not lost) and the
    /// cancellation is delivered at the next suspension point (P-08).
    ///
    /// # Examples
    ///
    /// See [`TcpListener`].
    #[track_caller]
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let at = Location::caller();
        let mut peer = async_abi::AaSockAddr::EMPTY;
        let fd = self.io.as_raw_fd();
        let r = submit(&self.io, IoReq::Accept(&mut peer), FdWait("accept", fd), at)?;
        let owned = accepted_fd(r).ok_or_else(|| io::Error::other("accept returned no socket"))?;
        let stream = TcpStream {
            io: Evented::new(std::net::TcpStream::from(owned)),
        };
        let addr = match from_aa(&peer) {
            Some(a) => a,
            None => stream.peer_addr()?,
        };
        Ok((stream, addr))
    }

    /// Takes over a listener made by std, putting it in non-blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener {
            io: Evented::new(listener),
        })
    }

    /// Gives the listener back to std, in blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn into_std(self) -> io::Result<std::net::TcpListener> {
        let s = self.io.into_inner();
        s.set_nonblocking(false)?;
        Ok(s)
    }

    /// A second handle to the same listening socket (a duplicated
    /// descriptor), for example for several accepting coroutines.
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn try_clone(&self) -> io::Result<TcpListener> {
        Ok(TcpListener {
            io: Evented::new(self.io.get().try_clone()?),
        })
    }

    /// Sets `IP_TTL` for accepted sockets.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.io.get().set_ttl(ttl)
    }

    /// Reads `IP_TTL`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn ttl(&self) -> io::Result<u32> {
        self.io.get().ttl()
    }

    /// Takes the pending socket error (`SO_ERROR`).
    ///
    /// # Errors
    ///
    /// The operating system's error reading it.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.get().take_error()
    }

    /// An endless iterator of [`accept`](TcpListener::accept) results
    /// (without the addresses), like [`std::net::TcpListener::incoming`].
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("fd", &self.io.as_raw_fd())
            .field("addr", &self.local_addr().ok())
            .finish()
    }
}

/// The iterator of [`TcpListener::incoming`]: it never returns `None`.
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    #[track_caller]
    fn next(&mut self) -> Option<io::Result<TcpStream>> {
        Some(self.listener.accept().map(|(s, _)| s))
    }
}

/// A TCP connection.
///
/// Like every handle of this crate it is `!Send`: it belongs to the thread
/// (and reactor) that made it.
///
/// The coroutine analogue of [`std::net::TcpStream`]: reads, writes and
/// `connect` suspend the calling coroutine instead of the thread. It
/// implements [`Read`] and [`Write`] (also for `&TcpStream`, so one
/// coroutine can read while another writes), so generic `std::io` code runs
/// unchanged. The connection is closed when the value is dropped.
///
/// A cancelled read or write returns an error of kind `Other` carrying the
/// [`Cancelled`](crate::Cancelled); the stream stays usable (its request
/// was cancelled and completed in the reactor, nothing is left in flight).
/// Data read before the cancellation took effect is returned, and the
/// cancellation comes at the next suspension point.
///
/// # Examples
///
/// See [`TcpListener`].
pub struct TcpStream {
    io: Evented<std::net::TcpStream>,
}

impl TcpStream {
    /// Connects to the first address of `addr` that accepts.
    ///
    /// # Errors
    ///
    /// The operating system's error for the last address tried (connection
    /// refused, ...), or `Other` carrying a [`Cancelled`](crate::Cancelled).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// The pending connect is cancelled in the reactor and waited for, then
    /// the socket is closed and the cancellation returned.
    ///
    /// # Examples
    ///
    /// See [`TcpListener`].
    #[track_caller]
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let at = Location::caller();
        // Checked here: inside `each_addr`'s closure a panic would name the
        // runtime's line, not the caller's.
        require_coroutine("TcpStream::connect");
        each_addr(addr, at, |a| {
            let s = Evented::new(std::net::TcpStream::from(new_socket(a)?));
            let target = to_aa(a);
            submit(&s, IoReq::Connect(&target), || format!("connect {a}"), at)?;
            Ok(TcpStream { io: s })
        })
    }

    /// The remote address.
    ///
    /// # Errors
    ///
    /// The operating system's error (`NotConnected`).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// Connects to `addr`, giving up with `TimedOut` after `timeout`.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero timeout (as std); `TimedOut`; the
    /// operating system's error (connection refused, ...); a cancellation
    /// as for [`connect`](TcpStream::connect).
    ///
    /// # Panics
    ///
    /// Outside a coroutine, when it has to wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use async_std_api::net::{TcpListener, TcpStream};
    /// use async_std_api::run;
    ///
    /// run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = l.local_addr().unwrap();
    ///     let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    ///     assert_eq!(s.peer_addr().unwrap(), addr);
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        let at = Location::caller();
        if timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot set a 0 duration timeout",
            ));
        }
        let socket = new_socket(addr)?;
        let started = socket.connect(&SockAddr::from(*addr));
        let io = Evented::new(std::net::TcpStream::from(socket));
        match started {
            Ok(()) => return Ok(TcpStream { io }),
            Err(e) if e.raw_os_error() == Some(EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        let what = format!("connect {addr}");
        io.wait_writable(Some(timeout), &what, at).map_err(|e| {
            if e.kind() == io::ErrorKind::TimedOut {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connect to {addr} timed out"),
                )
            } else {
                e
            }
        })?;
        match io.get().take_error()? {
            Some(e) => Err(e),
            None => Ok(TcpStream { io }),
        }
    }

    /// Takes over a stream made by std, putting it in non-blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        Ok(TcpStream {
            io: Evented::new(stream),
        })
    }

    /// Gives the stream back to std, in blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn into_std(self) -> io::Result<std::net::TcpStream> {
        let s = self.io.into_inner();
        s.set_nonblocking(false)?;
        Ok(s)
    }

    /// A second handle to the same connection (a duplicated descriptor),
    /// for example a reading and a writing coroutine each owning one.
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn try_clone(&self) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: Evented::new(self.io.get().try_clone()?),
        })
    }

    /// Receives into `buf` without taking the data out of the queue,
    /// waiting for data if there is none.
    ///
    /// # Errors
    ///
    /// As a read.
    ///
    /// # Panics
    ///
    /// Outside a coroutine, when it has to wait.
    #[track_caller]
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let at = Location::caller();
        self.io.read_op("peek", at, |s| s.peek(buf))
    }

    /// Sets the read timeout (`None`: wait for ever). A read that waits
    /// longer fails with `WouldBlock`, as std's does. `Some(ZERO)` is
    /// refused as std does.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero duration.
    pub fn set_read_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.io.set_read_timeout(dur)
    }

    /// Sets the write timeout; see [`set_read_timeout`](TcpStream::set_read_timeout).
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

    /// Sets `IP_TTL`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.io.get().set_ttl(ttl)
    }

    /// Reads `IP_TTL`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn ttl(&self) -> io::Result<u32> {
        self.io.get().ttl()
    }

    /// Takes the pending socket error (`SO_ERROR`).
    ///
    /// # Errors
    ///
    /// The operating system's error reading it.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.get().take_error()
    }

    /// Shuts down the read half, the write half, or both (does not
    /// suspend).
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get().shutdown(how)
    }

    /// Sets `TCP_NODELAY`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.io.get().set_nodelay(nodelay)
    }

    /// Reads `TCP_NODELAY`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.get().nodelay()
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("fd", &self.io.as_raw_fd())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

impl Read for TcpStream {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.stream_read(buf, true, Location::caller())
    }
}

impl Read for &TcpStream {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.stream_read(buf, true, Location::caller())
    }
}

impl Write for TcpStream {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.io.stream_write(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for &TcpStream {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.io.stream_write(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl AsFd for TcpStream {
    /// The socket, borrowed: for socket options this type does not wrap
    /// (`socket2::SockRef::from(&stream)`). Do not close it or make it
    /// blocking: the reactor owns its mode.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get().as_fd()
    }
}

impl AsFd for TcpListener {
    /// The socket, borrowed (see [`TcpStream`]'s `as_fd`).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get().as_fd()
    }
}

fd_traits!(TcpStream, std::net::TcpStream);
fd_traits!(TcpListener, std::net::TcpListener);
