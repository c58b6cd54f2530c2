//! Cancellation and joins: the waiter's cancellation is not the awaited
//! coroutine's (P-04), and it wins over a ready outcome (D-20).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use async_std_api::{current, delay, run, spawn, suspend, Cancelled, JoinError};
use tests::support::{join_cancelled, yield_until, Recorder};

#[test]
fn d25_a_cancelled_waiter_is_interrupted_and_the_awaited_coroutine_goes_on() {
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
        let by: Rc<RefCell<Option<Cancelled>>> = Rc::default();
        let b = by.clone();
        let r2 = r.clone();
        let waiter = spawn(move || {
            let err = wc.wait().unwrap_err();
            *b.borrow_mut() = err.interrupted_by().cloned();
            r2.push(format!(
                "waiter: interrupted={} cancelled={} by_self={} requested={} worker_requested={}",
                err.is_interrupted(),
                err.is_cancelled(),
                err.interrupted_by().map(|c| c.id()) == Some(current().id()),
                current().is_cancellation_requested(),
                wc.is_cancellation_requested(),
            ));
        });
        yield_until(|| waiter.coroutine().is_suspended());
        waiter.cancel();
        // D-25: the waiter caught its cancellation and returned: it ends
        // cancelled, by the cancellation that interrupted its wait.
        let c = join_cancelled(waiter);
        assert_eq!(Some(&c), by.borrow().as_ref());
        r.push("waiter ended cancelled");
        r.push(format!("worker value {}", worker.join().unwrap()));
    })
    .unwrap();
    rec.assert_events(&[
        "waiter: interrupted=true cancelled=false by_self=true requested=true worker_requested=false",
        "waiter ended cancelled",
        "worker finished",
        "worker value 9",
    ]);
}

#[test]
fn d25_joining_a_cancelled_coroutine_says_cancelled_not_interrupted() {
    run(|| {
        let caught = Rc::new(Cell::new(false));
        let k = caught.clone();
        let victim = spawn(move || {
            let slept = delay(60_000).map(|_| "slept");
            k.set(slept.is_err());
            slept
        });
        yield_until(|| victim.coroutine().is_suspended());
        let v = victim.coroutine();
        let watcher = spawn(move || {
            let e = v.wait().unwrap_err();
            (
                e.is_cancelled(),
                e.is_interrupted(),
                e.cancelled().cloned(),
                current().is_cancellation_requested(),
            )
        });
        let id = victim.id();
        victim.cancel();
        // The victim caught its cancellation and returned a value: it still
        // ends cancelled (D-25), and so every awaiter sees it.
        let c = join_cancelled(victim);
        assert!(caught.get());
        assert_eq!(c.id(), id);
        assert_eq!(watcher.join().unwrap(), (true, false, Some(c), false));
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
fn d25_interrupted_join_text_names_both_coroutines() {
    run(|| {
        let slept: Rc<Cell<Option<bool>>> = Rc::default();
        let sl = slept.clone();
        let sleeper = spawn(move || sl.set(Some(delay(60_000).is_ok())));
        let s = sleeper.coroutine();
        let text: Rc<RefCell<Option<String>>> = Rc::default();
        let t = text.clone();
        let waiter = spawn(move || *t.borrow_mut() = Some(s.wait().unwrap_err().to_string()));
        yield_until(|| waiter.coroutine().is_suspended() && sleeper.coroutine().is_suspended());
        waiter.coroutine().cancel_with("stop");
        let (wid, sid) = (waiter.id(), sleeper.id());
        assert_eq!(join_cancelled(waiter).reason(), Some("stop"));
        assert_eq!(
            text.borrow().as_deref(),
            Some(
                format!("waiting for coroutine {sid} interrupted: coroutine {wid} cancelled: stop")
                    .as_str()
            )
        );
        sleeper.cancel();
        assert_eq!(join_cancelled(sleeper).id(), sid);
        assert_eq!(slept.get(), Some(false));
    })
    .unwrap();
}

#[test]
fn d6_d25_own_cancellation_beats_an_until_trigger_that_fires_at_the_same_moment() {
    // Both the waiter's cancellation and its trigger are settled before the
    // waiter runs again (under FIFO the trigger completes first, while the
    // waiter is queued with its cancellation); its own cancellation wins.
    run(|| {
        let slept: Rc<Cell<Option<bool>>> = Rc::default();
        let sl = slept.clone();
        let slow = spawn(move || sl.set(Some(delay(60_000).is_ok())));
        let fire = Rc::new(Cell::new(false));
        let f = fire.clone();
        let trigger = spawn(move || {
            while !f.get() {
                suspend().unwrap();
            }
        });
        let (s, t) = (slow.coroutine(), trigger.coroutine());
        let got: Rc<RefCell<Option<JoinError>>> = Rc::default();
        let g = got.clone();
        let waiter = spawn(move || *g.borrow_mut() = Some(s.wait_until(&t).unwrap_err()));
        yield_until(|| waiter.coroutine().is_suspended());
        waiter.coroutine().cancel_with("mine");
        fire.set(true);
        // D-25: the waiter caught its own cancellation and returned.
        assert_eq!(join_cancelled(waiter).reason(), Some("mine"));
        let err = got.borrow_mut().take().expect("the waiter's wait ended");
        assert!(err.is_interrupted() && !err.is_await_cancelled(), "{err}");
        assert_eq!(err.interrupted_by().and_then(|c| c.reason()), Some("mine"));
        trigger.join().unwrap();
        slow.cancel();
        // Cancelled in its delay (D-25), or, under chaos, before it started.
        join_cancelled(slow);
        assert_ne!(slept.get(), Some(true));
    })
    .unwrap();
}
