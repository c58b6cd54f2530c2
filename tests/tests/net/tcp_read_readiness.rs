//! D-43, stream reads by readiness: on a readiness reactor a stream read
//! waits on the stream's persistent readiness watch and then reads in the
//! host, and a short read marks the direction drained (the next read waits
//! for an edge instead of trying first). What must hold whatever the
//! reactor: end of stream behind a short read is returned at once, not
//! waited for; bytes written after a short read reach the next read;
//! readers sharing a stream take each byte once.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::rc::Rc;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{run, spawn, JoinHandle};
use tests::support::{yield_until, yield_until_waiting};

/// A connected pair: (client, server side).
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (conn, _) = listener.accept().unwrap();
    (client, conn)
}

/// Joins `h` once it finished; a read that waits for an edge that never
/// comes fails the test after `yield_until`'s bound instead of hanging.
fn join_soon<T: 'static>(h: JoinHandle<T>) -> T {
    yield_until(|| h.is_finished());
    h.join().unwrap()
}

#[test]
fn d43_end_of_stream_behind_a_short_read_is_returned_at_once() {
    run(|| {
        // Data and end of stream both arrive before the first read, which
        // is short: the next read must not wait for an edge that already
        // came.
        let (mut client, conn) = pair();
        client.write_all(b"hello").unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let conn = Rc::new(conn);
        let mut buf = [0u8; 64];
        let n = (&*conn).read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        let c = conn.clone();
        let eof = spawn(move || {
            let mut buf = [0u8; 64];
            [(&*c).read(&mut buf).unwrap(), (&*c).read(&mut buf).unwrap()]
        });
        assert_eq!(join_soon(eof), [0, 0]);

        // The same when the reader was already waiting (its watch armed)
        // as the bytes and the end of stream came.
        let (mut client, conn) = pair();
        let conn = Rc::new(conn);
        let c = conn.clone();
        let reader = spawn(move || {
            let mut buf = [0u8; 64];
            let n = (&*c).read(&mut buf).unwrap();
            let first = buf[..n].to_vec();
            let then = [(&*c).read(&mut buf).unwrap(), (&*c).read(&mut buf).unwrap()];
            (first, then)
        });
        yield_until_waiting(&[&reader.coroutine()]);
        client.write_all(b"bye").unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let (first, then) = join_soon(reader);
        assert_eq!(first, b"bye");
        assert_eq!(then, [0, 0]);
    })
    .unwrap();
}

#[test]
fn d43_bytes_written_after_a_short_read_reach_the_next_read() {
    run(|| {
        let (mut client, conn) = pair();
        let conn = Rc::new(conn);
        let got = Rc::new(RefCell::new(Vec::new()));
        let (c, g) = (conn.clone(), got.clone());
        let reader = spawn(move || {
            let mut buf = [0u8; 64];
            for _ in 0..3 {
                let n = (&*c).read(&mut buf).unwrap();
                g.borrow_mut().push(buf[..n].to_vec());
            }
        });
        // Each message is written once the reader has taken the last one
        // (a short read) and waits again.
        for (i, msg) in [&b"one"[..], b"two", b"three"].into_iter().enumerate() {
            yield_until(|| got.borrow().len() == i && reader.coroutine().is_suspended());
            client.write_all(msg).unwrap();
        }
        join_soon(reader);
        assert_eq!(
            *got.borrow(),
            [b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
    })
    .unwrap();
}

#[test]
fn d43_two_readers_of_one_stream_take_each_byte_once() {
    run(|| {
        let (mut client, conn) = pair();
        let conn = Rc::new(conn);
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let c = conn.clone();
                spawn(move || {
                    let mut buf = [0u8; 1];
                    let n = (&*c).read(&mut buf).unwrap();
                    buf[..n].to_vec()
                })
            })
            .collect();
        yield_until_waiting(&[&readers[0].coroutine(), &readers[1].coroutine()]);
        // One byte: one reader takes it, the other waits on.
        client.write_all(b"x").unwrap();
        // The other reader, woken too, finds nothing and waits again.
        yield_until(|| {
            readers.iter().filter(|r| r.is_finished()).count() == 1
                && readers
                    .iter()
                    .filter(|r| r.coroutine().is_suspended())
                    .count()
                    == 1
        });
        client.write_all(b"y").unwrap();
        let mut got: Vec<Vec<u8>> = readers.into_iter().map(join_soon).collect();
        got.sort();
        assert_eq!(got, [b"x".to_vec(), b"y".to_vec()]);
    })
    .unwrap();
}

#[test]
fn d43_a_stream_that_waited_once_hides_no_deadlock() {
    // The read waits (its watch is armed, and stays armed), then the
    // coroutine waits on a channel nothing will ever send on: the program
    // is deadlocked, and the armed watch, with nobody waiting on it, must
    // not keep the loop alive.
    let err = run(|| {
        let (mut client, conn) = pair();
        let conn = Rc::new(conn);
        let c = conn.clone();
        let reader = spawn(move || {
            let mut buf = [0u8; 8];
            let n = (&*c).read(&mut buf).unwrap();
            buf[..n].to_vec()
        });
        yield_until_waiting(&[&reader.coroutine()]);
        client.write_all(b"once").unwrap();
        assert_eq!(join_soon(reader), b"once");
        let (_tx, rx) = async_std_api::sync::unbounded::<u8>();
        let _ = rx.recv();
        drop((client, conn));
    })
    .unwrap_err();
    assert_eq!(err.kind(), async_std_api::ErrorKind::Deadlock, "{err}");
}

#[test]
fn d43_a_reader_that_then_waits_on_something_else_hides_no_deadlock() {
    // The same coroutine reads (and waits for the bytes), then waits on a
    // channel nothing will send on. The reference the runtime's wait hold
    // kept after its last waiter left is dropped as that coroutine
    // suspends, so the loop sees nothing alive and reports the deadlock
    // (a stale reference would block the loop for ever).
    let err = run(|| {
        let (mut client, conn) = pair();
        let reader = spawn(move || {
            let mut buf = [0u8; 8];
            let n = (&conn).read(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"once");
            let (_tx, rx) = async_std_api::sync::unbounded::<u8>();
            let _ = rx.recv();
            drop(conn);
        });
        yield_until_waiting(&[&reader.coroutine()]);
        client.write_all(b"once").unwrap();
        let _ = reader.join();
        drop(client);
    })
    .unwrap_err();
    assert_eq!(err.kind(), async_std_api::ErrorKind::Deadlock, "{err}");
}
