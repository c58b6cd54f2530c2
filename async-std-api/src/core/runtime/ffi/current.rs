//! The thread's runtime and its running coroutine, kept by the host itself,
//! so the hot paths (`suspend`, `join`, `spawn`, wake-ups) never ask the
//! scheduler who runs and never touch a reference count to find out.
//!
//! Owns the thread-local cells: `runtime` (the runtime `run` installed),
//! `running` (the coroutine whose host code executes now), and, while the
//! watchdog is on, `watch` (its word) and `seq` (the switch counter).
//!
//! Invariants:
//! - **K1** `runtime` is non-null exactly while [`installed`] runs its
//!   closure, and names the `Runtime` that closure's caller borrowed to it,
//!   which therefore outlives every use: the closure (and so every
//!   coroutine, which only runs inside the scheduler's `run` called from
//!   it) ends before the borrow does. A drop guard clears it on every path.
//! - **K2** `running` mirrors the scheduler's `current()` whenever host code
//!   runs. The host regains control on a coroutine's stack only in two
//!   places, and sets `running` there: the entry trampoline (before the
//!   body) and [`Scheduler::suspend`](super::Scheduler) (when the
//!   scheduler's `suspend` returns). It clears it right before it calls
//!   `suspend` and when the entry's body is done, so reactor callbacks,
//!   microtasks and teardown see null, as the scheduler reports NULL there
//!   (ABI: `current` is NULL in the scheduler's own context and during its
//!   tick).
//! - **K3** A non-null `running` points into a live `Rc<CoroState>`
//!   allocation: it is `Rc::as_ptr` of the coroutine's own strong count,
//!   which the entry trampoline holds until after it cleared `running` (F3).
//!   So the `&Rc<CoroState>` that [`with_running`] lends (a `ManuallyDrop`
//!   view of that pointer, no count taken) is valid for the closure.
//!
//! - **K5** `hooks` is the installed runtime's hooks setting (false when
//!   none is installed). The C library hooks (`crate::hooks`) act only when
//!   it is set, a coroutine is `running` (K2) and no `Quiet` section is
//!   open; a coroutine's stack runs the scheduler's tick and reactor
//!   callbacks with `running` null, so the runtime's own system calls there
//!   pass straight through. `quiet` counts nested sections.
//! - **K4** `watch` is non-null only while `installed` runs with a watchdog,
//!   and points into the watchdog's shared `Arc`, which the runtime keeps
//!   alive longer (K1). `enter` stores one word into it (WD1), `mark_idle`
//!   the idle word (WD2); both relaxed: the word is only a heartbeat.
//!
//! Who touches what: the loop thread only (thread-locals). `running` is
//! written only by this module's `enter`/`leave`, called from the entry
//! trampoline and the scheduler wrapper in the parent module.
//!
//! Drop order: `installed` clears both cells before it returns (or
//! unwinds), while the runtime is still alive.
//!
//! # Safety
//!
//! The `unsafe` blocks turn the cells' raw pointers back into borrows;
//! K1, K3 and K4 say why the pointees are alive for the borrow.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ptr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::core::runtime::watchdog;
use crate::core::runtime::Runtime;
use crate::core::state::CoroState;

/// Both cells in one thread-local, so a hot path computes its address once.
struct Cells {
    /// K1.
    runtime: Cell<*const Runtime>,
    /// K2, K3.
    running: Cell<*const CoroState>,
    /// K4.
    watch: Cell<*const AtomicU64>,
    seq: Cell<u64>,
    /// The running coroutine's cooperative budget (`core::budget`): reset
    /// each time a coroutine gets control.
    budget: Cell<u32>,
    /// K5: the installed runtime turned the C library hooks on.
    hooks: Cell<bool>,
    /// K5: host code that must not be hooked runs (nested count).
    quiet: Cell<u32>,
    /// The installed runtime's `ForeignTls` (FT3), or null.
    #[cfg(feature = "hooks")]
    foreign_tls: Cell<*const crate::core::foreign_tls::ForeignTls>,
}

thread_local! {
    static CURRENT: Cells = const {
        Cells {
            runtime: Cell::new(ptr::null()),
            running: Cell::new(ptr::null()),
            watch: Cell::new(ptr::null()),
            seq: Cell::new(0),
            budget: Cell::new(crate::core::budget::BUDGET),
            hooks: Cell::new(false),
            quiet: Cell::new(0),
            #[cfg(feature = "hooks")]
            foreign_tls: Cell::new(ptr::null()),
        }
    };
}

/// Clears both cells when dropped (K1: on every path out of `installed`).
struct Uninstall;

impl Drop for Uninstall {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            c.running.set(ptr::null());
            c.runtime.set(ptr::null());
            c.watch.set(ptr::null());
            c.hooks.set(false);
            #[cfg(feature = "hooks")]
            c.foreign_tls.set(ptr::null());
        });
    }
}

/// Runs `f` with `rt` installed as the thread's runtime (K1), and its
/// watchdog's word, if any (K4).
pub(crate) fn installed<R>(rt: &Runtime, f: impl FnOnce() -> R) -> R {
    let watch = rt
        .watchdog
        .as_ref()
        .map_or(ptr::null(), |w| &w.shared.word as *const AtomicU64);
    CURRENT.with(|c| {
        c.runtime.set(rt);
        c.watch.set(watch);
        c.hooks.set(rt.hooks);
        #[cfg(feature = "hooks")]
        c.foreign_tls.set(
            rt.foreign_tls
                .as_ref()
                .map_or(ptr::null(), |f| f as *const _),
        );
    });
    #[cfg(feature = "hooks")]
    if rt.hooks {
        off_in_forked_children();
    }
    let _uninstall = Uninstall;
    f()
}

/// K5: whether a C library hook called now should make its call suspend
/// the running coroutine: a runtime with hooks on is installed, a
/// coroutine runs host or user code (K2: not the scheduler's tick, not a
/// reactor callback), and no [`Quiet`] section is open. Two loads from one
/// thread-local; safe to call on any thread at any time (a thread without
/// a runtime reads the constant initial values).
#[inline(always)]
#[cfg(feature = "hooks")]
pub(crate) fn hooked() -> bool {
    CURRENT.with(|c| c.hooks.get() && c.quiet.get() == 0 && !c.running.get().is_null())
}

/// K5: while alive, [`hooked`] is false on this thread: the hooks' own
/// calls into the runtime, and host code that writes to descriptors the
/// user may have left blocking (the log), run the real C library calls.
#[derive(Debug)]
pub(crate) struct Quiet(());

impl Quiet {
    /// Opens a quiet section; it closes when the value is dropped.
    #[inline]
    pub(crate) fn new() -> Quiet {
        CURRENT.with(|c| c.quiet.set(c.quiet.get() + 1));
        Quiet(())
    }
}

impl Drop for Quiet {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.quiet.set(c.quiet.get() - 1));
    }
}

/// K5: a child made by `fork` runs one thread, the caller's copy, with
/// the parent's cells but none of its runtime's other threads: the hooks
/// are off there (a `pre_exec` closure, code between `fork` and `exec`),
/// or a hooked call would drive a copy of the parent's loop, sharing its
/// epoll descriptor. Registered once per process; `vfork` and
/// `posix_spawn` children run no handlers (and `posix_spawn` calls the C
/// library's own functions).
#[cfg(feature = "hooks")]
fn off_in_forked_children() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn child() {
        CURRENT.with(|c| c.hooks.set(false));
    }
    ONCE.call_once(|| {
        // SAFETY: registers a handler that only writes a thread-local cell
        // (async-signal-safe in effect: no allocation, no lock).
        unsafe { libc::pthread_atfork(None, None, Some(child)) };
    });
}

/// K5: the open quiet sections, taken off the thread while a coroutine
/// is suspended (they are that coroutine's, not the next one's) and
/// given back when it resumes.
#[cfg(feature = "hooks")]
#[inline(always)]
pub(crate) fn take_quiet() -> u32 {
    CURRENT.with(|c| c.quiet.replace(0))
}

/// K5: see [`take_quiet`].
#[cfg(feature = "hooks")]
#[inline(always)]
pub(crate) fn restore_quiet(n: u32) {
    CURRENT.with(|c| c.quiet.set(n));
}

/// Whether a runtime is installed on this thread.
#[inline]
pub(crate) fn is_installed() -> bool {
    !CURRENT.with(|c| c.runtime.get()).is_null()
}

/// Runs `f` with the thread's runtime; `None` outside a runtime.
#[inline]
pub(crate) fn with_runtime<R>(f: impl FnOnce(&Runtime) -> R) -> Option<R> {
    let rt = CURRENT.with(|c| c.runtime.get());
    if rt.is_null() {
        return None;
    }
    // SAFETY: K1: non-null only while `installed` runs, whose caller keeps
    // the runtime alive longer; we are inside that call (on its stack or on
    // a coroutine's, which only runs inside it).
    Some(f(unsafe { &*rt }))
}

/// Runs `f` with the thread's runtime and the running coroutine; `None`
/// outside a runtime or outside a coroutine.
#[inline(always)]
pub(crate) fn with_running<R>(f: impl FnOnce(&Runtime, &Rc<CoroState>) -> R) -> Option<R> {
    let (me, rt) = CURRENT.with(|c| (c.running.get(), c.runtime.get()));
    if me.is_null() || rt.is_null() {
        return None;
    }
    // SAFETY: K3: `me` is `Rc::as_ptr` of the running coroutine's own strong
    // count, held by its entry frame below us on this stack until after
    // `running` is cleared; the view takes no count and is never dropped.
    let me = ManuallyDrop::new(unsafe { Rc::from_raw(me) });
    // SAFETY: K1, as in `with_runtime` (`running` is only set inside `run`).
    Some(f(unsafe { &*rt }, &me))
}

/// Runs `f` with the thread's runtime and the running coroutine, if any
/// (one thread-local access for both); `None` outside a runtime.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(&Runtime, Option<&Rc<CoroState>>) -> R) -> Option<R> {
    let (me, rt) = CURRENT.with(|c| (c.running.get(), c.runtime.get()));
    if rt.is_null() {
        return None;
    }
    if me.is_null() {
        // SAFETY: K1, as in `with_runtime`.
        return Some(f(unsafe { &*rt }, None));
    }
    // SAFETY: K3, as in `with_running`.
    let me = ManuallyDrop::new(unsafe { Rc::from_raw(me) });
    // SAFETY: K1, as in `with_runtime`.
    Some(f(unsafe { &*rt }, Some(&me)))
}

/// The running coroutine's state, for identity comparisons only (null
/// outside a coroutine).
#[inline]
pub(crate) fn running() -> *const CoroState {
    CURRENT.with(|c| c.running.get())
}

/// `me` now runs host code (K2): the entry starts, or `suspend` returned.
/// With the watchdog on, one relaxed store says so (K4, WD1).
#[inline(always)]
pub(super) fn enter(me: &Rc<CoroState>) {
    CURRENT.with(|c| {
        c.running.set(Rc::as_ptr(me));
        c.budget.set(crate::core::budget::BUDGET);
        #[cfg(feature = "hooks")]
        {
            let f = c.foreign_tls.get();
            if !f.is_null() {
                // SAFETY: non-null only while `installed` runs, whose
                // caller keeps the runtime (and its `ForeignTls`) alive.
                unsafe { &*f }.enter(me);
            }
        }
        let watch = c.watch.get();
        if !watch.is_null() {
            heartbeat(c, watch, me);
        }
    });
}

#[cold]
#[inline(never)]
fn heartbeat(c: &Cells, watch: *const AtomicU64, me: &CoroState) {
    let seq = c.seq.get().wrapping_add(1);
    c.seq.set(seq);
    // SAFETY: K4: non-null only while the watchdog's `Arc` is alive.
    let word = unsafe { &*watch };
    word.store(watchdog::pack(me.id.get(), seq), Ordering::Relaxed);
}

/// The loop is about to poll the reactor: no coroutine runs (K4, WD2).
#[inline]
pub(super) fn mark_idle() {
    CURRENT.with(|c| {
        let watch = c.watch.get();
        if !watch.is_null() {
            // SAFETY: K4.
            let word = unsafe { &*watch };
            word.store(watchdog::IDLE, Ordering::Relaxed);
        }
    });
}

/// Takes one unit of the running coroutine's cooperative budget; false if
/// it is spent (`core::budget`).
#[inline]
pub(crate) fn take_budget() -> bool {
    CURRENT.with(|c| {
        let left = c.budget.get();
        c.budget.set(left.saturating_sub(1));
        left > 0
    })
}

/// No coroutine runs host code (K2): about to suspend, or the entry's body
/// is done. The only points where the scheduler can find nothing to run
/// and ask the reactor what keeps the loop alive, so the runtime's wait
/// hold drops a reference its last waiter left behind here (RD3).
#[inline]
pub(super) fn leave() {
    CURRENT.with(|c| {
        #[cfg(feature = "hooks")]
        {
            let (f, me) = (c.foreign_tls.get(), c.running.get());
            if !f.is_null() && !me.is_null() {
                // SAFETY: `f` as in `enter`; `me` is the running
                // coroutine's record, which its entry keeps alive until
                // after this call (K2/K3).
                unsafe { &*f }.leave(unsafe { &*me });
            }
        }
        c.running.set(ptr::null());
        let rt = c.runtime.get();
        if !rt.is_null() {
            // SAFETY: K1, as in `with_runtime`: non-null only inside
            // `installed`, whose caller keeps the runtime alive.
            unsafe { &*rt }.wait_hold.settle();
        }
    });
}
