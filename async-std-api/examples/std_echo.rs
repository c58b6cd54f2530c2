//! A TCP echo server written with std only, run in coroutines through the
//! C library hooks; and the cost of a hook that passes a call through.
//!
//! ```text
//! cargo run --release -p async-std-api --features hooks --example std_echo [ADDR]
//! cargo run --release -p async-std-api --features hooks --example std_echo -- --calls 10000000
//! ```
//!
//! The server: `std::net::TcpListener` and `std::net::TcpStream` with plain
//! `read`/`write_all`, a coroutine per connection, hooks on (default
//! address `127.0.0.1:0`); it prints `listening <addr>` once it listens
//! (`cargo xtask bench` drives it under callgrind against the same server
//! written with this crate's `net::TcpStream`).
//!
//! `--calls N`: times `N` calls of `read(-1, ...)` (it fails at once with
//! `EBADF`) through the hook outside a coroutine, and the C library's own
//! `read` found with `dlsym(RTLD_NEXT)`, alternating five rounds of each,
//! and prints the best round of each: `hooked_ns=<ns per call> bare_ns=<ns
//! per call>`. `--calls-only hooked|bare N` makes just those calls (for an
//! instruction count under callgrind).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Instant;

use async_std_api::{spawn, Builder};

fn main() -> Result<(), async_std_api::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-h" | "--help") => {
            println!(
                "usage: std_echo [ADDR] | std_echo --calls N\n  a std echo server in coroutines \
                 through the hooks, or the cost of a hook that passes a call through"
            );
            Ok(())
        }
        Some("--calls") => {
            let n: u64 = args
                .get(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(10_000_000);
            passthrough(n);
            Ok(())
        }
        Some("--calls-only") => {
            let hooked = args.get(1).is_some_and(|s| s == "hooked");
            let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
            let f = reader(hooked);
            for _ in 0..n {
                std::hint::black_box(f());
            }
            Ok(())
        }
        addr => serve(addr.unwrap_or("127.0.0.1:0").to_owned()),
    }
}

fn serve(addr: String) -> Result<(), async_std_api::Error> {
    Builder::new().hooks(true).run(move || {
        let listener = TcpListener::bind(addr.as_str()).expect("bind");
        println!("listening {}", listener.local_addr().expect("addr"));
        let _ = std::io::stdout().flush();
        loop {
            let (mut conn, _) = listener.accept().expect("accept");
            conn.set_nodelay(true).expect("nodelay");
            spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if conn.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
    })
}

/// `read(-1, buf, 1)`, through the hook or the C library's own.
fn reader(hooked: bool) -> impl Fn() -> isize {
    type Read = unsafe extern "C" fn(i32, *mut libc::c_void, usize) -> isize;
    // The hook is `libc::read`, which this program's own definition
    // answers.
    let f: Read = if hooked {
        libc::read
    } else {
        // SAFETY: the C library's `read`, the next definition after this
        // program's hook; its type is read(2)'s.
        unsafe {
            std::mem::transmute::<*mut libc::c_void, Read>(libc::dlsym(
                libc::RTLD_NEXT,
                c"read".as_ptr(),
            ))
        }
    };
    move || {
        let mut byte = 0u8;
        // SAFETY: `read` on an invalid descriptor fails before it touches
        // the buffer, which is valid anyway.
        unsafe { f(std::hint::black_box(-1), (&raw mut byte).cast(), 1) }
    }
}

fn passthrough(n: u64) {
    let time = |f: &dyn Fn() -> isize| {
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(f());
        }
        start.elapsed().as_nanos() as f64 / n as f64
    };
    let (hooked, bare) = (reader(true), reader(false));
    let (mut best_hooked, mut best_bare) = (f64::MAX, f64::MAX);
    for _ in 0..5 {
        best_hooked = best_hooked.min(time(&hooked));
        best_bare = best_bare.min(time(&bare));
    }
    println!("hooked_ns={best_hooked:.2} bare_ns={best_bare:.2}");
}
