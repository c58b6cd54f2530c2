//! The scheduler plugin: stackful coroutines on pooled, guarded stacks,
//! behind the `async-abi` C ABI (`"aa.scheduler.v1"`).
//!
//! ```text
//!        host (async-std-api) --- AaSchedulerVTable ---> this crate
//!                                                           |
//!                                           AaReactorVTable (given in create)
//!                                                           v
//!                                                    reactor plugin
//! ```
//!
//! This crate is an rlib: the host links it statically (the `embedded`
//! scheduler and every scheduler name) through [`plugin_desc`]. The package
//! `async-scheduler-cdylib` (`cdylib/`) wraps it into
//! `libasync_scheduler.so`, whose entry symbol `aa_scheduler_entry_v1`
//! returns the same static descriptor, so a statically linked scheduler goes
//! through the same negotiation as a loaded one. The library is a package of
//! its own because a package that is both a cdylib and an rlib gets an rlib
//! without a hash in its file name, which a dependent's build and the
//! runtime's own build overwrite in a shared target directory (E0308,
//! ARCHITECTURE "Plugins, names and configuration").
//!
//! # How it works
//!
//! - A coroutine runs on a *fiber*: a pooled stack plus saved registers,
//!   running a loop that calls one coroutine entry after another
//!   (`fiber.rs`). A finished coroutine's fiber runs the next
//!   not-yet-started coroutine in place, without a switch.
//! - `suspend` runs the scheduler tick on the suspending stack
//!   (`tick.rs`) and switches straight to the next runnable
//!   coroutine; only when nothing is runnable does control go to the
//!   scheduler's own context (the thread stack inside `run`), where the
//!   reactor may block.
//! - Stack switching is behind one small trait with two engines, `context`
//!   (symmetric: Boost.Context's `jump_fcontext`, through the `context`
//!   crate) and `corosensei` (asymmetric). See the crate README for the benchmark that picks the
//!   default.
//! - Stacks are carved from large `mmap` slabs, each with one guard page
//!   installed by `MADV_GUARD_INSTALL`, so 100,000 coroutines need a few
//!   thousand mappings, not 200,000. A coroutine that overflows onto its
//!   guard page is reported in one line (id, spawn location, stack size and
//!   how to raise it) and the process aborts (`stack/overflow.rs`).
//!
//! # Example
//!
//! The host side, in outline (the test suite has a complete host):
//!
//! ```
//! use async_abi::{AaPluginDesc, AA_ROLE_SCHEDULER};
//!
//! let desc: &AaPluginDesc = unsafe { &*async_scheduler::plugin_desc() };
//! assert_eq!(desc.role, AA_ROLE_SCHEDULER);
//! assert!(desc.init.is_some() && desc.get_interface.is_some());
//! ```
//!
//! # Unsafe code
//!
//! Confined to `ffi.rs` (the `extern "C"` shims), `stack/`
//! (mappings and guard pages), `switch/` (the engines) and the fiber core
//! (`coroutine/`, `fiber.rs`), each with a `# Safety` module doc. Everything
//! else is safe code over `Cell`s: the scheduler is re-entered from reactor
//! callbacks, entries, microtasks and handlers, so no `&mut` to its state is
//! ever held across such a call.
//!
//! The crate denies `unsafe_code`; the files that opt back in are the
//! inventory, one grep away: `grep -rl 'allow(unsafe_code)' src`.
#![deny(unsafe_code)]
// Only under AddressSanitizer, which needs nightly anyway (build.rs): the
// retiring jump of the context engine must keep its frames off ASan's fake
// stack (switch/context.rs X-I5).
#![cfg_attr(asan, feature(sanitize))]

mod chaos;
mod coroutine;
mod deadlock;
mod ffi;
mod fiber;
mod microtask;
mod options;
mod run_queue;
mod scheduler;
mod shutdown;
mod stack;
mod switch;
mod tick;

pub use ffi::{plugin_desc, stats, SchedulerStats, BUILD_ID};
