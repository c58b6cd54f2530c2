//! The stable C ABI between the coroutine runtime's host and its plugins.
//!
//! The runtime is three parties that only meet here:
//!
//! ```text
//!                 host (async-std-api: loads, configures, wires)
//!                   |                        |
//!        AaSchedulerVTable             AaReactorVTable
//!                   |                        |
//!            scheduler plugin  --->  reactor plugin
//!        (coroutines, stacks,     (OS events and I/O; knows
//!         run queue, switching)    nothing of coroutines)
//! ```
//!
//! Everything in this crate is `#[repr(C)]` data, `extern "C"` function
//! pointer types and constants: no `String`, no `Vec`, no trait objects, no
//! Rust enums with data. A C header generated from it is committed as
//! `include/async_abi.h`, so a reactor or a scheduler can be written in C
//! against the header alone, or in Rust against this crate alone.
//!
//! # Versioning (see [`version`])
//!
//! Each plugin exports one entry symbol per role ([`AA_SCHEDULER_ENTRY_SYMBOL`],
//! [`AA_REACTOR_ENTRY_SYMBOL`]). What it returns, [`AaPluginDesc`], begins with
//! its `struct_size` and the ABI version it was built against; the host checks
//! both before it touches anything else. Within one major version, structs and
//! vtables only ever grow at the end, so a host copies
//! `min(theirs, ours)` bytes into a zeroed value and reads missing trailing
//! slots as `NULL`; a reactor reads an [`AaIoOp`] the same way. Capability
//! bits a later minor defines count only from a plugin of that minor
//! ([`AA_CAPS_V1_0`], [`AA_CAPS_V1_1`]), so an older plugin is never sent a
//! request it cannot know. ABI 1.1 added datagram and file requests (see
//! [`io_op`]); 1.2 added [`AA_CAP_POLL_LEVEL`], with which a reactor over a
//! level-triggered poller asks the host to re-arm consumed readiness.
//!
//! # Ownership rules (numbered; code and tests cite them)
//!
//! - **AA-R1 Allocator frees.** Reactor, scheduler, events, coroutines and
//!   plugin contexts are created and freed only by the plugin that made them.
//!   Host memory (`ud` pointers, buffers) is never freed by a plugin.
//! - **AA-R2 Borrowed inputs.** [`AaStr`], [`AaBytes`], config and request
//!   structs are valid only for the duration of the call, unless the function
//!   says otherwise; a plugin copies what it keeps.
//! - **AA-R3 Borrowed outputs.** Data passed to a callback is valid only during
//!   the callback. The ABI returns no plugin-allocated strings; text is copied
//!   into a caller's buffer.
//! - **AA-R4 Asynchronous close.** After `close(ev, on_closed, ud)` the event
//!   gets no callback except exactly one `on_closed`, delivered from a *later*
//!   `run_once`. Pending operations complete first, with `-ECANCELED`, or
//!   with their real result if the kernel completed them first (so no data
//!   and no accepted descriptor is lost).
//! - **AA-R5 In-flight buffers.** For `io_submit`, the host keeps the buffer
//!   and address alive and unmoved until that operation's callback has run,
//!   including when it completes with `-ECANCELED`; since ABI 1.1 the same
//!   holds for every memory an `AaIoOp` points to (`path`, `path2`, the
//!   `AaStat` of `AA_IO_STATX`). Cancelling never shortens this. If the host
//!   *disposes* a pending request, it gets no callback, so the buffer stays
//!   lent until `destroy` returns `AA_OK`; to get a buffer back earlier,
//!   cancel the request and wait for its callback.
//! - **AA-R6 Descriptors.** A reactor never closes a descriptor it did not
//!   open, unless asked to by `AA_IO_CLOSE` or the `AA_EVF_OWNS_FD` flag.
//! - **AA-R7 Static strings.** Descriptor and vtable pointers, names and
//!   versions stay valid for the life of the process: a library is never
//!   unloaded.
//! - **AA-R8 Errors never call back.** A function that returns a negative
//!   status creates nothing and never calls the callback it was given.
//!
//! # Threads
//!
//! Each function in the header is tagged:
//! - `[init]`: entry, `init`, `deinit`; serialized, never concurrent with
//!   anything else on the same plugin context;
//! - `[loop]`: only on the thread that created the reactor or scheduler;
//!   callbacks are delivered on that thread, from inside `run_once`, and may
//!   call any `[loop]` function (re-entrancy is required);
//! - `[any]`: any thread (`wake`, `trigger_fire`, `log`, `log_enabled`);
//!   never blocks for long, never calls back synchronously.
//!
//! # Panics
//!
//! A panic must never cross this boundary: every `extern "C"` function
//! implemented in Rust catches it and returns [`AA_E_PANIC`] (see the
//! `plugin` feature's `sdk::guard`). Since Rust 1.81 a panic that escapes an
//! `extern "C"` function aborts the process.
#![cfg_attr(not(feature = "plugin"), no_std)]

pub mod version;
pub mod status;
pub mod types;
pub mod plugin;
pub mod host;
pub mod reactor;
pub mod event;
pub mod io_op;
pub mod scheduler;
pub mod coroutine;

#[cfg(feature = "plugin")]
pub mod sdk;

pub use coroutine::*;
pub use event::*;
pub use host::*;
pub use io_op::*;
pub use plugin::*;
pub use reactor::*;
pub use scheduler::*;
pub use status::*;
pub use types::*;
pub use version::*;
