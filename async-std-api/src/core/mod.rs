//! The core: coroutines and how they wait, and the runtime's wiring to the
//! plugins. It knows nothing of scopes, groups, contexts or I/O types:
//! everything here imports only from the core itself (`cargo xtask
//! check-arch` enforces it).
//!
//! - `id`, `failure`, `error`: what a coroutine is called and how it ends
//!   ([`Failure`](failure::Failure), [`Cancelled`](error::Cancelled),
//!   [`JoinError`](error::JoinError)).
//! - `state`, `waiters`: the host's record of a coroutine and the waiter
//!   lists every wait uses.
//! - `wait`, `cancel`, `awaitable`, `budget`: suspension points, the
//!   cancellation policy, `protect`, the untyped `until` trigger, and the
//!   cooperative budget that makes a busy coroutine give the loop back.
//! - `entry`: what every coroutine runs, from its body to its finish; the
//!   scope it belongs to is told through [`Membership`](state::Membership),
//!   a task group through [`GroupSink`](state::GroupSink): the two seams the
//!   layer above plugs into.
//! - `coroutine`, `join`, `task`: the handles and the questions a coroutine
//!   asks about itself.
//! - `readiness`: try a non-blocking system call, wait for the reactor's
//!   readiness report on `EAGAIN`, try again (`io::Async`, datagrams).
//! - `offload`: running a closure on the blocking pool while the calling
//!   coroutine waits (the pool and the door it reports back through are in
//!   `runtime`).
//! - `events`: warnings and errors as data, for a handler, `tracing` and
//!   standard error.
//! - `runtime`: configuration, plugin loading, the thread's runtime, the
//!   FFI wrappers, the shutdown phase, the activity and cancellation
//!   watchdogs, the blocking pool and the door other threads reach the loop
//!   through.

pub mod awaitable;
pub(crate) mod budget;
pub(crate) mod cancel;
pub(crate) mod decimal;
pub(crate) mod coroutine;
pub(crate) mod entry;
pub(crate) mod error;
pub mod events;
pub(crate) mod failure;
pub(crate) mod fd_watches;
#[cfg(feature = "hooks")]
pub(crate) mod foreign_tls;
pub(crate) mod id;
pub(crate) mod join;
pub(crate) mod offload;
pub(crate) mod panic_hook;
pub(crate) mod readiness;
pub(crate) mod runtime;
pub(crate) mod slab;
pub(crate) mod state;
pub(crate) mod task;
pub(crate) mod wait;
pub(crate) mod waiters;
