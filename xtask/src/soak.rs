//! `cargo xtask soak --secs N [--reactor R] [--conns C] [--fd-limit L
//! --flood F]`: the `echo_server` example under steady load, watched from
//! outside.
//!
//! Builds the example and the plugins in release mode, starts the server on
//! a free loopback port (with `ASYNC_REACTOR=R`, `mio` by default), and
//! drives it with `C` client threads (16 by default), each sending a
//! 64-byte message and reading its echo, over and over, for `N` seconds.
//! Every second it prints the requests completed, the client errors and the
//! server's resident memory; at the end, a summary with the RSS trend
//! (first, peak, last), then it sends SIGINT and wants the server to exit 0
//! within 5 s (graceful shutdown). It fails if any request failed, the
//! server died or did not stop, or the RSS grew by half again (and more
//! than 8 MB) over the second half of the run (a leak under steady load;
//! the first half is a ramp, each coroutine touching its stack's deeper
//! pages once).
//!
//! With `--fd-limit L --flood F` the server runs with at most `L` open
//! descriptors, and after the clients connect, `F` more connections arrive
//! and stay open for the first half of the run: far more than it can
//! accept, so its `accept` fails with `EMFILE` until they leave. The run
//! also fails then if any second went by without a served request: the
//! connections the server holds must keep being served through the flood,
//! and it must recover when the flood leaves.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::cmd::{cargo, root, run_inherit};

/// Bytes per request.
const MSG: usize = 64;

struct Args {
    secs: u64,
    reactor: String,
    conns: usize,
    fd_limit: Option<u32>,
    flood: usize,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let usage = "usage: cargo xtask soak --secs N [--reactor mio|uring|...] [--conns C] \
                 [--fd-limit L --flood F]";
    let mut out = Args {
        secs: 0,
        reactor: "mio".into(),
        conns: 16,
        fd_limit: None,
        flood: 0,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a} needs a value\n{usage}"))
        };
        match a.as_str() {
            "--secs" => {
                out.secs = value()?
                    .parse()
                    .map_err(|_| format!("--secs: a number\n{usage}"))?
            }
            "--reactor" => out.reactor = value()?.clone(),
            "--conns" => {
                out.conns = value()?
                    .parse()
                    .map_err(|_| format!("--conns: a number\n{usage}"))?
            }
            "--fd-limit" => {
                out.fd_limit = Some(
                    value()?
                        .parse()
                        .map_err(|_| format!("--fd-limit: a number\n{usage}"))?,
                )
            }
            "--flood" => {
                out.flood = value()?
                    .parse()
                    .map_err(|_| format!("--flood: a number\n{usage}"))?
            }
            other => return Err(format!("unknown soak argument \"{other}\"\n{usage}")),
        }
    }
    if out.secs == 0 || out.conns == 0 {
        return Err(usage.into());
    }
    Ok(out)
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let args = parse(args)?;
    let mut build = cargo();
    build.args([
        "build",
        "--release",
        "-p",
        "async-std-api",
        "--example",
        "echo_server",
    ]);
    run_inherit(build, "cargo build --release (echo_server)")?;
    // Apart: `--example` would filter the plugins' targets out.
    let mut plugins = cargo();
    plugins.args(["build", "--release"]);
    for p in crate::arch::cdylib_packages()? {
        plugins.args(["-p", &p]);
    }
    run_inherit(plugins, "cargo build --release (plugins)")?;
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(Into::into)
        .unwrap_or_else(|_| root().join("target"));
    let exe = target.join("release/examples/echo_server");

    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    // With a descriptor limit, through the shell's `ulimit` (the limit is
    // inherited across its `exec`).
    let mut command = match args.fd_limit {
        Some(n) => {
            let mut c = Command::new("bash");
            c.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$1\"")])
                .arg(&exe)
                .arg(&addr);
            c
        }
        None => {
            let mut c = Command::new(&exe);
            c.arg(&addr);
            c
        }
    };
    // The plugin files just built, not the copies linked into the example:
    // the soak is also a test of a reactor loaded from a file.
    let mut server = command
        .env("ASYNC_REACTOR", &args.reactor)
        .env("ASYNC_PLUGIN_PATH", target.join("release"))
        .env_remove("ASYNC_SCHEDULER")
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    wait_listening(&mut server)?;
    eprintln!(
        "xtask: soak: echo_server on {addr}, reactor {}, {} connections, {} s",
        args.reactor, args.conns, args.secs
    );

    let done = Arc::new(AtomicBool::new(false));
    let requests = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..args.conns)
        .map(|_| {
            let (done, requests, errors, addr) =
                (done.clone(), requests.clone(), errors.clone(), addr.clone());
            thread::spawn(move || client(&addr, &done, &requests, &errors))
        })
        .collect();

    let flood = (args.flood > 0).then(|| {
        let (addr, n, hold) = (addr.clone(), args.flood, Duration::from_secs(args.secs / 2));
        thread::spawn(move || flood_for(&addr, n, hold))
    });
    println!(
        "{:>5}  {:>10}  {:>7}  {:>8}",
        "secs", "requests/s", "errors", "RSS MB"
    );
    let mut idle_seconds = Vec::new();
    let mut rss = Vec::new();
    let mut last = 0;
    let started = Instant::now();
    for sec in 1..=args.secs {
        let until = started + Duration::from_secs(sec);
        thread::sleep(until.saturating_duration_since(Instant::now()));
        let now = requests.load(Ordering::Relaxed);
        let mb = rss_mb(server.id()).unwrap_or(f64::NAN);
        rss.push(mb);
        println!(
            "{sec:>5}  {:>10}  {:>7}  {mb:>8.1}",
            now - last,
            errors.load(Ordering::Relaxed)
        );
        if now == last {
            idle_seconds.push(sec);
        }
        last = now;
        if let Ok(Some(status)) = server.try_wait() {
            done.store(true, Ordering::Relaxed);
            return Err(format!("the server exited during the soak: {status}"));
        }
    }
    done.store(true, Ordering::Relaxed);
    for c in clients {
        let _ = c.join();
    }
    let total = requests.load(Ordering::Relaxed);
    let failed = errors.load(Ordering::Relaxed);
    let (first, peak, end) = (
        rss[0],
        rss.iter().copied().fold(0.0, f64::max),
        *rss.last().unwrap_or(&0.0),
    );
    println!(
        "\nsoak: {total} requests in {} s ({:.0}/s), {failed} errors; server RSS {first:.1} MB \
         after 1 s, peak {peak:.1} MB, {end:.1} MB at the end",
        args.secs,
        total as f64 / args.secs as f64
    );

    if let Some(f) = flood {
        match f.join() {
            Ok(n) => println!("soak: flood: {n} connections held for the first half, then closed"),
            Err(_) => println!("soak: flood: the flooding thread panicked"),
        }
    }
    let stopped = interrupt(&mut server)?;
    let mut problems = Vec::new();
    if !idle_seconds.is_empty() {
        problems.push(format!(
            "no request was served in second(s) {idle_seconds:?}"
        ));
    }
    if failed > 0 {
        problems.push(format!("{failed} requests failed"));
    }
    // Growth is judged after the first half: each connection's coroutine
    // touches its stack's deeper pages once, over the first seconds (a
    // ramp that plateaus); a leak keeps growing through the second half.
    let settled = rss[rss.len() / 2];
    if end > settled * 1.5 && end - settled > 8.0 {
        problems.push(format!(
            "RSS grew from {settled:.1} MB at the half to {end:.1} MB at the end"
        ));
    }
    if let Err(e) = stopped {
        problems.push(e);
    }
    if problems.is_empty() {
        println!("soak: SIGINT: the server shut down gracefully");
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Opens `n` connections that send one byte and stay open for `hold`;
/// returns how many connected.
fn flood_for(addr: &str, n: usize, hold: Duration) -> usize {
    let started = Instant::now();
    let mut held = Vec::new();
    for _ in 0..n {
        if let Ok(mut s) = TcpStream::connect(addr) {
            let _ = s.write_all(b"f");
            held.push(s);
        }
    }
    thread::sleep(hold.saturating_sub(started.elapsed()));
    held.len()
}

/// A free loopback port (bound and released; the server binds it next).
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// Waits for the server's `listening on` line.
fn wait_listening(server: &mut Child) -> Result<(), String> {
    let stderr = server.stderr.take().ok_or("no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    // The runtime's notice naming the plugin files comes first.
    let first = lines.next();
    let first = match first {
        Some(Ok(l)) if l.starts_with("async-std-api: ") => {
            eprintln!("xtask: soak: {l}");
            lines.next()
        }
        other => other,
    };
    match first {
        Some(Ok(l)) if l.starts_with("listening on") => {
            // Drain the rest so the server never blocks on a full pipe.
            thread::spawn(move || lines.for_each(drop));
            Ok(())
        }
        Some(Ok(l)) => Err(format!("the server did not start: {l}")),
        _ => Err("the server did not start".into()),
    }
}

/// One client connection's loop: request, echo, count; reconnects after an
/// error (counted).
fn client(addr: &str, done: &AtomicBool, requests: &AtomicU64, errors: &AtomicU64) {
    let msg = [b'x'; MSG];
    let mut buf = [0u8; MSG];
    while !done.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect(addr) else {
            errors.fetch_add(1, Ordering::Relaxed);
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = s.set_nodelay(true);
        while !done.load(Ordering::Relaxed) {
            let ok = s.write_all(&msg).and_then(|()| s.read_exact(&mut buf));
            match ok {
                Ok(()) if buf == msg => {
                    requests.fetch_add(1, Ordering::Relaxed);
                }
                _ => {
                    errors.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
}

/// The resident set of process `pid`, in MB.
fn rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// Sends SIGINT and waits up to 5 s for exit status 0.
fn interrupt(server: &mut Child) -> Result<Result<(), String>, String> {
    let sent = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .map_err(|e| format!("cannot run kill: {e}"))?;
    if !sent.success() {
        return Err("kill -INT failed".into());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match server.try_wait() {
            Ok(Some(s)) if s.success() => return Ok(Ok(())),
            Ok(Some(s)) => return Ok(Err(format!("the server exited with {s} after SIGINT"))),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = server.kill();
                return Ok(Err("the server did not stop within 5 s of SIGINT".into()));
            }
        }
    }
}
