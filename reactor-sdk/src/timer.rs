//! A min-heap of deadlines with lazy deletion, for any reactor whose
//! timers say which deadline is current ([`Timed`]).
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
//! - **H4** The heap is 4-ary (`QuadHeap`): each node's four children
//!   sit side by side (128 bytes of 32-byte entries, two or three cache
//!   lines), so a pop from a
//!   million armed timers walks 10 levels rather than a binary heap's 20,
//!   each a cache miss at that size (std's `BinaryHeap::pop` was 6% of the
//!   million-coroutine bench's samples).
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

use std::cell::RefCell;
use std::cmp::Ordering;
use std::rc::{Rc, Weak};

use crate::traits::Event;

/// What the heap asks of a timer (H1).
pub trait Timed {
    /// The generation of the timer's pending deadline, `None` when it is
    /// not armed (or is not a timer).
    fn armed_generation(&self) -> Option<u64>;
}

/// The next deadline of a periodic timer that was due at `deadline`, seen
/// at `now`: one period later, or, if the loop fell behind by whole
/// periods, the first one after `now` (missed periods are skipped, not
/// replayed, and the timer does not drift).
pub fn next_deadline(deadline: u64, repeat: u64, now: u64) -> u64 {
    let next = deadline.saturating_add(repeat);
    if next > now {
        return next;
    }
    let missed = (now - next) / repeat + 1;
    next.saturating_add(missed.saturating_mul(repeat))
}

/// Fires every timer of `heap` due at `now` and armed at or before
/// `horizon` (a callback that re-arms its timer cannot spin one pass), one
/// callback at a time with no borrow of the heap held. `advance(ev,
/// deadline)` updates the timer's state: `Some((next, generation))` for a
/// periodic one (pushed again), `None` for a one-shot one (now disarmed);
/// `touch(ev)` reconciles its alive count. Returns the number of callbacks
/// run.
pub fn fire_due<E: Timed + Event>(
    heap: &RefCell<TimerHeap<E>>,
    now: u64,
    horizon: u64,
    mut advance: impl FnMut(&E, u64) -> Option<(u64, u64)>,
    touch: impl Fn(&E),
) -> i32 {
    let mut count = 0;
    loop {
        let due = heap.borrow_mut().pop_due(now, horizon);
        let Some((ev, deadline)) = due else { break };
        if let Some((next, generation)) = advance(&ev, deadline) {
            heap.borrow_mut().push(&ev, next, generation);
        }
        touch(&ev);
        if ev.deliverable() {
            ev.callback().notify(&*ev, 0, 0);
            count += 1;
        }
    }
    count
}

/// One deadline.
#[derive(Debug)]
struct Entry<T> {
    deadline: u64,
    sequence: u64,
    generation: u64,
    timer: Weak<T>,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Entry<T>) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Entry<T>) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Entry<T>) -> Ordering {
        (self.deadline, self.sequence).cmp(&(other.deadline, other.sequence))
    }
}

impl<T: Timed> Entry<T> {
    /// The timer, if the entry is current (H1).
    fn current(&self) -> Option<Rc<T>> {
        let timer = self.timer.upgrade()?;
        (timer.armed_generation() == Some(self.generation)).then_some(timer)
    }
}

/// A 4-ary min-heap (H4): the least element at index 0, the children of
/// `i` at `4i + 1 ..= 4i + 4`, every child at least its parent.
#[derive(Debug)]
struct QuadHeap<E> {
    items: Vec<E>,
}

impl<E: Ord> QuadHeap<E> {
    const fn new() -> QuadHeap<E> {
        QuadHeap { items: Vec::new() }
    }

    /// A heap of `items`, in any order (Floyd's bottom-up build).
    fn from_vec(items: Vec<E>) -> QuadHeap<E> {
        let mut heap = QuadHeap { items };
        let n = heap.items.len();
        if n > 1 {
            for i in (0..=(n - 2) / 4).rev() {
                heap.sift_down(i);
            }
        }
        heap
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn peek(&self) -> Option<&E> {
        self.items.first()
    }

    fn push(&mut self, item: E) {
        self.items.push(item);
        let mut i = self.items.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.items[i] >= self.items[parent] {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    fn pop(&mut self) -> Option<E> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.items[0], last);
        self.sift_down(0);
        Some(top)
    }

    /// Moves the element at `i` down until no child is less.
    fn sift_down(&mut self, mut i: usize) {
        let n = self.items.len();
        loop {
            let first = 4 * i + 1;
            if first >= n {
                return;
            }
            let mut least = first;
            for c in first + 1..(first + 4).min(n) {
                if self.items[c] < self.items[least] {
                    least = c;
                }
            }
            if self.items[least] >= self.items[i] {
                return;
            }
            self.items.swap(i, least);
            i = least;
        }
    }

    fn clear(&mut self) {
        self.items.clear();
    }

    fn into_vec(self) -> Vec<E> {
        self.items
    }
}

/// The deadlines of every armed timer (see the module doc).
#[derive(Debug)]
pub struct TimerHeap<T> {
    heap: QuadHeap<Entry<T>>,
    sequence: u64,
    stale: usize,
}

impl<T> Default for TimerHeap<T> {
    fn default() -> TimerHeap<T> {
        TimerHeap {
            heap: QuadHeap { items: Vec::new() },
            sequence: 0,
            stale: 0,
        }
    }
}

impl<T: Timed> TimerHeap<T> {
    /// Adds a deadline for `timer` at `generation`.
    pub fn push(&mut self, timer: &Rc<T>, deadline: u64, generation: u64) {
        self.sequence += 1;
        self.heap.push(Entry {
            deadline,
            sequence: self.sequence,
            generation,
            timer: Rc::downgrade(timer),
        });
    }

    /// Records that one entry became stale, compacting if needed (H2).
    pub fn note_stale(&mut self) {
        self.stale += 1;
        if self.stale > 64 && self.stale * 2 > self.heap.len() {
            let mut entries = std::mem::replace(&mut self.heap, QuadHeap::new()).into_vec();
            entries.retain(|e| e.current().is_some());
            self.heap = QuadHeap::from_vec(entries);
            self.stale = 0;
        }
    }

    /// The earliest current deadline, dropping stale entries on the way.
    pub fn next_deadline(&mut self) -> Option<u64> {
        while let Some(top) = self.heap.peek() {
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
    pub fn horizon(&self) -> u64 {
        self.sequence
    }

    /// Removes and returns the earliest current timer if it is due at `now`
    /// and was pushed at or before `horizon`, with its deadline.
    pub fn pop_due(&mut self, now: u64, horizon: u64) -> Option<(Rc<T>, u64)> {
        let deadline = self.next_deadline()?;
        let sequence = self.heap.peek()?.sequence;
        if deadline > now || sequence > horizon {
            return None;
        }
        let entry = self.heap.pop()?;
        Some((entry.current()?, deadline))
    }

    /// Number of entries, stale ones included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether the heap has no entry at all.
    pub fn is_empty(&self) -> bool {
        self.heap.len() == 0
    }

    /// Drops every entry (`destroy`).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.stale = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[derive(Debug)]
    struct T {
        generation: Cell<u64>,
    }

    impl Timed for T {
        fn armed_generation(&self) -> Option<u64> {
            Some(self.generation.get())
        }
    }

    fn timer() -> Rc<T> {
        Rc::new(T {
            generation: Cell::new(0),
        })
    }

    fn bump(timer: &T) -> u64 {
        timer.generation.set(timer.generation.get() + 1);
        timer.generation.get()
    }

    /// H4: the 4-ary heap pops in order whatever the pushes, and a
    /// rebuild from any order is a heap.
    #[test]
    fn the_quad_heap_pops_in_order() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 1000
        };
        for n in [0usize, 1, 2, 3, 4, 5, 16, 17, 100, 1000] {
            let values: Vec<u64> = (0..n).map(|_| next()).collect();
            let mut heap = QuadHeap::new();
            for &v in &values {
                heap.push(v);
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let popped: Vec<u64> = std::iter::from_fn(|| heap.pop()).collect();
            assert_eq!(popped, sorted, "{n} pushed");
            let mut rebuilt = QuadHeap::from_vec(values);
            let popped: Vec<u64> = std::iter::from_fn(|| rebuilt.pop()).collect();
            assert_eq!(popped, sorted, "{n} rebuilt");
        }
    }

    #[test]
    fn periodic_deadline_advances_from_the_previous_one() {
        assert_eq!(next_deadline(100, 10, 105), 110);
        assert_eq!(next_deadline(100, 10, 110), 120);
        assert_eq!(next_deadline(100, 10, 135), 140);
    }

    #[test]
    fn due_timers_pop_by_deadline_then_arming_order() {
        let mut heap = TimerHeap::default();
        let (a, b, c) = (timer(), timer(), timer());
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
        let a = timer();
        let horizon = heap.horizon();
        heap.push(&a, 5, 0);
        assert!(heap.pop_due(10, horizon).is_none());
        assert!(heap.pop_due(10, heap.horizon()).is_some());
    }

    #[test]
    fn stale_and_dropped_entries_are_skipped_and_compacted() {
        let mut heap = TimerHeap::default();
        let t = timer();
        for i in 0..200 {
            heap.push(&t, 1000 + i, bump(&t));
            if i > 0 {
                heap.note_stale();
            }
        }
        assert!(heap.len() < 200, "never compacted: {}", heap.len());
        assert_eq!(heap.next_deadline(), Some(1199));
        let gone = timer();
        heap.push(&gone, 1, 0);
        drop(gone);
        assert_eq!(heap.next_deadline(), Some(1199));
    }
}
