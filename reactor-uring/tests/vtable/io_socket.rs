//! Socket requests as ring operations: read, write, accept, connect, close.

use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use async_abi::*;

use crate::support::*;

const LIMIT: Duration = Duration::from_secs(5);

fn ios(log: &[Rec]) -> usize {
    log.iter().filter(|r| matches!(r, Rec::Io(..))).count()
}

#[test]
fn socketpair_write_then_read_moves_the_bytes() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let data = *b"hello, ring";
    let mut buf = [0u8; 64];
    let mut w = write_op(a, &data);
    let mut r = read_op(b, &mut buf);
    let wev = lp.submit("write", &mut w);
    let rev = lp.submit("read", &mut r);
    assert_eq!(lp.alive(), 2);
    lp.run_until(LIMIT, |log| ios(log) == 2);
    let mut log = lp.take_log();
    log.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(log, [Rec::Io("read", 11), Rec::Io("write", 11)]);
    assert_eq!(&buf[..11], b"hello, ring");
    assert_eq!(lp.alive(), 0);
    lp.dispose(wev);
    lp.dispose(rev);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn read_completes_with_zero_at_end_of_stream() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf = [0u8; 8];
    let mut r = read_op(b, &mut buf);
    let rev = lp.submit("read", &mut r);
    lp.run_once(0);
    close_fd(a);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("read", 0)]);
    lp.dispose(rev);
    lp.finish();
    close_fd(b);
}

#[test]
fn write_to_a_closed_peer_fails_with_epipe_not_sigpipe() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    close_fd(b);
    let data = [7u8; 16];
    let mut w = write_op(a, &data);
    let wev = lp.submit("write", &mut w);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("write", -i64::from(libc::EPIPE))]);
    lp.dispose(wev);
    lp.finish();
    close_fd(a);
}

#[test]
fn pipe_read_uses_read_not_recv() {
    let mut lp = crate::uring_loop!();
    let mut fds = [0; 2];
    assert_eq!(
        // SAFETY: `fds` is a local array of two ints.
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) },
        0
    );
    let mut buf = [0u8; 8];
    let mut r = read_op(fds[0], &mut buf);
    let rev = lp.submit("read", &mut r);
    lp.run_once(0);
    // SAFETY: a local 3-byte buffer.
    assert_eq!(unsafe { libc::write(fds[1], b"abc".as_ptr().cast(), 3) }, 3);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("read", 3)]);
    assert_eq!(&buf[..3], b"abc");
    lp.dispose(rev);
    lp.finish();
    close_fd(fds[0]);
    close_fd(fds[1]);
}

/// An `AaSockAddr` holding `127.0.0.1:port`.
fn loopback(port: u16) -> AaSockAddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    };
    let mut addr = AaSockAddr::EMPTY;
    addr.len = std::mem::size_of::<libc::sockaddr_in>() as u32;
    // SAFETY: `storage` is 128 bytes, aligned for any sockaddr; a
    // `sockaddr_in` is 16.
    unsafe { std::ptr::write(addr.storage.as_mut_ptr().cast(), sin) };
    addr
}

/// The port of a bound IPv4 socket.
fn local_port(fd: RawFd) -> u16 {
    let mut sin: libc::sockaddr_in = unsafe_zeroed();
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `sin` and `len` are locals of the sizes given.
    let r = unsafe { libc::getsockname(fd, (&mut sin as *mut libc::sockaddr_in).cast(), &mut len) };
    assert_eq!(r, 0);
    u16::from_be(sin.sin_port)
}

fn unsafe_zeroed() -> libc::sockaddr_in {
    // SAFETY: all-zero is a valid `sockaddr_in`.
    unsafe { std::mem::zeroed() }
}

fn tcp_socket() -> RawFd {
    // SAFETY: no pointer arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    assert!(fd >= 0);
    fd
}

#[test]
fn accept_and_connect_on_loopback_report_the_peer_and_echo() {
    let mut lp = crate::uring_loop!();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let client = tcp_socket();

    let mut peer = AaSockAddr::EMPTY;
    let mut acc = AaIoOp::new(AA_IO_ACCEPT, i64::from(listener.as_raw_fd()));
    acc.addr = &mut peer;
    let aev = lp.submit("accept", &mut acc);
    let mut target = loopback(port);
    let mut con = AaIoOp::new(AA_IO_CONNECT, i64::from(client));
    con.addr = &mut target;
    let cev = lp.submit("connect", &mut con);
    lp.run_until(LIMIT, |log| ios(log) == 2);
    let log = lp.take_log();
    assert!(log.contains(&Rec::Io("connect", 0)), "{log:?}");
    let accepted = log
        .iter()
        .find_map(|r| match r {
            Rec::Io("accept", fd) => Some(*fd),
            _ => None,
        })
        .unwrap();
    assert!(accepted >= 0, "accept failed: {accepted}");
    let accepted = accepted as RawFd;
    // The peer address, written by the kernel into the host's storage, and
    // its length, copied from the op's own memory.
    assert_eq!(peer.len as usize, std::mem::size_of::<libc::sockaddr_in>());
    // SAFETY: the storage holds a `sockaddr_in` (len checked).
    let sin: libc::sockaddr_in = unsafe { std::ptr::read(peer.storage.as_ptr().cast()) };
    assert_eq!(u16::from_be(sin.sin_port), local_port(client));
    // Non-blocking and close-on-exec, as the ABI promises.
    // SAFETY: fcntl on an open descriptor.
    unsafe {
        assert_ne!(libc::fcntl(accepted, libc::F_GETFL) & libc::O_NONBLOCK, 0);
        assert_ne!(libc::fcntl(accepted, libc::F_GETFD) & libc::FD_CLOEXEC, 0);
    }

    let ping = *b"ping";
    let mut buf = [0u8; 16];
    let mut w = write_op(client, &ping);
    let mut r = read_op(accepted, &mut buf);
    let wev = lp.submit("write", &mut w);
    let rev = lp.submit("read", &mut r);
    lp.run_until(LIMIT, |log| ios(log) == 2);
    assert_eq!(&buf[..4], b"ping");

    for ev in [aev, cev, wev, rev] {
        lp.dispose(ev);
    }
    lp.finish();
    close_fd(client);
    close_fd(accepted);
}

#[test]
fn connect_to_a_closed_port_fails_with_econnrefused() {
    let mut lp = crate::uring_loop!();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let client = tcp_socket();
    let mut target = loopback(port);
    let mut con = AaIoOp::new(AA_IO_CONNECT, i64::from(client));
    con.addr = &mut target;
    let cev = lp.submit("connect", &mut con);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(
        lp.take_log(),
        [Rec::Io("connect", -i64::from(libc::ECONNREFUSED))]
    );
    lp.dispose(cev);
    lp.finish();
    close_fd(client);
}

#[test]
fn full_submission_queue_keeps_every_request() {
    // 100 requests on 100 descriptors (so none waits in a lane), with room
    // for 4 in the submission queue: every one is submitted and completes.
    let mut lp = crate::uring_loop!(&[("uring.sq_entries", "4")]);
    let pairs: Vec<_> = (0..50).map(|_| socketpair()).collect();
    let data: Vec<[u8; 1]> = (0..50u8).map(|i| [i]).collect();
    let mut bufs = [[0u8; 4]; 50];
    let mut ops: Vec<AaIoOp> = Vec::new();
    for (i, ((a, b), buf)) in pairs.iter().zip(bufs.iter_mut()).enumerate() {
        ops.push(write_op(*a, &data[i]));
        ops.push(read_op(*b, buf));
    }
    let evs: Vec<_> = ops.iter_mut().map(|op| lp.submit("io", op)).collect();
    assert_eq!(lp.alive(), 100);
    lp.run_until(LIMIT, |log| ios(log) == 100);
    assert!(lp.take_log().iter().all(|r| *r == Rec::Io("io", 1)));
    for (i, buf) in bufs.iter().enumerate() {
        assert_eq!(buf[0], i as u8);
    }
    for ev in evs {
        lp.dispose(ev);
    }
    lp.finish();
    for (a, b) in pairs {
        close_fd(a);
        close_fd(b);
    }
}

#[test]
fn writes_on_one_socket_complete_in_submission_order() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let data: Vec<[u8; 1]> = (0..100u8).map(|i| [i]).collect();
    let mut ops: Vec<AaIoOp> = data.iter().map(|d| write_op(a, d)).collect();
    let tags: Vec<&'static str> = (0..100)
        .map(|i| &*Box::leak(format!("w{i}").into_boxed_str()))
        .collect();
    let evs: Vec<_> = ops
        .iter_mut()
        .zip(&tags)
        .map(|(op, tag)| lp.submit(tag, op))
        .collect();
    lp.run_until(LIMIT, |log| ios(log) == 100);
    let expected: Vec<Rec> = tags.iter().map(|t| Rec::Io(t, 1)).collect();
    assert_eq!(lp.take_log(), expected);
    let mut got = [0u8; 128];
    assert_eq!(recv_now(b, &mut got), Some(100));
    assert_eq!(got[..100], (0..100u8).collect::<Vec<_>>()[..]);
    for ev in evs {
        lp.dispose(ev);
    }
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn reads_on_one_socket_take_the_bytes_in_submission_order() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut first = [0u8; 1];
    let mut second = [0u8; 1];
    let mut r1 = read_op(b, &mut first);
    let mut r2 = read_op(b, &mut second);
    let e1 = lp.submit("first", &mut r1);
    let e2 = lp.submit("second", &mut r2);
    lp.run_once(0);
    send_now(a, b"1");
    lp.run_until(LIMIT, |log| !log.is_empty());
    send_now(a, b"2");
    lp.run_until(LIMIT, |log| ios(log) == 2);
    assert_eq!(lp.take_log(), [Rec::Io("first", 1), Rec::Io("second", 1)]);
    assert_eq!((first[0], second[0]), (b'1', b'2'));
    lp.dispose(e1);
    lp.dispose(e2);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn close_request_completes_pending_requests_first_then_closes() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf1 = [0u8; 8];
    let mut buf2 = [0u8; 8];
    let mut r1 = read_op(b, &mut buf1);
    let mut r2 = read_op(b, &mut buf2);
    let e1 = lp.submit("read1", &mut r1);
    let e2 = lp.submit("read2", &mut r2);
    lp.run_once(0);
    let mut c = AaIoOp::new(AA_IO_CLOSE, i64::from(b));
    let cev = lp.submit("close", &mut c);
    lp.run_until(LIMIT, |log| ios(log) == 3);
    let log = lp.take_log();
    let canceled = -i64::from(libc::ECANCELED);
    assert_eq!(&log[2], &Rec::Io("close", 0), "{log:?}");
    assert!(log[..2].contains(&Rec::Io("read1", canceled)), "{log:?}");
    assert!(log[..2].contains(&Rec::Io("read2", canceled)), "{log:?}");
    assert!(peer_sees_eof(a), "the close really closed the descriptor");
    // (A request on a closed number is refused at once: the bad-argument
    // test shows it on a number that no other test thread can reuse.)
    for ev in [e1, e2, cev] {
        lp.dispose(ev);
    }
    lp.finish();
    close_fd(a);
}

#[test]
fn io_submit_refuses_bad_arguments_without_an_event() {
    let mut lp = crate::uring_loop!();
    let mut op = AaIoOp::new(99, 0);
    assert_eq!(
        lp.try_submit("bad", &mut op, None).unwrap_err(),
        AA_E_UNSUPPORTED
    );
    assert_eq!(lp.last_error(), "io_submit: unknown opcode 99");
    let mut op = AaIoOp::new(AA_IO_READ, -1);
    assert_eq!(
        lp.try_submit("bad", &mut op, None).unwrap_err(),
        -libc::EBADF
    );
    let mut op = AaIoOp::new(AA_IO_CONNECT, 0);
    assert_eq!(
        lp.try_submit("bad", &mut op, None).unwrap_err(),
        AA_E_INVALID
    );
    assert!(lp.log.borrow().is_empty());
    lp.finish();
}

/// A pty pair: (master, slave), the master non-blocking.
fn pty() -> (RawFd, RawFd) {
    // SAFETY: plain calls on descriptors this test owns.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let slave = libc::ioctl(master, libc::TIOCGPTPEER, libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            slave >= 0,
            "TIOCGPTPEER: {}",
            std::io::Error::last_os_error()
        );
        (master, slave)
    }
}

#[test]
fn a_read_on_a_non_blocking_tty_waits_for_the_bytes() {
    // Where a tty cannot wait inside io_uring (older kernels), the kernel
    // answers EAGAIN and the reactor waits for readiness and tries again
    // (the `EAGAIN` path itself is forced in `ffi.rs`'s fallback tests);
    // either way: no result before the bytes, then one with them.
    let mut lp = crate::uring_loop!();
    let (master, slave) = pty();
    let mut buf = [0u8; 16];
    let mut r = read_op(master, &mut buf);
    let ev = lp.submit("read", &mut r);
    for _ in 0..3 {
        lp.run_once(0);
    }
    assert!(lp.log.borrow().is_empty(), "{:?}", lp.log.borrow());
    // SAFETY: a local 2-byte buffer.
    assert_eq!(unsafe { libc::write(slave, b"hi".as_ptr().cast(), 2) }, 2);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("read", 2)]);
    assert_eq!(&buf[..2], b"hi");
    lp.dispose(ev);
    lp.finish();
    close_fd(master);
    close_fd(slave);
}
