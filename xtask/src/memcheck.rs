//! `cargo xtask memcheck`: a representative part of the suite under
//! valgrind's memcheck, which must report no error and no leak.
//!
//! Steps:
//! 1. check that `valgrind` runs;
//! 2. build the scheduler and mio plugins (so `ASYNC_SCHEDULER=context` and
//!    `corosensei` load the shared library), the scheduler's own test
//!    binaries, the integration suite's `coroutine`, `cancel`, `scope` and
//!    `time` binaries, and the `demo` example (cargo's JSON messages name the
//!    executables);
//! 3. run each under `valgrind --error-exitcode=1 --leak-check=full
//!    --errors-for-leak-kinds=definite,indirect`, one run at a time (each
//!    test binary with two test threads), the integration binaries and the
//!    demo once per engine;
//! 4. print one row per run (what ran, tests passed and failed, memcheck
//!    errors, definitely and indirectly lost bytes, time) and fail unless
//!    every run has 0 errors, 0 bytes lost and passing tests.
//!
//! `--only TEXT` runs the rows whose label contains TEXT. Valgrind's output
//! for each run is kept in `<target>/memcheck/<label>.log`, the program's
//! in `<label>.out`.
//!
//! Left out, each for a reason given where it is listed (`SKIPS`): tests of
//! 100,000 coroutines (minutes under valgrind, and nothing the smaller ones
//! do not cover), the floating-point state tests (valgrind does not emulate
//! MXCSR's exception flags), and a test whose time bound is tighter than
//! valgrind's slowdown. The whole run takes about two to three minutes on
//! two cores after the build.
//!
//! No suppressions are needed today: the one block valgrind does not see
//! freed is std's handle of the main thread (`std::thread::current`), which
//! it counts as "possibly lost", a kind this run does not fail on.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cmd::{cargo, run_capture};

/// The valgrind options of every run (the brief of the command).
const VALGRIND_ARGS: &[&str] = &[
    "--error-exitcode=1",
    "--leak-check=full",
    "--errors-for-leak-kinds=definite,indirect",
    "--num-callers=40",
];

/// A run that takes longer than this is killed and fails (a hang).
const RUN_LIMIT: Duration = Duration::from_secs(900);

/// The integration suite's binaries that run, once per engine.
const SUITE: &[&str] = &["coroutine", "cancel", "scope", "time"];

/// The engines every integration binary and the demo run under.
const ENGINES: &[&str] = &["context", "corosensei"];

/// Tests left out under valgrind: `(binary, test name prefix, why)`.
const SKIPS: &[(&str, &str, &str)] = &[
    (
        "scheduler",
        "scale::",
        "100,000 coroutines: minutes under valgrind; the pool and switch paths are covered by \
         the smaller tests",
    ),
    (
        "scheduler",
        "chaos::hundred_thousand_coroutines_suspend_at_once_under_chaos",
        "100,000 coroutines, as above",
    ),
    (
        "scheduler",
        "fp::",
        "valgrind does not emulate MXCSR's sticky exception flags, which these tests assert",
    ),
    (
        "time",
        "time_timeout::r_au4_a_timeout_expires_after_its_duration",
        "asserts that a 30 ms timeout has not expired after a 10 ms delay: valgrind's slowdown \
         is larger than that margin",
    ),
    (
        "time",
        "time_delay::concurrent_delays_finish_in_reverse_order_well_under_their_sum",
        "asserts the whole run, plugin loading included, takes under 490 ms for delays of at \
         most 300 ms: loading the plugins under valgrind alone can take the margin (501 ms)",
    ),
];

/// One program to run under valgrind.
struct Run {
    label: String,
    exe: PathBuf,
    /// Where it runs: its package's directory, as under `cargo test`.
    dir: PathBuf,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    /// A libtest binary (its summary line is parsed).
    libtest: bool,
}

/// What one run reported.
struct Row {
    label: String,
    passed: u64,
    failed: u64,
    errors: Option<u64>,
    definitely: u64,
    indirectly: u64,
    time: Duration,
    ok: bool,
    note: String,
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut only: Option<String> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--only" => only = Some(it.next().ok_or("--only needs a value")?.clone()),
            other => return Err(format!("unknown memcheck argument \"{other}\"")),
        }
    }
    check_valgrind()?;
    let built = build()?;
    let runs: Vec<Run> = plan(&built)
        .into_iter()
        .filter(|r| only.as_ref().is_none_or(|o| r.label.contains(o.as_str())))
        .collect();
    if runs.is_empty() {
        return Err("memcheck: no run matches --only".into());
    }
    let log_dir = built.target_dir.join("memcheck");
    std::fs::create_dir_all(&log_dir)
        .map_err(|e| format!("cannot create {}: {e}", log_dir.display()))?;
    let mut rows = Vec::new();
    for r in &runs {
        eprintln!("xtask: memcheck: {}", r.label);
        rows.push(run_one(r, &built, &log_dir)?);
    }
    print_table(&rows);
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.ok)
        .map(|r| r.label.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "memcheck failed: {} (logs in {})",
            failed.join("; "),
            log_dir.display()
        ))
    }
}

fn check_valgrind() -> Result<(), String> {
    let mut cmd = Command::new("valgrind");
    cmd.arg("--version");
    match run_capture(cmd, "valgrind --version") {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err(
            "memcheck needs valgrind on the PATH (Debian/Ubuntu: apt-get install \
                  valgrind)"
                .into(),
        ),
    }
}

/// What the build produced.
struct Built {
    target_dir: PathBuf,
    /// The directory holding `libasync_scheduler.so` and `libreactor_mio.so`.
    plugin_dir: PathBuf,
    /// `(target name, executable, package directory)` of every test binary
    /// and example built.
    exes: Vec<(String, PathBuf, PathBuf)>,
}

impl Built {
    fn exe(&self, name: &str) -> Result<(&Path, &Path), String> {
        self.exes
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, exe, dir)| (exe.as_path(), dir.as_path()))
            .ok_or_else(|| format!("memcheck: the build produced no executable \"{name}\""))
    }
}

fn build() -> Result<Built, String> {
    let mut exes = Vec::new();
    let mut plugin_dir = None;
    let mut target_dir = None;
    let mut steps: Vec<(Vec<String>, &str)> = vec![
        (
            args(&[
                "build",
                "-p",
                "async-scheduler-cdylib",
                "-p",
                "reactor-mio-cdylib",
            ]),
            "building the plugins",
        ),
        (
            args(&["test", "-p", "async-scheduler", "--no-run"]),
            "building the scheduler's tests",
        ),
        (
            args(&["build", "-p", "async-std-api", "--example", "demo"]),
            "building the demo example",
        ),
    ];
    let mut suite = args(&["test", "-p", "tests", "--no-run"]);
    for t in SUITE {
        suite.extend(args(&["--test", t]));
    }
    steps.push((suite, "building the integration suite's binaries"));
    for (cargo_args, what) in steps {
        eprintln!("xtask: memcheck: {what}");
        let mut cmd = cargo();
        cmd.args(&cargo_args)
            .arg("--message-format=json-render-diagnostics")
            .stderr(Stdio::inherit());
        let out = run_capture(cmd, what)?;
        if !out.status.success() {
            return Err(format!("{what} failed ({})", out.status));
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if msg["reason"] != "compiler-artifact" {
                continue;
            }
            let name = msg["target"]["name"].as_str().unwrap_or_default();
            if let Some(exe) = msg["executable"].as_str() {
                let dir = msg["manifest_path"]
                    .as_str()
                    .and_then(|m| Path::new(m).parent())
                    .map_or_else(crate::cmd::root, Path::to_path_buf);
                exes.push((name.to_owned(), PathBuf::from(exe), dir));
            }
            let is_plugin = msg["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "cdylib"));
            if is_plugin && name == "async_scheduler" {
                let so = msg["filenames"].as_array().and_then(|f| {
                    f.iter()
                        .filter_map(|f| f.as_str())
                        .find(|f| f.ends_with(".so"))
                });
                if let Some(dir) = so.and_then(|so| Path::new(so).parent()) {
                    plugin_dir = Some(dir.to_path_buf());
                    target_dir = dir.parent().map(Path::to_path_buf);
                }
            }
        }
    }
    let plugin_dir = plugin_dir.ok_or("memcheck: the build produced no libasync_scheduler.so")?;
    Ok(Built {
        target_dir: target_dir.unwrap_or_else(|| plugin_dir.clone()),
        plugin_dir,
        exes,
    })
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// The runs, in order: the scheduler's tests, then the integration binaries
/// and the demo once per engine.
fn plan(built: &Built) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut push = |label: String, name: &str, env: Vec<(&'static str, String)>, libtest: bool| {
        let (exe, dir) = match built.exe(name) {
            Ok((exe, dir)) => (exe.to_path_buf(), dir.to_path_buf()),
            Err(e) => {
                eprintln!("xtask: {e}");
                return;
            }
        };
        let mut args = Vec::new();
        if libtest {
            args.push("--test-threads=2".to_owned());
            for (bin, test, _why) in SKIPS {
                if *bin == name {
                    args.extend(["--skip".to_owned(), (*test).to_owned()]);
                }
            }
        }
        runs.push(Run {
            label,
            exe,
            dir,
            args,
            env,
            libtest,
        });
    };
    push(
        "async-scheduler unit tests".into(),
        "async_scheduler",
        vec![],
        true,
    );
    push(
        "async-scheduler tests/scheduler (both engines inside)".into(),
        "scheduler",
        vec![],
        true,
    );
    for engine in ENGINES {
        let env = vec![
            ("ASYNC_SCHEDULER", (*engine).to_owned()),
            ("ASYNC_REACTOR", "mio".to_owned()),
        ];
        for t in SUITE {
            push(
                format!("tests/{t}, {engine} .so + mio .so"),
                t,
                env.clone(),
                true,
            );
        }
        push(
            format!("example demo, {engine} .so + mio .so"),
            "demo",
            env,
            false,
        );
    }
    runs
}

fn run_one(r: &Run, built: &Built, log_dir: &Path) -> Result<Row, String> {
    let stem: String = r
        .label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let log = log_dir.join(format!("{stem}.log"));
    let out_path = log_dir.join(format!("{stem}.out"));
    let mut cmd = Command::new("valgrind");
    cmd.args(VALGRIND_ARGS)
        .arg(format!("--log-file={}", log.display()))
        .arg(&r.exe)
        .args(&r.args)
        .env("ASYNC_PLUGIN_PATH", &built.plugin_dir)
        .envs(r.env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(&r.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let (status, output) = wait_limited(cmd, &r.label)?;
    let time = started.elapsed();
    std::fs::write(&out_path, &output)
        .map_err(|e| format!("cannot write {}: {e}", out_path.display()))?;
    let text = String::from_utf8_lossy(&output);
    let (passed, failed) = if r.libtest {
        let c = crate::matrix::parse_libtest(&text);
        (c.passed, c.failed)
    } else {
        (u64::from(status.is_some_and(|s| s.success())), 0)
    };
    let summary = std::fs::read_to_string(&log).unwrap_or_default();
    let (errors, definitely, indirectly) = parse_memcheck(&summary);
    let mut note = String::new();
    match status {
        None => note = format!("killed after {}s", RUN_LIMIT.as_secs()),
        Some(s) if !s.success() => note = format!("exit {s}"),
        Some(_) => {}
    }
    if errors.is_none() {
        note.push_str(" no valgrind summary");
    }
    if r.libtest && passed == 0 && failed == 0 {
        note.push_str(" no test ran");
    }
    let ok = status.is_some_and(|s| s.success())
        && errors == Some(0)
        && definitely == 0
        && indirectly == 0
        && failed == 0
        && !(r.libtest && passed == 0);
    Ok(Row {
        label: r.label.clone(),
        passed,
        failed,
        errors,
        definitely,
        indirectly,
        time,
        ok,
        note: note.trim().to_owned(),
    })
}

/// Runs `cmd` with its stdout and stderr merged into one capture, killing
/// it after [`RUN_LIMIT`]; `None` as the status means it was killed.
fn wait_limited(
    mut cmd: Command,
    what: &str,
) -> Result<(Option<std::process::ExitStatus>, Vec<u8>), String> {
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run valgrind for {what}: {e}"))?;
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut pipe| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    })
    .collect();
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > RUN_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            // Polling is how std lets a parent bound a child's run time.
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("waiting for {what}: {e}")),
        }
    };
    let mut output = Vec::new();
    for r in readers {
        output.extend(r.join().unwrap_or_default());
    }
    Ok((status, output))
}

/// `(errors, definitely lost bytes, indirectly lost bytes)` summed over the
/// processes of a valgrind log; errors are `None` without a summary (valgrind
/// itself failed). A log with no leak summary ("no leaks are possible") has
/// nothing lost.
fn parse_memcheck(log: &str) -> (Option<u64>, u64, u64) {
    let mut errors = None;
    let (mut definitely, mut indirectly) = (0, 0);
    for line in log.lines() {
        let text = line.split_once("== ").map_or(line, |(_, rest)| rest).trim();
        if let Some(rest) = text.strip_prefix("ERROR SUMMARY:") {
            *errors.get_or_insert(0) += leading_number(rest);
        } else if let Some(rest) = text.strip_prefix("definitely lost:") {
            definitely += leading_number(rest);
        } else if let Some(rest) = text.strip_prefix("indirectly lost:") {
            indirectly += leading_number(rest);
        }
    }
    (errors, definitely, indirectly)
}

/// The first number in `text`, ignoring thousands separators (`1,024`).
fn leading_number(text: &str) -> u64 {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or(0)
}

fn print_table(rows: &[Row]) {
    let width = rows.iter().map(|r| r.label.len()).max().unwrap_or(0).max(3);
    println!();
    println!(
        "{:width$}  {:>6}  {:>6}  {:>6}  {:>12}  {:>12}  {:>7}  result",
        "run", "passed", "failed", "errors", "def. lost B", "ind. lost B", "time"
    );
    for r in rows {
        let errors = r.errors.map_or("?".to_owned(), |e| e.to_string());
        println!(
            "{:width$}  {:>6}  {:>6}  {:>6}  {:>12}  {:>12}  {:>6.1}s  {}{}",
            r.label,
            r.passed,
            r.failed,
            errors,
            r.definitely,
            r.indirectly,
            r.time.as_secs_f64(),
            if r.ok { "ok" } else { "FAILED" },
            if r.note.is_empty() {
                String::new()
            } else {
                format!(" ({})", r.note)
            }
        );
    }
    let total: Duration = rows.iter().map(|r| r.time).sum();
    println!(
        "{} runs, {:.0}s under valgrind",
        rows.len(),
        total.as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::{leading_number, parse_memcheck};

    #[test]
    fn a_valgrind_log_is_summed_over_its_processes() {
        let log = "\
==10== HEAP SUMMARY:
==10==    definitely lost: 1,024 bytes in 2 blocks
==10==    indirectly lost: 16 bytes in 1 blocks
==10==      possibly lost: 48 bytes in 1 blocks
==10== ERROR SUMMARY: 3 errors from 2 contexts (suppressed: 0 from 0)
==11== All heap blocks were freed -- no leaks are possible
==11== ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)
";
        assert_eq!(parse_memcheck(log), (Some(3), 1024, 16));
        assert_eq!(parse_memcheck("valgrind: failed to start"), (None, 0, 0));
        assert_eq!(leading_number(" 12 bytes"), 12);
    }
}
