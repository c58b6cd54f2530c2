//! The `context` engine: Boost.Context's `make_fcontext`/`jump_fcontext`
//! through the `context` crate. Symmetric: any context jumps straight to any
//! other.
//!
//! # How a jump works
//!
//! `jump_fcontext(to, data)` pushes the callee-saved registers, MXCSR and the
//! x87 control word onto the running stack, switches to the stack pointer
//! `to` (a context *is* that saved stack pointer), pops the target's saved
//! state, and returns `Transfer { context: <the jumper's saved pointer>,
//! data }` on the target's side. The jumper's saved pointer must be stored
//! where the next jump to the jumper will find it: `data` carries the
//! address of that slot, in a [`Hop`] on the jumper's stack, and the landing
//! side stores it ([`land`]).
//!
//! ```text
//!   fiber A (running)                         fiber B (parked in B.saved)
//!   switch(A -> B):
//!     hop = { from: &A.saved }
//!     t = B.saved.take().resume(&hop) ---->   switch() of B returns from resume:
//!                                               land(t): A.saved = t.context
//!                                               running = B
//! ```
//!
//! # Invariants
//!
//! - **X-I1** A context slot (`ContextFiber::saved`, `ContextRoot::saved`)
//!   holds `Some` exactly while its context is parked or fresh (switch W-I2).
//!   `switch` takes the target's context out of its slot before jumping, so
//!   a context is resumed at most once per save.
//! - **X-I2** A [`Hop`] lives on the jumper's stack, which stays parked (so
//!   unchanged) until the jumper is resumed, which needs the slot the landing
//!   side fills from the hop: the hop is always read before it can die.
//! - **X-I3** A retiring fiber jumps away with `resume_ontop` and [`reap`],
//!   which runs on the target's stack, after the jump: only then is the
//!   retiring fiber's stack released. `reap` hands the target `data == 0`,
//!   so nothing is stored for the dead context.
//!
//! # Floating-point state
//!
//! `jump_fcontext` saves MXCSR on the jumper's stack and restores the
//! target's MXCSR on every jump (`ldmxcsr`). MXCSR holds both *control* bits
//! (rounding mode, FTZ, DAZ, exception masks) and *sticky status* flags
//! (inexact, underflow, ... set by arithmetic and never cleared by it). A
//! coroutine that divides `1.0 / 3.0` sets the inexact flag, so its saved
//! MXCSR differs from the scheduler's, and every `ldmxcsr` then *changes*
//! MXCSR, which costs far more than reloading an equal value (README
//! benchmark: 142 ns instead of 9 ns per round trip on the issue's machine).
//!
//! The fix here: every jump stores the running MXCSR with all six sticky
//! flags set before it saves it ([`equalize_mxcsr`]); arithmetic can only set
//! flags, so once each context has gone through one jump, every saved MXCSR
//! has all flags set and the restores no longer change the register.
//! Control bits are untouched: each context keeps its own rounding mode and
//! FTZ/DAZ, restored at every jump exactly as before. (A context is a fiber,
//! not a coroutine: a fresh fiber starts with the control bits of the context
//! that made it, and a pooled fiber keeps those of its last coroutine. So a
//! coroutine that changes them must restore them before it finishes, as under
//! the corosensei engine, where they are thread-wide.)
//! What is lost: the sticky flags no longer tell which operation raised what
//! (`fetestexcept` reports every exception as raised inside coroutines run by
//! this engine, and on the thread after `run`, since the root context is
//! equalized too). Rust code does not read them; C code that does should use
//! the corosensei engine, which leaves MXCSR alone altogether.
//!
//! # Safety
//!
//! Every jump targets a context taken from its slot (X-I1), saved by a jump
//! or made by `make_fcontext` on a stack the fiber owns (stack S-I3), whose
//! stack is still mapped (S-I4/S-I5); every hop is read while alive (X-I2).

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::c_void;

use ::context::{Context, Transfer};

use super::{die, Ctx, Engine, FiberState};
use crate::fiber::{self, FiberPtr};
use crate::scheduler::Scheduler;
use crate::stack::page_size;

/// A fiber's saved context (X-I1).
#[derive(Default)]
pub(crate) struct ContextFiber {
    saved: Cell<Option<Context>>,
}

/// The root context's saved context (X-I1), valid while a fiber runs.
#[derive(Default)]
pub(crate) struct ContextRoot {
    saved: Cell<Option<Context>>,
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

/// What a jump carries: where the landing side stores the jumper's context
/// (X-I2), and who the target is (read by a fresh fiber's entry).
#[repr(C)]
struct Hop {
    from: *const Cell<Option<Context>>,
    to: usize,
}

/// The `context` engine. See the module doc.
#[derive(Debug)]
pub(crate) struct ContextEngine;

fn state(f: &FiberPtr) -> &ContextFiber {
    match &f.get().engine {
        FiberState::Context(st) => st,
        FiberState::Corosensei(_) => die("context engine given a corosensei fiber"),
    }
}

/// The slot where `ctx`'s saved context lives.
fn slot(s: &Scheduler, ctx: Ctx) -> *const Cell<Option<Context>> {
    match ctx {
        Ctx::Root => &s.root.context.saved,
        Ctx::Fiber(f) => &state(&f).saved,
    }
}

// SAFETY: switch saves and restores the callee-saved registers, the stack
// pointer and the return address (jump_fcontext); fresh fibers run
// `fiber_main` (fiber_entry) and retire through `exit`/`reap` (X-I3); the
// entry never unwinds because `fiber_main` catches every panic (W-I3).
unsafe impl Engine for ContextEngine {
    type Fiber = ContextFiber;

    fn empty() -> ContextFiber {
        ContextFiber::default()
    }

    fn prepare(fiber: FiberPtr) {
        let slot = fiber.get().stack;
        // SAFETY: `[limit + page, base)` is the usable range of a slot this
        // fiber owns (stack S-I3); `Stack::new` only records the bounds.
        let stack = unsafe {
            ::context::stack::Stack::new(
                slot.base as *mut c_void,
                (slot.limit + page_size()) as *mut c_void,
            )
        };
        // SAFETY: make_fcontext writes the initial frame at the top of that
        // range, which nothing else uses; the slot stays mapped until the
        // fiber is destroyed (S-I4), after its context is dropped.
        let ctx = unsafe { Context::new(&stack, fiber_entry) };
        state(&fiber).saved.set(Some(ctx));
    }

    #[inline]
    fn switch(s: &Scheduler, from: Ctx, to: Ctx) {
        // SAFETY: slots live in the scheduler or in a fiber record, both
        // alive for this call (fiber F-I1).
        let target = unsafe { &*slot(s, to) }.take();
        let Some(target) = target else {
            die("context engine: switch to a context with no saved state")
        };
        let hop = Hop {
            from: slot(s, from),
            to: to.encode(),
        };
        equalize_mxcsr();
        // SAFETY: `target` was taken from its slot, so it is a parked or
        // fresh context resumed once (X-I1) on a mapped stack; `hop` lives
        // on this stack, which stays parked until someone reads it (X-I2).
        let t = unsafe { target.resume(&hop as *const Hop as usize) };
        // SAFETY: `t` comes from the jump that resumed us (X-I2/X-I3).
        unsafe { land(t) };
        s.root.running.set(from);
    }

    fn discard(fiber: FiberPtr) {
        state(&fiber).saved.set(None);
    }
}

/// Stores the jumper's context in the slot its hop names (X-I2); nothing for
/// `data == 0` (a retired fiber, X-I3).
///
/// # Safety
///
/// `t` is what a jump made by `switch`, `fiber_entry`'s caller or `reap`
/// delivered, so `t.data` is 0 or the address of a live [`Hop`].
unsafe fn land(t: Transfer) {
    if t.data != 0 {
        // SAFETY: X-I2: the hop is on the jumper's stack, which is parked.
        let hop = unsafe { &*(t.data as *const Hop) };
        // SAFETY: the slot is in a live fiber record or the scheduler.
        unsafe { &*hop.from }.set(Some(t.context));
    }
}

/// The first code a fresh fiber runs.
extern "C" fn fiber_entry(t: Transfer) -> ! {
    // SAFETY: a fresh fiber is only entered from `switch`, whose hop is live
    // (X-I2).
    let me = unsafe { &*(t.data as *const Hop) }.to;
    // SAFETY: as above.
    unsafe { land(t) };
    // SAFETY: `to` is the address of the fiber `switch` jumped to: this one.
    let fiber = unsafe { FiberPtr::from_addr(me) };
    let s = fiber.get().sched();
    s.root.running.set(Ctx::Fiber(fiber));
    let next = fiber::fiber_main(fiber);
    exit(s, fiber, next)
}

/// Leaves a retiring fiber for good (X-I3).
fn exit(s: &Scheduler, me: FiberPtr, to: Ctx) -> ! {
    // SAFETY: as in `switch`.
    let target = unsafe { &*slot(s, to) }.take();
    let Some(target) = target else {
        die("context engine: exit to a context with no saved state")
    };
    equalize_mxcsr();
    // SAFETY: as in `switch`; `reap` runs on the target's stack and frees
    // this fiber only after the jump left it (X-I3).
    unsafe { target.resume_ontop(me.addr(), reap) };
    die("context engine: a retired fiber was resumed")
}

/// Runs on the target's stack right after a retiring fiber left: releases
/// the retired fiber (X-I3).
extern "C" fn reap(t: Transfer) -> Transfer {
    // SAFETY: `exit` passed the retiring fiber's address, and that fiber is
    // still allocated: only this function frees it.
    let fiber = unsafe { FiberPtr::from_addr(t.data) };
    let s = fiber.get().sched();
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fiber::destroy_retired(s, fiber)
    }))
    .is_err()
    {
        die("panic while releasing a retired fiber");
    }
    Transfer::new(t.context, 0)
}

/// Sets the six sticky exception flags of MXCSR if any is clear, so that
/// every context saves the same flags and `jump_fcontext`'s restore does not
/// change the register (module doc, "Floating-point state").
#[inline(always)]
fn equalize_mxcsr() {
    #[cfg(target_arch = "x86_64")]
    {
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr stores the 32-bit MXCSR into `csr`, a local.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags))
        };
        if csr & 0x3f != 0x3f {
            let set = csr | 0x3f;
            // SAFETY: ldmxcsr loads the same control bits with the status
            // flags set; setting status flags raises no exception (only
            // arithmetic does), and every reserved bit is unchanged.
            unsafe {
                std::arch::asm!("ldmxcsr [{}]", in(reg) &set, options(nostack, preserves_flags))
            };
        }
    }
}
