//! The chaos policy: the run queue's pick made by a seeded pseudo-random
//! choice among the runnable coroutines, to shake out code that relies on an
//! order the RFC does not promise.
//!
//! # What it owns
//!
//! The seeded generator (splitmix64) and two *bags* of queued coroutine
//! pointers, one per priority. The run queue pushes into its intrusive list
//! as under FIFO (so `enqueue` does not know the policy). Before every pop,
//! the tick has the queue move its whole list into the bags
//! ([`Chaos::absorb`]) and put back, as the list's only member, a random
//! member of the high-priority bag, or of the normal one when that is empty
//! ([`Chaos::pick`]); the pop then takes it.
//!
//! # Invariants
//!
//! - **X-I1** A queued coroutine is in exactly one of: the run queue's
//!   intrusive list, the high bag, the normal bag (Q-I1 holds across the
//!   three). Moving it from the list to a bag clears its `q_next` (Q-I4), a
//!   bag member's `q_next` is `None`, and the queue's length counts all
//!   three.
//! - **X-I2** The high bag holds only `AA_PRIORITY_HIGH` coroutines and is
//!   emptied before the normal bag is touched: high priority still runs
//!   before normal priority, and the two policies differ only in the order
//!   among equals (Q-I3 keeps its first half).
//! - **X-I3** The sequence of picks is a function of the seed and the
//!   sequence of queue operations alone (no addresses, clocks or hashes),
//!   so a deterministic workload replays exactly from its seed. A bag of one
//!   costs no draw, so the generator advances only on real choices.
//! - **X-I4** Every queued coroutine is picked with the same probability,
//!   whatever its age: no coroutine is starved (each pick takes it with
//!   probability 1/n).
//! - **X-I5** A coroutine in a bag is not running. The bags are filled only
//!   by the pick in the tick's slow path, which runs when no coroutine runs
//!   (`current` is `None`: a suspending coroutine is QUEUED or SUSPENDED
//!   by then). So a coroutine that finishes while queued (it queued itself
//!   during its last run, after the last pick) is still in the list, where
//!   `RunQueue::remove` finds it: no bag is searched, and no record in a
//!   bag is ever released (Q-I2, coroutine C-I1).
//!
//! # Who touches what
//!
//! The loop thread only, through the run queue (`run_queue.rs`). Each
//! method borrows a bag for one leaf operation and calls nothing out
//! (scheduler SR1).
//!
//! # Cost
//!
//! Nothing under FIFO: the queue holds no `Chaos`, pushes and pops are the
//! same instructions as before the policy existed, and the tick reaches the
//! pick through the slow path it already had (`tick.rs`, "Why this
//! order"). Under chaos a pick is amortised O(1) (a move into a bag and a
//! `swap_remove`).

use std::cell::{Cell, RefCell};

use async_abi::AA_PRIORITY_HIGH;

use crate::coroutine::CoroPtr;

/// The seed used when `policy = chaos` is given without `seed`.
pub(crate) const DEFAULT_SEED: u64 = 0;

/// How the `seed` option was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seed {
    /// `seed = <u64>` (or the default, [`DEFAULT_SEED`]).
    Fixed(u64),
    /// `seed = random`: derived from the clock when the scheduler is made,
    /// and logged so a failing run can be replayed.
    Random,
}

impl Seed {
    /// The seed to use: a fixed one as given, a random one from the clock
    /// and the process id.
    pub(crate) fn resolve(self) -> u64 {
        match self {
            Seed::Fixed(seed) => seed,
            Seed::Random => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                let mut mix = SplitMix64(nanos ^ u64::from(std::process::id()).rotate_left(32));
                mix.next_u64()
            }
        }
    }
}

/// splitmix64 (Steele, Lea, Flood 2014): one add and a finaliser per draw,
/// good enough to shuffle a run queue, and well known, so a pick sequence
/// is easy to reproduce outside this crate.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`), by Lemire's multiply-shift (the bias
    /// is below 2^-40 for any queue that fits in memory).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// The chaos policy's state. See the module doc.
#[derive(Debug)]
pub(crate) struct Chaos {
    seed: u64,
    rng: Cell<u64>,
    high: RefCell<Vec<CoroPtr>>,
    normal: RefCell<Vec<CoroPtr>>,
}

impl Chaos {
    /// A chaos pick seeded with `seed` (already resolved).
    pub(crate) fn new(seed: u64) -> Chaos {
        Chaos {
            seed,
            rng: Cell::new(seed),
            high: RefCell::default(),
            normal: RefCell::default(),
        }
    }

    /// The seed this policy started from.
    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    /// Takes `c`, just unlinked from the queue's list, into its bag (X-I1).
    pub(crate) fn absorb(&self, c: CoroPtr) {
        if c.get().priority == AA_PRIORITY_HIGH {
            self.high.borrow_mut().push(c);
        } else {
            self.normal.borrow_mut().push(c);
        }
    }

    /// A random member of the high bag, else of the normal bag (X-I2), or
    /// `None` when both are empty.
    pub(crate) fn pick(&self) -> Option<CoroPtr> {
        let mut high = self.high.borrow_mut();
        let mut normal = self.normal.borrow_mut();
        let bag = if high.is_empty() {
            &mut *normal
        } else {
            &mut *high
        };
        match bag.len() {
            0 => None,
            1 => bag.pop(),
            n => {
                let mut rng = SplitMix64(self.rng.get());
                let i = rng.below(n);
                self.rng.set(rng.0);
                Some(bag.swap_remove(i))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // The first outputs of the reference C implementation for seed 0.
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = SplitMix64(7);
        let mut seen = [false; 5];
        for _ in 0..200 {
            let i = r.below(5);
            assert!(i < 5);
            seen[i] = true;
        }
        assert_eq!(seen, [true; 5]);
    }

    #[test]
    fn a_random_seed_is_not_the_same_twice() {
        let a = Seed::Random.resolve();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert_ne!(a, Seed::Random.resolve());
        assert_eq!(Seed::Fixed(42).resolve(), 42);
    }
}
