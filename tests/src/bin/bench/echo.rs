//! `echo`: a TCP echo server over loopback under load.
//!
//! What is timed: the number of request/response round trips completed in a
//! fixed window by `CONNS` client connections, each sending a `MSG`-byte
//! message and waiting for its echo before sending the next (so each
//! connection has one request in flight). The server runs on one core, in
//! one thread; the load generator runs on the other core, in another thread,
//! and is the same for every server: a single-threaded mio loop, so the
//! client's own cost is identical across rows. On two cores the client can
//! be the bottleneck, so each row also reports the server thread's CPU time
//! per request (from `/proc/self/task/<tid>/schedstat`): the server's own
//! efficiency, whoever saturates first.
//!
//! The servers take turns, a window each on new connections, seven rounds;
//! of a server's seven windows the one with the median server CPU per
//! request is kept (see [`measure_in_turns`]).
//!
//! Excluded: server start-up, connection set-up (all connections are made
//! and warmed before the window opens) and teardown.
//!
//! Servers: this runtime on the mio reactor and on the io_uring reactor (a
//! coroutine per connection, plain blocking `read`/`write_all`), tokio's
//! current-thread runtime (a task per connection), and monoio on io_uring
//! (a task per connection, its ownership-passing I/O).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Token};

/// Client connections.
pub(crate) const CONNS: usize = 100;
/// Message size in bytes.
pub(crate) const MSG: usize = 64;
/// Length of the measured window.
pub(crate) const WINDOW: Duration = Duration::from_secs(3);

/// Pins the calling thread to one CPU (best effort: on failure the
/// measurement still runs, unpinned).
pub(crate) fn pin_to_cpu(cpu: usize) {
    // SAFETY: `set` is a local, zero-initialized `cpu_set_t`; CPU_SET writes
    // inside it; sched_setaffinity(0, ..) only reads it and affects this
    // thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % 2, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The calling thread's CPU mask as it was before [`pin_scoped`], put back
/// when this is dropped (`None`: it could not be read, so nothing is put
/// back rather than an empty mask).
#[must_use = "dropping it unpins the thread at once"]
pub(crate) struct Pinned(Option<libc::cpu_set_t>);

/// Pins the calling thread to one CPU until the returned guard is dropped.
/// For the bench's main thread: every later scenario's threads and child
/// processes inherit its mask, and a million-coroutine child or a
/// thread-per-core server left on one CPU would measure both loops on it.
pub(crate) fn pin_scoped(cpu: usize) -> Pinned {
    // SAFETY: `old` is a zeroed `cpu_set_t` of the size passed; the kernel
    // writes the calling thread's mask into it.
    let old = unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old);
        (rc == 0).then_some(old)
    };
    if old.is_none() {
        eprintln!(
            "bench: cannot read this thread's CPU mask ({}); it stays pinned to CPU {cpu}",
            std::io::Error::last_os_error()
        );
    }
    pin_to_cpu(cpu);
    Pinned(old)
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            // SAFETY: a mask read by sched_getaffinity; the kernel only
            // reads it, and pid 0 is the calling thread.
            unsafe {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), old);
            }
        }
    }
}

/// A server to measure: it sends its bound address, then serves forever.
pub(crate) type Server = Box<dyn FnOnce(mpsc::Sender<SocketAddr>) + Send>;

/// What was measured for one server.
pub(crate) struct EchoResult {
    /// Requests per second in the window.
    pub(crate) rps: f64,
    /// Nanoseconds of server-thread CPU time per request in the window.
    pub(crate) server_ns_per_req: f64,
    /// Requests in the window.
    pub(crate) requests: u64,
    /// Requests echoed in the whole run (warm-up included).
    pub(crate) total: u64,
}

/// The calling thread's id (for its schedstat).
pub(crate) fn thread_id() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Nanoseconds thread `tid` of this process has run on a CPU.
pub(crate) fn cpu_ns(tid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Starts every server on a thread pinned to CPU 0 (each must send its
/// bound address through the channel, then serve until the process ends),
/// drives them from this thread pinned to CPU 1, and returns, in the
/// servers' order, each one's request rate and server-thread CPU time per
/// request.
///
/// The servers take turns: round after round, each is driven for one
/// window on new connections while the others wait idle (each round
/// starting with the next server), and of its
/// `WINDOWS` windows the one with the median server CPU per request is
/// kept. On this project's VM one window's figure moves by 15% from run to
/// run, more than the servers differ by, and it drifts over minutes: in
/// turns, a slow spell of the machine falls on every server alike instead
/// of on whichever was measured during it.
pub(crate) fn measure_in_turns(servers: Vec<Server>) -> Vec<EchoResult> {
    let started: Vec<(i32, SocketAddr)> = servers.into_iter().map(start).collect();
    let _pinned = pin_scoped(1);
    // Each round starts one server later: none always follows the same one
    // (whose connections are still closing on CPU 0).
    let windows = crate::report::take_turns(WINDOWS, started.len(), |i| {
        let (tid, addr) = started[i];
        let w = window(addr, tid, Window::Time(WINDOW));
        eprintln!(
            "bench: echo window, server {i}: {:.0} ns/req",
            w.server_ns_per_req
        );
        w
    });
    windows.into_iter().map(median).collect()
}

/// Starts `serve` on a thread pinned to CPU 0 and returns that thread's id
/// and the address it serves.
fn start(serve: impl FnOnce(mpsc::Sender<SocketAddr>) + Send + 'static) -> (i32, SocketAddr) {
    let (tx, rx) = mpsc::channel();
    let (tid_tx, tid_rx) = mpsc::channel();
    std::thread::spawn(move || {
        pin_to_cpu(0);
        tid_tx.send(thread_id()).expect("send tid");
        serve(tx);
    });
    let tid = tid_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server thread id");
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server address");
    (tid, addr)
}

/// One window on new connections.
fn window(addr: SocketAddr, tid: i32, window: Window) -> EchoResult {
    let d = drive(addr, tid, window, CONNS, Duration::ZERO).expect("load generator");
    EchoResult {
        rps: d.rps,
        server_ns_per_req: d.cpu_ns as f64 / d.requests.max(1) as f64,
        requests: d.requests,
        total: d.total,
    }
}

/// The result with the median server CPU per request.
fn median(mut results: Vec<EchoResult>) -> EchoResult {
    results.sort_by(|a, b| a.server_ns_per_req.total_cmp(&b.server_ns_per_req));
    let mid = results.len() / 2;
    results.swap_remove(mid)
}

/// When the measured window closes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Window {
    /// After this long.
    Time(Duration),
    /// After this many requests (for instruction counts: see the module doc).
    Requests(u64),
}

/// One server alone: [`WINDOWS`] timed windows (the median kept), or one
/// window of a number of requests.
pub(crate) fn measure_window(
    serve: impl FnOnce(mpsc::Sender<SocketAddr>) + Send + 'static,
    window: Window,
) -> EchoResult {
    let (tid, addr) = start(serve);
    let _pinned = pin_scoped(1);
    let windows = match window {
        Window::Time(_) => WINDOWS,
        Window::Requests(_) => 1,
    };
    median(
        (0..windows)
            .map(|_| self::window(addr, tid, window))
            .collect(),
    )
}

/// Timed windows measured per server; the median is kept.
const WINDOWS: usize = 7;

/// Drives a server in another process (no CPU time is read) until
/// `requests` requests were echoed after the warm-up, then waits for the
/// ones still in flight, so `total` is every request the server echoed.
pub(crate) fn drive_external(addr: SocketAddr, requests: u64) -> EchoResult {
    external(addr, requests, CONNS, Duration::ZERO)
}

/// [`drive_external`] from one connection that waits `pause` after each
/// echo before it sends the next request, so the server has gone back to
/// its wait every time (the callgrind scenarios: under valgrind a server is
/// slow enough that a client replying at once races its next read).
pub(crate) fn drive_paced(addr: SocketAddr, requests: u64, pause: Duration) -> EchoResult {
    external(addr, requests, 1, pause)
}

fn external(addr: SocketAddr, requests: u64, conns: usize, pause: Duration) -> EchoResult {
    let d = drive(addr, 0, Window::Requests(requests), conns, pause).expect("load generator");
    EchoResult {
        rps: d.rps,
        server_ns_per_req: 0.0,
        requests: d.requests,
        total: d.total + d.in_flight,
    }
}

/// What the load generator saw.
struct Driven {
    /// Requests per second in the window.
    rps: f64,
    /// Requests in the window.
    requests: u64,
    /// Server CPU ns in the window.
    cpu_ns: u64,
    /// Requests echoed in the whole run.
    total: u64,
    /// Requests sent whose echo had not arrived when the window closed,
    /// all of which arrived before `drive` returned.
    in_flight: u64,
}

/// The load generator: `n_conns` connections, one message in flight each;
/// each next message is sent `pause` after the echo came (none if zero).
fn drive(
    addr: SocketAddr,
    server_tid: i32,
    window: Window,
    n_conns: usize,
    pause: Duration,
) -> io::Result<Driven> {
    let mut poll = Poll::new()?;
    let mut conns = Vec::with_capacity(n_conns);
    for i in 0..n_conns {
        let std_stream = std::net::TcpStream::connect(addr)?;
        std_stream.set_nodelay(true)?;
        std_stream.set_nonblocking(true)?;
        let mut s = MioStream::from_std(std_stream);
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE)?;
        conns.push(Conn { s, got: 0 });
    }
    let msg = [b'x'; MSG];
    let mut done: u64 = 0;
    let mut events = Events::with_capacity(1024);
    let mut buf = [0u8; 4096];
    // Warm up: one round on every connection.
    for c in &mut conns {
        c.s.write_all(&msg)?;
    }
    let mut window_start: Option<Instant> = None;
    let mut cpu_start = 0;
    let mut measured: u64 = 0;
    let warm_target = n_conns as u64;
    loop {
        poll.poll(&mut events, Some(Duration::from_millis(100)))?;
        for ev in events.iter() {
            let c = &mut conns[ev.token().0];
            loop {
                match c.s.read(&mut buf) {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "server closed",
                        ))
                    }
                    Ok(n) => {
                        c.got += n;
                        while c.got >= MSG {
                            c.got -= MSG;
                            done += 1;
                            if window_start.is_some() {
                                measured += 1;
                            }
                            if !pause.is_zero() {
                                std::thread::sleep(pause);
                            }
                            write_all_nb(&mut c.s, &msg)?;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
        if window_start.is_none() && done >= warm_target {
            window_start = Some(Instant::now());
            cpu_start = cpu_ns(server_tid);
        }
        if let Some(t) = window_start {
            let closed = match window {
                Window::Time(d) => t.elapsed() >= d,
                Window::Requests(n) => measured >= n,
            };
            if closed {
                let cpu = cpu_ns(server_tid).saturating_sub(cpu_start);
                let rps = measured as f64 / t.elapsed().as_secs_f64();
                let in_flight = settle(&mut poll, &mut events, &mut conns)?;
                return Ok(Driven {
                    rps,
                    requests: measured,
                    cpu_ns: cpu,
                    total: done,
                    in_flight,
                });
            }
        }
    }
}

struct Conn {
    s: MioStream,
    got: usize,
}

/// Reads the echo of every request still in flight (one per connection:
/// each sent its next message as the last echo came) without sending more.
/// Returns how many.
fn settle(poll: &mut Poll, events: &mut Events, conns: &mut [Conn]) -> io::Result<u64> {
    let mut buf = [0u8; 4096];
    let mut pending = conns.len();
    // Bytes each connection still expects: a whole message, less what of
    // it already came.
    let mut owed: Vec<usize> = conns.iter().map(|c| MSG - c.got).collect();
    while pending > 0 {
        poll.poll(events, Some(Duration::from_secs(10)))?;
        if events.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "echoes in flight never came",
            ));
        }
        for ev in events.iter() {
            let i = ev.token().0;
            loop {
                match conns[i].s.read(&mut buf) {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "server closed",
                        ))
                    }
                    Ok(n) => {
                        let before = owed[i];
                        owed[i] = owed[i].saturating_sub(n);
                        if before > 0 && owed[i] == 0 {
                            pending -= 1;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(conns.len() as u64)
}

/// Writes a small message on a non-blocking socket (it always fits in the
/// socket buffer at this size; spin on the rare would-block).
pub(crate) fn write_all_nb(s: &mut MioStream, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        match s.write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// This runtime's server: a coroutine per connection, blocking-style code.
pub(crate) fn ours(reactor: &'static str) -> impl FnOnce(mpsc::Sender<SocketAddr>) + Send {
    move |tx| ours_announcing(reactor, move |addr| tx.send(addr).expect("send addr"))
}

/// [`ours`], saying where it listens through `announce`, from the server's
/// own thread (`--profile serve` prints it: under valgrind no other thread
/// may run once an io_uring server blocks in the kernel).
pub(crate) fn ours_announcing(
    reactor: &'static str,
    announce: impl FnOnce(SocketAddr) + Send + 'static,
) {
    {
        async_std_api::Builder::new()
            .reactor(reactor)
            .run(move || {
                let listener = async_std_api::net::TcpListener::bind("127.0.0.1:0").expect("bind");
                announce(listener.local_addr().expect("addr"));
                loop {
                    let (conn, _) = listener.accept().expect("accept");
                    conn.set_nodelay(true).expect("nodelay");
                    async_std_api::spawn(move || echo_conn(conn));
                }
            })
            .expect("runtime");
    }
}

/// tokio current-thread: a task per connection.
pub(crate) fn tokio_server(tx: mpsc::Sender<SocketAddr>) {
    tokio_announcing(move |addr| tx.send(addr).expect("send addr"))
}

/// [`tokio_server`], saying where it listens as [`ours_announcing`] does.
pub(crate) fn tokio_announcing(announce: impl FnOnce(SocketAddr) + Send + 'static) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        announce(listener.local_addr().expect("addr"));
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
}

/// monoio on io_uring: a task per connection (buffers passed by ownership).
pub(crate) fn monoio_server(tx: mpsc::Sender<SocketAddr>) {
    monoio_announcing(move |addr| tx.send(addr).expect("send addr"))
}

/// [`monoio_server`], saying where it listens as [`ours_announcing`] does.
pub(crate) fn monoio_announcing(announce: impl FnOnce(SocketAddr) + Send + 'static) {
    use monoio::buf::IoBuf;
    use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .build()
        .expect("monoio (io_uring)");
    rt.block_on(async move {
        let listener = monoio::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        announce(listener.local_addr().expect("addr"));
        loop {
            let (mut conn, _) = listener.accept().await.expect("accept");
            conn.set_nodelay(true).expect("nodelay");
            monoio::spawn(async move {
                // monoio reads into a Vec's capacity from its start.
                let mut buf = Vec::with_capacity(4096);
                loop {
                    let (res, b) = conn.read(buf).await;
                    let n = match res {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    // Write back the `n` bytes read, lending the same buffer.
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

/// may with one worker (as [`crate::peers::may_setup`] configures it): a
/// coroutine per connection on `may::net`, blocking-style code like ours,
/// saying where it listens as [`ours_announcing`] does (for
/// `--profile serve may`: the echo instructions scenario).
pub(crate) fn may_announcing(announce: impl FnOnce(SocketAddr) + Send + 'static) {
    crate::peers::may_setup();
    // SAFETY: may's `spawn` is unsafe because a coroutine must not keep
    // thread-local storage across a suspension or block its worker; these
    // coroutines use only may's own socket calls and a stack buffer.
    let acceptor = unsafe {
        may::coroutine::spawn(move || -> () {
            let listener = may::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            announce(listener.local_addr().expect("addr"));
            loop {
                let (conn, _) = listener.accept().expect("accept");
                conn.set_nodelay(true).expect("nodelay");
                // SAFETY: as above.
                may::coroutine::spawn(move || echo_conn(conn));
            }
        })
    };
    let _ = acceptor.join();
}

/// The echo every blocking-style server here runs per connection (this
/// runtime's and may's streams both implement std's traits): read what
/// came, write it back, until end of stream or an error.
pub(crate) fn echo_conn(mut conn: impl Read + Write) {
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if conn.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
}
