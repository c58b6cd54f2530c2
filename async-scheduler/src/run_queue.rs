//! The run queue: coroutines waiting for their turn, in a ring buffer.
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
//!   [`Policy::Fifo`] always pops the head. So among normal-priority
//!   coroutines the order is the order of their `enqueue` calls (strict FIFO
//!   hand-off), and a high-priority coroutine runs before any queued earlier.
//!
//! # Who touches what
//!
//! The loop thread only. Each method borrows the ring for its own duration;
//! nothing is called out while it is borrowed, so re-entrant `enqueue` calls
//! (from reactor callbacks, microtasks, handlers) are fine.
//!
//! # Adding a policy
//!
//! A policy only changes [`RunQueue::pop`]: a seeded `chaos` policy picks a
//! random index and swaps it to the head, keeping Q-I1/Q-I2 and making the
//! order reproducible from the seed.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use crate::coroutine::CoroPtr;

/// How the next coroutine is picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Pop the head: FIFO for normal priority, high priority first (Q-I3).
    Fifo,
}

/// The ring of runnable coroutines. See the module doc.
#[derive(Debug)]
pub(crate) struct RunQueue {
    ring: RefCell<VecDeque<CoroPtr>>,
    /// `ring.len()`, readable without a borrow (the tick checks it often).
    len: Cell<usize>,
    policy: Policy,
}

impl RunQueue {
    /// An empty queue with room for `capacity` coroutines before it grows.
    pub(crate) fn new(policy: Policy, capacity: usize) -> RunQueue {
        RunQueue {
            ring: RefCell::new(VecDeque::with_capacity(capacity)),
            len: Cell::new(0),
            policy,
        }
    }

    /// Appends a normal-priority coroutine (Q-I3).
    #[inline]
    pub(crate) fn push_back(&self, c: CoroPtr) {
        self.ring.borrow_mut().push_back(c);
        self.len.set(self.len.get() + 1);
    }

    /// Puts a high-priority coroutine at the head (Q-I3).
    #[inline]
    pub(crate) fn push_front(&self, c: CoroPtr) {
        self.ring.borrow_mut().push_front(c);
        self.len.set(self.len.get() + 1);
    }

    /// Takes the next coroutine to run.
    #[inline]
    pub(crate) fn pop(&self) -> Option<CoroPtr> {
        if self.len.get() == 0 {
            return None;
        }
        let c = match self.policy {
            Policy::Fifo => self.ring.borrow_mut().pop_front(),
        };
        self.len.set(self.ring.borrow().len());
        c
    }

    /// Removes `c` wherever it is (Q-I2); linear, and only needed when a
    /// coroutine finishes while queued.
    pub(crate) fn remove(&self, c: CoroPtr) {
        let mut ring = self.ring.borrow_mut();
        if let Some(i) = ring.iter().position(|&x| x == c) {
            ring.remove(i);
        }
        self.len.set(ring.len());
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
