//! Cancelled I/O: the request is cancelled in the reactor and waited for
//! (P-21); the error carries the `Cancelled`; the stream stays usable and
//! later data is not lost.

use std::io::{Read, Write};

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{current, io, run, spawn};
use tests::support::{yield_until, Recorder};

#[test]
fn a_cancelled_read_returns_cancelled_and_the_stream_stays_usable() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).unwrap();
        let (conn, _) = listener.accept().unwrap();
        let r1 = r.clone();
        let reader = spawn(move || {
            let mut conn = conn;
            let mut buf = [0u8; 64];
            let err = conn.read(&mut buf).unwrap_err();
            let c = io::cancelled(&err).expect("the error carries the cancellation");
            r1.push(format!(
                "read cancelled: kind={:?} own={}",
                err.kind(),
                c.id() == current().id()
            ));
            conn
        });
        yield_until(|| reader.coroutine().is_suspended()); // the reader blocks in read
        reader.cancel();
        let mut conn = reader.join().unwrap();
        r.push("peer writes");
        client.write_all(b"later").unwrap();
        // The stream is still usable and nothing was lost.
        let mut buf = [0u8; 64];
        let n = conn.read(&mut buf).unwrap();
        r.push(format!(
            "then read {:?}",
            std::str::from_utf8(&buf[..n]).unwrap()
        ));
    })
    .unwrap();
    rec.assert_events(&[
        "read cancelled: kind=Other own=true",
        "peer writes",
        "then read \"later\"",
    ]);
}

#[test]
fn a_cancelled_accept_returns_cancelled() {
    run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let acceptor = spawn(move || {
            let err = listener.accept().unwrap_err();
            io::cancelled(&err).map(|c| c.reason().map(str::to_owned))
        });
        yield_until(|| acceptor.coroutine().is_suspended());
        acceptor.coroutine().cancel_with("no more clients");
        assert_eq!(
            acceptor.join().unwrap(),
            Some(Some("no more clients".into()))
        );
    })
    .unwrap();
}

#[test]
fn a_pending_cancellation_fails_the_next_io_call_before_it_starts() {
    run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).unwrap();
        let (_conn, _) = listener.accept().unwrap();
        current().cancel();
        let err = client.write(b"x").unwrap_err();
        assert!(io::cancelled(&err).is_some());
        // Delivered once.
        client.write_all(b"x").unwrap();
    })
    .unwrap();
}

#[test]
fn a_main_panic_unwinds_a_coroutine_blocked_in_accept() {
    struct Guard(Recorder);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.push("acceptor unwound");
        }
    }
    let rec = Recorder::new();
    let r = rec.clone();
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        run(move || {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let r1 = r.clone();
            let acceptor = spawn(move || {
                let _g = Guard(r1.clone());
                let _ = listener.accept();
                r1.push("accept returned");
            });
            yield_until(|| acceptor.coroutine().is_suspended());
            panic!("main gives up");
        })
    }))
    .unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"main gives up"));
    rec.assert_events(&["acceptor unwound"]);
}
