//! A helper binary for the suite's child-process tests: runs a runtime and
//! prints what happened, so a test can check exit status and stderr.
//!
//! - `runtime_probe` (or `hello`): prints the marker from inside the main
//!   coroutine; a configuration error therefore shows *no* marker.
//! - `runtime_probe deadlock`: main and a child wait for each other; prints
//!   each coroutine's id, spawn and wait location, then `run` fails with a
//!   deadlock.
//! - `runtime_probe builder`: like `hello`, with both plugins chosen by the
//!   builder (`embedded`), which must win over the environment.
//! - `runtime_probe quiet`: like `hello`, with the builder's
//!   `plugin_notice(false)`, which must win over `ASYNC_PLUGIN_NOTICE`.
//! - `runtime_probe per_core`: like `hello` on two loops
//!   (`run_per_core`), each printing the marker.
//! - `runtime_probe emfile`: a naive accept loop (it retries at once on
//!   every error) while the process has no descriptor left: a timer
//!   coroutine must still run (it frees the descriptors), and the loop then
//!   accepts the waiting connections. Prints `accepted 3 after N failures`.
//!   Without the cooperative budget (D-28) it would spin forever.
//! - `runtime_probe tcp`: one TCP round trip whose read waits for its data
//!   (so its completion comes through the request's callback); prints
//!   `echoed ping`, or `tcp error: <error>`.
//! - `runtime_probe busy`: two coroutines yield to each other 100,000
//!   times each (the loop never idles), then `done`.
//! - `runtime_probe panic`: a coroutine panics; stderr names it before
//!   std's own panic message.
//! - `runtime_probe zombie [handler]`: safely disposes a scope whose
//!   coroutine sleeps, with a 20 ms zombie timeout and no `tracing`
//!   subscriber: the runtime's warnings go to stderr; with `handler`, an
//!   event handler is installed and they do not.
//!
//! `main` returns `Result<(), async_std_api::Error>`, so an error ends the
//! process with `Error: <one line>` and exit status 1.

use std::panic::Location;

use std::time::Duration;

use async_std_api::{current, delay, run, spawn, spawn_in, suspend, Builder, Scope};
use tests::support::PROBE_MARKER;

fn main() -> Result<(), async_std_api::Error> {
    let mode = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "hello".to_owned());
    match mode.as_str() {
        "deadlock" => run(deadlock),
        // The builder's choice beats ASYNC_REACTOR / ASYNC_SCHEDULER.
        "builder" => Builder::new()
            .scheduler("embedded")
            .reactor("embedded")
            .run(|| println!("{PROBE_MARKER}")),
        "quiet" => Builder::new()
            .plugin_notice(false)
            .run(|| println!("{PROBE_MARKER}")),
        "per_core" => Builder::new()
            .threads(2)
            .run_per_core(|_| println!("{PROBE_MARKER}"))
            .map(drop),
        "emfile" => run(emfile),
        "fallbacks" => run(fallbacks),
        "tcp" => run(tcp),
        "delay" => run(|| {
            delay(1).unwrap();
            delay(1).unwrap();
            println!("slept twice");
        }),
        "busy" => run(|| {
            let other = spawn(|| (0..100_000).for_each(|_| suspend().unwrap()));
            (0..100_000).for_each(|_| suspend().unwrap());
            other.join().unwrap();
            println!("done");
        }),
        "panic" => run(|| {
            let h = spawn(|| panic!("boom"));
            println!("spawned {} at {}", h.id(), h.coroutine().spawn_location());
            let _ = h.join();
        }),
        "zombie" => zombie(std::env::args().nth(2).as_deref() == Some("handler")),
        _ => run(|| println!("{PROBE_MARKER}")),
    }
}

fn deadlock() {
    let main = current();
    println!("main {} spawned at {}", main.id(), main.spawn_location());
    let child = spawn(move || {
        let at = Location::caller();
        println!("child waits at {}:{}", at.file(), at.line() + 2);
        main.wait()
    });
    println!(
        "child {} spawned at {}",
        child.id(),
        child.coroutine().spawn_location()
    );
    let at = Location::caller();
    println!("main waits at {}:{}", at.file(), at.line() + 2);
    let r = child.join();
    println!(
        "main woke: {}",
        r.map(|_| "joined".to_owned())
            .unwrap_or_else(|e| e.to_string())
    );
}

fn zombie(with_handler: bool) -> Result<(), async_std_api::Error> {
    let mut b = Builder::new().zombie_timeout(Duration::from_millis(20));
    if with_handler {
        b = b.on_event(|e| println!("event: {e}"));
    }
    b.run(|| {
        let scope = Scope::new();
        spawn_in(&scope, || delay(60_000)).unwrap();
        suspend().unwrap();
        scope.dispose_safely();
    })
}

fn emfile() {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use async_std_api::net::{TcpListener, TcpStream};

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let clients: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
    // Take every descriptor left.
    let mut filler = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => filler.push(f),
            Err(e) if e.raw_os_error() == Some(24) => break, // EMFILE
            Err(e) => panic!("unexpected: {e}"),
        }
    }
    // Out of descriptors, a connect fails at once with the OS's error.
    let err = TcpStream::connect(addr).unwrap_err();
    println!("connect: errno {:?}", err.raw_os_error());
    let filler = Rc::new(RefCell::new(filler));
    let failures = Rc::new(Cell::new(0u64));
    // Frees the descriptors once the loop has failed a while: it runs only
    // if the loop gives the reactor a turn (its wake-up is a timer).
    let (f, n) = (filler.clone(), failures.clone());
    spawn(move || {
        while n.get() < 1_000 {
            delay(1).unwrap();
        }
        f.borrow_mut().clear();
    });
    let mut accepted = Vec::new();
    while accepted.len() < 3 {
        match listener.accept() {
            Ok((c, _)) => accepted.push(c),
            Err(e) if e.raw_os_error() == Some(24) => {
                failures.set(failures.get() + 1);
                assert!(failures.get() < 10_000_000, "no progress: livelock");
            }
            Err(e) => panic!("unexpected accept error: {e}"),
        }
    }
    println!(
        "accepted {} after {} failures",
        accepted.len(),
        failures.get()
    );
    drop(clients);
}

/// The event kinds whose native requests need ABI 1.1 capabilities
/// (datagrams, files), on whatever reactor runs: on one without them the
/// host falls back (readiness, the blocking pool) and says nothing. Prints
/// one line per kind that worked.
fn tcp() {
    use std::io::{Read, Write};
    let round_trip = || -> std::io::Result<Vec<u8>> {
        let listener = async_std_api::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let client = spawn(move || -> std::io::Result<Vec<u8>> {
            let mut s = async_std_api::net::TcpStream::connect(addr)?;
            // The server's read is waiting by now: its data comes later.
            suspend().unwrap();
            s.write_all(b"ping")?;
            let mut back = vec![0; 4];
            s.read_exact(&mut back)?;
            Ok(back)
        });
        let (mut conn, _) = listener.accept()?;
        let mut buf = [0u8; 4];
        conn.read_exact(&mut buf)?;
        conn.write_all(&buf)?;
        client.join().unwrap()
    };
    match round_trip() {
        Ok(back) => println!("echoed {}", String::from_utf8_lossy(&back)),
        Err(e) => println!("tcp error: {e}"),
    }
}

fn fallbacks() {
    use std::io::{Read, Write};
    let a = async_std_api::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = async_std_api::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    a.send_to(b"dgram", b.local_addr().unwrap()).unwrap();
    let mut buf = [0u8; 8];
    let (n, from) = b.recv_from(&mut buf).unwrap();
    assert_eq!((&buf[..n], from), (&b"dgram"[..], a.local_addr().unwrap()));
    println!("udp ok");
    let dir = std::env::temp_dir().join(format!("aa-fallbacks-{}", std::process::id()));
    async_std_api::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.txt");
    let mut f = async_std_api::fs::File::create(&path).unwrap();
    f.write_all(b"file contents").unwrap();
    f.sync_all().unwrap();
    drop(f);
    let mut back = String::new();
    async_std_api::fs::File::open(&path)
        .unwrap()
        .read_to_string(&mut back)
        .unwrap();
    assert_eq!(back, "file contents");
    assert_eq!(async_std_api::fs::metadata(&path).unwrap().len(), 13);
    async_std_api::fs::remove_dir_all(&dir).unwrap();
    println!("fs ok");
    let n = async_std_api::net::lookup_host("localhost:1")
        .unwrap()
        .count();
    assert!(n >= 1);
    println!("dns ok");
    let v = async_std_api::spawn_blocking(|| 7).join().unwrap();
    assert_eq!(v, 7);
    println!("blocking ok");
}
