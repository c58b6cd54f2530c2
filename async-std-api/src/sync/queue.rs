//! The waiter queue every primitive of `sync` is built on, and the one wait
//! loop they all use.
//!
//! A waiter enters the queue at the tail with a ticket and suspends; whoever
//! frees what it waits for *grants* it to the oldest waiter that can take it
//! (the grant is written into the waiter's node, the node leaves the order,
//! and the waiter is woken). So a resource goes to the waiters in the order
//! they came: no barging, the hand-off the primitives promise.
//!
//! Rules:
//! - **Q1** Add, grant and remove are O(1) (a linked list threaded through a
//!   slab, as the runtime's other waiter lists).
//! - **Q2** A node is in the wait order while it waits; a granted node is
//!   out of it and holds its grant until its waiter takes it. A waiter's
//!   coroutine is alive while its node exists (it removes the node before
//!   its wait returns or unwinds, W4), so the granter may wake it.
//! - **Q3** A wait that is cancelled before its grant removes its node and
//!   returns the cancellation: nothing was taken. A grant that arrived
//!   first wins: the operation completes and the cancellation stays pending
//!   for the next suspension point (D-29, as I/O keeps data that arrived,
//!   P-08), so a message received, a lock acquired or a send delivered is
//!   never lost behind a cancellation.
//! - **Q4** A wait that unwinds (forced shutdown) with a grant in hand gives
//!   the grant back to its primitive ([`Grantor::give_back`]), which hands
//!   it to the next waiter: a lock, a permit or a message is never leaked.
//! - **Q5** After a waiter left without a grant, its primitive is told
//!   ([`Grantor::left`]): the waiter behind it may be grantable now (a
//!   writer that gave up lets the readers behind it in).
//!
//! Everything is touched on the loop thread only.

use std::cell::{OnceCell, RefCell};
use std::panic::Location;

use async_abi::AaCoroutine;

use crate::core::error::Cancelled;
use crate::core::runtime;
use crate::core::slab::Slab;
use crate::core::state::CoroState;
use crate::core::wait::{checkpoint, suspend_once, with_me};

/// A waiter's place in a [`WaitQueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(usize);

const NIL: usize = usize::MAX;

struct Node<G, M> {
    /// The waiter's handle (Q2: alive while the node exists).
    who: *mut AaCoroutine,
    /// What the waiter asked for (a number of permits, read or write).
    want: M,
    grant: Option<G>,
    prev: usize,
    next: usize,
}

/// Waiters in arrival order, each with what it wants (`M`) and, once
/// granted, what it got (`G`).
pub(crate) struct WaitQueue<G, M = ()> {
    nodes: Slab<Node<G, M>>,
    head: usize,
    tail: usize,
}

impl<G, M> Default for WaitQueue<G, M> {
    fn default() -> Self {
        WaitQueue {
            nodes: Slab::new(),
            head: NIL,
            tail: NIL,
        }
    }
}

impl<G, M> WaitQueue<G, M> {
    /// True if no waiter waits (granted ones may still be collecting).
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// What the oldest waiting waiter wants, with its ticket.
    pub(crate) fn first(&self) -> Option<(Ticket, &M)> {
        (self.head != NIL).then(|| {
            let n = self.nodes.get(self.head).expect("Q1: head is a node");
            (Ticket(self.head), &n.want)
        })
    }

    /// The waiters in arrival order, with what each wants.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Ticket, &M)> + '_ {
        let mut at = self.head;
        std::iter::from_fn(move || {
            let n = self.nodes.get(at)?;
            let t = Ticket(at);
            at = n.next;
            Some((t, &n.want))
        })
    }

    /// Adds `who` at the tail, wanting `want`.
    pub(crate) fn push(&mut self, who: &CoroState, want: M) -> Ticket {
        let key = self.nodes.insert(Node {
            who: who.raw.get(),
            want,
            grant: None,
            prev: self.tail,
            next: NIL,
        });
        match self.nodes.get_mut(self.tail) {
            Some(t) => t.next = key,
            None => self.head = key,
        }
        self.tail = key;
        Ticket(key)
    }

    fn unlink(&mut self, key: usize) {
        let (prev, next) = match self.nodes.get(key) {
            Some(n) => (n.prev, n.next),
            None => return,
        };
        match self.nodes.get_mut(prev) {
            Some(p) => p.next = next,
            None if self.head == key => self.head = next,
            None => {}
        }
        match self.nodes.get_mut(next) {
            Some(n) => n.prev = prev,
            None if self.tail == key => self.tail = prev,
            None => {}
        }
        if let Some(n) = self.nodes.get_mut(key) {
            n.prev = NIL;
            n.next = NIL;
        }
    }

    /// Grants `g` to the waiter `t` (it leaves the order) and wakes it. A
    /// wake-up is a hint: the waiter checks its node (P-22).
    pub(crate) fn grant(&mut self, t: Ticket, g: G) {
        self.unlink(t.0);
        if let Some(n) = self.nodes.get_mut(t.0) {
            n.grant = Some(g);
            runtime::wake_raw(n.who);
        }
    }

    /// Takes the grant of `t` and drops its node, if it was granted.
    fn take_grant(&mut self, t: Ticket) -> Option<G> {
        let granted = self.nodes.get(t.0).is_some_and(|n| n.grant.is_some());
        if !granted {
            return None;
        }
        self.nodes.remove(t.0).and_then(|n| n.grant)
    }

    /// Removes `t` wherever it is; returns its grant if it had one.
    fn remove(&mut self, t: Ticket) -> Option<G> {
        self.unlink(t.0);
        self.nodes.remove(t.0).and_then(|n| n.grant)
    }
}

/// A primitive's wait description (what a deadlock report says it waits
/// for), made on its first wait and kept, so a wait formats nothing.
#[derive(Default)]
pub(crate) struct WaitText(OnceCell<Box<str>>);

impl WaitText {
    /// The text, made by `make` the first time.
    pub(crate) fn get(&self, make: impl FnOnce() -> String) -> &str {
        self.0.get_or_init(|| make().into_boxed_str())
    }
}

/// A primitive whose waiters wait in a [`WaitQueue`].
pub(crate) trait Grantor {
    /// What a waiter gets.
    type Grant;
    /// What a waiter asks for.
    type Want;
    /// The primitive's queue.
    fn queue(&self) -> &RefCell<WaitQueue<Self::Grant, Self::Want>>;
    /// Q4: a grant its waiter will never use (it unwound): pass it on.
    fn give_back(&self, g: Self::Grant);
    /// Q5: a waiter left without a grant.
    fn left(&self) {}
}

/// Removes the ticket if the wait ends by unwinding (Q4).
struct Leave<'a, P: Grantor + ?Sized> {
    p: &'a P,
    ticket: Option<Ticket>,
}

impl<P: Grantor + ?Sized> Drop for Leave<'_, P> {
    fn drop(&mut self) {
        let Some(t) = self.ticket.take() else {
            return;
        };
        let grant = self.p.queue().borrow_mut().remove(t);
        match grant {
            Some(g) => self.p.give_back(g),
            None => self.p.left(),
        }
    }
}

/// The wait of every primitive (Q2-Q5): `t` was pushed by the caller,
/// which found it had to wait; suspends until granted or cancelled.
/// `what` describes the wait for deadlock reports ("lock sync::Mutex").
#[track_caller]
pub(crate) fn wait_for_grant<P: Grantor + ?Sized>(
    p: &P,
    t: Ticket,
    what: &str,
    at: &'static Location<'static>,
) -> Result<P::Grant, Cancelled> {
    let mut leave = Leave { p, ticket: Some(t) };
    with_me("a sync wait", move |rt, me| loop {
        let resumed = suspend_once(rt, me, what.as_bytes(), at);
        let grant = p.queue().borrow_mut().take_grant(t);
        if let Some(g) = grant {
            leave.ticket.take(); // ours now: nothing to give back
            if resumed.is_err() {
                me.repend_cancel(); // Q3: the grant wins, the cancellation waits
            }
            return Ok(g);
        }
        if let Err(c) = resumed {
            drop(leave); // Q3, Q5: out of the queue, the primitive told
            return Err(c);
        }
    })
}

/// W1 for a primitive's fast path: a pending cancellation is delivered
/// before anything is taken.
#[track_caller]
pub(crate) fn enter(what: &str) -> Result<(), Cancelled> {
    with_me(what, |_, me| checkpoint(me))
}

/// Runs `f` with the running coroutine's record.
#[track_caller]
pub(crate) fn with_coroutine<R>(what: &str, f: impl FnOnce(&CoroState) -> R) -> R {
    with_me(what, |_, me| f(me))
}
