//! D-28, the cooperative budget: a coroutine whose I/O keeps completing
//! without suspending gives the loop back after a bounded number of
//! operations, and the reactor is polled before it runs again, so another
//! connection's data and other coroutines are served meanwhile. No timing:
//! the tests count what ran while the busy coroutine was still busy.

use std::cell::Cell;
use std::io::{Read, Write};
use std::rc::Rc;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{run, spawn, suspend};
use tests::support::{run_child_keeping, yield_until_waiting};

const PROBE: &str = env!("CARGO_BIN_EXE_runtime_probe");

/// A connected pair: (client, server side).
fn pair(listener: &TcpListener) -> (TcpStream, TcpStream) {
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (conn, _) = listener.accept().unwrap();
    (client, conn)
}

/// Writes `n` one-byte messages, all of which fit in the socket buffers,
/// so each completes at once on a readiness reactor.
fn busy_writer(mut s: TcpStream, n: usize, done: Rc<Cell<bool>>) -> impl FnOnce() {
    move || {
        for _ in 0..n {
            s.write_all(b"x").unwrap();
        }
        done.set(true);
    }
}

#[test]
fn d28_a_coroutine_whose_writes_never_wait_still_lets_others_run() {
    run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (_peer, conn) = pair(&listener);
        let done = Rc::new(Cell::new(false));
        let ran_meanwhile = Rc::new(Cell::new(0u32));
        let (d, r) = (done.clone(), ran_meanwhile.clone());
        let ticker = spawn(move || {
            while !d.get() {
                r.set(r.get() + 1);
                suspend().unwrap();
            }
        });
        let writer = spawn(busy_writer(conn, 20_000, done.clone()));
        writer.join().unwrap();
        ticker.join().unwrap();
        // 20,000 inline writes: at least one turn of the ticker per budget.
        assert!(
            ran_meanwhile.get() >= 20,
            "the ticker ran {} times during 20,000 writes",
            ran_meanwhile.get()
        );
    })
    .unwrap();
}

#[test]
fn d28_another_connections_data_is_served_while_one_coroutine_stays_busy() {
    run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (_busy_peer, busy) = pair(&listener);
        let (mut quiet_peer, quiet) = pair(&listener);
        let done = Rc::new(Cell::new(false));
        let served_while_busy = Rc::new(Cell::new(None));
        let (d, s) = (done.clone(), served_while_busy.clone());
        // An echo on the quiet connection, waiting for the reactor to say
        // its data is there.
        let echo = spawn(move || {
            let mut quiet = quiet;
            let mut buf = [0u8; 2];
            quiet.read_exact(&mut buf).unwrap();
            s.set(Some(!d.get()));
            quiet.write_all(&buf).unwrap();
        });
        yield_until_waiting(&[&echo.coroutine()]);
        quiet_peer.write_all(b"hi").unwrap();
        let writer = spawn(busy_writer(busy, 20_000, done));
        let mut back = [0u8; 2];
        quiet_peer.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"hi");
        echo.join().unwrap();
        writer.join().unwrap();
        assert_eq!(
            served_while_busy.get(),
            Some(true),
            "the echo was served only after the busy writer finished"
        );
    })
    .unwrap();
}

#[test]
fn d28_a_retry_loop_over_a_failing_accept_lets_a_timer_run_and_then_recovers() {
    // In a child process: it uses up every descriptor it has.
    let out = run_child_keeping(PROBE, &["emfile"], &[], true);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        out.stdout.lines().next(),
        Some("connect: errno Some(24)"),
        "a connect without descriptors is EMFILE"
    );
    let line = out.stdout.lines().last().unwrap_or_default();
    assert!(line.starts_with("accepted 3 after "), "{line}");
    let failures: u64 = line
        .trim_start_matches("accepted 3 after ")
        .trim_end_matches(" failures")
        .parse()
        .unwrap();
    assert!(failures >= 1_000, "{line}");
}
