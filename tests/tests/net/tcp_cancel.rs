//! Cancelled I/O: the request is cancelled in the reactor and waited for
//! (P-21); the error carries the `Cancelled`; the stream stays usable and
//! later data is not lost.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::rc::Rc;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{current, io, run, spawn};
use tests::support::{join_cancelled, yield_until, Recorder};

#[test]
fn d25_a_cancelled_read_returns_cancelled_and_the_stream_stays_usable() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).unwrap();
        let (conn, _) = listener.accept().unwrap();
        let r1 = r.clone();
        // The reader hands the stream back through shared state: it ends
        // cancelled, so a returned value would be dropped (D-25).
        let slot: Rc<RefCell<Option<TcpStream>>> = Rc::default();
        let s = slot.clone();
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
            *s.borrow_mut() = Some(conn);
        });
        yield_until(|| reader.coroutine().is_suspended()); // the reader blocks in read
        reader.cancel();
        let id = reader.id();
        assert_eq!(join_cancelled(reader).id(), id);
        let mut conn = slot
            .borrow_mut()
            .take()
            .expect("the reader kept the stream");
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
fn d25_a_cancelled_accept_returns_cancelled() {
    run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let found: Rc<RefCell<Option<Option<String>>>> = Rc::default();
        let f = found.clone();
        let acceptor = spawn(move || {
            let err = listener.accept().unwrap_err();
            *f.borrow_mut() = io::cancelled(&err).map(|c| c.reason().map(str::to_owned));
        });
        yield_until(|| acceptor.coroutine().is_suspended());
        acceptor.coroutine().cancel_with("no more clients");
        // Caught (as the accept's error) and returned: cancelled (D-25).
        assert_eq!(join_cancelled(acceptor).reason(), Some("no more clients"));
        assert_eq!(
            found.borrow_mut().take(),
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
