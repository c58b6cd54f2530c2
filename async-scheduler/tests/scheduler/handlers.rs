//! Switch handlers, introspection (`coroutine_info`, `iterate`), and the
//! states a handle reports.

use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;

use async_abi::*;

use crate::host::{assert_events, ev, ok, Spawn};
use crate::{any_order_tests, engine_tests};

fn kind(k: u32) -> &'static str {
    match k {
        AA_SWITCH_ENTER => "enter",
        AA_SWITCH_LEAVE => "leave",
        AA_SWITCH_FINISH => "finish",
        _ => "?",
    }
}

engine_tests! {
    fn coroutine_info_reports_state_spawn_and_wait(h) {
        let spawn = Spawn { file: "src/main.rs", line: 10, column: 5, ..Spawn::default() };
        let a = h.create(spawn, move |_| {
            let wait = AaWaitInfo {
                struct_size: std::mem::size_of::<AaWaitInfo>() as u32,
                flags: 0,
                what: AaStr::from_str("join coroutine 2"),
                file: AaStr::from_str("src/main.rs"),
                line: 12,
                column: 9,
            };
            ok(h.suspend_at(&wait));
            let info = h.info(h.current());
            assert_eq!(info.state, AA_CORO_RUNNING);
            assert_eq!(info.wait_line, 0, "no wait info once it runs again");
            assert_eq!(info.switches, 2);
        });
        let info = h.info(a);
        assert_eq!(info.state, AA_CORO_CREATED);
        assert_eq!(info.id, h.id(a));
        // SAFETY: the spawn file is a static str.
        assert_eq!(unsafe { info.spawn_file.as_str() }, Some("src/main.rs"));
        assert_eq!((info.spawn_line, info.spawn_column), (10, 5));
        ok(h.enqueue(a, 0));
        h.spawn(move |_| {
            let info = h.info(a);
            assert_eq!(info.state, AA_CORO_SUSPENDED);
            // SAFETY: the strings are valid while `a` is suspended.
            unsafe {
                assert_eq!(info.wait_what.as_str(), Some("join coroutine 2"));
                assert_eq!(info.wait_file.as_str(), Some("src/main.rs"));
            }
            assert_eq!(info.wait_line, 12);
            assert_eq!(info.switches, 1);
            ok(h.enqueue(a, 0));
            assert_eq!(h.info(a).state, AA_CORO_QUEUED);
            ev("checked");
        });
        ok(h.run());
        assert_events(&["checked"]);
    }
}

any_order_tests! {
    fn switch_handlers_get_enter_leave_finish_in_order(h) {
        let a = h.create(Spawn::default(), move |_| {
            ev("a runs");
            ok(h.yield_now());
            ev("a again");
        });
        ok(h.on_switch(Some(a), |k| {
            ev(format!("handler {}", kind(k)));
            true
        }));
        ok(h.enqueue(a, 0));
        ok(h.run());
        assert_events(&[
            "handler enter",
            "a runs",
            "handler leave",
            "handler enter",
            "a again",
            "handler finish",
        ]);
    }

    fn handler_returning_false_is_removed(h) {
        h.spawn(move |_| {
            let mut calls = 0;
            ok(h.on_switch(None, move |k| {
                calls += 1;
                ev(format!("once {} {calls}", kind(k)));
                false
            }));
            ok(h.on_switch(None, |k| {
                ev(format!("always {}", kind(k)));
                true
            }));
            ok(h.yield_now());
            ok(h.yield_now());
        });
        ok(h.run());
        assert_events(&[
            "once leave 1",
            "always leave",
            "always enter",
            "always leave",
            "always enter",
            "always finish",
        ]);
    }

    fn handler_added_by_a_handler_runs_from_the_next_switch(h) {
        h.spawn(move |_| {
            ok(h.on_switch(None, move |k| {
                ev(format!("outer {}", kind(k)));
                if k == AA_SWITCH_LEAVE {
                    ok(h.on_switch(None, |k| {
                        ev(format!("inner {}", kind(k)));
                        true
                    }));
                }
                true
            }));
            ok(h.yield_now());
        });
        ok(h.run());
        assert_events(&[
            "outer leave",
            "outer enter",
            "inner enter",
            "outer finish",
            "inner finish",
        ]);
    }

    fn handlers_cannot_suspend_and_finished_coroutines_cannot_be_enqueued(h) {
        h.spawn(move |_| {
            let me = h.current();
            ok(h.on_switch(None, move |k| {
                assert_eq!(h.suspend(), AA_E_INVALID, "suspend inside a handler");
                if k == AA_SWITCH_FINISH {
                    assert_eq!(h.enqueue(me, 0), AA_E_INVALID, "enqueue of a finished coroutine");
                    ev("finish checked");
                }
                true
            }));
        });
        ok(h.run());
        assert_events(&["finish checked"]);
    }

    fn coroutine_info_fills_at_most_the_callers_size(h) {
        let a = h.create(Spawn::default(), |_| {});
        // SAFETY: all-zero is a valid AaCoroutineInfo.
        let mut info: AaCoroutineInfo = unsafe { std::mem::zeroed() };
        info.switches = 77;
        info.struct_size = std::mem::offset_of!(AaCoroutineInfo, arg) as u32;
        // SAFETY: a live scheduler and coroutine; `info` is writable.
        ok(unsafe { h.vt.coroutine_info.unwrap()(h.s, a.0, &mut info) });
        assert_eq!(info.id, h.id(a));
        assert_eq!(info.switches, 77, "wrote past the caller's struct_size");
        ok(h.enqueue(a, 0));
        ok(h.run());
    }

    fn iterate_visits_live_coroutines_in_creation_order(h) {
        let a = h.create(Spawn::default(), |_| {});
        let b = h.create(Spawn::default(), |_| {});
        let c = h.create(Spawn::default(), |_| {});
        let seen: Rc<RefCell<Vec<u64>>> = Rc::default();
        unsafe extern "C" fn visit(c: *mut AaCoroutine, ud: *mut c_void) -> bool {
            // SAFETY: `ud` is the Vec below, alive for the call.
            let seen = unsafe { &*(ud as *const RefCell<Vec<u64>>) };
            // SAFETY: a live coroutine handle.
            seen.borrow_mut().push(unsafe { crate::host::vtable().coroutine_id.unwrap()(c) });
            seen.borrow().len() < 2
        }
        // SAFETY: a live scheduler; `seen` outlives the call.
        ok(unsafe { h.vt.iterate.unwrap()(h.s, Some(visit), Rc::as_ptr(&seen) as *mut c_void) });
        assert_eq!(*seen.borrow(), vec![h.id(a), h.id(b)], "stops when the visitor returns false");
        for x in [a, b, c] {
            ok(h.enqueue(x, 0));
        }
        ok(h.run());
    }
}
