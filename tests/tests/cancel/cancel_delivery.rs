//! Where and how often a cancellation is delivered.

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{current, delay, run, spawn, suspend, CancelCause, Cancelled};
use tests::support::{join_cancelled, yield_until, Recorder};

struct DropFlag(Recorder, &'static str);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.push(format!("{} dropped", self.1));
    }
}

#[test]
fn cancel_before_start_never_runs_the_body_and_drops_its_captures() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let flag = DropFlag(r.clone(), "capture");
        let r1 = r.clone();
        let h = spawn(move || {
            let _keep = &flag;
            r1.push("body ran");
        });
        let c = h.coroutine();
        h.cancel();
        assert!(c.is_cancellation_requested());
        let id = h.id();
        let err = h.join().unwrap_err();
        r.push(format!("joined: cancelled={}", err.is_cancelled()));
        assert_eq!(err.to_string(), format!("coroutine {id} cancelled"));
        assert_eq!(
            err.cancelled().map(|c| c.cause()),
            Some(CancelCause::Explicit)
        );
        assert!(c.is_cancelled() && c.is_finished() && !c.is_started());
    })
    .unwrap();
    rec.assert_events(&["capture dropped", "joined: cancelled=true"]);
}

#[test]
fn r_co4_d25_cancel_while_suspended_resumes_with_cancelled_at_the_suspension_point() {
    let rec = Recorder::new();
    let r = rec.clone();
    let caught: Rc<RefCell<Option<Cancelled>>> = Rc::default();
    run(move || {
        let r1 = r.clone();
        let k = caught.clone();
        let h = spawn(move || {
            r1.push("waiting");
            let err = delay(60_000).unwrap_err();
            r1.push(format!("caught: {err}"));
            *k.borrow_mut() = Some(err);
            // Edge-triggered (D-1): cleanup may block again.
            delay(1).unwrap();
            r1.push(format!(
                "cleanup done, requested={}",
                current().is_cancellation_requested()
            ));
            r1.push("returning normally");
            "returned normally"
        });
        yield_until(|| h.coroutine().is_suspended());
        let id = h.id();
        h.coroutine().cancel_with("shutting down");
        r.push("cancel sent");
        // D-25: it caught its cancellation and returned a value, yet it
        // ends cancelled, with the very cancellation it caught.
        let c = join_cancelled(h);
        assert_eq!(Some(&c), caught.borrow().as_ref());
        r.push(format!("joined: {c}"));
        r.push(format!("id {id}"));
    })
    .unwrap();
    let id = rec
        .events()
        .last()
        .unwrap()
        .trim_start_matches("id ")
        .to_owned();
    rec.assert_events(&[
        "waiting",
        "cancel sent",
        &format!("caught: coroutine {id} cancelled: shutting down"),
        "cleanup done, requested=true",
        "returning normally",
        &format!("joined: coroutine {id} cancelled: shutting down"),
        &format!("id {id}"),
    ]);
}

#[test]
fn the_first_cancellation_reason_wins() {
    run(|| {
        let h = spawn(|| {
            delay(60_000).unwrap_err();
        });
        yield_until(|| h.coroutine().is_suspended());
        let c = h.coroutine();
        c.cancel_with("first");
        c.cancel_with("second");
        c.cancel();
        let cancelled = join_cancelled(h);
        assert_eq!(cancelled.reason(), Some("first"));
        assert_eq!(cancelled.cause(), CancelCause::Explicit);
        assert_eq!(cancelled.id(), c.id());
        assert!(c.is_cancelled());
    })
    .unwrap();
}

#[test]
fn self_cancel_is_delivered_at_the_next_suspension_point_once() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let me = current();
        me.cancel_with("self");
        r.push("still running after cancel");
        match suspend() {
            Err(c) => r.push(format!("suspend: {}", c.reason().unwrap_or(""))),
            Ok(()) => r.push("suspend: ok"),
        }
        match suspend() {
            Err(c) => r.push(format!("second suspend: {c}")),
            Ok(()) => r.push("second suspend: ok"),
        }
        r.push(format!("requested={}", me.is_cancellation_requested()));
    })
    .unwrap();
    rec.assert_events(&[
        "still running after cancel",
        "suspend: self",
        "second suspend: ok",
        "requested=true",
    ]);
}

#[test]
fn cancelling_a_finished_coroutine_does_nothing() {
    run(|| {
        let h = spawn(|| 3);
        yield_until(|| h.is_finished());
        h.cancel();
        assert!(!h.coroutine().is_cancellation_requested());
        assert_eq!(h.join().unwrap(), 3);
    })
    .unwrap();
}

// The RFC's output needs the one-round hand-off of FIFO (the coroutine must
// still be at its suspend when the cancel comes): skipped under chaos.
#[test]
fn fifo_d25_the_rfc_suspend_and_cancel_example_catches_the_cancellation() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let c = spawn(move || {
            r1.push("Hello, World!");
            if let Err(e) = suspend() {
                r1.push(format!("Caught exception: {e}"));
            }
            r1.push("Goodbye, World!");
        });
        suspend().unwrap(); // pass control to the coroutine
        c.cancel();
        let id = c.id();
        // D-25 (RFC v1.7): caught and returned, it still ends cancelled.
        let cancelled = join_cancelled(c);
        r.push(format!("joined: {cancelled}"));
        r.push(format!("id {id}"));
    })
    .unwrap();
    let id = rec
        .events()
        .last()
        .unwrap()
        .trim_start_matches("id ")
        .to_owned();
    rec.assert_events(&[
        "Hello, World!",
        &format!("Caught exception: coroutine {id} cancelled"),
        "Goodbye, World!",
        &format!("joined: coroutine {id} cancelled"),
        &format!("id {id}"),
    ]);
}

#[test]
fn a_cancellation_becomes_an_io_error_of_kind_other_not_interrupted() {
    run(|| {
        let me = current();
        me.cancel_with("io");
        let err = std::io::Error::from(delay(1).unwrap_err());
        assert_eq!(err.kind(), std::io::ErrorKind::Other);
        let inner = async_std_api::io::cancelled(&err).expect("inner Cancelled");
        assert_eq!(inner.id(), me.id());
        assert_eq!(
            err.to_string(),
            format!("coroutine {} cancelled: io", me.id())
        );
        let plain = std::io::Error::other("x");
        assert!(async_std_api::io::cancelled(&plain).is_none());
    })
    .unwrap();
}

#[test]
fn a_cancelled_coroutine_keeps_running_its_cleanup_with_blocking_calls() {
    let rec = Recorder::new();
    let r = rec.clone();
    let shared = Rc::new(());
    let s = shared.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            let _s = s;
            if delay(60_000).is_err() {
                for i in 0..3 {
                    delay(1).unwrap();
                    r1.push(format!("cleanup step {i}"));
                }
            }
        });
        yield_until(|| h.coroutine().is_suspended());
        h.cancel();
        let c = join_cancelled(h);
        r.push(format!("joined: cancelled {:?}", c.cause()));
    })
    .unwrap();
    assert_eq!(Rc::strong_count(&shared), 1);
    rec.assert_events(&[
        "cleanup step 0",
        "cleanup step 1",
        "cleanup step 2",
        "joined: cancelled Explicit",
    ]);
}
