//! `slow-http <delay-ms>`: an HTTP/1.1 server on a free loopback port that
//! answers every request after the delay with `hello <path>`. It prints its
//! address on one line, then serves until killed: a coroutine of this
//! runtime per connection (hooks off), so a hundred connections cost a
//! hundred small stacks rather than a hundred thread starts.

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use async_std_api::{net, sleep, spawn, Builder};

fn main() {
    let delay = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or_else(|| {
            eprintln!("usage: slow-http <delay-ms>");
            std::process::exit(2)
        });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("{}", listener.local_addr().expect("its address"));
    std::io::stdout().flush().expect("stdout");
    Builder::new()
        .hooks(false)
        .run(move || {
            let listener = net::TcpListener::from_std(listener).expect("listener");
            while let Ok((conn, _)) = listener.accept() {
                spawn(move || serve(conn, delay));
            }
        })
        .expect("runtime");
}

fn serve(conn: net::TcpStream, delay: Duration) {
    let mut r = BufReader::new(&conn);
    loop {
        let mut request = String::new();
        if r.read_line(&mut request).map_or(true, |n| n == 0) {
            return;
        }
        let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
        let mut header = String::new();
        while r.read_line(&mut header).is_ok_and(|n| n > 2) {
            header.clear();
        }
        if sleep(delay).is_err() {
            return;
        }
        let body = format!("hello {path}");
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: text/plain\r\n\r\n{body}",
            body.len()
        );
        if (&conn).write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}
