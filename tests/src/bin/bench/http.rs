//! `http`: HTTP/1.1 plaintext (`Hello, World!`, TechEmpower's plaintext
//! test) over loopback, with and without pipelining.
//!
//! What is timed: `CONNS` keep-alive connections, each keeping `depth`
//! `GET` requests in flight (1: one request, wait for its response, send
//! the next; 16: the plaintext test's pipelining, the requests a response
//! completes are sent again in one write), for a `WINDOW` after a warm-up
//! round. The load generator is a single-threaded mio loop, the same for
//! every server, that parses each response with httparse (status 200 and
//! its `Content-Length` body checked). The servers take turns: at each
//! depth, `WINDOWS` rounds of one window per server on new connections, and
//! of a server's windows the one with the median server CPU per request is
//! kept (see [`measure_in_turns`]). Nothing is pinned: the servers with
//! two threads would have nowhere else to go. Columns: the CPU time of
//! every thread of the process but the load generator's, per request (all
//! of a server's threads count, its timer and I/O threads too; the idle
//! servers waiting their turn add about 6 ms of CPU a second, may's worker
//! waking for its timers, which is under 1% of any row and falls on every
//! row alike), the load generator's, and the
//! requests per second, which the two cores bound.
//!
//! Servers:
//! - this runtime: the `http_hello` example's own code
//!   (`async-std-api/examples/http_hello.rs`: httparse, a coroutine per
//!   connection, the responses to what one read brought written at once),
//!   on mio and io_uring, with 1 loop and 2 (`run_per_core`, a
//!   `SO_REUSEPORT` listener per loop);
//! - may_minihttp on may with one worker (the bench configures may once per
//!   process, for its other rows too);
//! - hyper 1 (`http1::Builder` with `pipeline_flush`, as its pipelining
//!   benchmarks run it; hyper-util's `TokioIo`; a `Full` body) on tokio's
//!   current-thread runtime and on its multi-thread runtime with 2 workers,
//!   both with `enable_all`.
//!
//! Excluded: start-up, connection set-up, teardown.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Token};

use crate::echo::{cpu_ns, thread_id, write_all_nb, CONNS};
use crate::echo_multi::reserve;

/// The example's code, measured as users would copy it.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../../async-std-api/examples/http_hello.rs"]
mod http_hello;

/// Windows of each server at each depth, taken in turns; the median is kept.
const WINDOWS: usize = 3;

/// Idle time after each window, for its connections' closing.
const SETTLE: Duration = Duration::from_millis(50);

/// Length of one measured window.
const WINDOW: Duration = Duration::from_secs(2);

/// The request every connection sends.
const REQUEST: &[u8] = b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\nAccept: text/plain\r\n\r\n";

/// A server to measure: it sends the address of each listener, then serves
/// until the process ends.
pub(crate) type Server = Box<dyn FnOnce(mpsc::Sender<SocketAddr>) + Send>;

/// What was measured at one pipelining depth.
pub(crate) struct Measured {
    pub(crate) rps: f64,
    /// CPU ns per request of every thread but the load generator's.
    pub(crate) server_ns_per_req: f64,
    /// CPU ns per request of the load generator.
    pub(crate) client_ns_per_req: f64,
}

/// Starts every server on its own thread and waits for its listeners,
/// then drives them in turns at each depth and returns, for each server in
/// order, what was measured at each depth.
///
/// At each depth, round after round, each server is driven for one window
/// on new connections while the others wait idle (each round starting with
/// the next server), and of its `WINDOWS` windows the one with the median
/// server CPU per request is kept. Measured one after another, a slow spell
/// of this VM (one window moves by 15% from run to run, and the machine
/// drifts over minutes) fell on whichever server ran during it; in turns it
/// falls on every server alike.
pub(crate) fn measure_in_turns(
    servers: Vec<(Server, usize)>,
    depths: &[usize],
) -> Vec<Vec<Measured>> {
    let addrs: Vec<SocketAddr> = servers
        .into_iter()
        .map(|(serve, listeners)| start(serve, listeners))
        .collect();
    let mut kept: Vec<Vec<Measured>> = addrs.iter().map(|_| Vec::new()).collect();
    for &depth in depths {
        let windows = crate::report::take_turns(WINDOWS, addrs.len(), |i| {
            let w = drive(addrs[i], depth).expect("load generator");
            // The connections just dropped are closed by their server
            // before the next one's window opens: every thread but the
            // load generator's counts (see the module doc).
            std::thread::sleep(SETTLE);
            w
        });
        for (i, mut w) in windows.into_iter().enumerate() {
            w.sort_by(|a, b| a.server_ns_per_req.total_cmp(&b.server_ns_per_req));
            kept[i].push(w.swap_remove(WINDOWS / 2));
        }
    }
    kept
}

/// Starts `serve` on its own thread and returns the address of the last of
/// its `listeners` listeners.
fn start(serve: Server, listeners: usize) -> SocketAddr {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || serve(tx));
    let mut addr = None;
    for _ in 0..listeners {
        addr = Some(
            rx.recv_timeout(Duration::from_secs(10))
                .expect("server listening"),
        );
    }
    addr.expect("a listener")
}

/// Nanoseconds every thread of this process but `except` has run.
fn cpu_of_all_but(except: i32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&t| t != except)
        .map(cpu_ns)
        .sum()
}

struct Conn {
    s: MioStream,
    /// Bytes received and not yet parsed.
    rx: Vec<u8>,
}

/// The load generator: one `WINDOW` after a warm-up round, on `CONNS` new
/// connections with `depth` requests in flight on each.
fn drive(addr: SocketAddr, depth: usize) -> io::Result<Measured> {
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
        conns.push(Conn {
            s,
            rx: Vec::with_capacity(16 * 1024),
        });
    }
    let batch: Vec<u8> = REQUEST.repeat(depth);
    for c in &mut conns {
        write_all_nb(&mut c.s, &batch)?;
    }
    let mut events = Events::with_capacity(1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let (mut done, mut measured) = (0u64, 0u64);
    let mut start: Option<(Instant, u64, u64)> = None;
    loop {
        poll.poll(&mut events, Some(Duration::from_millis(100)))?;
        for ev in events.iter() {
            let c = &mut conns[ev.token().0];
            let mut answered = 0;
            loop {
                match c.s.read(&mut chunk) {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "server closed",
                        ))
                    }
                    Ok(n) => {
                        c.rx.extend_from_slice(&chunk[..n]);
                        answered += parse_responses(&mut c.rx)?;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
            if answered > 0 {
                done += answered as u64;
                if start.is_some() {
                    measured += answered as u64;
                }
                write_all_nb(&mut c.s, &batch[..answered * REQUEST.len()])?;
            }
        }
        if start.is_none() && done >= (CONNS * depth) as u64 {
            start = Some((Instant::now(), cpu_of_all_but(me), cpu_ns(me)));
        }
        if let Some((t, server0, client0)) = start {
            if t.elapsed() >= WINDOW {
                let n = measured.max(1) as f64;
                return Ok(Measured {
                    rps: measured as f64 / t.elapsed().as_secs_f64(),
                    server_ns_per_req: cpu_of_all_but(me).saturating_sub(server0) as f64 / n,
                    client_ns_per_req: cpu_ns(me).saturating_sub(client0) as f64 / n,
                });
            }
        }
    }
}

/// Removes every whole response from the front of `rx` and returns how
/// many there were; a response that is not `200` with a `Content-Length`
/// is an error.
fn parse_responses(rx: &mut Vec<u8>) -> io::Result<usize> {
    let (mut at, mut n) = (0, 0);
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut resp = httparse::Response::new(&mut headers);
        let head = match resp.parse(&rx[at..]) {
            Ok(httparse::Status::Complete(head)) => head,
            Ok(httparse::Status::Partial) => break,
            Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
        };
        if resp.code != Some(200) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("status {:?}", resp.code),
            ));
        }
        let len = resp
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| {
                std::str::from_utf8(h.value)
                    .ok()?
                    .trim()
                    .parse::<usize>()
                    .ok()
            })
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Content-Length"))?;
        if rx.len() - at < head + len {
            break;
        }
        at += head + len;
        n += 1;
    }
    rx.drain(..at);
    Ok(n)
}

/// This runtime on `loops` loops, each with a `SO_REUSEPORT` listener,
/// serving with the `http_hello` example's code.
pub(crate) fn ours(reactor: &'static str, loops: usize) -> Server {
    Box::new(move |tx| {
        let (_held, addr) = reserve();
        let tx = Arc::new(Mutex::new(tx));
        async_std_api::Builder::new()
            .reactor(reactor)
            .threads(loops)
            .run_per_core(move |_| {
                let listener = async_std_api::net::TcpListener::bind_reuseport(addr).expect("bind");
                tx.lock().unwrap().send(addr).expect("ready");
                http_hello::serve(&listener).expect("serve");
            })
            .expect("runtime");
    })
}

/// may_minihttp's service: the plaintext answer.
#[derive(Clone)]
struct MayHello;

impl may_minihttp::HttpService for MayHello {
    fn call(
        &mut self,
        _req: may_minihttp::Request<'_, '_, '_>,
        rsp: &mut may_minihttp::Response<'_>,
    ) -> io::Result<()> {
        rsp.header("Content-Type: text/plain");
        rsp.body("Hello, World!");
        Ok(())
    }
}

/// may_minihttp on may with one worker.
pub(crate) fn may_minihttp() -> Server {
    Box::new(|tx| {
        crate::peers::may_setup();
        // may_minihttp binds the address it is given and does not say which
        // port 0 became: take a free port, then hand it over.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let server = may_minihttp::HttpServer(MayHello)
            .start(addr)
            .expect("may_minihttp");
        tx.send(addr).expect("ready");
        let _ = server.join();
    })
}

async fn hyper_hello(
    _req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<http_body_util::Full<bytes::Bytes>>, std::convert::Infallible> {
    let mut r = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
        b"Hello, World!",
    )));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    Ok(r)
}

/// hyper on tokio: the current-thread runtime (`workers` 0) or the
/// multi-thread one with `workers` workers, both with `enable_all`.
pub(crate) fn hyper(workers: usize) -> Server {
    Box::new(move |tx| {
        let rt = if workers == 0 {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .build()
        }
        .expect("tokio");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(listener.local_addr().expect("addr"))
                .expect("ready");
            loop {
                let (conn, _) = listener.accept().await.expect("accept");
                conn.set_nodelay(true).expect("nodelay");
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .pipeline_flush(true)
                        .serve_connection(
                            hyper_util::rt::TokioIo::new(conn),
                            hyper::service::service_fn(hyper_hello),
                        )
                        .await;
                });
            }
        });
    })
}
