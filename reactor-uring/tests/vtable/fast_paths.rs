//! io_uring's fast paths, each behind its option: deferred task running
//! (`uring.defer_taskrun`), the multishot accept (`uring.multishot_accept`),
//! the multishot receive (`uring.multishot_recv`) and stream requests
//! tried inline (`uring.inline_streams`).

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};
use std::time::Duration;

use async_abi::*;

use crate::support::*;

const LIMIT: Duration = Duration::from_secs(5);

/// The multishot accept on.
const ACCEPT: &[(&str, &str)] = &[("uring.multishot_accept", "on")];
/// The multishot receive on.
const RECV: &[(&str, &str)] = &[("uring.multishot_recv", "on")];

fn ios(log: &[Rec]) -> usize {
    log.iter().filter(|r| matches!(r, Rec::Io(..))).count()
}

/// The port of a `sockaddr_in` the reactor wrote into `addr`.
fn port_of(addr: &AaSockAddr) -> u16 {
    assert_eq!(addr.len as usize, std::mem::size_of::<libc::sockaddr_in>());
    // SAFETY: the storage holds a `sockaddr_in` (length checked), and is
    // 8-byte aligned.
    let sin: libc::sockaddr_in = unsafe { std::ptr::read(addr.storage.as_ptr().cast()) };
    u16::from_be(sin.sin_port)
}

/// A listener whose descriptor the test hands to the reactor (which may
/// close it with `AA_IO_CLOSE`).
fn listener() -> (RawFd, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l.into_raw_fd(), port)
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s
}

/// The accepted descriptors in the log, in completion order.
fn accepted(log: &[Rec]) -> Vec<RawFd> {
    log.iter()
        .map(|r| match r {
            Rec::Io(_, fd) => {
                assert!(*fd >= 0, "accept failed: {log:?}");
                *fd as RawFd
            }
            other => panic!("unexpected callback {other:?}"),
        })
        .collect()
}

/// Runs a few short iterations so the kernel's reports reach the loop.
fn settle(lp: &Loop) {
    for _ in 0..20 {
        lp.run_once(1_000_000);
    }
}

/// A client whose server end was closed by the reactor reads end of stream
/// (a FIN from an accepted socket), not a reset (a connection dropped from
/// the listener's backlog): it was accepted, then closed, not leaked.
fn assert_closed_after_accept(client: &mut TcpStream) {
    let mut byte = [0u8; 1];
    match client.read(&mut byte) {
        Ok(0) => {}
        other => panic!("expected end of stream from an accepted-then-closed socket: {other:?}"),
    }
}

fn zero_timeout_run_once_reaps_a_completion_with(options: &[(&str, &str)]) {
    let mut lp = crate::uring_loop!(options);
    let (a, b) = socketpair();
    let mut buf = [0u8; 8];
    let mut r = read_op(b, &mut buf);
    let rev = lp.submit("read", &mut r);
    assert_eq!(lp.run_once(0), 0, "nothing to read yet");
    send_now(a, b"ping");
    // The data arrives while the loop is in user space: the kernel queues
    // the read's completion as deferred work, which only an enter asking for
    // events runs. A non-blocking iteration must still report it.
    assert_eq!(lp.run_once(0), 1, "run_once(0) reaps the completion");
    assert_eq!(lp.take_log(), [Rec::Io("read", 4)]);
    assert_eq!(&buf[..4], b"ping");
    lp.dispose(rev);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn zero_timeout_run_once_reaps_completions_with_deferred_task_running() {
    zero_timeout_run_once_reaps_a_completion_with(&[
        ("uring.single_issuer", "on"),
        ("uring.defer_taskrun", "on"),
    ]);
}

#[test]
fn zero_timeout_run_once_reaps_completions_without_the_setup_flags() {
    zero_timeout_run_once_reaps_a_completion_with(&[]);
    zero_timeout_run_once_reaps_a_completion_with(&[
        ("uring.single_issuer", "on"),
        ("uring.defer_taskrun", "off"),
    ]);
    // Deferred task running needs a single issuer: alone, it is not asked.
    zero_timeout_run_once_reaps_a_completion_with(&[("uring.defer_taskrun", "on")]);
}

fn accepts_ahead_are_taken_by_later_accepts_with(options: &[(&str, &str)]) {
    let mut lp = crate::uring_loop!(options);
    let (lfd, port) = listener();
    let mut peers = [AaSockAddr::EMPTY; 5];
    let mut ops: Vec<AaIoOp> = peers
        .iter_mut()
        .map(|peer| {
            let mut op = AaIoOp::new(AA_IO_ACCEPT, i64::from(lfd));
            op.addr = peer;
            op
        })
        .collect();
    let first = lp.submit("accept", &mut ops[0]);
    let clients: Vec<TcpStream> = (0..5).map(|_| connect(port)).collect();
    lp.run_until(LIMIT, |log| ios(log) == 1);
    settle(&lp);
    let mut fds = accepted(&lp.take_log());
    let mut evs = vec![first];
    // The other connections were accepted ahead: each later accept gets one
    // from the next run_once, never inside io_submit.
    for op in &mut ops[1..] {
        evs.push(lp.submit("accept", op));
    }
    assert_eq!(lp.take_log(), [], "nothing completes inside io_submit");
    lp.run_until(LIMIT, |log| ios(log) == 4);
    fds.extend(accepted(&lp.take_log()));
    let mut served: Vec<u16> = peers.iter().map(port_of).collect();
    let mut wanted: Vec<u16> = clients
        .iter()
        .map(|c| c.local_addr().unwrap().port())
        .collect();
    served.sort_unstable();
    wanted.sort_unstable();
    assert_eq!(served, wanted, "each accept names its own peer");
    for ev in evs {
        lp.dispose(ev);
    }
    let mut close = AaIoOp::new(AA_IO_CLOSE, i64::from(lfd));
    let cev = lp.submit("close", &mut close);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("close", 0)]);
    lp.dispose(cev);
    lp.finish();
    for fd in fds {
        close_fd(fd);
    }
}

#[test]
fn connections_accepted_ahead_are_taken_by_later_accepts() {
    accepts_ahead_are_taken_by_later_accepts_with(ACCEPT);
}

#[test]
fn one_shot_accepts_serve_many_connections_with_the_option_off() {
    accepts_ahead_are_taken_by_later_accepts_with(&[("uring.multishot_accept", "off")]);
}

#[test]
fn closing_a_listener_closes_the_connections_accepted_ahead() {
    let mut lp = crate::uring_loop!(ACCEPT);
    let (lfd, port) = listener();
    let mut peer = AaSockAddr::EMPTY;
    let mut acc = AaIoOp::new(AA_IO_ACCEPT, i64::from(lfd));
    acc.addr = &mut peer;
    let aev = lp.submit("accept", &mut acc);
    let mut clients: Vec<TcpStream> = (0..4).map(|_| connect(port)).collect();
    lp.run_until(LIMIT, |log| ios(log) == 1);
    settle(&lp);
    let served = accepted(&lp.take_log());
    // A parked accept on the listener ends with the close, like any request.
    let mut peer2 = AaSockAddr::EMPTY;
    let mut acc2 = AaIoOp::new(AA_IO_ACCEPT, i64::from(lfd));
    acc2.addr = &mut peer2;
    let a2 = lp.submit("accept2", &mut acc2);
    let mut close = AaIoOp::new(AA_IO_CLOSE, i64::from(lfd));
    let cev = lp.submit("close", &mut close);
    lp.run_until(LIMIT, |log| ios(log) == 2);
    let mut log = lp.take_log();
    log.sort_by_key(|r| format!("{r:?}"));
    // accept2 either took a queued connection (the next run_once matches it
    // before the close runs) or ended with the close.
    let took = match log.as_slice() {
        [Rec::Io("accept2", fd), Rec::Io("close", 0)] if *fd >= 0 => Some(*fd as RawFd),
        [Rec::Io("accept2", e), Rec::Io("close", 0)] if *e == -i64::from(libc::ECANCELED) => None,
        other => panic!("unexpected {other:?}"),
    };
    for ev in [aev, a2, cev] {
        lp.dispose(ev);
    }
    lp.finish();
    for fd in served.iter().copied().chain(took) {
        close_fd(fd);
    }
    // Every client's server end was accepted, then closed: by the test
    // (the ones the accepts took) or by the reactor (the ones waiting).
    for client in &mut clients {
        assert_closed_after_accept(client);
    }
}

#[test]
fn destroy_closes_the_connections_accepted_ahead() {
    let mut lp = crate::uring_loop!(ACCEPT);
    let (lfd, port) = listener();
    let mut acc = AaIoOp::new(AA_IO_ACCEPT, i64::from(lfd));
    let aev = lp.submit("accept", &mut acc);
    let mut clients: Vec<TcpStream> = (0..3).map(|_| connect(port)).collect();
    lp.run_until(LIMIT, |log| ios(log) == 1);
    settle(&lp);
    let served = accepted(&lp.take_log());
    lp.dispose(aev);
    lp.finish();
    for fd in served {
        close_fd(fd);
    }
    for client in &mut clients {
        assert_closed_after_accept(client);
    }
    close_fd(lfd);
}

#[test]
fn the_connections_accepted_ahead_are_bounded_and_none_is_lost() {
    let mut lp = crate::uring_loop!(ACCEPT);
    let (lfd, port) = listener();
    let n = 80; // above the bound of 64, below the listen backlog of 128
    let mut peers = vec![AaSockAddr::EMPTY; n];
    let mut ops: Vec<AaIoOp> = peers
        .iter_mut()
        .map(|peer| {
            let mut op = AaIoOp::new(AA_IO_ACCEPT, i64::from(lfd));
            op.addr = peer;
            op
        })
        .collect();
    let mut evs = vec![lp.submit("accept", &mut ops[0])];
    let clients: Vec<TcpStream> = (0..n).map(|_| connect(port)).collect();
    lp.run_until(LIMIT, |log| ios(log) == 1);
    settle(&lp);
    let mut fds = accepted(&lp.take_log());
    for op in &mut ops[1..] {
        evs.push(lp.submit("accept", op));
    }
    lp.run_until(LIMIT, |log| ios(log) == n - 1);
    fds.extend(accepted(&lp.take_log()));
    assert_eq!(fds.len(), n);
    let mut served: Vec<u16> = peers.iter().map(port_of).collect();
    let mut wanted: Vec<u16> = clients
        .iter()
        .map(|c| c.local_addr().unwrap().port())
        .collect();
    served.sort_unstable();
    wanted.sort_unstable();
    assert_eq!(served, wanted, "every connection is accepted exactly once");
    for ev in evs {
        lp.dispose(ev);
    }
    lp.finish();
    for fd in fds {
        close_fd(fd);
    }
    close_fd(lfd);
}

#[test]
fn accept_on_a_socket_that_is_not_listening_reports_the_error() {
    let mut lp = crate::uring_loop!(ACCEPT);
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut acc = AaIoOp::new(AA_IO_ACCEPT, i64::from(sock.as_raw_fd()));
    let aev = lp.submit("accept", &mut acc);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    let log = lp.take_log();
    assert!(
        matches!(log.as_slice(), [Rec::Io("accept", e)] if *e == -i64::from(libc::EOPNOTSUPP) || *e == -i64::from(libc::EINVAL)),
        "{log:?}"
    );
    lp.dispose(aev);
    lp.finish();
}

/// A read request with the `AA_IO_PEEK` flag.
fn peek_op(fd: RawFd, buf: &mut [u8]) -> AaIoOp {
    let mut op = read_op(fd, buf);
    op.op_flags = AA_IO_PEEK;
    op
}

#[test]
fn bytes_received_before_a_read_wait_for_it() {
    let mut lp = crate::uring_loop!(RECV);
    let (a, b) = socketpair();
    // The first read arms the socket's multishot receive.
    let mut first = [0u8; 4];
    let mut r1 = read_op(b, &mut first);
    let e1 = lp.submit("first", &mut r1);
    send_now(a, b"0123456789");
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("first", 4)]);
    assert_eq!(&first, b"0123");
    // The rest was received before anyone asked: a peek sees it without
    // taking it, then reads take it in order, each from the next run_once.
    let mut peeked = [0u8; 16];
    let mut p = peek_op(b, &mut peeked);
    let pe = lp.submit("peek", &mut p);
    let mut second = [0u8; 3];
    let mut r2 = read_op(b, &mut second);
    let e2 = lp.submit("second", &mut r2);
    let mut third = [0u8; 16];
    let mut r3 = read_op(b, &mut third);
    let e3 = lp.submit("third", &mut r3);
    assert_eq!(lp.take_log(), [], "nothing completes inside io_submit");
    lp.run_until(LIMIT, |log| ios(log) == 3);
    assert_eq!(
        lp.take_log(),
        [
            Rec::Io("peek", 6),
            Rec::Io("second", 3),
            Rec::Io("third", 3)
        ]
    );
    assert_eq!(&peeked[..6], b"456789");
    assert_eq!(&second, b"456");
    assert_eq!(&third[..3], b"789");
    for ev in [e1, pe, e2, e3] {
        lp.dispose(ev);
    }
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn a_cancelled_read_loses_no_bytes() {
    let mut lp = crate::uring_loop!(RECV);
    let (a, b) = socketpair();
    let mut buf = [0u8; 8];
    let mut r1 = read_op(b, &mut buf);
    let e1 = lp.submit("first", &mut r1);
    lp.run_once(0);
    assert_eq!(lp.cancel(e1, AA_E_CANCELLED), AA_OK);
    // The bytes arrive while the cancel is on its way: the multishot
    // receive keeps them for the next read.
    send_now(a, b"kept");
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("first", i64::from(AA_E_CANCELLED))]);
    assert_eq!(buf, [0u8; 8], "the cancelled read's buffer is untouched");
    settle(&lp);
    let mut next = [0u8; 8];
    let mut r2 = read_op(b, &mut next);
    let e2 = lp.submit("next", &mut r2);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("next", 4)]);
    assert_eq!(&next[..4], b"kept");
    lp.dispose(e1);
    lp.dispose(e2);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn end_of_stream_and_errors_come_after_the_buffered_bytes() {
    let mut lp = crate::uring_loop!(RECV);
    let (a, b) = socketpair();
    let mut first = [0u8; 2];
    let mut r1 = read_op(b, &mut first);
    let e1 = lp.submit("first", &mut r1);
    send_now(a, b"abcdef");
    close_fd(a);
    lp.run_until(LIMIT, |log| ios(log) == 1);
    settle(&lp);
    let mut rest = [0u8; 16];
    let mut r2 = read_op(b, &mut rest);
    let e2 = lp.submit("rest", &mut r2);
    let mut end = [0u8; 16];
    let mut r3 = read_op(b, &mut end);
    let e3 = lp.submit("end", &mut r3);
    let mut again = [0u8; 16];
    let mut r4 = read_op(b, &mut again);
    let e4 = lp.submit("again", &mut r4);
    lp.run_until(LIMIT, |log| ios(log) == 4);
    assert_eq!(
        lp.take_log(),
        [
            Rec::Io("first", 2),
            Rec::Io("rest", 4),
            Rec::Io("end", 0),
            Rec::Io("again", 0)
        ]
    );
    assert_eq!(&rest[..4], b"cdef");
    for ev in [e1, e2, e3, e4] {
        lp.dispose(ev);
    }
    lp.finish();
    close_fd(b);
}

#[test]
fn buffered_bytes_are_bounded_and_none_is_lost_or_reordered() {
    let mut lp = crate::uring_loop!(RECV);
    let (a, b) = socketpair();
    // Room in the socket buffers for the whole stream, so the sender never
    // blocks: what the reactor does not take waits in the kernel.
    let total = 192 * 1024;
    for fd in [a, b] {
        let size: libc::c_int = 1 << 20;
        // SAFETY: a valid int option on the test's own socket.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                if fd == a {
                    libc::SO_SNDBUF
                } else {
                    libc::SO_RCVBUF
                },
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    let data: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
    let mut small = [0u8; 1];
    let mut r = read_op(b, &mut small);
    let e = lp.submit("first", &mut r);
    lp.run_once(0);
    // The loop runs between the chunks, as it would between a peer's
    // segments: it copies each report out, and stops at the bound.
    for chunk in data.chunks(16 * 1024) {
        send_now(a, chunk);
        lp.run_once(0);
    }
    lp.run_until(LIMIT, |log| ios(log) == 1);
    settle(&lp);
    lp.take_log();
    lp.dispose(e);
    // The reactor stopped taking bytes past its bound (64 KiB, plus the
    // reports the kernel posted before the cancel took effect): the rest is
    // still in the kernel's socket buffer (FIONREAD counts it).
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    assert_eq!(unsafe { libc::ioctl(b, libc::FIONREAD, &mut queued) }, 0);
    assert!(
        queued > 0,
        "the reactor took the whole stream ({total} bytes) without a read"
    );
    let mut got = vec![small[0]];
    let mut buf = vec![0u8; 8192];
    while got.len() < total {
        let mut r = read_op(b, &mut buf);
        let e = lp.submit("read", &mut r);
        lp.run_until(LIMIT, |log| ios(log) == 1);
        let n = match lp.take_log().as_slice() {
            [Rec::Io("read", n)] if *n > 0 => *n as usize,
            other => panic!("unexpected {other:?}"),
        };
        got.extend_from_slice(&buf[..n]);
        lp.dispose(e);
    }
    assert!(got == data, "bytes lost or reordered");
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn closing_a_socket_ends_its_parked_reads_and_frees_its_bytes() {
    let mut lp = crate::uring_loop!(RECV);
    let (a, b) = socketpair();
    let mut first = [0u8; 1];
    let mut r1 = read_op(b, &mut first);
    let e1 = lp.submit("first", &mut r1);
    send_now(a, b"xyz");
    lp.run_until(LIMIT, |log| ios(log) == 1);
    settle(&lp);
    let mut close = AaIoOp::new(AA_IO_CLOSE, i64::from(b));
    let mut late = [0u8; 4];
    let mut r2 = read_op(b, &mut late);
    let e2 = lp.submit("late", &mut r2);
    let c = lp.submit("close", &mut close);
    lp.run_until(LIMIT, |log| ios(log) == 3);
    let mut log = lp.take_log();
    log.sort_by_key(|r| format!("{r:?}"));
    // The parked read either took the queued bytes (matched first) or ended
    // with the close; either way the close comes through and b is closed.
    assert!(
        log == [Rec::Io("close", 0), Rec::Io("first", 1), Rec::Io("late", 2)]
            || log
                == [
                    Rec::Io("close", 0),
                    Rec::Io("first", 1),
                    Rec::Io("late", -i64::from(libc::ECANCELED))
                ],
        "{log:?}"
    );
    assert!(peer_sees_eof(a));
    for ev in [e1, e2, c] {
        lp.dispose(ev);
    }
    lp.finish();
    close_fd(a);
}

#[test]
fn inline_streams_is_on_by_default_and_its_capability_follows_the_option() {
    let lp = crate::uring_loop!();
    assert_ne!(lp.instance_caps() & AA_CAP_IO_INLINE, 0);
    lp.finish();
    let off = crate::uring_loop!(&[("uring.inline_streams", "off")]);
    assert_eq!(off.instance_caps() & AA_CAP_IO_INLINE, 0);
    off.finish();
    // A multishot receive queues bytes a direct read would skip.
    let recv = crate::uring_loop!(RECV);
    assert_eq!(recv.instance_caps() & AA_CAP_IO_INLINE, 0);
    recv.finish();
}

#[test]
fn a_stream_read_or_write_allowed_inline_completes_at_once_or_waits_in_the_ring() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let data = *b"abc";
    let mut w = write_op(a, &data);
    assert_eq!(lp.submit_inline("write", &mut w), Ok(None));
    assert_eq!(w.result, 3);
    let mut buf = [0u8; 8];
    let mut r = read_op(b, &mut buf);
    assert_eq!(lp.submit_inline("read", &mut r), Ok(None));
    assert_eq!((r.result, &buf[..3]), (3, &b"abc"[..]));
    // Nothing to read: the read waits in the ring, and completes with the
    // bytes sent later.
    let mut buf2 = [0u8; 8];
    let mut r2 = read_op(b, &mut buf2);
    let ev = lp
        .submit_inline("read later", &mut r2)
        .unwrap()
        .expect("pending");
    send_now(a, b"xy");
    lp.run_until(LIMIT, |log| ios(log) == 1);
    assert_eq!(lp.take_log(), [Rec::Io("read later", 2)]);
    assert_eq!(&buf2[..2], b"xy");
    lp.dispose(ev);
    // An error is the call's: a write to a closed peer is EPIPE at once.
    close_fd(b);
    let mut w2 = write_op(a, &data);
    assert_eq!(lp.submit_inline("write", &mut w2), Ok(None));
    assert_eq!(w2.result, -i64::from(libc::EPIPE));
    lp.finish();
    close_fd(a);
}

#[test]
fn an_inline_write_never_overtakes_a_write_waiting_in_the_ring() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    // Fill `a`'s send buffer, so the next write waits in the ring.
    let chunk = [b'.'; 4096];
    // SAFETY: `chunk` is a valid slice for its length.
    while unsafe { libc::send(a, chunk.as_ptr().cast(), chunk.len(), libc::MSG_DONTWAIT) } > 0 {}
    let first = [b'1'; 16];
    let mut w1 = write_op(a, &first);
    let ev1 = lp.submit_inline("first", &mut w1).unwrap().expect("waits");
    // Room now: yet the second write, allowed inline, queues behind the
    // first (G4) instead of being made at once.
    let mut sink = vec![0u8; 1 << 20];
    while recv_now(b, &mut sink).is_some_and(|n| n > 0) {}
    let second = [b'2'; 16];
    let mut w2 = write_op(a, &second);
    let ev2 = lp
        .submit_inline("second", &mut w2)
        .unwrap()
        .expect("queued");
    lp.run_until(LIMIT, |log| ios(log) == 2);
    assert_eq!(lp.take_log(), [Rec::Io("first", 16), Rec::Io("second", 16)]);
    // The bytes arrived in submission order.
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while let Some(n) = recv_now(b, &mut buf).filter(|&n| n > 0) {
        got.extend_from_slice(&buf[..n]);
    }
    let tail: Vec<u8> = got.iter().copied().filter(|&c| c != b'.').collect();
    assert_eq!(tail, [[b'1'; 16], [b'2'; 16]].concat());
    lp.dispose(ev1);
    lp.dispose(ev2);
    lp.finish();
    close_fd(a);
    close_fd(b);
}
