//! The io_uring reactor's syscall proof: `libreactor_uring.so`, driven
//! through its vtable by a child process under `strace -f`, uses io_uring
//! and nothing else to wait (no `epoll_*`, `poll`, `ppoll`, `select`,
//! `pselect6`), and makes about one `io_uring_enter` per loop iteration —
//! not one per request: 100 requests staged in one iteration cost one
//! enter.
//!
//! Independent of `ASYNC_REACTOR`: every matrix cell runs it the same way.
//! The child is this very test binary, re-run with `URING_PROOF_CHILD` set;
//! it writes markers (`write(2, "uring-proof: ...")`) around each phase, so
//! the parent can count system calls per phase in strace's log and ignore
//! what the Rust runtime and the test harness do at start-up.
//!
//! Skipped, with a printed reason, only when `strace` is missing (CI
//! installs it) or cannot trace here.
//!
//! `uring_native`: the same method for the requests of ABI 1.1: datagrams
//! and file requests run as ring operations, with none of the system calls
//! a blocking implementation would make on the loop thread.

mod uring_native;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use async_abi::*;
use tests::conformance::harness::create_raw;
use tests::conformance::{fds, Loop, Reactor, Rec, Submit};

/// Set in the child: the path of the library to drive.
const CHILD_ENV: &str = "URING_PROOF_CHILD";

/// The prefix of every marker and of the child's report line.
pub(crate) const MARK: &str = "uring-proof:";

/// The calls a readiness reactor would make to wait; none may appear.
const FORBIDDEN: &[&str] = &[
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
];

/// Requests staged in the burst phase, on as many descriptors.
const BURST: usize = 100;

// ---------------------------------------------------------------------------
// Child
// ---------------------------------------------------------------------------

/// Writes a marker with one `write(2)`, which strace logs verbatim.
pub(crate) fn mark(what: &str) {
    let line = format!("{MARK} {what}\n");
    // SAFETY: `line` is a valid buffer of its length; fd 2 is stderr.
    let n = unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    assert_eq!(n, line.len() as isize);
}

/// Runs the loop until `done`, counting iterations.
fn run_counting(lp: &Loop, what: &str, mut done: impl FnMut(&[Rec]) -> bool) -> u32 {
    let start = Instant::now();
    let mut ticks = 0;
    while !done(&lp.log()) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: not done; log {:?}",
            lp.log()
        );
        lp.run_once(-1);
        ticks += 1;
    }
    ticks
}

/// The workload: a burst of requests in one iteration, then timers and a
/// TCP echo over loopback. Prints `uring-proof: ticks burst=N echo=M
/// total=T` on stdout.
fn child(library: &Path) {
    let reactor = Reactor::load(library).unwrap_or_else(|e| panic!("{e}"));
    mark("begin");
    let lp = Loop::new(&reactor);
    let mut total = 0;

    // Burst: BURST one-byte writes on BURST sockets, all staged before one
    // `run_once`, which submits them together.
    let pairs: Vec<(i32, i32)> = (0..BURST).map(|_| fds::socketpair()).collect();
    let byte = [b'x'];
    mark("burst-begin");
    for (a, _) in &pairs {
        assert!(matches!(
            lp.write("burst", *a, &byte, 0),
            Submit::Pending(_)
        ));
    }
    let burst = run_counting(&lp, "burst", |log| log.len() == BURST);
    mark("burst-end");
    total += burst;
    assert!(lp.log().iter().all(|r| *r == Rec::Io("burst", 1)));
    lp.take_log();

    // Timers and an echo: accept + connect, write + read both ways.
    let (listener, addr) = fds::tcp_listener();
    let client = fds::tcp_socket();
    let mut target = addr;
    let mut peer = AaSockAddr::EMPTY;
    let mut buf = [0u8; 16];
    let mut back = [0u8; 16];
    mark("echo-begin");
    for ms in 1..=5u64 {
        lp.timer("timer", ms * 1_000_000, 0, 0);
    }
    lp.accept("accept", listener, &mut peer, 0).pending();
    lp.connect("connect", client, &mut target, 0).pending();
    let mut echo = run_counting(&lp, "connect", |log| {
        log.iter().filter(|r| r.tag() != "timer").count() == 2
    });
    let server = lp
        .log()
        .iter()
        .find_map(|r| match r {
            Rec::Io("accept", fd) => Some(*fd as i32),
            _ => None,
        })
        .expect("accepted");
    lp.write("ping", client, b"ping", 0).pending();
    lp.read("recv", server, &mut buf, 0).pending();
    echo += run_counting(&lp, "ping", |log| log.iter().any(|r| r.tag() == "recv"));
    lp.write("pong", server, b"pong", 0).pending();
    lp.read("back", client, &mut back, 0).pending();
    echo += run_counting(&lp, "echo", |log| {
        log.iter().any(|r| r.tag() == "back")
            && log.iter().filter(|r| r.tag() == "timer").count() == 5
    });
    mark("echo-end");
    total += echo;
    assert_eq!(&buf[..4], b"ping");
    assert_eq!(&back[..4], b"pong");

    lp.finish();
    mark("end");
    for (a, b) in pairs {
        fds::raw_close(a);
        fds::raw_close(b);
    }
    for fd in [listener, client, server] {
        fds::raw_close(fd);
    }
    println!("{MARK} ticks burst={burst} echo={echo} total={total}");
}

// ---------------------------------------------------------------------------
// Parent
// ---------------------------------------------------------------------------

/// `target/<profile>/` for a test binary in `target/<profile>/deps/`.
/// The uring library: built by `cargo xtask test-matrix` (and by `cargo
/// build -p reactor-uring-cdylib`); built here with `$CARGO` if it is
/// missing.
pub(crate) fn library() -> PathBuf {
    tests::support::plugin_library("libreactor_uring.so")
}

/// System calls counted per phase of the child's run.
#[derive(Debug, Default)]
pub(crate) struct Phases {
    /// Phase name -> syscall name -> count; "all" is begin..end.
    counts: BTreeMap<&'static str, BTreeMap<String, u32>>,
}

impl Phases {
    /// Reads strace's log: every line that starts a call (`PID name(`,
    /// including `<unfinished ...>` halves, never the `resumed` halves)
    /// counts once in each phase open at that point.
    pub(crate) fn parse(log: &str) -> Phases {
        let mut phases = Phases::default();
        let mut open: Vec<&'static str> = Vec::new();
        for line in log.lines() {
            for (phase, begin, end) in [
                ("all", "begin", "end"),
                ("burst", "burst-begin", "burst-end"),
                ("echo", "echo-begin", "echo-end"),
                ("native", "native-begin", "native-end"),
            ] {
                if line.contains(&format!("\"{MARK} {begin}\\n\"")) {
                    open.push(phase);
                } else if line.contains(&format!("\"{MARK} {end}\\n\"")) {
                    open.retain(|p| *p != phase);
                }
            }
            let Some(name) = call_name(line) else {
                continue;
            };
            for phase in &open {
                *phases
                    .counts
                    .entry(phase)
                    .or_default()
                    .entry(name.to_owned())
                    .or_default() += 1;
            }
        }
        phases
    }

    pub(crate) fn count(&self, phase: &str, call: &str) -> u32 {
        self.counts
            .get(phase)
            .and_then(|c| c.get(call))
            .copied()
            .unwrap_or(0)
    }
}

/// The call a strace line starts: `1234  name(args...`.
fn call_name(line: &str) -> Option<&str> {
    let rest = line.trim_start();
    let rest = rest
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    let end = rest.find('(')?;
    let name = &rest[..end];
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// The child's `uring-proof: ticks ...` numbers.
fn ticks(stdout: &str) -> BTreeMap<String, u32> {
    let prefix = format!("{MARK} ticks");
    let line = stdout
        .lines()
        .find_map(|l| l.find(&prefix).map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("the child printed no ticks line:\n{stdout}"));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.parse().expect("a number")))
        .collect()
}

/// Whether this system lets the library make a ring: `Err` is the one-line
/// refusal from `create` (a seccomp policy, `kernel.io_uring_disabled`, an
/// old kernel).
pub(crate) fn uring_available(library: &Path) -> Result<(), String> {
    let reactor = Reactor::load(library)?;
    let mut err = [0u8; 256];
    let cfg = AaReactorConfig {
        struct_size: std::mem::size_of::<AaReactorConfig>() as u32,
        flags: 0,
        options: std::ptr::null(),
        n_options: 0,
        err_buf: err.as_mut_ptr(),
        err_cap: err.len(),
    };
    match create_raw(&reactor, &cfg) {
        Ok(r) => {
            // SAFETY: a reactor just made, with no event.
            let status = unsafe { (reactor.vtable().destroy.expect("required slot"))(r) };
            assert_eq!(status, AA_OK);
            Ok(())
        }
        Err(status) => {
            let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
            Err(format!(
                "{} (status {status})",
                String::from_utf8_lossy(&err[..end])
            ))
        }
    }
}

pub(crate) fn strace_works() -> Result<(), String> {
    match Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "true"])
        .output()
    {
        Err(e) => Err(format!("strace not found ({e})")),
        Ok(out) if !out.status.success() => Err(format!(
            "strace cannot trace here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(_) => Ok(()),
    }
}

#[test]
fn io_uring_reactor_never_waits_with_epoll_and_enters_once_per_iteration() {
    if let Ok(library) = std::env::var(CHILD_ENV) {
        child(Path::new(&library));
        return;
    }
    if let Err(why) = strace_works() {
        eprintln!(
            "SKIPPED io_uring_reactor_never_waits_with_epoll_and_enters_once_per_iteration: {why}"
        );
        return;
    }
    let library = library();
    if let Err(why) = uring_available(&library) {
        eprintln!(
            "SKIPPED io_uring_reactor_never_waits_with_epoll_and_enters_once_per_iteration: {why}"
        );
        return;
    }
    let log = std::env::temp_dir().join(format!("uring-proof-{}.strace", std::process::id()));
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new("strace")
        .arg("-f")
        .arg("-qq")
        .arg("-o")
        .arg(&log)
        .arg("-e")
        .arg(format!(
            "trace=io_uring_setup,io_uring_enter,io_uring_register,write,{}",
            FORBIDDEN.join(",")
        ))
        .arg(&exe)
        .args([
            "--exact",
            "io_uring_reactor_never_waits_with_epoll_and_enters_once_per_iteration",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &library)
        .env_remove("ASYNC_REACTOR")
        .env_remove("ASYNC_SCHEDULER")
        .output()
        .expect("run the child under strace");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    let trace = std::fs::read_to_string(&log).expect("strace log");
    let _ = std::fs::remove_file(&log);
    let phases = Phases::parse(&trace);
    let ticks = ticks(&stdout);
    let (burst_ticks, echo_ticks, total_ticks) = (ticks["burst"], ticks["echo"], ticks["total"]);

    let setup = phases.count("all", "io_uring_setup");
    let enters = phases.count("all", "io_uring_enter");
    let burst_enters = phases.count("burst", "io_uring_enter");
    let echo_enters = phases.count("echo", "io_uring_enter");
    let forbidden: Vec<String> = FORBIDDEN
        .iter()
        .filter(|c| phases.count("all", c) > 0)
        .map(|c| format!("{c} x{}", phases.count("all", c)))
        .collect();
    println!(
        "uring syscall proof: io_uring_setup={setup}, io_uring_enter={enters} over {total_ticks} \
         iterations (+ create's probe and destroy); burst: {BURST} requests -> \
         {burst_enters} enter(s) over {burst_ticks} iteration(s); timers+echo: {echo_enters} \
         enters over {echo_ticks} iterations; epoll/poll/select: {}",
        if forbidden.is_empty() {
            "none".to_owned()
        } else {
            forbidden.join(", ")
        }
    );

    assert_eq!(setup, 1, "one ring per reactor");
    assert!(
        forbidden.is_empty(),
        "readiness calls while the reactor lived: {forbidden:?}"
    );
    // One enter per iteration at most (an iteration with nothing to submit
    // and no need to wait makes none).
    assert!(burst_enters >= 1, "the burst was never submitted");
    assert!(
        burst_enters <= burst_ticks,
        "burst: {burst_enters} enters for {burst_ticks} iterations"
    );
    assert!(
        burst_ticks <= 3,
        "{BURST} requests staged together took {burst_ticks} iterations"
    );
    assert!(
        echo_enters <= echo_ticks,
        "echo: {echo_enters} enters for {echo_ticks} iterations"
    );
    // create probes cancel-by-descriptor with one enter; destroy drains the
    // waker's read with one or two.
    assert!(
        enters <= total_ticks + 4,
        "{enters} enters for {total_ticks} iterations"
    );
}

#[test]
fn strace_log_is_counted_per_phase_and_only_between_markers() {
    let log = r#"100 poll([{fd=0, events=0}], 1, 0) = 0 (Timeout)
100 write(2, "uring-proof: begin\n", 19) = 19
100 io_uring_setup(256, {flags=0}) = 3
100 write(2, "uring-proof: burst-begin\n", 25) = 25
100 io_uring_enter(3, 100, 1, IORING_ENTER_GETEVENTS, NULL, 8 <unfinished ...>
101 epoll_wait(4, [], 1024, 0) = 0
100 <... io_uring_enter resumed>) = 100
100 write(2, "uring-proof: burst-end\n", 23) = 23
100 io_uring_enter(3, 0, 1, IORING_ENTER_GETEVENTS, NULL, 8) = 0
100 write(2, "uring-proof: end\n", 17) = 17
100 epoll_ctl(4, EPOLL_CTL_ADD, 5, {events=EPOLLIN}) = 0
"#;
    let phases = Phases::parse(log);
    assert_eq!(phases.count("all", "io_uring_setup"), 1);
    assert_eq!(phases.count("all", "io_uring_enter"), 2);
    assert_eq!(phases.count("burst", "io_uring_enter"), 1);
    assert_eq!(phases.count("all", "epoll_wait"), 1);
    assert_eq!(phases.count("all", "poll"), 0, "before the begin marker");
    assert_eq!(phases.count("all", "epoll_ctl"), 0, "after the end marker");
    assert_eq!(call_name("100 <... io_uring_enter resumed>) = 100"), None);
    assert_eq!(
        ticks("test x ... uring-proof: ticks burst=1 echo=8 total=9\nok")["echo"],
        8
    );
}
