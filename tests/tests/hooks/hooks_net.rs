//! std::net in coroutines with hooks on.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use async_std_api::{hooks, spawn};

use crate::{hooked, slow_server, Ticker};

#[test]
fn a_thousand_std_clients_wait_for_a_slow_server_together() {
    let addr = slow_server(200);
    let (elapsed, replies, ticks) = hooked()
        .run(move || {
            assert!(hooks::active());
            let ticker = Ticker::start();
            let start = Instant::now();
            let clients: Vec<_> = (0..1000)
                .map(|i| {
                    spawn(move || {
                        let mut s = TcpStream::connect(addr).expect("connect");
                        s.write_all(format!("request {i}\n").as_bytes())
                            .expect("write");
                        let mut line = String::new();
                        BufReader::new(&s).read_line(&mut line).expect("read");
                        line
                    })
                })
                .collect();
            let replies: Vec<String> = clients
                .into_iter()
                .map(|c| c.join().expect("client"))
                .collect();
            let elapsed = start.elapsed();
            (elapsed, replies, ticker.stop().0)
        })
        .expect("runtime");
    eprintln!("1000 std clients against a 200 ms server: {elapsed:?}, ticker {ticks} ticks");
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(r, &format!("echo: request {i}\n"));
    }
    // One after another they would take 200 s; together, about 300 ms on
    // an idle machine (the closing note has the numbers); the bound leaves
    // room for a loaded one.
    assert!(elapsed < Duration::from_secs(4), "took {elapsed:?}");
    assert!(ticks >= 5, "the ticker got {ticks} ticks");
}

#[test]
fn std_accept_connect_read_and_write_run_in_coroutines_of_one_loop() {
    let echoed = hooked()
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener.local_addr().expect("addr");
            let server = spawn(move || {
                let (mut conn, _) = listener.accept().expect("accept");
                let mut buf = Vec::new();
                conn.read_to_end(&mut buf).expect("read to end");
                conn.write_all(&buf).expect("echo");
                buf.len()
            });
            let mut c = TcpStream::connect(addr).expect("connect");
            // 4 MiB: more than the socket buffers hold, so both sides wait.
            let data: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
            c.write_all(&data).expect("write");
            c.shutdown(std::net::Shutdown::Write).expect("shutdown");
            let mut back = Vec::new();
            c.read_to_end(&mut back).expect("read");
            assert_eq!(server.join().expect("server"), data.len());
            back == data
        })
        .expect("runtime");
    assert!(echoed, "the echo differs");
}

#[test]
fn resolving_localhost_does_not_stall_other_coroutines() {
    let (addrs, ticks) = hooked()
        .run(|| {
            let ticker = Ticker::start();
            let mut addrs = Vec::new();
            for _ in 0..5 {
                addrs = ("localhost", 8080)
                    .to_socket_addrs()
                    .expect("resolve")
                    .collect::<Vec<_>>();
            }
            async_std_api::delay(30).expect("delay");
            (addrs, ticker.stop().0)
        })
        .expect("runtime");
    assert!(
        addrs
            .iter()
            .any(|a| a.ip().is_loopback() && a.port() == 8080),
        "{addrs:?}"
    );
    assert!(ticks >= 1);
}
