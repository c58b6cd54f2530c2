//! Fibers and stacks: inline starts, pooling, eviction in batches,
//! retirement, and the system calls the pool makes (counted by the
//! allocator: `stacks_given_back`, `stack_give_back_calls`).

use async_abi::*;

use crate::host::{assert_events, ev, ok, with_scheduler, Spawn, H};
use crate::{any_order_tests, engine_tests};

engine_tests! {
    fn finished_fiber_runs_the_next_unstarted_coroutine_without_a_switch(h) {
        h.spawn(move |_| ev(format!("a on fiber {}", h.stats().current_fiber)));
        h.spawn(move |_| ev(format!("b on fiber {}", h.stats().current_fiber)));
        h.spawn(move |_| ev(format!("c on fiber {}", h.stats().current_fiber)));
        ok(h.run());
        assert_events(&["a on fiber 1", "b on fiber 1", "c on fiber 1"]);
        let stats = h.stats();
        assert_eq!(stats.inline_starts, 2);
        assert_eq!(stats.switches, 2, "root -> fiber, and back when the queue is empty");
        assert_eq!(stats.fibers_created, 1);
    }

    fn started_coroutines_resume_on_their_own_fiber(h) {
        let a = h.spawn(move |_| {
            let before = h.stats().current_fiber;
            ok(h.suspend());
            ev(format!("a {before} -> {}", h.stats().current_fiber));
        });
        h.spawn(move |_| {
            ev(format!("b on fiber {}", h.stats().current_fiber));
            ok(h.enqueue(a, 0));
        });
        ok(h.run());
        assert_events(&["b on fiber 2", "a 1 -> 1"]);
    }

    fn stacks_are_reused_from_the_pool(h) {
        for round in 0..20 {
            churn(h, 100);
            let stats = h.stats();
            // 101 fibers at the peak, all kept warm by the default pool
            // (256) and taken again: nothing is made, carved or mapped
            // after round 0.
            assert_eq!(stats.fibers_created, 101, "round {round} made new fibers");
            assert_eq!(stats.stacks_carved, 101, "round {round} carved new stacks");
            assert_eq!(stats.slabs, 2, "round {round}");
            assert_eq!(stats.idle_fibers, 101, "round {round}");
        }
    }

    fn the_newest_idle_fiber_is_taken_first(h) {
        let waiters: Vec<_> = (0..3).map(|_| h.spawn(move |_| ok(h.suspend()))).collect();
        h.spawn(move |_| {
            for c in waiters {
                ok(h.enqueue(c, 0));
            }
        });
        // Fibers 1-3 hold the waiters, 4 the resumer; they park 4, 1, 2, 3.
        ok(h.run());
        h.spawn(move |_| ev(format!("d on fiber {}", h.stats().current_fiber)));
        ok(h.run());
        assert_events(&["d on fiber 3"]);
    }

    fn a_spawn_and_finish_loop_makes_no_system_call_per_coroutine(h) {
        // Each child yields once, so it needs a fiber of its own while the
        // spawner runs on: finished fibers are parked and taken again.
        h.spawn(move |_| {
            for _ in 0..10_000 {
                h.spawn(move |_| ok(h.yield_now()));
                ok(h.yield_now());
            }
        });
        ok(h.run());
        let stats = h.stats();
        assert_eq!(stats.finished, 10_001);
        assert!(stats.fibers_created <= 4, "{stats:?}");
        assert_eq!((stats.stacks_given_back, stats.stack_give_back_calls), (0, 0), "{stats:?}");
        // 200 alive at a time, within the default bound of 256: the same.
        for _ in 0..50 {
            churn(h, 200);
        }
        let stats = h.stats();
        assert_eq!((stats.stacks_given_back, stats.stack_give_back_calls), (0, 0), "{stats:?}");
        assert!(stats.fibers_created <= 205, "{stats:?}");
    }

    fn a_burst_beyond_the_bound_is_given_back_in_batches(h) {
        for round in 1..=3u64 {
            churn(h, 1000);
            let stats = h.stats();
            // The default bound is 256, evicted 32 at a time.
            assert!((225..=256).contains(&stats.idle_fibers), "round {round}: {stats:?}");
            assert_eq!(stats.fibers, stats.idle_fibers);
            // Every fiber made and no longer alive gave its stack back...
            assert_eq!(
                stats.stacks_given_back,
                stats.fibers_created - stats.fibers as u64,
                "round {round}: {stats:?}"
            );
            assert!(stats.stacks_given_back >= round * (1001 - 256), "{stats:?}");
            // ...in batches: the oldest idle fibers are mostly adjacent
            // stacks, so a call gives back many (32 when they all are).
            assert!(
                stats.stack_give_back_calls * 4 <= stats.stacks_given_back,
                "round {round}: {stats:?}"
            );
            // Given-back stacks are reused: nothing is carved after round 1.
            assert_eq!(stats.stacks_carved, 1001, "round {round}");
        }
    }

    fn coroutines_with_a_bigger_stack_get_their_own_fibers(h) {
        let big = Spawn { stack_size: 1 << 20, ..Spawn::default() };
        h.spawn(move |_| ev(format!("small on {}", h.stats().current_fiber)));
        h.spawn_with(big, move |_| {
            // More than the default 256 KiB stack holds.
            let mut buf = [1u8; 400 * 1024];
            std::hint::black_box(&mut buf);
            ev(format!("big on {} {}", h.stats().current_fiber, buf[1000]));
        });
        h.spawn(move |_| ev(format!("small again on {}", h.stats().current_fiber)));
        ok(h.run());
        assert_events(&["small on 1", "big on 2 1", "small again on 2"]);
    }
}

any_order_tests! {
    fn bad_spawn_options_are_rejected(h) {
        let o = AaSpawnOptions {
            struct_size: std::mem::size_of::<AaSpawnOptions>() as u32,
            priority: 7,
            stack_size: 0,
            spawn_file: AaStr::EMPTY,
            spawn_line: 0,
            spawn_column: 0,
        };
        let mut out = std::ptr::null_mut();
        unsafe extern "C" fn never(_: *mut std::ffi::c_void, _: AaStatus) {
            panic!("never runs");
        }
        // SAFETY: a live scheduler; valid options and out pointer.
        let rc = unsafe { h.vt.coroutine_new.unwrap()(h.s, &o, Some(never), std::ptr::null_mut(), &mut out) };
        assert_eq!(rc, AA_E_INVALID);
        assert_eq!(h.last_error(), "invalid coroutine priority 7: expected 0 or 255");
        let o = AaSpawnOptions { priority: 0, stack_size: 100, ..o };
        // SAFETY: as above.
        let rc = unsafe { h.vt.coroutine_new.unwrap()(h.s, &o, Some(never), std::ptr::null_mut(), &mut out) };
        assert_eq!(rc, AA_E_INVALID);
        assert_eq!(
            h.last_error(),
            "invalid coroutine stack size 100: 100 bytes is too small; a stack holds 16384 to \
             1073741824 bytes (16k to 1024m)"
        );
        let o = AaSpawnOptions { stack_size: 2 << 30, ..o };
        // SAFETY: as above.
        let rc = unsafe { h.vt.coroutine_new.unwrap()(h.s, &o, Some(never), std::ptr::null_mut(), &mut out) };
        assert_eq!(rc, AA_E_INVALID);
        assert_eq!(
            h.last_error(),
            "invalid coroutine stack size 2147483648: 2147483648 bytes is too large; a stack holds \
             16384 to 1073741824 bytes (16k to 1024m)"
        );
        // SAFETY: as above.
        let rc = unsafe { h.vt.coroutine_new.unwrap()(h.s, &o, None, std::ptr::null_mut(), &mut out) };
        assert_eq!(rc, AA_E_INVALID);
    }
}

/// Spawns `n` coroutines that all suspend, then resumes them all.
fn churn(h: H, n: usize) {
    let waiters: Vec<_> = (0..n).map(|_| h.spawn(move |_| ok(h.suspend()))).collect();
    h.spawn(move |_| {
        for c in waiters {
            ok(h.enqueue(c, 0));
        }
    });
    ok(h.run());
}

#[test]
fn a_burst_under_stack_prefault_on_runs_on_slabs_the_helper_prepared() {
    for engine in ["context", "corosensei"] {
        with_scheduler(engine, &[("stack_prefault", "on")], |h| {
            // Slab after slab of parked coroutines until one the helper
            // prepared is carved: the helper starts at the eighth slab and
            // finishes a slab while the loop fills another, so this takes a
            // few. The bound (64 slabs, about 40 MiB) only stops a helper
            // that never delivers.
            h.spawn(move |_| {
                let mut waiters = Vec::new();
                while h.stats().stack_slabs_prepared == 0 {
                    assert!(waiters.len() < 64 * 64, "no prepared slab: {:?}", h.stats());
                    for _ in 0..64 {
                        // Each uses 8 KiB of its stack, past the page the
                        // helper populated.
                        waiters.push(h.spawn(move |_| {
                            let mut buf = [0u8; 8 * 1024];
                            std::hint::black_box(&mut buf).fill(7);
                            ok(h.suspend());
                            let sum: u64 =
                                std::hint::black_box(&buf).iter().map(|&b| b as u64).sum();
                            ev(sum.to_string());
                        }));
                    }
                    // A busy machine: let the helper have the CPU if it
                    // waits for one.
                    std::thread::yield_now();
                    // The new ones run to their suspend first (FIFO).
                    ok(h.yield_now());
                }
                ev(format!("waiters {}", waiters.len()));
                for c in waiters {
                    ok(h.enqueue(c, 0));
                }
            });
            ok(h.run());
            let events = crate::host::take_events();
            let n: usize = events[0].strip_prefix("waiters ").unwrap().parse().unwrap();
            assert_eq!(events.len(), n + 1, "{engine}");
            let full = (7 * 8 * 1024).to_string();
            assert!(events[1..].iter().all(|e| e == &full), "{engine}");
            let stats = h.stats();
            assert_eq!(stats.finished as usize, n + 1, "{engine}");
            assert!(
                stats.slabs > 8 && stats.stack_slabs_prepared >= 1,
                "{engine}: {stats:?}"
            );
        });
    }
}

#[test]
fn stack_pool_zero_retires_every_fiber_context() {
    with_scheduler("context", &[("stack_pool", "0")], |h| {
        for _ in 0..5 {
            churn(h, 70);
            let stats = h.stats();
            assert_eq!(stats.idle_fibers, 0);
            assert_eq!(stats.fibers, 0);
            assert_eq!(stats.stacks_in_use, 0);
            assert!(stats.slabs <= 2, "released stacks are reused: {stats:?}");
            // Nothing is kept warm: each retiring fiber gives its own back.
            assert_eq!(stats.stacks_given_back, stats.fibers_created);
            assert_eq!(stats.stack_give_back_calls, stats.fibers_created);
        }
    });
}

#[test]
fn stack_pool_zero_retires_every_fiber_corosensei() {
    with_scheduler("corosensei", &[("stack_pool", "0")], |h| {
        for _ in 0..5 {
            churn(h, 70);
            let stats = h.stats();
            assert_eq!(
                (stats.idle_fibers, stats.fibers, stats.stacks_in_use),
                (0, 0, 0)
            );
            assert!(stats.slabs <= 2, "released stacks are reused: {stats:?}");
            assert_eq!(stats.stacks_given_back, stats.fibers_created);
        }
    });
}

#[test]
fn pool_keeps_at_most_stack_pool_idle_fibers() {
    for engine in ["context", "corosensei"] {
        // Below 8 the pool evicts one fiber at a time: exactly the bound.
        with_scheduler(engine, &[("stack_pool", "3")], |h| {
            churn(h, 10);
            let stats = h.stats();
            assert_eq!(stats.idle_fibers, 3, "{engine}");
            assert_eq!(stats.fibers, 3, "{engine}");
            assert_eq!(stats.stacks_in_use, 3, "{engine}");
            churn(h, 10);
            assert_eq!(h.stats().idle_fibers, 3, "{engine}");
        });
        // The older name sets the same bound.
        with_scheduler(engine, &[("pool_max", "2")], |h| {
            churn(h, 10);
            assert_eq!(h.stats().idle_fibers, 2, "{engine}");
        });
        // 40 evicts 10 at a time: between 31 and 40 stay.
        with_scheduler(engine, &[("stack_pool", "40")], |h| {
            for n in [100, 57, 300] {
                churn(h, n);
                let stats = h.stats();
                assert!(
                    (31..=40).contains(&stats.idle_fibers),
                    "{engine} {n}: {stats:?}"
                );
            }
        });
    }
}
