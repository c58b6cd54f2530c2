//! `reactor-example`: a whole reactor for the runtime's C ABI in a few
//! hundred lines, on the Rust reactor kit (`reactor-sdk`). It is what a
//! reactor author starts from: the backend (epoll through mio,
//! edge-triggered) and one implementation of the kit's `Reactor` and
//! `Event` traits; the kit gives the plugin descriptor, the vtable and its
//! shims, the timer heap, the signal halves and the resolver pool.
//!
//! It runs timers, readiness watches, triggers, socket, pipe and datagram
//! requests (read, write, accept, connect, close, recvfrom, sendto) as
//! readiness plus a non-blocking system call, signal watches, child process
//! and filesystem watches, and name resolution. It leaves out, and says so
//! in its capabilities, inline completion and file requests: the host runs
//! files on its blocking pool.
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
//!
//! # Layout
//!
//! - `ffi`: the two trait implementations (the only `unsafe` code);
//! - `reactor`: the loop, timers, triggers, signals, lookups, and cancel,
//!   close and dispose;
//! - `io`: descriptors, polls and requests;
//! - `watch`: process and filesystem watches;
//! - `event`: event memory.
#![deny(unsafe_code)]

mod event;
#[allow(unsafe_code)] // the trait implementations' raw pointers (module `# Safety`)
mod ffi;
mod io;
mod reactor;
mod watch;

pub use ffi::{aa_reactor_entry_v1, plugin_desc};
