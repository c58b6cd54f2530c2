//! D-34: name resolution without blocking the loop.

use std::io::{Read, Write};
use std::net::SocketAddr;

use async_std_api::net::{lookup_host, TcpListener, TcpStream, UdpSocket};
use async_std_api::{run, spawn};

#[test]
fn d34_lookup_host_resolves_localhost_with_the_port() {
    run(|| {
        let addrs: Vec<SocketAddr> = lookup_host("localhost:4242").unwrap().collect();
        assert!(!addrs.is_empty());
        assert!(
            addrs
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 4242),
            "{addrs:?}"
        );
        let lit: Vec<SocketAddr> = lookup_host(("127.0.0.1", 9)).unwrap().collect();
        assert_eq!(lit, ["127.0.0.1:9".parse::<SocketAddr>().unwrap()]);
    })
    .unwrap();
}

#[test]
fn d34_fifo_a_lookup_suspends_only_its_coroutine() {
    run(|| {
        let resolver = spawn(|| lookup_host("localhost:1").unwrap().count());
        let r = resolver.coroutine();
        // Queued after the resolver: it runs while the lookup is in
        // flight, and finds the resolver suspended in it. FIFO order: a
        // policy free to poll the reactor first may let the lookup finish
        // before the watcher runs.
        let watcher = spawn(move || r.is_suspended());
        assert!(watcher.join().unwrap(), "the resolver waits, the loop runs");
        assert!(resolver.join().unwrap() >= 1);
    })
    .unwrap();
}

#[test]
fn d34_connect_and_bind_take_host_names() {
    run(|| {
        let listener = TcpListener::bind("localhost:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut b = [0u8; 2];
            s.read_exact(&mut b).unwrap();
            b
        });
        let mut c = TcpStream::connect(format!("localhost:{port}")).unwrap();
        c.write_all(b"ok").unwrap();
        assert_eq!(&server.join().unwrap(), b"ok");
        let u = UdpSocket::bind(("localhost", 0)).unwrap();
        assert!(u.local_addr().unwrap().ip().is_loopback());
    })
    .unwrap();
}

#[test]
fn d34_a_name_that_does_not_resolve_is_one_line_naming_it() {
    run(|| {
        let e = lookup_host("no-such-host.invalid:80").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("failed to lookup address information for \"no-such-host.invalid\": "),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        let e = lookup_host("localhost").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        let e = TcpStream::connect("localhost:99999").unwrap_err();
        assert_eq!(e.to_string(), "invalid port value");
    })
    .unwrap();
}
