//! The host's record of one coroutine, and the waiter lists every wait uses.
//!
//! Owns: [`CoroState`] (one per coroutine, shared by `Rc` between the
//! coroutine's entry, its handles and the waiters lists it is in),
//! [`Completion`] (a one-shot "done" flag with waiters) and [`WaitList`].
//!
//! Invariants:
//! - **I1** `raw` is non-null exactly while the coroutine's entry has not
//!   returned: the scheduler still owns a live handle (ABI rule C2), so the
//!   FFI wrappers may pass it to `enqueue`/`coroutine_info`. The entry
//!   trampoline nulls it as its last step.
//! - **I2** `outcome` is set once, by the entry, before the coroutine's
//!   completion fires; a finished coroutine's outcome never changes.
//! - **I3** `cancel` is set at most once (first reason wins) and is never
//!   cleared (`is_cancellation_requested` is sticky). `cancel_pending` says
//!   the coroutine has not seen it yet; it is cleared when delivered (D-1:
//!   once) and may be set again only by I/O that returned data first (P-08).
//! - **I4** A waiter is in a [`WaitList`] only while it runs the wait loop
//!   that put it there; the loop removes it before returning (a drop guard
//!   does it when the stack unwinds). A completion keeps the waiter's
//!   scheduler handle (`raw`; the oldest in its `solo` slot, the others in
//!   the list), which is therefore live whenever it is kept (I1), so a
//!   completion can enqueue it (F4) without holding a reference count.
//!
//! Everything here is touched only on the loop thread (`!Send` by `Rc`).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::ptr;
use std::rc::Rc;

use async_abi::AaCoroutine;

use super::error::{Cancelled, Failure};
use super::CoroutineId;
use crate::runtime;
use crate::CancelCause;

/// The body of a coroutine, type-erased: returns the value boxed.
pub(crate) type Body = Box<dyn FnOnce() -> Box<dyn Any>>;

/// How a finished coroutine ended (I2).
pub(crate) enum Outcome {
    /// Its body returned; the value until a `join` takes it.
    Value(Option<Box<dyn Any>>),
    /// It failed; shared by all waiters (E1 in `task::error`).
    Failed(Rc<Failure>),
}

/// The host's record of one coroutine.
pub(crate) struct CoroState {
    /// Set right after `coroutine_new`.
    pub(crate) id: Cell<u64>,
    /// I1.
    pub(crate) raw: Cell<*mut AaCoroutine>,
    pub(crate) location: &'static Location<'static>,
    /// The main coroutine: its panic shuts the runtime down.
    pub(crate) is_main: bool,
    started: Cell<bool>,
    body: Cell<Option<Body>>,
    /// I3.
    cancel: RefCell<Option<Cancelled>>,
    cancel_pending: Cell<bool>,
    /// I2.
    outcome: RefCell<Option<Outcome>>,
    /// Fires when the coroutine finishes.
    pub(crate) done: Completion,
}

impl CoroState {
    #[inline]
    pub(crate) fn new(body: Body, location: &'static Location<'static>, is_main: bool) -> Self {
        CoroState {
            id: Cell::new(0),
            raw: Cell::new(ptr::null_mut()),
            location,
            is_main,
            started: Cell::new(false),
            body: Cell::new(Some(body)),
            cancel: RefCell::new(None),
            cancel_pending: Cell::new(false),
            outcome: RefCell::new(None),
            done: Completion::new(),
        }
    }

    /// Drops everything the record holds for the coroutine (its body, its
    /// outcome, its cancellation), as dropping the record would; the record
    /// is about to be kept for reuse (runtime R4).
    pub(crate) fn empty(&mut self) {
        *self.body.get_mut() = None;
        *self.outcome.get_mut() = None;
        *self.cancel.get_mut() = None;
    }

    /// Makes an emptied record (see [`CoroState::empty`]) the record of a
    /// new coroutine, as [`CoroState::new`] would make it.
    #[inline]
    pub(crate) fn reuse(&mut self, body: Body, location: &'static Location<'static>) {
        *self.id.get_mut() = 0;
        *self.raw.get_mut() = ptr::null_mut();
        self.location = location;
        self.is_main = false;
        *self.started.get_mut() = false;
        *self.body.get_mut() = Some(body);
        *self.cancel_pending.get_mut() = false;
        self.done.reuse();
    }

    pub(crate) fn id(&self) -> CoroutineId {
        CoroutineId(self.id.get())
    }

    pub(crate) fn is_started(&self) -> bool {
        self.started.get()
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.outcome.borrow().is_some()
    }

    pub(crate) fn take_body(&self) -> Option<Body> {
        self.body.take()
    }

    pub(crate) fn mark_started(&self) {
        self.started.set(true);
    }

    pub(crate) fn cancellation(&self) -> Option<Cancelled> {
        self.cancel.borrow().clone()
    }

    pub(crate) fn is_cancellation_requested(&self) -> bool {
        self.cancel.borrow().is_some()
    }

    /// Records a cancellation request (I3: first wins). Returns false if one
    /// was already recorded or the coroutine has finished.
    pub(crate) fn request_cancel(&self, cause: CancelCause, reason: Option<String>) -> bool {
        if self.is_finished() || self.cancel.borrow().is_some() {
            return false;
        }
        *self.cancel.borrow_mut() = Some(Cancelled::new(self.id(), cause, reason));
        self.cancel_pending.set(true);
        true
    }

    /// Delivers a pending cancellation (D-1: once).
    #[inline]
    pub(crate) fn take_pending_cancel(&self) -> Option<Cancelled> {
        if self.cancel_pending.get() {
            self.deliver_cancel()
        } else {
            None
        }
    }

    /// Whether a cancellation waits to be delivered (without delivering it).
    #[inline]
    pub(crate) fn has_pending_cancel(&self) -> bool {
        self.cancel_pending.get()
    }

    #[cold]
    #[inline(never)]
    fn deliver_cancel(&self) -> Option<Cancelled> {
        self.cancel_pending.set(false);
        self.cancellation()
    }

    /// Puts a delivered cancellation back, for the next suspension point
    /// (P-08: I/O that returned data first).
    pub(crate) fn repend_cancel(&self) {
        if self.cancel.borrow().is_some() {
            self.cancel_pending.set(true);
        }
    }

    /// The scheduler found a deadlock while this coroutine waited: records a
    /// cancellation with cause `Deadlock` if none was requested, and returns
    /// the `Cancelled` to deliver now.
    pub(crate) fn deadlocked(&self) -> Cancelled {
        self.cancel_pending.set(false);
        let mut slot = self.cancel.borrow_mut();
        if slot.is_none() {
            *slot = Some(Cancelled::new(self.id(), CancelCause::Deadlock, None));
        }
        Cancelled::new(self.id(), CancelCause::Deadlock, None)
    }

    /// Stores the outcome (I2) and wakes the coroutine's waiters.
    pub(crate) fn finish(&self, outcome: Outcome) {
        *self.outcome.borrow_mut() = Some(outcome);
        self.done.complete();
    }

    /// Reads the outcome of a finished coroutine.
    pub(crate) fn with_outcome<R>(&self, f: impl FnOnce(&mut Outcome) -> R) -> Option<R> {
        self.outcome.borrow_mut().as_mut().map(f)
    }

    /// True if it finished without a value because it was cancelled, or it
    /// finished after a cancellation was requested.
    pub(crate) fn is_cancelled(&self) -> bool {
        match &*self.outcome.borrow() {
            None => false,
            Some(Outcome::Failed(f)) => {
                matches!(**f, Failure::Cancelled(_)) || self.is_cancellation_requested()
            }
            Some(Outcome::Value(_)) => self.is_cancellation_requested(),
        }
    }
}

/// A one-shot completion with a list of waiting coroutines.
pub(crate) struct Completion {
    done: Cell<bool>,
    /// The oldest waiter, kept out of the list while the list is empty (the
    /// usual single `join`), so subscribing it borrows and allocates
    /// nothing; null when empty. Every listed waiter is newer than it.
    solo: Cell<*mut AaCoroutine>,
    waiters: RefCell<WaitList>,
}

/// The key of the waiter in a completion's `solo` slot.
const SOLO: WaitKey = WaitKey(usize::MAX - 1);

impl Completion {
    pub(crate) fn new() -> Self {
        Completion {
            done: Cell::new(false),
            solo: Cell::new(ptr::null_mut()),
            waiters: RefCell::new(WaitList::new()),
        }
    }

    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.get()
    }

    /// Not done, no waiter: as new (the record it is in is reused).
    fn reuse(&mut self) {
        *self.done.get_mut() = false;
        *self.solo.get_mut() = ptr::null_mut();
        *self.waiters.get_mut() = WaitList::new();
    }

    /// Adds a waiter (O(1)); remove it with [`Completion::unsubscribe`].
    #[inline]
    pub(crate) fn subscribe(&self, who: &CoroState) -> WaitKey {
        let raw = who.raw.get();
        if self.solo.get().is_null() && self.waiters.borrow().head == NIL {
            self.solo.set(raw);
            return SOLO;
        }
        self.waiters.borrow_mut().push(raw)
    }

    /// Removes a waiter (O(1)).
    #[inline]
    pub(crate) fn unsubscribe(&self, key: WaitKey) {
        if key == SOLO {
            self.solo.set(ptr::null_mut());
        } else {
            self.waiters.borrow_mut().remove(key);
        }
    }

    /// Marks it done and enqueues every waiter, oldest first (the solo one,
    /// then the list). A wake-up is only a hint: each waiter re-checks its
    /// own condition (P-22).
    ///
    /// A completion is one-shot: nobody subscribes once it is done, so the
    /// waiters are taken out first (a waiter's later `unsubscribe` finds its
    /// slot empty) and no borrow is held while the scheduler is called.
    pub(crate) fn complete(&self) {
        self.done.set(true);
        let solo = self.solo.replace(ptr::null_mut());
        if !solo.is_null() {
            runtime::wake_raw(solo);
        }
        if self.waiters.borrow().head == NIL {
            return;
        }
        let waiters = std::mem::take(&mut *self.waiters.borrow_mut());
        for raw in waiters.iter() {
            runtime::wake_raw(raw);
        }
    }
}

/// A position in a [`WaitList`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WaitKey(usize);

const NIL: usize = usize::MAX;

struct Node {
    /// The waiter's handle (`CoroState::raw`: non-null, the waiter is alive
    /// while it is listed, I4); null in a free slot.
    who: *mut AaCoroutine,
    prev: usize,
    /// The next waiter; in a free slot, the next free slot.
    next: usize,
}

const EMPTY_NODE: Node = Node {
    who: ptr::null_mut(),
    prev: NIL,
    next: NIL,
};

/// An insertion-ordered set of waiters: a doubly linked list threaded
/// through a slab, so add and remove are O(1) and wake order is FIFO.
/// Slot 0 is inline, so the usual single waiter (a `join`) allocates
/// nothing; free slots are linked through `next`.
pub(crate) struct WaitList {
    first: Node,
    /// Slots 1.. .
    rest: Vec<Node>,
    /// Slots ever used: `0..slots` are either in the list or free.
    slots: usize,
    head: usize,
    tail: usize,
    free: usize,
}

impl Default for WaitList {
    fn default() -> Self {
        WaitList::new()
    }
}

impl WaitList {
    pub(crate) const fn new() -> Self {
        WaitList {
            first: EMPTY_NODE,
            rest: Vec::new(),
            slots: 0,
            head: NIL,
            tail: NIL,
            free: NIL,
        }
    }

    fn node(&self, i: usize) -> &Node {
        if i == 0 {
            &self.first
        } else {
            &self.rest[i - 1]
        }
    }

    fn node_mut(&mut self, i: usize) -> &mut Node {
        if i == 0 {
            &mut self.first
        } else {
            &mut self.rest[i - 1]
        }
    }

    pub(crate) fn push(&mut self, who: *mut AaCoroutine) -> WaitKey {
        let node = Node {
            who,
            prev: self.tail,
            next: NIL,
        };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.node(i).next;
            *self.node_mut(i) = node;
            i
        } else {
            let i = self.slots;
            self.slots += 1;
            if i == 0 {
                self.first = node;
            } else {
                self.rest.push(node);
            }
            i
        };
        if self.tail == NIL {
            self.head = i;
        } else {
            let tail = self.tail;
            self.node_mut(tail).next = i;
        }
        self.tail = i;
        WaitKey(i)
    }

    pub(crate) fn remove(&mut self, key: WaitKey) {
        let i = key.0;
        if i >= self.slots {
            return;
        }
        let free = self.free;
        let node = self.node_mut(i);
        if std::mem::replace(&mut node.who, ptr::null_mut()).is_null() {
            return;
        }
        let (prev, next) = (node.prev, node.next);
        node.next = free;
        self.free = i;
        if prev == NIL {
            self.head = next;
        } else {
            self.node_mut(prev).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.node_mut(next).prev = prev;
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = *mut AaCoroutine> + '_ {
        let mut i = self.head;
        std::iter::from_fn(move || {
            while i != NIL {
                let node = self.node(i);
                i = node.next;
                if !node.who.is_null() {
                    return Some(node.who);
                }
            }
            None
        })
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.iter().count()
    }
}

/// Removes a waiter from a completion when dropped (I4), so a wait that
/// returns early or unwinds never leaves itself behind.
pub(crate) struct Subscription<'a> {
    completion: &'a Completion,
    key: WaitKey,
}

impl<'a> Subscription<'a> {
    pub(crate) fn new(completion: &'a Completion, who: &CoroState) -> Self {
        let key = completion.subscribe(who);
        Subscription { completion, key }
    }
}

impl Drop for Subscription<'_> {
    fn drop(&mut self) {
        self.completion.unsubscribe(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in handle: the list never dereferences it.
    fn handle(i: usize) -> *mut AaCoroutine {
        ptr::without_provenance_mut(i)
    }

    fn ids(list: &WaitList) -> Vec<usize> {
        list.iter().map(|w| w.addr()).collect()
    }

    #[test]
    fn wait_list_keeps_fifo_order_across_removals() {
        let mut list = WaitList::new();
        let keys: Vec<_> = (1..=4).map(|i| list.push(handle(i))).collect();
        list.remove(keys[1]);
        list.remove(keys[1]);
        list.push(handle(5));
        list.remove(keys[0]);
        assert_eq!(ids(&list), vec![3, 4, 5]);
        assert_eq!(list.len(), 3);
    }

    #[test]
    fn one_waiter_at_a_time_stays_in_the_inline_slot() {
        let mut list = WaitList::new();
        for i in 1..=3 {
            let key = list.push(handle(i));
            assert_eq!(ids(&list), [i]);
            list.remove(key);
            list.remove(key);
            assert_eq!(list.len(), 0);
        }
        assert_eq!(list.rest.capacity(), 0);
        // A key of a list that was taken out (a completed completion) is
        // harmless on the fresh one.
        let key = list.push(handle(7));
        let _taken = std::mem::take(&mut list);
        list.remove(key);
        assert_eq!(list.len(), 0);
    }

    fn waiter(id: usize) -> Rc<CoroState> {
        let st = Rc::new(CoroState::new(
            Box::new(|| Box::new(())),
            Location::caller(),
            false,
        ));
        st.raw.set(handle(id));
        st
    }

    #[test]
    fn the_oldest_waiter_is_solo_and_newer_ones_queue_behind_it() {
        let c = Completion::new();
        let (a, b, d) = (waiter(1), waiter(2), waiter(3));
        let ka = c.subscribe(&a);
        assert_eq!(ka, SOLO);
        let kb = c.subscribe(&b);
        assert_ne!(kb, SOLO);
        // The solo slot is free again, but an older waiter is listed: the
        // new one queues behind it (FIFO), it does not jump ahead.
        c.unsubscribe(ka);
        let kd = c.subscribe(&d);
        assert_ne!(kd, SOLO);
        assert_eq!(ids(&c.waiters.borrow()), [2, 3]);
        c.unsubscribe(kb);
        c.unsubscribe(kd);
        // All gone: the next waiter is solo again.
        assert_eq!(c.subscribe(&a), SOLO);
    }
}
