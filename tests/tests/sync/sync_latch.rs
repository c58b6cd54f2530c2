//! D-37: user-made awaitables (`awaitable::Latch`, `awaitable::wait`).

use std::cell::Cell;
use std::io::Write;
use std::rc::Rc;

use async_std_api::awaitable::{wait, Latch};
use async_std_api::combinators::{all, any, CombineErrorKind};
use async_std_api::io::Async;
use async_std_api::{delay, run, spawn, time, ErrorKind};
use tests::support::{join_cancelled, yield_until_waiting};

#[test]
fn d37_a_latch_opens_once_and_wakes_every_waiter() {
    run(|| {
        let latch = Latch::new("config loaded");
        let woke = Rc::new(Cell::new(0));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let (l, w) = (latch.clone(), woke.clone());
                spawn(move || {
                    l.wait().unwrap();
                    w.set(w.get() + 1);
                })
            })
            .collect();
        let cs: Vec<_> = waiters.iter().map(|h| h.coroutine()).collect();
        yield_until_waiting(&cs.iter().collect::<Vec<_>>());
        assert_eq!(woke.get(), 0);
        assert!(latch.open());
        assert!(!latch.open(), "a second open changes nothing");
        assert!(!latch.fail("late"), "nor does a late failure");
        for h in waiters {
            h.join().unwrap();
        }
        assert_eq!(woke.get(), 3);
        assert!(latch.failure().is_none());
        latch.wait().unwrap(); // completed: at once
    })
    .unwrap();
}

#[test]
fn d37_a_latch_is_an_until_trigger_and_a_failed_one_is_the_cause() {
    run(|| {
        let latch = Latch::new("shutdown requested");
        let worker = spawn(|| delay(60_000).is_ok());
        let c = worker.coroutine();
        let l = latch.clone();
        spawn(move || l.fail("operator said stop"));
        let e = worker.join_until(&latch).unwrap_err();
        assert!(e.is_await_cancelled(), "{e}");
        assert!(
            e.trigger_failure()
                .unwrap()
                .to_string()
                .ends_with("operator said stop"),
            "{e}"
        );
        c.cancel();
    })
    .unwrap();
}

#[test]
fn d37_latches_are_combinator_inputs() {
    run(|| {
        let (a, b) = (Latch::new("a"), Latch::new("b"));
        let b2 = b.clone();
        spawn(move || b2.open());
        let mut first = any([a.clone(), b.clone()]);
        first.join().unwrap();
        assert!(b.is_open() && !a.is_open());
        a.fail("a broke");
        let e = all([a.clone(), b.clone()]).join().unwrap_err();
        assert_eq!(e.kind(), CombineErrorKind::Input);
    })
    .unwrap();
}

/// The design's `AwaitSocket`: readable or timed out, whichever first;
/// the link that completes it stops the other.
fn await_socket(sock: Rc<Async<std::os::unix::net::UnixStream>>, ms: u64) -> Latch {
    let ready = Latch::new("socket readable or timed out");
    let (r1, r2) = (ready.clone(), ready.clone());
    let other: Rc<std::cell::RefCell<Option<async_std_api::Coroutine>>> = Rc::default();
    let o = other.clone();
    let t = time::timeout(ms);
    let timer = spawn(move || {
        if wait(&t).is_ok() && r2.fail("timed out") {
            if let Some(reader) = o.borrow_mut().take() {
                reader.cancel();
            }
        }
    });
    let tc = timer.coroutine();
    let reader = spawn(move || {
        if sock.readable().is_ok() && r1.open() {
            tc.cancel();
        }
    });
    *other.borrow_mut() = Some(reader.coroutine());
    ready
}

#[test]
fn d37_await_socket_links_readiness_and_a_timer() {
    run(|| {
        let (peer, sock) = std::os::unix::net::UnixStream::pair().unwrap();
        let sock = Rc::new(Async::new(sock).unwrap());
        // Nothing arrives: the timer's link completes it, with its failure.
        let ready = await_socket(sock.clone(), 10);
        ready.wait().unwrap();
        assert!(ready.failure().unwrap().to_string().ends_with("timed out"));
        // Data arrives first: the readiness link completes it.
        let ready = await_socket(sock.clone(), 60_000);
        (&peer).write_all(b"!").unwrap();
        ready.wait().unwrap();
        assert!(ready.failure().is_none());
    })
    .unwrap();
}

#[test]
fn d37_a_cancelled_waiter_leaves_and_the_others_still_wake() {
    run(|| {
        let latch = Latch::new("later");
        let (l1, l2) = (latch.clone(), latch.clone());
        let gone = spawn(move || l1.wait());
        let stays = spawn(move || l2.wait().is_ok());
        yield_until_waiting(&[&gone.coroutine(), &stays.coroutine()]);
        gone.cancel();
        join_cancelled(gone);
        latch.open();
        assert!(stays.join().unwrap());
    })
    .unwrap();
}

#[test]
fn d37_a_latch_nothing_can_open_is_a_deadlock_naming_it() {
    let e = run(|| {
        let latch = Latch::new("the config that never comes");
        let _ = latch.wait();
    })
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Deadlock, "{e}");
}
