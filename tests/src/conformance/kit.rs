//! The standalone kit: runs every case of [`CASES`] against a
//! reactor library, each case in its own process, and prints a summary.
//!
//! This is the `reactor_kit` binary's body (`tests/src/bin/reactor_kit.rs`).
//! The binary needs no Rust toolchain to run: it links only the C library
//! and `libgcc_s`, so a built copy can be handed to anyone writing a
//! reactor (`cargo xtask conformance` builds and runs it).
//!
//! # Processes
//!
//! The parent loads the library once (to print its descriptor and to fail
//! early on a library that is not a reactor), then runs each selected case
//! as `reactor_kit --case <tier::name> <library>`: a re-execution of itself
//! that runs that one case in-process and prints one result line
//! ([`RESULT`]). A case that aborts, segfaults or outlives `--timeout` is
//! reported as failed with the signal or the timeout, and the run goes on.
//!
//! # Outcomes
//!
//! - passed: the case returned and noted no skip;
//! - skipped: the case noted a skip ([`note_skip`](super::note_skip)): the
//!   reactor (or its instance) lacks a capability the case needs. Skipped
//!   never counts as passed; the summary groups skips by capability;
//! - failed: a panic (a failed assertion: the first line of its message,
//!   which names the rule, its link, the input, what the rule requires and
//!   what the reactor did; the rule's text follows in the details), a
//!   setup failure (`could not set up the case`: the kit's own system call
//!   failed, no rule was judged), a signal, a timeout, or a child that
//!   printed no result line.
//!
//! The exit code is 0 when nothing failed, 1 when a case failed, 2 for a
//! usage error or a library that cannot be loaded.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_abi::*;

use super::{Case, Reactor, CASES};

/// The line a child prints on stdout with its case's outcome:
/// `@@reactor-kit pass`, `@@reactor-kit skip <bits> <line>` or
/// `@@reactor-kit fail <message>`.
pub const RESULT: &str = "@@reactor-kit";

const USAGE: &str = "\
usage: reactor_kit [OPTIONS] <LIBRARY.so>

Runs the reactor conformance kit against a reactor plugin (a shared library
exporting aa_reactor_entry_v1), each case in its own process.

options:
  --list             print every case (tier::name and the rules it checks) and exit
  --case NAME        run only the case tier::name (or name), in this process
  --filter TEXT      run only the cases whose tier::name contains TEXT (repeatable)
  --jobs N           run N cases at once (default 1)
  --timeout SECS     fail a case still running after SECS seconds (default 60)
  --verbose          print each case's stderr, not only that of failed cases
  -h, --help         this text

Exit code: 0 if no case failed, 1 if one did, 2 for a usage or loading error.
";

/// The names of the capability bits, for skip reasons.
pub const CAP_NAMES: &[(u64, &str)] = &[
    (AA_CAP_TIMER, "AA_CAP_TIMER"),
    (AA_CAP_POLL, "AA_CAP_POLL"),
    (AA_CAP_IO, "AA_CAP_IO"),
    (AA_CAP_TRIGGER, "AA_CAP_TRIGGER"),
    (AA_CAP_SIGNAL, "AA_CAP_SIGNAL"),
    (AA_CAP_PROCESS, "AA_CAP_PROCESS"),
    (AA_CAP_FS_WATCH, "AA_CAP_FS_WATCH"),
    (AA_CAP_DNS, "AA_CAP_DNS"),
    (AA_CAP_IO_INLINE, "AA_CAP_IO_INLINE"),
    (AA_CAP_IO_NATIVE, "AA_CAP_IO_NATIVE"),
    (AA_CAP_IO_DGRAM, "AA_CAP_IO_DGRAM"),
    (AA_CAP_IO_FILE, "AA_CAP_IO_FILE"),
    (AA_CAP_IO_FTRUNCATE, "AA_CAP_IO_FTRUNCATE"),
    (AA_CAP_POLL_LEVEL, "AA_CAP_POLL_LEVEL"),
];

/// `AA_CAP_A|AA_CAP_B` for the bits of `bits` (unknown bits in hex), or
/// `no capability` for 0.
pub fn cap_names(bits: u64) -> String {
    if bits == 0 {
        return "no capability".into();
    }
    let mut names: Vec<String> = CAP_NAMES
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| (*name).to_owned())
        .collect();
    let known = CAP_NAMES.iter().fold(0, |acc, (bit, _)| acc | bit);
    if bits & !known != 0 {
        names.push(format!("{:#x}", bits & !known));
    }
    names.join("|")
}

/// What one case gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It passed.
    Passed,
    /// It was skipped for lacking the capability bits (0: another reason,
    /// in the line).
    Skipped(u64, String),
    /// It failed, with the reason.
    Failed(String),
}

struct Options {
    library: Option<PathBuf>,
    list: bool,
    case: Option<String>,
    filters: Vec<String>,
    jobs: usize,
    timeout: Duration,
    verbose: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        library: None,
        list: false,
        case: None,
        filters: Vec::new(),
        jobs: 1,
        timeout: Duration::from_secs(60),
        verbose: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--list" => o.list = true,
            "--case" => o.case = Some(value("--case")?),
            "--filter" => o.filters.push(value("--filter")?),
            "--jobs" | "-j" => {
                let v = value("--jobs")?;
                o.jobs = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--jobs {v:?}: expected a positive integer"))?;
            }
            "--timeout" => {
                let v = value("--timeout")?;
                let secs: u64 = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--timeout {v:?}: expected a positive integer"))?;
                o.timeout = Duration::from_secs(secs);
            }
            "--verbose" | "-v" => o.verbose = true,
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag:?}")),
            path => {
                if o.library.replace(PathBuf::from(path)).is_some() {
                    return Err("give one library".into());
                }
            }
        }
    }
    Ok(o)
}

/// The kit's `main`: parses `std::env::args`, runs, returns the exit code.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let opts = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprint!("reactor_kit: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if opts.list {
        for case in selected(&opts.filters) {
            println!("{}  {}", case.path(), case.rules.join(" "));
        }
        return ExitCode::SUCCESS;
    }
    let Some(library) = opts.library.clone() else {
        eprint!("reactor_kit: give the reactor library to test\n{USAGE}");
        return ExitCode::from(2);
    };
    if let Some(name) = &opts.case {
        let Some(case) = find(name) else {
            eprintln!("reactor_kit: no case {name:?} (see --list)");
            return ExitCode::from(2);
        };
        return run_here(case, &library);
    }
    run_all(&opts, &library)
}

/// The case named `tier::name` or `name`.
pub fn find(name: &str) -> Option<&'static Case> {
    CASES.iter().find(|c| c.path() == name || c.name == name)
}

fn selected(filters: &[String]) -> Vec<&'static Case> {
    CASES
        .iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.path().contains(f.as_str())))
        .collect()
}

/// Runs one case in this process (the child side) and prints its result
/// line.
fn run_here(case: &Case, library: &Path) -> ExitCode {
    let reactor = match Reactor::load(library) {
        Ok(r) => r,
        Err(e) => {
            println!("{RESULT} fail {}", one_line(&e));
            return ExitCode::from(1);
        }
    };
    // The first panic's summary line and its whole message.
    let panic_message: &'static Mutex<Option<(String, String)>> =
        Box::leak(Box::new(Mutex::new(None)));
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        let at = info
            .location()
            .map(|l| format!(" (at {}:{})", l.file(), l.line()))
            .unwrap_or_default();
        // The summary keeps one line: a rule failure's first line (rule,
        // link, input, requirement, what the reactor did; the rule's text
        // and hints follow in the case's stderr, printed under `FAIL`), a
        // setup failure's, or another panic's with where it was raised.
        let first = msg.lines().next().unwrap_or_default();
        let judged = first.contains(" violated. ") || first.starts_with(super::rules::SETUP_FAILED);
        let line = if judged {
            first.to_owned()
        } else {
            format!("{msg}{at}")
        };
        let mut slot = panic_message.lock().unwrap_or_else(|e| e.into_inner());
        // The first panic is the cause; a later one is its consequence.
        if slot.is_none() {
            *slot = Some((line, msg));
        }
        drop(slot);
        default_hook(info);
    }));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case.run_on(&reactor)));
    let skip = super::take_skip();
    let (line, code) = match (result, skip) {
        (Ok(()), None) => ("pass".to_owned(), 0),
        (Ok(()), Some((bits, why))) => (format!("skip {bits:#x} {}", one_line(&why)), 0),
        (Err(_), _) => {
            let (line, full) = panic_message
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_else(|| ("panicked".into(), String::new()));
            // Again, last, so the tail of stderr the kit prints under
            // `FAIL` holds it (with the rule's text) even after a long
            // backtrace.
            if !full.is_empty() {
                eprintln!("the failure in full:\n{full}");
            }
            (format!("fail {}", one_line(&line)), 1)
        }
    };
    println!("{RESULT} {line}");
    let _ = std::io::stdout().flush();
    // The reactor's `deinit` runs on drop, after the result is out: a
    // crash there still fails the case (no result line would be missing,
    // but the exit status is checked too).
    drop(reactor);
    ExitCode::from(code)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parses a child's stdout and exit status into an outcome.
fn judge(stdout: &str, status: std::process::ExitStatus, timed_out: Option<Duration>) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    if let Some(limit) = timed_out {
        return Outcome::Failed(format!(
            "timed out: still running after {} s (killed)",
            limit.as_secs()
        ));
    }
    let line = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(RESULT))
        .map(str::trim);
    if let Some(sig) = status.signal() {
        return Outcome::Failed(format!(
            "killed by signal {sig} ({}){}",
            signal_name(sig),
            if line.is_some() {
                " after reporting its result"
            } else {
                ""
            }
        ));
    }
    match line {
        Some("pass") if status.success() => Outcome::Passed,
        Some(rest) if rest.starts_with("skip ") && status.success() => {
            let rest = &rest[5..];
            let (bits, why) = rest.split_once(' ').unwrap_or((rest, ""));
            let bits = u64::from_str_radix(bits.trim_start_matches("0x"), 16).unwrap_or(0);
            Outcome::Skipped(bits, why.to_owned())
        }
        Some(rest) if rest.starts_with("fail ") => Outcome::Failed(rest[5..].to_owned()),
        Some(other) => Outcome::Failed(format!("exited with {status} after {other:?}")),
        None => Outcome::Failed(format!("exited with {status} without a result line")),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        _ => "signal",
    }
}

/// One finished case.
struct Done {
    case: &'static Case,
    outcome: Outcome,
    time: Duration,
    stderr: String,
}

/// Runs `case` in a child process (this executable, `--case`).
fn run_child(case: &'static Case, library: &Path, timeout: Duration) -> Done {
    let started = Instant::now();
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("reactor_kit"));
    let spawned = Command::new(exe)
        .arg("--case")
        .arg(case.path())
        .arg(library)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return Done {
                case,
                outcome: Outcome::Failed(format!("cannot start the case's process: {e}")),
                time: started.elapsed(),
                stderr: String::new(),
            }
        }
    };
    // Drained on threads, so a chatty case never blocks on a full pipe.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let mut timed_out = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                timed_out = Some(timeout);
                break child.wait().expect("wait for a killed child");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Done {
                    case,
                    outcome: Outcome::Failed(format!("cannot wait for the case's process: {e}")),
                    time: started.elapsed(),
                    stderr: String::new(),
                };
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Done {
        case,
        outcome: judge(&stdout, status, timed_out),
        time: started.elapsed(),
        stderr,
    }
}

fn describe(reactor: &Reactor, library: &Path) -> String {
    let d = reactor.desc();
    let text = |p: *const std::ffi::c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: AA-R7: the descriptor's strings are static and
            // NUL-terminated.
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        }
    };
    let vt = reactor.vtable();
    let minor = super::rules::implements(reactor);
    let newer: Vec<&str> = super::rules::RULES
        .iter()
        .filter(|r| r.since > minor)
        .map(|r| r.id)
        .collect();
    let earlier: Vec<&str> = super::rules::RULES
        .iter()
        .filter(|r| r.tightened.is_some_and(|t| t > minor))
        .map(|r| r.id)
        .collect();
    let mut out = format!(
        "reactor {:?} {} from {}\n\
         reactor_kit: implements ABI {}.{minor} (vtable iface_minor {minor}; descriptor abi_minor \
         {}); caps {:#x}: {}",
        reactor.name(),
        text(d.version),
        library.display(),
        d.abi_major,
        d.abi_minor,
        vt.caps,
        cap_names(vt.caps),
    );
    if minor > AA_ABI_MINOR {
        out.push_str(&format!(
            "\nreactor_kit: note: minor {minor} is newer than this kit's {AA_ABI_MINOR}: checked \
             against the rules this kit knows"
        ));
    }
    if d.abi_minor != minor {
        out.push_str(&format!(
            "\nreactor_kit: note: the descriptor says minor {} and the vtable {minor}: the kit \
             (and a host) go by the vtable",
            d.abi_minor
        ));
    }
    out.push_str(&format!(
        "\nreactor_kit: the rules of ABI 1.{minor}: {} rules; not checked (a later minor's): {}; \
         checked as 1.{minor} wrote them (tightened later): {}",
        super::rules::RULES.len() - newer.len(),
        if newer.is_empty() {
            "none".to_owned()
        } else {
            newer.join(" ")
        },
        if earlier.is_empty() {
            "none".to_owned()
        } else {
            earlier.join(" ")
        },
    ));
    out
}

/// `R-IO-12 (docs/abi/io.md#r-io-12)` for each rule of a case.
fn rule_links(rules: &[&str]) -> String {
    rules
        .iter()
        .map(|id| match super::rules::rule(id) {
            Some(r) => format!("{id} ({})", r.link()),
            None => (*id).to_owned(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn run_all(opts: &Options, library: &Path) -> ExitCode {
    let reactor = match Reactor::load(library) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("reactor_kit: {e}");
            return ExitCode::from(2);
        }
    };
    println!("reactor_kit: {}", describe(&reactor, library));
    drop(reactor);
    let cases = selected(&opts.filters);
    if cases.is_empty() {
        eprintln!(
            "reactor_kit: no case matches {:?} (see --list)",
            opts.filters
        );
        return ExitCode::from(2);
    }
    println!(
        "reactor_kit: {} cases, {} at a time, each in its own process",
        cases.len(),
        opts.jobs
    );
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Done>> = Mutex::new(Vec::new());
    let print = Mutex::new(());
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.min(cases.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&case) = cases.get(i) else { break };
                let done = run_child(case, library, opts.timeout);
                {
                    let _guard = print.lock().unwrap_or_else(|e| e.into_inner());
                    report(&done, opts.verbose);
                }
                results.lock().unwrap_or_else(|e| e.into_inner()).push(done);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let failed = summary(&results, &cases);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn report(done: &Done, verbose: bool) {
    let path = done.case.path();
    let secs = done.time.as_secs_f64();
    match &done.outcome {
        Outcome::Passed => println!("pass  {path} ({secs:.2} s)"),
        Outcome::Skipped(0, why) => {
            let why = why.split_once(": ").map_or(why.as_str(), |(_, r)| r);
            println!("skip  {path} ({why})");
        }
        Outcome::Skipped(bits, _) => println!("skip  {path} (lacks {})", cap_names(*bits)),
        Outcome::Failed(why) => {
            println!("FAIL  {path} ({secs:.2} s): {why}");
            println!("      the case's rules: {}", rule_links(done.case.rules));
        }
    }
    if verbose || matches!(done.outcome, Outcome::Failed(_)) {
        let tail: Vec<&str> = done.stderr.lines().collect();
        let from = tail
            .len()
            .saturating_sub(if verbose { usize::MAX } else { 20 });
        for line in &tail[from.min(tail.len())..] {
            println!("      | {line}");
        }
    }
    let _ = std::io::stdout().flush();
}

/// Prints the summary; returns the number of failed cases.
fn summary(results: &[Done], order: &[&'static Case]) -> usize {
    let mut passed = 0;
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut failed: Vec<&Done> = Vec::new();
    for done in results {
        match &done.outcome {
            Outcome::Passed => passed += 1,
            Outcome::Skipped(bits, why) => {
                let key = if *bits == 0 {
                    // `SKIPPED <case>: <reason>, <details>`: grouped by reason.
                    let why = why.split_once(": ").map_or(why.as_str(), |(_, r)| r);
                    why.split(", ").next().unwrap_or(why).to_owned()
                } else {
                    cap_names(*bits)
                };
                *skipped.entry(key).or_default() += 1;
            }
            Outcome::Failed(_) => failed.push(done),
        }
    }
    failed.sort_by_key(|d| order.iter().position(|c| c.path() == d.case.path()));
    let n_skipped: usize = skipped.values().sum();
    let by_cap: Vec<String> = skipped.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    println!();
    println!(
        "summary: executed {}, passed {passed}, skipped {n_skipped}{}, failed {}",
        results.len(),
        if by_cap.is_empty() {
            String::new()
        } else {
            format!(" ({})", by_cap.join(", "))
        },
        failed.len()
    );
    for done in &failed {
        if let Outcome::Failed(why) = &done.outcome {
            println!(
                "failed: {} [{}]: {why}",
                done.case.path(),
                done.case.rules.join(" ")
            );
        }
    }
    failed.len()
}
