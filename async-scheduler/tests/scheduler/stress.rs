//! Seeded random workloads: coroutines yield, wait, wake each other, spawn,
//! defer microtasks and wait on the reactor, under both engines and several
//! pool sizes. Checks that every coroutine's entry runs exactly once and
//! finishes, whatever the interleaving, and that the pool stays in bounds.

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
            ok(self.h.enqueue(c, status));
        }
    }
}

fn body(w: Rc<World>) {
    w.started.set(w.started.get() + 1);
    let h = w.h;
    let steps = 1 + w.next(12);
    for _ in 0..steps {
        match w.next(7) {
            0 => {
                let _ = h.yield_now();
            }
            1 | 2 => {
                let me = h.current();
                w.waiters.borrow_mut().push(me);
                let _ = h.suspend();
                // Woken by a deadlock or shutdown round: not by a peer.
                w.waiters.borrow_mut().retain(|&c| c != me);
            }
            3 => w.wake_one(),
            4 => {
                if w.spawn_budget.get() > 0 {
                    w.spawn_budget.set(w.spawn_budget.get() - 1);
                    let w2 = w.clone();
                    h.spawn(move |_| body(w2));
                }
            }
            5 => {
                let w2 = w.clone();
                h.defer(move || w2.wake_one());
            }
            _ => {
                let me = h.current();
                h.wake_after(1 + w.next(3), me, 0);
                let _ = h.suspend();
            }
        }
    }
    // Leave nobody behind who only this one would have woken.
    w.wake_one();
    w.finished.set(w.finished.get() + 1);
}

/// Runs one seeded workload; returns whether `run` resolved a deadlock.
fn scenario(engine: &str, pool_max: &str, seed: u64) -> bool {
    let deadlocked = Cell::new(false);
    with_scheduler(engine, &[("pool_max", pool_max)], |h| {
        let w = Rc::new(World {
            h,
            rng: Cell::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            waiters: RefCell::default(),
            started: Cell::new(0),
            finished: Cell::new(0),
            spawn_budget: Cell::new(60),
        });
        for _ in 0..20 {
            let w2 = w.clone();
            h.spawn(move |_| body(w2));
        }
        let rc = h.run();
        assert!(
            rc == AA_OK || rc == AA_E_DEADLOCK,
            "seed {seed}: run returned {rc}"
        );
        deadlocked.set(rc == AA_E_DEADLOCK);
        let spawned = 20 + 60 - w.spawn_budget.get();
        assert_eq!(w.started.get(), spawned, "seed {seed}");
        assert_eq!(w.finished.get(), spawned, "seed {seed}");
        let stats = h.stats();
        assert_eq!(stats.finished as u32, spawned);
        let max: usize = pool_max.parse().unwrap();
        assert!(stats.idle_fibers <= max, "seed {seed}: {stats:?}");
        assert_eq!(
            stats.fibers, stats.idle_fibers,
            "seed {seed}: busy fibers left"
        );
        assert_eq!(stats.stacks_in_use, stats.fibers, "seed {seed}");
        crate::host::take_log(AA_LOG_TRACE);
    });
    deadlocked.get()
}

/// Runs the seeds; the mix must include runs that ended in a deadlock (so
/// resolution and escalation are exercised) and runs that did not.
fn all_seeds(engine: &str) {
    let mut deadlocks = 0;
    for seed in 1..=40 {
        for pool_max in ["0", "1", "1024"] {
            deadlocks += scenario(engine, pool_max, seed) as u32;
        }
    }
    assert!(
        0 < deadlocks && deadlocks < 120,
        "{deadlocks} of 120 runs deadlocked"
    );
}

#[test]
fn random_workloads_finish_every_coroutine_context() {
    all_seeds("context");
}

#[test]
fn random_workloads_finish_every_coroutine_corosensei() {
    all_seeds("corosensei");
}
