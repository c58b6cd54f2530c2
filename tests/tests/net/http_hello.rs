//! The `http_hello` example (async-std-api/examples/http_hello.rs, built as
//! a binary of this package), run on the cell's backends: pipelined
//! requests answered in order, a request split across writes, a method it
//! does not serve, a malformed request (`400`, then the connection closes),
//! and the refusals of its command line.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SERVER: &str = env!("CARGO_BIN_EXE_http_hello");

/// A bound on any one read, never a synchronisation.
const PATIENCE: Duration = Duration::from_secs(30);

/// The example on a free port; killed on drop.
struct Hello {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Hello {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Hello {
    let mut child = Command::new(SERVER)
        .arg("127.0.0.1:0")
        .env_remove("ASYNC_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {SERVER}: {e}"));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // The plugin notice of a `.so` cell may come first.
    let addr = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("{SERVER} ended before listening"))
            .unwrap();
        if let Some(a) = line.strip_prefix("listening on ") {
            break a.parse().unwrap();
        }
    };
    Hello { child, addr }
}

/// One response: its status, its headers by name, its body.
type Reply = (u16, Vec<(String, String)>, Vec<u8>);

/// Reads `n` whole responses from `s`.
fn responses(s: &mut TcpStream, n: usize) -> Vec<Reply> {
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let (mut buf, mut out) = (Vec::new(), Vec::new());
    let mut chunk = [0u8; 4096];
    while out.len() < n {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut resp = httparse::Response::new(&mut headers);
        if let Ok(httparse::Status::Complete(head)) = resp.parse(&buf) {
            let headers: Vec<(String, String)> = resp
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            let len: usize = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .map(|(_, v)| v.parse().unwrap())
                .expect("every response has a Content-Length");
            if buf.len() >= head + len {
                out.push((resp.code.unwrap(), headers, buf[head..head + len].to_vec()));
                buf.drain(..head + len);
                continue;
            }
        }
        let got = s.read(&mut chunk).expect("a response within the patience");
        assert!(got > 0, "the server closed after {} responses", out.len());
        buf.extend_from_slice(&chunk[..got]);
    }
    assert!(buf.is_empty(), "bytes after the responses: {buf:?}");
    out
}

#[test]
fn pipelined_requests_are_answered_in_order_and_a_split_one_waits_for_its_rest() {
    let server = start();
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n\
          DELETE /x HTTP/1.1\r\nHost: a\r\n\r\n\
          GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\n",
    )
    .unwrap();
    let r = responses(&mut s, 3);
    let got: Vec<(u16, &[u8])> = r.iter().map(|(c, _, b)| (*c, &b[..])).collect();
    assert_eq!(
        got,
        [
            (200, &b"Hello, World!"[..]),
            (405, &b""[..]),
            (200, &b"Hello, World!"[..])
        ]
    );
    let header = |i: usize, name: &str| {
        r[i].1
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header(0, "content-type").as_deref(), Some("text/plain"));
    assert_eq!(header(1, "allow").as_deref(), Some("GET"));
    let date = header(0, "date").expect("a Date header");
    assert_eq!(date.len(), 29, "{date}");
    assert!(date.ends_with(" GMT"), "{date}");
    // A request in two segments (no Nagle delay between them) is answered
    // once, whole, on the same connection (keep-alive), whether the server
    // reads it in one read or two.
    s.set_nodelay(true).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
    s.write_all(b"st: a\r\n\r\n").unwrap();
    let r = responses(&mut s, 1);
    assert_eq!((r[0].0, &r[0].2[..]), (200, &b"Hello, World!"[..]));
}

#[test]
fn a_malformed_request_is_answered_400_and_the_connection_closes() {
    let server = start();
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nbad header line\r\n\r\n")
        .unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert_eq!(
        all,
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    // The server serves on.
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    assert_eq!(responses(&mut s, 1)[0].0, 200);
}

#[test]
fn bad_command_lines_are_refused_in_one_line() {
    let run = |args: &[&str]| {
        let out = Command::new(SERVER)
            .args(args)
            .env_remove("ASYNC_CONFIG")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let line = err
            .lines()
            .find(|l| l.starts_with("http_hello: "))
            .unwrap_or_default()
            .to_owned();
        (out.status.code(), line)
    };
    assert_eq!(
        run(&["127.0.0.1:0", "--loops", "2"]),
        (
            Some(2),
            "http_hello: --loops above 1 needs a fixed port (every loop binds the same one)"
                .to_owned()
        )
    );
    assert_eq!(
        run(&["--loops", "0"]),
        (
            Some(2),
            "http_hello: --loops needs a number above 0".to_owned()
        )
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, line) = run(&[&addr]);
    assert_eq!(code, Some(1));
    assert!(
        line.starts_with(&format!("http_hello: cannot listen on {addr}: ")),
        "{line}"
    );
}
