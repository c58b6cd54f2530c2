//! Tier: child processes (`AA_CAP_PROCESS`). A watch calls back once when
//! its child exits, with `code` and `signal` (a child a signal killed: code
//! -1), and reaps it; a pid that is not a child of this process fails at
//! creation; cancel delivers the reason once and leaves the child alone;
//! dispose never calls back.

use std::process::{Child, Command, Stdio};

use crate::{ensure, ensure_eq};
use async_abi::*;

use super::harness::{Loop, Rec};
use super::os;
use super::plugin::Reactor;

const REASON: AaStatus = -4444;

/// `/bin/sh -c <script>`.
#[track_caller]
fn shell(script: &str) -> Child {
    Command::new("/bin/sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn /bin/sh")
}

/// A child that runs until it is killed (`cat` reading a pipe nobody
/// writes).
#[track_caller]
fn sleeper() -> Child {
    Command::new("/bin/cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn /bin/cat")
}

fn pid_of(child: &Child) -> i32 {
    child.id() as i32
}

/// Checks that a child's exit code is reported once, with signal 0, and
/// that the watch reaped it.
pub fn exit_code_is_reported_once_and_the_child_is_reaped(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_PROCESS,
        "exit_code_is_reported_once_and_the_child_is_reaped",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let child = shell("exit 3");
    let pid = pid_of(&child);
    lp.process("p", i64::from(pid), 0);
    ensure_eq!(
        "R-PROC-1",
        lp.alive(),
        1,
        "a pending process watch keeps the loop alive"
    );
    lp.run_until_tag("p");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-PROC-1",
        lp.log(),
        vec![Rec::Process("p", 0, Some((3, 0)))]
    );
    ensure_eq!("R-PROC-1", lp.alive(), 0);
    ensure_eq!(
        "R-PROC-1",
        os::try_reap(pid),
        Err(libc::ECHILD),
        "the watch reaped it"
    );
    drop(child);
    lp.finish();
}

/// Checks that a child killed by `SIGKILL` is reported as code -1, signal
/// 9, and reaped.
pub fn child_killed_by_a_signal_reports_code_minus_one_and_the_signal(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_PROCESS,
        "child_killed_by_a_signal_reports_code_minus_one_and_the_signal",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let child = sleeper();
    let pid = pid_of(&child);
    lp.process("p", i64::from(pid), 0);
    lp.run_once(0);
    ensure_eq!("R-PROC-1", lp.log(), vec![], "the child is still running");
    os::kill(pid, libc::SIGKILL);
    lp.run_until_tag("p");
    lp.run_once(0);
    ensure_eq!(
        "R-PROC-1",
        lp.log(),
        vec![Rec::Process("p", 0, Some((-1, libc::SIGKILL)))]
    );
    ensure_eq!(
        "R-PROC-1",
        os::try_reap(pid),
        Err(libc::ECHILD),
        "the watch reaped it"
    );
    drop(child);
    lp.finish();
}

/// Checks that a child that exited before the watch was made (a zombie) is
/// reported at once.
pub fn child_that_exited_before_the_watch_is_reported(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_PROCESS,
        "child_that_exited_before_the_watch_is_reported",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let child = shell("exit 0");
    let pid = pid_of(&child);
    os::wait_exited_unreaped(pid);
    lp.process("p", i64::from(pid), 0);
    lp.run_until_tag("p");
    ensure_eq!(
        "R-PROC-1",
        lp.log(),
        vec![Rec::Process("p", 0, Some((0, 0)))]
    );
    ensure_eq!("R-PROC-1", os::try_reap(pid), Err(libc::ECHILD));
    drop(child);
    lp.finish();
}

/// Checks that a pid that is not a child of this process (the parent, a
/// child reaped already) or not a pid at all fails at creation with a
/// negative status and never calls back (AA-R8).
pub fn pid_that_is_not_a_child_fails_without_callback(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_PROCESS,
        "pid_that_is_not_a_child_fails_without_callback",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let parent = std::os::unix::process::parent_id();
    let status = lp.try_process("parent", i64::from(parent), 0).err();
    ensure!(
        "R-PROC-2",
        status.is_some_and(|s| s < 0),
        "parent: {status:?}"
    );
    let mut reaped = shell("exit 0");
    let pid = pid_of(&reaped);
    reaped.wait().expect("reap");
    let status = lp.try_process("reaped", i64::from(pid), 0).err();
    ensure!(
        "R-PROC-2",
        status.is_some_and(|s| s < 0),
        "reaped child: {status:?}"
    );
    for pid in [0, -1, i64::MAX] {
        ensure_eq!(
            "R-PROC-2",
            lp.try_process("bad", pid, 0).err(),
            Some(AA_E_INVALID)
        );
    }
    ensure_eq!("R-PROC-2", lp.alive(), 0);
    lp.run_once(0);
    ensure_eq!("R-PROC-2", lp.log(), vec![]);
    lp.finish();
}

/// Checks that cancelling a watch calls it once with the reason and no exit
/// status, and that the child is left to its owner (not reaped).
pub fn cancel_of_a_process_watch_delivers_the_reason_once(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_PROCESS,
        "cancel_of_a_process_watch_delivers_the_reason_once",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let mut child = sleeper();
    let p = lp.process("p", i64::from(pid_of(&child)), 0);
    ensure_eq!("R-EV-1", lp.cancel(p, REASON), AA_OK);
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        1,
        "the cancellation callback is still to come"
    );
    child.kill().expect("kill the child");
    lp.run_until_tag("p");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-EV-1", lp.log(), vec![Rec::Process("p", REASON, None)]);
    let status = child.wait().expect("the child is still ours to reap");
    ensure!("R-EV-1", !status.success());
    lp.finish();
}

/// Checks that a disposed watch never calls back and does not reap.
pub fn dispose_of_a_process_watch_never_calls_back(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_PROCESS,
        "dispose_of_a_process_watch_never_calls_back",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let mut child = sleeper();
    let p = lp.process("p", i64::from(pid_of(&child)), 0);
    lp.dispose(p);
    ensure_eq!("R-EV-3", lp.alive(), 0);
    child.kill().expect("kill the child");
    child.wait().expect("the child is still ours to reap");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-EV-3", lp.log(), vec![]);
    lp.finish();
}
