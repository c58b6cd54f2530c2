//! The smallest fast HTTP/1.1 server: `Hello, World!` in plain text, a
//! coroutine per connection, pipelined requests answered in one write.
//! Copy it as the start of a service; `http_server.rs` shows what a service
//! adds (routes, files, deadlines, a handler that keeps it up, graceful
//! shutdown).
//!
//! ```text
//! cargo run --release -p async-std-api --example http_hello -- 127.0.0.1:8080
//! cargo run --release -p async-std-api --example http_hello -- 127.0.0.1:8080 --loops 2
//! ASYNC_REACTOR=uring cargo run --release -p async-std-api --example http_hello
//! curl -i localhost:8080/
//! ```
//!
//! `--loops N` runs N event loops, each a thread with its own listener on
//! the same address (`SO_REUSEPORT`: the kernel spreads connections over
//! them), so N needs a fixed port. It prints `listening on <addr>` on
//! standard error once every loop listens.
//!
//! Each connection's coroutine reads what arrived, answers every complete
//! request in it into one buffer, and writes that buffer once: a client
//! that pipelines 16 requests gets 16 responses in one system call. The
//! code is plain blocking-style Rust: `read` and `write_all` suspend only
//! the connection's coroutine. Request heads are parsed with `httparse`; a
//! malformed one is answered `400` and the connection is closed. `cargo
//! xtask bench` (scenario `http`) measures this very code against
//! may_minihttp and hyper.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use async_std_api::net::{TcpListener, TcpStream};

/// Largest request head accepted; a longer one is answered `431`.
const MAX_HEAD: usize = 8192;

const BODY: &[u8] = b"Hello, World!";

fn main() -> ExitCode {
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut loops = 1usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--loops" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => loops = n,
                _ => return usage("--loops needs a number above 0"),
            },
            a if !a.starts_with('-') => addr = a.to_owned(),
            other => return usage(&format!("unknown option {other}")),
        }
    }
    let addr: SocketAddr = match addr.parse() {
        Ok(a) => a,
        Err(e) => return usage(&format!("bad address {addr:?}: {e}")),
    };
    if loops > 1 && addr.port() == 0 {
        return usage("--loops above 1 needs a fixed port (every loop binds the same one)");
    }
    // The last loop to listen says so: then every loop accepts.
    let listening = std::sync::Arc::new(AtomicUsize::new(0));
    let result =
        async_std_api::Builder::new()
            .threads(loops)
            .run_per_core(move |_| -> io::Result<()> {
                let listener = if loops == 1 {
                    TcpListener::bind(addr)
                } else {
                    TcpListener::bind_reuseport(addr)
                }
                .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
                if listening.fetch_add(1, Ordering::AcqRel) + 1 == loops {
                    eprintln!("listening on {}", listener.local_addr()?);
                }
                serve(&listener)
            });
    match result {
        Ok(loops) => match loops.into_iter().find_map(Result::err) {
            Some(e) => {
                eprintln!("http_hello: {e}");
                ExitCode::FAILURE
            }
            None => ExitCode::SUCCESS,
        },
        Err(e) => {
            eprintln!("http_hello: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!("http_hello: {why}\nusage: http_hello [ADDR] [--loops N]");
    ExitCode::from(2)
}

/// Accepts connections on `listener` forever, a coroutine for each. A
/// failed accept (too many open files, say) is said and the loop goes on.
pub fn serve(listener: &TcpListener) -> io::Result<()> {
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                conn.set_nodelay(true)?;
                async_std_api::spawn(move || {
                    // A reset or a malformed request ends only this
                    // connection.
                    let _ = connection(conn);
                });
            }
            Err(e) => eprintln!("http_hello: accept: {e}"),
        }
    }
}

/// Serves one connection until the client closes it.
pub fn connection(mut conn: TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; 4096];
    let (mut filled, mut out) = (0usize, Vec::with_capacity(4096));
    loop {
        let n = conn.read(&mut buf[filled..])?;
        if n == 0 {
            return Ok(());
        }
        filled += n;
        let mut start = 0;
        // One clock read for everything this read brought.
        let date = DATE.with(|d| *d.borrow_mut().now());
        // Every complete request that arrived, answered into `out`.
        while start < filled {
            // Left uninitialised: httparse writes the ones it fills in.
            let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; 32];
            let mut req = httparse::Request::new(&mut []);
            match req.parse_with_uninit_headers(&buf[start..filled], &mut headers) {
                Ok(httparse::Status::Complete(len)) => {
                    respond(&req, &date, &mut out);
                    start += len;
                }
                Ok(httparse::Status::Partial) => break,
                Err(_) => {
                    out.extend_from_slice(
                        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                    return conn.write_all(&out);
                }
            }
        }
        if !out.is_empty() {
            conn.write_all(&out)?;
            out.clear();
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        if filled == buf.len() {
            if buf.len() >= MAX_HEAD {
                return conn.write_all(
                    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
            buf.resize(buf.len() * 2, 0);
        }
    }
}

/// The head of a `200` answer up to its `Date` value: fixed, so it is one
/// copy (the length of `BODY` is checked below).
const OK_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nServer: http_hello\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nDate: ";

const _: () = assert!(
    BODY.len() == 13,
    "OK_HEAD's Content-Length is BODY's length"
);

/// Appends the response to one request; `date` is the `Date` header's value.
fn respond(req: &httparse::Request<'_, '_>, date: &[u8; 29], out: &mut Vec<u8>) {
    if req.method == Some("GET") {
        out.extend_from_slice(OK_HEAD);
        out.extend_from_slice(date);
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(BODY);
    } else {
        out.extend_from_slice(
            b"HTTP/1.1 405 Method Not Allowed\r\nServer: http_hello\r\nAllow: GET\r\nContent-Length: 0\r\nDate: ",
        );
        out.extend_from_slice(date);
        out.extend_from_slice(b"\r\n\r\n");
    }
}

thread_local! {
    /// The `Date` header's value, formatted once per second per loop.
    static DATE: RefCell<Date> = const { RefCell::new(Date { secs: u64::MAX, text: [0; 29] }) };
}

/// An RFC 9110 IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and the second
/// it is for.
struct Date {
    secs: u64,
    text: [u8; 29],
}

impl Date {
    fn now(&mut self) -> &[u8; 29] {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if secs != self.secs {
            self.secs = secs;
            self.text = imf_fixdate(secs);
        }
        &self.text
    }
}

/// Formats seconds since the epoch as an IMF-fixdate (the civil-from-days
/// algorithm of Howard Hinnant's date library, for the proleptic Gregorian
/// calendar).
fn imf_fixdate(secs: u64) -> [u8; 29] {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let text = format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    let mut out = [b' '; 29];
    out.copy_from_slice(&text.as_bytes()[..29]);
    out
}

#[cfg(test)]
mod tests {
    use super::imf_fixdate;

    #[test]
    fn dates_are_imf_fixdates() {
        assert_eq!(&imf_fixdate(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&imf_fixdate(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(
            &imf_fixdate(1_709_210_096),
            b"Thu, 29 Feb 2024 12:34:56 GMT"
        );
    }
}
