//! Unmodified std code in coroutines, with the C library hooks.
//!
//! ```text
//! cargo run -p async-std-api --features hooks --example std_hooks             # hooks on
//! ASYNC_HOOKS=0 cargo run -p async-std-api --features hooks --example std_hooks  # off, to compare
//! ```
//!
//! A plain std TCP server on a thread answers each request after 200 ms.
//! In one runtime, 100 coroutines each connect with `std::net::TcpStream`,
//! send a line and read the answer, 100 more call `std::thread::sleep(200
//! ms)`, and a ticker counts 10 ms ticks. With hooks on, everything ends
//! after about 200 ms and the ticker keeps ticking; with them off the calls
//! run one after another and the ticker stalls. Nothing here names the
//! runtime's own I/O types.

use std::cell::Cell;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_std_api::{delay, spawn, Builder};

fn main() -> Result<(), async_std_api::Error> {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "-h" || a == "--help")
    {
        println!(
            "usage: std_hooks\n  100 std TCP clients and 100 std sleeps in coroutines; \
             hooks on unless ASYNC_HOOKS=0"
        );
        return Ok(());
    }
    let addr = slow_server();
    let off = std::env::var("ASYNC_HOOKS").is_ok_and(|v| v == "0");
    Builder::new().hooks(!off).run(move || {
        let count = Rc::new(Cell::new(0u32));
        let c = count.clone();
        let ticker = spawn(move || {
            while delay(10).is_ok() {
                c.set(c.get() + 1);
            }
        });
        let start = Instant::now();
        let clients: Vec<_> = (0..100)
            .map(|i| {
                spawn(move || {
                    let mut s = TcpStream::connect(addr).expect("connect");
                    writeln!(s, "request {i}").expect("write");
                    let mut line = String::new();
                    BufReader::new(&s).read_line(&mut line).expect("read");
                    line
                })
            })
            .collect();
        let sleepers: Vec<_> = (0..100)
            .map(|_| spawn(|| std::thread::sleep(Duration::from_millis(200))))
            .collect();
        let answers = clients.into_iter().filter_map(|c| c.join().ok()).count();
        for s in sleepers {
            s.join().expect("sleeper");
        }
        let took = start.elapsed();
        ticker.cancel();
        let _ = ticker.join();
        let ticks = count.get();
        println!(
            "hooks {}: {answers} answers and 100 sleeps in {took:.0?}; the 10 ms ticker ticked {ticks} times",
            if off { "off" } else { "on" }
        );
    })
}

/// A thread-per-connection std server that answers each line after 200 ms.
fn slow_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut r = BufReader::new(&conn);
                while r.read_line(&mut line).is_ok_and(|n| n > 0) {
                    std::thread::sleep(Duration::from_millis(200));
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
    });
    addr
}
