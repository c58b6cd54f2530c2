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
