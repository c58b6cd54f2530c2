//! An echo server: one coroutine per connection, plain blocking-style code
//! with `std::io` traits.
//!
//! ```text
//! cargo run -p async-std-api --example echo_server -- 127.0.0.1:8080
//! RUST_LOG=debug ASYNC_SCHEDULER=fifo ASYNC_REACTOR=mio cargo run -p async-std-api --example echo_server
//! ```
//!
//! It echoes every byte it receives, as it receives them, and runs until
//! SIGINT (Ctrl-C) or SIGTERM, which start graceful shutdown: every
//! coroutine is cancelled (the accept loop and each connection), the
//! connections' cleanup runs, and the program exits. Try it with
//! `nc 127.0.0.1 8080`. If it cannot listen, it says why and exits 1.
//!
//! The accept loop is what a server's should be: a cancellation ends it;
//! running out of descriptors (`EMFILE`, `ENFILE`) or memory for sockets is
//! waited out, since retrying at once cannot succeed until a connection
//! closes (the runtime's cooperative budget keeps even a loop that retries
//! at once from starving the connections and the signal handler, but it
//! would still burn a core); any other error is logged and skipped.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{graceful_shutdown, io, signal, sleep, spawn, spawn_try};
use tracing_subscriber::EnvFilter;

/// `ENFILE`, `EMFILE`, `ENOBUFS`, `ENOMEM` on Linux: out of descriptors or
/// socket memory, for the process or the system.
const RESOURCE_ERRORS: [i32; 4] = [23, 24, 105, 12];

/// How long the accept loop waits when it ran out of descriptors.
const BACKOFF: Duration = Duration::from_millis(50);

fn handle(mut conn: TcpStream) -> std::io::Result<()> {
    let peer = conn.peer_addr()?;
    tracing::info!("{peer}: connected");
    // On the coroutine's stack: an idle connection costs its stack pages
    // and nothing on the heap.
    let mut buf = [0u8; 4096];
    loop {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        conn.write_all(&buf[..n])?;
    }
    tracing::info!("{peer}: closed");
    Ok(())
}

fn main() -> ExitCode {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "-h" || a == "--help")
    {
        println!("usage: echo_server [ADDR]\n  an echo server, a coroutine per connection, on ADDR (default 127.0.0.1:8080); Ctrl-C stops it");
        std::process::exit(0);
    }
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let served = async_std_api::run(move || -> Result<(), String> {
        let listener =
            TcpListener::bind(&addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        eprintln!("listening on {}", listener.local_addr().unwrap());
        // SIGINT / SIGTERM: graceful shutdown (R-GS1).
        spawn_try(|| -> std::io::Result<()> {
            let signals = signal::any(&[signal::SIGINT, signal::SIGTERM])?;
            signals.wait()?;
            match signals.received() {
                Some(signum) => eprintln!("signal {signum}: shutting down"),
                None => eprintln!("shutting down"),
            }
            graceful_shutdown();
            Ok(())
        });
        for conn in listener.incoming() {
            match conn {
                Ok(conn) => {
                    spawn(move || {
                        if let Err(e) = handle(conn) {
                            if io::cancelled(&e).is_none() {
                                tracing::warn!("connection failed: {e}");
                            }
                        }
                    });
                }
                // Cancellation is delivered once (edge-triggered): stop
                // accepting, or the next accept would wait forever.
                Err(e) if io::cancelled(&e).is_some() => break,
                Err(e)
                    if e.raw_os_error()
                        .is_some_and(|n| RESOURCE_ERRORS.contains(&n)) =>
                {
                    tracing::warn!("accept failed: {e}: waiting {} ms", BACKOFF.as_millis());
                    if sleep(BACKOFF).is_err() {
                        break;
                    }
                }
                Err(e) => tracing::warn!("accept failed: {e}"),
            }
        }
        eprintln!("stopped accepting");
        Ok(())
    });
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
