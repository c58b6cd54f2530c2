//! Callbacks owed to the host and delivered by a later `run_once`:
//! cancellations, results of requests that never waited, `on_closed`
//! (docs/abi/loop.md, step 5).
//!
//! # Invariants
//!
//! - **Q1** An event's `scheduled` counter is the number of queued items
//!   that name it; while it is non-zero the event is active (a reactor's
//!   liveness counts it), and [`schedule`] and [`deliver`] keep it exact,
//!   reconciling the alive count through the reactor's `touch` after each
//!   change.
//! - **Q2** A reactor takes the whole queue at the start of `run_once` and
//!   delivers only that batch, so nothing queued by `cancel` or `close`
//!   runs inside the call that queued it, nor in the iteration it was
//!   queued from.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use async_abi::AaStatus;

use crate::callback::ClosedCallback;
use crate::traits::Event;

/// A callback owed to the host.
#[derive(Debug)]
pub enum Deferred<E> {
    /// The event's own callback, with `status` (0 or a cancellation reason)
    /// and `value` (a request's result, a poll's ready bits, a signal).
    Notify {
        /// The event.
        ev: Rc<E>,
        /// 0 or the cancellation reason.
        status: AaStatus,
        /// A request's result, a poll's ready bits.
        value: i64,
    },
    /// `on_closed` (AA-R4).
    Closed {
        /// The event.
        ev: Rc<E>,
        /// The host's callback, if it gave one.
        on_closed: Option<ClosedCallback>,
    },
}

impl<E> Deferred<E> {
    /// The event the item names.
    pub fn event(&self) -> &Rc<E> {
        match self {
            Deferred::Notify { ev, .. } | Deferred::Closed { ev, .. } => ev,
        }
    }
}

/// Queues `item` for a later `run_once` (Q1, Q2).
#[inline]
pub fn schedule<E: Event>(
    queue: &RefCell<VecDeque<Deferred<E>>>,
    item: Deferred<E>,
    touch: impl Fn(&E),
) {
    let ev = item.event();
    ev.scheduled().set(ev.scheduled().get() + 1);
    touch(ev);
    queue.borrow_mut().push_back(item);
}

/// Delivers a batch taken at the start of `run_once` (Q2), one callback at a
/// time with no borrow held: `closed(ev)` runs before an `on_closed` (the
/// reactor marks the event closed), `touch(ev)` after each counter change.
/// Returns the number of callbacks run.
pub fn deliver<E: Event>(
    batch: VecDeque<Deferred<E>>,
    touch: impl Fn(&E),
    closed: impl Fn(&E),
) -> i32 {
    let mut count = 0;
    for item in batch {
        match item {
            Deferred::Notify { ev, status, value } => {
                ev.scheduled().set(ev.scheduled().get() - 1);
                touch(&ev);
                if ev.deliverable() {
                    ev.callback().notify(&*ev, status, value);
                    count += 1;
                }
            }
            Deferred::Closed { ev, on_closed } => {
                ev.scheduled().set(ev.scheduled().get() - 1);
                closed(&ev);
                touch(&ev);
                if let (true, Some(cb)) = (ev.deliverable(), on_closed) {
                    cb.call(&*ev);
                    count += 1;
                }
            }
        }
    }
    count
}
