//! `cargo xtask chaos --seeds N [--start S]`: the integration suite under the
//! chaos scheduler once per seed, then a table of the failing seeds with the
//! command that reproduces each failure.
//!
//! This module also defines what the matrix's chaos cells run:
//!
//! - the `tests` suite without the reactor conformance kit
//!   (`reactor_conformance`) and the io_uring syscall proof (`uring`), which
//!   do not exercise scheduling order ([`NOT_SCHEDULING`]);
//! - without the tests whose name contains `fifo_` ([`FIFO_MARKER`]): they
//!   assert an order that only the FIFO policy gives (the RFC leaves the
//!   order to the scheduler, R-CO1), and each says which in a comment;
//! - with `ASYNC_SCHEDULER=chaos ASYNC_SCHEDULER_OPTIONS=seed=<seed>
//!   ASYNC_REACTOR=mio` ([`env()`]): the order among runnable coroutines of
//!   equal priority is a pseudo-random function of the seed, the same on
//!   every run (async-scheduler/README.md, "The chaos policy").

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cmd::{cargo, have_nextest, run_capture, run_inherit};

/// The seeds of the matrix's chaos cells (one cell each).
pub(crate) const MATRIX_SEEDS: [u64; 3] = [1, 2, 3];

/// Test targets of the `tests` package that do not exercise scheduling
/// order: they are left out under chaos.
pub(crate) const NOT_SCHEDULING: [&str; 2] = ["reactor_conformance", "uring"];

/// The marker in a test's name that says it relies on FIFO order.
pub(crate) const FIFO_MARKER: &str = "fifo_";

/// The environment of a chaos run with `seed`.
pub(crate) fn env(seed: u64) -> Vec<(&'static str, String)> {
    vec![
        ("ASYNC_SCHEDULER", "chaos".into()),
        ("ASYNC_SCHEDULER_OPTIONS", format!("seed={seed}")),
        ("ASYNC_REACTOR", "mio".into()),
    ]
}

/// The nextest filter expression of the chaos selection.
pub(crate) fn nextest_filter() -> String {
    let bins: Vec<String> = NOT_SCHEDULING
        .iter()
        .map(|b| format!("binary({b})"))
        .collect();
    format!("not ({}) and not test(/{FIFO_MARKER}/)", bins.join(" | "))
}

/// The test targets of the chaos selection, for plain `cargo test`.
pub(crate) fn libtest_targets() -> Result<Vec<String>, String> {
    Ok(crate::arch::test_targets("tests")?
        .into_iter()
        .filter(|t| !NOT_SCHEDULING.contains(&t.as_str()))
        .collect())
}

/// A nextest profile for `xtask chaos` with a short timeout: a test that
/// hangs under one seed should not cost four minutes per seed. The suite's
/// slowest test takes a few seconds under FIFO.
const NEXTEST_TOOL_CONFIG: &str = "\
[profile.xtask-chaos]
slow-timeout = { period = \"15s\", terminate-after = 2 }
fail-fast = false
failure-output = \"never\"
success-output = \"never\"
status-level = \"fail\"
final-status-level = \"fail\"
";

/// One failing test: its target and its name inside it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Failure {
    target: String,
    name: String,
    /// `FAIL`, `TIMEOUT`, `SIGSEGV`, ...
    how: String,
}

struct SeedRun {
    seed: u64,
    passed: u64,
    failures: BTreeSet<Failure>,
    time: Duration,
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut seeds: Option<u64> = None;
    let mut start = 1u64;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            let v = it.next().ok_or(format!("{name} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{name} needs an unsigned integer, not \"{v}\""))
        };
        match arg.as_str() {
            "--seeds" => seeds = Some(value("--seeds")?),
            "--start" => start = value("--start")?,
            other => return Err(format!("unknown chaos argument \"{other}\"")),
        }
    }
    let seeds = seeds.ok_or("usage: cargo xtask chaos --seeds N [--start S]")?;
    let end = start
        .checked_add(seeds)
        .ok_or("--start plus --seeds overflows")?;

    let plugins = crate::arch::cdylib_packages()?;
    let mut build = cargo();
    build.arg("build");
    for p in &plugins {
        build.args(["-p", p]);
    }
    run_inherit(build, "cargo build (plugins)")?;
    let nextest = have_nextest();
    let mut build_suite = cargo();
    if nextest {
        build_suite.args(["nextest", "run", "-p", "tests", "--no-run"]);
    } else {
        build_suite.args(["test", "-p", "tests", "--no-run"]);
    }
    run_inherit(build_suite, "building the tests suite")?;

    let tool_config = std::env::temp_dir().join(format!("xtask-chaos-{}.toml", std::process::id()));
    if nextest {
        std::fs::write(&tool_config, NEXTEST_TOOL_CONFIG)
            .map_err(|e| format!("cannot write {}: {e}", tool_config.display()))?;
    }
    let targets = libtest_targets()?;
    let started = Instant::now();
    let mut runs = Vec::new();
    for seed in start..end {
        let run = if nextest {
            run_seed_nextest(seed, &tool_config)?
        } else {
            run_seed_libtest(seed, &targets)?
        };
        eprintln!(
            "xtask: chaos seed {seed}: {} passed, {} failed ({:.1}s)",
            run.passed,
            run.failures.len(),
            run.time.as_secs_f64()
        );
        runs.push(run);
    }
    let _ = std::fs::remove_file(&tool_config);
    print_report(&runs, started.elapsed());
    let failing = runs.iter().filter(|r| !r.failures.is_empty()).count();
    if failing == 0 {
        Ok(())
    } else {
        Err(format!("{failing} of {seeds} seeds failed"))
    }
}

/// A command for the chaos selection of the suite with `seed`.
fn suite_command(seed: u64) -> Command {
    let mut cmd = cargo();
    for var in [
        "ASYNC_SCHEDULER",
        "ASYNC_REACTOR",
        "ASYNC_CONFIG",
        "ASYNC_SCHEDULER_OPTIONS",
        "ASYNC_REACTOR_OPTIONS",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env(seed) {
        cmd.env(k, v);
    }
    cmd
}

fn run_seed_nextest(seed: u64, tool_config: &std::path::Path) -> Result<SeedRun, String> {
    let started = Instant::now();
    let mut cmd = suite_command(seed);
    cmd.args(["nextest", "run", "-p", "tests", "--no-fail-fast"])
        .arg("--tool-config-file")
        .arg(format!("xtask:{}", tool_config.display()))
        .args(["--profile", "xtask-chaos", "-E", &nextest_filter()]);
    let out = run_capture(cmd, "the tests suite")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let counts = crate::matrix::parse_nextest(&stderr);
    let failures = parse_nextest_failures(&stderr);
    if !out.status.success() && failures.is_empty() {
        eprint!("{stderr}");
        return Err(format!(
            "seed {seed}: the suite failed without a failing test (a build error?)"
        ));
    }
    Ok(SeedRun {
        seed,
        passed: counts.passed,
        failures,
        time: started.elapsed(),
    })
}

fn run_seed_libtest(seed: u64, targets: &[String]) -> Result<SeedRun, String> {
    let started = Instant::now();
    let mut passed = 0;
    let mut failures = BTreeSet::new();
    for target in targets {
        let mut cmd = suite_command(seed);
        cmd.args([
            "test",
            "-p",
            "tests",
            "--test",
            target,
            "--",
            "--skip",
            FIFO_MARKER,
        ]);
        let out = run_capture(cmd, "the tests suite")?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        passed += crate::matrix::parse_libtest(&text).passed;
        let found = parse_libtest_failures(target, &text);
        if !out.status.success() && found.is_empty() {
            eprint!("{text}");
            return Err(format!(
                "seed {seed}: test target {target} failed without a failing test"
            ));
        }
        failures.extend(found);
    }
    Ok(SeedRun {
        seed,
        passed,
        failures,
        time: started.elapsed(),
    })
}

/// Failures in nextest's status lines:
/// `FAIL [   0.043s] (141/171) tests::shutdown shutdown_phases::name`.
fn parse_nextest_failures(text: &str) -> BTreeSet<Failure> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(&how) = words.first() else { continue };
        let failed = how == "FAIL" || how == "TIMEOUT" || how == "ABORT" || how.starts_with("SIG");
        if !failed || !line.contains('[') || words.len() < 3 {
            continue;
        }
        let (binary, name) = (words[words.len() - 2], words[words.len() - 1]);
        let Some(target) = binary.strip_prefix("tests::") else {
            continue;
        };
        out.insert(Failure {
            target: target.to_owned(),
            name: name.to_owned(),
            how: how.to_owned(),
        });
    }
    out
}

/// Failures in libtest's `test name ... FAILED` lines.
fn parse_libtest_failures(target: &str, text: &str) -> BTreeSet<Failure> {
    text.lines()
        .filter_map(|l| l.strip_prefix("test ")?.strip_suffix(" ... FAILED"))
        .map(|name| Failure {
            target: target.to_owned(),
            name: name.to_owned(),
            how: "FAIL".to_owned(),
        })
        .collect()
}

/// The command that reruns one failing test under its seed.
fn reproduce(seed: u64, f: &Failure) -> String {
    let env: Vec<String> = env(seed)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "{} cargo test -p tests --test {} -- --exact {}",
        env.join(" "),
        f.target,
        f.name
    )
}

fn print_report(runs: &[SeedRun], total: Duration) {
    let (first, last) = match (runs.first(), runs.last()) {
        (Some(a), Some(b)) => (a.seed, b.seed),
        _ => return,
    };
    println!();
    println!(
        "chaos: seeds {first}..={last}, the suite without {} and tests named {FIFO_MARKER}* \
         ({:.1}s)",
        NOT_SCHEDULING.join(", "),
        total.as_secs_f64()
    );
    println!();
    println!(
        "{:>20}  {:>7}  {:>7}  {:>7}",
        "seed", "passed", "failed", "time"
    );
    for r in runs {
        println!(
            "{:>20}  {:>7}  {:>7}  {:>6.1}s",
            r.seed,
            r.passed,
            r.failures.len(),
            r.time.as_secs_f64()
        );
    }
    let failing: Vec<&SeedRun> = runs.iter().filter(|r| !r.failures.is_empty()).collect();
    println!();
    if failing.is_empty() {
        println!("no seed failed");
        println!();
        return;
    }
    println!("failing seeds: {} of {}", failing.len(), runs.len());
    println!();
    println!("seed | test | result | reproduce");
    println!("---|---|---|---");
    for r in &failing {
        for f in &r.failures {
            println!(
                "{} | {}::{} | {} | `{}`",
                r.seed,
                f.target,
                f.name,
                f.how,
                reproduce(r.seed, f)
            );
        }
    }
    let mut by_test: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for r in runs {
        for f in &r.failures {
            by_test
                .entry((f.target.clone(), f.name.clone()))
                .or_default()
                .push(r.seed);
        }
    }
    println!();
    println!("by test (seeds that fail it):");
    for ((target, name), seeds) in &by_test {
        let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
        println!(
            "  {target}::{name}: {} of {} ({})",
            seeds.len(),
            runs.len(),
            list.join(", ")
        );
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nextest_failure_lines_once_each() {
        let text = "\
        FAIL [   0.043s] (141/171) tests::shutdown shutdown_phases::a_test
     TIMEOUT [  10.003s] ( 87/171) tests::cancel cancel_rules::b_test
        PASS [   0.010s] (  1/171) tests::cancel cancel_rules::c_test
        FAIL [   0.043s] (141/171) tests::shutdown shutdown_phases::a_test
     Summary [   6.088s] 171 tests run: 169 passed, 1 failed, 1 timed out, 0 skipped
        FAIL [   0.043s] tests::shutdown shutdown_phases::a_test";
        let found: Vec<String> = parse_nextest_failures(text)
            .into_iter()
            .map(|f| format!("{} {} {}", f.how, f.target, f.name))
            .collect();
        assert_eq!(
            found,
            [
                "TIMEOUT cancel cancel_rules::b_test",
                "FAIL shutdown shutdown_phases::a_test"
            ]
        );
    }

    #[test]
    fn parses_libtest_failures_and_builds_the_reproduction() {
        let text = "test a::b ... ok\ntest a::c ... FAILED\n";
        let found = parse_libtest_failures("cancel", text);
        let f = found.into_iter().next().unwrap();
        assert_eq!(f.name, "a::c");
        assert_eq!(
            reproduce(7, &f),
            "ASYNC_SCHEDULER=chaos ASYNC_SCHEDULER_OPTIONS=seed=7 ASYNC_REACTOR=mio cargo test \
             -p tests --test cancel -- --exact a::c"
        );
    }

    #[test]
    fn the_filter_leaves_out_the_kit_the_proof_and_fifo_tests() {
        assert_eq!(
            nextest_filter(),
            "not (binary(reactor_conformance) | binary(uring)) and not test(/fifo_/)"
        );
    }
}
