//! Version skew both ways, and the standalone kit on faulty reactors. The
//! fixtures are C files in `async-abi/tests/c/`, compiled here with `cc`:
//!
//! - `reactor_next_minor.c`: a reactor of ABI 1.<current+1> (longer
//!   descriptor and vtable whose extra slots abort if called, a capability
//!   bit no minor defines) forwarding to `libreactor_mio.so`: this host
//!   loads it and runs a program on it, and the kit passes on it;
//! - `reactor_major2.c`: exports only `aa_reactor_entry_v2`: the host and
//!   the kit say "ABI major 2", not "not a reactor plugin";
//! - `reactor_aborts.c`: forwards to mio but aborts in `trigger_new` and
//!   hangs in `timer_rearm`: the kit fails those cases with the signal or
//!   the timeout, passes the others and prints its summary.
//!
//! (A 1.0 plugin in this host: `abi10.rs`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use tests::conformance::{Reactor, CASES};
use tests::support::{run_child, PROBE_MARKER};

use crate::abi10::mio_library;

const PROBE: &str = env!("CARGO_BIN_EXE_runtime_probe");
const KIT: &str = env!("CARGO_BIN_EXE_reactor_kit");

/// Compiles `async-abi/tests/c/<name>.c` into a shared library, once per
/// process and name.
fn fixture(name: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<Vec<(String, PathBuf)>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(n, _)| n == name) {
        return path.clone();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = root.join("async-abi/tests/c").join(format!("{name}.c"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
    std::fs::create_dir_all(&dir).expect("create the fixture directory");
    let out = dir.join(format!("lib{name}.so"));
    // Built under a name of this process, then renamed: test binaries of
    // several cells may run at once.
    let tmp = dir.join(format!("lib{name}.{}.tmp.so", std::process::id()));
    let status = Command::new("cc")
        .args([
            "-shared", "-fPIC", "-O0", "-Wall", "-Wextra", "-Werror", "-o",
        ])
        .arg(&tmp)
        .arg("-I")
        .arg(root.join("async-abi/include"))
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("cannot run cc for fixture {name}: {e}"));
    assert!(status.success(), "cc failed for fixture {name}");
    std::fs::rename(&tmp, &out).expect("rename the fixture");
    built.push((name.to_owned(), out.clone()));
    out
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

/// Runs the standalone kit with `args` and `env`.
fn kit(args: &[&str], env: &[(&str, &Path)]) -> (Output, String) {
    let mut cmd = Command::new(KIT);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run reactor_kit");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, stdout)
}

fn summary(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("summary: "))
        .unwrap_or_else(|| panic!("no summary line in:\n{stdout}"))
}

#[test]
fn a_plugin_of_the_next_minor_passes_the_kit_and_runs_in_this_host() {
    let (fixture, inner) = (fixture("reactor_next_minor"), mio_library());
    let lib = show(&fixture);
    let (out, stdout) = kit(
        &["--jobs", "2", &lib],
        &[("AA_NEXT_MINOR_INNER", inner.as_path())],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let minor = async_abi::AA_ABI_MINOR + 1;
    assert!(
        stdout.contains(&format!(
            "implements ABI 1.{minor} (vtable iface_minor {minor}; descriptor abi_minor {minor})"
        )),
        "{stdout}"
    );
    let line = summary(&stdout);
    assert!(
        line.starts_with(&format!("summary: executed {}, ", CASES.len()))
            && line.ends_with(", failed 0"),
        "{line}"
    );
    assert!(
        !stdout.contains("a slot this host does not know"),
        "{stdout}"
    );

    let inner = show(&inner);
    let env = [
        ("ASYNC_REACTOR", lib.as_str()),
        ("AA_NEXT_MINOR_INNER", inner.as_str()),
        ("RUST_LOG", "info"),
    ];
    let hello = run_child(PROBE, &[], &env);
    assert_eq!(hello.code, Some(0), "stderr: {}", hello.stderr);
    assert!(hello.stdout.contains(PROBE_MARKER), "{}", hello.stdout);
    let loaded =
        format!("loaded reactor \"{lib}\": reactor-mio 1.next-minor-fixture (ABI 1.{minor}, caps ");
    assert!(
        hello.stderr.contains(&loaded),
        "expected {loaded:?} in:\n{}",
        hello.stderr
    );
    // TCP through io_submit, on the newer plugin.
    let emfile = run_child(PROBE, &["emfile"], &env);
    assert_eq!(emfile.code, Some(0), "stderr: {}", emfile.stderr);
    let last = emfile.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("accepted 3 after "), "{}", emfile.stdout);
    for out in [&hello, &emfile] {
        assert!(
            !out.stderr.contains("a slot this host does not know"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn a_plugin_of_abi_major_2_is_refused_naming_its_major() {
    let p = show(&fixture("reactor_major2"));
    run_child(PROBE, &[], &[("ASYNC_REACTOR", &p)]).assert_config_error(&format!(
        "cannot load reactor \"{p}\": ABI major 2, host supports 1 \
         (the library exports aa_reactor_entry_v2, not aa_reactor_entry_v1)"
    ));
    let err = Reactor::load(Path::new(&p)).expect_err("a major-2 plugin loaded");
    assert_eq!(
        err,
        format!("cannot load reactor \"{p}\": ABI major 2, conformance kit supports 1")
    );
    let (out, _) = kit(&[&p], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ABI major 2, conformance kit supports 1")
    );
}

#[test]
fn the_kit_fails_a_crashing_or_hanging_case_with_its_signal_or_timeout_and_goes_on() {
    let (fixture, inner) = (fixture("reactor_aborts"), mio_library());
    let lib = show(&fixture);
    let (out, stdout) = kit(
        &[
            "--jobs",
            "2",
            "--timeout",
            "3",
            "--filter",
            "trigger::",
            "--filter",
            "rearm_replaces",
            &lib,
        ],
        &[("AA_ABORTS_INNER", inner.as_path())],
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    // The trigger tier's nine cases, seven of which make a trigger (and so
    // abort), and one re-arm (which hangs).
    assert_eq!(
        summary(&stdout),
        "summary: executed 10, passed 2, skipped 0, failed 8",
        "{stdout}"
    );
    for wake in [
        "wake_from_another_thread_interrupts_run_once",
        "wake_ends_run_once_while_a_far_timer_is_armed",
    ] {
        assert!(
            stdout.contains(&format!("pass  trigger::{wake}")),
            "{stdout}"
        );
    }
    let failed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("failed: "))
        .collect();
    assert_eq!(failed.len(), 8, "{stdout}");
    for line in &failed {
        if line.contains("rearm_replaces") {
            assert!(
                line.ends_with("timed out: still running after 3 s (killed)"),
                "{line}"
            );
            assert!(line.contains("[R-TIMER-4]"), "{line}");
        } else {
            assert!(line.starts_with("failed: trigger::"), "{line}");
            assert!(line.ends_with("killed by signal 6 (SIGABRT)"), "{line}");
        }
    }
}

#[test]
fn the_kit_counts_skips_by_capability_never_as_passed() {
    // The ABI 1.0 fixture (abi10.rs) lacks every 1.1 capability.
    let (fixture, inner) = (crate::abi10::fixture(), mio_library());
    let (out, stdout) = kit(
        &[
            "--jobs",
            "2",
            "--filter",
            "dgram::",
            "--filter",
            "file::",
            "--filter",
            "timers::",
            &show(&fixture),
        ],
        &[("AA_ABI10_INNER", inner.as_path())],
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let timers = CASES.iter().filter(|c| c.tier == "timers").count();
    let (dgram, file) = (
        tests::conformance::dgram::CASES.len(),
        tests::conformance::file::CASES.len(),
    );
    // A case that checks only rules 1.1 introduced is skipped as such for a
    // 1.0 reactor (every file case, most datagram cases); the others lack
    // AA_CAP_IO_DGRAM.
    let newer = CASES
        .iter()
        .filter(|c| c.tier == "dgram" || c.tier == "file")
        .filter(|c| tests::conformance::rules::newer_rules(c.rules, 0).len() == c.rules.len())
        .count();
    assert!(newer >= file, "every file case checks R-IO-15 (1.1) only");
    assert_eq!(
        summary(&stdout),
        format!(
            "summary: executed {}, passed {timers}, skipped {} (AA_CAP_IO_DGRAM: {}, \
             rule of a later ABI minor: {newer}), failed 0",
            timers + dgram + file,
            dgram + file,
            dgram + file - newer,
        )
    );
}

#[test]
fn the_kit_lists_every_case_with_its_rules() {
    let (out, stdout) = kit(&["--list"], &[]);
    assert!(out.status.success());
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), CASES.len());
    for (line, case) in lines.iter().zip(CASES) {
        assert_eq!(*line, format!("{}  {}", case.path(), case.rules.join(" ")));
        assert!(!case.rules.is_empty(), "{} cites no rule", case.path());
    }
    let (out, _) = kit(&["/etc/hostname"], &[]);
    assert_eq!(out.status.code(), Some(2), "a file that is not a library");
}
