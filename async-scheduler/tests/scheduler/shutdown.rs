//! Shutdown: waiters resume with the reason, never-started coroutines start
//! with it, later coroutines too, and it terminates.

use async_abi::*;

use crate::host::{assert_events, ev, ok, take_log, Spawn};
use crate::{any_order_tests, engine_tests};

engine_tests! {
    fn a_coroutine_queued_with_an_error_at_shutdown_still_gets_the_reason(h) {
        // Something keeps the reactor alive (a long timer): without step 3 of shutdown.rs
        // the root would block in it and `a` would never see the reason.
        h.reactor.alive.set(1);
        let a = h.spawn(move |_| {
            let first = h.suspend();
            let second = h.suspend();
            ev(format!("a {first} then {second}"));
        });
        h.spawn(move |_| {
            ok(h.enqueue(a, AA_E_CANCELLED));
            ok(h.shutdown(AA_E_SHUTDOWN));
        });
        ok(h.run());
        h.reactor.alive.set(0);
        assert_events(&["a -10010 then -10012"]);
    }

    fn shutdown_resumes_waiters_and_starts_unstarted_with_the_reason(h) {
        h.reactor.alive.set(1);
        h.spawn(move |_| ev(format!("waiter {}", h.suspend())));
        h.create(Spawn::default(), |status| ev(format!("unstarted {status}")));
        h.spawn(move |_| {
            ok(h.shutdown(AA_E_SHUTDOWN));
            ev("shutdown called");
            h.create(Spawn::default(), |status| ev(format!("created later {status}")));
        });
        ok(h.run());
        h.reactor.alive.set(0);
        assert_events(&[
            "shutdown called",
            "waiter -10012",
            "unstarted -10012",
            "created later -10012",
        ]);
    }

    fn an_earlier_error_wins_over_the_shutdown_reason(h) {
        let a = h.spawn(move |_| ev(format!("a {}", h.suspend())));
        h.spawn(move |_| {
            ok(h.enqueue(a, AA_E_CANCELLED));
            ok(h.shutdown(AA_E_SHUTDOWN));
        });
        ok(h.run());
        assert_events(&["a -10010"]);
    }

    fn fiber_is_reused_after_a_coroutine_finished_through_shutdown(h) {
        h.spawn(move |_| {
            let status = h.suspend();
            ev(format!("a {status} on fiber {}", h.stats().current_fiber));
        });
        h.spawn(move |_| ok(h.shutdown(AA_E_SHUTDOWN)));
        ok(h.run());
        // The scheduler stays in shutdown: a new coroutine starts with the
        // reason, on a pooled fiber.
        h.create(Spawn::default(), move |status| {
            ev(format!("b {status} on fiber {}", h.stats().current_fiber));
        });
        ok(h.run());
        assert_events(&["a -10012 on fiber 1", "b -10012 on fiber 1"]);
        assert_eq!(h.stats().fibers_created, 2, "the shutdown caller's fiber and a's");
    }
}

any_order_tests! {
    fn shutdown_before_run_starts_queued_coroutines_with_the_reason(h) {
        h.spawn(|status| ev(format!("a {status}")));
        ok(h.shutdown(AA_E_SHUTDOWN));
        ok(h.run());
        assert_events(&["a -10012"]);
    }

    fn waiters_that_ignore_shutdown_are_resumed_again_when_idle(h) {
        h.spawn(move |_| {
            let mut statuses = Vec::new();
            for _ in 0..3 {
                statuses.push(h.suspend());
            }
            ev(format!("{statuses:?}"));
        });
        h.spawn(move |_| ok(h.shutdown(AA_E_SHUTDOWN)));
        ok(h.run());
        assert_events(&["[-10012, -10012, -10012]"]);
        assert!(take_log(AA_LOG_ERROR).is_empty(), "no deadlock report during shutdown");
    }

    fn shutdown_gives_up_on_coroutines_that_never_finish(h) {
        let stop = std::rc::Rc::new(std::cell::Cell::new(false));
        let flag = stop.clone();
        h.spawn(move |_| {
            let mut n = 0;
            while !flag.get() {
                assert_eq!(h.suspend(), AA_E_SHUTDOWN);
                n += 1;
            }
            ev(format!("resumed {n} times"));
        });
        ok(h.shutdown(AA_E_SHUTDOWN));
        assert_eq!(h.run(), AA_E_BUSY);
        assert_eq!(h.stats().live_coroutines, 1);
        let log = take_log(AA_LOG_ERROR);
        assert_eq!(
            log,
            [
                "shutdown: giving up after 16 idle rounds of resuming with status -10012: 1 \
                 coroutine still waits",
                "coroutine 1 (spawned at an unknown place) waits at an unknown place",
            ]
        );
        assert_eq!(h.last_error(), log[0]);
        // SAFETY: a live scheduler.
        assert_eq!(unsafe { h.vt.destroy.unwrap()(h.s) }, AA_E_BUSY);
        stop.set(true);
        ok(h.run());
        assert_events(&["resumed 17 times"]);
    }

    fn shutdown_rejects_a_non_negative_reason(h) {
        assert_eq!(h.shutdown(0), AA_E_INVALID);
    }
}
