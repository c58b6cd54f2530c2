//! Cancellation and joins: the waiter's cancellation is not the awaited
//! coroutine's (P-04), and it wins over a ready outcome (D-20).

use std::cell::Cell;
use std::rc::Rc;

use async_std_api::{current, delay, run, spawn, suspend};
use tests::support::{yield_until, Recorder};

#[test]
fn a_cancelled_waiter_is_interrupted_and_the_awaited_coroutine_goes_on() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let worker = spawn(move || {
            delay(30).unwrap();
            r1.push("worker finished");
            9
        });
        let wc = worker.coroutine();
        let waiter = spawn(move || {
            let err = wc.wait().unwrap_err();
            (
                err.is_interrupted(),
                err.is_cancelled(),
                err.interrupted_by().map(|c| c.id()),
                current().id(),
                current().is_cancellation_requested(),
                wc.is_cancellation_requested(),
            )
        });
        yield_until(|| waiter.coroutine().is_suspended());
        waiter.cancel();
        let (interrupted, cancelled, by, me, requested, worker_requested) =
            waiter.join().unwrap();
        r.push(format!(
            "waiter: interrupted={interrupted} cancelled={cancelled} by_self={} requested={requested} worker_requested={worker_requested}",
            by == Some(me)
        ));
        r.push(format!("worker value {}", worker.join().unwrap()));
    })
    .unwrap();
    rec.assert_events(&[
        "waiter: interrupted=true cancelled=false by_self=true requested=true worker_requested=false",
        "worker finished",
        "worker value 9",
    ]);
}

#[test]
fn joining_a_cancelled_coroutine_says_cancelled_not_interrupted() {
    run(|| {
        let victim = spawn(|| delay(60_000).map(|_| "slept"));
        yield_until(|| victim.coroutine().is_suspended());
        let v = victim.coroutine();
        let watcher = spawn(move || {
            let r = v.wait();
            (r.is_ok(), current().is_cancellation_requested())
        });
        victim.cancel();
        // The victim caught its cancellation and returned a value.
        assert!(victim.join().unwrap().is_err());
        assert_eq!(watcher.join().unwrap(), (true, false));
    })
    .unwrap();
}

#[test]
fn d20_the_waiters_own_cancellation_wins_over_a_ready_outcome() {
    run(|| {
        let done = spawn(|| 1);
        yield_until(|| done.is_finished());
        assert!(done.is_finished());
        current().cancel();
        let err = done.coroutine().wait().unwrap_err();
        assert!(err.is_interrupted());
        // Delivered once: the next join succeeds.
        assert_eq!(done.join().unwrap(), 1);
    })
    .unwrap();
}

#[test]
fn interrupted_join_text_names_both_coroutines() {
    run(|| {
        let sleeper = spawn(|| delay(60_000).is_ok());
        let s = sleeper.coroutine();
        let waiter = spawn(move || s.wait().unwrap_err().to_string());
        yield_until(|| waiter.coroutine().is_suspended() && sleeper.coroutine().is_suspended());
        waiter.coroutine().cancel_with("stop");
        let (wid, sid) = (waiter.id(), sleeper.id());
        let text = waiter.join().unwrap();
        assert_eq!(
            text,
            format!("waiting for coroutine {sid} interrupted: coroutine {wid} cancelled: stop")
        );
        sleeper.cancel();
        assert!(!sleeper.join().unwrap());
    })
    .unwrap();
}

#[test]
fn d6_own_cancellation_beats_an_until_trigger_that_fires_at_the_same_moment() {
    // Both the waiter's cancellation and its trigger are settled before the
    // waiter runs again (under FIFO the trigger completes first, while the
    // waiter is queued with its cancellation); its own cancellation wins.
    run(|| {
        let slow = spawn(|| delay(60_000).is_ok());
        let fire = Rc::new(Cell::new(false));
        let f = fire.clone();
        let trigger = spawn(move || {
            while !f.get() {
                suspend().unwrap();
            }
        });
        let (s, t) = (slow.coroutine(), trigger.coroutine());
        let waiter = spawn(move || s.wait_until(&t).unwrap_err());
        yield_until(|| waiter.coroutine().is_suspended());
        waiter.coroutine().cancel_with("mine");
        fire.set(true);
        let err = waiter.join().unwrap();
        assert!(err.is_interrupted() && !err.is_await_cancelled(), "{err}");
        assert_eq!(err.interrupted_by().and_then(|c| c.reason()), Some("mine"));
        trigger.join().unwrap();
        slow.cancel();
        // Under chaos it may not have started: then it ends cancelled unstarted.
        assert!(slow
            .join()
            .map_or_else(|e| e.is_cancelled(), |slept| !slept));
    })
    .unwrap();
}
