//! `echo2`: the TCP echo of `echo.rs` against servers on several threads:
//! this runtime with 1 and 2 loops (`run_per_core`, a `SO_REUSEPORT`
//! listener per loop), tokio's multi-thread runtime with 2 workers (one
//! listener, work stealing), and monoio with 2 threads (a runtime and a
//! `SO_REUSEPORT` listener per thread).
//!
//! What is timed: as in `echo.rs` (`CONNS` connections, one `MSG`-byte
//! request in flight each, the same single-threaded mio load generator, a
//! `WINDOW`-long window after a warm-up round). Nothing is pinned: with 2
//! server threads and the client on 2 cores, every thread competes with
//! every other, so the request rate is bounded by the machine, not the
//! server. The columns are therefore the request rate, the CPU time of all
//! server threads per request (summed from each thread's
//! `/proc/self/task/<tid>/schedstat`), and the client's own CPU time per
//! request: with the client's CPU set aside, the servers could sustain
//! `1e9 / (server CPU ns/req)` requests per second per core they use.
//!
//! Excluded: start-up, connection set-up, teardown.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Token};

use crate::echo::{cpu_ns, echo_conn, thread_id, CONNS, MSG, WINDOW};

/// What a server thread reports before the load starts.
pub(crate) enum Ready {
    /// A server thread's id (its CPU time counts).
    Thread(i32),
    /// A listener is accepting at this address.
    Listening(SocketAddr),
}

/// A server to measure: it reports every thread and listener, then serves
/// until the process ends.
pub(crate) type Server = Box<dyn FnOnce(mpsc::Sender<Ready>) + Send>;

/// What was measured for one server.
pub(crate) struct Measured {
    pub(crate) rps: f64,
    /// CPU ns of all server threads per request.
    pub(crate) server_ns_per_req: f64,
    /// CPU ns of the load generator per request.
    pub(crate) client_ns_per_req: f64,
}

fn cpu_of(tids: &[i32]) -> u64 {
    tids.iter().map(|&t| cpu_ns(t)).sum()
}

/// Starts `serve` on its own thread, waits for `threads` server threads
/// and `listeners` listeners, and drives it from this thread.
pub(crate) fn measure(serve: Server, threads: usize, listeners: usize) -> Measured {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || serve(tx));
    // Every listener must be accepting before the first connect, or the
    // kernel would not spread connections over them.
    let (mut tids, mut addrs) = (Vec::new(), Vec::new());
    while tids.len() < threads || addrs.len() < listeners {
        match rx
            .recv_timeout(Duration::from_secs(10))
            .expect("server ready")
        {
            Ready::Thread(t) => tids.push(t),
            Ready::Listening(a) => addrs.push(a),
        }
    }
    drive(addrs[0], &tids).expect("load generator")
}

/// The load generator of `echo.rs`, summing the CPU of every server thread.
fn drive(addr: SocketAddr, tids: &[i32]) -> io::Result<Measured> {
    let me = thread_id();
    let mut poll = Poll::new()?;
    let mut conns = Vec::with_capacity(CONNS);
    for i in 0..CONNS {
        let std_stream = std::net::TcpStream::connect(addr)?;
        std_stream.set_nodelay(true)?;
        std_stream.set_nonblocking(true)?;
        let mut s = MioStream::from_std(std_stream);
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE)?;
        conns.push((s, 0usize));
    }
    let msg = [b'x'; MSG];
    let mut events = Events::with_capacity(1024);
    let mut buf = [0u8; 4096];
    for (s, _) in &mut conns {
        s.write_all(&msg)?;
    }
    let (mut done, mut measured) = (0u64, 0u64);
    let mut start: Option<(Instant, u64, u64)> = None;
    loop {
        poll.poll(&mut events, Some(Duration::from_millis(100)))?;
        for ev in events.iter() {
            let (s, got) = &mut conns[ev.token().0];
            loop {
                match s.read(&mut buf) {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "server closed",
                        ))
                    }
                    Ok(n) => {
                        *got += n;
                        while *got >= MSG {
                            *got -= MSG;
                            done += 1;
                            if start.is_some() {
                                measured += 1;
                            }
                            let mut rest = &msg[..];
                            while !rest.is_empty() {
                                match s.write(rest) {
                                    Ok(n) => rest = &rest[n..],
                                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                                        std::hint::spin_loop()
                                    }
                                    Err(e) => return Err(e),
                                }
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
        if start.is_none() && done >= CONNS as u64 {
            start = Some((Instant::now(), cpu_of(tids), cpu_ns(me)));
        }
        if let Some((t, server0, client0)) = start {
            if t.elapsed() >= WINDOW {
                let n = measured.max(1) as f64;
                return Ok(Measured {
                    rps: measured as f64 / t.elapsed().as_secs_f64(),
                    server_ns_per_req: cpu_of(tids).saturating_sub(server0) as f64 / n,
                    client_ns_per_req: cpu_ns(me).saturating_sub(client0) as f64 / n,
                });
            }
        }
    }
}

/// A free loopback address for a group of `SO_REUSEPORT` listeners, and
/// the socket that holds it (bound, not listening) while they bind.
pub(crate) fn reserve() -> (socket2::Socket, SocketAddr) {
    let s =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    s.set_reuse_port(true).expect("SO_REUSEPORT");
    s.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .expect("bind");
    let addr = s.local_addr().unwrap().as_socket().unwrap();
    (s, addr)
}

/// This runtime on `loops` loops: a `SO_REUSEPORT` listener and a
/// coroutine per connection on each.
pub(crate) fn ours(reactor: &'static str, loops: usize) -> Server {
    Box::new(move |tx| {
        let (_held, addr) = reserve();
        let tx = Arc::new(Mutex::new(tx));
        async_std_api::Builder::new()
            .reactor(reactor)
            .threads(loops)
            .run_per_core(move |_| {
                let listener = async_std_api::net::TcpListener::bind_reuseport(addr).expect("bind");
                {
                    let tx = tx.lock().unwrap();
                    tx.send(Ready::Thread(thread_id())).expect("ready");
                    tx.send(Ready::Listening(addr)).expect("ready");
                }
                loop {
                    let (conn, _) = listener.accept().expect("accept");
                    conn.set_nodelay(true).expect("nodelay");
                    async_std_api::spawn(move || echo_conn(conn));
                }
            })
            .expect("runtime");
    })
}

/// tokio's multi-thread runtime, `workers` workers: one listener, a task
/// per connection, work stealing between the workers.
pub(crate) fn tokio_multi(workers: usize) -> Server {
    Box::new(move |tx| {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let started = Mutex::new(tx.clone());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .on_thread_start(move || {
                let _ = started.lock().unwrap().send(Ready::Thread(thread_id()));
            })
            .build()
            .expect("tokio");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(Ready::Listening(listener.local_addr().expect("addr")))
                .expect("ready");
            loop {
                let (mut conn, _) = listener.accept().await.expect("accept");
                conn.set_nodelay(true).expect("nodelay");
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    loop {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                if conn.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                });
            }
        });
    })
}

/// monoio on io_uring, `threads` threads: a runtime and a `SO_REUSEPORT`
/// listener per thread, a task per connection.
pub(crate) fn monoio_multi(threads: usize) -> Server {
    Box::new(move |tx| {
        let (_held, addr) = reserve();
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let tx = tx.clone();
                std::thread::spawn(move || monoio_thread(addr, tx))
            })
            .collect();
        for h in handles {
            let _ = h.join();
        }
    })
}

fn monoio_thread(addr: SocketAddr, tx: mpsc::Sender<Ready>) {
    use monoio::buf::IoBuf;
    use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .build()
        .expect("monoio (io_uring)");
    rt.block_on(async move {
        let opts = monoio::net::ListenerOpts::default().reuse_port(true);
        let listener = monoio::net::TcpListener::bind_with_config(addr, &opts).expect("bind");
        tx.send(Ready::Thread(thread_id())).expect("ready");
        tx.send(Ready::Listening(addr)).expect("ready");
        loop {
            let (mut conn, _) = listener.accept().await.expect("accept");
            conn.set_nodelay(true).expect("nodelay");
            monoio::spawn(async move {
                let mut buf = Vec::with_capacity(4096);
                loop {
                    let (res, b) = conn.read(buf).await;
                    let n = match res {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let (res, slice) = conn.write_all(b.slice(0..n)).await;
                    buf = slice.into_inner();
                    if res.is_err() {
                        break;
                    }
                }
            });
        }
    });
}
