//! Seeded random workloads: coroutines yield, wait, wake each other, spawn,
//! defer microtasks and wait on the reactor, under both engines, both
//! policies and several pool sizes. Checks that every coroutine's entry runs
//! exactly once and finishes, whatever the interleaving, and that the pool
//! stays in bounds. Each run also records a trace (which coroutine did what,
//! in order), which `chaos.rs` compares across seeds.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use async_abi::*;

use crate::host::{ok, with_scheduler, Co, H};

struct World {
    h: H,
    rng: Cell<u64>,
    waiters: RefCell<Vec<Co>>,
    started: Cell<u32>,
    finished: Cell<u32>,
    spawn_budget: Cell<u32>,
    /// What happened, in order: `"<coroutine id> <action>"`.
    trace: RefCell<Vec<String>>,
}

impl World {
    fn next(&self, n: u64) -> u64 {
        // xorshift64*
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }

    fn wake_one(&self) {
        let len = self.waiters.borrow().len();
        if len > 0 {
            let i = self.next(len as u64) as usize;
            let c = self.waiters.borrow_mut().swap_remove(i);
            let status = if self.next(4) == 0 { AA_E_CANCELLED } else { 0 };
            self.log(format_args!("wakes {}", self.h.id(c)));
            ok(self.h.enqueue(c, status));
        }
    }

    /// Records what the current coroutine does (`-` outside coroutines).
    fn log(&self, what: std::fmt::Arguments<'_>) {
        let me = self.h.current();
        let who = if me.0.is_null() {
            "-".to_owned()
        } else {
            self.h.id(me).to_string()
        };
        self.trace.borrow_mut().push(format!("{who} {what}"));
    }
}

fn body(w: Rc<World>, status: AaStatus) {
    w.started.set(w.started.get() + 1);
    w.log(format_args!("starts with {status}"));
    let h = w.h;
    let steps = 1 + w.next(12);
    for _ in 0..steps {
        match w.next(7) {
            0 => {
                let status = h.yield_now();
                w.log(format_args!("yielded: {status}"));
            }
            1 | 2 => {
                let me = h.current();
                w.waiters.borrow_mut().push(me);
                let status = h.suspend();
                w.log(format_args!("woke: {status}"));
                // Woken by a deadlock or shutdown round: not by a peer.
                w.waiters.borrow_mut().retain(|&c| c != me);
            }
            3 => w.wake_one(),
            4 => {
                if w.spawn_budget.get() > 0 {
                    w.spawn_budget.set(w.spawn_budget.get() - 1);
                    let w2 = w.clone();
                    let c = h.spawn(move |status| body(w2, status));
                    w.log(format_args!("spawns {}", h.id(c)));
                }
            }
            5 => {
                let w2 = w.clone();
                h.defer(move || w2.wake_one());
            }
            _ => {
                let me = h.current();
                h.wake_after(1 + w.next(3), me, 0);
                let status = h.suspend();
                w.log(format_args!("reactor woke: {status}"));
            }
        }
    }
    // Leave nobody behind who only this one would have woken.
    w.wake_one();
    w.finished.set(w.finished.get() + 1);
    w.log(format_args!("finishes"));
}

/// A scheduling policy for [`scenario`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Policy {
    Fifo,
    /// `policy=chaos` with this seed.
    Chaos(u64),
}

/// What one run of [`scenario`] did.
pub(crate) struct Outcome {
    /// `run` resolved a deadlock.
    pub(crate) deadlocked: bool,
    /// Every coroutine's actions, in the order they happened.
    pub(crate) trace: Vec<String>,
}

/// Runs one workload, `seed` choosing what the coroutines do (not the
/// schedule: that is `policy`'s), and checks that every coroutine ran once
/// and finished.
pub(crate) fn scenario(engine: &str, stack_pool: &str, policy: Policy, seed: u64) -> Outcome {
    let outcome = RefCell::new(None);
    let chaos_seed;
    let mut options = vec![("stack_pool", stack_pool)];
    if let Policy::Chaos(s) = policy {
        chaos_seed = s.to_string();
        options.extend([("policy", "chaos"), ("seed", chaos_seed.as_str())]);
    }
    with_scheduler(engine, &options, |h| {
        let w = Rc::new(World {
            h,
            rng: Cell::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            waiters: RefCell::default(),
            started: Cell::new(0),
            finished: Cell::new(0),
            spawn_budget: Cell::new(60),
            trace: RefCell::default(),
        });
        for _ in 0..20 {
            let w2 = w.clone();
            h.spawn(move |status| body(w2, status));
        }
        let rc = h.run();
        assert!(
            rc == AA_OK || rc == AA_E_DEADLOCK,
            "seed {seed}, {policy:?}: run returned {rc}"
        );
        let spawned = 20 + 60 - w.spawn_budget.get();
        assert_eq!(w.started.get(), spawned, "seed {seed}, {policy:?}");
        assert_eq!(w.finished.get(), spawned, "seed {seed}, {policy:?}");
        let stats = h.stats();
        assert_eq!(stats.finished as u32, spawned);
        let max: usize = stack_pool.parse().unwrap();
        assert!(stats.idle_fibers <= max, "seed {seed}: {stats:?}");
        assert_eq!(
            stats.fibers, stats.idle_fibers,
            "seed {seed}: busy fibers left"
        );
        assert_eq!(stats.stacks_in_use, stats.fibers, "seed {seed}");
        crate::host::take_log(AA_LOG_TRACE);
        *outcome.borrow_mut() = Some(Outcome {
            deadlocked: rc == AA_E_DEADLOCK,
            trace: w.trace.take(),
        });
    });
    outcome.into_inner().expect("the workload ran")
}

/// Runs the seeds; the mix must include runs that ended in a deadlock (so
/// resolution and escalation are exercised) and runs that did not. Under
/// chaos, the scheduler's seed is the workload's.
fn all_seeds(engine: &str, chaos: bool) {
    let mut deadlocks = 0;
    for seed in 1..=40 {
        let policy = if chaos {
            Policy::Chaos(seed)
        } else {
            Policy::Fifo
        };
        // No pool, one, one evicted in batches of 2, one never full.
        for stack_pool in ["0", "1", "8", "1024"] {
            deadlocks += scenario(engine, stack_pool, policy, seed).deadlocked as u32;
        }
    }
    assert!(
        0 < deadlocks && deadlocks < 160,
        "{deadlocks} of 160 runs deadlocked"
    );
}

#[test]
fn random_workloads_finish_every_coroutine_context() {
    all_seeds("context", false);
}

#[test]
fn random_workloads_finish_every_coroutine_corosensei() {
    all_seeds("corosensei", false);
}

#[test]
fn random_workloads_finish_every_coroutine_chaos_context() {
    all_seeds("context", true);
}

#[test]
fn random_workloads_finish_every_coroutine_chaos_corosensei() {
    all_seeds("corosensei", true);
}
