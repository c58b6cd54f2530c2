//! An echo server: one coroutine per connection, plain blocking-style code
//! with `std::io` traits.
//!
//! ```text
//! cargo run -p async-std-api --example echo_server -- 127.0.0.1:8080
//! RUST_LOG=debug ASYNC_SCHEDULER=fifo ASYNC_REACTOR=mio cargo run -p async-std-api --example echo_server
//! ```
//!
//! It runs until SIGINT (Ctrl-C) or SIGTERM, which start graceful shutdown:
//! every coroutine is cancelled (the accept loop and each connection), the
//! connections' cleanup runs, and the program exits. Try it with
//! `nc 127.0.0.1 8080`.

use std::io::{BufRead, BufReader, Write};

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{graceful_shutdown, io, signal, spawn, spawn_try};
use tracing_subscriber::EnvFilter;

fn handle(conn: TcpStream) -> std::io::Result<()> {
    let peer = conn.peer_addr()?;
    tracing::info!("{peer}: connected");
    let mut reader = BufReader::new(&conn);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        (&conn).write_all(line.as_bytes())?;
    }
    tracing::info!("{peer}: closed");
    Ok(())
}

fn main() -> Result<(), async_std_api::Error> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    async_std_api::run(move || {
        let listener = match TcpListener::bind(&addr) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("cannot listen on {addr}: {e}");
                return;
            }
        };
        eprintln!("listening on {}", listener.local_addr().unwrap());
        // SIGINT / SIGTERM: graceful shutdown (R-GS1).
        spawn_try(|| -> std::io::Result<()> {
            let signals = signal::any(&[signal::SIGINT, signal::SIGTERM])?;
            signals.wait()?;
            eprintln!("signal {:?}: shutting down", signals.received());
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
                Err(e) => tracing::warn!("accept failed: {e}"),
            }
        }
        eprintln!("stopped accepting");
    })
}
