//! The coroutine-local context (R-CX2): private to each coroutine, not
//! inherited by the coroutines it spawns, and emptied when the coroutine
//! completes (returns, fails or is cancelled), so its values' destructors
//! run then: before anyone waiting for it resumes.

use std::rc::Rc;

use async_std_api::{coroutine_context, delay, on_finally, run, spawn, spawn_try, CancelCause};
use tests::support::{capture_logs, join_cancelled, yield_until_waiting, Recorder};

use super::context_slots::DropEvent;

#[test]
fn r_cx2_coroutine_context_is_not_inherited_by_spawned_coroutines() {
    run(|| {
        coroutine_context().set("data", "this local data").unwrap();
        let h = spawn(|| {
            let ctx = coroutine_context();
            (
                ctx.find::<&str>("data").unwrap().is_none(),
                ctx.has("data"),
                ctx.parent().is_none(),
            )
        });
        assert_eq!(h.join().unwrap(), (true, false, true));
        assert_eq!(
            *coroutine_context().get::<&str>("data").unwrap(),
            "this local data"
        );
    })
    .unwrap();
}

#[test]
fn r_cx2_each_coroutine_has_its_own_context() {
    run(|| {
        let a = spawn(|| {
            coroutine_context().set("who", "a").unwrap();
            delay(1).unwrap();
            *coroutine_context().get::<&str>("who").unwrap()
        });
        let b = spawn(|| {
            coroutine_context().set("who", "b").unwrap();
            delay(1).unwrap();
            *coroutine_context().get::<&str>("who").unwrap()
        });
        assert_eq!((a.join().unwrap(), b.join().unwrap()), ("a", "b"));
        // The same one for every call within one coroutine.
        assert!(coroutine_context().ptr_eq(&coroutine_context()));
        assert!(!spawn(|| coroutine_context())
            .join()
            .unwrap()
            .ptr_eq(&coroutine_context()));
    })
    .unwrap();
}

#[test]
fn r_cx2_values_are_dropped_when_the_coroutine_returns_before_the_joiner_resumes() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            coroutine_context()
                .set("guard", DropEvent(r1.clone(), "local value"))
                .unwrap();
            r1.push("body returns");
            7
        });
        let v = h.join().unwrap();
        r.push(format!("joined {v}"));
    })
    .unwrap();
    rec.assert_events(&["body returns", "local value dropped", "joined 7"]);
}

#[test]
fn r_cx2_values_are_dropped_when_the_coroutine_fails() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let panicking = spawn(move || {
            coroutine_context()
                .set("guard", DropEvent(r1.clone(), "panicking's value"))
                .unwrap();
            panic!("boom");
        });
        let e = panicking.join().unwrap_err();
        r.push(format!(
            "joined: {}",
            e.failure().map(|f| f.to_string()).unwrap_or_default()
        ));
        let r2 = r.clone();
        let erring = spawn_try(move || {
            coroutine_context()
                .set("guard", DropEvent(r2.clone(), "erring's value"))
                .unwrap();
            Err::<(), _>("bad input")
        });
        assert!(erring.join().unwrap_err().is_failed());
        r.push("joined erring");
    })
    .unwrap();
    let events = rec.events();
    assert_eq!(events[0], "panicking's value dropped");
    assert!(
        events[1].starts_with("joined: ") && events[1].ends_with("panicked: boom"),
        "{events:?}"
    );
    assert_eq!(&events[2..], ["erring's value dropped", "joined erring"]);
}

#[test]
fn r_cx2_values_are_dropped_when_the_coroutine_is_cancelled() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            coroutine_context()
                .set("guard", DropEvent(r1.clone(), "cancelled's value"))
                .unwrap();
            delay(60_000)
        });
        yield_until_waiting(&[&h.coroutine()]);
        r.push("cancel");
        h.cancel();
        let c = join_cancelled(h);
        assert_eq!(c.cause(), CancelCause::Explicit);
        r.push("joined");
    })
    .unwrap();
    rec.assert_events(&["cancel", "cancelled's value dropped", "joined"]);
}

#[test]
fn r_cx2_on_finally_handlers_still_see_the_coroutine_context() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        spawn(move || {
            coroutine_context()
                .set("guard", DropEvent(r1.clone(), "value"))
                .unwrap();
            let r2 = r1.clone();
            on_finally(move || {
                let seen = coroutine_context().has("guard");
                r2.push(format!("finally sees it: {seen}"));
            });
        })
        .join()
        .unwrap();
        r.push("joined");
    })
    .unwrap();
    rec.assert_events(&["finally sees it: true", "value dropped", "joined"]);
}

#[test]
fn r_cx2_a_handle_kept_past_the_finish_sees_an_emptied_context() {
    run(|| {
        // A handle kept past the finish: the values are gone, the handle
        // still answers.
        let (ctx, probe) = spawn(|| {
            let probe = Rc::new(1u8);
            coroutine_context()
                .set_weak("probe", Rc::downgrade(&probe))
                .unwrap();
            coroutine_context().set("strong", probe.clone()).unwrap();
            (coroutine_context(), Rc::downgrade(&probe))
        })
        .join()
        .unwrap();
        assert!(
            probe.upgrade().is_none(),
            "the strong slot was emptied at the finish"
        );
        assert!(!ctx.has("strong") && !ctx.has("probe"));
    })
    .unwrap();
}

#[test]
fn r_cx2_a_panicking_destructor_is_logged_and_does_not_stop_the_others() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("bomb went off");
        }
    }
    let rec = Recorder::new();
    let r = rec.clone();
    let (res, logs) = capture_logs(move || {
        run(move || {
            let r1 = r.clone();
            let v = spawn(move || {
                coroutine_context().set("bomb", Bomb).unwrap();
                coroutine_context()
                    .set("other", DropEvent(r1.clone(), "other"))
                    .unwrap();
                3
            })
            .join()
            .unwrap();
            r.push(format!("joined {v}"));
        })
    });
    res.unwrap();
    rec.assert_events(&["other dropped", "joined 3"]);
    assert_eq!(
        logs.matching("context value"),
        ["WARN a context value panicked in its destructor: bomb went off"]
    );
}

#[test]
fn r_cx2_a_value_set_by_a_destructor_during_the_finish_is_dropped_too() {
    struct SetsAnother(Recorder);
    impl Drop for SetsAnother {
        fn drop(&mut self) {
            self.0.push("first dropped");
            coroutine_context()
                .set("late", DropEvent(self.0.clone(), "late value"))
                .unwrap();
        }
    }
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        spawn(move || coroutine_context().set("first", SetsAnother(r1)).unwrap())
            .join()
            .unwrap();
        r.push("joined");
    })
    .unwrap();
    rec.assert_events(&["first dropped", "late value dropped", "joined"]);
}

#[test]
fn r_cx2_ten_thousand_live_coroutines_each_free_their_own_context() {
    use std::cell::Cell;
    struct Count(Rc<Cell<u32>>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    run(|| {
        let dropped = Rc::new(Cell::new(0u32));
        let hs: Vec<_> = (0..10_000u32)
            .map(|i| {
                let d = dropped.clone();
                spawn(move || {
                    coroutine_context().set("n", i).unwrap();
                    coroutine_context().set("count", Count(d)).unwrap();
                    delay(1).unwrap(); // all of them live at once
                    *coroutine_context().get::<u32>("n").unwrap() == i
                })
            })
            .collect();
        assert_eq!(dropped.get(), 0);
        for h in hs {
            assert!(h.join().unwrap(), "each saw its own value");
        }
        assert_eq!(dropped.get(), 10_000, "every context freed at its finish");
    })
    .unwrap();
}
