//! [`TcpListener`] and [`TcpStream`].

use std::fmt;
use std::io::{self, Read, Write};
use std::marker::PhantomData;
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::panic::Location;
use std::rc::Rc;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::{close, from_aa, submit, to_aa};
use crate::core::runtime::io::{accepted_fd, IoReq};

/// A socket owned by the host; dropped through the reactor's close (so a
/// reused descriptor number is never mistaken for this one).
///
/// `!Send`: the reactor of the thread that used it may keep state about its
/// descriptor until it is closed through that same reactor.
struct Sock(Option<Socket>, PhantomData<Rc<()>>);

impl Sock {
    fn new(s: Socket) -> Sock {
        Sock(Some(s), PhantomData)
    }
}

impl Sock {
    fn get(&self) -> &Socket {
        self.0.as_ref().expect("present until drop")
    }
}

impl AsRawFd for Sock {
    fn as_raw_fd(&self) -> RawFd {
        self.get().as_raw_fd()
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            close(OwnedFd::from(s));
        }
    }
}

fn new_socket(addr: &SocketAddr) -> io::Result<Socket> {
    // Non-blocking and close-on-exec from the start.
    Socket::new(
        Domain::for_address(*addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )
}

fn sock_addr(a: io::Result<SockAddr>) -> io::Result<SocketAddr> {
    a?.as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an internet address"))
}

fn each_addr<A: ToSocketAddrs, T>(
    addrs: A,
    mut f: impl FnMut(&SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for addr in addrs.to_socket_addrs()? {
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
    sock: Sock,
}

impl TcpListener {
    /// Creates a listener bound to the first address of `addr` that works
    /// (`SO_REUSEADDR` set, backlog 1024).
    ///
    /// Name resolution (`"localhost:80"`) uses the system resolver and
    /// blocks the thread; pass an IP address to avoid it.
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
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        each_addr(addr, |a| {
            let s = new_socket(a)?;
            s.set_reuse_address(true)?;
            s.bind(&SockAddr::from(*a))?;
            s.listen(1024)?;
            Ok(TcpListener { sock: Sock::new(s) })
        })
    }

    /// The local address it listens on.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        sock_addr(self.sock.get().local_addr())
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
        let fd = self.sock.as_raw_fd();
        let r = submit(
            &self.sock,
            IoReq::Accept(&mut peer),
            || format!("accept fd {fd}"),
            at,
        )?;
        let owned = accepted_fd(r).ok_or_else(|| io::Error::other("accept returned no socket"))?;
        let stream = TcpStream {
            sock: Sock::new(Socket::from(owned)),
        };
        let addr = match from_aa(&peer) {
            Some(a) => a,
            None => stream.peer_addr()?,
        };
        Ok((stream, addr))
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
            .field("fd", &self.sock.as_raw_fd())
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
    sock: Sock,
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
        each_addr(addr, |a| {
            let s = Sock::new(new_socket(a)?);
            let target = to_aa(a);
            submit(&s, IoReq::Connect(&target), || format!("connect {a}"), at)?;
            Ok(TcpStream { sock: s })
        })
    }

    /// The remote address.
    ///
    /// # Errors
    ///
    /// The operating system's error (`NotConnected`).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        sock_addr(self.sock.get().peer_addr())
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        sock_addr(self.sock.get().local_addr())
    }

    /// Shuts down the read half, the write half, or both (does not
    /// suspend).
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.sock.get().shutdown(how)
    }

    /// Sets `TCP_NODELAY`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.sock.get().set_nodelay(nodelay)
    }

    /// Reads `TCP_NODELAY`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.sock.get().nodelay()
    }

    #[track_caller]
    fn read_at(&self, buf: &mut [u8], at: &'static Location<'static>) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let fd = self.sock.as_raw_fd();
        let n = submit(&self.sock, IoReq::Read(buf), || format!("read fd {fd}"), at)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    fn write_at(&self, buf: &[u8], at: &'static Location<'static>) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let fd = self.sock.as_raw_fd();
        let n = submit(
            &self.sock,
            IoReq::Write(buf),
            || format!("write fd {fd}"),
            at,
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("fd", &self.sock.as_raw_fd())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

impl Read for TcpStream {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_at(buf, Location::caller())
    }
}

impl Read for &TcpStream {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_at(buf, Location::caller())
    }
}

impl Write for TcpStream {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_at(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for &TcpStream {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_at(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl AsFd for TcpStream {
    /// The socket, borrowed: for socket options this type does not wrap
    /// (`socket2::SockRef::from(&stream)`). Do not close it or make it
    /// blocking: the reactor owns its mode.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.get().as_fd()
    }
}

impl AsFd for TcpListener {
    /// The socket, borrowed (see [`TcpStream`]'s `as_fd`).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.get().as_fd()
    }
}
