//! `reactor-mio`: the epoll reactor plugin, on mio, behind the runtime's C
//! ABI (`async_abi::AaReactorVTable`, interface `"aa.reactor.v1"`).
//!
//! It knows nothing of coroutines: it runs timers, readiness watches,
//! cross-thread triggers, completion-level socket requests, signal watches,
//! child process exits, filesystem watches and name resolution (every event
//! kind of the ABI), and completes each by calling its typed callback from
//! inside `run_once`. The same code is linked statically (the `embedded`
//! and `mio` reactors, through [`plugin_desc`]) and built as
//! `libreactor_mio.so` by the package `reactor-mio-cdylib` (`cdylib/`),
//! whose entry symbol `aa_reactor_entry_v1` returns the same descriptor.
//! This crate is an rlib only, so a dependent's build and the runtime's own
//! never write the same unhashed file (ARCHITECTURE "Plugins, names and
//! configuration").
//!
//! ```
//! use async_abi::{AA_ABI_MAJOR, AA_ROLE_REACTOR};
//!
//! let desc = reactor_mio::plugin_desc();
//! // SAFETY: the descriptor is static (AA-R7).
//! let desc = unsafe { &*desc };
//! assert_eq!(desc.abi_major, AA_ABI_MAJOR);
//! assert_eq!(desc.role, AA_ROLE_REACTOR);
//! ```
//!
//! # Layout
//!
//! - `ffi`: the descriptor, the vtable and the `extern "C"` shims (the only
//!   file with `unsafe` besides `sys`);
//! - `sys`: the syscall layer; the process-wide signal handler with its
//!   table of reactor ports and `getaddrinfo` come from
//!   `async_abi::sdk::{signal, dns}`, shared with reactor-uring;
//! - `reactor`: the owned driver and the loop iteration;
//! - `registry`: per-descriptor state, one mio registration per fd;
//! - `timer/`: the deadline heap and timer arming;
//! - `ops/`: completion-level requests (read, write, accept, connect,
//!   close);
//! - `poll`: readiness watches; `trigger`: cross-thread triggers and the
//!   waker; `control`: cancel, close, dispose, set_ref;
//! - `signal`: signal watches (the loop's half); `process`: child exits
//!   through pidfds; `fs_watch`: inotify; `dns`: lookups on a small pool of
//!   resolver threads;
//! - `event`: event memory; `config`: `create` options; `error`.
//!
//! # How requests complete
//!
//! A request is tried with its non-blocking system call; on `EAGAIN` it
//! waits in its descriptor's FIFO queue for a readiness edge and is tried
//! again. With `AA_IO_TRY_INLINE` the first try happens inside `io_submit`
//! and a request that completes returns `AA_DONE` with no event.
#![deny(unsafe_code)]

mod config;
mod control;
mod dns;
mod error;
mod event;
#[allow(unsafe_code)] // the C ABI: raw pointers from the host (module `# Safety`)
mod ffi;
mod fs_watch;
mod ops;
mod poll;
mod process;
mod reactor;
mod registry;
mod signal;
#[allow(unsafe_code)] // the syscall layer (module `# Safety`)
mod sys;
mod timer;
mod trigger;

pub use ffi::plugin_desc;

/// Which build of this reactor this is: `reactor-mio <version> <debug|release>
/// <source digest>` (made by `build.rs`).
///
/// The library `libreactor_mio.so` (package `reactor-mio-cdylib`) exports it as
/// `async_runtime_build_id`; a host that links this crate and finds that
/// library by name loads it only if the two ids are equal, so a plugin file
/// built from other sources or with another profile is refused instead of
/// run.
///
/// # Examples
///
/// ```
/// let id = reactor_mio::BUILD_ID.to_str().unwrap();
/// assert!(id.starts_with(concat!("reactor-mio ", env!("CARGO_PKG_VERSION"), " ")));
/// ```
pub const BUILD_ID: &std::ffi::CStr =
    match std::ffi::CStr::from_bytes_with_nul(concat!(env!("RUNTIME_BUILD_ID"), "\0").as_bytes()) {
        Ok(id) => id,
        Err(_) => panic!("the build id contains a NUL byte"),
    };
