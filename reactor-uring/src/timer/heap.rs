//! A binary min-heap of deadlines with lazy deletion.
//!
//! # What this module owns
//!
//! [`TimerHeap`]: entries `(deadline, sequence, generation, timer)`,
//! ordered by deadline, then by sequence (arming order), and a count of
//! entries known to be stale.
//!
//! # Invariants
//!
//! - **H1** An entry is current when its timer still exists, is armed and
//!   still has the entry's generation; otherwise it is stale and is skipped
//!   when it reaches the top. Re-arming or cancelling a timer only bumps its
//!   generation: O(1), no search.
//! - **H2** When stale entries outnumber current ones (past a small floor),
//!   the heap is rebuilt without them, so a timer re-armed forever cannot
//!   grow the heap forever.
//! - **H3** Sequence numbers are unique and increasing, so equal deadlines
//!   fire in arming order, and an entry pushed during an iteration has a
//!   sequence above that iteration's horizon.
//!
//! # Access
//!
//! Loop thread only, inside the reactor's `RefCell`; nothing here calls the
//! host.
//!
//! # Drop order
//!
//! Entries hold `Weak` references: dropping the heap frees only the
//! entries.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::rc::{Rc, Weak};

use crate::event::{Event, State};

/// One deadline.
#[derive(Debug)]
struct Entry {
    deadline: u64,
    sequence: u64,
    generation: u64,
    timer: Weak<Event>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> Ordering {
        (self.deadline, self.sequence).cmp(&(other.deadline, other.sequence))
    }
}

impl Entry {
    /// The timer, if the entry is current (H1).
    fn current(&self) -> Option<Rc<Event>> {
        let timer = self.timer.upgrade()?;
        let current = matches!(&*timer.state.borrow(),
            State::Timer(t) if t.armed && t.generation == self.generation);
        current.then_some(timer)
    }
}

/// The deadlines of every armed timer (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct TimerHeap {
    heap: BinaryHeap<Reverse<Entry>>,
    sequence: u64,
    stale: usize,
}

impl TimerHeap {
    /// Adds a deadline for `timer` at `generation`.
    pub(crate) fn push(&mut self, timer: &Rc<Event>, deadline: u64, generation: u64) {
        self.sequence += 1;
        self.heap.push(Reverse(Entry {
            deadline,
            sequence: self.sequence,
            generation,
            timer: Rc::downgrade(timer),
        }));
    }

    /// Records that one entry became stale, compacting if needed (H2).
    pub(crate) fn note_stale(&mut self) {
        self.stale += 1;
        if self.stale > 64 && self.stale * 2 > self.heap.len() {
            let entries = std::mem::take(&mut self.heap).into_vec();
            self.heap = entries
                .into_iter()
                .filter(|Reverse(e)| e.current().is_some())
                .collect();
            self.stale = 0;
        }
    }

    /// The earliest current deadline, dropping stale entries on the way.
    pub(crate) fn next_deadline(&mut self) -> Option<u64> {
        while let Some(Reverse(top)) = self.heap.peek() {
            if top.current().is_some() {
                return Some(top.deadline);
            }
            self.heap.pop();
            self.stale = self.stale.saturating_sub(1);
        }
        None
    }

    /// The sequence of the latest entry: entries pushed after this call
    /// have a greater one (H3).
    pub(crate) fn horizon(&self) -> u64 {
        self.sequence
    }

    /// Removes and returns the earliest current timer if it is due at `now`
    /// and was pushed at or before `horizon`, with its deadline.
    pub(crate) fn pop_due(&mut self, now: u64, horizon: u64) -> Option<(Rc<Event>, u64)> {
        let deadline = self.next_deadline()?;
        let sequence = self.heap.peek()?.0.sequence;
        if deadline > now || sequence > horizon {
            return None;
        }
        let Reverse(entry) = self.heap.pop()?;
        Some((entry.current()?, deadline))
    }

    /// Drops every entry (`destroy`).
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
        self.stale = 0;
    }
}
