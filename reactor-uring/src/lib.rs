//! `reactor-uring`: the native io_uring reactor plugin behind the runtime's
//! C ABI (`async_abi::AaReactorVTable`, interface `"aa.reactor.v1"`),
//! interchangeable with the epoll reactor `reactor-mio`.
//!
//! It knows nothing of coroutines: it runs timers, readiness watches,
//! cross-thread triggers, completion-level socket requests, signal watches,
//! child process exits, filesystem watches and name resolution (every event
//! kind of the ABI, at parity with `reactor-mio`), and completes each by
//! calling its typed callback from inside `run_once`. Requests are
//! real ring operations (`RECV`, `SEND`, `ACCEPT`, `CONNECT`, `CLOSE`, ...),
//! not readiness emulation: the kernel does the I/O and reports a result.
//! The host links it statically (reactor name `uring`) through
//! [`plugin_desc`]; the package `reactor-uring-cdylib` (`cdylib/`) builds
//! `libreactor_uring.so`, whose entry symbol `aa_reactor_entry_v1` returns
//! the same descriptor.
//!
//! ```
//! use async_abi::{AA_CAP_IO_NATIVE, AA_IFACE_REACTOR_V1, AaReactorVTable, AaStr};
//!
//! // SAFETY: the descriptor is static (AA-R7); `init` accepts a NULL host
//! // (logging then goes to stderr) and `get_interface` returns a static
//! // vtable.
//! unsafe {
//!     let desc = &*reactor_uring::plugin_desc();
//!     let mut ctx = std::ptr::null_mut();
//!     assert_eq!((desc.init.unwrap())(std::ptr::null(), &mut ctx), 0);
//!     let id = std::str::from_utf8(&AA_IFACE_REACTOR_V1[..13]).unwrap();
//!     let vt = (desc.get_interface.unwrap())(ctx, AaStr::from_str(id));
//!     let vt = &*vt.cast::<AaReactorVTable>();
//!     assert_ne!(vt.caps & AA_CAP_IO_NATIVE, 0);
//!     (desc.deinit.unwrap())(ctx);
//! }
//! ```
//!
//! # Layout
//!
//! - `ffi`: the descriptor, the vtable and the `extern "C"` shims;
//! - `reactor`: the owned driver and the loop iteration (one
//!   `io_uring_enter` per iteration);
//! - `ring`: the ring wrapper (staging queue, enter, reap);
//! - `probe`: what `create` checks of the kernel;
//! - `ops/`: ring operations and their typed lifecycle (`mod`), requests
//!   (`io`), watches (`poll`), eventfd reads (`eventfd`), async cancels
//!   (`cancel`), pidfd waits (`pidfd`), the inotify read (`inotify`), the
//!   multishot accept (`accept`) and receive (`recv`) fast paths, and
//!   the few plain system calls (`sys`; the process-wide signal handler
//!   with its table of reactor ports and `getaddrinfo` come from
//!   `async_abi::sdk::{signal, dns}`, shared with reactor-mio);
//! - `registry`: per-descriptor state (socket or not, ops in flight, the
//!   read and write lanes, the held close);
//! - `timer/`: the deadline heap and timer arming;
//! - `poll`: readiness watches; `trigger`: cross-thread triggers and the
//!   waker; `control`: cancel, close, dispose, set_ref;
//! - `signal`: signal watches (the loop's half); `process`: child exits;
//!   `fs_watch`: inotify watches; `dns`: lookups on a small pool of
//!   resolver threads;
//! - `event`: event memory; `config`: `create` options; `error`.
//!
//! Unsafe code is confined to `ffi`, `ring` and `ops/`, each with a
//! `# Safety` module doc.
#![deny(unsafe_code)]

mod config;
mod control;
mod dns;
mod error;
mod event;
#[allow(unsafe_code)] // the C ABI: raw pointers from the host (module `# Safety`)
mod ffi;
mod fs_watch;
#[allow(unsafe_code)] // lending memory to the kernel (module `# Safety`)
mod ops;
mod poll;
mod probe;
mod process;
mod reactor;
mod registry;
#[allow(unsafe_code)] // pushing entries into the ring (module `# Safety`)
mod ring;
mod signal;
mod timer;
mod trigger;

pub use ffi::plugin_desc;

/// Which build of this reactor this is: `reactor-uring <version> <debug|release>
/// <source digest>` (made by `build.rs`).
///
/// The library `libreactor_uring.so` (package `reactor-uring-cdylib`) exports it as
/// `async_runtime_build_id`; a host that links this crate and finds that
/// library by name loads it only if the two ids are equal, so a plugin file
/// built from other sources or with another profile is refused instead of
/// run.
///
/// # Examples
///
/// ```
/// let id = reactor_uring::BUILD_ID.to_str().unwrap();
/// assert!(id.starts_with(concat!("reactor-uring ", env!("CARGO_PKG_VERSION"), " ")));
/// ```
pub const BUILD_ID: &std::ffi::CStr =
    match std::ffi::CStr::from_bytes_with_nul(concat!(env!("RUNTIME_BUILD_ID"), "\0").as_bytes()) {
        Ok(id) => id,
        Err(_) => panic!("the build id contains a NUL byte"),
    };
