//! What a descriptor looks like to the user with hooks on: its mode, its
//! timeouts, its errors, and a number reused after a close.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use async_std_api::spawn;

use crate::{hooked, Ticker};

fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
    let (s, _) = l.accept().expect("accept");
    (c, s)
}

fn flags(fd: i32) -> i32 {
    // SAFETY: F_GETFL takes no argument.
    unsafe { libc::fcntl(fd, libc::F_GETFL) }
}

#[test]
fn a_blocking_socket_still_looks_blocking_after_a_hooked_wait() {
    hooked()
        .run(|| {
            let (mut a, mut b) = pair();
            let before = flags(b.as_raw_fd());
            assert_eq!(before & libc::O_NONBLOCK, 0);
            let reader = spawn(move || {
                let mut buf = [0u8; 5];
                b.read_exact(&mut buf).expect("read");
                (buf, flags(b.as_raw_fd()))
            });
            async_std_api::delay(20).expect("delay");
            a.write_all(b"hello").expect("write");
            let (buf, after) = reader.join().expect("reader");
            assert_eq!(&buf, b"hello");
            assert_eq!(after, before, "the hooks changed the descriptor's flags");
        })
        .expect("runtime");
}

#[test]
fn a_socket_the_user_made_non_blocking_still_returns_would_block() {
    hooked()
        .run(|| {
            let (_a, mut b) = pair();
            b.set_nonblocking(true).expect("nonblocking");
            let mut buf = [0u8; 8];
            let start = Instant::now();
            let e = b.read(&mut buf).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::WouldBlock);
            assert!(start.elapsed() < Duration::from_millis(100));
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            l.set_nonblocking(true).expect("nonblocking");
            assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
        })
        .expect("runtime");
}

#[test]
fn a_read_timeout_ends_the_wait_with_would_block_while_others_run() {
    let (kind, waited, ticks) = hooked()
        .run(|| {
            let (_a, mut b) = pair();
            b.set_read_timeout(Some(Duration::from_millis(150)))
                .expect("timeout");
            let ticker = Ticker::start();
            let start = Instant::now();
            let e = b.read(&mut [0u8; 8]).unwrap_err();
            let waited = start.elapsed();
            (e.kind(), waited, ticker.stop().0)
        })
        .expect("runtime");
    assert_eq!(kind, ErrorKind::WouldBlock);
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    assert!(waited < Duration::from_millis(1500), "{waited:?}");
    assert!(ticks >= 5, "{ticks} ticks");
}

#[test]
fn end_of_stream_resets_and_partial_reads_are_the_real_calls() {
    hooked()
        .run(|| {
            let (mut a, mut b) = pair();
            let reader = spawn(move || {
                let mut buf = [0u8; 64];
                let first = b.read(&mut buf).expect("first read");
                let second = b.read(&mut buf).expect("second read");
                (first, second)
            });
            async_std_api::delay(10).expect("delay");
            a.write_all(b"abc").expect("write");
            async_std_api::delay(10).expect("delay");
            drop(a);
            // A short read returns what came (3 bytes), then end of stream.
            assert_eq!(reader.join().expect("reader"), (3, 0));

            let (a, mut b) = pair();
            let s2 = socket2::SockRef::from(&a);
            s2.set_linger(Some(Duration::ZERO)).expect("linger");
            drop(a); // a reset
            let e = b.read(&mut [0u8; 4]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ConnectionReset);

            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = l.local_addr().expect("addr");
            drop(l);
            let e = TcpStream::connect(addr).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        })
        .expect("runtime");
}

#[test]
fn a_closed_descriptors_number_reused_inherits_nothing() {
    hooked()
        .run(|| {
            let (_a, b) = pair();
            let old = b.as_raw_fd();
            // A wait on it, then a close.
            b.set_read_timeout(Some(Duration::from_millis(20)))
                .expect("timeout");
            assert_eq!(
                (&b).read(&mut [0u8; 1]).unwrap_err().kind(),
                ErrorKind::WouldBlock
            );
            // The number comes back as a pipe (dup2 onto the freed number,
            // as a program's own dup2 would): blocking, no timeout, and a
            // hooked wait on it sees the pipe's data.
            let (r, mut w) = std::io::pipe().expect("pipe");
            drop(b);
            // SAFETY: `old` is free (its socket was closed above).
            let fd = unsafe { libc::dup2(r.as_raw_fd(), old) };
            assert_eq!(fd, old);
            drop(r);
            // SAFETY: `old` now names the pipe's read end, owned here.
            let mut r = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(old) };
            assert_eq!(flags(fd) & libc::O_NONBLOCK, 0);
            let reader = spawn(move || {
                let mut buf = [0u8; 4];
                r.read_exact(&mut buf).expect("read pipe");
                buf
            });
            async_std_api::delay(20).expect("delay");
            w.write_all(b"pipe").expect("write pipe");
            assert_eq!(&reader.join().expect("reader"), b"pipe");
        })
        .expect("runtime");
}

#[test]
fn poll_reports_the_kernels_events_and_its_timeout() {
    hooked()
        .run(|| {
            let (mut a, b) = pair();
            let mut p = [libc::pollfd {
                fd: b.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            let start = Instant::now();
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(p.as_mut_ptr(), 1, 50) };
            assert_eq!(n, 0);
            assert!(start.elapsed() >= Duration::from_millis(50));
            let writer = spawn(move || {
                async_std_api::delay(20).expect("delay");
                a.write_all(b"x").expect("write");
                a
            });
            // SAFETY: as above.
            let n = unsafe { libc::poll(p.as_mut_ptr(), 1, -1) };
            assert_eq!(n, 1);
            assert_eq!(p[0].revents & libc::POLLIN, libc::POLLIN);
            drop(writer.join().expect("writer"));
        })
        .expect("runtime");
}
