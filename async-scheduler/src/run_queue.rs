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
//!   [`Policy::Fifo`] always pops the head. So among normal-priority
//!   coroutines the order is the order of their `enqueue` calls (strict FIFO
//!   hand-off), and a high-priority coroutine runs before any queued earlier.
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
//! # Adding a policy
//!
//! A policy only changes [`RunQueue::pop`]: a seeded `chaos` policy picks a
//! random position, walks to it and unlinks it (linear, like `remove`: it
//! is for tests), keeping Q-I1/Q-I2 and making the order reproducible from
//! the seed.

use std::cell::Cell;

use crate::coroutine::CoroPtr;

/// How the next coroutine is picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Pop the head: FIFO for normal priority, high priority first (Q-I3).
    Fifo,
}

/// The runnable coroutines, linked through their records. See the module
/// doc.
#[derive(Debug)]
pub(crate) struct RunQueue {
    head: Cell<Option<CoroPtr>>,
    tail: Cell<Option<CoroPtr>>,
    len: Cell<usize>,
    policy: Policy,
}

impl RunQueue {
    /// An empty queue.
    pub(crate) fn new(policy: Policy) -> RunQueue {
        RunQueue {
            head: Cell::new(None),
            tail: Cell::new(None),
            len: Cell::new(0),
            policy,
        }
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

    /// Takes the next coroutine to run.
    #[inline]
    pub(crate) fn pop(&self) -> Option<CoroPtr> {
        match self.policy {
            Policy::Fifo => {
                let c = self.head.get()?;
                let next = c.get().q_next.take();
                self.head.set(next);
                if next.is_none() {
                    self.tail.set(None);
                }
                self.len.set(self.len.get() - 1);
                Some(c)
            }
        }
    }

    /// Removes `c` wherever it is (Q-I2); linear, and only needed when a
    /// coroutine finishes while queued.
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
