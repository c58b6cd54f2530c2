//! `udp` and `blocking`: the event kinds of issue 9 against tokio.
//!
//! - UDP round trip: two coroutines (tasks) of one runtime bounce a 64-byte
//!   datagram between two loopback sockets (ns per round trip). Ours on
//!   each reactor; tokio current-thread with its I/O driver.
//! - `spawn_blocking` round trip: hand `|| 1` to the blocking pool and wait
//!   for it, one at a time (ns per round trip): the thread hand-off both
//!   ways and the loop's wake-up. Ours on each reactor (the pool reports
//!   through the reactor's trigger); tokio current-thread's
//!   `spawn_blocking`.
//!
//! Excluded: runtime start-up and teardown; the median of several runs.

use std::time::Instant;

use async_std_api::net::UdpSocket;
use async_std_api::{spawn, spawn_blocking, Builder};

use crate::report::{median, NsPerOp};

const REPS: usize = 5;

fn ours<T: 'static>(reactor: &str, f: impl FnOnce() -> T + 'static) -> T {
    Builder::new().reactor(reactor).run(f).expect("runtime")
}

fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// UDP ping-pong on `reactor`.
pub(crate) fn ours_udp(reactor: &'static str, iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        ours(reactor, move || {
            let a = UdpSocket::bind("127.0.0.1:0").expect("bind");
            let b = UdpSocket::bind("127.0.0.1:0").expect("bind");
            a.connect(b.local_addr().expect("addr")).expect("connect");
            b.connect(a.local_addr().expect("addr")).expect("connect");
            let echo = spawn(move || {
                let mut buf = [0u8; 64];
                for _ in 0..iters {
                    let n = b.recv(&mut buf).expect("recv");
                    b.send(&buf[..n]).expect("send");
                }
            });
            let msg = [7u8; 64];
            let mut buf = [0u8; 64];
            let start = Instant::now();
            for _ in 0..iters {
                a.send(&msg).expect("send");
                a.recv(&mut buf).expect("recv");
            }
            let t = start.elapsed();
            echo.join().expect("echo");
            t
        })
    })
}

/// UDP ping-pong on tokio.
pub(crate) fn tokio_udp(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        tokio_rt().block_on(async move {
            let a = tokio::net::UdpSocket::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let b = tokio::net::UdpSocket::bind("127.0.0.1:0")
                .await
                .expect("bind");
            a.connect(b.local_addr().expect("addr"))
                .await
                .expect("connect");
            b.connect(a.local_addr().expect("addr"))
                .await
                .expect("connect");
            let echo = tokio::spawn(async move {
                let mut buf = [0u8; 64];
                for _ in 0..iters {
                    let n = b.recv(&mut buf).await.expect("recv");
                    b.send(&buf[..n]).await.expect("send");
                }
            });
            let msg = [7u8; 64];
            let mut buf = [0u8; 64];
            let start = Instant::now();
            for _ in 0..iters {
                a.send(&msg).await.expect("send");
                a.recv(&mut buf).await.expect("recv");
            }
            let t = start.elapsed();
            echo.await.expect("echo");
            t
        })
    })
}

/// `spawn_blocking` round trips on `reactor`.
pub(crate) fn ours_blocking(reactor: &'static str, iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        ours(reactor, move || {
            // Warm the pool: its first thread starts on demand.
            spawn_blocking(|| 1u64).join().expect("warm");
            let start = Instant::now();
            let mut sum = 0;
            for _ in 0..iters {
                sum += spawn_blocking(|| 1u64).join().expect("blocking");
            }
            assert_eq!(sum, iters);
            start.elapsed()
        })
    })
}

/// `spawn_blocking` round trips on tokio.
pub(crate) fn tokio_blocking(iters: u64) -> NsPerOp {
    median(REPS, iters, || {
        tokio_rt().block_on(async move {
            tokio::task::spawn_blocking(|| 1u64).await.expect("warm");
            let start = Instant::now();
            let mut sum = 0;
            for _ in 0..iters {
                sum += tokio::task::spawn_blocking(|| 1u64)
                    .await
                    .expect("blocking");
            }
            assert_eq!(sum, iters);
            start.elapsed()
        })
    })
}
