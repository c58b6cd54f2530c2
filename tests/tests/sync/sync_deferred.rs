//! `Deferred` and `Future` (DF1-DF3 in `sync::deferred`).

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::combinators::all;
use async_std_api::sync::{Deferred, DeferredErrorKind, Future};
use async_std_api::{check_cancelled, run, spawn, Failure};
use tests::support::{join_cancelled, yield_until_waiting};

#[test]
fn df1_a_deferred_settles_once_and_a_second_resolution_gives_the_value_back() {
    run(|| {
        let (d, r) = Deferred::new();
        let r2 = r.clone();
        spawn(move || r.resolve(1).unwrap());
        assert_eq!(d.wait().unwrap(), 1);
        let e = r2.resolve(2).unwrap_err();
        assert!(!e.is_gone());
        assert_eq!(e.value, 2);
        assert_eq!(d.wait().unwrap_err().kind(), DeferredErrorKind::Taken);
    })
    .unwrap();
}

#[test]
fn df1_a_rejection_is_the_waiters_failure_and_dropped_resolvers_abandon() {
    run(|| {
        let (d, r) = Deferred::<u8>::new();
        r.reject("no such user").unwrap();
        let e = d.wait().unwrap_err();
        assert_eq!(e.kind(), DeferredErrorKind::Rejected);
        assert_eq!(e.to_string(), "rejected: a promise failed: no such user");

        let (d, r) = Deferred::<u8>::new();
        let waiter = spawn(move || d.wait().map_err(|e| e.kind()));
        yield_until_waiting(&[&waiter.coroutine()]);
        drop(r); // nobody can resolve it now: the waiter is not left hanging
        assert_eq!(waiter.join().unwrap(), Err(DeferredErrorKind::Abandoned));
    })
    .unwrap();
}

#[test]
fn df2_a_cancelled_wait_leaves_the_value_for_a_later_wait() {
    run(|| {
        let (deferred, resolver) = Deferred::new();
        let deferred = Rc::new(deferred);
        let d1 = deferred.clone();
        let waiter = spawn(move || d1.wait().map(|_: u8| ()));
        yield_until_waiting(&[&waiter.coroutine()]);
        waiter.cancel();
        let _ = join_cancelled(waiter);
        resolver.resolve(9).unwrap();
        assert_eq!(deferred.wait().unwrap(), 9);
    })
    .unwrap();
}

#[test]
fn d29_df2_a_wait_settled_in_the_same_tick_as_its_cancellation_completes_and_the_cancellation_waits(
) {
    run(|| {
        let seen = Rc::new(RefCell::new(Vec::new()));
        // A deferred: its value is taken by this wait, not left behind for
        // a later one that may never come (the resolver was told `Ok`).
        let (deferred, resolver) = Deferred::new();
        let log = seen.clone();
        let waiter = spawn(move || {
            let got = deferred.wait().map_err(|e| e.kind());
            log.borrow_mut().push(format!("deferred {got:?}"));
            let pending = check_cancelled().map_err(|c| c.cause());
            log.borrow_mut().push(format!("then {pending:?}"));
        });
        yield_until_waiting(&[&waiter.coroutine()]);
        resolver.resolve(5u8).unwrap(); // handed over first...
        waiter.cancel(); // ...then cancelled, in the same tick, before it resumed
        let _ = join_cancelled(waiter); // it returned after its cancellation (D-25)

        // A future: the same.
        let (future, promise) = Future::new();
        let log = seen.clone();
        let waiter = spawn(move || {
            let got = future.wait().map(|v| *v).map_err(|e| e.kind());
            log.borrow_mut().push(format!("future {got:?}"));
            let pending = check_cancelled().map_err(|c| c.cause());
            log.borrow_mut().push(format!("then {pending:?}"));
        });
        yield_until_waiting(&[&waiter.coroutine()]);
        promise.resolve(6u8).unwrap();
        waiter.cancel();
        let _ = join_cancelled(waiter);

        assert_eq!(
            *seen.borrow(),
            [
                "deferred Ok(5)",
                "then Err(Explicit)",
                "future Ok(6)",
                "then Err(Explicit)"
            ]
        );
    })
    .unwrap();
}

#[test]
fn df2_resolving_after_the_deferred_is_gone_gives_the_value_back() {
    run(|| {
        let (d, r) = Deferred::new();
        drop(d);
        let e = r.resolve(String::from("lost?")).unwrap_err();
        assert!(e.is_gone());
        assert_eq!(e.value, "lost?");
    })
    .unwrap();
}

#[test]
fn df3_every_awaiter_of_a_future_gets_the_same_value_or_the_same_failure() {
    run(|| {
        let (f, p) = Future::new();
        let awaiters: Vec<_> = (0..3)
            .map(|_| {
                let f = f.clone();
                spawn(move || f.wait().map_err(|e| e.failure().cloned()))
            })
            .collect();
        p.resolve(String::from("shared")).unwrap();
        let got: Vec<_> = awaiters
            .into_iter()
            .map(|a| a.join().unwrap().unwrap())
            .collect();
        assert!(Rc::ptr_eq(&got[0], &got[1]) && Rc::ptr_eq(&got[1], &got[2]));

        let (f, p) = Future::<u8>::new();
        let (f1, f2) = (f.clone(), f.clone());
        let a = spawn(move || f1.wait().unwrap_err().failure().cloned().unwrap());
        let b = spawn(move || f2.wait().unwrap_err().failure().cloned().unwrap());
        p.reject("boom").unwrap();
        assert!(Failure::ptr_eq(&a.join().unwrap(), &b.join().unwrap()));
    })
    .unwrap();
}

#[test]
fn deferreds_are_until_triggers_and_combinator_inputs() {
    run(|| {
        let (stop, stopper) = Deferred::<()>::new();
        let slow = spawn(|| async_std_api::delay(60_000));
        let c = slow.coroutine();
        spawn(move || stopper.resolve(()).unwrap());
        let e = slow.join_until(&stop).unwrap_err();
        assert!(e.is_await_cancelled());
        c.cancel();

        let (d1, r1) = Deferred::new();
        let (d2, r2) = Deferred::new();
        spawn(move || {
            r2.resolve("second").unwrap();
            r1.resolve("first").unwrap();
        });
        assert_eq!(all([d1, d2]).join().unwrap(), ["first", "second"]);
    })
    .unwrap();
}
