//! A loaded reactor that lacks what the host relies on, or breaks the ABI
//! in a way the host can survive (the C fixture `faulty_reactor.c`, which
//! forwards to reactor-mio): one line naming the plugin, and no request the
//! reactor said it cannot run (F8, F9 in the host's `ffi`).

use std::path::Path;
use std::sync::OnceLock;

use tests::support::{c_fixture, run_child, PROBE_MARKER};

use crate::PROBE;

/// The fixture, compiled once per process (`c_fixture` names its temporary
/// file after the process, so two threads must not build it at once).
fn fixture() -> String {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            c_fixture("faulty_reactor", Path::new(env!("CARGO_TARGET_TMPDIR")))
                .display()
                .to_string()
        })
        .clone()
}

/// The lines of `text` that contain `needle`: the plugin reports a test
/// expects exactly.
fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

/// `libreactor_mio.so` of this build (made here if missing).
fn mio_library() -> String {
    tests::support::plugin_library("libreactor_mio.so")
        .display()
        .to_string()
}

#[test]
fn d40_a_reactor_without_timers_is_refused_at_load_naming_it_and_the_capability() {
    let (p, inner) = (fixture(), mio_library());
    let caps = format!("{:x}", !async_abi::AA_CAP_TIMER);
    run_child(
        PROBE,
        &[],
        &[
            ("ASYNC_REACTOR", &p),
            ("AA_FAULTY_INNER", &inner),
            ("AA_FAULTY_CAPS", &caps),
        ],
    )
    .assert_config_error(&format!(
        "cannot start reactor \"{p}\" ({p}): it lacks AA_CAP_TIMER, which the host needs for \
         every timed wait (delay, timeouts, shutdown)"
    ));
}

#[test]
fn d40_a_reactor_without_io_requests_is_sent_none_and_sockets_say_unsupported() {
    let (p, inner) = (fixture(), mio_library());
    let caps = format!("{:x}", !async_abi::AA_CAP_IO);
    let out = run_child(
        PROBE,
        &["tcp"],
        &[
            ("ASYNC_REACTOR", &p),
            ("AA_FAULTY_INNER", &inner),
            ("AA_FAULTY_CAPS", &caps),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let line = out.stdout.lines().next().unwrap_or_default().to_owned();
    assert!(line.starts_with("tcp error: "), "{out:?}");
    assert!(line.contains(&p), "names the reactor: {line}");
    assert!(line.to_lowercase().contains("unsupported"), "{line}");
}

#[test]
fn d40_the_line_for_a_loaded_reactor_lists_each_missing_capability_and_its_fallback() {
    let (p, inner) = (fixture(), mio_library());
    let caps = format!(
        "{:x}",
        !(async_abi::AA_CAP_DNS | async_abi::AA_CAP_FS_WATCH)
    );
    let out = run_child(
        PROBE,
        &[],
        &[
            ("ASYNC_REACTOR", &p),
            ("AA_FAULTY_INNER", &inner),
            ("AA_FAULTY_CAPS", &caps),
            ("RUST_LOG", "info"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains(PROBE_MARKER), "{out:?}");
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("loaded reactor"))
        .unwrap_or_else(|| panic!("no load line: {out:?}"));
    // reactor-mio itself lacks native and ring file requests.
    assert!(
        line.ends_with(
            "; without AA_CAP_FS_WATCH: fs::watch is unsupported\
             ; without AA_CAP_DNS: names are resolved on the blocking pool\
             ; without AA_CAP_IO_NATIVE: file reads and writes run on the blocking pool\
             ; without AA_CAP_IO_FILE: opening, stat, sync and directory calls run on the \
             blocking pool"
        ),
        "{line}"
    );
}

#[test]
fn d40_a_callback_called_twice_is_ignored_and_reported_once_naming_the_plugin() {
    let (p, inner) = (fixture(), mio_library());
    let out = run_child(
        PROBE,
        &["tcp"],
        &[
            ("ASYNC_REACTOR", &p),
            ("AA_FAULTY_INNER", &inner),
            ("AA_FAULTY_TWICE", "1"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout.trim(), "echoed ping", "{out:?}");
    let reports = lines_with(&out.stderr, "a second time");
    assert_eq!(
        reports,
        [format!(
            "ERROR async_std_api::runtime: reactor \"{p}\" (reactor-mio 0.0.0-faulty-fixture) \
             called an I/O request's callback a second time (ignored; the first call stands)"
        )],
        "{out:?}"
    );
}

#[test]
fn d40_a_failed_reactor_poll_ends_the_run_naming_the_reactor_on_the_busy_path_too() {
    let (p, inner) = (fixture(), mio_library());
    // The loop never idles: only the busy path's fairness poll calls the
    // reactor, and its fourth call fails.
    let out = run_child(
        PROBE,
        &["busy"],
        &[
            ("ASYNC_REACTOR", &p),
            ("AA_FAULTY_INNER", &inner),
            ("AA_FAULTY_FAIL_POLLS", "3"),
        ],
    );
    assert!(!out.stdout.contains("done"), "the run went on: {out:?}");
    assert_eq!(
        out.stderr.lines().last().unwrap_or_default(),
        format!(
            "Error: reactor \"{p}\" failed: faulty fixture: run_once failed on purpose \
             (its run_once returned AA_E_INTERNAL (-10007); scheduler \"embedded\" ended the run)"
        ),
        "{out:?}"
    );
    assert_eq!(out.code, Some(1), "{out:?}");
}

#[test]
fn d40_a_request_the_reactor_fails_reaches_the_call_naming_the_reactor_and_is_logged_once() {
    let (p, inner) = (fixture(), mio_library());
    let out = run_child(
        PROBE,
        &["tcp"],
        &[
            ("ASYNC_REACTOR", &p),
            ("AA_FAULTY_INNER", &inner),
            ("AA_FAULTY_FAIL_SUBMIT", "1"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout.trim(),
        format!(
            "tcp error: reactor \"{p}\" failed the request with internal error in the plugin (AA_E_INTERNAL): \
             faulty fixture: io_submit failed on purpose"
        ),
        "{out:?}"
    );
    let reports = lines_with(&out.stderr, "failed a request");
    assert_eq!(
        reports,
        [format!(
            "ERROR async_std_api::runtime: reactor \"{p}\" (reactor-mio 0.0.0-faulty-fixture) \
             failed a request with internal error in the plugin (AA_E_INTERNAL): faulty fixture: \
             io_submit failed on purpose (said once; each call gets the error)"
        )],
        "{out:?}"
    );
}

#[test]
fn d40_a_timer_callback_called_twice_is_ignored_and_reported_once_naming_the_plugin() {
    let (p, inner) = (fixture(), mio_library());
    let out = run_child(
        PROBE,
        &["delay"],
        &[
            ("ASYNC_REACTOR", &p),
            ("AA_FAULTY_INNER", &inner),
            ("AA_FAULTY_TIMER_TWICE", "1"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout.trim(), "slept twice", "{out:?}");
    let reports = lines_with(&out.stderr, "a second time");
    assert_eq!(
        reports,
        [format!(
            "ERROR async_std_api::runtime: reactor \"{p}\" (reactor-mio 0.0.0-faulty-fixture) \
             called a one-shot timer's callback a second time (ignored; the first call stands)"
        )],
        "{out:?}"
    );
}
