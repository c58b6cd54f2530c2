//! A UDP echo server and a client, in one program.
//!
//! ```text
//! cargo run -p async-std-api --example udp_echo                  # a self-test: 5 round trips, then exit
//! cargo run -p async-std-api --example udp_echo -- 127.0.0.1:9000 # serve until Ctrl-C
//! ASYNC_REACTOR=uring cargo run -p async-std-api --example udp_echo
//! ```
//!
//! The server answers each datagram with the same bytes, to its sender. With
//! an address it serves until SIGINT/SIGTERM (try `nc -u 127.0.0.1 9000`);
//! without one it binds a free port, sends five datagrams from a client
//! coroutine, checks each answer and exits 0. Every `recv_from` suspends
//! only its coroutine.

use std::process::ExitCode;

use async_std_api::net::UdpSocket;
use async_std_api::{graceful_shutdown, signal, spawn, spawn_try};

fn serve(socket: &UdpSocket) -> std::io::Result<()> {
    let mut buf = [0u8; 64 * 1024];
    loop {
        let (n, peer) = socket.recv_from(&mut buf)?;
        socket.send_to(&buf[..n], peer)?;
    }
}

fn main() -> ExitCode {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "-h" || a == "--help")
    {
        println!("usage: udp_echo [ADDR]\n  serves UDP echo on ADDR until Ctrl-C; without ADDR, a self-test of 5 round trips");
        std::process::exit(0);
    }
    let addr = std::env::args().nth(1);
    let result = async_std_api::run(move || {
        let bind = addr.clone().unwrap_or_else(|| "127.0.0.1:0".to_owned());
        let socket = match UdpSocket::bind(bind.as_str()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("udp_echo: cannot bind {bind}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let local = socket.local_addr().expect("a bound socket has an address");
        if addr.is_some() {
            println!("udp_echo: serving on {local}; Ctrl-C to stop");
            spawn_try(|| {
                signal::any(&[signal::SIGINT, signal::SIGTERM])?.wait()?;
                graceful_shutdown();
                Ok::<(), std::io::Error>(())
            });
            // Ends with the cancellation graceful shutdown delivers.
            let _ = serve(&socket);
            return ExitCode::SUCCESS;
        }
        let server = spawn(move || serve(&socket));
        let client = UdpSocket::bind("127.0.0.1:0").expect("bind the client");
        client.connect(local).expect("connect the client");
        let mut buf = [0u8; 64];
        for i in 0..5 {
            let msg = format!("datagram {i}");
            client.send(msg.as_bytes()).expect("send");
            let n = client.recv(&mut buf).expect("receive the echo");
            assert_eq!(&buf[..n], msg.as_bytes());
            println!("echoed: {msg}");
        }
        server.cancel();
        ExitCode::SUCCESS
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("udp_echo: {e}");
            ExitCode::FAILURE
        }
    }
}
