//! `reactor-example`: a whole reactor for the runtime's C ABI, written the
//! way a third party writes one: a backend for the kit's readiness driver
//! (`reactor_sdk::readiness`) on a raw OS API, here epoll through `libc`
//! (edge-triggered, an eventfd to wake it). The driver, written once in
//! `reactor-sdk`, does the rest: events, timers, triggers, requests as
//! readiness plus non-blocking system calls, signals, lookups, process and
//! filesystem watches, cancel, close and dispose, and the C ABI.
//!
//! What an author implements, in order (all in `epoll.rs`):
//!
//! 1. a waker: a type implementing `reactor_sdk::event::Wake` that makes
//!    the poller's wait return, from any thread (here, a write to an
//!    eventfd the epoll watches);
//! 2. `reactor_sdk::readiness::Backend`: the plugin's `NAME` and `VENDOR`,
//!    `new` (the poller and its waker), `register`, `modify` and
//!    `deregister` a descriptor under a token, and `wait`, which reports
//!    `(token, AA_POLL_* bits)`, edge-triggered;
//! 3. one line, `reactor_sdk::export_reactor!(backend Epoll)`, which
//!    exports `Readiness<Epoll>`: the plugin descriptor, the vtable, and the
//!    entry symbol `aa_reactor_entry_v1`.
//!
//! It leaves out, and says so in its capabilities, inline completion and
//! file requests: the host runs files on its blocking pool.
//!
//! ```
//! use async_abi::{AA_CAP_IO_INLINE, AA_CAP_SIGNAL, AA_IFACE_REACTOR_V1, AaReactorVTable, AaStr};
//!
//! // SAFETY: the descriptor is static (AA-R7); `init` accepts a NULL host
//! // and `get_interface` returns the static vtable.
//! unsafe {
//!     let desc = &*reactor_example::plugin_desc();
//!     let mut ctx = std::ptr::null_mut();
//!     assert_eq!((desc.init.unwrap())(std::ptr::null(), &mut ctx), 0);
//!     let id = std::str::from_utf8(&AA_IFACE_REACTOR_V1[..13]).unwrap();
//!     let vt = &*(desc.get_interface.unwrap())(ctx, AaStr::from_str(id)).cast::<AaReactorVTable>();
//!     assert_ne!(vt.caps & AA_CAP_SIGNAL, 0);
//!     assert_eq!(vt.caps & AA_CAP_IO_INLINE, 0);
//!     (desc.deinit.unwrap())(ctx);
//! }
//! ```
#![deny(unsafe_code)]

#[allow(unsafe_code)] // epoll and eventfd system calls (module `# Safety`)
mod epoll;

pub use epoll::{Epoll, EventFd};

reactor_sdk::export_reactor!(backend Epoll);
