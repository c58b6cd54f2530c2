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
//! - **F-I4** At most `stack_pool` fibers are idle: the idle pool is the
//!   pool of warm stacks, and parking or taking a fiber makes no system
//!   call. A fiber that would make it `stack_pool + 1` first evicts the
//!   [`evict_batch`] oldest idle fibers (a quarter of the bound, 1 to 32):
//!   their stacks are the coldest, nothing runs on them, and they are given
//!   back to the kernel together (stack slab A-I5: one `madvise` per run of
//!   adjacent slots), so a burst beyond the bound costs a system call per
//!   batch, not per coroutine. With `stack_pool == 0` a fiber retires
//!   itself, and its engine frees it (giving its stack back) once the switch
//!   away is done.
//! - **F-I5** The idle fibers of one stack size form a list linked through
//!   their records (`idle_newer`/`idle_older`), newest and oldest at the
//!   ends of its [`SizeClass`]; a fiber's links are `None` while it is not
//!   idle. `take` pops the newest (its stack is warm), eviction the oldest.
//!   The size class of the scheduler's default stack size is a field, so
//!   the common park and take find it without a search.
//! - **F-I7** Every fiber's stack is registered with valgrind
//!   (`VALGRIND_STACK_REGISTER`) from the moment the record is made, right
//!   after the allocator handed the stack out, until the record is dropped,
//!   right before the stack goes back to the allocator; valgrind then takes
//!   a switch between stacks for what it is instead of a wild stack-pointer
//!   change ("client switching stacks?"), under both engines. The request
//!   is the magic no-op instruction sequence of `valgrind.h` (x86_64,
//!   aarch64), issued through corosensei's `ValgrindStackRegistration`:
//!   about six instructions and no system call when valgrind is not there,
//!   once per fiber made or destroyed, never per switch. (Asking
//!   `RUNNING_ON_VALGRIND` first would be another request of the same cost.)
//! - **F-I8** A fiber's record lives at the top of its own stack slot, in
//!   the [`RECORD_BYTES`] below `stack.base`; the engine's stack starts
//!   below it ([`Fiber::top`]). The first run of a coroutine touches that
//!   page anyway, so a fresh fiber costs no heap allocation and its record
//!   shares the page its first frames use (measured with a million
//!   suspended coroutines: about 150 MiB less resident and no `malloc` per
//!   fresh fiber). The record is dropped in place before its slot goes back
//!   to the allocator (`forget`), which is the only way a slot is released
//!   (stack S-I4), so no record is ever read from a given-back page.
//! - **F-I6** `occupant` names the coroutine whose entry was called on the
//!   fiber and has not returned, and is cleared before that coroutine's
//!   record is released (coroutine C-I1), so it never names a freed record.
//!   Set once per coroutine, not per switch.
//!
//! # Who touches what
//!
//! The loop thread. The pool's `RefCell`s are borrowed for one push, pop or
//! release, never across a switch (scheduler SR1).
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
//! dropped only by `destroy` (an idle fiber) or `destroy_retired` (after
//! its engine left it), when no other copy is in use (F-I2), and live in
//! their own stack slot until then (F-I8).

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use ::corosensei::stack::valgrind::ValgrindStackRegistration;

use crate::coroutine::CoroPtr;
use crate::scheduler::Scheduler;
use crate::stack::prefault::Mode;
use crate::stack::slab::{StackStats, MAX_EVICT_BATCH};
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
    /// The coroutine whose entry runs on this fiber, from its start until
    /// just before its record is released (F-I6): what a stack overflow
    /// report names (stack/overflow.rs).
    pub(crate) occupant: Cell<Option<CoroPtr>>,
    pub(crate) engine: FiberState,
    /// F-I5.
    idle_newer: Cell<Option<FiberPtr>>,
    idle_older: Cell<Option<FiberPtr>>,
    /// Tells valgrind that `stack` is a stack for as long as this record
    /// lives (F-I7).
    _valgrind: ValgrindStackRegistration,
}

/// The bytes at the top of each stack slot that hold its fiber's record
/// (F-I8): a multiple of 64, so the engine's stack top below it keeps the
/// 16-byte alignment both engines need and the record its own cache lines.
pub(crate) const RECORD_BYTES: usize = std::mem::size_of::<Fiber>().next_multiple_of(64);

const _: () = assert!(std::mem::align_of::<Fiber>() <= 64);
// F-I8: a stack of the minimum 16 KiB keeps over 98% of its bytes.
const _: () = assert!(RECORD_BYTES <= 256);

impl Fiber {
    /// Where the engine's stack starts: just below this record (F-I8).
    #[inline]
    pub(crate) fn top(&self) -> usize {
        self.stack.base - RECORD_BYTES
    }

    /// The stack bytes the engine runs on, below the record (F-I8).
    #[cfg(asan)]
    #[inline]
    pub(crate) fn stack_bytes(&self) -> usize {
        self.stack.usable - RECORD_BYTES
    }

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

/// The idle fibers of one stack size (F-I5).
#[derive(Debug)]
struct SizeClass {
    usable: usize,
    newest: Cell<Option<FiberPtr>>,
    oldest: Cell<Option<FiberPtr>>,
}

impl SizeClass {
    fn new(usable: usize) -> SizeClass {
        SizeClass {
            usable,
            newest: Cell::new(None),
            oldest: Cell::new(None),
        }
    }

    fn push_newest(&self, f: FiberPtr) {
        let old = self.newest.replace(Some(f));
        f.get().idle_older.set(old);
        match old {
            Some(o) => o.get().idle_newer.set(Some(f)),
            None => self.oldest.set(Some(f)),
        }
    }

    fn pop_newest(&self) -> Option<FiberPtr> {
        let f = self.newest.get()?;
        let older = f.get().idle_older.take();
        self.newest.set(older);
        match older {
            Some(o) => o.get().idle_newer.set(None),
            None => self.oldest.set(None),
        }
        Some(f)
    }

    fn pop_oldest(&self) -> Option<FiberPtr> {
        let f = self.oldest.get()?;
        let newer = f.get().idle_newer.take();
        self.oldest.set(newer);
        match newer {
            Some(n) => n.get().idle_older.set(None),
            None => self.newest.set(None),
        }
        Some(f)
    }
}

/// How many idle fibers one eviction removes when the pool of `stack_pool`
/// is full (F-I4): a quarter, so three quarters of the warm stacks stay, at
/// least 1 and at most [`MAX_EVICT_BATCH`].
pub(crate) fn evict_batch(stack_pool: usize) -> usize {
    (stack_pool / 4).clamp(1, MAX_EVICT_BATCH)
}

/// The idle fibers and the stack allocator of one scheduler.
#[derive(Debug)]
pub(crate) struct FiberPool {
    kind: EngineKind,
    /// F-I4.
    stack_pool: usize,
    /// Idle fibers of the default stack size (F-I5).
    default_class: SizeClass,
    /// Idle fibers of other sizes, one class per size ever parked.
    other_classes: RefCell<Vec<SizeClass>>,
    idle_count: Cell<usize>,
    stacks: RefCell<Stacks>,
    next_id: Cell<u64>,
    /// Fibers in existence (running, parked, idle).
    live: Cell<usize>,
    /// Fibers ever made.
    created: Cell<u64>,
}

impl FiberPool {
    /// An empty pool of at most `stack_pool` idle fibers; `default_usable`
    /// is the scheduler's default stack size, `prefault` says whether its
    /// allocator prepares stacks on a helper thread (stack/prefault.rs).
    pub(crate) fn new(
        kind: EngineKind,
        stack_pool: usize,
        default_usable: usize,
        prefault: Mode,
    ) -> FiberPool {
        FiberPool {
            kind,
            stack_pool,
            default_class: SizeClass::new(default_usable),
            other_classes: RefCell::new(Vec::new()),
            idle_count: Cell::new(0),
            stacks: RefCell::new(Stacks::new(prefault)),
            next_id: Cell::new(1),
            live: Cell::new(0),
            created: Cell::new(0),
        }
    }

    /// Runs `f` on the size class of `usable`, if one exists (the borrow
    /// of `other_classes` lasts for `f` only, which calls nothing out).
    #[inline]
    fn with_class<R>(&self, usable: usize, f: impl FnOnce(&SizeClass) -> R) -> Option<R> {
        if usable == self.default_class.usable {
            return Some(f(&self.default_class));
        }
        let others = self.other_classes.borrow();
        others.iter().find(|c| c.usable == usable).map(f)
    }

    /// Takes the most recently parked idle fiber with `usable` stack bytes.
    #[inline]
    pub(crate) fn take(&self, usable: usize) -> Option<FiberPtr> {
        let f = self.with_class(usable, SizeClass::pop_newest)??;
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
        let page = stack.base - stack.limit - stack.usable;
        let at = stack.base - RECORD_BYTES;
        let fiber = Fiber {
            id,
            sched: s,
            // F-I7: the engine's part of the usable range (F-I8), below
            // which lies the guard page.
            _valgrind: ValgrindStackRegistration::new(
                (stack.limit + page) as *mut u8,
                stack.usable - RECORD_BYTES,
            ),
            stack,
            coro: Cell::new(None),
            occupant: Cell::new(None),
            engine: switch::empty_state(self.kind),
            idle_newer: Cell::new(None),
            idle_older: Cell::new(None),
        };
        // SAFETY: F-I8: `[at, base)` is the top of the usable range of a
        // slot just handed to us (stack S-I3: ours alone, readable and
        // writable), page-aligned minus a multiple of 64, so aligned for a
        // `Fiber`; nothing was there before.
        unsafe { std::ptr::write(at as *mut Fiber, fiber) };
        // SAFETY: `at` is inside a mapping, so not null.
        let f = FiberPtr(unsafe { NonNull::new_unchecked(at as *mut Fiber) });
        switch::prepare(self.kind, f);
        self.live.set(self.live.get() + 1);
        self.created.set(self.created.get() + 1);
        Ok(f)
    }

    /// Parks a fiber whose coroutine finished (F-I4). Returns false when it
    /// must retire instead (`stack_pool == 0`).
    #[inline]
    pub(crate) fn park(&self, f: FiberPtr) -> bool {
        if self.idle_count.get() >= self.stack_pool {
            return self.park_full(f);
        }
        self.push_idle(f);
        true
    }

    /// `park` when the pool is full: evict a batch of the oldest idle
    /// fibers first and give their stacks back together (F-I4).
    #[cold]
    #[inline(never)]
    fn park_full(&self, f: FiberPtr) -> bool {
        if self.stack_pool == 0 {
            return false;
        }
        let usable = f.get().stack.usable;
        // Filler for the unused tail; only `slots[..n]` is read.
        let mut slots = [f.get().stack; MAX_EVICT_BATCH];
        let mut n = 0;
        while n < evict_batch(self.stack_pool) {
            let Some(victim) = self.evict(usable) else {
                break;
            };
            slots[n] = self.forget(victim);
            n += 1;
        }
        self.stacks.borrow_mut().release_batch(&mut slots[..n]);
        self.push_idle(f);
        true
    }

    #[inline]
    fn push_idle(&self, f: FiberPtr) {
        let usable = f.get().stack.usable;
        if self.with_class(usable, |c| c.push_newest(f)).is_none() {
            let class = SizeClass::new(usable);
            class.push_newest(f);
            self.other_classes.borrow_mut().push(class);
        }
        self.idle_count.set(self.idle_count.get() + 1);
    }

    /// Removes the oldest idle fiber, preferring the size class `usable`.
    fn evict(&self, usable: usize) -> Option<FiberPtr> {
        let f = match self.with_class(usable, SizeClass::pop_oldest).flatten() {
            Some(f) => f,
            None => match self.default_class.pop_oldest() {
                Some(f) => f,
                None => {
                    let others = self.other_classes.borrow();
                    others.iter().find_map(SizeClass::pop_oldest)?
                }
            },
        };
        self.idle_count.set(self.idle_count.get() - 1);
        Some(f)
    }

    /// Discards an idle or retired fiber's engine state and record, and
    /// returns its stack, which the caller hands back to the allocator.
    fn forget(&self, f: FiberPtr) -> StackSlot {
        switch::discard(self.kind, f);
        let stack = f.get().stack;
        self.live.set(self.live.get() - 1);
        // SAFETY: F-I2: an idle fiber was just removed from the pool and a
        // retired one left by its engine; no copy of `f` is used after this.
        // F-I8: the record was written in place by `create`, and its slot
        // goes back to the allocator only after this drop.
        unsafe { std::ptr::drop_in_place(f.0.as_ptr()) };
        stack
    }

    /// Discards an idle or retired fiber: engine state, record, stack.
    fn destroy(&self, f: FiberPtr) {
        let stack = self.forget(f);
        self.stacks.borrow_mut().release(stack);
    }

    /// Discards every idle fiber (scheduler `destroy`). Their stacks are not
    /// given back one by one: the slabs are unmapped right after.
    pub(crate) fn clear(&self) {
        while let Some(f) = self.evict(0) {
            let stack = self.forget(f);
            self.stacks.borrow_mut().abandon(stack);
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
