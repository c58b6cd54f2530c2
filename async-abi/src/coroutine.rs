//! Coroutine handles, their entry function, and what the scheduler can tell
//! about them.
//!
//! Lifecycle of an [`AaCoroutine`] (the scheduler owns it, AA-R1):
//!
//! ```text
//!   coroutine_new        enqueue            picked             suspend
//!  ---------------> CREATED ----> QUEUED ----------> RUNNING ----------> SUSPENDED
//!                                   ^                  |  |                  |
//!                                   |    enqueue       |  | entry returns    |
//!                                   +------------------+--+------------------+
//!                                                         v
//!                                                      FINISHED (freed)
//! ```
//!
//! Rules:
//! - **C1** The entry function is called exactly once per coroutine, on the
//!   coroutine's own stack, with the status of the `enqueue` that started it.
//!   A negative start status (cancelled before it started, or shutdown) means
//!   the body must not run: the entry releases what its argument owns and
//!   returns.
//! - **C2** The coroutine is FINISHED when its entry returns. The scheduler
//!   frees the handle after that; the host must not use it again.
//! - **C3** The entry must not unwind: a Rust host catches panics inside it.
//!   It must not return while a `suspend` of its own is in progress (it
//!   cannot: `suspend` only returns on its stack).

use core::ffi::c_void;

use crate::{AaStatus, AaStr};

/// Opaque coroutine handle, owned by the scheduler.
#[derive(Debug)]
pub struct AaCoroutine {
    _opaque: [u8; 0],
    _not_send: core::marker::PhantomData<*mut c_void>,
}

/// State: created, not yet enqueued.
pub const AA_CORO_CREATED: u32 = 0;
/// State: in the run queue (a first start or a resume).
pub const AA_CORO_QUEUED: u32 = 1;
/// State: running now (the current coroutine).
pub const AA_CORO_RUNNING: u32 = 2;
/// State: suspended, waiting to be enqueued.
pub const AA_CORO_SUSPENDED: u32 = 3;
/// State: finished (its entry returned).
pub const AA_CORO_FINISHED: u32 = 4;

/// Priority: normal; enqueued at the tail of the run queue.
pub const AA_PRIORITY_NORMAL: u32 = 0;
/// Priority: high; enqueued at the head of the run queue.
pub const AA_PRIORITY_HIGH: u32 = 255;

/// Switch handler kind: the coroutine received control.
pub const AA_SWITCH_ENTER: u32 = 1;
/// Switch handler kind: the coroutine gave up control (suspended).
pub const AA_SWITCH_LEAVE: u32 = 2;
/// Switch handler kind: the coroutine is finishing; the last call.
pub const AA_SWITCH_FINISH: u32 = 3;

/// A coroutine's entry function (rules C1-C3). `[loop]`
pub type AaCoroutineEntry = Option<unsafe extern "C" fn(arg: *mut c_void, start_status: AaStatus)>;

/// A microtask: runs on the loop thread before the next switch, on whatever
/// stack is current. It must not suspend. `[loop]`
pub type AaMicrotaskFn = Option<unsafe extern "C" fn(arg: *mut c_void)>;

/// A switch handler bound to one coroutine: called with `AA_SWITCH_ENTER`,
/// `AA_SWITCH_LEAVE` or `AA_SWITCH_FINISH`, on that coroutine's stack. It
/// returns true to stay registered, false to be removed. It must not
/// suspend. `[loop]`
pub type AaSwitchHandlerFn =
    Option<unsafe extern "C" fn(coro: *mut AaCoroutine, kind: u32, arg: *mut c_void) -> bool>;

/// Options for `coroutine_new`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaSpawnOptions {
    /// `sizeof(AaSpawnOptions)` as the host was compiled.
    pub struct_size: u32,
    /// `AA_PRIORITY_NORMAL` or `AA_PRIORITY_HIGH`.
    pub priority: u32,
    /// Usable stack size in bytes, or 0 for the scheduler's default.
    pub stack_size: usize,
    /// Where the coroutine was spawned. Unlike other inputs (AA-R2) the
    /// string is *not* copied: it must stay valid until the coroutine has
    /// finished. A Rust host passes `Location::caller().file()`, which is
    /// static.
    pub spawn_file: AaStr,
    /// Line of the spawn.
    pub spawn_line: u32,
    /// Column of the spawn.
    pub spawn_column: u32,
}

/// [`AaWaitInfo::flags`] bit: the suspension is a yield. `suspend` first
/// enqueues the calling coroutine with status 0, exactly as
/// `enqueue(s, current(s), 0)` right before it would (at the tail of the run
/// queue, or at the head for `AA_PRIORITY_HIGH`; a coroutine already queued
/// keeps its place and its status), then suspends it, so it resumes once the
/// coroutines queued before it have run. Honoured only by a scheduler whose
/// vtable has `AA_SCHED_CAP_WAIT_YIELD` in `caps`; any other ignores the bit.
pub const AA_WAIT_YIELD: u32 = 1 << 0;

/// What a coroutine is about to wait for, passed to `suspend`.
///
/// Read by the scheduler while the coroutine is suspended (deadlock reports,
/// introspection), so it must stay valid until `suspend` returns: a value on
/// the suspending stack is fine, because that stack outlives the wait.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaWaitInfo {
    /// `sizeof(AaWaitInfo)` as the host was compiled.
    pub struct_size: u32,
    /// `AA_WAIT_*` bits; other bits are zero (reserved).
    pub flags: u32,
    /// What the coroutine waits on, for people: `"delay 100 ms"`,
    /// `"join coroutine 7"`, `"read fd 9"`.
    pub what: AaStr,
    /// Where it waits: source file.
    pub file: AaStr,
    /// Where it waits: line.
    pub line: u32,
    /// Where it waits: column.
    pub column: u32,
}

/// What `coroutine_info` reports about a coroutine.
///
/// The strings are valid until the coroutine next runs.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaCoroutineInfo {
    /// `sizeof(AaCoroutineInfo)` as the caller was compiled; the scheduler
    /// fills at most that much.
    pub struct_size: u32,
    /// One of the `AA_CORO_*` states.
    pub state: u32,
    /// The coroutine's id: unique for the scheduler's lifetime, never 0.
    pub id: u64,
    /// The `arg` given to `coroutine_new`.
    pub arg: *mut c_void,
    /// `AA_PRIORITY_*`.
    pub priority: u32,
    /// Spawn line.
    pub spawn_line: u32,
    /// Spawn file.
    pub spawn_file: AaStr,
    /// Spawn column.
    pub spawn_column: u32,
    /// Last suspension: line (0 if it never suspended).
    pub wait_line: u32,
    /// Last suspension: file (empty if it never suspended).
    pub wait_file: AaStr,
    /// Last suspension: what it waited for (empty if it never suspended).
    pub wait_what: AaStr,
    /// How many times it has been switched to.
    pub switches: u64,
}
