//! Stack switching: one small trait, [`Engine`], and two engines.
//!
//! | engine | shape | a direct switch A -> B | MXCSR / x87 CW |
//! |---|---|---|---|
//! | [`context`] (Boost.Context's `jump_fcontext`, through the `context` crate) | symmetric | one jump, A straight to B | saved and restored on every jump |
//! | [`corosensei`] | asymmetric | A suspends to the root with "go to B", the root resumes B: two switches of ~1-2 ns each, inside the same tick | left alone (thread-wide) |
//!
//! The rest of the scheduler only says "move control from the running
//! context to that one" ([`switch`]) and never sees which engine runs: a
//! context ([`Ctx`]) is either the root (the thread's own stack inside `run`)
//! or a fiber.
//!
//! # Invariants
//!
//! - **W-I1** Exactly one context runs at a time; `RootState::running`
//!   names it. [`switch`] checks that `from` is it and that `to` is not, and
//!   aborts otherwise: a wrong switch would resume a stack at a stale point.
//! - **W-I2** A fiber that is not running is either *parked* (idle in the
//!   pool, or holding one suspended coroutine) with its registers saved by
//!   the engine, or *fresh* (prepared, never run). Only those may be switched
//!   to.
//! - **W-I3** Nothing unwinds across a switch: `fiber_main` catches every
//!   panic on the fiber and aborts (an invariant broke; there is no frame to
//!   unwind into). The `context` engine's entry is `extern "C"`, so an
//!   escaping panic would abort anyway, without a message.
//! - **W-I4** A parked fiber's stack holds no value with drop glue (fiber.rs
//!   F-I3), so an idle fiber can be discarded without unwinding it.
//!
//! # Who touches what
//!
//! The loop thread. `RootState` is part of the scheduler; each fiber's
//! engine state ([`FiberState`]) is part of its fiber record.
//!
//! # Safety
//!
//! The engines jump between stacks; the module docs of [`context`] and
//! [`corosensei`] say which saved state lives where and
//! why each jump lands on a live stack (W-I1, W-I2). The functions here are
//! safe because they check W-I1 at run time.

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

pub(crate) mod context;
pub(crate) mod corosensei;

use std::cell::Cell;
use std::io::Write;

use crate::fiber::FiberPtr;
use crate::scheduler::{Counters, Scheduler};

/// Which engine a scheduler uses (option `engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EngineKind {
    /// A symmetric `jump_fcontext`-style jump (`switch/context.rs`).
    Context,
    /// The `corosensei` crate.
    Corosensei,
}

/// A place control can be in: the root context or a fiber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ctx {
    /// The scheduler's own context: the thread stack inside `run`.
    Root,
    /// A fiber.
    Fiber(FiberPtr),
}

impl Ctx {
    /// `Ctx` as one machine word (0 is the root), for engines that pass it
    /// through a register.
    #[inline]
    pub(crate) fn encode(self) -> usize {
        match self {
            Ctx::Root => 0,
            Ctx::Fiber(f) => f.addr(),
        }
    }

    /// The inverse of [`Ctx::encode`].
    ///
    /// # Safety
    ///
    /// `word` came from `encode` of a context that still exists.
    #[inline]
    pub(crate) unsafe fn decode(word: usize) -> Ctx {
        match word {
            0 => Ctx::Root,
            // SAFETY: forwarded to the caller: `word` is a live fiber's
            // address.
            w => Ctx::Fiber(unsafe { FiberPtr::from_addr(w) }),
        }
    }
}

/// What an engine must provide.
///
/// # Safety
///
/// An implementation must:
/// - save, on a switch, everything the platform ABI says survives a call
///   (callee-saved registers, the stack pointer, the return address), and
///   restore it when the context is switched back to;
/// - run `fiber::fiber_main(fiber)` on the fiber's own stack the first time
///   a prepared fiber is switched to, and, when it returns (the fiber
///   retires), switch to the context it returned and release the fiber
///   (`fiber::destroy_retired`) only once nothing runs on its stack;
/// - never unwind across a switch (W-I3).
pub(crate) unsafe trait Engine {
    /// What a fiber keeps while it does not run.
    type Fiber;
    /// The state of a fiber record before [`Engine::prepare`].
    fn empty() -> Self::Fiber;
    /// Makes `fiber` fresh (W-I2): switching to it will run `fiber_main`.
    fn prepare(fiber: FiberPtr);
    /// Moves control from `from` (running) to `to` (parked or fresh); returns
    /// when some context switches back to `from`.
    fn switch(s: &Scheduler, from: Ctx, to: Ctx);
    /// Forgets an idle fiber's saved state so its stack can be released
    /// (W-I4).
    fn discard(fiber: FiberPtr);
}

/// A fiber's engine state.
#[derive(Debug)]
pub(crate) enum FiberState {
    /// See [`context::ContextEngine`].
    Context(<context::ContextEngine as Engine>::Fiber),
    /// See [`corosensei::CorosenseiEngine`].
    Corosensei(<corosensei::CorosenseiEngine as Engine>::Fiber),
}

/// The root context's engine state and the running context (W-I1).
#[derive(Debug)]
pub(crate) struct RootState {
    pub(crate) running: Cell<Ctx>,
    pub(crate) context: context::ContextRoot,
}

impl Default for RootState {
    fn default() -> RootState {
        RootState {
            running: Cell::new(Ctx::Root),
            context: context::ContextRoot::default(),
        }
    }
}

/// The empty engine state for a new fiber record.
pub(crate) fn empty_state(kind: EngineKind) -> FiberState {
    match kind {
        EngineKind::Context => FiberState::Context(context::ContextEngine::empty()),
        EngineKind::Corosensei => FiberState::Corosensei(corosensei::CorosenseiEngine::empty()),
    }
}

/// Makes a new fiber fresh (W-I2).
pub(crate) fn prepare(kind: EngineKind, fiber: FiberPtr) {
    match kind {
        EngineKind::Context => context::ContextEngine::prepare(fiber),
        EngineKind::Corosensei => corosensei::CorosenseiEngine::prepare(fiber),
    }
}

/// Forgets an idle fiber's saved state (W-I4).
pub(crate) fn discard(kind: EngineKind, fiber: FiberPtr) {
    match kind {
        EngineKind::Context => context::ContextEngine::discard(fiber),
        EngineKind::Corosensei => corosensei::CorosenseiEngine::discard(fiber),
    }
}

/// Moves control from `from`, the running context, to `to`; returns when
/// some context switches back to `from`. Aborts if W-I1 does not hold.
#[inline]
pub(crate) fn switch(s: &Scheduler, from: Ctx, to: Ctx) {
    if s.root.running.get() != from || from == to {
        die("switch from a context that is not running, or to itself");
    }
    Counters::bump(&s.counters.switches);
    match s.opts.engine {
        EngineKind::Context => context::ContextEngine::switch(s, from, to),
        EngineKind::Corosensei => corosensei::CorosenseiEngine::switch(s, from, to),
    }
}

/// Logs `msg` through the host and aborts: an invariant of the fiber core
/// broke and no frame can be unwound into (W-I3).
#[cold]
pub(crate) fn die(msg: &str) -> ! {
    async_abi::plugin_error!("async-scheduler: fatal: {msg}; aborting");
    let _ = writeln!(std::io::stderr(), "async-scheduler: fatal: {msg}; aborting");
    std::process::abort()
}
