//! Blocking work off the loop thread: [`spawn_blocking`].
//!
//! A coroutine that calls a blocking function (a C library, a synchronous
//! database driver, a long computation) stops every other coroutine of its
//! runtime until the call returns. [`spawn_blocking`] runs the function on
//! the runtime's blocking pool instead, and the coroutine that joins it
//! suspends meanwhile, as it would for I/O. The result comes back through
//! the reactor's cross-thread trigger: the loop sleeps in the reactor until
//! the work is done, with no polling.
//!
//! The pool has at most [`Builder::blocking_threads`](crate::Builder::blocking_threads)
//! threads (four per core, at least 8, unless configured); work beyond that
//! waits in order for a free thread. Threads start on demand and exit after
//! ten idle seconds.
//!
//! # Backend differences
//!
//! The pool needs the reactor's trigger (`AA_CAP_TRIGGER`); both built-in
//! reactors have it. On a reactor without it, the handle of a
//! [`spawn_blocking`] fails with an [`io::Error`] of kind
//! [`Unsupported`](io::ErrorKind::Unsupported) naming the reactor and the
//! capability.

use std::io;
use std::panic::resume_unwind;

use crate::core::join::JoinHandle;
use crate::core::offload::offload;
use crate::structured::spawn::spawn_try;

/// Runs `f` on the blocking pool and returns a handle to its result: the
/// analogue of [`std::thread::spawn`] for work that blocks, and of tokio's
/// `spawn_blocking`.
///
/// The work is owned by a coroutine of the current scope (R-S1), so the
/// scope waits for it like for any coroutine, and the handle is an ordinary
/// [`JoinHandle`]: [`join`](JoinHandle::join) it, bound the wait with
/// [`join_until`](JoinHandle::join_until), pass it to a combinator.
///
/// - A panic in `f` is the handle's failure ([`JoinError::is_panic`](crate::JoinError::is_panic)),
///   with the panic's message; the panic is printed by the pool thread.
/// - Cancelling the coroutine (through the handle or its scope) ends it
///   cancelled at once, but `f` cannot be interrupted: it is *detached*,
///   runs to its end on its thread, and its result is dropped there or on
///   the loop. Code that must stop early checks a flag it shares with `f`.
/// - If the work cannot be queued (the reactor has no cross-thread trigger,
///   no thread can be started, the runtime is shutting down), the handle
///   fails with an [`io::Error`] saying which.
///
/// # Panics
///
/// As [`spawn`](crate::spawn): outside a runtime, or if the current scope
/// is closed.
///
/// # Cancellation
///
/// `spawn_blocking` itself does not suspend; the coroutine it starts is
/// cancellable as described above.
///
/// # Examples
///
/// ```
/// use async_std_api::{delay, run, spawn, spawn_blocking};
/// use std::time::Duration;
///
/// run(|| {
///     let slow = spawn_blocking(|| {
///         std::thread::sleep(Duration::from_millis(50)); // blocks a pool thread
///         6 * 7
///     });
///     // Meanwhile the loop keeps running coroutines.
///     let ticks = spawn(|| {
///         delay(1).unwrap();
///         "ticked"
///     });
///     assert_eq!(ticks.join().unwrap(), "ticked");
///     assert_eq!(slow.join().unwrap(), 42);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_try(move || -> Result<T, io::Error> {
        match offload("blocking work", f) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(panic)) => resume_unwind(panic),
            Err(e) => Err(e.into()),
        }
    })
}
