//! The run queue: coroutines waiting for their turn, linked through their
//! records.
//!
//! # What it owns
//!
//! Pointers to queued coroutine records (not the records: the live list owns
//! those, `coroutine/mod.rs`).
//!
//! # Invariants
//!
//! - **Q-I1** A coroutine is in the queue at most once: `enqueue` pushes only
//!   on the CREATED/SUSPENDED -> QUEUED transition, or when the running
//!   coroutine is queued for its next suspension (its `in_queue` flag).
//! - **Q-I2** Every pointer in the queue is a live record: a coroutine that
//!   finishes while queued (queued itself, then returned) is removed before
//!   its record is freed.
//! - **Q-I3** Normal priority pushes at the tail, high priority at the head;
//!   [`RunQueue::pop`] always pops the head. So among normal-priority
//!   coroutines the order is the order of their `enqueue` calls (strict FIFO
//!   hand-off), and a high-priority coroutine runs before any queued earlier.
//!   [`Policy::Chaos`] keeps the first half (high before normal) and picks at
//!   random among equals (`chaos.rs`, X-I1..X-I4).
//! - **Q-I4** `q_next` of a queued coroutine names the one after it (`None`
//!   for the tail); `q_next` of a coroutine that is not queued is `None`.
//!
//! # How it is stored
//!
//! Intrusively: each coroutine record has a `q_next` link, and the queue
//! keeps the head, the tail and the length in `Cell`s. Push and pop are a
//! few loads and stores, never allocate, and never borrow a `RefCell`, so
//! the tick's pop touches only the record it is about to switch to.
//!
//! # Who touches what
//!
//! The loop thread only. Each method finishes its link updates before it
//! returns and calls nothing out, so re-entrant `enqueue` calls (from
//! reactor callbacks, microtasks, handlers) always find a consistent list.
//!
//! # Policies
//!
//! Pushes and [`RunQueue::pop`] are the same list operations under every
//! policy, so FIFO's fast path has no policy test at all. Under
//! [`Policy::Chaos`] the tick calls [`RunQueue::chaos_pick`] (out of line)
//! right before every pop, which moves the list into the chaos bags and
//! puts a random pick back as the head; `remove` never needs to look in
//! the bags (X-I5).
//! How the tick reaches `chaos_pick` without a test on FIFO's path is in
//! `tick.rs` ("Why this order").

use std::cell::Cell;

use crate::chaos::Chaos;
use crate::coroutine::CoroPtr;

/// How the next coroutine is picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Pop the head: FIFO for normal priority, high priority first (Q-I3).
    Fifo,
    /// A seeded random pick among the runnable coroutines of the highest
    /// priority present (`chaos.rs`).
    Chaos,
}

/// The runnable coroutines, linked through their records. See the module
/// doc.
#[derive(Debug)]
pub(crate) struct RunQueue {
    head: Cell<Option<CoroPtr>>,
    tail: Cell<Option<CoroPtr>>,
    len: Cell<usize>,
    /// The chaos policy's state; `None` under FIFO.
    chaos: Option<Box<Chaos>>,
}

impl RunQueue {
    /// An empty queue; `seed` is used by [`Policy::Chaos`] only.
    pub(crate) fn new(policy: Policy, seed: u64) -> RunQueue {
        RunQueue {
            head: Cell::new(None),
            tail: Cell::new(None),
            len: Cell::new(0),
            chaos: match policy {
                Policy::Fifo => None,
                Policy::Chaos => Some(Box::new(Chaos::new(seed))),
            },
        }
    }

    /// The chaos seed, if the policy is chaos.
    pub(crate) fn chaos_seed(&self) -> Option<u64> {
        self.chaos.as_ref().map(|c| c.seed())
    }

    /// Appends a normal-priority coroutine (Q-I3).
    #[inline]
    pub(crate) fn push_back(&self, c: CoroPtr) {
        // Q-I4: `c` is not queued (Q-I1), so its link is already `None`.
        match self.tail.replace(Some(c)) {
            Some(t) => t.get().q_next.set(Some(c)),
            None => self.head.set(Some(c)),
        }
        self.len.set(self.len.get() + 1);
    }

    /// Puts a high-priority coroutine at the head (Q-I3).
    #[inline]
    pub(crate) fn push_front(&self, c: CoroPtr) {
        let old = self.head.replace(Some(c));
        c.get().q_next.set(old);
        if old.is_none() {
            self.tail.set(Some(c));
        }
        self.len.set(self.len.get() + 1);
    }

    /// Takes the next coroutine to run: the head (Q-I3). Under
    /// [`Policy::Chaos`] the tick has just made the head a random pick
    /// ([`RunQueue::chaos_pick`]), so this pop is the same for both.
    #[inline]
    pub(crate) fn pop(&self) -> Option<CoroPtr> {
        let c = self.head.get()?;
        let next = c.get().q_next.take();
        self.head.set(next);
        if next.is_none() {
            self.tail.set(None);
        }
        self.len.set(self.len.get() - 1);
        Some(c)
    }

    /// [`Policy::Chaos`]: moves the list into the bags (X-I1), then puts a
    /// random pick (X-I2) back as the list's only member, so the next
    /// [`RunQueue::pop`] takes it. Does nothing under FIFO.
    #[cold]
    #[inline(never)]
    pub(crate) fn chaos_pick(&self) {
        let Some(chaos) = &self.chaos else { return };
        let mut at = self.head.take();
        self.tail.set(None);
        while let Some(c) = at {
            at = c.get().q_next.take();
            chaos.absorb(c);
        }
        if let Some(c) = chaos.pick() {
            // Q-I4: `pick` returned it with `q_next` cleared.
            self.head.set(Some(c));
            self.tail.set(Some(c));
        }
    }

    /// Removes `c` from the list (Q-I2); linear, and only needed when a
    /// coroutine finishes while queued. Such a coroutine queued itself
    /// during its last run, so it is still in the list, never in a chaos bag
    /// (X-I5).
    pub(crate) fn remove(&self, c: CoroPtr) {
        let mut prev: Option<CoroPtr> = None;
        let mut at = self.head.get();
        while let Some(x) = at {
            let next = x.get().q_next.get();
            if x == c {
                match prev {
                    Some(p) => p.get().q_next.set(next),
                    None => self.head.set(next),
                }
                if next.is_none() {
                    self.tail.set(prev);
                }
                c.get().q_next.set(None);
                self.len.set(self.len.get() - 1);
                return;
            }
            prev = at;
            at = next;
        }
    }

    /// Whether nothing is runnable.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.get() == 0
    }

    /// How many coroutines are queued.
    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }
}
