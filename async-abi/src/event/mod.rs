//! Event descriptors: the common header and one module per kind.
//!
//! A reactor creates every event (one constructor per kind, `<kind>_new`),
//! owns its memory (AA-R1) and completes it by calling its typed callback
//! from inside `run_once`, on the loop thread. The host sees only the common
//! header, [`AaEvent`]; the kind's own state is the reactor's business.
//!
//! Three different ways an event ends, never to be confused:
//! - **cancel** ends the *operation*: its callback runs once more, from a
//!   later `run_once`, with the reason (or with the real result, if the
//!   operation had already completed). The event stays allocated.
//! - **close** ends the *handle*, asynchronously: a pending I/O request
//!   completes with `-ECANCELED` (timers, polls and triggers get no further
//!   callback of their own), the kernel is drained, a descriptor the event
//!   owns is closed, then `on_closed` (which may be NULL) runs exactly once
//!   from a later `run_once` (AA-R4). The event stays allocated until
//!   `on_closed` returns.
//! - **dispose** drops the host's *reference*: no callback for the event ever
//!   runs again and the host never touches it again. The reactor frees the
//!   memory once nothing else refers to it: an in-flight kernel operation
//!   holds a reference, so a disposed request whose buffer the kernel still
//!   owns stays alive until its completion arrives. Disposing an active event
//!   stops it silently. Every event must be disposed exactly once, after its
//!   `on_closed` if it was closed.
//!
//! Liveness: an event is *active* while it can still produce a callback (an
//! armed timer, an armed poll, a pending request, an open trigger, a close in
//! progress). `alive()` counts active events that are *referenced*; an event
//! created with [`AA_EVF_HIDDEN`], or unreferenced with `set_ref(ev, false)`,
//! never keeps the loop alive and is invisible to deadlock detection.

pub mod dns;
pub mod fs_watch;
pub mod poll;
pub mod process;
pub mod signal;
pub mod timer;
pub mod trigger;

pub use dns::*;
pub use fs_watch::*;
pub use poll::*;
pub use process::*;
pub use signal::*;
pub use timer::*;
pub use trigger::*;

use core::ffi::c_void;

/// Event kind: a timer, [`AaTimerCb`].
pub const AA_EVENT_TIMER: u32 = 1;
/// Event kind: descriptor readiness, [`AaPollCb`].
pub const AA_EVENT_POLL: u32 = 2;
/// Event kind: an I/O request, [`crate::AaIoCb`].
pub const AA_EVENT_IO: u32 = 3;
/// Event kind: a cross-thread trigger, [`AaTriggerCb`].
pub const AA_EVENT_TRIGGER: u32 = 4;
/// Event kind: a Unix signal, [`AaSignalCb`].
pub const AA_EVENT_SIGNAL: u32 = 5;
/// Event kind: a child process exit, [`AaProcessCb`].
pub const AA_EVENT_PROCESS: u32 = 6;
/// Event kind: a filesystem watch, [`AaFsWatchCb`].
pub const AA_EVENT_FS_WATCH: u32 = 7;
/// Event kind: a name resolution, [`AaDnsCb`].
pub const AA_EVENT_DNS: u32 = 8;

/// Event flag: the event never keeps the loop alive (infrastructure: a
/// cross-thread trigger, a watchdog timer) and deadlock detection ignores it.
pub const AA_EVF_HIDDEN: u32 = 1 << 0;
/// Event flag: the reactor owns the descriptor and closes it on `close`
/// (AA-R6).
pub const AA_EVF_OWNS_FD: u32 = 1 << 1;

/// The common header of every event. The rest is the reactor's.
///
/// The host may read these fields; only the reactor writes them.
#[repr(C)]
#[derive(Debug)]
pub struct AaEvent {
    /// `sizeof` the header as the reactor was compiled.
    pub struct_size: u32,
    /// One of the `AA_EVENT_*` kinds.
    pub kind: u32,
    /// `AA_EVF_*` flags the event was created with.
    pub flags: u32,
    /// Zero.
    pub _reserved: u32,
}

/// Called exactly once after `close`, from a later `run_once` (AA-R4).
/// `[loop]`
pub type AaClosedCb = Option<unsafe extern "C" fn(ev: *mut AaEvent, ud: *mut c_void)>;
