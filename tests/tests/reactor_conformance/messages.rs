//! The kit's failures are actionable: the standalone kit (`reactor_kit`) on
//! a reactor that breaks four rules on purpose (the C fixture
//! `tests/fixtures/broken_reactor.c`, forwarding to `libreactor_mio.so`)
//! fails exactly those cases, each with one summary line that names the
//! rule, its link and minor, what the case did (the calls and their input),
//! what the rule requires and what the reactor did, statuses by name; the
//! rule's text follows in the details under `FAIL`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use tests::support::c_fixture;

use crate::abi10::mio_library;

const KIT: &str = env!("CARGO_BIN_EXE_reactor_kit");

/// The fixture, compiled once per process (`c_fixture` names its temporary
/// file after the process, so two threads must not build it at once).
fn fixture() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| c_fixture("broken_reactor", Path::new(env!("CARGO_TARGET_TMPDIR"))))
        .clone()
}

#[test]
fn a_broken_reactor_fails_with_the_rule_the_input_the_requirement_and_what_it_did() {
    let (fixture, inner) = (fixture(), mio_library());
    let out = Command::new(KIT)
        .args(["--jobs", "2"])
        .args(["--filter", "errors::cancel_with_a_non_negative_reason"])
        .args(["--filter", "timers::rearm_replaces_the_deadline"])
        .args(["--filter", "poll::interest_zero_disarms"])
        .args(["--filter", "timers::timers_fire_in_deadline_order"])
        .args(["--filter", "lifecycle::each_callback_gets_its_own_event"])
        .arg(&fixture)
        .env("AA_BROKEN_INNER", &inner)
        // The details under FAIL are the tail of the case's stderr: keep
        // them short and the same whatever the caller's environment.
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run reactor_kit");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("\nsummary: executed 5, passed 1, skipped 0, failed 4\n"),
        "{stdout}"
    );
    // The event pointers in R-EV-5's line differ from run to run: checked
    // up to them.
    let (wrong_event, failed): (Vec<&str>, Vec<&str>) = stdout
        .lines()
        .filter(|l| l.starts_with("failed: "))
        .partition(|l| l.starts_with("failed: lifecycle::"));
    assert_eq!(wrong_event.len(), 1, "{stdout}");
    let (line, pointers) = wrong_event[0]
        .split_once(" (0x")
        .expect("the event's address");
    assert_eq!(
        line,
        "failed: lifecycle::each_callback_gets_its_own_event_and_user_pointer [R-EV-5]: R-EV-5 \
         (docs/abi/event.md#r-ev-5, ABI 1.0) violated. The case did: run_once; the callback \
         given with the event \"trigger a\" ran (recorded as Trigger(\"trigger a\", AA_OK)). \
         The rule requires: its first argument to be that event",
        "{stdout}"
    );
    assert!(
        pointers.contains("). The reactor did: passed another pointer (0x"),
        "{stdout}"
    );
    assert_eq!(
        failed,
        [
            "failed: timers::rearm_replaces_the_deadline_without_a_callback [R-TIMER-4]: \
             R-TIMER-4 (docs/abi/timer.md#r-timer-4, ABI 1.0) violated. The case did: \
             timer_new(one-shot 1 hour, flags 0), timer_rearm(1 ms, repeat 0): its status. \
             The rule requires: AA_OK (0). The reactor did: AA_E_INVALID (-10002).",
            "failed: poll::interest_zero_disarms_the_poll [R-POLL-2]: R-POLL-2 \
             (docs/abi/poll.md#r-poll-2, ABI 1.0) violated. The case did: poll_new(a pipe's \
             read end, AA_POLL_READABLE, flags 0), poll_set_interest(0): alive(). The rule \
             requires: alive() = 0: nothing keeps the loop alive. The reactor did: alive() = 1: \
             an event keeps the loop alive.",
            "failed: errors::cancel_with_a_non_negative_reason_or_nothing_pending_fails \
             [R-ERR-3]: R-ERR-3 (docs/abi/status.md#r-err-3, ABI 1.0) violated. The case did: \
             cancel(an armed one-hour timer, reason 0). The rule requires: a negative status \
             (a reason that is not negative). The reactor did: AA_OK (0).",
        ],
        "{stdout}"
    );
    // The details: each rule's text, once per failed case, under its FAIL.
    for id in ["R-TIMER-4", "R-POLL-2", "R-ERR-3", "R-EV-5"] {
        let rule = tests::conformance::rules::rule(id).expect("a rule of docs/abi");
        let line = format!("      |   Rule: {}", rule.text);
        assert_eq!(
            stdout.lines().filter(|l| *l == line).count(),
            2,
            "{id}: the rule's text in the panic and again at the end of the details:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("pass  timers::timers_fire_in_deadline_order"),
        "{stdout}"
    );
}
