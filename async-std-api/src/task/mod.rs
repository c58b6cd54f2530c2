//! Coroutines: [`spawn`] and its flavours, [`JoinHandle`], [`Coroutine`],
//! [`current`], [`suspend`], [`on_finally`], [`coroutines`], [`Failure`],
//! and the entry logic every coroutine runs.
//!
//! Lifecycle (R-CO2), as the queries report it:
//!
//! ```text
//!  spawn        picked          suspend          finish
//!  ----> queued -------> running --------> suspended ...-> finished
//!          |               (cancel: is_cancellation_requested, sticky)
//!          +-- cancel before start: never runs -----------> finished, cancelled
//! ```
//!
//! Invariants (see also `state` I1-I6, `wait` W1-W4, `spawn` SP1-SP2,
//! `failure` FA1-FA3, `error` E1-E3):
//! - **T1** `spawn` never runs the body: the spawner keeps running until it
//!   suspends (REF-1).
//! - **T2** A coroutine's entry never unwinds (C3): every panic of the body
//!   is caught and becomes the coroutine's failure; a [`ForcedUnwind`]
//!   (shutdown) becomes a cancellation with cause `Shutdown`.
//! - **T3** A coroutine whose entry gets a negative start status never runs
//!   its body; the body (and its captures) is dropped before its waiters
//!   are woken (D-23).

mod coroutine;
pub(crate) mod error;
pub(crate) mod failure;
mod join;
pub(crate) mod spawn;
pub(crate) mod state;
pub(crate) mod wait;

use std::fmt;
use std::panic::Location;

use async_abi::AA_OK;

pub use coroutine::Coroutine;
pub use error::{CancelCause, Cancelled, JoinError};
pub use failure::{Failure, FailureKind, FailureOrigin};
pub use join::JoinHandle;
pub use spawn::{spawn, spawn_in, spawn_try, spawn_try_in};
use wait::with_me;

use crate::runtime;

/// A coroutine's id: unique for the runtime's lifetime, never 0.
///
/// Displays as the bare number (`17`), as in the deadlock report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoroutineId(pub(crate) u64);

impl CoroutineId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for CoroutineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The running coroutine.
///
/// The RFC's `currentCoroutine()`. The main function given to
/// [`run`](crate::run) is a coroutine too.
///
/// # Panics
///
/// Outside a coroutine, with a message naming the fix.
///
/// # Examples
///
/// ```
/// use async_std_api::{current, run, spawn};
///
/// run(|| {
///     let h = spawn(|| current().id());
///     let id = h.id();
///     assert_eq!(h.join().unwrap(), id);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn current() -> Coroutine {
    with_me("current", |_, me| Coroutine { state: me.clone() })
}

/// Yields: lets every other runnable coroutine run, then continues.
///
/// The RFC's `suspend` (and `std::thread::yield_now`). With no other
/// runnable coroutine it returns at once (R-CO3).
///
/// # Errors
///
/// [`Cancelled`] if the calling coroutine was cancelled before or while it
/// yielded.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point: a pending cancellation is returned as `Err`, once.
///
/// # Examples
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use async_std_api::{run, spawn, suspend};
///
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let l = log.clone();
/// run(move || {
///     let l2 = l.clone();
///     spawn(move || l2.borrow_mut().push("child"));
///     l.borrow_mut().push("main before");
///     suspend().unwrap();
///     l.borrow_mut().push("main after");
/// })
/// .unwrap();
/// assert_eq!(*log.borrow(), ["main before", "child", "main after"]);
/// ```
#[track_caller]
#[inline(always)]
pub fn suspend() -> Result<(), Cancelled> {
    let at = Location::caller();
    // The hot path returns a status only; the rare outcomes (a pending
    // cancellation, an error status) are built out of line.
    let status = with_me(
        "suspend",
        #[inline(always)]
        |rt, me| {
            if me.has_pending_cancel() {
                return wait::PENDING_CANCEL;
            }
            rt.sched.yield_now(me, b"suspend", at)
        },
    );
    if status >= AA_OK {
        return Ok(());
    }
    wait::not_resumed_ok(status)
}

/// Registers `f` to run once when the *calling* coroutine finishes: the
/// RFC's `Async\onFinally()`, the analogue of Go's `defer`. See
/// [`Coroutine::on_finally`].
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Examples
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use async_std_api::{on_finally, run, spawn};
///
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let l = log.clone();
/// run(move || {
///     let l1 = l.clone();
///     let h = spawn(move || {
///         let l2 = l1.clone();
///         on_finally(move || l2.borrow_mut().push("file closed"));
///         panic!("Task 1");
///     });
///     assert!(h.join().unwrap_err().is_panic());
/// })
/// .unwrap();
/// assert_eq!(*log.borrow(), ["file closed"]);
/// ```
#[track_caller]
pub fn on_finally(f: impl FnOnce() + 'static) {
    with_me("on_finally", |_, me| {
        me.push_finally(Box::new(f));
    });
}

/// Every live coroutine of the runtime, in creation order: the RFC's
/// `Async\getCoroutines()` (from the scheduler's `iterate`).
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{coroutines, current, run, spawn};
///
/// run(|| {
///     let h = spawn(|| ());
///     let all = coroutines();
///     assert!(all.contains(&current()) && all.contains(&h.coroutine()));
///     h.join().unwrap();
///     assert_eq!(coroutines(), [current()]);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn coroutines() -> Vec<Coroutine> {
    runtime::with_runtime(|rt| {
        rt.sched
            .live_coroutines()
            .into_iter()
            .map(|state| Coroutine { state })
            .collect()
    })
    .unwrap_or_else(|| {
        panic!("coroutines called outside a coroutine runtime: run the program inside async_std_api::run")
    })
}
