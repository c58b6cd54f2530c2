//! The scheduler interface, `"aa.scheduler.v1"`: the small hook set of the
//! True Async successor design.
//!
//! - create a coroutine (entry + argument + priority + stack size);
//! - `enqueue` it with a status (a first start and a resume are the same
//!   operation; a negative status is the error it resumes with);
//! - `suspend` the current coroutine: the scheduler runs its tick on the
//!   suspending stack (microtasks, an occasional non-blocking reactor poll)
//!   and switches directly to the next runnable coroutine; only when nothing
//!   is runnable does it switch to its own context, where the reactor may
//!   block;
//! - the current coroutine; microtasks (`defer`); switch handlers;
//!   introspection (`coroutine_info`, `iterate`); `shutdown`.
//!
//! Stack switching lives only inside the scheduler. The scheduler reaches the
//! reactor only through the reactor vtable the host gives it in
//! [`AaSchedulerConfig`].
//!
//! Deadlock: when nothing is runnable, no microtask is pending, the reactor
//! has no visible active event (`alive() == 0`) and coroutines are still
//! suspended, the scheduler logs each waiter (id, spawn location, wait
//! location and what it waits for), resumes every waiter with
//! `AA_E_DEADLOCK`, and `run` will return `AA_E_DEADLOCK`.
//!
//! Required slots: all, up to and including `shutdown`.

use core::ffi::c_void;

use crate::{
    AaCoroutine, AaCoroutineEntry, AaCoroutineInfo, AaIfaceHeader, AaKv, AaMicrotaskFn,
    AaPluginCtx, AaReactor, AaReactorVTable, AaSpawnOptions, AaStatus, AaSwitchHandlerFn,
    AaWaitInfo,
};

/// Opaque scheduler instance: one per loop thread.
#[derive(Debug)]
pub struct AaScheduler {
    _opaque: [u8; 0],
    _not_send: core::marker::PhantomData<*mut c_void>,
}

/// Creation parameters for a scheduler.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaSchedulerConfig {
    /// `sizeof(AaSchedulerConfig)` as the host was compiled.
    pub struct_size: u32,
    /// Zero; reserved.
    pub flags: u32,
    /// The reactor's vtable, already validated by the host. It must outlive
    /// the scheduler (it is static, AA-R7).
    pub reactor: *const AaReactorVTable,
    /// The reactor instance the scheduler ticks. It must outlive the
    /// scheduler.
    pub reactor_instance: *mut AaReactor,
    /// Default usable stack size in bytes, or 0 for the scheduler's own.
    pub stack_size: usize,
    /// Scheduler options (`"engine" = "context"`), borrowed (AA-R2).
    pub options: *const AaKv,
    /// Number of entries in `options`.
    pub n_options: usize,
    /// Where `create` writes a one-line, NUL-terminated message when it fails
    /// (truncated to `err_cap`), naming the option at fault. The host prints
    /// it once, naming the plugin, so `create` does not also log it. May be
    /// NULL.
    pub err_buf: *mut u8,
    /// Capacity of `err_buf` in bytes.
    pub err_cap: usize,
}

/// Capability bit of [`AaSchedulerVTable::caps`]: `suspend` honours
/// `AA_WAIT_YIELD` in [`AaWaitInfo::flags`], so a yield is one call instead
/// of `enqueue` + `suspend`. A scheduler without the bit ignores the flag
/// (it was a reserved bit), so a host must check the capability before it
/// relies on the flag.
pub const AA_SCHED_CAP_WAIT_YIELD: u64 = 1 << 0;

/// Called by `iterate` for each live coroutine; return false to stop.
/// `[loop]`
pub type AaCoroutineVisitFn =
    Option<unsafe extern "C" fn(coro: *mut AaCoroutine, ud: *mut c_void) -> bool>;

/// The scheduler vtable, returned by `get_interface(ctx, "aa.scheduler.v1")`.
///
/// Static (AA-R7). Grows only at the end.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaSchedulerVTable {
    /// Size and minor version of this vtable.
    pub hdr: AaIfaceHeader,
    /// Capability bits: `AA_SCHED_CAP_*`; other bits are zero (reserved).
    pub caps: u64,

    /// Required. Creates a scheduler bound to the calling thread and to the
    /// reactor in `cfg`. On failure the one-line reason goes into
    /// `cfg->err_buf` only, as for a reactor's `create`. `[loop]`
    pub create: Option<
        unsafe extern "C" fn(
            ctx: *mut AaPluginCtx,
            cfg: *const AaSchedulerConfig,
            out: *mut *mut AaScheduler,
        ) -> AaStatus,
    >,
    /// Required. Destroys a scheduler: `AA_E_BUSY` while coroutines are alive
    /// (run it after `shutdown` first). Frees pooled stacks. `[loop]`
    pub destroy: Option<unsafe extern "C" fn(s: *mut AaScheduler) -> AaStatus>,
    /// Required. Runs the loop on the calling thread's stack (the scheduler's
    /// own context) until no coroutine is left. Returns 0, `AA_E_DEADLOCK` if a
    /// deadlock was detected during the run, or another negative status. Not
    /// callable from inside a coroutine. `[loop]`
    pub run: Option<unsafe extern "C" fn(s: *mut AaScheduler) -> AaStatus>,
    /// Required. Creates a coroutine in state CREATED. `opts` may be NULL for
    /// the defaults. `[loop]`
    pub coroutine_new: Option<
        unsafe extern "C" fn(
            s: *mut AaScheduler,
            opts: *const AaSpawnOptions,
            entry: AaCoroutineEntry,
            arg: *mut c_void,
            out: *mut *mut AaCoroutine,
        ) -> AaStatus,
    >,
    /// Required. Queues a coroutine to start or resume, with `status` as the
    /// start status or as what its `suspend` returns. Enqueueing one that is
    /// already queued keeps its place; a negative status replaces a zero one
    /// (the first error wins). Enqueueing the running coroutine queues it for
    /// when it next suspends (a yield). `AA_E_INVALID` for a finished one.
    /// `[loop]`
    pub enqueue: Option<
        unsafe extern "C" fn(
            s: *mut AaScheduler,
            coro: *mut AaCoroutine,
            status: AaStatus,
        ) -> AaStatus,
    >,
    /// Required. Suspends the current coroutine until it is enqueued; returns
    /// the status it was enqueued with. `wait` (may be NULL) says what it waits
    /// for; see [`AaWaitInfo`]. `AA_E_INVALID` outside a coroutine. With
    /// [`AA_SCHED_CAP_WAIT_YIELD`] in `caps`, a `wait` whose flags contain
    /// `AA_WAIT_YIELD` first enqueues the caller with status 0, exactly as
    /// `enqueue(s, current(s), 0)` would (a yield in one call). `[loop]`
    pub suspend:
        Option<unsafe extern "C" fn(s: *mut AaScheduler, wait: *const AaWaitInfo) -> AaStatus>,
    /// Required. The running coroutine, or NULL in the scheduler's own
    /// context. `[loop]`
    pub current: Option<unsafe extern "C" fn(s: *const AaScheduler) -> *mut AaCoroutine>,
    /// Required. The `arg` a coroutine was created with. `[loop]`
    pub coroutine_arg: Option<unsafe extern "C" fn(coro: *const AaCoroutine) -> *mut c_void>,
    /// Required. A coroutine's id. `[loop]`
    pub coroutine_id: Option<unsafe extern "C" fn(coro: *const AaCoroutine) -> u64>,
    /// Required. Fills `out` (whose `struct_size` the caller sets). `[loop]`
    pub coroutine_info: Option<
        unsafe extern "C" fn(
            s: *const AaScheduler,
            coro: *const AaCoroutine,
            out: *mut AaCoroutineInfo,
        ) -> AaStatus,
    >,
    /// Required. Calls `visit` for every live coroutine, in creation order. The
    /// visitor must not create, enqueue or finish coroutines. `[loop]`
    pub iterate: Option<
        unsafe extern "C" fn(
            s: *const AaScheduler,
            visit: AaCoroutineVisitFn,
            ud: *mut c_void,
        ) -> AaStatus,
    >,
    /// Required. Queues a microtask: it runs before the next switch, in FIFO
    /// order. `[loop]`
    pub defer: Option<
        unsafe extern "C" fn(
            s: *mut AaScheduler,
            task: AaMicrotaskFn,
            arg: *mut c_void,
        ) -> AaStatus,
    >,
    /// Required. Adds a switch handler to `coro` (NULL: the current one).
    /// `[loop]`
    pub add_switch_handler: Option<
        unsafe extern "C" fn(
            s: *mut AaScheduler,
            coro: *mut AaCoroutine,
            handler: AaSwitchHandlerFn,
            arg: *mut c_void,
        ) -> AaStatus,
    >,
    /// Required. Starts shutdown: every live coroutine except the running one
    /// is enqueued with `reason` (one that never started starts with it, so its
    /// body never runs), and coroutines created from now on start with it. A
    /// waiter still suspended when the loop goes idle is resumed with `reason`
    /// again. Callable inside or outside `run`. `[loop]`
    pub shutdown: Option<unsafe extern "C" fn(s: *mut AaScheduler, reason: AaStatus) -> AaStatus>,
    /// Optional (NULL: the host reports failures without a reason). Copies
    /// the last error message into `buf` (truncated, NUL-terminated if
    /// `cap > 0`) and returns its full length. `[loop]`
    pub last_error_message:
        Option<unsafe extern "C" fn(s: *const AaScheduler, buf: *mut u8, cap: usize) -> usize>,
}

// SAFETY: a vtable is immutable static data (AA-R7) holding only function
// pointers and integers.
unsafe impl Sync for AaSchedulerVTable {}
// SAFETY: as above.
unsafe impl Send for AaSchedulerVTable {}
