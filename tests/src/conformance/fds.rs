//! Descriptors for the cases: non-blocking socket pairs, pipes and loopback
//! TCP sockets, made with plain libc so the kit needs nothing but the ABI.

use std::mem::size_of;

use async_abi::AaSockAddr;

/// Panics with the OS error if `res` is -1.
#[track_caller]
fn check(what: &str, res: libc::c_int) -> libc::c_int {
    assert!(res != -1, "{what}: {}", std::io::Error::last_os_error());
    res
}

/// A connected `AF_UNIX` stream pair, non-blocking and close-on-exec.
#[track_caller]
pub fn socketpair() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a local array of two ints.
    let res = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    check("socketpair", res);
    (fds[0], fds[1])
}

/// A pipe `(read end, write end)`, non-blocking and close-on-exec.
#[track_caller]
pub fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a local array of two ints.
    let res = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    check("pipe2", res);
    (fds[0], fds[1])
}

/// A non-blocking IPv4 stream socket.
#[track_caller]
pub fn tcp_socket() -> i32 {
    // SAFETY: plain syscall with constant arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    check("socket", fd)
}

/// A non-blocking listener on `127.0.0.1:0` and its bound address.
#[track_caller]
pub fn tcp_listener() -> (i32, AaSockAddr) {
    let fd = tcp_socket();
    let addr = ipv4([127, 0, 0, 1], 0);
    // SAFETY: `addr.storage` holds a `sockaddr_in` of `addr.len` bytes.
    let res = unsafe { libc::bind(fd, addr.storage.as_ptr().cast(), addr.len) };
    check("bind", res);
    // SAFETY: plain syscall on our socket.
    check("listen", unsafe { libc::listen(fd, 16) });
    (fd, local_addr(fd))
}

/// An IPv4 address in an `AaSockAddr`.
pub fn ipv4(ip: [u8; 4], port: u16) -> AaSockAddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip),
        },
        sin_zero: [0; 8],
    };
    let mut addr = AaSockAddr::EMPTY;
    // SAFETY: `storage` is 128 bytes, 8-aligned: room for a `sockaddr_in`.
    unsafe {
        addr.storage
            .as_mut_ptr()
            .cast::<libc::sockaddr_in>()
            .write(sin)
    };
    addr.len = size_of::<libc::sockaddr_in>() as u32;
    addr
}

/// The family, IPv4 address and port of an `AF_INET` address.
pub fn parse_ipv4(addr: &AaSockAddr) -> (i32, [u8; 4], u16) {
    // SAFETY: `storage` is 128 bytes, 8-aligned; any bytes are a valid
    // `sockaddr_in` (plain integers).
    let sin = unsafe { addr.storage.as_ptr().cast::<libc::sockaddr_in>().read() };
    (
        i32::from(sin.sin_family),
        sin.sin_addr.s_addr.to_ne_bytes(),
        u16::from_be(sin.sin_port),
    )
}

/// The address in an `AaSockAddr`, checked: an `AF_INET` address of
/// exactly `sizeof(sockaddr_in)` bytes or an `AF_INET6` one of
/// `sizeof(sockaddr_in6)` bytes.
pub fn socket_addr(addr: &AaSockAddr) -> Result<std::net::SocketAddr, String> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    let len = addr.len as usize;
    // SAFETY: `storage` is 128 bytes, 8-aligned; any bytes are a valid
    // `sa_family_t` at its start.
    let family = i32::from(unsafe { addr.storage.as_ptr().cast::<libc::sa_family_t>().read() });
    match family {
        libc::AF_INET if len == size_of::<libc::sockaddr_in>() => {
            let (_, ip, port) = parse_ipv4(addr);
            Ok(SocketAddrV4::new(Ipv4Addr::from(ip), port).into())
        }
        libc::AF_INET6 if len == size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for a `sockaddr_in6` (plain integers).
            let sin6 = unsafe { addr.storage.as_ptr().cast::<libc::sockaddr_in6>().read() };
            Ok(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                u32::from_be(sin6.sin6_flowinfo),
                sin6.sin6_scope_id,
            )
            .into())
        }
        _ => Err(format!("family {family} with length {len}")),
    }
}

/// The local address of a socket.
#[track_caller]
pub fn local_addr(fd: i32) -> AaSockAddr {
    let mut addr = AaSockAddr::EMPTY;
    let mut len = size_of::<[u64; 16]>() as libc::socklen_t;
    // SAFETY: `storage` is a local 128-byte buffer and `len` its size.
    let res = unsafe { libc::getsockname(fd, addr.storage.as_mut_ptr().cast(), &mut len) };
    check("getsockname", res);
    addr.len = len;
    addr
}

/// Writes all of `data` to `fd` with one `write(2)`, as the case's own
/// setup (the peer's data): a short or failed write fails the case with
/// "could not set up the case", not as a rule failure.
#[track_caller]
pub fn put(fd: i32, data: &[u8]) {
    let n = raw_write(fd, data);
    if n != data.len() as isize {
        crate::setup_failed!(
            "write of {} bytes to fd {fd} by the kit gave {n}",
            data.len()
        );
    }
}

/// `write(2)` behind the reactor's back; returns bytes or `-errno`.
pub fn raw_write(fd: i32, data: &[u8]) -> isize {
    // SAFETY: `data` is a valid slice for the call.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    if n < 0 {
        -(std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as isize)
    } else {
        n
    }
}

/// `read(2)` behind the reactor's back; returns bytes or `-errno`.
pub fn raw_read(fd: i32, buf: &mut [u8]) -> isize {
    // SAFETY: `buf` is a valid mutable slice for the call.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        -(std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as isize)
    } else {
        n
    }
}

/// `close(2)` of a descriptor the reactor never saw.
pub fn raw_close(fd: i32) {
    // SAFETY: the case owns `fd` and never uses it again.
    unsafe { libc::close(fd) };
}

/// Fills a socket's send buffer until `EAGAIN`; returns the bytes written.
#[track_caller]
pub fn fill(fd: i32) -> usize {
    let chunk = [0x5au8; 65536];
    let mut total = 0;
    loop {
        let n = raw_write(fd, &chunk);
        if n == -(libc::EAGAIN as isize) {
            return total;
        }
        assert!(n > 0, "filling fd {fd}: {n}");
        total += n as usize;
    }
}

/// Reads everything currently readable (until `EAGAIN` or end of stream);
/// returns the bytes read.
#[track_caller]
pub fn drain(fd: i32) -> usize {
    let mut buf = [0u8; 65536];
    let mut total = 0;
    loop {
        let n = raw_read(fd, &mut buf);
        if n == -(libc::EAGAIN as isize) || n == 0 {
            return total;
        }
        assert!(n > 0, "draining fd {fd}: {n}");
        total += n as usize;
    }
}

/// A descriptor number no process can have open (above any `nr_open`).
pub const BAD_FD: i32 = 0x3fff_fff0;

/// The calling thread's kernel id.
pub fn gettid() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::gettid() }
}

/// Whether thread `tid` of this process is sleeping (`S` in
/// `/proc/self/task/<tid>/stat`): used to know that the loop thread is
/// blocked inside `run_once` before another thread wakes it.
pub fn is_sleeping(tid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "S")
}
