//! An echo server with one coroutine per connection; generic `std::io`
//! code (`io::copy`, `BufReader::read_line`, `write_all`) runs unchanged.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::Shutdown;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{run, spawn};

const CLIENTS: usize = 200;
const MESSAGES: usize = 5;

#[test]
fn echo_server_serves_200_concurrent_clients_intact() {
    let total = run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = spawn(move || {
            let mut handlers = Vec::new();
            for _ in 0..CLIENTS {
                let (conn, _peer) = listener.accept().unwrap();
                handlers.push(spawn(move || {
                    // Plain std::io: copy until the client shuts down writing.
                    let n = io::copy(&mut &conn, &mut &conn).unwrap();
                    conn.shutdown(Shutdown::Write).unwrap();
                    n
                }));
            }
            handlers.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|i| {
                spawn(move || {
                    let stream = TcpStream::connect(addr).unwrap();
                    stream.set_nodelay(true).unwrap();
                    let mut reader = BufReader::new(&stream);
                    let mut sent = 0;
                    for m in 0..MESSAGES {
                        let line = format!("client {i} message {m} {}\n", "x".repeat(i % 50));
                        (&stream).write_all(line.as_bytes()).unwrap();
                        sent += line.len();
                        let mut echo = String::new();
                        reader.read_line(&mut echo).unwrap();
                        assert_eq!(echo, line);
                    }
                    stream.shutdown(Shutdown::Write).unwrap();
                    let mut rest = Vec::new();
                    reader.read_to_end(&mut rest).unwrap();
                    assert!(rest.is_empty());
                    sent as u64
                })
            })
            .collect();
        let sent: u64 = clients.into_iter().map(|h| h.join().unwrap()).sum();
        let echoed = server.join().unwrap();
        assert_eq!(sent, echoed);
        echoed
    })
    .unwrap();
    assert!(total > (CLIENTS * MESSAGES * 20) as u64);
}

#[test]
fn read_exact_and_large_writes_cross_many_requests() {
    run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let data: Vec<u8> = (0..4 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
        let expected = data.clone();
        let writer = spawn(move || {
            let (mut conn, peer) = listener.accept().unwrap();
            assert_eq!(peer, conn.peer_addr().unwrap());
            conn.write_all(&data).unwrap();
        });
        let mut s = TcpStream::connect(addr).unwrap();
        assert_eq!(s.peer_addr().unwrap(), addr);
        let mut got = vec![0u8; expected.len()];
        s.read_exact(&mut got).unwrap();
        assert!(got == expected);
        writer.join().unwrap();
        let mut tail = [0u8; 1];
        assert_eq!(s.read(&mut tail).unwrap(), 0);
    })
    .unwrap();
}

#[test]
fn connecting_to_a_closed_port_is_refused() {
    run(|| {
        // A port nobody listens on (std's listener closes synchronously).
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let err = TcpStream::connect(("127.0.0.1", port)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    })
    .unwrap();
}

#[test]
fn incoming_yields_accepted_streams() {
    run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let c = spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"hi").unwrap();
        });
        let mut conn = listener.incoming().next().unwrap().unwrap();
        let mut buf = String::new();
        conn.read_to_string(&mut buf).unwrap();
        assert_eq!(buf, "hi");
        c.join().unwrap();
    })
    .unwrap();
}
