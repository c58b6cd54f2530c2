//! Fibers: a pooled stack plus the engine's saved registers, running one
//! coroutine after another; and the idle-fiber pool.
//!
//! # The fiber loop
//!
//! ```text
//!  fiber_main(F):
//!    loop {
//!      c = F.coro.take()                 // assigned before F got control
//!      run_coroutine(c)                  // ENTER, entry(arg, status), FINISH, free c
//!      match after_finish(F) {           // tick.rs: microtasks, poll, pop
//!        next not started, fits F   -> F.coro = next; continue   (no switch)
//!        next started elsewhere     -> park F; switch F -> next's fiber
//!        nothing runnable           -> park F; switch F -> root
//!        pool full, nowhere to park -> return the target: F retires
//!      }
//!      // control came back: somebody took F from the pool and assigned it
//!    }
//! ```
//!
//! Starting a coroutine = take an idle fiber of its stack size (or make one)
//! and switch to it. The idle pool *is* the stack pool: mapping a fresh stack
//! costs microseconds, taking a parked fiber a few nanoseconds.
//!
//! # Invariants
//!
//! - **F-I1** A fiber never outlives its scheduler: `destroy` refuses while
//!   coroutines live (so no fiber holds one), and discards every idle fiber.
//! - **F-I2** A fiber is in exactly one of: *running*; *parked with a
//!   suspended coroutine* (that coroutine's `fiber` names it); *idle* (in the
//!   pool, `coro` empty); *assigned* (taken from the pool or fresh, `coro`
//!   set, about to be switched to).
//! - **F-I3** At the points where a fiber parks (the switches in
//!   `tick::after_finish`), its stack holds no value with drop glue: only
//!   references and `Copy` pointers. An idle fiber can therefore be
//!   discarded without unwinding (switch W-I4).
//! - **F-I4** At most `pool_max` fibers are idle. A fiber that would make it
//!   `pool_max + 1` evicts the oldest idle fiber instead (its stack is free
//!   to release: nothing runs on it); with `pool_max == 0` it retires itself,
//!   and its engine releases it once the switch away is done.
//!
//! # Who touches what
//!
//! The loop thread. The pool's `RefCell`s are borrowed for one push, pop or
//! release, never across a switch (scheduler R-I1).
//!
//! # Drop order
//!
//! `FiberPool::clear` (from `destroy`) discards every idle fiber and releases
//! its stack; the pool's `Stacks` then unmaps the slabs when the scheduler
//! is dropped.
//!
//! # Safety
//!
//! [`FiberPtr`] turns a raw record pointer into a reference: records are
//! freed only by `destroy` (an idle fiber) or `destroy_retired` (after its
//! engine left it), when no other copy is in use (F-I2).

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use crate::coroutine::CoroPtr;
use crate::scheduler::Scheduler;
use crate::stack::slab::StackStats;
use crate::stack::{StackSlot, Stacks};
use crate::switch::{self, die, Ctx, EngineKind, FiberState};
use crate::tick;

/// One fiber. See the module doc.
#[derive(Debug)]
pub(crate) struct Fiber {
    /// Unique within the scheduler, for tests.
    pub(crate) id: u64,
    sched: *const Scheduler,
    pub(crate) stack: StackSlot,
    /// The coroutine to run when this fiber next gets control (F-I2).
    pub(crate) coro: Cell<Option<CoroPtr>>,
    pub(crate) engine: FiberState,
}

impl Fiber {
    /// The scheduler this fiber belongs to (F-I1).
    #[inline]
    pub(crate) fn sched(&self) -> &Scheduler {
        // SAFETY: F-I1: the scheduler is boxed (stable address) and outlives
        // every fiber.
        unsafe { &*self.sched }
    }
}

/// A pointer to a fiber record that has not been freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FiberPtr(NonNull<Fiber>);

impl FiberPtr {
    /// The record.
    #[inline]
    pub(crate) fn get(&self) -> &Fiber {
        // SAFETY: module Safety: a FiberPtr in use names a record that is
        // freed only once no copy is used again.
        unsafe { self.0.as_ref() }
    }

    /// The record's address, never 0.
    #[inline]
    pub(crate) fn addr(self) -> usize {
        self.0.as_ptr() as usize
    }

    /// The inverse of [`FiberPtr::addr`].
    ///
    /// # Safety
    ///
    /// `addr` is the address of a fiber record that has not been freed.
    pub(crate) unsafe fn from_addr(addr: usize) -> FiberPtr {
        match NonNull::new(addr as *mut Fiber) {
            Some(p) => FiberPtr(p),
            None => die("null fiber address"),
        }
    }
}

/// The idle fibers and the stack allocator of one scheduler.
#[derive(Debug)]
pub(crate) struct FiberPool {
    kind: EngineKind,
    pool_max: usize,
    /// Idle fibers by usable stack size; oldest at the front.
    idle: RefCell<Vec<(usize, VecDeque<FiberPtr>)>>,
    idle_count: Cell<usize>,
    stacks: RefCell<Stacks>,
    next_id: Cell<u64>,
    /// Fibers in existence (running, parked, idle).
    live: Cell<usize>,
    /// Fibers ever made.
    created: Cell<u64>,
}

impl FiberPool {
    /// An empty pool.
    pub(crate) fn new(kind: EngineKind, pool_max: usize) -> FiberPool {
        FiberPool {
            kind,
            pool_max,
            idle: RefCell::new(Vec::new()),
            idle_count: Cell::new(0),
            stacks: RefCell::new(Stacks::new()),
            next_id: Cell::new(1),
            live: Cell::new(0),
            created: Cell::new(0),
        }
    }

    /// Takes the most recently parked idle fiber with `usable` stack bytes.
    pub(crate) fn take(&self, usable: usize) -> Option<FiberPtr> {
        let mut idle = self.idle.borrow_mut();
        let (_, list) = idle.iter_mut().find(|(size, _)| *size == usable)?;
        let f = list.pop_back()?;
        self.idle_count.set(self.idle_count.get() - 1);
        Some(f)
    }

    /// Makes a fresh fiber with `usable` stack bytes.
    ///
    /// # Errors
    ///
    /// The OS error of mapping the stack.
    pub(crate) fn create(&self, s: &Scheduler, usable: usize) -> io::Result<FiberPtr> {
        let stack = self.stacks.borrow_mut().alloc(usable)?;
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let fiber = Box::new(Fiber {
            id,
            sched: s,
            stack,
            coro: Cell::new(None),
            engine: switch::empty_state(self.kind),
        });
        let f = FiberPtr(NonNull::from(Box::leak(fiber)));
        switch::prepare(self.kind, f);
        self.live.set(self.live.get() + 1);
        self.created.set(self.created.get() + 1);
        Ok(f)
    }

    /// Parks a fiber whose coroutine finished (F-I4). Returns false when it
    /// must retire instead (`pool_max == 0`).
    pub(crate) fn park(&self, f: FiberPtr) -> bool {
        if self.idle_count.get() >= self.pool_max {
            if self.pool_max == 0 {
                return false;
            }
            if let Some(victim) = self.evict(f.get().stack.usable) {
                self.destroy(victim);
            }
        }
        let usable = f.get().stack.usable;
        let mut idle = self.idle.borrow_mut();
        match idle.iter_mut().find(|(size, _)| *size == usable) {
            Some((_, list)) => list.push_back(f),
            None => idle.push((usable, VecDeque::from([f]))),
        }
        self.idle_count.set(self.idle_count.get() + 1);
        true
    }

    /// Removes the oldest idle fiber, preferring the size class `usable`.
    fn evict(&self, usable: usize) -> Option<FiberPtr> {
        let mut idle = self.idle.borrow_mut();
        let pos = idle
            .iter()
            .position(|(size, l)| *size == usable && !l.is_empty())
            .or_else(|| idle.iter().position(|(_, l)| !l.is_empty()))?;
        let f = idle[pos].1.pop_front()?;
        self.idle_count.set(self.idle_count.get() - 1);
        Some(f)
    }

    /// Discards an idle or retired fiber: engine state, stack, record.
    fn destroy(&self, f: FiberPtr) {
        switch::discard(self.kind, f);
        self.stacks.borrow_mut().release(f.get().stack);
        self.live.set(self.live.get() - 1);
        // SAFETY: F-I2: an idle fiber was just removed from the pool and a
        // retired one left by its engine; no copy of `f` is used after this.
        drop(unsafe { Box::from_raw(f.0.as_ptr()) });
    }

    /// Discards every idle fiber (scheduler `destroy`).
    pub(crate) fn clear(&self) {
        while let Some(f) = self.evict(0) {
            self.destroy(f);
        }
    }

    /// `(fibers alive, fibers idle, fibers ever made, stack counters)`.
    pub(crate) fn stats(&self) -> (usize, usize, u64, StackStats) {
        (
            self.live.get(),
            self.idle_count.get(),
            self.created.get(),
            self.stacks.borrow().stats(),
        )
    }
}

/// Releases a fiber that retired itself, once its engine has left its stack
/// (F-I4).
pub(crate) fn destroy_retired(s: &Scheduler, f: FiberPtr) {
    s.fibers.destroy(f);
}

/// The body of every fiber, on its own stack (module doc). Returns the
/// context to go to when the fiber retires. Never unwinds (switch W-I3).
pub(crate) fn fiber_main(f: FiberPtr) -> Ctx {
    let s = f.get().sched();
    match catch_unwind(AssertUnwindSafe(|| fiber_loop(s, f))) {
        Ok(next) => next,
        Err(payload) => die(&format!(
            "panic in the fiber loop: {}",
            async_abi::sdk::panic_message(&*payload)
        )),
    }
}

fn fiber_loop(s: &Scheduler, f: FiberPtr) -> Ctx {
    loop {
        let Some(c) = f.get().coro.take() else {
            die("a fiber got control with no coroutine assigned")
        };
        tick::run_coroutine(s, f, c);
        if let Some(retire_to) = tick::after_finish(s, f) {
            return retire_to;
        }
    }
}
