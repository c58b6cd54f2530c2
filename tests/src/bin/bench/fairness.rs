//! `fairness`: one connection streams at full speed while another sends a
//! 2-byte echo every 20 ms; what is measured is the small echo's round
//! trip (median, p99, max), the time a quiet connection waits behind a busy
//! one (D-28, the cooperative budget).
//!
//! The server (the same echo servers as `echo.rs`: a coroutine or task per
//! connection, read then write back) runs on CPU 0. The streaming client
//! writes 64 KiB buffers from one thread and reads the echoes from
//! another, without pause; the prober sends its 2 bytes, waits for them,
//! and sleeps until the next 20 ms tick. Excluded: start-up, connection
//! set-up, the first 200 ms.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::echo::{pin_scoped, pin_to_cpu};

/// How long probes are taken.
const WINDOW: Duration = Duration::from_secs(5);
/// Time between probes.
const EVERY: Duration = Duration::from_millis(20);

/// Round-trip latency of the small echo, in µs.
pub(crate) struct Latency {
    pub(crate) median_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) max_us: f64,
    pub(crate) probes: usize,
}

/// Starts `serve` on CPU 0, streams through one connection and probes
/// another (see the module doc).
pub(crate) fn measure(serve: impl FnOnce(mpsc::Sender<SocketAddr>) + Send + 'static) -> Latency {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        pin_to_cpu(0);
        serve(tx);
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server address");
    let _pinned = pin_scoped(1);
    let stop = Arc::new(AtomicBool::new(false));

    // The streaming connection: full duplex, no pause.
    let stream = TcpStream::connect(addr).expect("connect");
    let mut reader = stream.try_clone().expect("clone");
    let mut writer = stream;
    let s = stop.clone();
    let w = std::thread::spawn(move || {
        pin_to_cpu(1);
        let chunk = vec![b's'; 64 * 1024];
        while !s.load(Ordering::Relaxed) {
            if writer.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = writer.shutdown(std::net::Shutdown::Write);
    });
    let r = std::thread::spawn(move || {
        pin_to_cpu(1);
        let mut buf = vec![0u8; 64 * 1024];
        while reader.read(&mut buf).is_ok_and(|n| n > 0) {}
    });

    // The prober.
    let mut probe = TcpStream::connect(addr).expect("connect");
    probe.set_nodelay(true).expect("nodelay");
    std::thread::sleep(Duration::from_millis(200));
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut next = started;
    let mut back = [0u8; 2];
    while started.elapsed() < WINDOW {
        let t = Instant::now();
        probe.write_all(b"hi").expect("probe write");
        probe.read_exact(&mut back).expect("probe read");
        samples.push(t.elapsed().as_secs_f64() * 1e6);
        next += EVERY;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = w.join();
    let _ = r.join();
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Latency {
        median_us: at(0.5),
        p99_us: at(0.99),
        max_us: *samples.last().unwrap_or(&0.0),
        probes: samples.len(),
    }
}
