//! `reactor-poll`: a whole reactor for the runtime's C ABI on poll(2), the
//! way a third party writes one on a *level-triggered* poller: a
//! `reactor_sdk::readiness::LevelBackend` (poll a set of descriptors, say
//! what is ready now), which the kit's `LevelTriggered` adapter turns into
//! the edge-triggered `Backend` its readiness driver runs on. The driver,
//! written once in `reactor-sdk`, does the rest: events, timers, triggers,
//! requests as readiness plus non-blocking system calls, signals, lookups,
//! process and filesystem watches, cancel, close and dispose, the C ABI.
//!
//! What an author implements, in order (all in `poll.rs`):
//!
//! 1. a waker: a type implementing `reactor_sdk::event::Wake` that makes
//!    the poll return, from any thread (here, a write to an eventfd that is
//!    always in the poll set);
//! 2. `reactor_sdk::readiness::LevelBackend`: the plugin's `NAME` and
//!    `VENDOR`, `new` (the poller and its waker), and `poll`, which waits
//!    on a set of `(descriptor, AA_POLL_* interest)` and answers each
//!    one's readiness now (a level), and whether the waker was called;
//! 3. one line, `reactor_sdk::export_reactor!(level Poll)`, which exports
//!    `Readiness<LevelTriggered<Poll>>`: the plugin descriptor, the vtable
//!    and the entry symbol `aa_reactor_entry_v1`.
//!
//! The adapter, not this crate, keeps the edge contract: it masks what it
//! reported until the driver consumed it or a look finds it consumed, so a
//! level is never reported over and over and no edge is lost (its
//! invariants L1-L5 in `reactor-sdk/src/readiness/level.rs`). It leaves
//! out, like `reactor-example`, inline completion and file requests.
//!
//! ```
//! use async_abi::{AA_CAP_FS_WATCH, AA_CAP_IO_INLINE, AA_IFACE_REACTOR_V1, AaReactorVTable, AaStr};
//!
//! // SAFETY: the descriptor is static (AA-R7); `init` accepts a NULL host
//! // and `get_interface` returns the static vtable.
//! unsafe {
//!     let desc = &*reactor_poll::plugin_desc();
//!     let mut ctx = std::ptr::null_mut();
//!     assert_eq!((desc.init.unwrap())(std::ptr::null(), &mut ctx), 0);
//!     let id = std::str::from_utf8(&AA_IFACE_REACTOR_V1[..13]).unwrap();
//!     let vt = &*(desc.get_interface.unwrap())(ctx, AaStr::from_str(id)).cast::<AaReactorVTable>();
//!     assert_ne!(vt.caps & AA_CAP_FS_WATCH, 0);
//!     assert_eq!(vt.caps & AA_CAP_IO_INLINE, 0);
//!     (desc.deinit.unwrap())(ctx);
//! }
//! ```
#![deny(unsafe_code)]

#[allow(unsafe_code)] // poll and eventfd system calls (module `# Safety`)
mod poll;

pub use poll::{EventFd, Poll};

reactor_sdk::export_reactor!(level Poll);
