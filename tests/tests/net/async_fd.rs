//! D-33: `io::Async`, readiness on any descriptor.

use std::cell::Cell;
use std::io::{Read, Write};
use std::rc::Rc;

use async_std_api::io::Async;
use async_std_api::{io, run, spawn};
use tests::support::{join_cancelled, yield_until_waiting};

#[test]
fn d33_a_pipe_made_by_std_suspends_its_reader_until_data_then_sees_eof() {
    run(|| {
        let (r, w) = std::io::pipe().unwrap();
        let mut r = Async::new(r).unwrap();
        let mut w = Async::new(w).unwrap();
        let reader = spawn(move || {
            let mut all = Vec::new();
            r.read_to_end(&mut all).unwrap(); // waits, then EOF when the writer goes
            all
        });
        yield_until_waiting(&[&reader.coroutine()]);
        w.write_all(b"through a pipe").unwrap();
        drop(w);
        assert_eq!(reader.join().unwrap(), b"through a pipe");
    })
    .unwrap();
}

#[test]
fn d33_readable_and_writable_report_readiness() {
    run(|| {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let (a, b) = (Async::new(a).unwrap(), Rc::new(Async::new(b).unwrap()));
        a.writable().unwrap(); // an empty socket buffer: at once
        let b1 = b.clone();
        let waiter = spawn(move || b1.readable().unwrap());
        yield_until_waiting(&[&waiter.coroutine()]);
        (&a).write_all(b"!").unwrap();
        waiter.join().unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(b.read_with(|mut s| s.read(&mut buf)).unwrap(), 1);
        let inner = Rc::try_unwrap(b).unwrap().into_inner().unwrap();
        let mut one = [0u8; 1];
        // Still non-blocking after into_inner: nothing to read is WouldBlock.
        let e = (&inner).read(&mut one).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    })
    .unwrap();
}

#[test]
fn d33_a_cancelled_wait_takes_nothing() {
    run(|| {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let (a, b) = (Async::new(a).unwrap(), Rc::new(Async::new(b).unwrap()));
        let seen = Rc::new(Cell::new(false));
        let (b1, s) = (b.clone(), seen.clone());
        let reader = spawn(move || {
            let mut buf = [0u8; 8];
            let e = b1.read_with(|mut s| s.read(&mut buf)).unwrap_err();
            s.set(io::cancelled(&e).is_some());
        });
        yield_until_waiting(&[&reader.coroutine()]);
        reader.cancel();
        join_cancelled(reader);
        assert!(seen.get());
        (&a).write_all(b"data").unwrap();
        let mut buf = [0u8; 8];
        let n = b.read_with(|mut s| s.read(&mut buf)).unwrap();
        assert_eq!(&buf[..n], b"data");
    })
    .unwrap();
}

#[test]
fn d33_descriptor_numbers_reused_after_a_drop_are_watched_afresh() {
    run(|| {
        // Each round's descriptors reuse the previous round's numbers; the
        // descriptor also stays open through a duplicate, so the kernel
        // would keep a registration made on the user's own number (RD5).
        let mut kept = Vec::new();
        for round in 0..4u8 {
            let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
            kept.push(b.try_clone().unwrap());
            let b = Async::new(b).unwrap();
            let reader = spawn(move || {
                let mut buf = [0u8; 1];
                b.read_with(|mut s| s.read(&mut buf)).unwrap();
                buf[0]
            });
            yield_until_waiting(&[&reader.coroutine()]);
            (&a).write_all(&[round]).unwrap();
            assert_eq!(reader.join().unwrap(), round);
        }
    })
    .unwrap();
}

/// RD7 (R-POLL-8 of `docs/abi/poll.md`): readiness that came back between
/// the reader's `EAGAIN` and its wait, before the loop looked, wakes it. A
/// level-triggered reactor (`reactor-poll`) cannot see that the host read
/// to `EAGAIN`; the host re-arms the watch before it waits, or the refill
/// would never be reported.
#[test]
fn d33_readiness_back_between_eagain_and_the_wait_wakes_the_reader() {
    run(|| {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let (a, b) = (Rc::new(a), Async::new(b).unwrap());
        (&*a).write_all(b"1").unwrap();
        b.readable().unwrap(); // reported: a level reactor now masks it
        let peer = a.clone();
        let reader = spawn(move || {
            let mut attempts = Vec::new();
            let got = b.read_with(|mut s| {
                let mut buf = [0u8; 8];
                attempts.push(attempts.len());
                if attempts.len() == 1 {
                    // Read the first byte and on to EAGAIN, then the peer
                    // writes again before this coroutine waits.
                    assert_eq!(s.read(&mut buf)?, 1);
                    let e = s.read(&mut buf).unwrap_err();
                    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
                    (&*peer).write_all(b"2").unwrap();
                    return Err(e);
                }
                s.read(&mut buf).map(|n| buf[..n].to_vec())
            });
            (got.unwrap(), attempts.len())
        });
        let done = reader.join_until(&async_std_api::time::timeout(30_000));
        assert_eq!(
            done.expect("the refilled socket was never reported"),
            (b"2".to_vec(), 2)
        );
    })
    .unwrap();
}
