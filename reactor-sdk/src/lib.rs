//! `reactor-sdk`: the Rust reactor kit. What every Rust reactor of the
//! runtime's C ABI needs and should not write again, so that a reactor is
//! its backend-specific code plus one trait implementation:
//!
//! - [`readiness`]: [`readiness::Readiness`], a whole readiness reactor
//!   over a small [`readiness::Backend`] (the OS poller and a waker): a
//!   reactor on epoll or kqueue is just its backend, one on poll(2) or
//!   `select` a [`readiness::LevelBackend`] under
//!   [`readiness::LevelTriggered`];
//! - [`event`]: [`event::Ev`], one generic event type (header, liveness,
//!   your kind state and trigger half) with the [`Event`] and
//!   [`timer::Timed`] impls written once;
//! - [`traits`]: the [`Reactor`] and [`Event`] traits a reactor implements;
//! - [`ffi`]: [`export_reactor!`], which makes the plugin descriptor, the
//!   `aa.reactor.v1` vtable and one `extern "C"` shim per slot, generic over
//!   the trait and monomorphised (no `dyn`): each shim catches panics
//!   (`AA_E_PANIC`), checks its pointers and flags, reads `AaIoOp`s under
//!   the compatibility rule, records the failure for `last_error_message`;
//! - [`deferred`]: the callbacks owed to a later `run_once` (cancellations,
//!   `on_closed`) and their delivery;
//! - [`callback`]: the host's typed callbacks ([`HostCallback`],
//!   [`ClosedCallback`]);
//! - [`error`]: [`Error`] (a status and one line) and [`Result`];
//! - [`core`]: the loop's bookkeeping ([`core::Core`]: loop thread, clock,
//!   alive count, events not yet disposed, `run_once` re-entry, last error);
//! - [`timer`]: the deadline heap ([`timer::TimerHeap`]) both workspace
//!   reactors arm their one kernel timeout from;
//! - [`dns`]: the resolver pool (`getaddrinfo` on at most four threads,
//!   results handed back through the reactor's waker);
//! - [`signal`]: the loop's half of signal watches (the port in the
//!   process-wide table and the watchers per signal);
//! - [`inotify`]: filesystem watches (the descriptor, the kernel watches,
//!   the records and whom they are for);
//! - [`watch`]: the watchers-per-key list both of those keep;
//! - [`options`]: `create`'s option keys under the ABI's rules;
//! - [`process`]: a child's pidfd and its exit status;
//! - [`sys`]: the system calls a readiness reactor runs requests with, and
//!   the host's lent buffer and address ([`sys::HostBuf`], [`sys::HostAddr`]).
//!
//! It builds on `async_abi::sdk` (panic guards, host logging, the `AaIoOp`
//! reader, the signal table and `getaddrinfo`), which stays in the ABI
//! crate for every plugin, schedulers included. See `README.md` for what a
//! reactor author implements, in order, and `reactor-example/` for a whole
//! reactor on it (an epoll backend of [`readiness`]), `reactor-poll/` for
//! one on poll(2).
//!
//! ```
//! // A reactor type gets its plugin glue from one macro call:
//! //     reactor_sdk::export_reactor!(crate::reactor::Reactor);
//! // which needs `impl reactor_sdk::Reactor for Reactor` (its `ABI_MINOR`
//! // the minor you implement, stated, never `AA_ABI_MINOR`) and
//! // `unsafe impl reactor_sdk::Event for Event` (given for `event::Ev`);
//! // a backend of the readiness driver:
//! //     reactor_sdk::export_reactor!(backend crate::Epoll);
//! let vtable_size = std::mem::size_of::<async_abi::AaReactorVTable>();
//! assert!(vtable_size > 0);
//! ```

#![deny(unsafe_code)]

#[allow(unsafe_code)] // calls into the host (module `# Safety`)
pub mod callback;
#[allow(unsafe_code)] // reads the thread pointer register (`thread_mark`)
pub mod core;
pub mod deferred;
pub mod dns;
pub mod error;
#[allow(unsafe_code)] // `unsafe impl Event` and `fire`'s raw field pointers (F4)
pub mod event;
#[allow(unsafe_code)] // the C ABI: raw pointers from the host (module `# Safety`)
pub mod ffi;
#[allow(unsafe_code)] // three inotify system calls and a read (module `# Safety`)
pub mod inotify;
pub mod options;
#[allow(unsafe_code)] // pidfd_open and waitid (module `# Safety`)
pub mod process;
pub mod readiness;
pub mod signal;
#[allow(unsafe_code)] // the request system calls (module `# Safety`)
pub mod sys;
pub mod timer;
#[allow(unsafe_code)] // `unsafe trait Event` and the `[any]` methods' contracts
pub mod traits;
pub mod watch;

pub use callback::{ClosedCallback, HostCallback};
pub use error::{Error, Result};
pub use ffi::{Event, Reactor, Submitted};

/// The ABI crate, for [`export_reactor!`]'s expansion.
#[doc(hidden)]
pub use async_abi as __abi;
