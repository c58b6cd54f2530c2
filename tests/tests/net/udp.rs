//! D-33: UDP sockets (`net::UdpSocket`) on every reactor.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use async_std_api::net::UdpSocket;
use async_std_api::{io, run, spawn};
use tests::support::{join_cancelled, yield_until_waiting};

fn local() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").unwrap()
}

#[test]
fn d33_datagrams_keep_their_boundaries_order_and_senders() {
    run(|| {
        let server = local();
        let addr = server.local_addr().unwrap();
        let (a, b) = (local(), local());
        let got = spawn(move || {
            let mut out = Vec::new();
            let mut buf = [0u8; 64];
            for _ in 0..3 {
                let (n, from) = server.recv_from(&mut buf).unwrap();
                out.push((buf[..n].to_vec(), from));
            }
            out
        });
        a.send_to(b"one", addr).unwrap();
        b.send_to(b"", addr).unwrap(); // an empty datagram is a datagram
        a.send_to(b"three!", addr).unwrap();
        let got = got.join().unwrap();
        let (pa, pb) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        assert_eq!(
            got,
            [
                (b"one".to_vec(), pa),
                (Vec::new(), pb),
                (b"three!".to_vec(), pa)
            ]
        );
    })
    .unwrap();
}

#[test]
fn d33_a_short_buffer_truncates_and_peek_leaves_the_datagram() {
    run(|| {
        let (a, b) = (local(), local());
        let to = b.local_addr().unwrap();
        a.send_to(b"abcdef", to).unwrap();
        a.send_to(b"next", to).unwrap();
        let mut small = [0u8; 3];
        let (n, _) = b.peek_from(&mut small).unwrap();
        assert_eq!((n, &small), (3, b"abc"));
        let (n, _) = b.recv_from(&mut small).unwrap();
        assert_eq!((n, &small), (3, b"abc"), "the rest of the datagram is lost");
        let mut buf = [0u8; 16];
        let (n, _) = b.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"next");
    })
    .unwrap();
}

#[test]
fn d33_a_connected_socket_hears_only_its_peer_and_learns_of_refusals() {
    run(|| {
        let (a, b, stranger) = (local(), local(), local());
        a.connect(b.local_addr().unwrap()).unwrap();
        assert_eq!(a.peer_addr().unwrap(), b.local_addr().unwrap());
        stranger.send_to(b"noise", a.local_addr().unwrap()).unwrap();
        b.send_to(b"signal", a.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 16];
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"signal");

        // A peer with no socket: the ICMP refusal comes back on the next
        // receive, as ConnectionRefused. (A std socket: it is closed at
        // once, where ours is closed by the reactor, on io_uring at its
        // next submission.)
        let gone = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let gone_addr = gone.local_addr().unwrap();
        drop(gone);
        let c = local();
        c.connect(gone_addr).unwrap();
        c.send(b"anyone?").unwrap();
        let e = c.recv(&mut buf).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    })
    .unwrap();
}

#[test]
fn d33_a_cancelled_receive_takes_no_datagram() {
    run(|| {
        let (a, b) = (local(), std::rc::Rc::new(local()));
        let to = b.local_addr().unwrap();
        let b1 = b.clone();
        let seen = std::rc::Rc::new(std::cell::Cell::new(false));
        let s = seen.clone();
        let waiter = spawn(move || {
            let mut buf = [0u8; 8];
            let e = b1.recv_from(&mut buf).unwrap_err();
            s.set(io::cancelled(&e).is_some());
        });
        yield_until_waiting(&[&waiter.coroutine()]);
        waiter.cancel();
        join_cancelled(waiter);
        assert!(seen.get(), "the receive failed with the cancellation");
        a.send_to(b"kept", to).unwrap();
        let mut buf = [0u8; 8];
        let (n, _) = b.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"kept");
    })
    .unwrap();
}

#[test]
fn d33_timeouts_are_stds() {
    run(|| {
        let s = local();
        assert_eq!(s.read_timeout().unwrap(), None);
        let e = s.set_read_timeout(Some(Duration::ZERO)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        assert_eq!(s.read_timeout().unwrap(), Some(Duration::from_millis(20)));
        let mut buf = [0u8; 4];
        let e = s.recv_from(&mut buf).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}");
        s.set_read_timeout(None).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
        assert_eq!(s.write_timeout().unwrap(), Some(Duration::from_secs(1)));
    })
    .unwrap();
}

#[test]
fn d33_options_multicast_and_std_conversions() {
    run(|| {
        let s = local();
        s.set_broadcast(true).unwrap();
        assert!(s.broadcast().unwrap());
        s.set_ttl(7).unwrap();
        assert_eq!(s.ttl().unwrap(), 7);
        s.set_multicast_ttl_v4(3).unwrap();
        assert_eq!(s.multicast_ttl_v4().unwrap(), 3);
        s.set_multicast_loop_v4(false).unwrap();
        assert!(!s.multicast_loop_v4().unwrap());
        let group = Ipv4Addr::new(239, 255, 77, 1);
        s.join_multicast_v4(&group, &Ipv4Addr::LOCALHOST).unwrap();
        s.leave_multicast_v4(&group, &Ipv4Addr::LOCALHOST).unwrap();
        assert!(s.take_error().unwrap().is_none());

        let addr = s.local_addr().unwrap();
        let std_socket = s.into_std().unwrap();
        assert_eq!(std_socket.local_addr().unwrap(), addr);
        let back = UdpSocket::from_std(std_socket).unwrap();
        let peer = local();
        peer.send_to(b"again", addr).unwrap();
        let mut buf = [0u8; 8];
        let (n, from): (usize, SocketAddr) = back.recv_from(&mut buf).unwrap();
        assert_eq!(
            (&buf[..n], from),
            (&b"again"[..], peer.local_addr().unwrap())
        );
    })
    .unwrap();
}

#[test]
fn d33_a_receiver_waits_without_holding_up_the_others() {
    run(|| {
        let (a, b) = (local(), local());
        let to = b.local_addr().unwrap();
        let receiver = spawn(move || {
            let mut buf = [0u8; 8];
            b.recv(&mut buf).unwrap()
        });
        // The receiver suspended in its receive and this coroutine runs on.
        yield_until_waiting(&[&receiver.coroutine()]);
        a.send_to(b"late", to).unwrap();
        assert_eq!(receiver.join().unwrap(), 4);
    })
    .unwrap();
}
