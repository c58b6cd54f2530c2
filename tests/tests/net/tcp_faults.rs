//! Faults a server meets, on every backend: a peer that resets, a peer that
//! half-closes, signals arriving while coroutines block in I/O, partial
//! writes to a slow reader, a slow writer. Each surfaces as std would say
//! it (the same `io::ErrorKind`), loses no byte, and leaves the runtime
//! serving.

use std::cell::Cell;
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::rc::Rc;
use std::time::Duration;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{delay, run, signal, spawn, suspend};
use tests::support::{yield_until, yield_until_waiting};

/// A connected pair: (client, server side).
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (conn, _) = listener.accept().unwrap();
    (client, conn)
}

/// A byte pattern that shows a lost, repeated or reordered byte.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

#[test]
fn a_peer_reset_is_connection_reset_then_the_stream_refuses_writes() {
    run(|| {
        let (client, mut conn) = pair();
        // SO_LINGER 0: closing sends a reset, not a FIN.
        socket2::SockRef::from(&client)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        let reader = spawn(move || {
            let mut buf = [0u8; 16];
            let err = conn.read(&mut buf).unwrap_err();
            let after = conn.write_all(b"late").unwrap_err();
            (err.kind(), after.kind())
        });
        yield_until_waiting(&[&reader.coroutine()]);
        drop(client);
        let (read, write) = reader.join().unwrap();
        assert_eq!(read, ErrorKind::ConnectionReset);
        assert!(
            matches!(write, ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
            "{write:?}"
        );
    })
    .unwrap();
}

#[test]
fn a_half_closed_peer_reads_the_end_and_still_gets_the_answer() {
    run(|| {
        let (mut client, mut conn) = pair();
        let server = spawn(move || {
            let mut request = Vec::new();
            conn.read_to_end(&mut request).unwrap(); // ends at the peer's FIN
            conn.write_all(&request.iter().rev().copied().collect::<Vec<_>>())
                .unwrap();
            request.len()
        });
        client.write_all(b"abcdef").unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).unwrap();
        assert_eq!(answer, b"fedcba");
        assert_eq!(server.join().unwrap(), 6);
    })
    .unwrap();
}

#[test]
fn signals_during_blocking_reads_interrupt_nothing() {
    // The reactor sees the signal (EINTR in its wait is its business); the
    // coroutines blocked in I/O see neither an error nor a spurious return.
    run(|| {
        // Kept for the whole test, so the disposition stays the runtime's
        // between the watcher's one-shot watches.
        let _keep = signal::signal(signal::SIGUSR1).unwrap();
        let (mut client, mut conn) = pair();
        let reader = spawn(move || {
            let mut buf = [0u8; 5];
            conn.read_exact(&mut buf).map(|()| buf)
        });
        let (armed, seen) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let (a, s) = (armed.clone(), seen.clone());
        let watcher = spawn(move || {
            for i in 1..=5 {
                let usr1 = signal::signal(signal::SIGUSR1).unwrap();
                a.set(i);
                usr1.wait().unwrap();
                s.set(i);
            }
        });
        yield_until_waiting(&[&reader.coroutine()]);
        for i in 1..=5 {
            yield_until(|| armed.get() == i && watcher.coroutine().is_suspended());
            // SAFETY: `raise` sends a signal to this thread; the runtime's
            // signal watch handles SIGUSR1, so it does not end the process.
            assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
            yield_until(|| seen.get() == i);
        }
        assert!(!reader.is_finished(), "a signal ended the read early");
        client.write_all(b"hello").unwrap();
        assert_eq!(&reader.join().unwrap().unwrap(), b"hello");
        watcher.join().unwrap();
    })
    .unwrap();
}

#[test]
fn partial_writes_to_a_slow_reader_lose_and_repeat_nothing() {
    run(|| {
        let (mut client, conn) = pair();
        let data = pattern(8 << 20);
        let expected = data.clone();
        // 8 MiB is far beyond the socket buffers: the writer's requests
        // complete partially and wait for the reader.
        let writer = spawn(move || {
            let mut conn = conn;
            conn.write_all(&data).unwrap();
        });
        let mut got = Vec::with_capacity(expected.len());
        let mut buf = [0u8; 4096];
        while got.len() < expected.len() {
            let n = client.read(&mut buf).unwrap();
            assert!(n > 0, "early end of stream at {}", got.len());
            got.extend_from_slice(&buf[..n]);
            suspend().unwrap(); // a slow reader: let the writer run
        }
        writer.join().unwrap();
        assert!(got == expected, "the bytes differ");
    })
    .unwrap();
}

#[test]
fn a_slow_writer_is_read_in_order_across_many_small_arrivals() {
    run(|| {
        let (client, mut conn) = pair();
        let data = pattern(2000);
        let expected = data.clone();
        let writer = spawn(move || {
            let mut client = client;
            for chunk in data.chunks(7) {
                client.write_all(chunk).unwrap();
                delay(0).unwrap();
            }
        });
        let mut got = vec![0u8; expected.len()];
        conn.read_exact(&mut got).unwrap();
        writer.join().unwrap();
        assert_eq!(got, expected);
    })
    .unwrap();
}
