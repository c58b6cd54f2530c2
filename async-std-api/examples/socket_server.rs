//! The RFC's socket server ("Scope Hierarchy"): one scope for the server,
//! a child scope per connection, and inside it a limiter scope for the
//! connection limiter and the connection checker. SIGINT or SIGTERM cancels
//! the server scope; the server then waits (at most 5 s) for the
//! connections' cleanup.
//!
//! ```text
//! GLOBAL <- global scope
//!  └── server (Scope::new)                       <- socket_server
//!       ├── signal watcher, accept loop          <- coroutines of the server scope
//!       ├── connection scope 1 (Scope::inherit)  <- connection_handler
//!       │    ├── handler                          (parse, dispatch, respond)
//!       │    └── limiter scope (Scope::inherit)
//!       │         ├── connection_limiter          (cancels the connection after 10 s)
//!       │         └── connection_checker          (cancels it when the client leaves)
//!       └── connection scope 2 ...
//! ```
//!
//! ```text
//! cargo run -p async-std-api --example socket_server -- 127.0.0.1:8080
//! cargo run -p async-std-api --example socket_server -- --demo
//! ```
//!
//! With `--demo` it serves two clients of its own (one waits for its
//! answer, one leaves early) and then sends itself SIGINT.

use std::io::{BufRead, BufReader, Read, Write};
use std::rc::Rc;

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::{delay, io, signal, spawn, spawn_in, timeout, Scope, ScopeRef};

/// Cancels the connection's scope with a reason (the RFC's `$cancelToken`).
type CancelToken = Rc<dyn Fn(&str)>;

fn connection_checker(conn: Rc<TcpStream>, cancel: CancelToken) {
    // The handler reads nothing more once it parsed the request, so a read
    // here sees only the client going away.
    let mut byte = [0u8; 1];
    loop {
        match (&*conn).read(&mut byte) {
            Ok(0) => {
                cancel("The connection was closed by user");
                return;
            }
            Ok(_) => continue,
            Err(_) => return, // cancelled (or broken): nothing to check
        }
    }
}

fn connection_limiter(cancel: CancelToken) {
    if delay(10_000).is_ok() {
        cancel("The request processing limit has been reached.");
    }
}

fn dispatch_request(request: &str) -> std::io::Result<String> {
    // Slow work: long enough for a client to give up meanwhile.
    delay(300)?;
    Ok(format!("echo: {request}"))
}

fn connection_handler(conn: TcpStream) {
    // A child of the current (server) scope: cancelling the server cancels
    // it. The handler coroutine owns it: the scope's lifetime is the
    // coroutine's (the RFC's point of responsibility).
    let scope = Scope::inherit();
    let target = ScopeRef::clone(&scope);
    spawn_in(&target, move || {
        let conn = Rc::new(conn);
        let peer = conn.peer_addr().ok();
        let limiter_scope = Scope::inherit();
        let s = ScopeRef::clone(&scope);
        let cancel: CancelToken = Rc::new(move |why: &str| {
            println!("connection {peer:?}: {why}");
            s.cancel_with(why);
        });
        let c = cancel.clone();
        spawn_in(&limiter_scope, move || connection_limiter(c)).unwrap();
        let result = (|| -> std::io::Result<()> {
            let mut line = String::new();
            BufReader::new(&*conn).read_line(&mut line)?;
            let (checker_conn, c) = (conn.clone(), cancel.clone());
            spawn_in(&limiter_scope, move || connection_checker(checker_conn, c)).unwrap();
            let response = dispatch_request(line.trim())?;
            (&*conn).write_all(format!("HTTP/1.1 200 OK\r\n\r\n{response}\n").as_bytes())
        })();
        match result {
            Ok(()) => println!("connection {peer:?}: answered"),
            Err(e) => {
                if io::cancelled(&e).is_none() {
                    let _ = (&*conn).write_all(b"HTTP/1.1 500 Internal Server Error\r\n\r\n");
                }
                println!("connection {peer:?}: ended: {e}");
            }
        }
        // finally: close our end and cancel what is left of the connection
        // (limiter, checker).
        let _ = conn.shutdown(std::net::Shutdown::Both);
        scope.cancel();
    })
    .expect("the server scope is open while it accepts");
}

fn socket_server(listener: TcpListener) {
    let scope = Scope::new();
    let s = ScopeRef::clone(&scope);
    // The signal watcher: a coroutine of the server scope.
    spawn_in(&scope, move || {
        let signals = signal::any(&[signal::SIGINT, signal::SIGTERM]);
        match signals.and_then(|s| s.wait().map(|()| s.received())) {
            Ok(Some(signum)) => println!("signal {signum}: Server shutdown"),
            Ok(None) => println!("Server shutdown"),
            Err(e) => println!("cannot watch signals ({e}): Server shutdown"),
        }
        s.cancel_with("Server shutdown");
    })
    .unwrap();
    // The accept loop: the server runs as long as it does.
    let accept = spawn_in(&scope, move || {
        for conn in listener.incoming() {
            match conn {
                Ok(conn) => connection_handler(conn),
                Err(e) if io::cancelled(&e).is_some() => return,
                Err(e) => println!("Server error: {e}"),
            }
        }
    })
    .unwrap();
    if let Err(e) = accept.join() {
        println!("Server error: {e}");
    }
    println!("Server should be stopped...");
    scope.cancel();
    match scope.await_after_cancellation(None, Some(&timeout(5_000))) {
        Ok(()) => println!("Server stopped"),
        Err(e) => println!("Server error: {e}"),
    }
}

fn demo_clients(addr: std::net::SocketAddr) {
    spawn(move || {
        delay(50).unwrap();
        // A patient client.
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /patient\n").unwrap();
        let mut answer = String::new();
        let _ = c.read_to_string(&mut answer);
        println!("client 1 got: {:?}", answer.lines().last().unwrap_or(""));
        // An impatient one: leaves before the answer.
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /impatient\n").unwrap();
        delay(50).unwrap();
        drop(c);
        delay(100).unwrap();
        println!("demo: sending SIGINT to myself");
        let _ = std::process::Command::new("kill")
            .args(["-INT", &std::process::id().to_string()])
            .status();
    });
}

fn main() -> Result<(), async_std_api::Error> {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "-h" || a == "--help")
    {
        println!("usage: socket_server [ADDR | --demo]\n  the RFC's scoped socket server on ADDR (default 127.0.0.1:8080) until SIGINT/SIGTERM; --demo runs a client against it and exits");
        std::process::exit(0);
    }
    let arg = std::env::args().nth(1);
    let demo = arg.as_deref() == Some("--demo");
    let addr = match (&arg, demo) {
        (Some(a), false) => a.clone(),
        _ if demo => "127.0.0.1:0".to_owned(),
        _ => "127.0.0.1:8080".to_owned(),
    };
    let bound = async_std_api::run(move || {
        let listener = match TcpListener::bind(&addr) {
            Ok(l) => l,
            Err(e) => return Err(format!("socket_server: cannot listen on {addr}: {e}")),
        };
        let local = listener.local_addr().unwrap();
        println!("listening on {local} (SIGINT or SIGTERM stops it)");
        if demo {
            demo_clients(local);
        }
        socket_server(listener);
        Ok(())
    })?;
    if let Err(line) = bound {
        eprintln!("{line}");
        std::process::exit(1);
    }
    Ok(())
}
