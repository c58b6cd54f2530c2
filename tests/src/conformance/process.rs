//! Tier: child processes (`AA_CAP_PROCESS`). A watch calls back once when
//! its child exits, with `code` and `signal` (a child a signal killed: code
//! -1), and reaps it; a pid that is not a child of this process fails at
//! creation; cancel delivers the reason once and leaves the child alone;
//! dispose never calls back.

use std::process::{Child, Command, Stdio};

use crate::{ensure, ensure_eq, setup_failed};
use async_abi::*;

use super::harness::{Alive, Loop, Rec};
use super::os;
use super::plugin::Reactor;
use super::rules;

const REASON: AaStatus = -4444;

/// `/bin/sh -c <script>`.
#[track_caller]
fn shell(script: &str) -> Child {
    Command::new("/bin/sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| setup_failed!("spawn /bin/sh -c {script:?}: {e}"))
}

/// A child that runs until it is killed (`cat` reading a pipe nobody
/// writes).
#[track_caller]
fn sleeper() -> Child {
    Command::new("/bin/cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| setup_failed!("spawn /bin/cat: {e}"))
}

/// What a `process_new` the case expected to fail gave.
fn created(status: Option<AaStatus>) -> String {
    status.map_or("AA_OK (a watch was created)".to_owned(), rules::status)
}

/// Checks R-PROC-1's "reaped": after the watch reported child `pid`, the
/// kit's own `waitpid` finds no such child.
#[track_caller]
fn reaped(pid: i32, did: &str) {
    let got = os::try_reap(pid);
    ensure!("R-PROC-1", got == Err(libc::ECHILD);
    did: format!("{did}, then the kit's waitpid({pid}, WNOHANG)"),
    wants: "-ECHILD (the watch reaped its child)",
    got: match got {
        Err(e) => format!("-{}", rules::errno_name(e)),
        Ok(true) => "the child still there: the kit reaped it".to_owned(),
        Ok(false) => "the child still running".to_owned(),
    });
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
    let did = "process_new(a child running `sh -c 'exit 3'`, flags 0)";
    ensure_eq!(
        "R-PROC-1",
        lp.alive(),
        Alive(1),
        "{did}: alive() (a pending watch counts)"
    );
    let did = format!("{did}, run_once until a callback, run_once(0) twice");
    lp.run_until_tag("p");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-PROC-1",
        lp.log(),
        vec![Rec::Process("p", 0, Some((3, 0)))],
        "{did}: the callbacks (status, (code, signal))"
    );
    ensure_eq!("R-PROC-1", lp.alive(), Alive(0), "{did}: alive()");
    reaped(pid, &did);
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
    let did = "process_new(a running child `cat`, flags 0), run_once(0)";
    ensure_eq!(
        "R-PROC-1",
        lp.log(),
        vec![],
        "{did} (the child still running): the callbacks"
    );
    os::kill(pid, libc::SIGKILL);
    lp.run_until_tag("p");
    lp.run_once(0);
    let did = format!("{did}, kill(SIGKILL), run_once until a callback, run_once(0)");
    ensure_eq!(
        "R-PROC-1",
        lp.log(),
        vec![Rec::Process("p", 0, Some((-1, libc::SIGKILL)))],
        "{did}: the callbacks (status, (code, signal))"
    );
    reaped(pid, &did);
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
    let did = "a child `sh -c 'exit 0'` that exited (not reaped), then process_new(it, flags \
               0), run_once until a callback";
    ensure_eq!(
        "R-PROC-1",
        lp.log(),
        vec![Rec::Process("p", 0, Some((0, 0)))],
        "{did}: the callbacks (status, (code, signal))"
    );
    reaped(pid, did);
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
    ensure!("R-PROC-2", status.is_some_and(|s| s < 0);
        did: format!("process_new(pid {parent}, the kit's parent, not its child, flags 0)"),
        wants: "a negative status",
        got: created(status));
    let mut child = shell("exit 0");
    let pid = pid_of(&child);
    if let Err(e) = child.wait() {
        setup_failed!("waitpid of the kit's child {pid}: {e}");
    }
    let status = lp.try_process("reaped", i64::from(pid), 0).err();
    ensure!("R-PROC-2", status.is_some_and(|s| s < 0);
        did: format!("process_new(pid {pid}, a child the kit already reaped, flags 0)"),
        wants: "a negative status",
        got: created(status));
    for pid in [0, -1, i64::MAX] {
        let status = lp.try_process("bad", pid, 0).err();
        ensure!("R-PROC-2", status == Some(AA_E_INVALID);
            did: format!("process_new(pid {pid}, flags 0)"),
            wants: "AA_E_INVALID (-10002)",
            got: created(status));
    }
    let did = "the refused process_new calls";
    ensure_eq!("R-PROC-2", lp.alive(), Alive(0), "{did}: alive()");
    lp.run_once(0);
    ensure_eq!(
        "R-PROC-2",
        lp.log(),
        vec![],
        "{did}, run_once(0): the callbacks"
    );
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
    let did = "process_new(a running child `cat`, flags 0), cancel(the watch, reason -4444)";
    ensure_eq!("R-EV-1", lp.cancel(p, REASON), AA_OK, "{did}: its status");
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(1),
        "{did}: alive() (the reason's callback is still to come)"
    );
    if let Err(e) = child.kill() {
        setup_failed!("kill of the kit's child: {e}");
    }
    lp.run_until_tag("p");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![Rec::Process("p", REASON, None)],
        "{did}, the child killed, run_once until a callback, run_once(0) twice: the callbacks \
         (the exit status NULL with a reason)"
    );
    let status = child.wait();
    ensure!("R-EV-1", status.as_ref().is_ok_and(|s| !s.success());
        did: format!("{did}, the child killed, the reason delivered, then the kit's waitpid"),
        wants: "the killed child left for the kit to reap (a cancelled watch reaps nothing)",
        got: format!("waitpid gave {status:?}"));
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
    let did = "process_new(a running child `cat`, flags 0), dispose(the watch)";
    ensure_eq!("R-EV-3", lp.alive(), Alive(0), "{did}: alive()");
    if let Err(e) = child.kill() {
        setup_failed!("kill of the kit's child: {e}");
    }
    let status = child.wait();
    ensure!("R-EV-3", status.is_ok();
        did: format!("{did}, the child killed, then the kit's waitpid"),
        wants: "the child left for the kit to reap (a disposed watch reaps nothing)",
        got: format!("waitpid gave {status:?}"));
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-EV-3",
        lp.log(),
        vec![],
        "{did}, the child killed and reaped, run_once(0) twice: the callbacks"
    );
    lp.finish();
}
