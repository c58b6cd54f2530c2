//! `SO_REUSEPORT` listeners, one per loop on the same address: the kernel
//! spreads connections over the loops.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;

use async_std_api::net::{TcpListener, UdpSocket};
use async_std_api::per_core::Loops;
use async_std_api::{spawn, Builder};

const CONNECTIONS: usize = 64;

/// A free loopback port, held (bound, not listening, `SO_REUSEPORT`) by the
/// returned socket so nothing else takes it during the test.
fn reserve_port() -> (socket2::Socket, SocketAddr) {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.set_reuse_address(true).unwrap();
    s.set_reuse_port(true).unwrap();
    s.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    let addr = s.local_addr().unwrap().as_socket().unwrap();
    (s, addr)
}

#[test]
fn d39_reuseport_listeners_on_every_loop_share_the_connections() {
    let (_held, addr) = reserve_port();
    let (bound_tx, bound) = mpsc::channel::<()>();
    let bound_tx = std::sync::Mutex::new(bound_tx);
    let (client_tx, client) = mpsc::channel::<Vec<usize>>();
    let client_tx = std::sync::Mutex::new(Some(client_tx));
    let bound = std::sync::Mutex::new(Some(bound));
    let served = Builder::new()
        .threads(2)
        .run_per_core(move |id| {
            let listener = TcpListener::bind_reuseport(addr).unwrap();
            bound_tx.lock().unwrap().send(()).unwrap();
            if id.index() == 0 {
                // The client: a plain thread, once both loops listen; it
                // shuts the loops down when every connection was answered.
                let (loops, bound) = (Loops::current().unwrap(), bound.lock().unwrap().take());
                let report = client_tx.lock().unwrap().take().unwrap();
                std::thread::spawn(move || {
                    let bound = bound.unwrap();
                    bound.recv().unwrap();
                    bound.recv().unwrap();
                    let mut by_loop = vec![0; loops.len()];
                    for _ in 0..CONNECTIONS {
                        let mut s = std::net::TcpStream::connect(addr).unwrap();
                        s.write_all(b"?").unwrap();
                        let mut who = [0u8; 1];
                        s.read_exact(&mut who).unwrap();
                        by_loop[who[0] as usize] += 1;
                    }
                    report.send(by_loop).unwrap();
                    loops.shutdown("served");
                });
            }
            let mut accepted = 0;
            // Accepts until the shutdown cancels `accept`.
            while let Ok((mut conn, _)) = listener.accept() {
                accepted += 1;
                let me = id.index() as u8;
                spawn(move || {
                    let mut q = [0u8; 1];
                    conn.read_exact(&mut q).unwrap();
                    conn.write_all(&[me]).unwrap();
                });
            }
            accepted
        })
        .unwrap();
    let by_loop = client.recv().unwrap();
    assert_eq!(served.iter().sum::<usize>(), CONNECTIONS);
    assert_eq!(
        served, by_loop,
        "what each loop accepted is what it answered"
    );
    // 64 connections hashed over 2 listeners: all on one has odds 2^-63.
    assert!(served.iter().all(|&n| n >= 1), "spread: {served:?}");
}

#[test]
fn d39_reuseport_udp_sockets_share_an_address_and_plain_bind_is_refused() {
    Builder::new()
        .threads(2)
        .run_per_core(|_| {
            let a = UdpSocket::bind_reuseport("127.0.0.1:0").unwrap();
            let addr = a.local_addr().unwrap();
            let b = UdpSocket::bind_reuseport(addr).unwrap();
            assert_eq!(b.local_addr().unwrap(), addr);
            let err = UdpSocket::bind(addr).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
            let l = TcpListener::bind_reuseport("127.0.0.1:0").unwrap();
            let err = TcpListener::bind(l.local_addr().unwrap()).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
        })
        .unwrap();
}
