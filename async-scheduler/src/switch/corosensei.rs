//! The `corosensei` engine: each fiber is a `corosensei::Coroutine` on a
//! pooled stack. Asymmetric: a fiber can only suspend back to whoever
//! resumed it, and the root context is the only resumer.
//!
//! # How a switch works
//!
//! ```text
//!  root: trampoline(B)                 fiber A            fiber B
//!    loop: B.resume(()) ------------------------------------> runs
//!                                                      switch(B -> A):
//!          <------------------------------------------- yielder.suspend(A)
//!    next = A; A.resume(()) ---------> runs (its own
//!                                      suspend returns)
//! ```
//!
//! A direct switch A -> B is therefore two corosensei switches (A to the
//! root with "go to B", the root into B), each about 1-2 ns, inside the same
//! tick: the root does no scheduling work in between. Switching *to* the
//! root is a single suspend, and the root's `trampoline` returns to its
//! caller (the root loop). A fiber that retires returns from its closure
//! with the context to go to; the trampoline drops it (its stack is no
//! longer in use) and continues there.
//!
//! corosensei saves only the callee-saved general-purpose registers: MXCSR
//! and the x87 control word are thread-wide, so floating-point work in one
//! coroutine costs nothing at the next switch (README benchmark). Control
//! bits a coroutine changes (rounding mode) are therefore seen by the next
//! coroutine too: a coroutine that changes them must restore them before it
//! suspends.
//!
//! # Invariants
//!
//! - **K-I1** Only the trampoline creates a `&mut` to a fiber's
//!   `Coroutine`, for the duration of one `resume`, and only for a parked or
//!   fresh fiber (switch W-I2), so two never overlap.
//! - **K-I2** `yielder` is set by the fiber's closure on its first run and
//!   points into that closure's frame, at the top of the fiber's stack,
//!   which lives until the fiber retires; it is only used by code running on
//!   that fiber.
//! - **K-I3** A discarded idle fiber is parked inside `suspend` with no drop
//!   glue on its stack (switch W-I4), so `force_reset` (which forgets the
//!   stack without unwinding it) drops nothing that needed dropping.
//!
//! # Safety
//!
//! [`PooledStack`] implements corosensei's `unsafe trait Stack` over a slot
//! that has a guard page and at least 16 KiB usable (stack S-I1..S-I3).
//! K-I1..K-I3 justify the raw accesses below.

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::cell::{Cell, UnsafeCell};
use std::num::NonZeroUsize;

use ::corosensei::stack::{Stack, StackPointer};
use ::corosensei::{Coroutine, CoroutineResult, Yielder};

use super::{die, Ctx, Engine, FiberState};
use crate::fiber::{self, FiberPtr};
use crate::scheduler::Scheduler;

/// A pooled stack slot as corosensei sees it.
#[derive(Debug)]
pub(crate) struct PooledStack {
    base: NonZeroUsize,
    limit: NonZeroUsize,
}

// SAFETY: the slot has a guard page at `limit` (stack S-I2) and at least
// MIN_STACK_SIZE (16 KiB) usable bytes above it (options); `limit` is
// page-aligned and `base` is the slot's top less the fiber record's
// RECORD_BYTES, a multiple of 64 (fiber F-I8), so both are aligned to
// corosensei's STACK_ALIGNMENT (S-I1); the fiber record keeps the slot until
// the coroutine is dropped (S-I4).
unsafe impl Stack for PooledStack {
    #[inline]
    fn base(&self) -> StackPointer {
        self.base
    }

    #[inline]
    fn limit(&self) -> StackPointer {
        self.limit
    }
}

type Co = Coroutine<(), usize, usize, PooledStack>;

/// A fiber's corosensei state.
pub(crate) struct CorosenseiFiber {
    co: UnsafeCell<Option<Co>>,
    yielder: Cell<*const Yielder<(), usize>>,
}

impl std::fmt::Debug for CorosenseiFiber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorosenseiFiber")
            .field("yielder", &self.yielder.get())
            .finish_non_exhaustive()
    }
}

/// The `corosensei` engine. See the module doc.
#[derive(Debug)]
pub(crate) struct CorosenseiEngine;

fn state(f: &FiberPtr) -> &CorosenseiFiber {
    match &f.get().engine {
        FiberState::Corosensei(st) => st,
        FiberState::Context(_) => die("corosensei engine given a context fiber"),
    }
}

// SAFETY: corosensei saves and restores the callee-saved registers, stack
// pointer and return address; the closure runs `fiber_main` on the fiber's
// stack and returns the next context when the fiber retires, and the
// trampoline drops the fiber only after that return; `fiber_main` never
// unwinds (W-I3).
unsafe impl Engine for CorosenseiEngine {
    type Fiber = CorosenseiFiber;

    fn empty() -> CorosenseiFiber {
        CorosenseiFiber {
            co: UnsafeCell::new(None),
            yielder: Cell::new(std::ptr::null()),
        }
    }

    fn prepare(fiber: FiberPtr) {
        let slot = fiber.get().stack;
        let (Some(base), Some(limit)) = (
            NonZeroUsize::new(fiber.get().top()),
            NonZeroUsize::new(slot.limit),
        ) else {
            die("corosensei engine: null stack slot")
        };
        let co = Co::with_stack(PooledStack { base, limit }, move |yielder, ()| {
            state(&fiber).yielder.set(yielder as *const _);
            fiber::fiber_main(fiber).encode()
        });
        // SAFETY: the fiber is new: nobody holds a reference into the cell
        // (K-I1).
        unsafe { *state(&fiber).co.get() = Some(co) };
    }

    #[inline]
    fn switch(s: &Scheduler, from: Ctx, to: Ctx) {
        match from {
            Ctx::Root => trampoline(s, to),
            Ctx::Fiber(f) => suspend_to(f, to),
        }
    }

    fn discard(fiber: FiberPtr) {
        // SAFETY: K-I1: the fiber is idle or retired, so the trampoline is
        // not resuming it and no other `&mut` exists.
        let co = unsafe { &mut *state(&fiber).co.get() }.take();
        if let Some(mut co) = co {
            // SAFETY: K-I3: nothing on the parked stack needs dropping, so
            // forgetting it is sound; a returned coroutine has nothing left.
            unsafe { co.force_reset() };
            drop(co);
        }
    }
}

/// A fiber's side of a switch: suspends to the root, naming `to`. Out of
/// line and small, so corosensei's suspend inlines into it.
#[inline(never)]
fn suspend_to(f: FiberPtr, to: Ctx) {
    let yielder = state(&f).yielder.get();
    // SAFETY: K-I2: we run on fiber `f`, whose closure frame holding the
    // yielder is live; the root resumes us later through the trampoline,
    // which sets `running`.
    unsafe { (*yielder).suspend(to.encode()) };
}

/// The root's side of every switch: resumes `to`, then whatever each fiber
/// names when it suspends, until one names the root. Out of line, so the
/// resume inlines into one small loop.
#[inline(never)]
fn trampoline(s: &Scheduler, mut to: Ctx) {
    loop {
        let Ctx::Fiber(g) = to else {
            s.root.running.set(Ctx::Root);
            return;
        };
        s.root.running.set(to);
        // SAFETY: K-I1: the only `&mut` to this coroutine, for one resume;
        // `g` is parked or fresh (W-I2), so not already resumed.
        let co = unsafe { &mut *state(&g).co.get() };
        let Some(co) = co.as_mut() else {
            die("corosensei engine: switch to a fiber with no coroutine")
        };
        let next = match co.resume(()) {
            CoroutineResult::Yield(next) => next,
            CoroutineResult::Return(next) => {
                // The fiber retired: nothing runs on its stack any more.
                fiber::destroy_retired(s, g);
                next
            }
        };
        // SAFETY: `next` was encoded by the fiber from a live context.
        to = unsafe { Ctx::decode(next) };
    }
}
