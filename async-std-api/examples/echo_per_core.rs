//! An echo server on every core: one loop per thread, each with its own
//! listener on the same address (`SO_REUSEPORT`), so the kernel spreads
//! the connections over the loops; one coroutine per connection.
//!
//! ```text
//! cargo run --release -p async-std-api --example echo_per_core -- 127.0.0.1:8080 2
//! ASYNC_REACTOR=uring cargo run --release -p async-std-api --example echo_per_core
//! ```
//!
//! Arguments: the address (default `127.0.0.1:8080`) and the number of
//! loops (default: one per core). SIGINT (Ctrl-C) or SIGTERM shuts every
//! loop down gracefully: each loop's accept loop and connections are
//! cancelled, their cleanup runs, and the program prints how many
//! connections each loop served and exits. If a loop cannot listen, it says
//! which and why, the other loops are shut down, and the exit status is 1.

use std::io::{Read, Write};
use std::process::ExitCode;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{io, spawn, Builder};
use tracing_subscriber::EnvFilter;

fn handle(mut conn: TcpStream) -> std::io::Result<()> {
    let mut buf = [0u8; 4096];
    loop {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        conn.write_all(&buf[..n])?;
    }
}

fn main() -> ExitCode {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "-h" || a == "--help")
    {
        println!("usage: echo_per_core [ADDR] [LOOPS]\n  an echo server on LOOPS loops (default: one per core), each with its own SO_REUSEPORT listener on ADDR (default 127.0.0.1:8080); Ctrl-C stops it");
        std::process::exit(0);
    }
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let threads = match args.next().map(|n| n.parse::<usize>()) {
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("error: the number of loops: {e}");
            return ExitCode::FAILURE;
        }
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let served = Builder::new()
        .threads(threads)
        .shutdown_on_signals(true)
        .run_per_core(move |id| -> Result<usize, String> {
            // A loop that cannot listen fails the run: the others are shut
            // down, and the error names this loop.
            let listener = TcpListener::bind_reuseport(&addr)
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            eprintln!("{id}: listening on {}", listener.local_addr().unwrap());
            let mut accepted = 0;
            for conn in listener.incoming() {
                match conn {
                    Ok(conn) => {
                        accepted += 1;
                        spawn(move || {
                            if let Err(e) = handle(conn) {
                                if io::cancelled(&e).is_none() {
                                    tracing::warn!("connection failed: {e}");
                                }
                            }
                        });
                    }
                    // The shutdown: stop accepting (delivered once).
                    Err(e) if io::cancelled(&e).is_some() => break,
                    Err(e) => tracing::warn!("{id}: accept failed: {e}"),
                }
            }
            Ok(accepted)
        });
    let per_loop = served
        .map_err(|e| e.to_string())
        .and_then(|loops| loops.into_iter().collect::<Result<Vec<usize>, String>>());
    match per_loop {
        Ok(counts) => {
            eprintln!("connections per loop: {counts:?}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
