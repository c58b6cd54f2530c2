//! Run order: FIFO hand-off, priorities, yields, resume statuses,
//! microtasks, reactor fairness.

use async_abi::*;

use crate::host::{assert_events, ev, ok, Spawn};
use crate::{any_order_tests, engine_tests};

engine_tests! {
    fn spawn_order_is_fifo(h) {
        for name in ["a", "b", "c"] {
            h.spawn(move |_| ev(name));
        }
        ok(h.run());
        assert_events(&["a", "b", "c"]);
    }

    fn spawned_coroutine_waits_until_the_spawner_suspends(h) {
        h.spawn(move |_| {
            h.spawn(|_| ev("child"));
            ev("spawned");
            ok(h.yield_now());
            ev("resumed");
        });
        ok(h.run());
        assert_events(&["spawned", "child", "resumed"]);
    }

    fn high_priority_runs_before_normal_work_queued_earlier(h) {
        h.spawn(move |_| {
            h.spawn(|_| ev("normal 1"));
            h.spawn(|_| ev("normal 2"));
            let high = Spawn { priority: AA_PRIORITY_HIGH, ..Spawn::default() };
            h.spawn_with(high, |_| ev("high"));
            ev("main");
        });
        ok(h.run());
        assert_events(&["main", "high", "normal 1", "normal 2"]);
    }

    fn yield_goes_behind_coroutines_queued_before_it(h) {
        h.spawn(move |_| {
            ev("a1");
            ok(h.yield_now());
            ev("a2");
        });
        h.spawn(move |_| {
            ev("b1");
            ok(h.yield_now());
            ev("b2");
        });
        ok(h.run());
        assert_events(&["a1", "b1", "a2", "b2"]);
    }

    fn the_yield_flag_goes_behind_coroutines_queued_before_it(h) {
        h.spawn(move |_| {
            ev("a1");
            ok(h.yield_flag());
            ev("a2");
        });
        h.spawn(move |_| {
            ev("b1");
            ok(h.yield_flag());
            ev("b2");
        });
        ok(h.run());
        assert_events(&["a1", "b1", "a2", "b2"]);
    }

    fn the_yield_flag_keeps_an_earlier_place_and_error(h) {
        h.spawn(move |_| {
            let me = h.current();
            ok(h.enqueue(me, AA_E_TIMEOUT));
            h.spawn(|_| ev("b"));
            ev(format!("a resumed with {}", h.yield_flag()));
        });
        ok(h.run());
        assert_events(&["a resumed with -10013", "b"]);
    }

    fn suspend_returns_the_status_of_the_resuming_enqueue(h) {
        let a = h.spawn(move |_| {
            let status = h.suspend();
            ev(format!("a resumed with {status}"));
        });
        h.spawn(move |_| {
            ok(h.enqueue(a, -42));
            ev("b enqueued a");
        });
        ok(h.run());
        assert_events(&["b enqueued a", "a resumed with -42"]);
    }

    fn first_error_wins_when_enqueued_twice(h) {
        let a = h.spawn(move |_| {
            ev(format!("first {}", h.suspend()));
            ev(format!("second {}", h.suspend()));
        });
        h.spawn(move |_| {
            ok(h.enqueue(a, 0));
            ok(h.enqueue(a, AA_E_CANCELLED));
            ok(h.enqueue(a, AA_E_TIMEOUT));
            assert_eq!(h.stats().queued, 1, "enqueued twice but queued once");
            ok(h.yield_now());
            ok(h.enqueue(a, AA_E_TIMEOUT));
            ok(h.enqueue(a, 0));
        });
        ok(h.run());
        assert_events(&["first -10010", "second -10013"]);
    }

    fn microtasks_run_fifo_before_the_next_switch(h) {
        h.spawn(move |_| {
            h.defer(move || {
                ev("m1");
                h.defer(|| ev("m3"));
            });
            h.defer(|| ev("m2"));
            h.spawn(|_| ev("b"));
            ev("a suspends");
            ok(h.yield_now());
            ev("a resumed");
        });
        ok(h.run());
        assert_events(&["a suspends", "m1", "m2", "m3", "b", "a resumed"]);
    }

    fn microtask_can_enqueue_a_coroutine(h) {
        let a = h.spawn(move |_| {
            ev(format!("a {}", h.suspend()));
        });
        h.spawn(move |_| {
            h.defer(move || {
                ev("m");
                ok(h.enqueue(a, 7));
            });
        });
        ok(h.run());
        assert_events(&["m", "a 7"]);
    }
}

any_order_tests! {
    fn yield_alone_returns_at_once_without_a_switch(h) {
        h.spawn(move |_| {
            let before = h.stats().switches;
            assert_eq!(h.yield_now(), AA_OK);
            assert_eq!(h.stats().switches, before, "a lone yield switched");
            ev("after yield");
        });
        ok(h.run());
        assert_events(&["after yield"]);
    }

    fn the_yield_flag_is_advertised(h) {
        assert_ne!(h.vt.caps & AA_SCHED_CAP_WAIT_YIELD, 0);
        h.spawn(|_| {});
        ok(h.run());
    }

    fn the_yield_flag_alone_returns_at_once_without_a_switch(h) {
        h.spawn(move |_| {
            let before = h.stats().switches;
            assert_eq!(h.yield_flag(), AA_OK);
            assert_eq!(h.stats().switches, before, "a lone yield switched");
            ev("after yield");
        });
        ok(h.run());
        assert_events(&["after yield"]);
    }

    fn the_yield_flag_of_a_high_priority_coroutine_goes_first(h) {
        let high = Spawn { priority: AA_PRIORITY_HIGH, ..Spawn::default() };
        h.spawn_with(high, move |_| {
            h.spawn(|_| ev("normal"));
            ev("high 1");
            ok(h.yield_flag());
            ev("high 2");
        });
        ok(h.run());
        assert_events(&["high 1", "high 2", "normal"]);
    }

    fn a_yield_flag_refused_in_a_microtask_still_enqueues_nothing(h) {
        h.spawn(move |_| {
            h.defer(move || assert_eq!(h.yield_flag(), AA_E_INVALID, "no current coroutine"));
            ok(h.yield_now());
            assert_eq!(h.stats().queued, 0);
        });
        ok(h.run());
    }

    fn start_status_reaches_the_entry(h) {
        let c = h.create(Spawn::default(), |status| ev(format!("started with {status}")));
        ok(h.enqueue(c, AA_E_CANCELLED));
        ok(h.run());
        assert_events(&["started with -10010"]);
    }

    fn reactor_callbacks_resume_coroutines(h) {
        h.spawn(move |_| {
            let me = h.current();
            h.wake_after(3, me, AA_E_TIMEOUT);
            ev(format!("woke with {}", h.suspend()));
        });
        ok(h.run());
        assert_events(&["woke with -10013"]);
        assert_eq!(h.reactor.blocks.get(), 1, "the root blocked once and time jumped");
    }

    fn busy_queue_polls_the_reactor_every_61_ticks(h) {
        h.spawn(move |_| {
            for _ in 0..610 {
                ok(h.yield_now());
            }
        });
        ok(h.run());
        // 610 lone yields are 610 ticks with a non-empty queue, plus the
        // root's pick that started the coroutine.
        assert_eq!(h.stats().tick_polls, 10);
        assert_eq!(h.reactor.polls.get(), 10);
        assert_eq!(h.reactor.blocks.get(), 0);
    }

    fn ids_are_unique_increasing_and_never_zero(h) {
        let a = h.create(Spawn::default(), |_| {});
        let b = h.create(Spawn::default(), |_| {});
        assert!(h.id(a) > 0);
        assert!(h.id(b) > h.id(a));
        ok(h.enqueue(a, 0));
        ok(h.enqueue(b, 0));
        ok(h.run());
    }

    fn suspend_outside_a_coroutine_is_invalid(h) {
        assert_eq!(h.suspend(), AA_E_INVALID);
        assert!(h.current().0.is_null());
        h.spawn(move |_| {
            assert_eq!(h.run(), AA_E_INVALID, "run inside a coroutine");
            h.defer(move || assert_eq!(h.suspend(), AA_E_INVALID, "suspend in a microtask"));
        });
        ok(h.run());
    }
}

/// The same 610 lone yields with a one-second `poll_gap_us`: the first poll
/// runs no callback, and every later 61st tick comes well within the second
/// (610 yields take microseconds), so none of them polls.
#[test]
fn an_idle_poll_holds_the_next_back_for_the_gap() {
    for engine in ["context", "corosensei"] {
        crate::host::with_scheduler(engine, &[("poll_gap_us", "1000000")], |h| {
            h.spawn(move |_| {
                for _ in 0..610 {
                    ok(h.yield_now());
                }
            });
            ok(h.run());
            assert_eq!(h.stats().tick_polls, 1);
            assert_eq!(h.reactor.polls.get(), 1);
            assert_eq!(h.reactor.blocks.get(), 0);
        });
    }
}
