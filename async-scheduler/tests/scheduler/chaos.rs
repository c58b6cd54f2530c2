//! The chaos policy: determinism (the same seed gives the same trace,
//! different seeds give different traces, as Trio's
//! `test_scheduler_determinism`), every coroutine still runs exactly once,
//! high priority still goes first, and the option's errors.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use async_abi::*;

use crate::host::{assert_events, ev, ok, take_events, take_log, try_create, with_scheduler};
use crate::host::{Spawn, H};
use crate::stress::{scenario, Policy};

/// The workload every determinism test replays: `stress.rs`'s seeded
/// workload (yields, waits, wake-ups with statuses, spawns, microtasks,
/// reactor wake-ups, deadlocks) with workload seed 7.
const WORKLOAD: u64 = 7;

fn trace(engine: &str, policy: Policy) -> Vec<String> {
    scenario(engine, "1024", policy, WORKLOAD).trace
}

#[test]
fn the_same_seed_gives_the_same_trace() {
    let first = trace("context", Policy::Chaos(42));
    assert!(first.len() > 200, "a workload with many interleavings");
    for run in 1..10 {
        assert_eq!(
            trace("context", Policy::Chaos(42)),
            first,
            "run {run} of seed 42"
        );
    }
    // The engine switches stacks; it does not choose: the same seed picks
    // the same order under both.
    assert_eq!(trace("corosensei", Policy::Chaos(42)), first);
}

#[test]
fn different_seeds_give_different_traces() {
    let fifo = trace("context", Policy::Fifo);
    let traces: Vec<Vec<String>> = (1..=10)
        .map(|seed| trace("context", Policy::Chaos(seed)))
        .collect();
    let distinct: BTreeSet<&Vec<String>> = traces.iter().collect();
    eprintln!("{} distinct traces of 10 seeds", distinct.len());
    assert!(
        distinct.len() >= 9,
        "{} distinct traces of 10 seeds",
        distinct.len()
    );
    assert!(
        traces.iter().all(|t| *t != fifo),
        "a chaos trace equal to FIFO's"
    );
}

#[test]
fn the_seed_is_ignored_under_fifo() {
    let fifo = with_options(&[]);
    assert_eq!(&fifo[..3], ["0.0", "1.0", "2.0"]);
    assert_eq!(with_options(&[("seed", "99")]), fifo);
    assert_ne!(with_options(&[("policy", "chaos"), ("seed", "99")]), fifo);
}

/// A small fixed workload's order under `options`: 8 coroutines that yield
/// twice each.
fn with_options(options: &[(&str, &str)]) -> Vec<String> {
    with_scheduler("context", options, |h| {
        for i in 0..8 {
            h.spawn(move |_| {
                for step in 0..3 {
                    ev(format!("{i}.{step}"));
                    ok(h.yield_flag());
                }
            });
        }
        ok(h.run());
    });
    take_events()
}

#[test]
fn chaos_runs_every_coroutine_exactly_once_to_completion() {
    for seed in 1..=20u64 {
        let runs: Rc<RefCell<Vec<u32>>> = Rc::new(RefCell::new(vec![0; 200]));
        let seed_text = seed.to_string();
        with_scheduler(
            "context",
            &[("policy", "chaos"), ("seed", &seed_text)],
            |h| {
                for i in 0..100 {
                    let runs = runs.clone();
                    h.spawn(move |_| {
                        runs.borrow_mut()[i] += 1;
                        for _ in 0..i % 4 {
                            ok(h.yield_flag());
                        }
                        // A child, spawned late, also runs once.
                        let runs = runs.clone();
                        h.spawn(move |_| runs.borrow_mut()[100 + i] += 1);
                        if i % 5 == 0 {
                            // Finishes while queued: removed from the queue.
                            ok(h.enqueue(h.current(), 0));
                        }
                    });
                }
                ok(h.run());
                assert_eq!(h.stats().finished, 200);
                assert_eq!(h.stats().queued, 0);
                assert_eq!(h.stats().chaos_seed, Some(seed));
            },
        );
        assert!(
            runs.borrow().iter().all(|&n| n == 1),
            "seed {seed}: {:?}",
            runs.borrow()
        );
    }
}

#[test]
fn high_priority_still_runs_before_normal_priority() {
    let mut orders = BTreeSet::new();
    for seed in 1..=10u64 {
        let seed_text = seed.to_string();
        with_scheduler(
            "context",
            &[("policy", "chaos"), ("seed", &seed_text)],
            |h| {
                h.spawn(move |_| {
                    let high = Spawn {
                        priority: AA_PRIORITY_HIGH,
                        ..Spawn::default()
                    };
                    for i in 0..4 {
                        h.spawn(move |_| ev(format!("normal {i}")));
                        h.spawn_with(high, move |_| {
                            ev(format!("high {i}"));
                            // A yielding high-priority coroutine stays ahead.
                            ok(h.yield_flag());
                            ev(format!("high {i} again"));
                        });
                    }
                });
                ok(h.run());
            },
        );
        let events = take_events();
        let first_normal = events.iter().position(|e| e.starts_with("normal")).unwrap();
        assert!(
            events[first_normal..]
                .iter()
                .all(|e| e.starts_with("normal")),
            "seed {seed}: {events:?}"
        );
        assert_eq!(first_normal, 8, "seed {seed}: {events:?}");
        orders.insert(events);
    }
    assert!(
        orders.len() >= 5,
        "only {} orders among equals in 10 seeds",
        orders.len()
    );
}

#[test]
fn microtasks_stay_fifo_under_chaos() {
    with_scheduler("context", &[("policy", "chaos"), ("seed", "5")], |h| {
        h.spawn(move |_| {
            for i in 0..10 {
                h.defer(move || ev(format!("m{i}")));
            }
            ok(h.yield_flag());
        });
        ok(h.run());
        assert_events(&["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"]);
    });
}

#[test]
fn a_random_seed_is_drawn_and_logged() {
    let h = try_create(&[("policy", "chaos"), ("seed", "random")], 0).expect("valid options");
    let seed = h.stats().chaos_seed.expect("a chaos seed");
    let log = take_log(AA_LOG_DEBUG);
    let line = format!(
        "chaos policy, seed {seed} (replay with ASYNC_SCHEDULER=chaos \
         ASYNC_SCHEDULER_OPTIONS=seed={seed})"
    );
    assert!(log.contains(&line), "{log:?}");
    crate::host::finish(h);
    let h = try_create(&[("policy", "fifo"), ("seed", "3")], 0).expect("valid options");
    assert_eq!(h.stats().chaos_seed, None);
    crate::host::finish(h);
}

/// 100,000 coroutines suspended at once under chaos: the resumer waits
/// (yielding) until all have suspended, since chaos may run it first. Picks
/// are O(1), so this takes about as long as under FIFO.
fn hundred_thousand(h: H) {
    const N: usize = 100_000;
    let suspended = Rc::new(Cell::new(0usize));
    let waiters: Vec<_> = (0..N)
        .map(|_| {
            let suspended = suspended.clone();
            h.spawn(move |_| {
                suspended.set(suspended.get() + 1);
                assert_eq!(h.suspend(), 1);
            })
        })
        .collect();
    h.spawn(move |_| {
        while suspended.get() < N {
            ok(h.yield_flag());
        }
        assert_eq!(h.stats().stacks_in_use, N + 1);
        for c in waiters {
            ok(h.enqueue(c, 1));
        }
    });
    ok(h.run());
    assert_eq!(h.stats().finished as usize, N + 1);
}

#[test]
fn hundred_thousand_coroutines_suspend_at_once_under_chaos() {
    with_scheduler(
        "context",
        &[("policy", "chaos"), ("seed", "11")],
        hundred_thousand,
    );
}
