//! A small HTTP/1.1 service that stays up: a coroutine per connection, in a
//! scope of its own whose exception handler logs a connection that failed
//! and lets the server serve on.
//!
//! ```text
//! cargo run -p async-std-api --example http_server -- 127.0.0.1:8080 --root .
//! curl -v localhost:8080/ localhost:8080/status localhost:8080/uname
//! curl --data-binary @Cargo.toml localhost:8080/checksum
//! ```
//!
//! | route | what it does |
//! |---|---|
//! | `GET /` | the list of routes |
//! | `GET /files/<path>` | a file under `--root` (default: the current directory), read with `fs::File` and streamed |
//! | `GET /uname` | runs `uname -sr` (`process::Command`) and answers its output |
//! | `POST /checksum` | the FNV-1a hash of the request body, computed on the blocking pool (`spawn_blocking`) |
//! | `GET /sleep?ms=N` | answers after N ms: a slow request, cut by the request timeout |
//! | `GET /status` | open connections, the requests in flight, requests served |
//! | `GET /panic` | the request's coroutine panics: `500`, and the connection stays open |
//! | `GET /crash` | the connection's own coroutine panics: its scope's handler logs it, that connection closes, the server serves on |
//!
//! How it stays up, by layer:
//!
//! - **A request** runs in a coroutine of its own, joined with a deadline
//!   (`join_until(&timeout(..))`): a request that takes too long is
//!   cancelled and answered `504`; one that panics is answered `500` (its
//!   failure is consumed by the join, D-3) and the connection goes on.
//! - **A connection** runs in a child scope of the service scope, whose
//!   exception handler takes any failure nothing awaited (a panic in the
//!   connection's own code: `/crash`), logs it and absorbs it; the
//!   connection's socket is dropped with its coroutine. Without the handler
//!   the failure would reach the global scope and shut the program down,
//!   which is the runtime's rule for unhandled failures.
//! - **Keep-alive** (HTTP/1.1's default; `Connection: close` is honoured):
//!   an idle connection waits 5 s for its next request, then is closed; a
//!   request has 10 s to arrive whole once its first byte did.
//! - **Graceful shutdown** on SIGINT or SIGTERM: the accept loop stops, and
//!   every connection coroutine is cancelled. A connection waiting for its
//!   next request (idle) ends at once. A connection in the middle of a
//!   request runs that request inside `protect`, so the cancellation waits
//!   until the response is written (with `Connection: close`); then it
//!   ends. After a 10 s grace period whatever is left is cancelled
//!   outright. The program exits 0.
//!
//! Every line it prints goes to standard error: `listening on <addr>`
//! first, an access log line per request, and one line per failure and per
//! shutdown step. If it cannot listen, it says why and exits 1.
//!
//! Request heads are parsed with `httparse`; bodies need `Content-Length`
//! (a chunked request body is answered `501`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{
    current, delay, fs, io, process, protect, signal, sleep, spawn, spawn_blocking, spawn_in,
    timeout, Coroutine, CoroutineId, Scope, ScopeRef,
};

const USAGE: &str = "usage: http_server [ADDR] [--root DIR] [--request-timeout MS]
  a small HTTP/1.1 service on ADDR (default 127.0.0.1:8080): files under DIR (default .),
  a child process, blocking work, keep-alive, per-request timeouts (default 5000 ms);
  SIGINT or SIGTERM stops it gracefully";

/// How long a keep-alive connection may wait for its next request.
const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a request may take to arrive whole once its first byte did.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long writing a response may stall.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for busy connections before cancelling them.
const GRACE_MS: u64 = 10_000;
/// The largest request head (`431` beyond it) and body (`413`).
const MAX_HEAD: usize = 16 << 10;
const MAX_BODY: usize = 1 << 20;
/// `ENFILE`, `EMFILE`, `ENOBUFS`, `ENOMEM`: the accept loop waits these out.
const RESOURCE_ERRORS: [i32; 4] = [23, 24, 105, 12];

struct Options {
    addr: String,
    root: PathBuf,
    request_timeout_ms: u64,
}

/// What every connection shares (all on the loop's thread).
struct Service {
    options: Options,
    /// Set when shutdown starts: every response then says
    /// `Connection: close`.
    draining: Cell<bool>,
    /// The connections' coroutines, cancelled by shutdown.
    connections: RefCell<HashMap<CoroutineId, Coroutine>>,
    /// Requests being served, by connection: `GET /path`.
    in_flight: RefCell<HashMap<CoroutineId, String>>,
    served: Cell<u64>,
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e} (http_server --help shows the usage)");
            return ExitCode::from(2);
        }
    };
    let served = async_std_api::run(move || serve(options));
    // One line and exit status 1 for any error: the runtime's (a bad
    // configuration, an unhandled failure) or the server's own.
    match served.map_err(|e| e.to_string()).and_then(|r| r) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `Ok(None)`: help was asked for.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut options = Options {
        addr: "127.0.0.1:8080".to_owned(),
        root: PathBuf::from("."),
        request_timeout_ms: 5_000,
    };
    let mut addr_seen = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--root" => options.root = args.next().ok_or("--root needs a directory")?.into(),
            "--request-timeout" => {
                let v = args.next().ok_or("--request-timeout needs milliseconds")?;
                options.request_timeout_ms = v.parse().map_err(|_| {
                    format!("invalid --request-timeout \"{v}\": expected milliseconds")
                })?;
            }
            other if !addr_seen && !other.starts_with('-') => {
                options.addr = other.to_owned();
                addr_seen = true;
            }
            other => return Err(format!("unknown argument \"{other}\"")),
        }
    }
    Ok(Some(options))
}

fn serve(options: Options) -> Result<(), String> {
    let addr = options.addr.clone();
    let listener = TcpListener::bind(&addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    // Watched before the first connection is accepted, so a signal is never
    // missed between the two.
    let signals = signal::any(&[signal::SIGINT, signal::SIGTERM])
        .map_err(|e| format!("cannot watch SIGINT and SIGTERM: {e}"))?;
    eprintln!(
        "listening on {}",
        listener.local_addr().map_err(|e| e.to_string())?
    );

    let service = Rc::new(Service {
        options,
        draining: Cell::new(false),
        connections: RefCell::new(HashMap::new()),
        in_flight: RefCell::new(HashMap::new()),
        served: Cell::new(0),
    });
    // The connections' parent: shutdown waits for it to empty.
    let connections = Scope::new();
    let accept = {
        let (service, parent) = (service.clone(), ScopeRef::clone(&connections));
        spawn(move || accept_loop(&listener, &parent, &service))
    };

    let signum = match signals.wait() {
        Ok(()) => signals.received().unwrap_or(0),
        Err(e) => return Err(format!("cannot wait for signals: {e}")),
    };
    // Graceful shutdown: no new connections; idle ones end now, busy ones
    // after their response (`protect` in `connection`).
    service.draining.set(true);
    accept.cancel();
    let _ = accept.join();
    let open: Vec<Coroutine> = service.connections.borrow().values().cloned().collect();
    eprintln!(
        "signal {signum}: shutting down: {} connection(s) open, {} busy",
        open.len(),
        service.in_flight.borrow().len()
    );
    for c in &open {
        c.cancel();
    }
    if let Err(e) = connections.await_completion(&timeout(GRACE_MS)) {
        eprintln!("shutdown: {e}: cancelling what is left");
        connections.cancel();
        let _ = connections.await_after_cancellation(None, Some(&timeout(5_000)));
    }
    eprintln!("stopped after {} request(s)", service.served.get());
    Ok(())
}

/// Accepts until cancelled; each connection gets a child scope of `parent`
/// with an exception handler, and a coroutine in it.
fn accept_loop(listener: &TcpListener, parent: &ScopeRef, service: &Rc<Service>) {
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            // Cancellation is delivered once: stop accepting.
            Err(e) if io::cancelled(&e).is_some() => return,
            Err(e)
                if e.raw_os_error()
                    .is_some_and(|n| RESOURCE_ERRORS.contains(&n)) =>
            {
                eprintln!("accept failed: {e}: waiting 50 ms");
                if sleep(Duration::from_millis(50)).is_err() {
                    return;
                }
                continue;
            }
            Err(e) => {
                eprintln!("accept failed: {e}");
                continue;
            }
        };
        let scope = Scope::inherit_from(parent);
        // What keeps the server up: a failure nothing awaited (a panic in
        // the connection's own code) is logged here and goes no further.
        // Without it, it would reach the global scope and end the program.
        scope
            .set_exception_handler(move |_, _, failure| {
                eprintln!("connection from {peer} failed: {failure}; serving on");
                Ok(())
            })
            .expect("a child scope takes a handler");
        // The scope's record lives while its coroutines do; the parent's
        // cancel still reaches it.
        let scope = scope.detach();
        let service = service.clone();
        let spawned = spawn_in(&scope, move || {
            let me = current();
            service.connections.borrow_mut().insert(me.id(), me.clone());
            let _gone = Gone(service.clone(), me.id());
            if let Err(e) = connection(&stream, peer, &service) {
                if io::cancelled(&e).is_none() {
                    eprintln!("connection from {peer}: {e}");
                }
            }
        });
        if let Err(e) = spawned {
            eprintln!("cannot serve {peer}: {e}");
        }
    }
}

/// Takes a connection off the lists when its coroutine ends, however it
/// ends (a panic included).
struct Gone(Rc<Service>, CoroutineId);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.connections.borrow_mut().remove(&self.1);
        self.0.in_flight.borrow_mut().remove(&self.1);
    }
}

/// One connection: requests until the client closes, an error, the idle
/// timeout, or shutdown.
fn connection(stream: &TcpStream, peer: SocketAddr, service: &Service) -> std::io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut buf = Vec::with_capacity(4096);
    loop {
        if buf.is_empty() {
            // Idle: waiting for the next request's first byte. Shutdown's
            // cancellation, the idle timeout or the client's close end it.
            stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
            match read_more(stream, &mut buf) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        // Busy, from the first byte until the response is written: a
        // cancellation (shutdown) waits until then (D-21).
        let keep_alive = protect(|| request(stream, peer, &mut buf, service))?;
        if !keep_alive || service.draining.get() {
            return Ok(());
        }
    }
}

/// Appends what one read returns to `buf`.
fn read_more(stream: &TcpStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut chunk = [0u8; 4096];
    let n = (&*stream).read(&mut chunk)?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

/// A parsed request, owned, for the route's coroutine.
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// What a route answers.
struct Response {
    status: u16,
    content_type: &'static str,
    body: Body,
}

enum Body {
    Bytes(Vec<u8>),
    /// A file, streamed from disk, and its length.
    File(fs::File, u64),
}

impl Response {
    fn text(status: u16, text: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: Body::Bytes(text.into().into_bytes()),
        }
    }
}

/// Reads one request from `buf` (and the stream), serves it, and says
/// whether the connection may carry another.
fn request(
    stream: &TcpStream,
    peer: SocketAddr,
    buf: &mut Vec<u8>,
    service: &Service,
) -> std::io::Result<bool> {
    let started = Instant::now();
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    // The head.
    let (head_len, method, path, keep_alive, content_length, chunked) = loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(buf) {
            Ok(httparse::Status::Complete(n)) => {
                let header = |name: &str| {
                    parsed
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
                };
                let http11 = parsed.version == Some(1);
                let keep_alive = match header("connection").as_deref() {
                    Some("close") => false,
                    Some("keep-alive") => true,
                    _ => http11,
                };
                let length = match header("content-length").map(|v| v.trim().parse::<usize>()) {
                    None => Some(0),
                    Some(Ok(n)) => Some(n),
                    Some(Err(_)) => None,
                };
                let chunked = header("transfer-encoding").is_some();
                break (
                    n,
                    parsed.method.unwrap_or("").to_owned(),
                    parsed.path.unwrap_or("").to_owned(),
                    keep_alive,
                    length,
                    chunked,
                );
            }
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                let r = Response::text(431, "request head too large\n");
                return respond(stream, peer, "-", "-", r, false, started, service);
            }
            Ok(httparse::Status::Partial) => match read_more(stream, buf) {
                Ok(0) => return Ok(false),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    let r = Response::text(408, "request timeout\n");
                    return respond(stream, peer, "-", "-", r, false, started, service);
                }
                Err(e) => return Err(e),
            },
            Err(e) => {
                let r = Response::text(400, format!("bad request: {e}\n"));
                return respond(stream, peer, "-", "-", r, false, started, service);
            }
        }
    };
    let me = current().id();
    service
        .in_flight
        .borrow_mut()
        .insert(me, format!("{method} {path}"));
    let reject = |status, why: &str| {
        let r = Response::text(status, format!("{why}\n"));
        respond(stream, peer, &method, &path, r, false, started, service)
    };
    // The body.
    let Some(length) = content_length else {
        return reject(400, "invalid content-length");
    };
    if chunked {
        return reject(501, "chunked request bodies are not supported");
    }
    if length > MAX_BODY {
        return reject(413, "request body too large");
    }
    while buf.len() < head_len + length {
        match read_more(stream, buf) {
            Ok(0) => return Ok(false),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                return reject(408, "request timeout");
            }
            Err(e) => return Err(e),
        }
    }
    let body = buf[head_len..head_len + length].to_vec();
    // What is left is the next (pipelined) request.
    buf.drain(..head_len + length);

    if path == "/crash" {
        // A bug in the connection's own code: nothing awaits this coroutine,
        // so the failure goes to the connection scope's handler.
        panic!("crash requested by {peer}");
    }
    let response = if method == "GET" && path == "/status" {
        Response::text(200, status(service))
    } else {
        let req = Request {
            method: method.clone(),
            path: path.clone(),
            body,
        };
        run_route(req, service)
    };
    let keep_alive = keep_alive && !service.draining.get();
    respond(
        stream, peer, &method, &path, response, keep_alive, started, service,
    )
}

/// Runs the route in a coroutine of its own, joined with the request
/// timeout: on expiry it is cancelled and the answer is `504`; a panic is
/// answered `500` (the join consumes the failure: it is handled here).
fn run_route(req: Request, service: &Service) -> Response {
    let ms = service.options.request_timeout_ms;
    let what = format!("{} {}", req.method, req.path);
    let root = service.options.root.clone();
    let handle = spawn(move || route(req, &root));
    let coroutine = handle.coroutine();
    match handle.join_until(&timeout(ms)) {
        Ok(response) => response,
        Err(e) if e.is_await_cancelled() => {
            coroutine.cancel();
            Response::text(504, format!("{what} took longer than {ms} ms\n"))
        }
        Err(e) => {
            eprintln!("request {what} failed: {e}");
            Response::text(500, "internal server error\n")
        }
    }
}

fn route(req: Request, root: &Path) -> Response {
    let (path, query) = req.path.split_once('?').unwrap_or((&req.path, ""));
    match (req.method.as_str(), path) {
        ("GET", "/") => Response::text(
            200,
            "GET /files/<path>\nGET /uname\nPOST /checksum\nGET /sleep?ms=N\nGET /status\n\
             GET /panic\nGET /crash\n",
        ),
        ("GET", p) if p.starts_with("/files/") => file(root, &p["/files/".len()..]),
        ("GET", "/uname") => match process::Command::new("uname").arg("-sr").output() {
            Ok(out) if out.status.success() => {
                Response::text(200, String::from_utf8_lossy(&out.stdout))
            }
            Ok(out) => Response::text(500, format!("uname: {}\n", out.status)),
            Err(e) => Response::text(500, format!("cannot run uname: {e}\n")),
        },
        ("POST", "/checksum") => {
            // CPU work off the loop, on the blocking pool.
            let body = req.body;
            match spawn_blocking(move || fnv1a(&body)).join() {
                Ok(sum) => Response::text(200, format!("{sum:016x}\n")),
                Err(e) => Response::text(500, format!("checksum: {e}\n")),
            }
        }
        ("GET", "/sleep") => {
            let ms = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("ms="))
                .and_then(|v| v.parse::<u64>().ok());
            match ms {
                // Cancelled by the request timeout: the error ends the
                // coroutine; the answer is the connection's `504`.
                Some(ms) => match delay(ms) {
                    Ok(()) => Response::text(200, format!("slept {ms} ms\n")),
                    Err(e) => Response::text(503, format!("{e}\n")),
                },
                None => Response::text(400, "expected /sleep?ms=N\n"),
            }
        }
        ("GET", "/panic") => panic!("panic requested"),
        (_, "/" | "/uname" | "/checksum" | "/sleep" | "/status" | "/panic") => {
            Response::text(405, "method not allowed\n")
        }
        _ => Response::text(404, "not found\n"),
    }
}

/// A file under `root`; `..` and absolute paths are refused.
fn file(root: &Path, rel: &str) -> Response {
    let rel = Path::new(rel);
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Response::text(403, "forbidden\n");
    }
    let path = root.join(rel);
    let opened = fs::File::open(&path).and_then(|f| {
        let meta = f.metadata()?;
        Ok((f, meta))
    });
    match opened {
        Ok((f, meta)) if meta.is_file() => Response {
            status: 200,
            content_type: "application/octet-stream",
            body: Body::File(f, meta.len()),
        },
        Ok(_) => Response::text(404, "not found\n"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Response::text(404, "not found\n"),
        Err(e) => Response::text(500, format!("{e}\n")),
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The status page (`GET /status`, answered by the connection itself):
/// what shutdown would find.
fn status(service: &Service) -> String {
    let mut in_flight: Vec<String> = service.in_flight.borrow().values().cloned().collect();
    in_flight.sort();
    let mut text = format!(
        "connections {}\nserved {}\n",
        service.connections.borrow().len(),
        service.served.get()
    );
    for r in in_flight {
        text.push_str(&format!("in flight {r}\n"));
    }
    text
}

/// Writes the response and logs it; says whether the connection goes on.
#[allow(clippy::too_many_arguments)] // the access log line's fields
fn respond(
    stream: &TcpStream,
    peer: SocketAddr,
    method: &str,
    path: &str,
    mut response: Response,
    keep_alive: bool,
    started: Instant,
    service: &Service,
) -> std::io::Result<bool> {
    let length = match &response.body {
        Body::Bytes(b) => b.len() as u64,
        Body::File(_, n) => *n,
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {length}\r\nConnection: {}\r\n\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        if keep_alive { "keep-alive" } else { "close" },
    );
    let mut out = stream;
    out.write_all(head.as_bytes())?;
    match &mut response.body {
        Body::Bytes(b) => out.write_all(b)?,
        Body::File(f, n) => {
            let copied = std::io::copy(&mut f.take(*n), &mut out)?;
            if copied < *n {
                // The file shrank: the promised length cannot be kept.
                return Err(std::io::Error::other("file shorter than its length"));
            }
        }
    }
    service.served.set(service.served.get() + 1);
    service.in_flight.borrow_mut().remove(&current().id());
    eprintln!(
        "{peer} \"{method} {path}\" {} {length} {} ms",
        response.status,
        started.elapsed().as_millis()
    );
    Ok(keep_alive)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}
