//! Waiting for a child (D-32): a cancelled wait leaves the child watched
//! and reaped, the next wait gets the status, a dropped `Child` is reaped
//! in the background, and the loop runs other coroutines meanwhile.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use async_std_api::process::{Child, Command, Stdio};
use async_std_api::{current, delay, io, run, spawn};
use tests::support::{join_cancelled, yield_until, Recorder};

use super::{is_reaped, proc_state, wait_until_reaped};

/// A `cat` that runs until its standard input closes: the test decides
/// when it exits, without timing.
fn cat() -> Child {
    Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn d32_a_cancelled_wait_leaves_the_child_watched_and_a_later_wait_gets_its_status() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let mut child = cat();
        let stdin = child.stdin.take().unwrap();
        let pid = child.id();
        let slot: Rc<RefCell<Option<Child>>> = Rc::default();
        let s = slot.clone();
        let r1 = r.clone();
        let waiter = spawn(move || {
            let err = child.wait().unwrap_err();
            let c = io::cancelled(&err).expect("the error carries the cancellation");
            r1.push(format!(
                "wait cancelled: kind={:?} own={}",
                err.kind(),
                c.id() == current().id()
            ));
            *s.borrow_mut() = Some(child);
        });
        yield_until(|| waiter.coroutine().is_suspended());
        waiter.cancel();
        join_cancelled(waiter);
        let mut child = slot.borrow_mut().take().expect("the waiter kept the child");
        assert_eq!(child.try_wait().unwrap(), None, "still running");
        r.push("stdin closed");
        drop(stdin); // cat exits
        let status = child.wait().unwrap();
        r.push(format!("wait again: success={}", status.success()));
        assert!(is_reaped(pid));
        // The status is kept: waiting again returns it at once.
        assert_eq!(child.wait().unwrap(), status);
        assert_eq!(child.try_wait().unwrap(), Some(status));
    })
    .unwrap();
    rec.assert_events(&[
        "wait cancelled: kind=Other own=true",
        "stdin closed",
        "wait again: success=true",
    ]);
}

#[test]
fn d32_a_child_that_exits_after_its_wait_was_cancelled_is_reaped_without_a_new_wait() {
    run(|| {
        let mut child = cat();
        let stdin = child.stdin.take().unwrap();
        let pid = child.id();
        let slot: Rc<RefCell<Option<Child>>> = Rc::default();
        let s = slot.clone();
        let waiter = spawn(move || {
            let _ = child.wait();
            *s.borrow_mut() = Some(child);
        });
        yield_until(|| waiter.coroutine().is_suspended());
        waiter.cancel();
        join_cancelled(waiter);
        let mut child = slot.borrow_mut().take().unwrap();
        drop(stdin);
        // Nobody waits, yet the child does not stay a zombie.
        wait_until_reaped(pid);
        assert_eq!(child.wait().unwrap().code(), Some(0));
    })
    .unwrap();
}

#[test]
fn d32_a_dropped_child_is_reaped_in_the_background_once_it_exits() {
    run(|| {
        let mut child = cat();
        let stdin = child.stdin.take().unwrap();
        let pid = child.id();
        drop(child); // not killed (std's rule): it keeps running
        assert!(!is_reaped(pid));
        assert!(
            matches!(proc_state(pid), Some(s) if s != 'Z'),
            "running, not a zombie: {:?}",
            proc_state(pid)
        );
        drop(stdin); // now it exits
        wait_until_reaped(pid);

        // One that has already exited when dropped is reaped at once.
        let quick = Command::new("true").spawn().unwrap();
        let pid = quick.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while proc_state(pid) != Some('Z') {
            // Exited, but its watch cannot report while the loop does not
            // run: poll the state without suspending, so the drop finds a
            // zombie.
            assert!(std::time::Instant::now() < deadline, "`true` did not exit");
            std::thread::yield_now();
        }
        drop(quick);
        assert!(is_reaped(pid));
    })
    .unwrap();
}

#[test]
fn d32_other_coroutines_run_while_a_coroutine_waits_for_a_child() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let mut child = cat();
        let stdin = child.stdin.take().unwrap();
        let ticks = Rc::new(Cell::new(0));
        let r1 = r.clone();
        let waiter = spawn(move || {
            let status = child.wait().unwrap();
            r1.push(format!("child exited: {}", status.success()));
        });
        let co = waiter.coroutine();
        let t = ticks.clone();
        let r2 = r.clone();
        let ticker = spawn(move || {
            for _ in 0..5 {
                delay(1).unwrap();
                assert!(co.is_suspended(), "the waiter waits while the ticker runs");
                t.set(t.get() + 1);
            }
            r2.push(format!("ticked {}", t.get()));
            drop(stdin);
        });
        ticker.join().unwrap();
        waiter.join().unwrap();
    })
    .unwrap();
    rec.assert_events(&["ticked 5", "child exited: true"]);
}

#[test]
fn d32_a_pending_cancellation_is_delivered_by_wait_before_it_waits_and_only_once() {
    run(|| {
        let mut child = cat();
        drop(child.stdin.take());
        current().cancel();
        let err = child.wait().unwrap_err();
        assert!(io::cancelled(&err).is_some());
        // Delivered once: the next wait gets the status.
        assert!(child.wait().unwrap().success());
    })
    .unwrap();
}

#[test]
fn d32_an_exit_reported_before_the_cancellation_is_seen_is_returned() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let mut child = cat();
        let stdin = child.stdin.take().unwrap();
        let pid = child.id();
        let r1 = r.clone();
        let waiter = spawn(move || {
            let status = child.wait();
            r1.push(format!("wait returned the status: {}", status.is_ok()));
            // A cancellation that came with the exit is still pending.
            if delay(0).is_err() {
                r1.push("cancellation delivered at the next suspension point");
            }
        });
        yield_until(|| waiter.coroutine().is_suspended());
        drop(stdin);
        // The reactor reaps and reports in one step: once the child is
        // reaped, the waiter has been woken with the exit.
        yield_until(|| is_reaped(pid));
        let cancelled = !waiter.is_finished();
        if cancelled {
            waiter.cancel();
        }
        let _ = waiter.join();
        let mut expected = vec!["wait returned the status: true"];
        if cancelled {
            expected.push("cancellation delivered at the next suspension point");
        }
        r.assert_events(&expected);
    })
    .unwrap();
    assert_eq!(rec.events()[0], "wait returned the status: true");
}

#[test]
fn wait_closes_the_childs_stdin_first() {
    run(|| {
        let mut child = cat();
        assert!(child.stdin.is_some());
        // Without closing stdin, cat would wait for input forever.
        assert!(child.wait().unwrap().success());
        assert!(child.stdin.is_none());
    })
    .unwrap();
}

#[test]
fn d32_a_wait_keeps_the_loop_alive_and_an_unwaited_child_does_not() {
    // The main coroutine waits for the child and nothing else runs: the
    // watch keeps the loop alive, so this is not reported as a deadlock.
    run(|| {
        let status = Command::new("sh").args(["-c", "exit 5"]).status().unwrap();
        assert_eq!(status.code(), Some(5));
    })
    .unwrap();
    // A child nobody waits for does not keep `run` from returning.
    let pid = run(|| {
        let mut child = cat();
        let stdin = child.stdin.take().unwrap();
        let pid = child.id();
        std::mem::forget(stdin); // keep cat running past the runtime
        drop(child);
        pid
    })
    .unwrap();
    assert!(!is_reaped(pid));
    // It outlived the runtime; the orphan reaper still reaps it.
    // SAFETY: `kill` takes two integers; `pid` is our unreaped child.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) }, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !is_reaped(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "not reaped after the runtime ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
