//! User-space instructions per echoed request, counted by callgrind: the
//! measure of the echo path's own cost that the kernel's loopback work and
//! the machine's load do not blur (server CPU time does both).
//!
//! Each server runs in a process of its own under `valgrind --tool=callgrind
//! --separate-threads=yes` (this binary's `--profile serve`: the server on
//! the main thread; the counts of every thread of the process are added),
//! driven by the load generator from this process, with `LOW` and then
//! `HIGH` requests from one connection, each sent `PAUSE` after the echo of
//! the one before. The pause puts the server back in its wait every time,
//! so every server makes its whole path per request: with a client that
//! replies at once, a server whose read tries the socket first finds the
//! next request already there more or less often as valgrind's pace goes
//! (may's count moved from 887 to 400 between two runs of 100 connections,
//! a hooked std read's from 1,915 to 435 on one). When the load is done
//! (and every echo in flight has come back), `callgrind_control -d` dumps
//! the counts and the server is
//! killed. A separate process, not a client thread: valgrind runs one
//! thread at a time and holds its lock while an io_uring server blocks in
//! the kernel, so an in-process client would never run. The difference in
//! instructions over the difference in requests echoed leaves out setup,
//! the dump and teardown. Of three such pairs, the median is kept: how many
//! requests one loop iteration serves varies a little from run to run under
//! valgrind.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The two window sizes, in requests.
const LOW: u64 = 1_000;
const HIGH: u64 = 4_000;
/// How long the client waits after each echo before it sends the next
/// request: long enough for a server under valgrind to be back in its wait
/// (its whole iteration takes some tens of microseconds there).
const PAUSE: Duration = Duration::from_micros(500);
/// Pairs of runs per server; the median is kept.
const PAIRS: usize = 3;

/// Whether `valgrind` can be run.
pub(crate) fn available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The median instructions per request of `server` (`bench --profile serve`
/// names: `embedded`, `mio`, `uring`, `tokio`, `monoio`).
pub(crate) fn per_request(server: &str) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?;
    per_request_of(server, &exe, &["--profile", "serve", server], &[])
}

/// [`per_request`] for any server program that prints `listening <addr>`
/// once it listens and echoes what it reads; `label` names it in errors
/// and file names, `env` is added to its environment.
pub(crate) fn per_request_of(
    label: &str,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<f64, String> {
    let server = label;
    let dir = std::env::temp_dir().join(format!("bench-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut samples = Vec::with_capacity(PAIRS);
    for pair in 0..PAIRS {
        let (low_instr, low_reqs) = one_run(program, args, env, &dir, server, LOW, pair)?;
        let (high_instr, high_reqs) = one_run(program, args, env, &dir, server, HIGH, pair)?;
        eprintln!("bench: callgrind: {server}: {low_instr} instructions for {low_reqs} requests, {high_instr} for {high_reqs}");
        if high_reqs <= low_reqs {
            return Err(format!(
                "{server}: {high_reqs} requests echoed in the long run, {low_reqs} in the short"
            ));
        }
        samples.push((high_instr - low_instr) as f64 / (high_reqs - low_reqs) as f64);
    }
    let _ = std::fs::remove_dir_all(&dir);
    samples.sort_by(f64::total_cmp);
    eprintln!("bench: callgrind: {server}: {samples:.0?} instructions per request");
    Ok(samples[samples.len() / 2])
}

/// One profiled run: the server thread's instructions and the requests
/// echoed in all.
#[allow(clippy::too_many_arguments)] // each is one knob of the run, named at the call
fn one_run(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    dir: &Path,
    server: &str,
    requests: u64,
    pair: usize,
) -> Result<(i64, u64), String> {
    let stem = format!(
        "{}-{requests}-{pair}",
        server.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    );
    let child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--separate-threads=yes")
        .arg(format!("--callgrind-out-file={}/{stem}.%p", dir.display()))
        .arg(program)
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("valgrind: {e}"))?;
    let mut child = Killed(child);
    let addr = listening(&mut child.0).map_err(|e| format!("{server}: {e}"))?;
    let echoed = crate::echo::drive_paced(addr, requests, PAUSE).total;
    let pid = child.0.id();
    dump(pid, addr).map_err(|e| format!("{server}: {e}"))?;
    drop(child);
    // Every thread of the server process (`<stem>.<pid>.1-<thread>`), so a
    // server whose work runs off its main thread is counted whole.
    let prefix = format!("{stem}.{pid}.1-");
    let mut instructions = 0;
    let mut files = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.starts_with(&prefix) {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        instructions += text
            .lines()
            .find_map(|l| {
                l.strip_prefix("summary: ")
                    .or_else(|| l.strip_prefix("totals: "))
            })
            .and_then(|v| v.trim().parse::<i64>().ok())
            .ok_or_else(|| format!("{}: no instruction total", path.display()))?;
        files += 1;
    }
    if files == 0 {
        return Err(format!("no dump {prefix}* in {}", dir.display()));
    }
    Ok((instructions, echoed))
}

/// A child process killed and reaped when dropped, whatever went wrong.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The address the profiled server prints once it listens (valgrind makes
/// start-up slow: up to a minute).
fn listening(child: &mut Child) -> Result<SocketAddr, String> {
    let out = child.stdout.take().ok_or("no standard output")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("listening ") {
                let _ = tx.send(addr.trim().to_owned());
                return;
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .map_err(|_| "the server did not say where it listens within 60 s".to_owned())?;
    addr.parse()
        .map_err(|e| format!("the server's address {addr:?}: {e}"))
}

/// Asks callgrind to dump the counts so far. The request is read only when
/// the program runs, and an idle server is blocked in the kernel, so a new
/// connection with one byte wakes it, every 200 ms until the dump is done.
fn dump(pid: u32, addr: SocketAddr) -> Result<(), String> {
    let ctl = Command::new("callgrind_control")
        .args(["-d", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("callgrind_control: {e}"))?;
    let mut ctl = Killed(ctl);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut poke) = TcpStream::connect(addr) {
            let _ = poke.write_all(b"x");
        }
        match ctl.0.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("callgrind_control -d failed ({status})")),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            Ok(None) => return Err("callgrind_control -d did not finish within 60 s".to_owned()),
            Err(e) => return Err(format!("callgrind_control: {e}")),
        }
    }
}

/// Instructions per call of a program run as `program <args> <n>` (all of
/// its threads), from two runs of `n` and `2n` calls: setup and teardown
/// cancel out.
pub(crate) fn per_call(program: &Path, args: &[&str], n: u64) -> Result<f64, String> {
    let count = |calls: u64| -> Result<i64, String> {
        let out = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg("--callgrind-out-file=/dev/null")
            .arg(program)
            .args(args)
            .arg(calls.to_string())
            .output()
            .map_err(|e| format!("valgrind: {e}"))?;
        let text = String::from_utf8_lossy(&out.stderr);
        text.lines()
            .find_map(|l| l.split("refs:").nth(1))
            .and_then(|v| v.trim().replace(',', "").parse::<i64>().ok())
            .ok_or_else(|| format!("no instruction count from {}: {text}", program.display()))
    };
    let (one, two) = (count(n)?, count(2 * n)?);
    Ok((two - one) as f64 / n as f64)
}
