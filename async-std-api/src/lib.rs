//! Stackful coroutines for plain, blocking-style Rust, on a pluggable
//! scheduler and pluggable reactors: the user API of PHP's True Async RFC.
//!
//! ```text
//!   your code (blocking style, inside coroutines)
//!            |
//!      async-std-api  (this crate: the host; loads and wires the plugins)
//!            |
//!   ------ async-abi (C ABI) ------
//!      |                       |
//!  scheduler plugin      reactor plugin (mio, io_uring, yours)
//! ```
//!
//! Inside a coroutine, `stream.read(&mut buf)?`, [`delay`]`(100)` and
//! `handle.`[`join`](JoinHandle::join)`()` look like ordinary blocking calls;
//! they suspend the coroutine and let the others run. There is no
//! `async`/`await`: any function can run in a coroutine unchanged.
//!
//! ```
//! use std::io::{BufRead, BufReader, Write};
//! use async_std_api::net::{TcpListener, TcpStream};
//! use async_std_api::{delay, run, spawn};
//!
//! let lines = run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     // An echo server: one coroutine per connection, plain std::io code.
//!     spawn(move || {
//!         let (conn, _) = listener.accept().unwrap();
//!         let mut line = String::new();
//!         BufReader::new(&conn).read_line(&mut line).unwrap();
//!         (&conn).write_all(line.as_bytes()).unwrap();
//!     });
//!     let client = spawn(move || {
//!         delay(5).unwrap();
//!         let mut s = TcpStream::connect(addr).unwrap();
//!         s.write_all(b"hello\n").unwrap();
//!         let mut echo = String::new();
//!         BufReader::new(&s).read_line(&mut echo).unwrap();
//!         echo
//!     });
//!     client.join().unwrap()
//! })
//! .unwrap();
//! assert_eq!(lines, "hello\n");
//! ```
//!
//! # Where the RFC's words land in Rust
//!
//! | RFC | Rust | Why |
//! |---|---|---|
//! | main flow is a coroutine | [`run`]`(f)`: `f` is the main coroutine | the RFC's main script can `suspend` and `await`; so can `f` |
//! | `spawn f()` | [`spawn`]`(f) -> `[`JoinHandle`]`<T>` | `#[track_caller]` records the spawn location; the body never runs before `spawn` returns (REF-1) |
//! | `await $c` | [`JoinHandle::join`] `-> Result<T, `[`JoinError`]`>` | typed value, like `std::thread::JoinHandle::join`; returns at once if finished (REF-4) |
//! | `await $c` (untyped) | [`Coroutine::wait`] | the RFC's `Coroutine` can be awaited by anyone holding it |
//! | `await $c until $t` | [`JoinHandle::join_until`], [`JoinHandle::wait_until`], [`Coroutine::wait_until`] | `wait_until` keeps the handle, so the coroutine can be awaited again (R-AU3) |
//! | `AwaitCancelledException` | [`JoinError::is_await_cancelled`] | not a kind of cancellation (D-19): the awaited coroutine goes on |
//! | `Awaitable` | [`Awaitable`] (sealed) | implemented by [`Timeout`](time::Timeout), [`JoinHandle`], [`Coroutine`] |
//! | `suspend` | [`suspend`]`() -> Result<(), `[`Cancelled`]`>` | a yield; a cancellation point |
//! | `Coroutine` object | [`Coroutine`] (cloneable, untyped), from [`JoinHandle::coroutine`] or [`current`] | the typed `JoinHandle` is unique, like std's; observing and cancelling need not be |
//! | `currentCoroutine()` | [`current`] | |
//! | `isStarted`, `isQueued`, `isRunning`, `isSuspended`, `isCancelled`, `isCancellationRequested`, `isFinished` | [`Coroutine::is_started`] ... [`Coroutine::is_finished`] | std getter style (no `get_`) |
//! | `getSpawnLocation` | [`Coroutine::spawn_location`] | a `&'static Location` |
//! | `$c->cancel()` | [`Coroutine::cancel`], [`Coroutine::cancel_with`], [`JoinHandle::cancel`] | first reason wins; edge-triggered (D-1) |
//! | `CancellationException` | [`Cancelled`] (id, [`CancelCause`], reason) | returned by every blocking call; `?` propagates it |
//! | cancellation in I/O | `io::Error` of kind `Other` with an inner [`Cancelled`]; [`io::cancelled`] finds it | never `Interrupted`, which `read_exact`/`write_all` retry (and would swallow the cancellation) |
//! | exception in a coroutine | a panic, caught at the coroutine boundary: [`JoinError::is_panic`] | a panicking coroutine never takes the process down; every waiter gets the same failure ([`JoinError::same_failure`], R-CO5) |
//! | `delay(ms)` | [`delay`], [`sleep`] | a zero delay is a yield |
//! | `timeout(ms)` | [`timeout`] `->` [`Timeout`](time::Timeout) | armed at creation; dropping it disarms it |
//! | deadlock | waiters get [`Cancelled`] with [`CancelCause::Deadlock`]; [`run`] returns `Err` ([`ErrorKind::Deadlock`]) | the scheduler logs each waiter (id, spawn and wait locations) |
//! | graceful shutdown | a panic in the main coroutine: the others are unwound (their locals dropped), then the panic resumes in the caller of [`run`] | like tokio's `block_on` |
//! | Scheduler / Reactor extensions | plugins behind a C ABI (`async-abi`), chosen by [`Builder`], `ASYNC_SCHEDULER` / `ASYNC_REACTOR`, or a config file | any language can implement them |
//! | non-blocking sockets | [`net::TcpListener`], [`net::TcpStream`] with `std::io::Read`/`Write` | existing synchronous code works unchanged |
//!
//! Not there yet: `Scope` (`spawn with`, `Scope::inherit`, disposal
//! strategies, zombies), `TaskGroup`, `protect`, `onFinally`, the context API,
//! combinators (`all`, `any`, `race`), `hiPriority`, `gracefulShutdown()`,
//! signals, UDP and Unix sockets, files, DNS without blocking, and
//! `getTrace`/`getAwaitingInfo`. An unhandled failure of a coroutine nobody
//! joins is currently kept on its handle, not propagated to a scope.
//!
//! # Configuration
//!
//! Builder, then environment, then config file, then the embedded default:
//! see [`Builder`] and the crate README. Every configuration or load error
//! is one line, returned by [`run`] before any user code runs.
//!
//! # Threads
//!
//! One runtime per thread; every handle is `!Send` (`Rc` inside).
#![deny(unsafe_code)]

pub mod awaitable;
mod cancel;
pub mod io;
pub mod net;
mod runtime;
mod task;
pub mod time;

pub use awaitable::Awaitable;
pub use runtime::{Builder, Error, ErrorKind};
pub use task::{
    current, spawn, suspend, CancelCause, Cancelled, Coroutine, CoroutineId, JoinError, JoinHandle,
};
pub use time::{delay, sleep, timeout};

/// Runs `f` as the main coroutine of a new runtime on this thread and
/// returns its value once every coroutine has finished.
///
/// The configuration comes from the environment (`ASYNC_SCHEDULER`,
/// `ASYNC_REACTOR`, ...), a config file (`ASYNC_CONFIG`), or the embedded
/// defaults; use [`Builder`] to set it in code. Coroutines still running
/// when `f` returns run to completion before `run` returns (REF-3).
///
/// # Errors
///
/// - [`ErrorKind::Config`], [`ErrorKind::Load`], [`ErrorKind::Plugin`]: the
///   configuration is invalid, a plugin cannot be loaded, or refuses to
///   start; returned before `f` runs, as one line naming the value and the
///   reason;
/// - [`ErrorKind::Deadlock`]: coroutines waited with nothing left to wake
///   them (the scheduler logged each of them); they were resumed with
///   [`Cancelled`] (cause [`CancelCause::Deadlock`]);
/// - [`ErrorKind::AlreadyRunning`]: a runtime is already running on this
///   thread ("a runtime is already running on this thread").
///
/// # Panics
///
/// If `f` panics, the other coroutines are unwound (their locals are
/// dropped), the runtime is torn down, and the panic resumes here.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn};
///
/// let sum = run(|| {
///     let handles: Vec<_> = (1..=3).map(|i| spawn(move || i * 10)).collect();
///     handles.into_iter().map(|h| h.join().unwrap()).sum::<i32>()
/// })
/// .unwrap();
/// assert_eq!(sum, 60);
/// ```
#[track_caller]
pub fn run<F, T>(f: F) -> Result<T, Error>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    Builder::new().run(f)
}
