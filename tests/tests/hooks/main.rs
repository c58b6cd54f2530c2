//! The C library hooks (`async_std_api::hooks`): unmodified std code in
//! coroutines suspends only its coroutine, keeps its semantics, and is
//! cancellable; with hooks off, or outside a coroutine, nothing changes.
//!
//! Every test builds its runtime with `Builder::hooks(true)` (or off), so
//! the matrix cell's scheduler and reactor come from the environment.

mod hooks_cancel;
mod hooks_foreign_tls;
mod hooks_fs;
mod hooks_net;
mod hooks_off;
mod hooks_semantics;
mod hooks_sleep;

use async_std_api::{delay, spawn, Builder};

/// A runtime with hooks on (the cell's scheduler and reactor).
pub fn hooked() -> Builder {
    Builder::new().hooks(true)
}

pub use tests::support::Ticker;

/// A TCP server on its own thread (its own runtime, hooks off) that
/// answers each request line after `delay_ms` with `echo: <line>`; its
/// address.
pub fn slow_server(delay_ms: u64) -> std::net::SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        Builder::new()
            .run(move || {
                let listener = async_std_api::net::TcpListener::bind("127.0.0.1:0").expect("bind");
                tx.send(listener.local_addr().expect("addr"))
                    .expect("send addr");
                loop {
                    let Ok((conn, _)) = listener.accept() else {
                        return;
                    };
                    spawn(move || {
                        use std::io::{BufRead, BufReader, Write};
                        let mut line = String::new();
                        let mut r = BufReader::new(&conn);
                        while r.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                            delay(delay_ms).expect("server delay");
                            if (&conn)
                                .write_all(format!("echo: {line}").as_bytes())
                                .is_err()
                            {
                                return;
                            }
                            line.clear();
                        }
                    });
                }
            })
            .expect("server runtime");
    });
    rx.recv().expect("server address")
}
