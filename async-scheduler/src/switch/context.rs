//! The `context` engine: Boost.Context's `jump_fcontext`, through the
//! `context` crate. It is symmetric: any context jumps straight to any
//! other, so a coroutine switches directly to the next one; and every jump
//! saves and restores the callee-saved registers, MXCSR and the x87 control
//! word.
//!
//! # How a jump works
//!
//! `jump(save, to, data)` hands the target a [`arch`] hop on the running
//! stack naming the jumper's slot; `jump_fcontext` switches stacks; the
//! landing side stores the jumper's context (what `jump_fcontext` returns
//! to it) in that slot and takes `data`.
//!
//! ```text
//!   fiber A (running)                         fiber B (parked in B.saved)
//!   switch(A -> B):
//!     to = B.saved.take()
//!     jump(&A.saved, to, 0) ------------->   B's own jump returns 0,
//!                                            storing A's context in A.saved
//! ```
//!
//! Why not our own assembly: a hand-written x86_64 jump ending in `ret`
//! instead of Boost's indirect `jmp` measured faster (the return-stack
//! predictor stays in step), but the design builds this engine on the
//! `context` crate and keeps hand-written switching out of the project;
//! the benchmark in the README chooses between this engine and corosensei.
//!
//! # Invariants
//!
//! - **X-I1** A context slot (`ContextFiber::saved`, `ContextRoot::saved`)
//!   holds a saved context exactly while its context is parked or fresh
//!   (switch W-I2). `switch` takes the target's context out of its slot
//!   before jumping, so a context is resumed at most once per save.
//! - **X-I2** The jumper's slot is written by the jump itself, before the
//!   stack pointer changes, so it is complete before anything else can run
//!   and switch back to the jumper.
//! - **X-I3** A retiring fiber jumps away with `data` = its own address and
//!   a throwaway slot; the side that lands (`switch` after its jump, or a
//!   fresh fiber's entry) releases it, on its own stack, after the jump left
//!   the retired one: only then is the retired stack released. Every other
//!   jump carries `data == 0`.
//!
//! # AddressSanitizer
//!
//! Built with ASan (`cfg(asan)`, set by `build.rs`), every jump tells ASan
//! that the stack changes, as Boost.Context does: the jumper calls
//! `__sanitizer_start_switch_fiber` with the target's stack bounds (and
//! NULL as its fake-stack slot when it retires, so ASan frees that fake
//! stack), and whoever lands calls `__sanitizer_finish_switch_fiber`. A
//! fiber's bounds are its slot's usable range; the root's are what ASan
//! reports to the first fiber that lands after a jump from the root
//! (X-I4). Without ASan the calls are compiled out. The corosensei engine
//! gets the same from corosensei's `sanitizer` feature, which Cargo.toml
//! selects under ASan.
//!
//! - **X-I4** Under ASan, the root's stack bounds are recorded before any
//!   jump to the root can need them: the first jump of a `run` goes from
//!   the root to a fiber, and the landing side records them.
//! - **X-I5** Under ASan, a retiring fiber's last jump passes NULL to
//!   `__sanitizer_start_switch_fiber`, which frees the fiber's fake stack at
//!   once; so `exit`, `asan::retire` and `arch::jump` are built without
//!   ASan instrumentation (`#[sanitize(address = "off")]`), which keeps
//!   their locals (the throwaway slot, the hop) on the real stack. The ASan
//!   build of the test suite found this: `stack_pool=0` crashed in `exit`.
//!
//! # Floating-point state
//!
//! Every context has its own MXCSR (control bits and sticky exception
//! flags) and x87 control word, saved when it jumps away and restored when
//! it is jumped to, as Boost.Context does; a fresh fiber starts with those of
//! the context that made it, and a pooled fiber keeps those of its last
//! coroutine. So a coroutine that changes its rounding mode must restore it
//! before it finishes, as under the corosensei engine. The flags a coroutine
//! raises stay with its context: the thread's MXCSR after `run` returns is
//! the root's own, as before `run` (plus what the root itself raised). An
//! earlier version set all six sticky flags before every jump, so that every
//! saved MXCSR was equal and no restore changed it; it cost a `stmxcsr` and
//! a branch per jump, could not be measured to help on the machines we have,
//! and made `fetestexcept` report every exception as raised, inside
//! coroutines and on the thread after `run`. It is gone.
//!
//! # Safety
//!
//! Every jump targets a context taken from its slot (X-I1), saved by a jump
//! or made by [`arch::make`] on a stack the fiber owns (stack S-I3), whose
//! stack is still mapped (S-I4/S-I5); a retired stack is released only after
//! the jump away from it (X-I3). [`arch`] says what its assembly saves and
//! why the frames it builds are what its jump pops.

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::cell::Cell;

use super::{die, Ctx, Engine, FiberState};
use crate::fiber::{self, FiberPtr};
use crate::scheduler::Scheduler;

/// A fiber's saved context (X-I1).
#[derive(Default)]
pub(crate) struct ContextFiber {
    saved: Cell<arch::Saved>,
    /// ASan's fake-stack handle while this fiber is parked.
    #[cfg(asan)]
    fake: Cell<usize>,
}

/// The root context's saved context (X-I1), valid while a fiber runs.
#[derive(Default)]
pub(crate) struct ContextRoot {
    saved: Cell<arch::Saved>,
    /// ASan's fake-stack handle while the root is parked.
    #[cfg(asan)]
    fake: Cell<usize>,
    /// The root's stack bounds, `(bottom, size)`, as ASan reported them
    /// (X-I4).
    #[cfg(asan)]
    bounds: Cell<(usize, usize)>,
    /// Set by a jump from the root, cleared by the side that lands.
    #[cfg(asan)]
    from_root: Cell<bool>,
}

impl std::fmt::Debug for ContextFiber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ContextFiber")
    }
}

impl std::fmt::Debug for ContextRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ContextRoot")
    }
}

/// The `context` engine. See the module doc.
#[derive(Debug)]
pub(crate) struct ContextEngine;

#[inline]
fn state(f: &FiberPtr) -> &ContextFiber {
    match &f.get().engine {
        FiberState::Context(st) => st,
        FiberState::Corosensei(_) => die("context engine given a corosensei fiber"),
    }
}

/// The slot where `ctx`'s saved context lives: in the scheduler or in a
/// fiber record, both alive while `ctx` exists (fiber F-I1).
#[inline]
fn slot(s: &Scheduler, ctx: Ctx) -> *const Cell<arch::Saved> {
    match ctx {
        Ctx::Root => &s.root.context.saved,
        Ctx::Fiber(f) => &state(&f).saved,
    }
}

// SAFETY: the jump saves and restores the callee-saved registers, the stack
// pointer and the return address (and the FP control state); fresh fibers
// run `fiber_main` (through `fiber_entry`) and retire through `exit`, whose
// stack is released by the landing side only after the jump (X-I3); nothing
// unwinds out of `fiber_entry` because `fiber_main` catches every panic
// (W-I3).
unsafe impl Engine for ContextEngine {
    type Fiber = ContextFiber;

    fn empty() -> ContextFiber {
        ContextFiber::default()
    }

    fn prepare(fiber: FiberPtr) {
        // SAFETY: `[limit + page, top)` is the usable range of a slot this
        // fiber owns (stack S-I3, at least 16 KiB) below its record (fiber
        // F-I8); `make` writes its frame at the top of it, which nothing
        // else uses, and the slot stays mapped until the fiber is destroyed
        // (S-I4), after its context.
        let ctx = unsafe { arch::make(fiber.get().top(), fiber.addr(), fiber_entry) };
        state(&fiber).saved.set(ctx);
    }

    #[inline]
    fn switch(s: &Scheduler, from: Ctx, to: Ctx) {
        // SAFETY: `slot` names a live slot (its doc).
        let target = unsafe { &*slot(s, to) }.take();
        if !arch::is_saved(&target) {
            die("context engine: switch to a context with no saved state")
        }
        asan::start_switch(s, from, to);
        // SAFETY: `target` was taken from its slot, so it is a parked or
        // fresh context resumed once (X-I1) on a mapped stack; our own slot
        // is in a live fiber record or the scheduler (fiber F-I1), and the
        // jump fills it before it leaves this stack (X-I2).
        let data = unsafe { arch::jump(&*slot(s, from), target, 0, to) };
        asan::finish_switch(s, Some(from));
        if data != 0 {
            reap(s, data);
        }
        s.root.running.set(from);
    }

    fn discard(fiber: FiberPtr) {
        state(&fiber).saved.set(arch::Saved::default());
    }
}

/// The first code a fresh fiber runs, on its own stack: `fiber` is its
/// address (from `make`), `data` what the jump that started it carried.
extern "C" fn fiber_entry(fiber: usize, data: usize) -> ! {
    // SAFETY: `make` was given the address of this fiber's record, which is
    // live: the fiber runs.
    let fiber = unsafe { FiberPtr::from_addr(fiber) };
    let s = fiber.get().sched();
    asan::finish_switch(s, None);
    if data != 0 {
        reap(s, data);
    }
    s.root.running.set(Ctx::Fiber(fiber));
    let next = fiber::fiber_main(fiber);
    exit(s, fiber, next)
}

/// Leaves a retiring fiber for good (X-I3).
#[cfg_attr(asan, sanitize(address = "off"))]
fn exit(s: &Scheduler, me: FiberPtr, to: Ctx) -> ! {
    // SAFETY: `slot` names a live slot (its doc).
    let target = unsafe { &*slot(s, to) }.take();
    if !arch::is_saved(&target) {
        die("context engine: exit to a context with no saved state")
    }
    // Nobody ever resumes this context: its save goes nowhere that matters.
    let dead = Cell::new(arch::Saved::default());
    asan::retire(s, to);
    // SAFETY: as in `switch`; the landing side releases this fiber only
    // after the jump left its stack (X-I3), and `dead` is only written by
    // the jump, before it leaves.
    unsafe { arch::jump(&dead, target, me.addr(), to) };
    die("context engine: a retired fiber was resumed")
}

/// Releases a fiber that retired by jumping here (X-I3).
#[cold]
#[inline(never)]
fn reap(s: &Scheduler, data: usize) {
    // SAFETY: X-I3: `data` is the address of the fiber that just jumped
    // here from `exit`; it is still allocated (only this function frees it)
    // and nothing runs on its stack any more.
    let fiber = unsafe { FiberPtr::from_addr(data) };
    let released = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fiber::destroy_retired(s, fiber)
    }));
    if released.is_err() {
        die("panic while releasing a retired fiber");
    }
}

/// ASan's view of the jumps (module doc, "AddressSanitizer"); every
/// function is empty without `cfg(asan)`.
#[cfg(not(asan))]
mod asan {
    use super::{Ctx, Scheduler};

    #[inline(always)]
    pub(super) fn start_switch(_s: &Scheduler, _from: Ctx, _to: Ctx) {}
    #[inline(always)]
    pub(super) fn finish_switch(_s: &Scheduler, _me: Option<Ctx>) {}
    #[inline(always)]
    pub(super) fn retire(_s: &Scheduler, _to: Ctx) {}
}

#[cfg(asan)]
mod asan {
    use std::ffi::c_void;

    use super::{state, Ctx, Scheduler};

    extern "C" {
        fn __sanitizer_start_switch_fiber(
            fake_stack_save: *mut *mut c_void,
            bottom: *const c_void,
            size: usize,
        );
        fn __sanitizer_finish_switch_fiber(
            fake_stack_save: *mut c_void,
            bottom_old: *mut *const c_void,
            size_old: *mut usize,
        );
    }

    /// `(bottom, size)` of the stack `ctx` runs on.
    fn bounds(s: &Scheduler, ctx: Ctx) -> (usize, usize) {
        match ctx {
            Ctx::Root => s.root.context.bounds.get(),
            Ctx::Fiber(f) => {
                let slot = f.get().stack;
                (slot.base - slot.usable, f.get().stack_bytes())
            }
        }
    }

    /// Runs `f` on the fake-stack slot of `ctx`.
    fn with_fake<R>(s: &Scheduler, ctx: Ctx, f: impl FnOnce(&std::cell::Cell<usize>) -> R) -> R {
        match ctx {
            Ctx::Root => f(&s.root.context.fake),
            Ctx::Fiber(fiber) => f(&state(&fiber).fake),
        }
    }

    #[sanitize(address = "off")]
    fn begin(fake_save: *mut *mut c_void, (bottom, size): (usize, usize)) {
        // SAFETY: the ASan runtime is linked (cfg(asan)); `fake_save` is
        // NULL or a writable slot, and the bounds are those of the stack we
        // are about to jump to.
        unsafe { __sanitizer_start_switch_fiber(fake_save, bottom as *const c_void, size) };
    }

    /// Before a jump from `from` to `to`.
    pub(super) fn start_switch(s: &Scheduler, from: Ctx, to: Ctx) {
        s.root.context.from_root.set(from == Ctx::Root);
        let mut fake: *mut c_void = std::ptr::null_mut();
        begin(&mut fake, bounds(s, to));
        with_fake(s, from, |slot| slot.set(fake as usize));
    }

    /// Before a retiring fiber's last jump: NULL lets ASan free its fake
    /// stack (X-I5).
    #[sanitize(address = "off")]
    pub(super) fn retire(s: &Scheduler, to: Ctx) {
        s.root.context.from_root.set(false);
        begin(std::ptr::null_mut(), bounds(s, to));
    }

    /// After landing: `me` is the context that resumed, `None` for a fresh
    /// fiber's first landing (it has no fake stack yet).
    pub(super) fn finish_switch(s: &Scheduler, me: Option<Ctx>) {
        let fake = me.map_or(0, |ctx| with_fake(s, ctx, |slot| slot.get()));
        let (mut bottom, mut size) = (std::ptr::null::<c_void>(), 0usize);
        // SAFETY: the ASan runtime is linked; `fake` is what our own
        // `start_switch` stored (or NULL), the out-pointers are locals.
        unsafe { __sanitizer_finish_switch_fiber(fake as *mut c_void, &mut bottom, &mut size) };
        if s.root.context.from_root.replace(false) {
            // X-I4: the stack we came from is the root's.
            s.root.context.bounds.set((bottom as usize, size));
        }
    }
}

// The jump itself, one interface:
// - `Saved`: what a slot holds (`Default` is "nothing saved");
// - `make(top, fiber, entry)`: a fresh context on the stack whose top is
//   `top`; jumping to it calls `entry(fiber, data)` there;
// - `jump(save, to, data, to_ctx)`: saves the running context into
//   `save`, resumes `to`, and returns what the jump that resumes us later
//   carries (`to_ctx` is the target; only the Boost implementation needs it,
//   to tell a fresh fiber who it is).
mod arch {
    //! Boost.Context's `jump_fcontext` through the `context` crate. A jump
    //! carries the address of a [`Hop`] on the jumper's stack; the landing
    //! side stores the jumper's context in the slot the hop names (the hop
    //! stays valid: the jumper is parked until that slot is used).

    use std::cell::Cell;

    use ::context::{Context, Transfer};

    use crate::stack::page_size;

    pub(super) type Saved = Option<Context>;

    #[inline]
    pub(super) fn is_saved(s: &Saved) -> bool {
        s.is_some()
    }

    #[repr(C)]
    struct Hop {
        save: *const Cell<Saved>,
        data: usize,
        to_fiber: usize,
    }

    /// Stores the jumper's context where its hop says; returns its data.
    ///
    /// # Safety
    ///
    /// `t` is what a jump made by `jump` delivered.
    unsafe fn land(t: Transfer) -> (usize, usize) {
        // SAFETY: the hop is on the jumper's stack, which is parked.
        let hop = unsafe { &*(t.data as *const Hop) };
        // SAFETY: the slot is in a live fiber record, the scheduler, or the
        // retiring fiber's frame (still mapped: released after this).
        unsafe { &*hop.save }.set(Some(t.context));
        (hop.data, hop.to_fiber)
    }

    extern "C" fn boost_entry(t: Transfer) -> ! {
        // SAFETY: a fresh fiber is only entered by `jump`.
        let (data, fiber) = unsafe { land(t) };
        super::fiber_entry(fiber, data)
    }

    /// A fresh context on the stack whose top is `top`: jumping to it runs
    /// `fiber_entry(fiber, data)` there (through `boost_entry`).
    ///
    /// # Safety
    ///
    /// `fiber` is a live fiber record whose stack ends at `top`; the stack's
    /// usable range starts one page above its guard (stack S-I3).
    pub(super) unsafe fn make(
        top: usize,
        fiber: usize,
        _entry: extern "C" fn(usize, usize) -> !,
    ) -> Saved {
        // SAFETY: `fiber` is a live fiber record whose stack ends at `top`.
        let f = unsafe { crate::fiber::FiberPtr::from_addr(fiber) };
        let slot = f.get().stack;
        // SAFETY: `[limit + page, top)` is the usable range of a slot this
        // fiber owns (stack S-I3) below its record (fiber F-I8);
        // `Stack::new` only records the bounds.
        let stack = unsafe {
            ::context::stack::Stack::new(
                top as *mut std::ffi::c_void,
                (slot.limit + page_size()) as *mut std::ffi::c_void,
            )
        };
        // SAFETY: make_fcontext writes the initial frame at the top of that
        // range, which nothing else uses.
        Some(unsafe { Context::new(&stack, boost_entry) })
    }

    /// Saves the running context into `save` (through the landing side),
    /// resumes `to`, and returns the `data` of the jump that later resumes
    /// this context.
    ///
    /// # Safety
    ///
    /// `to` is a context saved by a jump or made by `make`, taken from its
    /// slot (resumed once), on a stack still mapped; `save` stays valid
    /// until this context is resumed.
    #[cfg_attr(asan, sanitize(address = "off"))]
    pub(super) unsafe fn jump(
        save: &Cell<Saved>,
        to: Saved,
        data: usize,
        to_ctx: super::Ctx,
    ) -> usize {
        let Some(to) = to else {
            super::die("context engine: jump to nothing")
        };
        let to_fiber = to_ctx.encode();
        let hop = Hop {
            save,
            data,
            to_fiber,
        };
        // SAFETY: forwarded to the caller; `hop` lives on this stack, which
        // stays parked until the landing side has read it.
        let t = unsafe { to.resume(&hop as *const Hop as usize) };
        // SAFETY: `t` comes from the jump that resumed us.
        unsafe { land(t) }.0
    }
}
