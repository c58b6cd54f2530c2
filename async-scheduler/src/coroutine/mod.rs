//! Coroutine records: what the `*mut AaCoroutine` handles point to, the
//! list of live coroutines, and switch handlers.
//!
//! # What it owns
//!
//! Each record ([`Coro`]) is one heap allocation, so its address is stable
//! and is the handle the host holds. The scheduler owns every record (AA-R1)
//! through the intrusive *live list* ([`LiveList`]), which links records in
//! creation order: `iterate` walks it, and membership changes are O(1).
//!
//! # Invariants
//!
//! - **C-I1** A [`CoroPtr`] the scheduler holds (in the live list, the run
//!   queue, `current`, a fiber's assignment, a local variable) names a live
//!   record: a record leaves use only through [`release`], called by the
//!   fiber that ran the coroutine, after its entry returned, its FINISH
//!   handlers ran, and it was unlinked from the live list and the run queue
//!   (Q-I2). Nothing else keeps a copy at that point.
//! - **C-I2** Every field that changes after creation is a `Cell`, read and
//!   written by copy or by `take`/`set`, so re-entrant calls (a handler that
//!   enqueues, a microtask that adds a handler) never meet a borrow.
//! - **C-I3** `wait` is non-NULL only while the coroutine is inside
//!   `suspend` (SUSPENDED, or QUEUED after it suspended): the host keeps the
//!   `AaWaitInfo` alive until `suspend` returns, so reading it then is sound.
//! - **C-I4** `spawn_file` is borrowed until the coroutine finishes (the ABI
//!   says the host keeps it valid that long).
//! - **C-I5** Switch handlers run on the coroutine's own stack, in the order
//!   they were added; handlers added while handlers run are appended after
//!   the run, and run from the next switch on.
//! - **C-I6** A released record is freed, or kept for reuse in the
//!   [`RecordPool`] (at most [`RECORDS_KEPT`], linked through `q_next`),
//!   where only the pool holds its pointer. `coroutine_new` reuses a kept
//!   record by overwriting it whole, so a spawn costs no allocation in the
//!   steady state. The handle of a finished coroutine may therefore name a
//!   later coroutine: the host must not use it (ABI rule C2). The pool
//!   frees what it keeps when the scheduler is dropped.
//!
//! # Who touches what
//!
//! The loop thread only. The record's immutable fields (id, entry, arg,
//! priority, stack size, spawn location) are set by `coroutine_new`; the
//! cells are changed by `enqueue`, the tick, the fiber loop and shutdown.
//!
//! # Drop order
//!
//! A record is released by the fiber loop right after FINISH (C-I1), to
//! the pool or freed (C-I6). A record still alive when the scheduler is
//! destroyed cannot exist: `destroy` fails with `AA_E_BUSY` while the live
//! list is non-empty; the pool's records are freed when it is dropped.
//!
//! # Safety
//!
//! [`CoroPtr`] turns a raw record pointer into a reference; C-I1 is the
//! reason that is sound. `free` and `overwrite` are `unsafe` because only
//! their callers can establish C-I1's "nothing else keeps a copy" (C-I6 for
//! a pooled record).

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

pub(crate) mod state;

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr::NonNull;

use async_abi::{AaCoroutine, AaStatus, AaStr, AaWaitInfo};

use crate::fiber::FiberPtr;
use crate::run_queue::RunQueue;
pub(crate) use state::State;

/// A coroutine's entry, never NULL (checked by `coroutine_new`).
pub(crate) type EntryFn = unsafe extern "C" fn(arg: *mut c_void, start_status: AaStatus);

/// A switch handler, never NULL (checked by `add_switch_handler`).
pub(crate) type HandlerFn =
    unsafe extern "C" fn(coro: *mut AaCoroutine, kind: u32, arg: *mut c_void) -> bool;

/// Where a coroutine was spawned (borrowed, C-I4).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpawnSite {
    pub(crate) file: AaStr,
    pub(crate) line: u32,
    pub(crate) column: u32,
}

/// A coroutine's switch handlers, in the order they were added (C-I5).
type Handlers = Vec<(HandlerFn, *mut c_void)>;

/// One coroutine. See the module invariants.
pub(crate) struct Coro {
    /// Unique for the scheduler's lifetime, never 0, increasing.
    pub(crate) id: u64,
    pub(crate) entry: EntryFn,
    pub(crate) arg: *mut c_void,
    /// `AA_PRIORITY_NORMAL` or `AA_PRIORITY_HIGH`.
    pub(crate) priority: u32,
    /// Usable stack bytes this coroutine needs (page-aligned).
    pub(crate) stack_size: usize,
    pub(crate) spawn: SpawnSite,
    pub(crate) state: Cell<State>,
    /// The entry has been called (C1: at most once).
    pub(crate) started: Cell<bool>,
    /// RUNNING and already in the run queue (enqueued while running).
    pub(crate) in_queue: Cell<bool>,
    /// The status of the pending start or resume.
    pub(crate) status: Cell<AaStatus>,
    /// The fiber it runs on, once started.
    pub(crate) fiber: Cell<Option<FiberPtr>>,
    /// What it waits for (C-I3).
    pub(crate) wait: Cell<*const AaWaitInfo>,
    /// How many times it received control.
    pub(crate) switches: Cell<u64>,
    /// Boxed: rare, and every record (a million, at scale) would carry an
    /// empty `Vec`'s 24 bytes.
    #[allow(clippy::box_collection)]
    handlers: Cell<Option<Box<Handlers>>>,
    /// Whether `handlers` may be non-empty: the fast path of every switch
    /// skips them without touching the vector.
    has_handlers: Cell<bool>,
    /// The run queue's link (run_queue Q-I4).
    pub(crate) q_next: Cell<Option<CoroPtr>>,
    prev: Cell<Option<CoroPtr>>,
    next: Cell<Option<CoroPtr>>,
}

impl std::fmt::Debug for Coro {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coro")
            .field("id", &self.id)
            .field("state", &self.state.get())
            .finish_non_exhaustive()
    }
}

impl Coro {
    /// A record in state CREATED.
    pub(crate) fn new(
        id: u64,
        entry: EntryFn,
        arg: *mut c_void,
        priority: u32,
        stack_size: usize,
        spawn: SpawnSite,
    ) -> Coro {
        Coro {
            id,
            entry,
            arg,
            priority,
            stack_size,
            spawn,
            state: Cell::new(State::Created),
            started: Cell::new(false),
            in_queue: Cell::new(false),
            status: Cell::new(0),
            fiber: Cell::new(None),
            wait: Cell::new(std::ptr::null()),
            switches: Cell::new(0),
            handlers: Cell::new(None),
            has_handlers: Cell::new(false),
            q_next: Cell::new(None),
            prev: Cell::new(None),
            next: Cell::new(None),
        }
    }

    /// Adds a switch handler (C-I5).
    pub(crate) fn add_handler(&self, f: HandlerFn, arg: *mut c_void) {
        let mut hs = self.handlers.take().unwrap_or_default();
        hs.push((f, arg));
        self.handlers.set(Some(hs));
        self.has_handlers.set(true);
    }
}

/// A pointer to a live record (C-I1); also the ABI handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CoroPtr(NonNull<Coro>);

impl CoroPtr {
    /// Moves a new record to the heap; the caller links it into the live
    /// list.
    pub(crate) fn alloc(coro: Coro) -> CoroPtr {
        CoroPtr(NonNull::from(Box::leak(Box::new(coro))))
    }

    /// The record.
    #[inline]
    pub(crate) fn get(&self) -> &Coro {
        // SAFETY: C-I1: a CoroPtr held by the scheduler names a record that
        // `free` has not freed, and records are only read through shared
        // references (C-I2).
        unsafe { self.0.as_ref() }
    }

    /// The handle given to the host.
    #[inline]
    pub(crate) fn as_abi(self) -> *mut AaCoroutine {
        self.0.as_ptr().cast()
    }

    /// The record behind a handle the host gave back; `None` for NULL.
    ///
    /// # Safety
    ///
    /// `p` must be NULL or a handle this scheduler returned from
    /// `coroutine_new` for a coroutine that has not finished (rule C2), so
    /// that C-I1 holds for the result.
    pub(crate) unsafe fn from_abi(p: *const AaCoroutine) -> Option<CoroPtr> {
        NonNull::new(p as *mut Coro).map(CoroPtr)
    }

    /// Frees the record.
    ///
    /// # Safety
    ///
    /// The coroutine is FINISHED and unlinked from the live list and the run
    /// queue (or the record is a pooled one), and no other copy of this
    /// pointer will be used again (C-I1, C-I6).
    pub(crate) unsafe fn free(self) {
        // SAFETY: the record was made by `alloc` (Box::leak) and, by this
        // function's contract, nobody refers to it any more.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }

    /// Replaces a pooled record with a new coroutine's (the old one's fields
    /// are dropped in place).
    ///
    /// # Safety
    ///
    /// The record was just taken out of the [`RecordPool`], so no reference
    /// to it exists and no other copy of the pointer is in use (C-I6).
    unsafe fn overwrite(self, coro: Coro) {
        // SAFETY: the allocation is live (made by `alloc`, never freed while
        // pooled) and, by this function's contract, unaliased.
        unsafe { *self.0.as_ptr() = coro };
    }

    /// Runs this coroutine's switch handlers with `kind`, removing those that
    /// return false (C-I5), with suspension forbidden (scheduler SR3).
    /// Called on the coroutine's own stack.
    #[inline]
    pub(crate) fn fire_handlers(self, s: &crate::scheduler::Scheduler, kind: u32) {
        if self.get().has_handlers.get() {
            self.fire_handlers_slow(s, kind);
        }
    }

    #[cold]
    #[inline(never)]
    fn fire_handlers_slow(self, s: &crate::scheduler::Scheduler, kind: u32) {
        let coro = self.get();
        let mut hs = coro.handlers.take().unwrap_or_default();
        s.forbid_suspend(|| {
            hs.retain(|&(f, arg)| crate::ffi::call_handler(f, self.as_abi(), kind, arg))
        });
        if let Some(mut added) = coro.handlers.take() {
            hs.append(&mut added);
        }
        coro.has_handlers.set(!hs.is_empty());
        coro.handlers.set((!hs.is_empty()).then_some(hs));
    }
}

/// The intrusive list of live coroutines, in creation order. See the module
/// doc.
#[derive(Debug, Default)]
pub(crate) struct LiveList {
    head: Cell<Option<CoroPtr>>,
    tail: Cell<Option<CoroPtr>>,
    len: Cell<usize>,
}

impl LiveList {
    /// Appends a new record.
    pub(crate) fn push_back(&self, c: CoroPtr) {
        let coro = c.get();
        coro.prev.set(self.tail.get());
        coro.next.set(None);
        match self.tail.get() {
            Some(t) => t.get().next.set(Some(c)),
            None => self.head.set(Some(c)),
        }
        self.tail.set(Some(c));
        self.len.set(self.len.get() + 1);
    }

    /// Unlinks a record (before it is freed, C-I1).
    pub(crate) fn remove(&self, c: CoroPtr) {
        let coro = c.get();
        let (prev, next) = (coro.prev.take(), coro.next.take());
        match prev {
            Some(p) => p.get().next.set(next),
            None => self.head.set(next),
        }
        match next {
            Some(n) => n.get().prev.set(prev),
            None => self.tail.set(prev),
        }
        self.len.set(self.len.get() - 1);
    }

    /// Live coroutines.
    pub(crate) fn len(&self) -> usize {
        self.len.get()
    }

    /// The oldest live coroutine.
    pub(crate) fn first(&self) -> Option<CoroPtr> {
        self.head.get()
    }

    /// The coroutine created after `c`.
    pub(crate) fn next(&self, c: CoroPtr) -> Option<CoroPtr> {
        c.get().next.get()
    }

    /// Snapshot of the live coroutines that satisfy `pred`, in creation
    /// order (for deadlock reports and shutdown, which then call out).
    pub(crate) fn collect(&self, mut pred: impl FnMut(&Coro) -> bool) -> Vec<CoroPtr> {
        let mut out = Vec::new();
        let mut at = self.first();
        while let Some(c) = at {
            if pred(c.get()) {
                out.push(c);
            }
            at = self.next(c);
        }
        out
    }
}

/// Unlinks a FINISHED coroutine from the live list and the run queue and
/// hands its record to the pool, which keeps or frees it (C-I1, C-I6).
/// Called once, by the fiber that ran it, after its FINISH handlers; the
/// caller drops its copy right after, and `current` no longer names it.
pub(crate) fn release(c: CoroPtr, live: &LiveList, queue: &RunQueue, records: &RecordPool) {
    let coro = c.get();
    if coro.state.get() != State::Finished {
        crate::switch::die("release of a coroutine that has not finished");
    }
    live.remove(c);
    if coro.in_queue.get() {
        queue.remove(c);
    }
    records.keep_or_free(c);
}

/// How many finished records the pool keeps for reuse (C-I6).
pub(crate) const RECORDS_KEPT: usize = 256;

/// Finished records kept for reuse, linked through `q_next` (C-I6).
#[derive(Debug, Default)]
pub(crate) struct RecordPool {
    free: Cell<Option<CoroPtr>>,
    len: Cell<usize>,
}

impl RecordPool {
    /// A record holding `coro`: a kept one overwritten, or a new one.
    #[inline]
    pub(crate) fn alloc(&self, coro: Coro) -> CoroPtr {
        let Some(c) = self.free.get() else {
            return CoroPtr::alloc(coro);
        };
        self.free.set(c.get().q_next.get());
        self.len.set(self.len.get() - 1);
        // SAFETY: C-I6: taken out of the pool just above, where only the
        // pool held it.
        unsafe { c.overwrite(coro) };
        c
    }

    /// Keeps a released record, or frees it when the pool is full.
    #[inline]
    fn keep_or_free(&self, c: CoroPtr) {
        if self.len.get() < RECORDS_KEPT {
            c.get().q_next.set(self.free.replace(Some(c)));
            self.len.set(self.len.get() + 1);
        } else {
            // SAFETY: C-I1: FINISHED and unlinked by `release`, whose caller
            // keeps no copy.
            unsafe { c.free() };
        }
    }
}

impl Drop for RecordPool {
    fn drop(&mut self) {
        let mut at = self.free.take();
        while let Some(c) = at {
            at = c.get().q_next.get();
            // SAFETY: C-I6: pooled, so nothing else refers to it; `at`
            // was read before the free.
            unsafe { c.free() };
        }
    }
}

/// What a coroutine waits for, read from its `AaWaitInfo` (C-I3).
#[derive(Debug)]
pub(crate) struct WaitView<'a> {
    pub(crate) what: std::borrow::Cow<'a, str>,
    pub(crate) file: std::borrow::Cow<'a, str>,
    pub(crate) line: u32,
    pub(crate) column: u32,
}

impl Coro {
    /// The spawn file, lossily decoded (C-I4).
    pub(crate) fn spawn_file(&self) -> std::borrow::Cow<'_, str> {
        // SAFETY: C-I4: the host keeps the string valid until the coroutine
        // finished, and `self` is not finished while borrowed here.
        String::from_utf8_lossy(unsafe { self.spawn.file.as_bytes() })
    }

    /// What it waits for, while it is inside `suspend` with a wait info.
    pub(crate) fn wait_view(&self) -> Option<WaitView<'_>> {
        let p = self.wait.get();
        if p.is_null() {
            return None;
        }
        // SAFETY: C-I3: non-NULL only while the coroutine is inside
        // `suspend`, and the host keeps the struct alive until it returns.
        let size = unsafe { (*p).struct_size } as usize;
        if size < std::mem::size_of::<AaWaitInfo>() {
            return None;
        }
        // SAFETY: as above; the whole struct is present (checked size).
        let w = unsafe { &*p };
        // SAFETY: the strings of a live wait info are valid (AA-R2 for the
        // duration of the `suspend` call, C-I3).
        let (what, file) = unsafe { (w.what.as_bytes(), w.file.as_bytes()) };
        Some(WaitView {
            what: String::from_utf8_lossy(what),
            file: String::from_utf8_lossy(file),
            line: w.line,
            column: w.column,
        })
    }
}
