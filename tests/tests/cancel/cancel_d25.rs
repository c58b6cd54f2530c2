//! D-25 (RFC v1.7 keeps the cancelled state): a coroutine that caught its
//! delivered cancellation and then returned normally ends *cancelled*, not
//! with its value: the join gives its own `Cancelled`, the value is
//! dropped (before anyone waiting for it resumes). A real failure after the
//! cancellation still wins (D-22); the main coroutine keeps its value for
//! `run`; a cancellation never delivered ends it cancelled too (D-11).

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{
    current, delay, run, spawn, spawn_in, spawn_try, suspend, CancelCause, Cancelled, ErrorKind,
    Scope,
};
use tests::support::{join_cancelled, yield_until_waiting, Recorder};

/// A returned value that records its drop.
struct Value(Recorder, &'static str);

impl Drop for Value {
    fn drop(&mut self) {
        self.0.push(format!("{} dropped", self.1));
    }
}

/// A returned value whose drop panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the value's drop failed");
    }
}

/// An error that is not a cancellation (no `source()` leads to one).
#[derive(Debug)]
struct CleanupFailed;

impl std::fmt::Display for CleanupFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cleanup failed")
    }
}

impl std::error::Error for CleanupFailed {}

#[test]
fn d25_a_caught_cancellation_then_a_return_ends_cancelled_and_drops_the_value() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let caught: Rc<RefCell<Option<Cancelled>>> = Rc::default();
        let k = caught.clone();
        let r1 = r.clone();
        let h = spawn(move || {
            let c = delay(60_000).unwrap_err();
            r1.push(format!("caught: {}", c.reason().unwrap_or("")));
            *k.borrow_mut() = Some(c);
            Value(r1.clone(), "the value")
        });
        let co = h.coroutine();
        yield_until_waiting(&[&co]);
        co.cancel_with("stop");
        // The joiner waits before the coroutine resumes (nothing yields in
        // between): it resumes after the value was dropped.
        let c = join_cancelled(h);
        r.push("joiner resumed");
        // The very cancellation it caught: id, cause, reason (and scope).
        assert_eq!(Some(&c), caught.borrow().as_ref());
        assert_eq!(c.id(), co.id());
        assert_eq!(c.cause(), CancelCause::Explicit);
        assert_eq!(c.reason(), Some("stop"));
        assert_eq!(
            c.to_string(),
            format!("coroutine {} cancelled: stop", co.id())
        );
        // The RFC's Cancelled end state, the request kept (D-1).
        assert!(co.is_finished() && co.is_cancelled() && co.is_cancellation_requested());
        // Every later await sees the same end.
        let again = co.wait().unwrap_err();
        assert!(again.is_cancelled() && !again.is_interrupted());
        assert_eq!(again.cancelled(), Some(&c));
    })
    .unwrap();
    // Dropped exactly once, and before the joiner resumed.
    rec.assert_events(&["caught: stop", "the value dropped", "joiner resumed"]);
}

#[test]
fn d25_the_join_carries_the_caught_cancellation_whatever_its_cause() {
    run(|| {
        let scope = Scope::new();
        let caught: Rc<RefCell<Option<Cancelled>>> = Rc::default();
        let k = caught.clone();
        let h = spawn_in(&scope, move || {
            let c = delay(60_000).unwrap_err();
            *k.borrow_mut() = Some(c);
            "caught"
        })
        .unwrap();
        yield_until_waiting(&[&h.coroutine()]);
        scope.cancel_with("closing");
        let id = h.id();
        let c = join_cancelled(h);
        assert_eq!(Some(&c), caught.borrow().as_ref());
        assert_eq!(c.id(), id);
        assert_eq!(c.cause(), CancelCause::Scope);
        assert_eq!(c.scope(), Some(scope.id()));
        assert_eq!(c.reason(), Some("closing"));
    })
    .unwrap();
}

#[test]
fn d25_a_spawn_try_body_that_catches_and_returns_ok_ends_cancelled() {
    run(|| {
        let h = spawn_try(|| -> Result<&str, CleanupFailed> {
            match delay(60_000) {
                Ok(()) => Ok("slept"),
                Err(_) => Ok("caught"),
            }
        });
        yield_until_waiting(&[&h.coroutine()]);
        h.coroutine().cancel_with("stop");
        assert_eq!(join_cancelled(h).reason(), Some("stop"));
    })
    .unwrap();
}

#[test]
fn d25_d22_a_panic_after_a_caught_cancellation_ends_failed_not_cancelled() {
    run(|| {
        let h = spawn(|| {
            delay(60_000).unwrap_err();
            panic!("cleanup broke");
        });
        let co = h.coroutine();
        yield_until_waiting(&[&co]);
        co.cancel();
        let err = h.join().unwrap_err();
        assert!(err.is_failed() && err.is_panic(), "{err}");
        assert!(!err.is_cancelled() && err.cancelled().is_none(), "{err}");
        assert_eq!(err.panic_message(), Some("cleanup broke"));
        assert_eq!(err.failure().unwrap().coroutine(), Some(co.id()));
        assert!(co.is_finished() && co.is_cancellation_requested());
    })
    .unwrap();
}

#[test]
fn d25_d22_a_spawn_try_error_after_a_caught_cancellation_ends_failed() {
    run(|| {
        let h = spawn_try(|| -> Result<u8, CleanupFailed> {
            delay(60_000).unwrap_err();
            Err(CleanupFailed)
        });
        let co = h.coroutine();
        yield_until_waiting(&[&co]);
        co.cancel();
        let err = h.join().unwrap_err();
        assert!(err.is_failed() && !err.is_panic(), "{err}");
        assert!(!err.is_cancelled() && err.cancelled().is_none(), "{err}");
        let f = err.failure().unwrap();
        assert!(f.downcast_ref::<CleanupFailed>().is_some());
        assert_eq!(f.coroutine(), Some(co.id()));
    })
    .unwrap();
}

#[test]
fn d25_d22_a_value_whose_drop_panics_after_a_caught_cancellation_ends_failed() {
    run(|| {
        let h = spawn(|| {
            delay(60_000).unwrap_err();
            Bomb
        });
        let co = h.coroutine();
        yield_until_waiting(&[&co]);
        co.cancel();
        let err = match h.join() {
            Err(err) => err,
            Ok(bomb) => {
                std::mem::forget(bomb);
                panic!("expected a failure, got the value");
            }
        };
        assert!(err.is_failed() && err.is_panic(), "{err}");
        assert!(!err.is_cancelled() && err.cancelled().is_none(), "{err}");
        assert_eq!(err.panic_message(), Some("the value's drop failed"));
        assert_eq!(err.failure().unwrap().coroutine(), Some(co.id()));
    })
    .unwrap();
}

#[test]
fn d25_the_main_coroutine_keeps_its_value_after_a_delivered_cancellation() {
    let v = run(|| {
        current().cancel();
        assert!(suspend().is_err(), "delivered at the suspension point");
        7
    });
    assert_eq!(v.unwrap(), 7);
    // Contrast (D-11): never delivered, the main coroutine ends cancelled,
    // without a value.
    let undelivered = run(|| {
        current().cancel();
        7
    });
    assert_eq!(undelivered.unwrap_err().kind(), ErrorKind::Cancelled);
}

#[test]
fn d25_d11_cancelled_while_running_and_never_suspending_again_ends_cancelled_too() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            // Cancelled while it runs: nothing is delivered, it never
            // suspends again and returns a value.
            current().cancel_with("while running");
            r1.push(format!(
                "requested={} cancelled={}",
                current().is_cancellation_requested(),
                current().is_cancelled()
            ));
            Value(r1.clone(), "the value")
        });
        let co = h.coroutine();
        let c = join_cancelled(h);
        r.push("joiner resumed");
        assert_eq!(c.id(), co.id());
        assert_eq!(c.reason(), Some("while running"));
        assert!(co.is_cancelled() && co.is_cancellation_requested());
    })
    .unwrap();
    rec.assert_events(&[
        "requested=true cancelled=false",
        "the value dropped",
        "joiner resumed",
    ]);
}
