//! D-42, stream lanes: on a reactor that completes requests inline, a read
//! or write whose direction last completed without waiting runs as a system
//! call in the host, and `EAGAIN` hands it to the reactor. The tests drive
//! each direction back and forth between the two (a full send buffer, a
//! reader that outruns its writer) and check what arrives: every byte, in
//! order, then EOF; a write that waits is not overtaken by a later one; a
//! cancelled wait leaves the direction usable.

use std::cell::{Cell, RefCell};
use std::io::{ErrorKind, Read, Write};
use std::rc::Rc;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{run, spawn, suspend};
use tests::support::{join_cancelled, yield_until};

/// A connected pair: (client, server side).
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (conn, _) = listener.accept().unwrap();
    (client, conn)
}

/// The `i`th byte of the test stream: a pattern whose period (251, prime)
/// does not divide any chunk size, so a lost, repeated or reordered chunk
/// shows.
fn byte(i: usize) -> u8 {
    (i % 251) as u8
}

#[test]
fn d42_every_byte_arrives_in_order_while_both_directions_switch_paths() {
    const TOTAL: usize = 4 << 20;
    run(|| {
        let (mut client, mut conn) = pair();
        let paused = Rc::new(Cell::new(0u32));
        let p = paused.clone();
        // The writer outruns the reader (its send buffer fills: writes wait
        // in the reactor) and then the reader outruns it (reads wait).
        let writer = spawn(move || {
            let mut chunk = vec![0u8; 65_536];
            let mut sent = 0;
            while sent < TOTAL {
                let n = chunk.len().min(TOTAL - sent);
                for (k, b) in chunk[..n].iter_mut().enumerate() {
                    *b = byte(sent + k);
                }
                client.write_all(&chunk[..n]).unwrap();
                sent += n;
                if sent % (1 << 20) == 0 {
                    // Let the reader drain and then wait for more.
                    p.set(p.get() + 1);
                    for _ in 0..8 {
                        suspend().unwrap();
                    }
                }
            }
            sent
        });
        let mut got = 0;
        let mut buf = vec![0u8; 7_001];
        loop {
            let n = conn.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            for (k, b) in buf[..n].iter().enumerate() {
                assert_eq!(*b, byte(got + k), "byte {} of the stream", got + k);
            }
            got += n;
            if got >= TOTAL {
                break;
            }
        }
        assert_eq!(writer.join().unwrap(), TOTAL);
        assert_eq!(got, TOTAL);
        assert!(
            paused.get() >= 3,
            "the writer paused {} times",
            paused.get()
        );
        // EOF once the writer (and its stream) is gone, through whichever
        // path the read lane is on.
        assert_eq!(conn.read(&mut buf).unwrap(), 0);
    })
    .unwrap();
}

/// Yields until `c` waits in a write request (not in a budget give-back
/// or anything else a plain "suspended" would also match).
fn wait_in_write(c: &async_std_api::Coroutine) {
    yield_until(|| {
        c.awaiting_info()
            .is_some_and(|what| what.starts_with("write fd"))
    });
}

/// The first writer's bytes: far more than the socket buffers hold.
const BIG: usize = 16 << 20;

#[test]
fn d42_a_write_queued_behind_a_waiting_write_is_not_overtaken() {
    run(|| {
        let (client, mut conn) = pair();
        let client = Rc::new(client);
        // The first writer's completed writes: (bytes, whether the write
        // started before the second write was queued).
        let writes = Rc::new(RefCell::new(Vec::new()));
        let queued = Rc::new(Cell::new(false));
        let big: Vec<u8> = vec![b'a'; BIG];
        let (c1, w1, q1) = (client.clone(), writes.clone(), queued.clone());
        // The first writer fills the socket: one of its writes waits in the
        // reactor with most of its buffer unsent (on a completion reactor,
        // its very first one).
        let first = spawn(move || {
            let mut rest = &big[..];
            while !rest.is_empty() {
                let before = !q1.get();
                let n = (&*c1).write(rest).unwrap();
                w1.borrow_mut().push((n, before));
                rest = &rest[n..];
            }
        });
        wait_in_write(&first.coroutine());
        // A second write on the same direction while that one waits: it
        // queues behind it.
        let c2 = client.clone();
        let second = spawn(move || (&*c2).write_all(b"Z").unwrap());
        wait_in_write(&second.coroutine());
        queued.set(true);
        // Read everything: the first writer's 16 MiB and the `Z`.
        let mut seen = 0usize;
        let mut z_at = None;
        let mut buf = vec![0u8; 1 << 16];
        while seen < BIG + 1 {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "EOF after {seen} bytes");
            if let Some(i) = buf[..n].iter().position(|b| *b == b'Z') {
                z_at = Some(seen + i);
            }
            seen += n;
        }
        first.join().unwrap();
        second.join().unwrap();
        // The `Z` sits right after the bytes of every write that had
        // started before it was queued, the waiting one included: not
        // before them (overtaken), not later (held back).
        let z_at = z_at.expect("the second write arrived");
        let writes = writes.borrow();
        let before: usize = writes.iter().filter(|w| w.1).map(|w| w.0).sum();
        assert!(writes.iter().any(|w| !w.1), "some writes came after the Z");
        assert_eq!(z_at, before, "the first writer's writes: {writes:?}");
    })
    .unwrap();
}

#[test]
fn d42_a_cancelled_waiting_read_leaves_the_direction_usable() {
    run(|| {
        let (mut client, conn) = pair();
        let conn = Rc::new(conn);
        let c = conn.clone();
        let reader = spawn(move || {
            let mut buf = [0u8; 16];
            (&*c).read(&mut buf)
        });
        yield_until(|| reader.coroutine().is_suspended());
        reader.cancel();
        join_cancelled(reader);
        // Data written after the cancellation is read whole, by a direct
        // call or a reactor wait alike.
        client.write_all(b"after").unwrap();
        let mut buf = [0u8; 16];
        let n = (&*conn).read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"after");
        client.write_all(b"again").unwrap();
        let n = (&*conn).read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"again");
        // A reset peer is the same error on either path.
        drop(client);
        let n = (&*conn).read(&mut buf).unwrap();
        assert_eq!(n, 0);
        let err = loop {
            match (&*conn).write(b"x") {
                Ok(n) => {
                    assert_eq!(n, 1);
                    suspend().unwrap();
                }
                Err(e) => break e,
            }
        };
        assert!(
            matches!(
                err.kind(),
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
            ),
            "{err}"
        );
    })
    .unwrap();
}
