//! io_uring's fast paths seen from user code (D-41): with
//! `uring.multishot_recv` and `uring.multishot_accept` on, bytes and
//! connections the reactor took ahead of a read or an accept reach later
//! calls in order, a cancelled read loses nothing, the end of a stream comes
//! after its data, and a closed listener leaves no connection open. Every
//! reactor runs these (the `uring.` options are ignored by the others),
//! so the behaviour is the same with or without the fast paths.

use std::cell::{Cell, RefCell};
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{io, spawn, Builder};
use tests::support::{join_cancelled, yield_until};

/// Runs `f` with both multishot paths on (under io_uring).
fn run_fast(f: impl FnOnce() + 'static) {
    Builder::new()
        .reactor_option("uring.multishot_recv", "on")
        .reactor_option("uring.multishot_accept", "on")
        .run(f)
        .unwrap();
}

/// A connected pair over loopback: (client, server end).
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (client, server)
}

fn read_exact_str(s: &mut TcpStream, n: usize) -> String {
    let mut buf = vec![0u8; n];
    s.read_exact(&mut buf).unwrap();
    String::from_utf8(buf).unwrap()
}

#[test]
fn d41_bytes_received_before_a_read_was_submitted_reach_it_in_order() {
    run_fast(|| {
        let (mut client, mut server) = pair();
        client.write_all(b"hello").unwrap();
        // This read arms the receive; the next bytes arrive while no read
        // is pending and wait in the reactor.
        assert_eq!(read_exact_str(&mut server, 5), "hello");
        client.write_all(b", world").unwrap();
        client.write_all(b"!").unwrap();
        let mut buf = [0u8; 3];
        let n = server.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], &b", world"[..n]);
        let rest = read_exact_str(&mut server, 8 - n);
        assert_eq!(
            format!("{}{rest}", std::str::from_utf8(&buf[..n]).unwrap()),
            ", world!"
        );
    });
}

#[test]
fn d41_a_cancelled_read_is_followed_by_a_read_that_gets_the_data() {
    run_fast(|| {
        let (mut client, server) = pair();
        let server = Rc::new(server);
        let s = server.clone();
        let ended: Rc<Cell<bool>> = Rc::default();
        let e = ended.clone();
        let reader = spawn(move || {
            let mut buf = [0u8; 64];
            let err = (&*s).read(&mut buf).unwrap_err();
            e.set(io::cancelled(&err).is_some());
            assert_eq!(buf, [0u8; 64], "a cancelled read's buffer is untouched");
        });
        yield_until(|| reader.coroutine().is_suspended());
        reader.cancel();
        // The bytes come while the cancellation is on its way.
        client.write_all(b"later").unwrap();
        join_cancelled(reader);
        assert!(ended.get(), "the read ended with the cancellation");
        let mut buf = [0u8; 64];
        let n = (&*server).read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"later", "nothing was lost");
    });
}

#[test]
fn d41_end_of_stream_comes_after_the_buffered_data() {
    run_fast(|| {
        let (mut client, mut server) = pair();
        client.write_all(b"a").unwrap();
        assert_eq!(read_exact_str(&mut server, 1), "a");
        client.write_all(b"bcd").unwrap();
        drop(client);
        let mut got = Vec::new();
        let mut buf = [0u8; 2];
        loop {
            let n = server.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, b"bcd");
        assert_eq!(server.read(&mut buf).unwrap(), 0, "end of stream repeats");
    });
}

#[test]
fn d41_a_stream_larger_than_the_buffer_bound_arrives_whole_and_in_order() {
    run_fast(|| {
        let (client, mut server) = pair();
        let total = 1 << 20;
        let data: Rc<Vec<u8>> = Rc::new((0..total).map(|i| (i % 251) as u8).collect());
        let d = data.clone();
        let finished: Rc<Cell<bool>> = Rc::default();
        let f = finished.clone();
        let writer = spawn(move || {
            let mut client = client;
            client.write_all(&d).unwrap();
            f.set(true);
        });
        let mut first = [0u8; 1];
        server.read_exact(&mut first).unwrap();
        // The reader pauses while the writer runs into the flow control: the
        // reactor holds a bounded amount, the kernel the rest.
        yield_until(|| writer.coroutine().is_suspended() || finished.get());
        let mut got = first.to_vec();
        let mut buf = vec![0u8; 16 * 1024];
        while got.len() < total {
            let n = server.read(&mut buf).unwrap();
            assert!(n > 0, "end of stream after {} bytes", got.len());
            got.extend_from_slice(&buf[..n]);
        }
        writer.join().unwrap();
        assert!(got == *data, "bytes lost or reordered");
    });
}

#[test]
fn d41_connections_queued_ahead_are_taken_by_later_accepts() {
    run_fast(|| {
        let listener = Rc::new(TcpListener::bind("127.0.0.1:0").unwrap());
        let addr = listener.local_addr().unwrap();
        let l = listener.clone();
        let peers: Rc<RefCell<Vec<SocketAddr>>> = Rc::default();
        let p = peers.clone();
        let acceptor = spawn(move || {
            let mut conns = Vec::new();
            for _ in 0..10 {
                let (conn, peer) = l.accept().unwrap();
                assert_eq!(conn.peer_addr().unwrap(), peer);
                p.borrow_mut().push(peer);
                conns.push(conn);
            }
            conns
        });
        let clients: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let conns = acceptor.join().unwrap();
        assert_eq!(conns.len(), 10);
        let mut wanted: Vec<SocketAddr> = clients.iter().map(|c| c.local_addr().unwrap()).collect();
        let mut got = peers.borrow().clone();
        wanted.sort();
        got.sort();
        assert_eq!(
            got, wanted,
            "every connection accepted once, with its own peer"
        );
    });
}

#[test]
fn d41_closing_a_listener_leaves_no_queued_connection_open() {
    run_fast(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut clients: Vec<TcpStream> =
            (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let (first, _) = listener.accept().unwrap();
        // The others may now wait in the reactor (accepted ahead) or in the
        // kernel's backlog; closing the listener must close them either way.
        drop(listener);
        drop(first);
        for client in &mut clients {
            client
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut byte = [0u8; 1];
            match client.read(&mut byte) {
                // Accepted (by the test or ahead by the reactor), then closed.
                Ok(0) => {}
                // Never accepted: dropped from the backlog.
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
                other => panic!("a connection was left open: {other:?}"),
            }
        }
    });
}
