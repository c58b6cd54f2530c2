//! A min-heap of deadlines with lazy deletion.
//!
//! # What this module owns
//!
//! [`TimerHeap`]: entries `(deadline, sequence, generation, timer)`, ordered
//! by deadline, then by sequence (the order they were armed in), and a count
//! of entries known to be stale.
//!
//! # Invariants
//!
//! - **H1** An entry is current when its timer still exists and still has
//!   the entry's generation and is armed; otherwise it is stale and is
//!   skipped when it reaches the top. Re-arming or cancelling a timer only
//!   bumps its generation: O(1), no search.
//! - **H2** `stale` never exceeds the number of entries. When it grows past
//!   half of them (and past a small floor), the heap is rebuilt without
//!   stale entries, so a timer re-armed forever cannot grow the heap
//!   forever.
//! - **H3** Sequence numbers are unique and increasing, so equal deadlines
//!   fire in arming order.
//!
//! # Access
//!
//! Loop thread only, inside the reactor's `RefCell`; nothing here calls the
//! host.
//!
//! # Drop order
//!
//! Entries hold `Weak` references, so dropping the heap frees nothing but
//! the entries themselves.

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
        let current = match &*timer.state.borrow() {
            State::Timer(t) => t.armed && t.generation == self.generation,
            _ => false,
        };
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

    /// Records that one entry became stale (H2), compacting if needed.
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

    /// The sequence number of the latest entry: entries pushed after this
    /// call have a greater one.
    pub(crate) fn horizon(&self) -> u64 {
        self.sequence
    }

    /// Removes and returns the earliest current timer if its deadline is at
    /// or before `now` and it was pushed at or before `horizon`, with that
    /// deadline.
    pub(crate) fn pop_due(&mut self, now: u64, horizon: u64) -> Option<(Rc<Event>, u64)> {
        let deadline = self.next_deadline()?;
        let sequence = self.heap.peek()?.0.sequence;
        if deadline > now || sequence > horizon {
            return None;
        }
        let Reverse(entry) = self.heap.pop()?;
        Some((entry.current()?, deadline))
    }

    /// Number of entries, stale ones included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Drops every entry (`destroy`).
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
        self.stale = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bump(timer: &Event) -> u64 {
        match &mut *timer.state.borrow_mut() {
            State::Timer(t) => {
                t.generation += 1;
                t.generation
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn due_timers_pop_by_deadline_then_arming_order() {
        let mut heap = TimerHeap::default();
        let (a, b, c) = (
            Event::test_timer(20),
            Event::test_timer(10),
            Event::test_timer(10),
        );
        heap.push(&a, 20, 0);
        heap.push(&b, 10, 0);
        heap.push(&c, 10, 0);
        let horizon = heap.horizon();
        assert_eq!(heap.next_deadline(), Some(10));
        let order: Vec<_> = std::iter::from_fn(|| heap.pop_due(20, horizon))
            .map(|(ev, deadline)| (Rc::as_ptr(&ev), deadline))
            .collect();
        assert_eq!(
            order,
            vec![
                (Rc::as_ptr(&b), 10),
                (Rc::as_ptr(&c), 10),
                (Rc::as_ptr(&a), 20)
            ]
        );
    }

    #[test]
    fn entries_past_the_horizon_wait_for_the_next_pass() {
        let mut heap = TimerHeap::default();
        let a = Event::test_timer(5);
        let horizon = heap.horizon();
        heap.push(&a, 5, 0);
        assert!(heap.pop_due(10, horizon).is_none());
        assert!(heap.pop_due(10, heap.horizon()).is_some());
    }

    #[test]
    fn stale_and_dropped_entries_are_skipped_and_compacted() {
        let mut heap = TimerHeap::default();
        let t = Event::test_timer(1);
        for i in 0..200 {
            heap.push(&t, 1000 + i, bump(&t));
            if i > 0 {
                heap.note_stale();
            }
        }
        assert!(heap.len() < 200, "never compacted: {}", heap.len());
        assert_eq!(heap.next_deadline(), Some(1199));
        let gone = Event::test_timer(1);
        heap.push(&gone, 1, 0);
        drop(gone);
        assert_eq!(heap.next_deadline(), Some(1199));
    }
}
