//! Deadlock: the waiters are resumed with a cancellation (cause Deadlock),
//! `run` fails, and a program exits non-zero with the scheduler's report.

use async_std_api::{current, run, spawn, CancelCause, ErrorKind};
use tests::support::{run_child_keeping, Recorder};

const PROBE: &str = env!("CARGO_BIN_EXE_runtime_probe");

#[test]
fn a_deadlock_cancels_the_waiters_and_run_fails() {
    let rec = Recorder::new();
    let r = rec.clone();
    let err = run(move || {
        let main = current();
        let r1 = r.clone();
        let child = spawn(move || {
            let e = main.wait().unwrap_err();
            let c = e.interrupted_by().expect("the waiter itself was cancelled");
            r1.push(format!("child: {:?}", c.cause()));
        });
        let child_id = child.id();
        let e = child.join().unwrap_err();
        let c = e.interrupted_by().cloned().expect("main was cancelled");
        r.push(format!("main: {:?}", c.cause()));
        assert_eq!(c.cause(), CancelCause::Deadlock);
        assert_eq!(
            c.to_string(),
            format!("coroutine {} cancelled: deadlock", c.id())
        );
        assert_ne!(c.id(), child_id);
        assert!(current().is_cancellation_requested());
    })
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Deadlock);
    assert_eq!(
        err.to_string(),
        "deadlock: coroutines waited with nothing left to wake them"
    );
    let mut events = rec.events();
    events.sort();
    assert_eq!(events, ["child: Deadlock", "main: Deadlock"]);
}

#[test]
fn a_deadlocked_program_exits_non_zero_and_reports_every_waiter() {
    let out = run_child_keeping(PROBE, &["deadlock"], &[], true);
    assert_eq!(
        out.code,
        Some(1),
        "stderr: {}\nstdout: {}",
        out.stderr,
        out.stdout
    );
    assert!(
        out.stderr
            .trim_end()
            .ends_with("Error: deadlock: coroutines waited with nothing left to wake them"),
        "stderr: {}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "stderr: {}", out.stderr);
    // The probe printed what the report must name: ids and locations.
    let mut expected = Vec::new();
    for line in out.stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [_, id, "spawned", "at", loc] => {
                expected.push(id.to_string());
                // file:line (the column may be printed differently).
                expected.push(loc.rsplit_once(':').unwrap().0.to_owned());
            }
            [_, "waits", "at", loc] => expected.push(loc.to_string()),
            _ => {}
        }
    }
    assert_eq!(expected.len(), 6, "probe output: {}", out.stdout);
    for e in &expected {
        assert!(
            out.stderr.contains(e.as_str()),
            "report lacks {e:?}:\n{}",
            out.stderr
        );
    }
    assert!(
        out.stdout.contains("main woke: waiting for coroutine"),
        "stdout: {}",
        out.stdout
    );
}
