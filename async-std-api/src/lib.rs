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
//! | RFC | Rust | Why (rule ids: `docs/semantics.md`) |
//! |---|---|---|
//! | main flow is a coroutine | [`run`]`(f)`: `f` is the main coroutine, in the global scope | the RFC's main script can `suspend` and `await`; so can `f` |
//! | `spawn f()` | [`spawn`]`(f) -> `[`JoinHandle`]`<T>` | `#[track_caller]` records the spawn location; the body never runs before `spawn` returns (REF-1); it goes to the caller's scope (R-CO1, R-S1) |
//! | uncaught exception | [`Failure`]: a panic, or the `Err` of a [`spawn_try`] body (`?` flows like a throw) | shared by `Arc`: every awaiter, responsibility point and handler gets the *same* object (R-CO5, D-13, P-14); one shape, primary + [`attached`](Failure::attached) (D-4, P-12) |
//! | `spawn with $scope f()` | [`spawn_in`]`(&target, f)`, [`spawn_try_in`] | `target`: a [`Scope`], a [`ScopeRef`], or any [`SpawnStrategy`]; a closed scope is an `Err` (R-S4) |
//! | `await $c` | [`JoinHandle::join`] `-> Result<T, `[`JoinError`]`>` | typed value, like `std::thread::JoinHandle::join`; returns at once if finished (REF-4) |
//! | `await $c` (untyped) | [`Coroutine::wait`] | the RFC's `Coroutine` can be awaited by anyone holding it |
//! | `await $c until $t` | [`JoinHandle::join_until`], [`JoinHandle::wait_until`], [`Coroutine::wait_until`] | `wait_until` keeps the handle, so the coroutine can be awaited again (R-AU3) |
//! | "A coroutine cannot await itself" | [`JoinError::is_self_await`] | an error, not a panic (R-CO6) |
//! | `AwaitCancelledException` | [`JoinError::is_await_cancelled`] | not a kind of cancellation (D-19); uncaught (returned by a `spawn_try` body) it is an ordinary failure (P-03); a trigger that *failed* is its cause, [`JoinError::trigger_failure`] (D-16, replacing the draft's R-AU2) |
//! | `Awaitable` | [`Awaitable`] (sealed) | implemented by [`Timeout`](time::Timeout), [`Signal`](signal::Signal), [`JoinHandle`], [`Coroutine`] |
//! | `suspend` | [`suspend`]`() -> Result<(), `[`Cancelled`]`>` | a yield; a cancellation point (R-CO3) |
//! | `Coroutine` object | [`Coroutine`] (cloneable, untyped), from [`JoinHandle::coroutine`] or [`current`] | the typed `JoinHandle` is unique, like std's; observing and cancelling need not be |
//! | `isStarted`, `isQueued`, `isRunning`, `isSuspended`, `isCancelled`, `isCancellationRequested`, `isFinished` | [`Coroutine::is_started`] ... [`Coroutine::is_finished`] | std getter style (no `get_`), R-CO2 |
//! | `getSpawnLocation`, `getSuspendLocation`, `getAwaitingInfo`, `getCoroutines()` | [`Coroutine::spawn_location`], [`Coroutine::suspend_location`], [`Coroutine::awaiting_info`], [`coroutines`] | `&'static Location`s; `getTrace` is [`Coroutine::trace`]: the running coroutine's stack now, a suspended one's as it suspended when tracing is on ([`Builder::trace`], `ASYNC_TRACE=1`), since a suspended Rust stack cannot be walked portably afterwards (R-T1); [`live_events`] counts the reactor's live events |
//! | `$c->onFinally(f)`, `Async\onFinally(f)` | [`Coroutine::on_finally`], [`on_finally`] | once, newest first (Go's `defer`), before joiners wake; also for a coroutine cancelled before it started, whose captures are dropped first; handler panics reported apart (R-CO8, D-12, D-23, P-16) |
//! | `$c->cancel()` | [`Coroutine::cancel`], [`Coroutine::cancel_with`], [`JoinHandle::cancel`] | first reason wins; delivered once at the next suspension point (D-1, edge-triggered); a queued wake-up loses to it (D-2) |
//! | `CancellationException` | [`Cancelled`] (id, [`CancelCause`], reason, scope, the [`Failure`] that caused it) | returned by every blocking call; `?` propagates it; converts only into `io::Error` and boxed errors, where the runtime still finds it: a coroutine that returns its own cancellation ends *cancelled*, never failed (R-C1, P-01) |
//! | cancellation in I/O | `io::Error` of kind `Other` with an inner [`Cancelled`]; [`io::cancelled`] finds it | never `Interrupted`, which `read_exact`/`write_all` retry (and would swallow the cancellation) |
//! | self-cancellation | `current().cancel()` does nothing at the call; delivered at the next suspension point, or the coroutine ends cancelled if it returns first | v1.7, D-11, P-23 |
//! | real error while cancelling | the failure wins: the coroutine ends failed | v1.7 override rule, D-22 |
//! | `Async\protect(fn)` | [`protect`]`(f) -> R`, [`check_cancelled`] | a cancellation during `f` is deferred and delivered right after the *outermost* `protect` returns, at the next cancellation point (`check_cancelled` is one that does not suspend); Rust has no exception to throw "right after", so it stays pending (R-C2, D-21, D-22, P-13) |
//! | `new Scope()`, `Scope::inherit()` | [`Scope::new`], [`Scope::inherit`], [`Scope::inherit_from`] | `new` is a root (a child of the global scope only for error propagation and shutdown) (R-S2) |
//! | the Scope object and its destructor | [`Scope`] (owning handle, `Clone`; dropping the last disposes: cancel + one warning naming what still ran) and [`ScopeRef`] (non-owning: [`current_scope`], what coroutines hold) | coroutines do not keep the handle alive; [`Scope::detach`] gives up ownership without disposing (D-9: cancel, not `disposeSafely`) |
//! | `$scope->cancel()` | [`ScopeRef::cancel`], [`ScopeRef::cancel_with`] | children first, bottom-up; closes the scope (R-S3, D-8, D-18: always cancels); again with a reason: ignored with a warning (R-S5) |
//! | `dispose`, `disposeSafely`, `disposeAfterTimeout` | [`ScopeRef::dispose`], [`ScopeRef::dispose_safely`], [`ScopeRef::dispose_after_timeout`] | `dispose_safely` makes zombies (warned); `dispose_after_timeout` = `dispose_safely` now, cancel the zombies after the delay (R-S9, D-10) |
//! | zombie policy, `async.zombie_coroutine_timeout` | zombies do not count as active; once nothing else runs they get [`Builder::zombie_timeout`] (5 s default, `ASYNC_ZOMBIE_COROUTINE_TIMEOUT`, `[runtime] zombie_coroutine_timeout`), are then cancelled, and unwound if they ignore it | R-S10, P-18 |
//! | `awaitCompletion($cancellation)` | [`ScopeRef::await_completion`]`(&token) -> Result<(), `[`ScopeError`]`>` | token mandatory; waits for the scope and its descendants (zombies excluded); a responsibility point: receives the scope's failures, returned once the scope is idle (D-26); at once on a cancelled scope; an error from inside (R-S6, R-S8) |
//! | `awaitAfterCancellation(handler, cancellation)` | [`ScopeRef::await_after_cancellation`] | waits for everything, zombies included; each failure to the handler (R-S7) |
//! | `setExceptionHandler`, `setChildScopeExceptionHandler` | [`ScopeRef::set_exception_handler`], [`ScopeRef::set_child_scope_exception_handler`] | `Fn(&ScopeRef, &Coroutine, &Failure) -> Result<(), Failure>`: `Ok` absorbs, `Err` goes on to the parent; not on the global scope ([`ScopeErrorKind::GlobalScope`]) |
//! | `$scope->onFinally(f)` | [`ScopeRef::on_finally`] | once, when the scope is closed and empty |
//! | `getChildScopes`, `getCoroutines`, `isFinished`, `isClosed`, context | [`ScopeRef::child_scopes`], [`ScopeRef::coroutines`], [`ScopeRef::is_finished`], [`ScopeRef::is_closed`], [`ScopeRef::is_cancelled`], [`ScopeRef::context`] | R-S11 |
//! | `Async\Context`: `find`, `get`, `has` | [`Context::find`] `-> Result<Option<Rc<T>>, `[`ContextError`]`>`, [`Context::get`] `-> Result<Rc<T>, _>`, [`Context::has`] | all three walk the chain (this context, its parent scope's, ... the global context); the nearest live slot wins (a child's `set` shadows, REF-23); `get` is `Err` ([`ContextErrorKind::KeyMissing`]) where `find` is `Ok(None)` (R-CX1, D-15) |
//! | `findLocal`, `getLocal`, `hasLocal` | [`Context::find_local`], [`Context::get_local`], [`Context::has_local`] | this context only, one level (D-15); R-CX1's other reading, "the coroutine-local context", is [`coroutine_context`]`().find(..)` |
//! | `set($key, $value, $replace)`, `unset($key)` | [`Context::set`] (`Err` [`ContextErrorKind::KeyExists`] if set), [`Context::replace`] (overwrites), [`Context::unset`] | two methods, not a `bool` argument; `?` instead of returning `self` for chaining |
//! | slot values | any `'static` `T`, stored and read back as `Rc<T>` (shared, not cloned: no `Clone` bound); another type is `Err` ([`ContextErrorKind::WrongType`]), never a panic | values drop when replaced, unset, or with their context (unless a reader keeps the `Rc`) |
//! | key objects ("only code with the key can read") | [`Key`]`<T>`: `Key::new("db connection")`, a unique identity; a string key is `&str` / `&String` | a `Key<T>` also fixes the value's type: `ctx.get(&KEY)` needs no turbofish |
//! | a `WeakReference` in a slot, dereferenced by `find` | [`Context::set_weak`]`(key, Rc::downgrade(&v))` | every read upgrades it; once the value is gone the slot is as if unset (`find` `None`, `has` false, `set` may take it) |
//! | `$scope->context`, `currentContext()`, `rootContext()` | [`ScopeRef::context`], [`current_context`], [`root_context`] | made with the scope's record on first use, chained to the parent scope's (R-CX1); every chain ends at the global context (a `Scope::new` scope's parent is the global scope); the root is the topmost scope below the global one, or the global context in the global scope (R-CX2) |
//! | `coroutineContext()` | [`coroutine_context`] | private: no parent, not inherited; emptied when the coroutine completes (returned, failed or cancelled), after its `on_finally` handlers, before its joiners resume; a coroutine that never calls it pays nothing (R-CX2) |
//! | the error flow | awaiters first (consumed if one was registered when it finished, D-3, D-17); else the scope's handler; else cancel the scope (siblings get [`CancelCause::Failure`] with the failure, D-14) and hand it to the responsibility points, or to the parent; at the global scope: graceful shutdown | the RFC's "Error Handling" list; later failures in a failed scope are attached (D-4); see `scope::flow` |
//! | graceful shutdown, `gracefulShutdown()` | [`graceful_shutdown`], [`graceful_shutdown_with`]; [`run`] returns `Err` of kind [`ErrorKind::Failed`] after an unhandled failure | phase one cancels every coroutine and closes nothing; a second unhandled failure: phase two unwinds every stack (R-GS1) |
//! | deadlock | waiters get [`Cancelled`] with [`CancelCause::Deadlock`]; [`run`] returns `Err` ([`ErrorKind::Deadlock`]) | the scheduler logs each waiter (id, spawn and wait locations); the runtime is in graceful shutdown from then on (R-DL1) |
//! | `Async\signal($n)` | [`signal::signal`], [`signal::any`], [`signal::wait`] | an [`Awaitable`]; `io::Error` (unsupported) if the reactor lacks `AA_CAP_SIGNAL` |
//! | `ScopeProvider`, `SpawnStrategy` | [`ScopeProvider`], [`SpawnStrategy`] (`spawn_options`, `before_coroutine_enqueue`, `after_coroutine_enqueue`) | the ABI fixes the priority at creation, so `asHiPriority()` is the [`SpawnOptions`] the strategy returns before the coroutine is created |
//! | `spawn with hiPriority()` | [`spawn_in`]`(&`[`hi_priority`]`(), f)` | `AA_PRIORITY_HIGH`: queued at the head (R-HP1); a hint |
//! | Supervisor | [`Supervisor`] | the RFC's sketch plus a child-scope handler on its scope, which the RFC's own error flow needs |
//! | `new TaskGroup(?scope, captureResults, bounded)` | [`TaskGroup::new`], [`TaskGroup::with_scope`], [`TaskGroup::builder`] (`scope`, `capture_results`, `bounded`); `TaskGroup<T>`: `T` is the tasks' value type | without a scope it makes its own; dropping the group disposes it (tasks cancelled without warnings) and its scope if it held the only owning handle or is `bounded` (R-TG1, R-TG5) |
//! | `spawn with $taskGroup f()` | [`TaskGroup::spawn`], [`TaskGroup::spawn_try`] `-> Coroutine`; also [`spawn_in`]`(&group, f)` (a [`SpawnStrategy`]: the value stays the `JoinHandle`'s) | the task runs in the group's scope and is registered in the group (O(1)); what it spawns goes to the scope only (R-TG1) |
//! | `await $taskGroup` | [`TaskGroup::join`] `-> Result<BTreeMap<usize, T>, `[`TaskGroupError`]`>` | waits for the explicit tasks only; values by ordinal (cloned; none without `capture_results`); re-awaitable (R-TG2, R-CO7); all task errors by ordinal in one shape (P-12); an implicit failure ends it as "task group was cancelled" with that failure as cause (R-TG6, D-14); that cancellation does not consume the failure, which goes on to the scope's parent (D-27) |
//! | `all(ignoreErrors, nullOnFail)`, `getErrors()`, `disposeResults()` | [`TaskGroup::all`] `->` [`GroupAll`], [`TaskGroup::errors`], [`TaskGroup::dispose_results`] | ordinals restart at 0; running tasks are renumbered (R-TG3) |
//! | `race(ignoreErrors)`, `firstResult(ignoreErrors)` | [`TaskGroup::race`] `->` [`Race`], [`TaskGroup::first_result`] `->` [`FirstResult`] | race moves the next finished value out; first_result clones the first until `dispose_results`; neither cancels the rest (R-TG4, D-7) |
//! | the reference implementation's `concurrency` (REF-19) | [`TaskGroupBuilder::concurrency`]`(n)`, [`TaskGroup::queue`] | at most `n` started tasks; the rest wait as closures with no coroutine, started in order as slots free up; a cancel drops them unstarted |
//! | `$taskGroup->cancel($e)`, `dispose()` | [`TaskGroup::cancel`]`(reason)`, [`TaskGroup::dispose`] | no zombie warnings; a scope's `dispose` names no group task either (R-TG5) |
//! | `all`, `any`, `anyOf`, `captureErrors`, `ignoreErrors` | [`combinators::all`], [`combinators::any`], [`combinators::any_of`], [`combinators::capture_errors`], [`combinators::ignore_errors`]: lazy objects with `join` | over [`combinators::Trigger`]s (sealed: handles, coroutines, timeouts, groups and their triggers); `all` in input order; `any` re-awaitable; never cancel an input (R-CB1, D-7); `await all(...) until $t` is `all(...).until(t).join()` ([`combinators::CombineErrorKind::AwaitCancelled`]) |
//! | work started for one answer, cut short (tokio's `select!`, `time::timeout`; Kotlin's `select`, `withTimeout`) | [`combinators::select`]`(branches) -> Result<(usize, T), _>`, [`time::with_timeout`]`(ms, f) -> Result<T, `[`time::TimeoutError`]`>` | the closures run in coroutines of a scope made for the call; the first to finish wins (or the deadline: [`TimeoutError::is_elapsed`](time::TimeoutError::is_elapsed)), the rest is cancelled and awaited, cleanup included, before the call returns; a cancelled caller cancels them too; not `timeout`, which is the RFC's trigger and cancels nothing (D-44, D-7) |
//! | iterable triggers | [`combinators::concurrent`]`(iter)` | the iterator runs in its own coroutine; `all` waits for it to end; its own error passes through `capture_errors`/`ignore_errors` (D-24) |
//! | maximum activity interval | [`Builder::max_activity_interval`] | a watchdog thread warns (coroutine id, spawn location); it never interrupts (R-T1, P-19) |
//! | "stuck tasks in the cancellation state" | [`Builder::cancellation_timeout`] (10 s by default) | a cancelled coroutine still running after it is reported once: id, spawn location, where and for what it waits; never interrupted (D-1(c), R-C3) |
//! | warnings and errors (zombies, disposals, unhandled failures, deadlocks) | [`events::Event`] to a handler ([`Builder::on_event`]), `tracing`, and stderr if neither listens; [`Error::failure`] after an unhandled failure | plain data: ids, locations, the shared [`Failure`] |
//! | `new CancellationException("...")` returned by a body | [`Cancelled::new`]`(reason)` from a [`spawn_try`] body | ends the coroutine cancelled, not failed (R-C1) |
//! | `delay(ms)` / `timeout(ms)` | [`delay`], [`sleep`] / [`timeout`] `->` [`Timeout`](time::Timeout) | a zero delay is a yield; a `Timeout` is armed at creation, dropping it disarms it |
//! | a persistent timer await context (the design) | [`time::interval`] `->` [`time::Interval`] (`tick`) | one reactor timer for every tick, kept between waits (D-38) |
//! | a panic of the main coroutine | the other coroutines are unwound (phase two at once), then the panic resumes in the caller of [`run`] | like tokio's `block_on`: a Rust program's main panics loudly |
//! | Scheduler / Reactor extensions | plugins behind a C ABI (`async-abi`), chosen by [`Builder`], `ASYNC_SCHEDULER` / `ASYNC_REACTOR`, or a config file | any language can implement them |
//! | files, directories, filesystem events (the design's file and fs-watch event descriptors) | [`fs::File`], [`fs::OpenOptions`], [`fs::read`], [`fs::write`], [`fs::read_dir`], ... (std's names); [`fs::watch`] `->` [`fs::Watcher`] | reads, writes, opens, syncs, truncation, removals, renames and mkdir are ring operations on io_uring (ABI 1.1 file requests), the blocking pool elsewhere; the file keeps its cursor, so a cancelled read or write leaves it; a watcher is read in a loop, bounded with `next_until`, and is an [`Awaitable`] (D-31) |
//! | non-blocking sockets | [`net::TcpListener`], [`net::TcpStream`], [`net::UdpSocket`], [`net::UnixStream`], [`net::UnixListener`], [`net::UnixDatagram`] with `std::io::Read`/`Write` and std's methods | existing synchronous code works unchanged (D-33) |
//! | the poll event descriptor (the design) | [`io::Async`] over any non-blocking descriptor: `readable`, `writable`, `read_with`, `write_with` | sockets and pipes made by other crates, driven without blocking (D-33) |
//! | the DNS event descriptor (the design) | [`net::lookup_host`], and host names in every socket constructor ([`net::ToSocketAddrs`]) | resolved by the reactor or the pool while only the caller suspends (D-34) |
//! | `DeferredResume`, `Future`, `Channel` (the design and the RFC's future scope) | [`sync::Deferred`] + [`sync::Resolver`], [`sync::Future`] + [`sync::Promise`], [`sync::channel`] / [`sync::unbounded`] | `Deferred`/`Future` are `until` triggers and combinator inputs, a `Receiver` a combinator input; a future's outcome is shared, not cloned; [`sync::ThreadResolver`] and [`sync::ThreadSender`] reach them from other threads through the reactor's trigger (D-35) |
//! | locks and signals between coroutines | [`sync::Mutex`], [`sync::RwLock`], [`sync::Semaphore`], [`sync::Notify`], [`sync::Barrier`] | FIFO hand-off (no barging); a wait granted before its cancellation completes (D-29); a wait nothing can complete is a deadlock naming the primitive |
//! | user await contexts with their own linking logic (the design's `AwaitContext`, `AwaitSocket`) | [`awaitable::Latch`] (`open`, `fail`, `wait`), [`awaitable::wait`] | a one-shot awaitable the user's code completes from any event; an `until` trigger and a combinator input like the built-in ones (D-37) |
//! | `Fiber`, `FiberError`, `Fiber::suspend` (the Fibers RFC) | [`fiber::Fiber`]`<V, R>`, [`fiber::FiberError`] | typed values both ways; a suspension returns to the resumer, fibers nest, a blocking call inside suspends the coroutine (D-36) |
//! | the thread and exec event descriptors (the design) | [`spawn_blocking`] `->` [`JoinHandle`], [`Builder::blocking_threads`] | a bounded pool beside the loop, reporting through the reactor's trigger; a panic is the handle's failure; cancelling detaches the work (D-30) |
//! | thread-per-core (the performance issue) | [`per_core::run_per_core`], [`Builder::threads`], [`Builder::pin`], [`per_core::spawn_on`] `->` [`per_core::LoopJoinHandle`] (`Send`), [`per_core::LoopSender`], [`per_core::Loops::shutdown`], [`net::TcpListener::bind_reuseport`] | one whole runtime per thread from one configuration; only `Send` values cross; one graceful shutdown for all; a failing loop shuts the others down and is named in the error (D-39) |
//! | the process and pipe event descriptors (the design) | [`process::Command`] (`spawn`, `output`, `status`), [`process::Child`] (`wait`, `try_wait`, `kill`, `wait_with_output`, piped handles with `Read`/`Write`), [`io::pipe`], [`io::stdin`], [`io::stdout`], [`io::stderr`] | std's names; exits watched by the reactor (pidfd), a cancelled wait leaves the child watched and reaped, a dropped `Child` is reaped in the background (D-32); standard streams on the blocking pool, since their descriptors are shared with other processes |
//!
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
//!
//! To use every core, [`per_core::run_per_core`] (or
//! [`Builder::threads`]`(n).`[`run_per_core`](Builder::run_per_core)`(f)`)
//! runs `n` such runtimes, one per thread, each running `f(loop_id)` as its
//! main coroutine (thread-per-core, D-39). They share nothing but what is
//! `Send`: [`per_core::spawn_on`] runs a closure on a given loop and returns
//! a `Send` handle any loop or thread can join, [`per_core::LoopSender`]
//! feeds one loop's channel from another loop's coroutine, and
//! [`per_core::Loops::shutdown`] (or SIGINT/SIGTERM with
//! [`Builder::shutdown_on_signals`]) ends every loop gracefully. A listener
//! per loop bound with [`net::TcpListener::bind_reuseport`] lets the kernel
//! spread connections over the loops.
//!
//! ```
//! use std::io::{Read, Write};
//! use async_std_api::net::{TcpListener, TcpStream};
//! use async_std_api::per_core::{run_per_core, spawn_on, LoopId};
//! use async_std_api::spawn;
//!
//! let echoed = run_per_core(2, |id| {
//!     if id.index() == 1 {
//!         return None; // loop 1 serves what loop 0 sends it
//!     }
//!     // Loop 1 binds and serves one connection; loop 0 is the client.
//!     let server = spawn_on(LoopId::new(1), || {
//!         let listener = TcpListener::bind_reuseport("127.0.0.1:0").unwrap();
//!         let addr = listener.local_addr().unwrap();
//!         spawn(move || {
//!             let (mut conn, _) = listener.accept().unwrap();
//!             let mut buf = [0u8; 4];
//!             conn.read_exact(&mut buf).unwrap();
//!             conn.write_all(&buf).unwrap();
//!         });
//!         addr
//!     });
//!     let addr = server.unwrap().join().unwrap();
//!     let mut s = TcpStream::connect(addr).unwrap();
//!     s.write_all(b"ping").unwrap();
//!     let mut buf = [0u8; 4];
//!     s.read_exact(&mut buf).unwrap();
//!     Some(buf)
//! })
//! .unwrap();
//! assert_eq!(echoed, [Some(*b"ping"), None]);
//! ```
#![deny(unsafe_code)]

// The layers, bottom up (ARCHITECTURE.md, "The host's layers"): each
// imports only from those below it; this file only re-exports.
mod core;
mod structured;

mod blocking;

pub mod fiber;
pub mod fs;
#[cfg(all(feature = "hooks", target_os = "linux", target_env = "gnu"))]
pub mod hooks;
// The hooks define `fcntl`, `ioctl` and `open` with the variadic argument
// as a fixed parameter, which is where these two calling conventions pass
// it (`hooks/net.rs`, `hooks/file.rs`).
#[cfg(all(
    feature = "hooks",
    not(any(target_arch = "x86_64", target_arch = "aarch64"))
))]
compile_error!("the `hooks` feature is built for x86-64 and AArch64 Linux (glibc) only");
pub mod io;
pub mod net;
pub mod per_core;
pub mod process;
pub mod signal;
pub mod sync;
pub mod time;

pub use crate::blocking::spawn_blocking;
pub use crate::core::awaitable::{self, Awaitable};
pub use crate::core::cancel::{check_cancelled, protect};
pub use crate::core::coroutine::Coroutine;
pub use crate::core::error::{CancelCause, Cancelled, JoinError};
pub use crate::core::events;
pub use crate::core::failure::{Failure, FailureKind, FailureOrigin};
pub use crate::core::id::{CoroutineId, ScopeId};
pub use crate::core::join::JoinHandle;
pub use crate::core::runtime::{Builder, Error, ErrorKind, DEFAULT_STACK_SIZE};
pub use crate::core::task::{coroutines, current, live_events, on_finally, suspend};
pub use crate::structured::combinators;
pub use crate::structured::context::{
    coroutine_context, current_context, root_context, Context, ContextError, ContextErrorKind,
    ContextKey, ContextKeyFor, Key,
};
pub use crate::structured::run::run;
pub use crate::structured::scope::{
    current_scope, global_scope, Scope, ScopeError, ScopeErrorKind, ScopeRef,
};
pub use crate::structured::shutdown::{graceful_shutdown, graceful_shutdown_with};
pub use crate::structured::spawn::{spawn, spawn_in, spawn_try, spawn_try_in};
pub use crate::structured::strategy::{
    hi_priority, hi_priority_in, HiPriority, ScopeProvider, SpawnOptions, SpawnStrategy, Supervisor,
};
pub use crate::structured::task_group::{
    FirstResult, GroupAll, Race, TaskGroup, TaskGroupBuilder, TaskGroupError, TaskGroupErrorKind,
};
pub use crate::time::{delay, sleep, timeout};
