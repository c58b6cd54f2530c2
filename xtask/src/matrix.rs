//! `cargo xtask test-matrix`: the suite once per scheduler x reactor cell.
//!
//! Steps:
//! 1. build every cdylib plugin of the workspace (found from `cargo metadata`:
//!    the `*-cdylib` packages and `reactor-example`) into `target/debug/`.
//!    A built-in name runs the copy linked into the test binary unless its
//!    library is on `ASYNC_PLUGIN_PATH`, so every `.so` cell sets
//!    `ASYNC_PLUGIN_PATH=target/debug`: the cells named `.so` load the files
//!    with libloading (each one's build id checked against the linked copy),
//!    and one cell runs `uring` as the linked copy a program that depends on
//!    the runtime gets;
//! 2. run every crate's own tests once (unit, doc, ABI header and C checks)
//!    and the architecture check;
//! 3. build the `tests` suite once, then run it once per cell, selecting the
//!    backends with `ASYNC_SCHEDULER` / `ASYNC_REACTOR` (test bodies never
//!    name a backend);
//! 4. run it on the C reactor (`reactor-c/`, built with the system C compiler
//!    by [`crate::conformance::build_c_reactor`]): the example a third party
//!    starts from must keep passing the kit and the suite. The tests it
//!    cannot run are left out by name, each with its reason
//!    ([`C_REACTOR_SKIPS`]), and counted as skipped. The Rust example
//!    reactor (`reactor-example/`, on the kit `reactor-sdk`) runs the suite
//!    the same way ([`EXAMPLE_REACTOR_SKIPS`]), and so does the poll(2)
//!    one (`reactor-poll/`, a level-triggered poller under the kit's
//!    `LevelTriggered` adapter: [`POLL_REACTOR_SKIPS`]);
//! 5. run it under the chaos scheduler, one cell per seed of
//!    [`chaos::MATRIX_SEEDS`](crate::chaos::MATRIX_SEEDS): the suite without
//!    the reactor conformance kit and the io_uring proof (they do not
//!    exercise scheduling order) and without tests named `fifo_` (they rely
//!    on FIFO order); `cargo xtask chaos` runs more seeds;
//! 6. run the real-software tests (`tests-real`: the postgres and redis
//!    crates, ureq, libcurl and libpq, unchanged, with the C library hooks
//!    on, against PostgreSQL and Redis servers the tests start) on the
//!    embedded default and on io_uring, one test at a time (each starts its
//!    servers, and the timing they assert wants the cores);
//! 7. print one row per cell: combination, passed, failed, skipped, time.
//!    A chaos cell counts the tests it leaves out as skipped.
//!
//! With cargo-nextest installed each test runs in its own process with a
//! timeout (`.config/nextest.toml`), so a crash or a hang names the test;
//! without it, plain `cargo test` is used.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cmd::{cargo, have_nextest, run_capture, run_inherit};

/// One scheduler x reactor combination.
struct Cell {
    label: String,
    /// The package whose tests the cell runs: the suite (`tests`), or the
    /// real-software tests (`tests-real`).
    package: &'static str,
    env: Vec<(&'static str, String)>,
    /// Only the chaos selection of the suite (`chaos.rs`).
    chaos: bool,
    /// Tests this cell leaves out, each with its reason.
    skips: &'static [Skip],
}

/// A test a cell leaves out: the test binary, the start of the test's name,
/// and why, printed when the cell runs.
pub(crate) struct Skip {
    binary: &'static str,
    prefix: &'static str,
    why: &'static str,
}

/// What the C reactor's cell leaves out: nothing. It lacks
/// `AA_CAP_FS_WATCH`, and the fs-watch tests check, on a third party's
/// reactor without it, that `fs::watch` says so (`Unsupported`, naming the
/// capability).
pub(crate) const C_REACTOR_SKIPS: &[Skip] = &[];

/// What the Rust example reactor's cell (`reactor-example/`, on the kit
/// `reactor-sdk`) leaves out: nothing. It lacks `AA_CAP_IO_INLINE` and the
/// file capabilities, and the host's fallback (the blocking pool) serves
/// every test that needs them; a row goes here, with its reason, if a
/// capability it lacks ever stops a test.
pub(crate) const EXAMPLE_REACTOR_SKIPS: &[Skip] = &[];

/// What the poll(2) example reactor's cell (`reactor-poll/`, the kit's
/// readiness driver over `LevelTriggered<Poll>`) leaves out: nothing. It
/// has the capabilities of `reactor-example`; a row goes here, with its
/// reason, if level-triggered readiness ever stops a test.
pub(crate) const POLL_REACTOR_SKIPS: &[Skip] = &[];

#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) passed: u64,
    pub(crate) failed: u64,
    pub(crate) skipped: u64,
}

struct Row {
    label: String,
    counts: Counts,
    time: Duration,
    ok: bool,
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut filter: Option<String> = None;
    let mut unit = true;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--cell" => filter = Some(it.next().ok_or("--cell needs a value")?.clone()),
            "--no-unit" => unit = false,
            other => return Err(format!("unknown test-matrix argument \"{other}\"")),
        }
    }

    let plugins = crate::arch::cdylib_packages()?;
    let plugin_dir = crate::conformance::target_dir()?.join("debug");
    eprintln!("xtask: building plugins: {}", plugins.join(", "));
    let mut build = cargo();
    build.arg("build");
    for p in &plugins {
        build.args(["-p", p]);
    }
    run_inherit(build, "cargo build (plugins)")?;
    let c_reactor = crate::conformance::build_c_reactor()?;
    // Next to `c_reactor`; its cell finds it there (see `cells`).
    crate::conformance::build_c_reactor_1_0()?;

    let nextest = have_nextest();
    let mut rows = Vec::new();

    if unit {
        rows.push(unit_row()?);
        let started = Instant::now();
        let arch = crate::arch::check(false);
        if let Err(e) = &arch {
            eprintln!("xtask: check-arch: {e}");
        }
        rows.push(Row {
            label: "architecture check (deps, unsafe inventory)".into(),
            counts: Counts {
                passed: u64::from(arch.is_ok()),
                failed: u64::from(arch.is_err()),
                skipped: 0,
            },
            time: started.elapsed(),
            ok: arch.is_ok(),
        });
        let started = Instant::now();
        let sem = crate::semantics::check();
        if let Err(e) = &sem {
            eprintln!("xtask: check-semantics: {e}");
        }
        rows.push(Row {
            label: "semantics check (rule ids defined and tested, no outside paths)".into(),
            counts: Counts {
                passed: u64::from(sem.is_ok()),
                failed: u64::from(sem.is_err()),
                skipped: 0,
            },
            time: started.elapsed(),
            ok: sem.is_ok(),
        });
    }

    // Build the suite once, so cell times measure tests, not compilation.
    let mut build_suite = cargo();
    if nextest {
        build_suite.args([
            "nextest",
            "run",
            "-p",
            "tests",
            "-p",
            "tests-real",
            "--no-run",
        ]);
    } else {
        build_suite.args(["test", "-p", "tests", "-p", "tests-real", "--no-run"]);
    }
    run_inherit(build_suite, "building the tests suite")?;

    for cell in cells(&plugins, &c_reactor, &plugin_dir) {
        if let Some(f) = &filter {
            if !cell.label.contains(f.as_str()) {
                continue;
            }
        }
        eprintln!("xtask: cell: {}", cell.label);
        if let Err(e) = check_files_load(&cell, &plugin_dir.join("runtime_probe")) {
            eprintln!("xtask:   {e}");
            rows.push(Row {
                label: cell.label.clone(),
                counts: Counts {
                    passed: 0,
                    failed: 1,
                    skipped: 0,
                },
                time: Duration::ZERO,
                ok: false,
            });
            continue;
        }
        rows.push(run_cell(&cell, nextest)?);
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
        Err(format!("failing: {}", failed.join("; ")))
    }
}

/// The cells for the plugins this workspace builds; `plugin_dir` holds
/// their libraries.
fn cells(plugins: &[String], c_reactor: &Path, plugin_dir: &Path) -> Vec<Cell> {
    let mut cells = vec![
        Cell {
            label: "embedded scheduler + embedded mio (no configuration)".into(),
            package: "tests",
            env: vec![],
            chaos: false,
            skips: &[],
        },
        // What `ASYNC_REACTOR=uring` is in a program that depends on the
        // runtime and builds no plugin: the copy of reactor-uring linked
        // into it, beside the linked mio (one process, two reactors' code).
        Cell {
            label: "embedded scheduler + linked uring (a name, no plugin files)".into(),
            package: "tests",
            env: vec![("ASYNC_REACTOR", "uring".into())],
            chaos: false,
            skips: &[],
        },
    ];
    let has = |p: &str| plugins.iter().any(|x| x == p);
    // The built-in names load these files, not the linked copies.
    let files = ("ASYNC_PLUGIN_PATH", plugin_dir.display().to_string());
    let (sched, mio, uring) = (
        has("async-scheduler-cdylib"),
        has("reactor-mio-cdylib"),
        has("reactor-uring-cdylib"),
    );
    if sched && mio {
        for engine in ["context", "corosensei"] {
            cells.push(Cell {
                label: format!("scheduler .so ({engine} engine) + mio .so"),
                package: "tests",
                env: vec![
                    ("ASYNC_SCHEDULER", engine.into()),
                    ("ASYNC_REACTOR", "mio".into()),
                    files.clone(),
                ],
                chaos: false,
                skips: &[],
            });
        }
    }
    if sched && uring {
        for engine in ["context", "corosensei"] {
            let mut env = vec![
                ("ASYNC_SCHEDULER", engine.into()),
                ("ASYNC_REACTOR", "uring".into()),
                files.clone(),
            ];
            // One uring cell takes every stream read and write through the
            // ring, as `uring.inline_streams=off` does; the others take the
            // default, readiness reads and direct writes in the host.
            let label = if engine == "corosensei" {
                env.push(("ASYNC_REACTOR_OPTIONS", "uring.inline_streams=off".into()));
                format!("scheduler .so ({engine} engine) + uring .so, stream requests in the ring")
            } else {
                format!("scheduler .so ({engine} engine) + uring .so")
            };
            cells.push(Cell {
                label,
                package: "tests",
                env,
                chaos: false,
                skips: &[],
            });
        }
    }
    if sched {
        cells.push(Cell {
            label: "scheduler .so (context engine) + C reactor .so (ABI 1.1, frozen 1.1 header)"
                .into(),
            package: "tests",
            env: vec![
                ("ASYNC_SCHEDULER", "context".into()),
                ("ASYNC_REACTOR", c_reactor.display().to_string()),
                files.clone(),
            ],
            chaos: false,
            skips: C_REACTOR_SKIPS,
        });
        // The proof that a plugin is held to the rules of the minor it
        // declares: reactor-c built as ABI 1.0 (frozen 1.0 header, minor
        // pinned at 0) runs the current kit and suite.
        cells.push(Cell {
            label: "scheduler .so (context engine) + C reactor .so built as ABI 1.0".into(),
            package: "tests",
            env: vec![
                ("ASYNC_SCHEDULER", "context".into()),
                (
                    "ASYNC_REACTOR",
                    c_reactor
                        .with_file_name("libreactor_c_abi1_0.so")
                        .display()
                        .to_string(),
                ),
                files.clone(),
            ],
            chaos: false,
            skips: C_REACTOR_SKIPS,
        });
    }
    if sched && has("reactor-example") {
        // Built with the other cdylibs, next to the C reactor's library.
        let example = c_reactor.with_file_name("libreactor_example.so");
        cells.push(Cell {
            label: "scheduler .so (context engine) + Rust example reactor .so (reactor-sdk)".into(),
            package: "tests",
            env: vec![
                ("ASYNC_SCHEDULER", "context".into()),
                ("ASYNC_REACTOR", example.display().to_string()),
                files.clone(),
            ],
            chaos: false,
            skips: EXAMPLE_REACTOR_SKIPS,
        });
    }
    if sched && has("reactor-poll") {
        let poll = c_reactor.with_file_name("libreactor_poll.so");
        cells.push(Cell {
            label: "scheduler .so (context engine) + Rust poll(2) reactor .so (reactor-sdk, level-triggered)"
                .into(),
            package: "tests",
            env: vec![
                ("ASYNC_SCHEDULER", "context".into()),
                ("ASYNC_REACTOR", poll.display().to_string()),
                files.clone(),
            ],
            chaos: false,
            skips: POLL_REACTOR_SKIPS,
        });
    }
    if sched && mio {
        for seed in crate::chaos::MATRIX_SEEDS {
            let mut env = crate::chaos::env(seed);
            env.push(files.clone());
            cells.push(Cell {
                label: format!("scheduler .so (chaos seed {seed}) + mio .so"),
                package: "tests",
                env,
                chaos: true,
                skips: &[],
            });
        }
    }
    cells.push(Cell {
        label: "real software with hooks: embedded scheduler + embedded mio".into(),
        package: "tests-real",
        env: vec![],
        chaos: false,
        skips: &[],
    });
    if sched && uring {
        cells.push(Cell {
            label: "real software with hooks: scheduler .so (context engine) + uring .so".into(),
            package: "tests-real",
            env: vec![
                ("ASYNC_SCHEDULER", "context".into()),
                ("ASYNC_REACTOR", "uring".into()),
                files.clone(),
            ],
            chaos: false,
            skips: &[],
        });
    }
    cells
}

fn unit_row() -> Result<Row, String> {
    eprintln!("xtask: crate tests (every crate but the suite, once)");
    let started = Instant::now();
    let mut cmd = cargo();
    cmd.args([
        "test",
        "--workspace",
        "--exclude",
        "tests",
        "--exclude",
        "tests-real",
        "--no-fail-fast",
    ]);
    let out = run_capture(cmd, "cargo test --workspace")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let counts = parse_libtest(&text);
    if !out.status.success() {
        print!("{text}");
    }
    Ok(Row {
        label: "crate tests (abi, header, scheduler, reactor, api, docs)".into(),
        ok: out.status.success() && counts.failed == 0,
        counts,
        time: started.elapsed(),
    })
}

/// A cell that sets `ASYNC_PLUGIN_PATH` must run the plugin files, not the
/// linked copies (which would pass the suite just as well, testing nothing
/// new): the runtime probe, run with the cell's environment, must print
/// the notice naming a file for both plugins, which is echoed into the log.
fn check_files_load(cell: &Cell, probe: &Path) -> Result<(), String> {
    if !cell.env.iter().any(|(k, _)| *k == "ASYNC_PLUGIN_PATH") {
        return Ok(());
    }
    let mut cmd = std::process::Command::new(probe);
    for var in [
        "ASYNC_CONFIG",
        "ASYNC_SCHEDULER_OPTIONS",
        "ASYNC_REACTOR_OPTIONS",
        "ASYNC_PLUGIN_NOTICE",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(cell.env.iter().map(|(k, v)| (*k, v.as_str())));
    let out = run_capture(cmd, "the runtime probe")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    match stderr.lines().find(|l| l.starts_with("async-std-api: ")) {
        // Every such cell loads both plugins from files.
        Some(line) if out.status.success() && line.matches(" from /").count() == 2 => {
            eprintln!("xtask:   {line}");
            Ok(())
        }
        _ => Err(format!(
            "the cell's probe loaded no plugin file ({}): {}",
            out.status,
            stderr.trim()
        )),
    }
}

fn run_cell(cell: &Cell, nextest: bool) -> Result<Row, String> {
    let started = Instant::now();
    let mut cmd = cargo();
    if nextest {
        cmd.args([
            "nextest",
            "run",
            "-p",
            cell.package,
            "--profile",
            "ci",
            "--no-fail-fast",
        ]);
        if cell.package == "tests-real" {
            cmd.args(["--test-threads", "1"]);
        }
        if cell.chaos {
            cmd.args(["-E", &crate::chaos::nextest_filter()]);
        }
        if !cell.skips.is_empty() {
            cmd.args(["-E", &skip_filter(cell.skips)]);
        }
    } else {
        cmd.args(["test", "-p", cell.package, "--no-fail-fast"]);
        if cell.chaos {
            for target in crate::chaos::libtest_targets()? {
                cmd.args(["--test", &target]);
            }
            cmd.args(["--", "--skip", crate::chaos::FIFO_MARKER]);
        } else if !cell.skips.is_empty() {
            cmd.arg("--");
        }
        for skip in cell.skips {
            cmd.args(["--skip", skip.prefix]);
        }
    }
    for skip in cell.skips {
        eprintln!(
            "xtask:   leaving out {}: {}* ({})",
            skip.binary,
            skip.prefix,
            skip.why.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
    cmd.env_remove("ASYNC_SCHEDULER")
        .env_remove("ASYNC_REACTOR")
        .env_remove("ASYNC_CONFIG")
        .env_remove("ASYNC_SCHEDULER_OPTIONS")
        .env_remove("ASYNC_REACTOR_OPTIONS")
        .env_remove("ASYNC_PLUGIN_PATH")
        .env_remove("ASYNC_PLUGIN_NOTICE");
    for (k, v) in &cell.env {
        cmd.env(k, v);
    }
    let out = run_capture(cmd, "the tests suite")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let counts = if nextest {
        parse_nextest(&stderr)
    } else {
        parse_libtest(&format!("{stdout}{stderr}"))
    };
    let ok = out.status.success() && counts.failed == 0 && counts.passed > 0;
    if !ok || nextest {
        // nextest prints only failures (status-level = fail); libtest output
        // is shown when something failed.
        print!("{stdout}");
        eprint!("{stderr}");
    }
    Ok(Row {
        label: cell.label.clone(),
        counts,
        time: started.elapsed(),
        ok,
    })
}

/// The nextest expression that leaves `skips` out.
fn skip_filter(skips: &[Skip]) -> String {
    let left_out: Vec<String> = skips
        .iter()
        .map(|s| format!("(binary({}) & test(/^{}/))", s.binary, s.prefix))
        .collect();
    format!("not ({})", left_out.join(" | "))
}

/// Sums `test result: ok. 3 passed; 1 failed; 2 ignored; ...` lines.
pub(crate) fn parse_libtest(text: &str) -> Counts {
    let mut c = Counts::default();
    for line in text.lines().filter(|l| l.contains("test result:")) {
        c.passed += number_before(line, " passed");
        c.failed += number_before(line, " failed");
        c.skipped += number_before(line, " ignored") + number_before(line, " filtered out");
    }
    c
}

/// Reads nextest's `Summary [...] 12 tests run: 10 passed, 2 failed, 1 skipped`.
pub(crate) fn parse_nextest(text: &str) -> Counts {
    let mut c = Counts::default();
    if let Some(line) = text
        .lines()
        .rev()
        .find(|l| l.contains("tests run:") || l.contains("test run:"))
    {
        c.passed = number_before(line, " passed");
        c.failed = number_before(line, " failed") + number_before(line, " timed out");
        c.skipped = number_before(line, " skipped");
    }
    c
}

/// The integer written just before `word` in `line`, or 0.
fn number_before(line: &str, word: &str) -> u64 {
    let Some(end) = line.find(word) else { return 0 };
    let head = &line[..end];
    let start = head
        .rfind(|ch: char| !ch.is_ascii_digit())
        .map_or(0, |i| i + 1);
    head[start..].parse().unwrap_or(0)
}

fn print_table(rows: &[Row]) {
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(10)
        .max(11);
    println!();
    println!(
        "{:<width$}  {:>7}  {:>7}  {:>7}  {:>8}  result",
        "combination", "passed", "failed", "skipped", "time"
    );
    println!("{}", "-".repeat(width + 48));
    for r in rows {
        println!(
            "{:<width$}  {:>7}  {:>7}  {:>7}  {:>7.1}s  {}",
            r.label,
            r.counts.passed,
            r.counts.failed,
            r.counts.skipped,
            r.time.as_secs_f64(),
            if r.ok { "ok" } else { "FAILED" }
        );
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_libtest_and_nextest_summaries() {
        let lib = "test result: ok. 3 passed; 1 failed; 2 ignored; 0 measured\n\
                   test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured";
        let c = parse_libtest(lib);
        assert_eq!((c.passed, c.failed, c.skipped), (7, 1, 2));
        let nx = "     Summary [   1.234s] 12 tests run: 10 passed, 2 failed, 1 skipped";
        let c = parse_nextest(nx);
        assert_eq!((c.passed, c.failed, c.skipped), (10, 2, 1));
        let nx = "     Summary [   0.5s] 1 test run: 1 passed, 0 skipped";
        assert_eq!(parse_nextest(nx).passed, 1);
    }
}
