//! Races on a stream: data and a cancellation arriving together (P-08),
//! and two readers of one stream (P-22). Nothing is lost, nothing is
//! delivered twice, whichever way the reactor orders them.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::rc::Rc;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{io, run, spawn};
use tests::support::{yield_until, yield_until_waiting};

/// A connected pair: (client, server side).
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (conn, _) = listener.accept().unwrap();
    (client, conn)
}

#[test]
fn p08_data_and_a_cancellation_in_the_same_tick_lose_nothing() {
    // The reader blocks in `read`; in one tick (no suspension between) the
    // peer's data lands and the reader is cancelled. Depending on the
    // reactor the read returns the data (the cancellation then comes at the
    // next suspension point) or the cancellation (the data then waits in
    // the socket): either way the reader sees every byte once and the
    // cancellation once.
    let got: Rc<RefCell<(Vec<u8>, usize)>> = Rc::default();
    let (g, seen) = (got.clone(), got.clone());
    run(move || {
        let (mut client, mut conn) = pair();
        let reader = spawn(move || {
            let mut buf = [0u8; 64];
            loop {
                match conn.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => g.borrow_mut().0.extend_from_slice(&buf[..n]),
                    Err(e) => {
                        assert!(io::cancelled(&e).is_some(), "{e}");
                        g.borrow_mut().1 += 1;
                    }
                }
            }
        });
        yield_until_waiting(&[&reader.coroutine()]);
        client.write_all(b"hello").unwrap();
        reader.cancel();
        // The reader goes on after its cancellation (edge-triggered) and
        // reads to the end of the stream.
        yield_until(|| seen.borrow().1 == 1);
        client.write_all(b", world").unwrap();
        drop(client);
        let _ = reader.join();
    })
    .unwrap();
    let (bytes, cancellations) = &*got.borrow();
    assert_eq!(bytes.as_slice(), b"hello, world");
    assert_eq!(*cancellations, 1);
}

#[test]
fn p22_two_readers_of_one_stream_each_get_only_their_own_bytes() {
    // Two coroutines block in `read` on the same stream with one-byte
    // buffers. The peer writes one byte, waits until one reader has it,
    // then writes the next: a wake-up meant for one reader must not make
    // the other return early, empty or with the same byte.
    let got: Rc<RefCell<Vec<(usize, u8)>>> = Rc::default();
    run({
        let got = got.clone();
        move || {
            let (mut client, conn) = pair();
            let conn = Rc::new(conn);
            let readers: Vec<_> = (0..2)
                .map(|i| {
                    let (conn, got) = (conn.clone(), got.clone());
                    spawn(move || {
                        let mut byte = [0u8; 1];
                        let n = (&*conn).read(&mut byte).unwrap();
                        assert_eq!(n, 1, "reader {i} woke without its byte");
                        got.borrow_mut().push((i, byte[0]));
                    })
                })
                .collect();
            yield_until_waiting(&[&readers[0].coroutine(), &readers[1].coroutine()]);
            client.write_all(b"x").unwrap();
            yield_until(|| got.borrow().len() == 1);
            // The other reader is still waiting, not finished by a stray
            // wake-up.
            let waiting = readers.iter().filter(|r| !r.is_finished()).count();
            assert_eq!(waiting, 1);
            client.write_all(b"y").unwrap();
            for r in readers {
                r.join().unwrap();
            }
        }
    })
    .unwrap();
    let got = got.borrow();
    let mut bytes: Vec<u8> = got.iter().map(|(_, b)| *b).collect();
    bytes.sort();
    assert_eq!(bytes, b"xy");
    assert_ne!(got[0].0, got[1].0, "one byte per reader");
}
