//! The waiter lists every wait uses: [`Completion`] (a one-shot "done" flag
//! with waiters), [`Notify`] (a re-armable wake-up list) and the
//! [`WaitList`] both are built on.
//!
//! Invariants:
//! - **WL1** A waiter is listed only while it runs the wait loop that put it
//!   there (I4 in `core::state`), so a listed handle is a live coroutine's
//!   (I1) and can be enqueued without a reference count.
//! - **WL2** Wake order is FIFO: the oldest waiter first.
//! - **WL3** A *tagged* waiter stands for an input of a combinator: waking
//!   it queues its tag in the combinator's [`ReadySet`] and wakes the
//!   coroutine waiting there, if any. Its owner removes it before the
//!   `ReadySet`'s waiter stops waiting for good (the engine's drop), so a
//!   listed `ReadySet` never names a finished coroutine.
//!
//! Everything here is touched only on the loop thread (`!Send`).

use std::cell::{Cell, RefCell};
use std::ptr;
use std::rc::Rc;

use async_abi::AaCoroutine;

use super::runtime;
use super::state::CoroState;

/// A one-shot completion with a list of waiting coroutines.
pub(crate) struct Completion {
    done: Cell<bool>,
    /// The oldest waiter, kept out of the list while the list is empty (the
    /// usual single `join`), so subscribing it borrows and allocates
    /// nothing; null when empty. Every listed waiter is newer than it.
    solo: Cell<*mut AaCoroutine>,
    /// The waiters after the solo one, made on the first such waiter: every
    /// coroutine record holds a completion, and a million suspended
    /// coroutines should not each carry an empty list.
    waiters: RefCell<Option<Box<WaitList>>>,
}

/// The key of the waiter in a completion's `solo` slot.
const SOLO: WaitKey = WaitKey(usize::MAX - 1);

impl Completion {
    pub(crate) fn new() -> Self {
        Completion {
            done: Cell::new(false),
            solo: Cell::new(ptr::null_mut()),
            waiters: RefCell::new(None),
        }
    }

    /// Whether the list beyond the solo waiter is empty.
    #[inline]
    fn list_empty(&self) -> bool {
        self.waiters.borrow().as_ref().is_none_or(|w| w.head == NIL)
    }

    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.get()
    }

    /// True if a waiter is subscribed.
    #[inline]
    pub(crate) fn has_waiters(&self) -> bool {
        !self.solo.get().is_null() || !self.list_empty()
    }

    /// Not done, no waiter: as new (the record it is in is reused).
    pub(super) fn reuse(&mut self) {
        *self.done.get_mut() = false;
        *self.solo.get_mut() = ptr::null_mut();
        if let Some(w) = self.waiters.get_mut() {
            **w = WaitList::new();
        }
    }

    /// Adds a waiter (O(1)); remove it with [`Completion::unsubscribe`].
    #[inline]
    pub(crate) fn subscribe(&self, who: &CoroState) -> WaitKey {
        let raw = who.raw.get();
        if self.solo.get().is_null() && self.list_empty() {
            self.solo.set(raw);
            return SOLO;
        }
        self.waiters
            .borrow_mut()
            .get_or_insert_with(|| Box::new(WaitList::new()))
            .push(raw)
    }

    /// Removes a waiter (O(1)).
    #[inline]
    pub(crate) fn unsubscribe(&self, key: WaitKey) {
        if key == SOLO {
            self.solo.set(ptr::null_mut());
        } else if let Some(w) = self.waiters.borrow_mut().as_mut() {
            w.remove(key);
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
        if self.list_empty() {
            return;
        }
        let waiters = self.waiters.borrow_mut().take().expect("not empty");
        waiters.wake_each();
    }

    /// Adds a tagged waiter (O(1)): when this completes, `tag` goes to
    /// `ready` and `ready`'s waiter is woken. Remove it with
    /// [`Completion::unsubscribe`].
    pub(crate) fn subscribe_tagged(&self, ready: &Rc<ReadySet>, tag: usize) -> WaitKey {
        self.waiters
            .borrow_mut()
            .get_or_insert_with(|| Box::new(WaitList::new()))
            .push_tagged(ready.clone(), tag)
    }
}

/// A re-armable wake-up list: waiters subscribe while they wait and are all
/// enqueued by [`Notify::wake_all`] each time something they may care about
/// changes (a scope's state). Unlike a [`Completion`] it is never "done":
/// each waiter re-checks its own condition (P-22).
#[derive(Default)]
pub(crate) struct Notify {
    waiters: RefCell<WaitList>,
}

impl Notify {
    pub(crate) fn new() -> Self {
        Notify {
            waiters: RefCell::new(WaitList::new()),
        }
    }

    /// Enqueues every subscribed waiter (a hint, P-22). The scheduler's
    /// `enqueue` calls no host code, so the list stays borrowed meanwhile.
    #[inline]
    pub(crate) fn wake_all(&self) {
        let waiters = self.waiters.borrow();
        // Checked here, inline: most lists are empty when woken (a lone
        // reader waits in its own slot), and the walk is out of line.
        if waiters.head != NIL {
            waiters.wake_each();
        }
    }

    /// Adds a tagged waiter (O(1)), as [`Completion::subscribe_tagged`]:
    /// each [`wake_all`](Notify::wake_all) sends `tag` to `ready`.
    pub(crate) fn subscribe_tagged(&self, ready: &Rc<ReadySet>, tag: usize) -> WaitKey {
        self.waiters.borrow_mut().push_tagged(ready.clone(), tag)
    }

    /// Removes a waiter (O(1)).
    pub(crate) fn unsubscribe(&self, key: WaitKey) {
        self.waiters.borrow_mut().remove(key);
    }

    /// True if nobody is subscribed.
    pub(crate) fn is_empty(&self) -> bool {
        self.waiters.borrow().head == NIL
    }
}

/// Where tagged waiters report (the combinators' engine): the tags of the
/// inputs that completed or changed, each queued at most once, and the
/// coroutine to wake, if one waits. A wake-up then costs O(1) per input
/// that changed, not a poll of every input.
#[derive(Default)]
pub(crate) struct ReadySet {
    queue: RefCell<std::collections::VecDeque<usize>>,
    /// `queued[tag]`: the tag is in the queue.
    queued: RefCell<Vec<bool>>,
    waiter: Cell<*mut AaCoroutine>,
}

impl ReadySet {
    /// Queues `tag` (once) and wakes the waiter.
    fn mark(&self, tag: usize) {
        {
            let mut queued = self.queued.borrow_mut();
            if queued.len() <= tag {
                queued.resize(tag + 1, false);
            }
            if !std::mem::replace(&mut queued[tag], true) {
                self.queue.borrow_mut().push_back(tag);
            }
        }
        let w = self.waiter.get();
        if !w.is_null() {
            runtime::wake_raw(w);
        }
    }

    /// Queues `tag` (once) without waking anyone: an input to look at.
    pub(crate) fn queue(&self, tag: usize) {
        let w = self.waiter.replace(ptr::null_mut());
        self.mark(tag);
        self.waiter.set(w);
    }

    /// The oldest queued tag.
    pub(crate) fn pop(&self) -> Option<usize> {
        let tag = self.queue.borrow_mut().pop_front()?;
        if let Some(q) = self.queued.borrow_mut().get_mut(tag) {
            *q = false;
        }
        Some(tag)
    }

    /// Whether a tag is queued.
    pub(crate) fn has_queued(&self) -> bool {
        !self.queue.borrow().is_empty()
    }

    /// Who to wake (`CoroState::raw`) while it waits; null when nobody
    /// does.
    pub(crate) fn set_waiter(&self, who: *mut AaCoroutine) {
        self.waiter.set(who);
    }
}

/// Removes a waiter from a [`Notify`] when dropped (I4).
pub(crate) struct NotifySubscription<'a> {
    notify: &'a Notify,
    key: WaitKey,
}

impl<'a> NotifySubscription<'a> {
    pub(crate) fn new(notify: &'a Notify, who: &CoroState) -> Self {
        let key = notify.waiters.borrow_mut().push(who.raw.get());
        NotifySubscription { notify, key }
    }
}

impl Drop for NotifySubscription<'_> {
    fn drop(&mut self) {
        self.notify.waiters.borrow_mut().remove(self.key);
    }
}

/// A position in a [`WaitList`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WaitKey(usize);

const NIL: usize = usize::MAX;

struct Node {
    /// The waiter's handle (`CoroState::raw`: non-null, the waiter is alive
    /// while it is listed, I4); null in a free slot and in a tagged one.
    who: *mut AaCoroutine,
    /// A tagged waiter: where its tag goes.
    ready: Option<Rc<ReadySet>>,
    tag: usize,
    prev: usize,
    /// The next waiter; in a free slot, the next free slot.
    next: usize,
}

const EMPTY_NODE: Node = Node {
    who: ptr::null_mut(),
    ready: None,
    tag: 0,
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
        self.push_node(Node {
            who,
            ready: None,
            tag: 0,
            prev: self.tail,
            next: NIL,
        })
    }

    fn push_tagged(&mut self, ready: Rc<ReadySet>, tag: usize) -> WaitKey {
        self.push_node(Node {
            who: ptr::null_mut(),
            ready: Some(ready),
            tag,
            prev: self.tail,
            next: NIL,
        })
    }

    fn push_node(&mut self, node: Node) -> WaitKey {
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
        let tagged = node.ready.take().is_some();
        if std::mem::replace(&mut node.who, ptr::null_mut()).is_null() && !tagged {
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

    /// The plain waiters, in order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = *mut AaCoroutine> + '_ {
        self.nodes().filter(|n| !n.who.is_null()).map(|n| n.who)
    }

    fn nodes(&self) -> impl Iterator<Item = &Node> + '_ {
        let mut i = self.head;
        std::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let node = self.node(i);
            i = node.next;
            Some(node)
        })
    }

    /// Wakes every waiter in order: a plain one is enqueued, a tagged one
    /// sends its tag to its [`ReadySet`]. The scheduler's `enqueue` calls no
    /// host code, so the list may stay borrowed meanwhile.
    #[inline(never)]
    fn wake_each(&self) {
        for node in self.nodes() {
            match &node.ready {
                Some(ready) => ready.mark(node.tag),
                None => runtime::wake_raw(node.who),
            }
        }
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
    use std::panic::Location;
    use std::rc::Rc;

    use super::*;
    use crate::core::state::{BodyResult, CoroState};

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
            Box::new(|| BodyResult::Value(Box::new(()))),
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
        assert_eq!(ids(c.waiters.borrow().as_ref().unwrap()), [2, 3]);
        c.unsubscribe(kb);
        c.unsubscribe(kd);
        // All gone: the next waiter is solo again.
        assert_eq!(c.subscribe(&a), SOLO);
    }
}
