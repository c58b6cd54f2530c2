//! Failures (R-CO5, D-3, D-4, D-13, D-17, D-19, D-22, P-01, P-12, P-14,
//! P-15): one shared object, one shape, spawn_try's errors, and the line
//! between a failure and a cancellation.

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{
    current, delay, run, spawn, spawn_in, spawn_try, suspend, timeout, CancelCause, Cancelled,
    Failure, FailureKind, FailureOrigin, JoinError, Scope,
};
use tests::support::{capture_logs, join_cancelled, yield_until, yield_until_waiting};

#[test]
fn r_co5_d13_p14_every_awaiter_receives_the_identical_failure() {
    run(|| {
        // It fails once all three wait for it (in any scheduling order).
        let waiting = Rc::new(std::cell::Cell::new(0));
        let w = waiting.clone();
        let bad = spawn(move || {
            yield_until(|| w.get() == 3);
            panic!("shared")
        })
        .coroutine();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let b = bad.clone();
                let w = waiting.clone();
                spawn(move || {
                    w.set(w.get() + 1);
                    b.wait().unwrap_err()
                })
            })
            .collect();
        let errs: Vec<JoinError> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        let first = errs[0].failure().expect("a failure");
        for e in &errs {
            assert!(Failure::ptr_eq(first, e.failure().unwrap()));
            assert!(JoinError::same_failure(&errs[0], e));
        }
        // A later await gets the same object too (R-CO7: same outcome).
        let late = bad.wait().unwrap_err();
        assert!(Failure::ptr_eq(first, late.failure().unwrap()));
        assert_eq!(first.kind(), FailureKind::Panic);
        assert_eq!(first.origin(), FailureOrigin::Coroutine(bad.id()));
        assert_eq!(first.coroutine(), Some(bad.id()));
        assert_eq!(
            first.to_string(),
            format!("coroutine {} panicked: shared", bad.id())
        );
        // P-12: a single failure has the same shape (nothing attached).
        assert!(first.attached().is_empty());
    })
    .unwrap();
}

#[derive(Debug)]
struct Broken(&'static str);

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "broken: {}", self.0)
    }
}

impl std::error::Error for Broken {}

#[test]
fn spawn_try_an_err_is_the_coroutines_failure_with_the_original_error() {
    run(|| {
        let h = spawn_try(|| -> Result<u32, Broken> { Err(Broken("disk")) });
        let id = h.id();
        let err = h.join().unwrap_err();
        assert!(err.is_failed() && !err.is_panic() && !err.is_cancelled());
        let f = err.failure().unwrap();
        assert_eq!(f.kind(), FailureKind::Error);
        assert_eq!(f.downcast_ref::<Broken>().map(|b| b.0), Some("disk"));
        assert_eq!(
            f.to_string(),
            format!("coroutine {id} failed: broken: disk")
        );
        assert_eq!(
            err.to_string(),
            format!("coroutine {id} failed: broken: disk")
        );
        assert!(err.try_into_panic().is_err());
        // Ok is a plain value.
        assert_eq!(spawn_try(|| Ok::<_, Broken>(7)).join().unwrap(), 7);
    })
    .unwrap();
}

#[test]
fn r_c1_p01_own_cancellation_through_question_mark_ends_cancelled_not_failed() {
    let ((), logs) = capture_logs(|| {
        run(|| {
            // `?` on a Cancelled, on an io::Error carrying one, and on an
            // interrupted join: all end the coroutine cancelled.
            let direct = spawn_try(|| -> Result<(), Cancelled> {
                delay(60_000)?;
                Ok(())
            });
            let io = spawn_try(|| -> std::io::Result<()> {
                delay(60_000).map_err(std::io::Error::from)?;
                Ok(())
            });
            let other = spawn(|| delay(60_000));
            let joined = {
                let other = other.coroutine();
                spawn_try(
                    move || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
                        other.wait()?;
                        Ok(())
                    },
                )
            };
            yield_until_waiting(&[
                &direct.coroutine(),
                &io.coroutine(),
                &other.coroutine(),
                &joined.coroutine(),
            ]);
            direct.cancel();
            io.cancel();
            joined.cancel();
            for h in [direct, io, joined] {
                let id = h.id();
                let err = h.join().unwrap_err();
                assert!(err.is_cancelled(), "{err}");
                assert!(!err.is_failed());
                assert_eq!(err.cancelled().unwrap().id(), id);
                assert_eq!(err.cancelled().unwrap().cause(), CancelCause::Explicit);
            }
            other.cancel();
            let _ = other.join();
        })
        .unwrap();
    });
    // Suppressed: nothing reported (R-C1).
    logs.assert_count("unhandled", 0);
}

#[test]
fn d6_d19_p03_an_uncaught_await_cancelled_is_an_ordinary_failure() {
    run(|| {
        let slow = spawn(|| delay(60_000));
        let slow_c = slow.coroutine();
        let waiter = spawn_try(move || -> Result<(), JoinError> {
            let _ = slow.join_until(&timeout(1))?;
            Ok(())
        });
        let err = waiter.join().unwrap_err();
        assert!(err.is_failed(), "an AwaitCancelled is not a cancellation");
        let inner = err.failure().unwrap().downcast_ref::<JoinError>().unwrap();
        assert!(inner.is_await_cancelled());
        assert!(!slow_c.is_finished(), "R-AU3: the awaited one goes on");
        slow_c.cancel();
        let _ = slow_c.wait();
    })
    .unwrap();
}

#[test]
fn d22_c8_a_failure_while_cancelling_replaces_the_cancellation() {
    run(|| {
        let h = spawn(|| {
            if delay(60_000).is_err() {
                panic!("rollback failed");
            }
        });
        yield_until_waiting(&[&h.coroutine()]);
        h.cancel();
        let c = h.coroutine();
        let err = h.join().unwrap_err();
        assert!(err.is_failed() && !err.is_cancelled());
        assert_eq!(err.panic_message(), Some("rollback failed"));
        // Its end state is failed, as the join says: requested, not
        // cancelled.
        assert!(c.is_cancellation_requested() && !c.is_cancelled());
    })
    .unwrap();
}

#[test]
fn d3_p15_an_awaited_failure_is_consumed_by_its_awaiters() {
    let ((), logs) = capture_logs(|| {
        run(|| {
            let scope = Scope::new();
            let seen = Rc::new(RefCell::new(0));
            let s = seen.clone();
            scope
                .set_exception_handler(move |_, _, _| {
                    *s.borrow_mut() += 1;
                    Ok(())
                })
                .unwrap();
            let h = spawn_in(&scope, || panic!("awaited")).unwrap();
            // main is registered as an awaiter before it finishes.
            assert!(h.join().unwrap_err().is_panic());
            assert_eq!(*seen.borrow(), 0, "consumed: the scope never saw it");
            assert!(!scope.is_cancelled());
        })
        .unwrap();
    });
    logs.assert_count("unhandled", 0);
}

#[test]
fn d3_a_late_join_of_a_reported_failure_gets_the_same_object() {
    run(|| {
        let scope = Scope::new();
        let reported: Rc<RefCell<Option<Failure>>> = Rc::default();
        let r = reported.clone();
        scope
            .set_exception_handler(move |_, _, f| {
                *r.borrow_mut() = Some(f.clone());
                Ok(())
            })
            .unwrap();
        let h = spawn_in(&scope, || panic!("unawaited")).unwrap();
        scope.await_completion(&timeout(5_000)).unwrap();
        // Nobody awaited it when it finished: the scope's handler got it...
        let f = reported.borrow().clone().expect("reported to the scope");
        // ...and a later join still returns the stored, identical failure.
        let err = h.join().unwrap_err();
        assert!(Failure::ptr_eq(&f, err.failure().unwrap()));
    })
    .unwrap();
}

#[test]
fn d17_whether_a_failure_was_awaited_is_decided_when_it_finishes() {
    run(|| {
        let scope = Scope::new();
        let reported = Rc::new(RefCell::new(Vec::new()));
        let r = reported.clone();
        scope
            .set_exception_handler(move |_, _, f| {
                r.borrow_mut().push(f.panic_message().unwrap().to_owned());
                Ok(())
            })
            .unwrap();
        let h = spawn_in(&scope, || {
            delay(30).unwrap();
            panic!("late")
        })
        .unwrap();
        // A waiter that gave up before the failure is not an awaiter any
        // more (no sticky observation): the failure goes to the scope.
        assert!(h.wait_until(&timeout(1)).unwrap_err().is_await_cancelled());
        scope.await_completion(&timeout(5_000)).unwrap();
        assert_eq!(*reported.borrow(), ["late"]);
    })
    .unwrap();
}

#[test]
fn p12_d4_one_shape_primary_plus_attached_whatever_the_count() {
    run(|| {
        let scope = Scope::new();
        // The siblings first wait in `delay` (whatever the scheduling
        // order), then the first failure comes: no handler, so the scope is
        // cancelled (D-4), and a sibling's later failure is attached to it.
        let waiting = Rc::new(std::cell::Cell::new(0));
        let w = waiting.clone();
        let first = spawn_in(&scope, move || {
            while w.get() < 2 {
                suspend().unwrap();
            }
            panic!("first")
        })
        .unwrap()
        .coroutine();
        let w = waiting.clone();
        let second = spawn_in(&scope, move || {
            w.set(w.get() + 1);
            let _ = delay(60_000); // cancelled by the first failure
            panic!("second, during cleanup");
        })
        .unwrap();
        let w = waiting.clone();
        let quiet = spawn_in(&scope, move || {
            w.set(w.get() + 1);
            delay(60_000)
        })
        .unwrap();
        let err = scope.await_completion(&timeout(5_000)).unwrap_err();
        let f = err.failure().unwrap().clone();
        assert_eq!(f.panic_message(), Some("first"));
        // Wait for the cleanup (a responsibility point again: a later
        // failure is handed to it if it waits by then, and attached to the
        // first either way).
        let later: RefCell<Vec<Failure>> = RefCell::default();
        let keep = |x: Failure| later.borrow_mut().push(x);
        scope
            .await_after_cancellation(Some(&keep), Some(&timeout(5_000)))
            .unwrap();
        let second_id = second.id();
        let c = join_cancelled(quiet);
        // The sibling's cancellation is filtered out (not attached) and
        // carries the failure as its cause (D-14).
        assert_eq!(c.cause(), CancelCause::Failure);
        assert!(Failure::ptr_eq(c.failure().unwrap(), &f));
        let attached = f.attached();
        assert_eq!(attached.len(), 1);
        assert_eq!(attached[0].panic_message(), Some("second, during cleanup"));
        assert_eq!(attached[0].coroutine(), Some(second_id));
        // Handed to the point only if it was already waiting then.
        assert!(later
            .borrow()
            .iter()
            .all(|l| Failure::ptr_eq(l, &attached[0])));
        assert_eq!(
            f.to_string(),
            format!(
                "coroutine {} panicked: first (and 1 more failure)",
                first.id()
            )
        );
        scope.dispose();
    })
    .unwrap();
}

#[test]
fn p04_a_cancellation_received_through_join_names_the_awaited_coroutine() {
    run(|| {
        let h = spawn(|| delay(60_000).map(|_| 1));
        yield_until_waiting(&[&h.coroutine()]);
        let id = h.id();
        h.cancel();
        let c = join_cancelled(h);
        assert_eq!(c.id(), id);
        assert!(!current().is_cancellation_requested());
    })
    .unwrap();
}
