//! Deadlock detection: report, resume with AA_E_DEADLOCK, escalate.

use async_abi::*;

use crate::host::{assert_events, ev, ok, take_log, Spawn};
use crate::{any_order_tests, engine_tests};

engine_tests! {
    fn deadlocked_waiters_resume_with_aa_e_deadlock_and_are_reported(h) {
        let a_spawn = Spawn { file: "src/main.rs", line: 10, column: 5, ..Spawn::default() };
        let b_spawn = Spawn { file: "src/main.rs", line: 11, column: 5, ..Spawn::default() };
        h.spawn_with(a_spawn, move |_| {
            let wait = AaWaitInfo {
                struct_size: std::mem::size_of::<AaWaitInfo>() as u32,
                flags: 0,
                what: AaStr::from_str("join coroutine 2"),
                file: AaStr::from_str("src/main.rs"),
                line: 12,
                column: 9,
            };
            ev(format!("a {}", h.suspend_at(&wait)));
        });
        h.spawn_with(b_spawn, move |_| {
            ev(format!("b {}", h.suspend()));
        });
        assert_eq!(h.run(), AA_E_DEADLOCK);
        assert_events(&["a -10011", "b -10011"]);
        assert_eq!(
            take_log(AA_LOG_ERROR),
            [
                "deadlock: 2 coroutines wait and nothing can wake them",
                "coroutine 1 (spawned at src/main.rs:10:5) waits at src/main.rs:12:9 for join coroutine 2",
                "coroutine 2 (spawned at src/main.rs:11:5) waits at an unknown place",
            ]
        );
    }
}

any_order_tests! {
    fn no_deadlock_while_the_reactor_has_events(h) {
        h.reactor.alive.set(1);
        let a = h.spawn(move |_| ev(format!("a {}", h.suspend())));
        h.spawn(move |_| {
            // Resumed from inside the reactor's run_once.
            h.wake_after(2, a, 5);
        });
        ok(h.run());
        h.reactor.alive.set(0);
        assert_events(&["a 5"]);
        assert!(take_log(AA_LOG_ERROR).is_empty());
    }

    fn a_second_deadlock_escalates_to_shutdown(h) {
        h.spawn(move |_| {
            let first = h.suspend();
            let second = h.suspend();
            ev(format!("{first} then {second}"));
        });
        assert_eq!(h.run(), AA_E_DEADLOCK);
        assert_events(&["-10011 then -10012"]);
        let log = take_log(AA_LOG_ERROR);
        assert_eq!(log.len(), 5, "{log:?}");
        assert_eq!(log[0], "deadlock: 1 coroutine waits and nothing can wake it");
        assert_eq!(log[1], "coroutine 1 (spawned at an unknown place) waits at an unknown place");
        assert_eq!(log[2], log[0]);
        assert_eq!(
            log[4],
            "deadlock again after the waiters were resumed with AA_E_DEADLOCK: shutting down"
        );
    }

    fn a_created_but_never_enqueued_coroutine_is_a_waiter(h) {
        h.create(Spawn::default(), |status| ev(format!("started with {status}")));
        assert_eq!(h.run(), AA_E_DEADLOCK);
        assert_events(&["started with -10011"]);
        assert_eq!(
            take_log(AA_LOG_ERROR)[1],
            "coroutine 1 (spawned at an unknown place) never started"
        );
    }
}
