//! Introspection (R-T1, R-CO2): spawn and suspend locations, what a
//! coroutine waits for, every live coroutine, its scope.

use async_std_api::{coroutines, current, current_scope, delay, run, spawn, spawn_in, Scope};
use tests::support::{join_cancelled, yield_until, yield_until_waiting};

#[test]
fn r_t1_spawn_and_last_suspend_locations() {
    run(|| {
        let spawn_line = line!() + 1;
        let c = spawn(|| {
            let line = line!() + 1;
            delay(20).unwrap();
            line
        })
        .coroutine();
        assert_eq!(c.spawn_location().line(), spawn_line);
        assert_eq!(c.suspend_location(), None, "never suspended yet");
        yield_until_waiting(&[&c]);
        let at = c.suspend_location().expect("suspended in delay");
        assert_eq!(at.file(), file!());
        assert_eq!(c.awaiting_info().as_deref(), Some("delay 20 ms"));
        c.wait().unwrap();
        assert_eq!(c.awaiting_info(), None, "not suspended any more");
    })
    .unwrap();
}

#[test]
fn r_t1_awaiting_info_names_a_join() {
    run(|| {
        let target = spawn(|| delay(30).unwrap());
        let tid = target.id();
        let waiter = spawn(move || target.join().unwrap()).coroutine();
        yield_until(|| {
            waiter
                .awaiting_info()
                .is_some_and(|w| w.starts_with("join"))
        });
        assert_eq!(
            waiter.awaiting_info(),
            Some(format!("join coroutine {tid}"))
        );
        waiter.wait().unwrap();
    })
    .unwrap();
}

#[test]
fn r_t1_coroutines_lists_every_live_coroutine_and_each_knows_its_scope() {
    run(|| {
        let scope = Scope::new();
        let a = spawn(|| delay(10).unwrap()).coroutine();
        let b = spawn_in(&scope, || delay(10).unwrap()).unwrap().coroutine();
        let all = coroutines();
        assert!(all.contains(&current()) && all.contains(&a) && all.contains(&b));
        assert_eq!(all.len(), 3);
        assert_eq!(a.scope().unwrap(), current_scope());
        assert_eq!(b.scope().unwrap().id(), scope.id());
        assert_eq!(scope.coroutines(), std::slice::from_ref(&b));
        a.wait().unwrap();
        b.wait().unwrap();
        assert_eq!(coroutines(), [current()]);
        assert!(b.scope().is_none(), "a finished coroutine keeps no scope");
    })
    .unwrap();
}

#[test]
fn r_co2_the_lifecycle_queries_agree_with_each_other() {
    run(|| {
        let h = spawn(|| {
            let _ = delay(60_000);
            delay(1).unwrap(); // cleanup after the cancellation (edge)
        });
        let c = h.coroutine();
        // Queued, not started.
        assert!(c.is_queued() && !c.is_started() && !c.is_running());
        assert!(!c.is_suspended() && !c.is_finished() && !c.is_cancelled());
        yield_until_waiting(&[&c]);
        // Suspended in delay.
        assert!(c.is_started() && c.is_suspended() && !c.is_queued());
        c.cancel();
        // Pending cancellation: requested, queued to resume, not cancelled.
        assert!(c.is_cancellation_requested() && !c.is_cancelled());
        assert!(c.is_queued() && !c.is_suspended());
        join_cancelled(h);
        // Finished after a cancellation: cancelled, finished.
        assert!(c.is_finished() && c.is_cancelled() && c.is_cancellation_requested());
        assert!(!c.is_queued() && !c.is_suspended() && !c.is_running());
    })
    .unwrap();
}

#[test]
fn r_t1_a_traced_suspended_coroutine_shows_the_stack_it_waits_on() {
    async_std_api::Builder::new()
        .trace(true)
        .run(|| {
            fn waits_here() {
                async_std_api::delay(10).unwrap();
            }
            let c = async_std_api::spawn(waits_here).coroutine();
            tests::support::yield_until_waiting(&[&c]);
            let trace = c.trace().expect("traced while suspended");
            assert!(trace.contains("waits_here"), "{trace}");
            let mine = async_std_api::current().trace().expect("the running one's");
            assert!(mine.contains("r_t1_a_traced"), "{mine}");
            c.wait().unwrap();
            assert_eq!(c.trace(), None, "a finished coroutine has none");
        })
        .unwrap();
}

#[test]
fn r_t1_without_tracing_a_suspended_coroutine_has_no_trace_and_events_are_counted() {
    async_std_api::run(|| {
        let c = async_std_api::spawn(|| async_std_api::delay(10).unwrap()).coroutine();
        tests::support::yield_until_waiting(&[&c]);
        assert_eq!(c.trace(), None);
        let before = async_std_api::live_events();
        let t = async_std_api::time::timeout(60_000);
        assert_eq!(async_std_api::live_events(), before + 1);
        drop(t);
        assert_eq!(async_std_api::live_events(), before);
        c.wait().unwrap();
    })
    .unwrap();
}
