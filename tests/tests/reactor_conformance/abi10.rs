//! A reactor built for ABI 1.0 under this 1.2 kit and host: the C fixture
//! `tests/fixtures/abi10_reactor.c` (descriptor and vtable of minor 0, the
//! 1.0 vtable size, garbage in the capability bits 1.1 defined) forwarding
//! to `libreactor_mio.so`.
//!
//! - The whole kit runs against it in a child process (this binary again,
//!   `ASYNC_REACTOR` naming the fixture) and passes, with every datagram and
//!   file case skipped (for capabilities a 1.0 instance cannot have, or for
//!   checking only rules 1.1 introduced), and the cases of 1.1 rules
//!   skipped.
//! - The host loads it, reports ABI 1.0 with only the 1.0 capability bits,
//!   runs a program on it (the probe's main coroutine; then its `emfile`
//!   accept loop, TCP through `io_submit`), and never sends it a 1.1
//!   request (the fixture prints a line for each one it refuses).
//! - On it, the event kinds whose native requests need 1.1 capabilities
//!   (datagrams, files) are served by the host's fallbacks (readiness, the
//!   blocking pool), again with no 1.1 request sent.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use async_abi::*;
use tests::conformance::Reactor;
use tests::support::{c_fixture, run_child, PROBE_MARKER};

const PROBE: &str = env!("CARGO_BIN_EXE_runtime_probe");

/// Set in the child that runs the kit against the fixture.
const CHILD_ENV: &str = "AA_ABI10_KIT_CHILD";

/// What the fixture prints when it is sent a request 1.0 does not define.
const REFUSAL: &str = "abi10 fixture: refused opcode";

/// `libreactor_mio.so`: built by `cargo xtask test-matrix` (and by `cargo
/// build -p reactor-mio-cdylib`); built here with `$CARGO` if it is missing.
pub(crate) fn mio_library() -> PathBuf {
    tests::support::plugin_library("libreactor_mio.so")
}

/// The fixture, compiled once per process (`c_fixture` names its temporary
/// file after the process, so two threads must not build it at once).
pub(crate) fn fixture() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| c_fixture("abi10_reactor", Path::new(env!("CARGO_TARGET_TMPDIR"))))
        .clone()
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn abi10_reactor_passes_the_kit_with_every_1_1_case_skipped() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let (fixture, inner) = (fixture(), mio_library());
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new(exe)
        .args([
            "--test-threads=1",
            "--nocapture",
            "--skip",
            "abi10",
            "--skip",
            "skew",
        ])
        .env(CHILD_ENV, "1")
        .env("ASYNC_REACTOR", &fixture)
        .env("AA_ABI10_INNER", &inner)
        .output()
        .expect("run the kit in a child");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "the kit failed:\n{stdout}\n{stderr}");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("test result: "))
        .expect("a summary line");
    assert!(summary.contains(" 0 failed"), "{summary}");
    // Skipped for a capability a 1.0 instance cannot have, or because every
    // rule the case checks came with 1.1 (the kit holds a plugin to the
    // rules of the minor it declares).
    let skipped: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            l.starts_with("SKIPPED ")
                && (l.contains("(ABI 1.0) lacks") || l.contains("rule of a later ABI minor"))
        })
        .collect();
    let cases: Vec<&str> = [
        tests::conformance::dgram::CASES,
        tests::conformance::file::CASES,
    ]
    .concat();
    for case in &cases {
        assert!(
            skipped
                .iter()
                .any(|l| l.starts_with(&format!("SKIPPED {case}:"))),
            "{case} was not skipped for a 1.0 reactor; skipped: {skipped:#?}"
        );
    }
    // Besides them: instance_caps (R-COMPAT-2, 1.1), the 1.1 tightening
    // of R-ERR-2, and the re-armed level poll (R-POLL-8, 1.2).
    for case in [
        "instance_caps_never_exceed_caps",
        "every_failure_sets_last_error_message",
        "readiness_back_after_eagain_is_reported",
    ] {
        assert!(
            skipped
                .iter()
                .any(|l| l.starts_with(&format!("SKIPPED {case}:"))),
            "{case} was not skipped for a 1.0 reactor; skipped: {skipped:#?}"
        );
    }
    assert_eq!(skipped.len(), cases.len() + 3, "{skipped:#?}");
    // Only the compat tier sends it 1.1 requests, on purpose: each of the
    // nine once, and a mkdir in a 1.0-sized struct; it refuses them as a 1.0
    // reactor would. No other case sends one.
    assert_eq!(stderr.matches(REFUSAL).count(), 10, "{stderr}");
}

#[test]
fn abi10_reactor_is_loaded_by_the_host_with_its_1_0_bits_and_serves_io() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let (fixture, inner) = (show(&fixture()), show(&mio_library()));
    let mio_caps = Reactor::load(Path::new(&inner))
        .unwrap_or_else(|e| panic!("{e}"))
        .vtable()
        .caps;
    let env = [
        ("ASYNC_REACTOR", fixture.as_str()),
        ("AA_ABI10_INNER", inner.as_str()),
        ("RUST_LOG", "info"),
    ];
    let hello = run_child(PROBE, &[], &env);
    assert_eq!(hello.code, Some(0), "stderr: {}", hello.stderr);
    assert!(hello.stdout.contains(PROBE_MARKER), "{}", hello.stdout);
    let caps = mio_caps & AA_CAPS_V1_0;
    let loaded = format!(
        "loaded reactor \"{fixture}\": reactor-mio 1.0.0-abi10-fixture (ABI 1.0, caps {caps:#x})"
    );
    assert!(
        hello.stderr.contains(&loaded),
        "expected {loaded:?} in:\n{}",
        hello.stderr
    );
    assert_eq!(caps & (AA_CAP_IO_DGRAM | AA_CAP_IO_FILE), 0);
    let emfile = run_child(PROBE, &["emfile"], &env);
    assert_eq!(emfile.code, Some(0), "stderr: {}", emfile.stderr);
    let last = emfile.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("accepted 3 after "), "{}", emfile.stdout);
    for out in [&hello, &emfile] {
        assert!(!out.stderr.contains(REFUSAL), "{}", out.stderr);
    }
}

#[test]
fn abi10_reactor_without_datagram_or_file_requests_gets_the_hosts_fallbacks() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let (fixture, inner) = (show(&fixture()), show(&mio_library()));
    let env = [
        ("ASYNC_REACTOR", fixture.as_str()),
        ("AA_ABI10_INNER", inner.as_str()),
    ];
    // UDP by readiness, files on the blocking pool, DNS and blocking work as
    // usual: all served, and no 1.1 request ever sent to a 1.0 reactor.
    let out = run_child(PROBE, &["fallbacks"], &env);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        out.stdout.lines().collect::<Vec<_>>(),
        ["udp ok", "fs ok", "dns ok", "blocking ok"],
        "stderr: {}",
        out.stderr
    );
    assert!(!out.stderr.contains(REFUSAL), "{}", out.stderr);
    // F10: each fallback is said once, at WARN, when a call first takes it.
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(" lacks AA_CAP_"))
        .collect();
    let line = |cap: &str| {
        format!(
            "WARN async_std_api::runtime: reactor \"{fixture}\" (reactor-mio 1.0.0-abi10-fixture, \
             ABI 1.0) lacks {cap} (said once)"
        )
    };
    assert_eq!(
        said,
        [
            line("AA_CAP_IO_DGRAM: datagram sockets wait for readiness"),
            line(
                "AA_CAP_IO_FILE: opening, stat, sync and directory calls run on the blocking pool"
            ),
            line("AA_CAP_IO_NATIVE: file reads and writes run on the blocking pool"),
        ],
        "{}",
        out.stderr
    );
}
