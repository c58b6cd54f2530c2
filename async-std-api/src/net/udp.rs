//! [`UdpSocket`].

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::panic::Location;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::addr::{addrs_of, ToSocketAddrs};
use super::evented::Evented;
use super::tcp::each_addr;
use super::{from_aa, submit, to_aa};
use crate::core::runtime::io::IoReq;

/// A UDP socket: the coroutine analogue of [`std::net::UdpSocket`], with
/// its methods and signatures. Receiving waits (suspends the coroutine)
/// until a datagram arrives; sending waits only while the socket's buffer
/// is full.
///
/// The socket is watched for readiness by the reactor and each operation
/// is a non-blocking system call, retried when the reactor reports the
/// socket ready. Reads and writes honour
/// [`set_read_timeout`](UdpSocket::set_read_timeout) and
/// [`set_write_timeout`](UdpSocket::set_write_timeout) as std does (a
/// timed-out call fails with [`WouldBlock`](io::ErrorKind::WouldBlock)).
/// Like every handle of this crate it belongs to the thread that made it
/// (`!Send`); it is closed through the reactor when dropped.
///
/// # Cancellation
///
/// Every receive and send is a cancellation point. A cancelled receive
/// takes no datagram (the next one stays queued in the kernel); one that
/// completed is returned, and the cancellation comes at the next
/// suspension point.
///
/// # Examples
///
/// ```
/// use async_std_api::net::UdpSocket;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let server = UdpSocket::bind("127.0.0.1:0").unwrap();
///     let addr = server.local_addr().unwrap();
///     let echo = spawn(move || {
///         let mut buf = [0u8; 1500];
///         let (n, peer) = server.recv_from(&mut buf).unwrap();
///         server.send_to(&buf[..n], peer).unwrap();
///     });
///     let client = UdpSocket::bind("127.0.0.1:0").unwrap();
///     client.connect(addr).unwrap();
///     client.send(b"ping").unwrap();
///     let mut buf = [0u8; 4];
///     assert_eq!(client.recv(&mut buf).unwrap(), 4);
///     assert_eq!(&buf, b"ping");
///     echo.join().unwrap();
/// })
/// .unwrap();
/// ```
pub struct UdpSocket {
    io: Evented<std::net::UdpSocket>,
}

fn new_udp(addr: &SocketAddr, reuse_port: bool) -> io::Result<std::net::UdpSocket> {
    let s = Socket::new(
        Domain::for_address(*addr),
        Type::DGRAM.nonblocking().cloexec(),
        Some(Protocol::UDP),
    )?;
    if reuse_port {
        s.set_reuse_port(true)?;
    }
    s.bind(&SockAddr::from(*addr))?;
    Ok(s.into())
}

impl UdpSocket {
    /// Creates a socket bound to the first address of `addr` that works.
    ///
    /// # Errors
    ///
    /// The operating system's error for the last address tried (address in
    /// use, permission denied), or `InvalidInput` if nothing resolved.
    ///
    /// # Cancellation
    ///
    /// Only a host name to resolve suspends (see [`ToSocketAddrs`]).
    #[track_caller]
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        each_addr(addr, Location::caller(), |a| {
            Ok(UdpSocket {
                io: Evented::new(new_udp(a, false)?),
            })
        })
    }

    /// [`bind`](UdpSocket::bind) with `SO_REUSEPORT` set: several sockets
    /// (one per loop of a [`run_per_core`](crate::per_core::run_per_core))
    /// may bind the same address, and the kernel spreads incoming
    /// datagrams over them by their source. Every socket of the group must
    /// set it.
    ///
    /// # Errors
    ///
    /// As [`bind`](UdpSocket::bind).
    ///
    /// # Cancellation
    ///
    /// Does not suspend; not a cancellation point.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::net::UdpSocket;
    ///
    /// let a = UdpSocket::bind_reuseport("127.0.0.1:0").unwrap();
    /// let addr = a.local_addr().unwrap();
    /// let b = UdpSocket::bind_reuseport(addr).unwrap();
    /// assert_eq!(b.local_addr().unwrap(), addr);
    /// ```
    #[track_caller]
    pub fn bind_reuseport(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        each_addr(addr, Location::caller(), |a| {
            Ok(UdpSocket {
                io: Evented::new(new_udp(a, true)?),
            })
        })
    }

    /// Takes over a socket made by std, putting it in non-blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket {
            io: Evented::new(socket),
        })
    }

    /// Gives the socket back to std, in blocking mode, after the reactor
    /// stopped watching it.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    pub fn into_std(self) -> io::Result<std::net::UdpSocket> {
        let s = self.io.into_inner();
        s.set_nonblocking(false)?;
        Ok(s)
    }

    /// Receives one datagram, waiting for it; returns its length and
    /// sender. A datagram longer than `buf` is truncated (the rest is
    /// lost), as with std.
    ///
    /// # Errors
    ///
    /// The operating system's error; `WouldBlock` after the read timeout;
    /// an error of kind `Other` carrying a [`Cancelled`](crate::Cancelled)
    /// if the coroutine is cancelled while it waits.
    ///
    /// # Panics
    ///
    /// Outside a coroutine, when it has to wait.
    #[track_caller]
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let at = Location::caller();
        if self.io.dgram_native(false) {
            return self.native_recv_from(buf, false, at);
        }
        self.io.read_op("recv_from", at, |s| s.recv_from(buf))
    }

    /// A `recvfrom` request through the reactor (natively on io_uring).
    fn native_recv_from(
        &self,
        buf: &mut [u8],
        peek: bool,
        at: &'static Location<'static>,
    ) -> io::Result<(usize, SocketAddr)> {
        let mut from = async_abi::AaSockAddr::EMPTY;
        let fd = self.io.as_raw_fd();
        let n = submit(
            &self.io,
            IoReq::RecvFrom {
                buf,
                from: &mut from,
                peek,
            },
            || format!("recv_from fd {fd}"),
            at,
        )?;
        let addr = from_aa(&from)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an internet address"))?;
        Ok((usize::try_from(n).unwrap_or(0), addr))
    }

    /// As [`recv_from`](UdpSocket::recv_from), leaving the datagram queued.
    ///
    /// # Errors
    ///
    /// As [`recv_from`](UdpSocket::recv_from).
    ///
    /// # Panics
    ///
    /// As [`recv_from`](UdpSocket::recv_from).
    #[track_caller]
    pub fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let at = Location::caller();
        if self.io.dgram_native(false) {
            return self.native_recv_from(buf, true, at);
        }
        self.io.read_op("peek_from", at, |s| s.peek_from(buf))
    }

    /// Sends `buf` to `addr` (the first address it resolves to); returns
    /// the bytes sent.
    ///
    /// # Errors
    ///
    /// The operating system's error; `InvalidInput` if `addr` resolves to
    /// nothing; `WouldBlock` after the write timeout; a cancellation as for
    /// [`recv_from`](UdpSocket::recv_from).
    ///
    /// # Panics
    ///
    /// As [`recv_from`](UdpSocket::recv_from).
    #[track_caller]
    pub fn send_to(&self, buf: &[u8], addr: impl ToSocketAddrs) -> io::Result<usize> {
        let at = Location::caller();
        let target = addrs_of(&addr, at)?.into_iter().next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no addresses to send data to")
        })?;
        if self.io.dgram_native(true) {
            let to = to_aa(&target);
            let fd = self.io.as_raw_fd();
            let n = submit(
                &self.io,
                IoReq::SendTo { buf, to: &to },
                || format!("send_to fd {fd}"),
                at,
            )?;
            return Ok(usize::try_from(n).unwrap_or(0));
        }
        self.io.write_op("send_to", at, |s| s.send_to(buf, target))
    }

    /// Connects the socket to `addr`: [`send`](UdpSocket::send) goes
    /// there and only its datagrams are received. Does not wait, except to
    /// resolve a host name.
    ///
    /// # Errors
    ///
    /// The operating system's error for the last address tried.
    #[track_caller]
    pub fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        each_addr(addr, Location::caller(), |a| self.io.get().connect(a))
    }

    /// Sends `buf` to the connected peer.
    ///
    /// # Errors
    ///
    /// As [`send_to`](UdpSocket::send_to); `NotConnected` (or the OS's
    /// `EDESTADDRREQ`) if not connected.
    ///
    /// # Panics
    ///
    /// As [`recv_from`](UdpSocket::recv_from).
    #[track_caller]
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io
            .write_op("send", Location::caller(), |s| s.send(buf))
    }

    /// Receives one datagram from the connected peer.
    ///
    /// # Errors
    ///
    /// As [`recv_from`](UdpSocket::recv_from); `ConnectionRefused` when an
    /// earlier datagram was refused by the peer (ICMP port unreachable).
    ///
    /// # Panics
    ///
    /// As [`recv_from`](UdpSocket::recv_from).
    #[track_caller]
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let at = Location::caller();
        if self.io.dgram_native(false) {
            return self.io.request_read(buf, at);
        }
        self.io.read_op("recv", at, |s| s.recv(buf))
    }

    /// As [`recv`](UdpSocket::recv), leaving the datagram queued.
    ///
    /// # Errors
    ///
    /// As [`recv`](UdpSocket::recv).
    ///
    /// # Panics
    ///
    /// As [`recv_from`](UdpSocket::recv_from).
    #[track_caller]
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let at = Location::caller();
        if self.io.dgram_native(false) {
            return self.native_recv_from(buf, true, at).map(|(n, _)| n);
        }
        self.io.read_op("peek", at, |s| s.peek(buf))
    }

    /// The connected peer's address.
    ///
    /// # Errors
    ///
    /// `NotConnected` if not connected.
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

    /// A second handle to the same socket (a duplicated descriptor with its
    /// own readiness watch), for example one coroutine receiving while
    /// another sends.
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn try_clone(&self) -> io::Result<UdpSocket> {
        Ok(UdpSocket {
            io: Evented::new(self.io.get().try_clone()?),
        })
    }

    /// Sets the read timeout (`None`: wait for ever); `Some(ZERO)` is
    /// refused as std does.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero duration.
    pub fn set_read_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.io.set_read_timeout(dur)
    }

    /// Sets the write timeout; see [`set_read_timeout`](UdpSocket::set_read_timeout).
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

    /// Sets `SO_BROADCAST`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.io.get().set_broadcast(on)
    }

    /// Reads `SO_BROADCAST`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn broadcast(&self) -> io::Result<bool> {
        self.io.get().broadcast()
    }

    /// Sets `IP_MULTICAST_LOOP`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn set_multicast_loop_v4(&self, on: bool) -> io::Result<()> {
        self.io.get().set_multicast_loop_v4(on)
    }

    /// Reads `IP_MULTICAST_LOOP`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn multicast_loop_v4(&self) -> io::Result<bool> {
        self.io.get().multicast_loop_v4()
    }

    /// Sets `IP_MULTICAST_TTL`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn set_multicast_ttl_v4(&self, ttl: u32) -> io::Result<()> {
        self.io.get().set_multicast_ttl_v4(ttl)
    }

    /// Reads `IP_MULTICAST_TTL`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn multicast_ttl_v4(&self) -> io::Result<u32> {
        self.io.get().multicast_ttl_v4()
    }

    /// Sets `IPV6_MULTICAST_LOOP`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn set_multicast_loop_v6(&self, on: bool) -> io::Result<()> {
        self.io.get().set_multicast_loop_v6(on)
    }

    /// Reads `IPV6_MULTICAST_LOOP`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn multicast_loop_v6(&self) -> io::Result<bool> {
        self.io.get().multicast_loop_v6()
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

    /// Joins an IPv4 multicast group on the interface with address
    /// `interface` (`UNSPECIFIED`: the system's choice).
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn join_multicast_v4(&self, multiaddr: &Ipv4Addr, interface: &Ipv4Addr) -> io::Result<()> {
        self.io.get().join_multicast_v4(multiaddr, interface)
    }

    /// Joins an IPv6 multicast group on interface index `interface`.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn join_multicast_v6(&self, multiaddr: &Ipv6Addr, interface: u32) -> io::Result<()> {
        self.io.get().join_multicast_v6(multiaddr, interface)
    }

    /// Leaves an IPv4 multicast group.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn leave_multicast_v4(&self, multiaddr: &Ipv4Addr, interface: &Ipv4Addr) -> io::Result<()> {
        self.io.get().leave_multicast_v4(multiaddr, interface)
    }

    /// Leaves an IPv6 multicast group.
    ///
    /// # Errors
    ///
    /// The operating system's error.
    pub fn leave_multicast_v6(&self, multiaddr: &Ipv6Addr, interface: u32) -> io::Result<()> {
        self.io.get().leave_multicast_v6(multiaddr, interface)
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

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("fd", &self.io.as_raw_fd())
            .field("addr", &self.local_addr().ok())
            .finish()
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl AsFd for UdpSocket {
    /// The socket, borrowed: for options this type does not wrap. Do not
    /// close it or make it blocking.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.as_fd()
    }
}

fd_traits!(UdpSocket, std::net::UdpSocket);
