//! Microtasks: small host callbacks run before the next switch.
//!
//! # What it owns
//!
//! A FIFO of `(function, argument)` pairs queued by `defer`. The arguments
//! belong to the host.
//!
//! # Invariants
//!
//! - **M-I1** Microtasks run in the order they were deferred, on whatever
//!   stack is current, with no coroutine current (`current()` is NULL, so a
//!   microtask cannot suspend).
//! - **M-I2** [`Microtasks::drain`] runs until the queue is empty, including
//!   microtasks deferred by microtasks while it runs; it is called before
//!   every switch and at the top of the root loop, so nothing deferred waits
//!   behind a switch.
//! - **M-I3** The queue is borrowed only to push or pop one entry, never
//!   while a microtask runs: a microtask may call `defer`, `enqueue` and
//!   `coroutine_new` freely.
//!
//! # Who touches what
//!
//! The loop thread only.
//!
//! # Drop order
//!
//! Microtasks still queued when the scheduler is destroyed are dropped
//! without running (the host owns their arguments and knows it destroyed the
//! scheduler).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;

/// A microtask's function, never NULL (checked by `defer`).
pub(crate) type TaskFn = unsafe extern "C" fn(arg: *mut c_void);

/// The microtask FIFO. See the module doc.
#[derive(Debug, Default)]
pub(crate) struct Microtasks {
    queue: RefCell<VecDeque<(TaskFn, *mut c_void)>>,
    /// `queue.len()`, readable without a borrow: checked before every switch.
    pending: Cell<usize>,
}

impl Microtasks {
    /// Queues a microtask (M-I1).
    pub(crate) fn push(&self, task: TaskFn, arg: *mut c_void) {
        self.queue.borrow_mut().push_back((task, arg));
        self.pending.set(self.pending.get() + 1);
    }

    /// Whether any microtask is waiting.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.get() == 0
    }

    /// Runs every queued microtask, including those queued meanwhile (M-I2).
    #[inline]
    pub(crate) fn drain(&self) {
        if !self.is_empty() {
            self.drain_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn drain_slow(&self) -> usize {
        let mut ran = 0;
        loop {
            // M-I3: the borrow ends with this statement.
            let next = self.queue.borrow_mut().pop_front();
            let Some((task, arg)) = next else {
                return ran;
            };
            self.pending.set(self.pending.get() - 1);
            crate::ffi::call_microtask(task, arg);
            ran += 1;
        }
    }
}
