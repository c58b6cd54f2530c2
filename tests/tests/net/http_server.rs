//! The `http_server` example (async-std-api/examples/http_server.rs, built
//! as a binary of this package), run on the cell's backends and driven with
//! std's blocking sockets: keep-alive across every kind of route, a
//! panicking request answered `500` on a connection that stays open, a
//! crashing connection logged by its scope's handler while the server
//! serves on, and graceful shutdown that closes idle connections and
//! finishes busy ones.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_http_server");

/// How long any one step may take before the test gives up (a loaded
/// machine, a chaos scheduler): a bound, never a synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);

/// The server in a child process, with its stderr lines on a channel.
struct Server {
    child: Child,
    addr: SocketAddr,
    lines: Receiver<String>,
    /// Every stderr line read so far.
    seen: Vec<String>,
}

impl Server {
    /// Starts the example on a free port with `--request-timeout 1000`,
    /// serving files from a scratch directory with `hello.txt` in it, on
    /// the same backends as this test (the cell's `ASYNC_*` variables
    /// stay set).
    #[track_caller]
    fn start(name: &str) -> Server {
        let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("http-server")
            .join(name);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("hello.txt"), "hello, file\n").unwrap();
        let mut child = Command::new(SERVER)
            .args(["127.0.0.1:0", "--request-timeout", "1000", "--root"])
            .arg(&root)
            .env_remove("ASYNC_CONFIG")
            .env_remove("RUST_LOG")
            .env_remove("ASYNC_PLUGIN_NOTICE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {SERVER}: {e}"));
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            addr: "0.0.0.0:0".parse().unwrap(),
            lines,
            seen: Vec::new(),
        };
        // The plugin notice of a `.so` cell may come first.
        let line = server.wait_line(|l| l.starts_with("listening on "));
        server.addr = line["listening on ".len()..].parse().unwrap();
        server
    }

    /// Waits for a stderr line that satisfies `want` and returns it.
    #[track_caller]
    fn wait_line(&mut self, want: impl Fn(&str) -> bool) -> String {
        if let Some(l) = self.seen.iter().find(|l| want(l)) {
            return l.clone();
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if want(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no such line from the server; it printed:\n{:#?}",
                    self.seen
                ),
            }
        }
    }

    fn connect(&self) -> Conn {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        Conn {
            reader: BufReader::new(s),
        }
    }

    fn signal(&self, signum: i32) {
        // SAFETY: kill(2) with the pid of our own child and a valid signal.
        let rc = unsafe { libc::kill(self.child.id() as i32, signum) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits for the process to end and returns its exit code with every
    /// stderr line it printed.
    #[track_caller]
    fn wait(mut self) -> (Option<i32>, Vec<String>) {
        let deadline = Instant::now() + PATIENCE;
        // The reader thread ends (the channel disconnects) when the process
        // has exited and its stderr is closed.
        loop {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => self.seen.push(line),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    panic!("the server did not exit: {:#?}", self.seen)
                }
            }
        }
        let status = self.child.wait().unwrap();
        (status.code(), std::mem::take(&mut self.seen))
    }

    /// SIGINT, then the exit: status 0 and a last line `stopped after ...`.
    #[track_caller]
    fn stop(self) -> Vec<String> {
        self.signal(libc::SIGINT);
        let (code, lines) = self.wait();
        assert_eq!(code, Some(0), "{lines:#?}");
        assert!(
            lines
                .last()
                .is_some_and(|l| l.starts_with("stopped after ")),
            "{lines:#?}"
        );
        lines
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client connection.
struct Conn {
    reader: BufReader<TcpStream>,
}

/// A response: status, headers (names lowercased), body.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Conn {
    fn send(&mut self, raw: &[u8]) {
        self.reader.get_mut().write_all(raw).unwrap();
    }

    /// Sends `METHOD PATH` with `body` and reads the response.
    #[track_caller]
    fn request(&mut self, method: &str, path: &str, body: &str) -> Response {
        let raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.send(raw.as_bytes());
        self.response()
            .unwrap_or_else(|| panic!("{method} {path}: the server closed the connection"))
    }

    /// Reads one response; `None` if the connection ends first (closed or
    /// reset) without one.
    #[track_caller]
    fn response(&mut self) -> Option<Response> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
            Err(e) => panic!("reading a response: {e}"),
        }
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not a status line: {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            self.reader.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (n, v) = h.split_once(':').unwrap();
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        let mut r = Response {
            status,
            headers,
            body: String::new(),
        };
        let n: usize = r.header("content-length").unwrap().parse().unwrap();
        let mut body = vec![0; n];
        self.reader.read_exact(&mut body).unwrap();
        r.body = String::from_utf8(body).unwrap();
        Some(r)
    }

    /// Asserts the server closed the connection without another response.
    #[track_caller]
    fn assert_closed(&mut self) {
        let mut rest = Vec::new();
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.is_empty(), "got {:?}", String::from_utf8_lossy(&rest)),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
    }

    fn local_addr(&self) -> SocketAddr {
        self.reader.get_ref().local_addr().unwrap()
    }
}

fn fnv1a(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}\n")
}

#[test]
fn http_server_keeps_one_connection_alive_across_every_route_and_a_panicking_request() {
    let mut server = Server::start("keep-alive");
    let mut c = server.connect();
    let mut statuses = Vec::new();
    let mut check = |r: Response| {
        assert_eq!(r.header("connection"), Some("keep-alive"), "{r:?}");
        statuses.push(r.status);
        r.body
    };
    assert!(check(c.request("GET", "/", "")).contains("POST /checksum\n"));
    assert_eq!(
        check(c.request("GET", "/files/hello.txt", "")),
        "hello, file\n"
    );
    check(c.request("GET", "/files/../hello.txt", ""));
    check(c.request("GET", "/files/absent.txt", ""));
    assert_eq!(
        check(c.request("POST", "/checksum", "hello world")),
        fnv1a(b"hello world")
    );
    let uname = std::process::Command::new("uname")
        .arg("-sr")
        .output()
        .unwrap();
    assert_eq!(
        check(c.request("GET", "/uname", "")),
        String::from_utf8(uname.stdout).unwrap()
    );
    // A panicking request: 500, and the same connection serves on.
    check(c.request("GET", "/panic", ""));
    // The request timeout (1000 ms) cancels a request that would take a
    // minute.
    assert_eq!(
        check(c.request("GET", "/sleep?ms=60000", "")),
        "GET /sleep?ms=60000 took longer than 1000 ms\n"
    );
    let status = check(c.request("GET", "/status", ""));
    assert_eq!(statuses, [200, 200, 403, 404, 200, 200, 500, 504, 200]);
    assert_eq!(status, "connections 1\nserved 8\nin flight GET /status\n");
    let failed = server.wait_line(|l| l.starts_with("request GET /panic failed: "));
    assert!(failed.ends_with("panicked: panic requested"), "{failed}");
    drop(c);
    server.stop();
}

#[test]
fn http_server_logs_a_crashed_connection_through_its_scope_and_serves_on() {
    let mut server = Server::start("crash");
    let mut x = server.connect();
    let peer = x.local_addr();
    x.send(b"GET /crash HTTP/1.1\r\nHost: test\r\n\r\n");
    x.assert_closed();
    let line = server.wait_line(|l| l.starts_with("connection from "));
    assert!(
        line.starts_with(&format!("connection from {peer} failed: coroutine ")),
        "{line}"
    );
    assert!(
        line.ends_with(&format!("panicked: crash requested by {peer}; serving on")),
        "{line}"
    );
    let mut y = server.connect();
    let r = y.request("GET", "/status", "");
    assert_eq!(
        (r.status, r.body.as_str()),
        (200, "connections 1\nserved 0\nin flight GET /status\n")
    );
    drop(y);
    let lines = server.stop();
    assert!(!lines.iter().any(|l| l.starts_with("error:")), "{lines:#?}");
}

#[test]
fn http_server_shuts_down_closing_idle_connections_and_finishing_busy_ones() {
    let mut server = Server::start("shutdown");
    // B: idle after one request.
    let mut b = server.connect();
    assert_eq!(b.request("GET", "/status", "").status, 200);
    // A: busy, half of its body sent.
    let mut a = server.connect();
    a.send(b"POST /checksum HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\n\r\nhello");
    // C: asks until the server has A's request in hand.
    let mut c = server.connect();
    let deadline = Instant::now() + PATIENCE;
    while !c
        .request("GET", "/status", "")
        .body
        .contains("in flight POST /checksum\n")
    {
        assert!(Instant::now() < deadline, "A's request never arrived");
    }
    server.signal(libc::SIGINT);
    // The idle connections are closed at once...
    b.assert_closed();
    c.assert_closed();
    let line = server.wait_line(|l| l.starts_with("signal "));
    assert_eq!(
        line,
        "signal 2: shutting down: 3 connection(s) open, 1 busy"
    );
    // ...the busy one finishes its request, then closes.
    a.send(b"world");
    let r = a.response().expect("the busy connection's response");
    assert_eq!(
        (r.status, r.body.as_str()),
        (200, fnv1a(b"helloworld").as_str())
    );
    assert_eq!(r.header("connection"), Some("close"));
    a.assert_closed();
    let (code, lines) = server.wait();
    assert_eq!(code, Some(0), "{lines:#?}");
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("stopped after ")),
        "{lines:#?}"
    );
}

#[test]
fn http_server_answers_help_and_refuses_bad_input_in_one_line() {
    let run = |args: &[&str]| {
        let out = Command::new(SERVER)
            .args(args)
            .env_remove("ASYNC_PLUGIN_NOTICE")
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("usage: http_server [ADDR]"), "{stdout}");
    let (code, _, stderr) = run(&["--bogus"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "error: unknown argument \"--bogus\" (http_server --help shows the usage)\n"
    );
    let (code, _, stderr) = run(&["127.0.0.1:0", "--request-timeout", "soon"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "error: invalid --request-timeout \"soon\": expected milliseconds (http_server --help \
         shows the usage)\n"
    );
    // An address it cannot listen on: one line (after the plugin notice of
    // a `.so` cell), exit status 1.
    let (code, _, stderr) = run(&["192.0.2.1:9"]);
    assert_eq!(code, Some(1), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("async-std-api: "))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("error: cannot listen on 192.0.2.1:9: "),
        "{stderr}"
    );
}
