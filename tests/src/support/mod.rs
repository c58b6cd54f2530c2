//! Helpers for the suite's test binaries (STYLE S20): an event recorder
//! that asserts whole sequences (with unordered groups where order is
//! genuinely free), a child-process runner for the runtime probe, and the
//! C fixture plugin builder, and the 10 ms [`Ticker`] of the hooks' tests. Every helper is `#[track_caller]`, so a failure
//! names the test line.

mod ticker;

pub use ticker::{Ticker, Ticks};

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// One expected step of a sequence: a single event, or a group of events
/// that may occur in any order.
#[derive(Debug, Clone)]
pub enum Step {
    /// Exactly this event next.
    One(String),
    /// These events next, in any order.
    AnyOrder(Vec<String>),
}

/// An expected single event.
pub fn one(e: impl Into<String>) -> Step {
    Step::One(e.into())
}

/// Expected events whose relative order is free.
pub fn any_order<I, S>(events: I) -> Step
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    Step::AnyOrder(events.into_iter().map(Into::into).collect())
}

/// A shared, cloneable list of events, recorded from any coroutine.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    events: Rc<RefCell<Vec<String>>>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// Appends an event.
    pub fn push(&self, event: impl Into<String>) {
        self.events.borrow_mut().push(event.into());
    }

    /// The events so far.
    pub fn events(&self) -> Vec<String> {
        self.events.borrow().clone()
    }

    /// Asserts the whole sequence: exactly these events, in this order.
    #[track_caller]
    pub fn assert_events(&self, expected: &[&str]) {
        let got = self.events();
        assert_eq!(got, expected, "recorded events differ");
    }

    /// Asserts the whole sequence, where [`Step::AnyOrder`] groups may come
    /// in any order (Trio's `check_sequence_matches`).
    #[track_caller]
    pub fn assert_steps(&self, expected: &[Step]) {
        let got = self.events();
        let mut i = 0;
        for step in expected {
            match step {
                Step::One(e) => {
                    assert!(
                        got.get(i) == Some(e),
                        "event {i}: expected {e:?}, got {:?}\nall events: {got:?}",
                        got.get(i)
                    );
                    i += 1;
                }
                Step::AnyOrder(group) => {
                    let end = i + group.len();
                    assert!(
                        end <= got.len(),
                        "events {i}..{end}: expected {group:?} in any order, got {:?}\nall events: {got:?}",
                        &got[i.min(got.len())..]
                    );
                    let mut a = got[i..end].to_vec();
                    let mut b = group.clone();
                    a.sort();
                    b.sort();
                    assert_eq!(
                        a, b,
                        "events {i}..{end}: expected {group:?} in any order\nall events: {got:?}"
                    );
                    i = end;
                }
            }
        }
        assert_eq!(i, got.len(), "unexpected trailing events: {:?}", &got[i..]);
    }
}

/// What a child process did.
#[derive(Debug)]
pub struct ChildOutput {
    /// Its exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl ChildOutput {
    /// Asserts a failure exit whose stderr is exactly `Error: <line>` (what
    /// `fn main() -> Result<(), async_std_api::Error>` prints), with no
    /// panic or backtrace text and no user code run (the probe's marker
    /// absent from stdout).
    #[track_caller]
    pub fn assert_config_error(&self, line: &str) {
        assert_eq!(
            self.stderr.trim_end(),
            format!("Error: {line}"),
            "stderr differs (stdout: {:?})",
            self.stdout
        );
        assert_eq!(self.code, Some(1), "exit code; stderr: {}", self.stderr);
        assert!(
            !self.stderr.contains("panicked") && !self.stderr.contains("backtrace"),
            "panic text on stderr: {}",
            self.stderr
        );
        assert!(
            !self.stdout.contains(PROBE_MARKER),
            "user code ran before the error: {}",
            self.stdout
        );
    }
}

/// What the probe prints from inside its main coroutine.
pub const PROBE_MARKER: &str = "probe: main coroutine ran";

/// Runs the probe (or any helper binary) with a clean `ASYNC_*`
/// environment plus `env`.
#[track_caller]
pub fn run_child(exe: &str, args: &[&str], env: &[(&str, &str)]) -> ChildOutput {
    run_child_keeping(exe, args, env, false)
}

/// Runs a helper binary; with `keep_backend`, the matrix's
/// `ASYNC_SCHEDULER`/`ASYNC_REACTOR` (and options, and
/// `ASYNC_PLUGIN_PATH`) stay set, so the child runs on the same cell as the
/// test.
#[track_caller]
pub fn run_child_keeping(
    exe: &str,
    args: &[&str],
    env: &[(&str, &str)],
    keep_backend: bool,
) -> ChildOutput {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    let mut cleared = vec![
        "ASYNC_CONFIG",
        "ASYNC_PLUGIN_NOTICE",
        "RUST_BACKTRACE",
        "RUST_LOG",
    ];
    if !keep_backend {
        // ASYNC_PLUGIN_PATH too: on the matrix's `.so` cells it makes the
        // built-in names load the plugin files.
        cleared.extend([
            "ASYNC_SCHEDULER",
            "ASYNC_REACTOR",
            "ASYNC_SCHEDULER_OPTIONS",
            "ASYNC_REACTOR_OPTIONS",
            "ASYNC_PLUGIN_PATH",
        ]);
    }
    for k in cleared {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {exe}: {e}"));
    ChildOutput {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The target directory's profile directory this test binary was built
/// for: `target/<profile>/` for a binary in `target/<profile>/deps/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("the binary has a directory");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().expect("deps has a parent").to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// One of the runtime's plugin libraries (`libreactor_mio.so`,
/// `libreactor_uring.so`, `libasync_scheduler.so`) in [`profile_dir`]:
/// built by `cargo xtask test-matrix`, or here, with `$CARGO build -p
/// <package>-cdylib`, if it is missing. (Not when it is there but stale: a
/// nested cargo under `cargo test` would wait for the build lock forever; a
/// stale file loaded by name is refused with its build id.)
#[track_caller]
pub fn plugin_library(file: &str) -> PathBuf {
    let path = profile_dir().join(file);
    if !path.exists() {
        let stem = file.trim_start_matches("lib").trim_end_matches(".so");
        let package = format!("{}-cdylib", stem.replace('_', "-"));
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", &package])
            .status()
            .unwrap_or_else(|e| panic!("cannot run cargo build -p {package}: {e}"));
        assert!(status.success(), "cargo build -p {package} failed");
    }
    assert!(path.exists(), "{} not found", path.display());
    path
}

/// Compiles `tests/fixtures/<name>.c` into `<out_dir>/lib<name>.so` with
/// `cc -shared -fPIC` against the ABI header, once per build directory.
#[track_caller]
pub fn c_fixture(name: &str, out_dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("fixtures").join(format!("{name}.c"));
    let include = root.join("../async-abi/include");
    let dir = out_dir.join("fixtures");
    std::fs::create_dir_all(&dir).expect("create the fixture directory");
    let out = dir.join(format!("lib{name}.so"));
    // Build under a unique name, then rename: tests run in parallel.
    let tmp = dir.join(format!("lib{name}.{}.tmp.so", std::process::id()));
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O0", "-o"])
        .arg(&tmp)
        .arg("-I")
        .arg(&include)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("cannot run cc for fixture {name}: {e}"));
    assert!(status.success(), "cc failed for fixture {name}");
    std::fs::rename(&tmp, &out).expect("rename the fixture");
    out
}

/// What [`capture_logs`] collected: one line per `WARN` or `ERROR` record,
/// as `LEVEL message` (no timestamp, no target).
#[derive(Debug, Clone, Default)]
pub struct Logs {
    lines: Vec<String>,
}

impl Logs {
    /// Every captured line.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The lines that contain `needle`.
    pub fn matching(&self, needle: &str) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|l| l.contains(needle))
            .map(String::as_str)
            .collect()
    }

    /// Asserts exactly `n` lines contain `needle`.
    #[track_caller]
    pub fn assert_count(&self, needle: &str, n: usize) {
        let got = self.matching(needle);
        assert_eq!(
            got.len(),
            n,
            "lines containing {needle:?}: {got:?}\nall logs: {:#?}",
            self.lines
        );
    }
}

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` with a thread-local log subscriber that keeps every `WARN` and
/// `ERROR` record (the runtime's warnings about zombies, disposal and
/// unhandled failures are part of its contract), and returns both.
#[track_caller]
pub fn capture_logs<R>(f: impl FnOnce() -> R) -> (R, Logs) {
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .without_time()
        .with_target(false)
        .with_ansi(false)
        .finish();
    let r = tracing::subscriber::with_default(subscriber, f);
    let bytes = sink.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let lines = String::from_utf8_lossy(&bytes)
        .lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    (r, Logs { lines })
}

/// Yields until `cond` holds: lets other coroutines reach a state (started,
/// waiting in a delay) without depending on the scheduling order, which
/// only the FIFO policy fixes. Fails after at least 100,000 yields and 10
/// seconds: a count alone gave up too early on a loaded machine, where
/// another thread the condition waits for may not run for milliseconds.
#[track_caller]
pub fn yield_until(mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    let mut yields: u64 = 0;
    loop {
        if cond() {
            return;
        }
        yields += 1;
        if yields >= 100_000 && start.elapsed() >= std::time::Duration::from_secs(10) {
            panic!("yield_until: the condition was not reached after {yields} yields and 10 s");
        }
        async_std_api::suspend().expect("yield_until: the caller was cancelled");
    }
}

/// Yields until every coroutine in `cs` is suspended (waiting): see
/// [`yield_until`].
#[track_caller]
pub fn yield_until_waiting(cs: &[&async_std_api::Coroutine]) {
    yield_until(|| cs.iter().all(|c| c.is_suspended()));
}

/// Yields until every coroutine of `scope` and its descendants is
/// suspended (all of them wait, e.g. in a delay): see [`yield_until`].
#[track_caller]
pub fn yield_until_scope_waits(scope: &async_std_api::ScopeRef) {
    fn all_wait(s: &async_std_api::ScopeRef) -> bool {
        s.coroutines().iter().all(|c| c.is_suspended()) && s.child_scopes().iter().all(all_wait)
    }
    yield_until(|| all_wait(scope));
}

/// Joins `h`, which must have ended cancelled (R-C1, D-11, D-25), and
/// returns its cancellation; any other end fails the test, naming it.
#[track_caller]
pub fn join_cancelled<T: 'static>(h: async_std_api::JoinHandle<T>) -> async_std_api::Cancelled {
    match h.join() {
        Err(e) if e.is_cancelled() => e.cancelled().expect("a cancelled join").clone(),
        Err(e) => panic!("expected the coroutine to end cancelled, got: {e}"),
        Ok(_) => panic!("expected the coroutine to end cancelled, got a value"),
    }
}
