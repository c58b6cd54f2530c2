//! What a coroutine asks about itself: [`current`], [`suspend`],
//! [`on_finally`], and [`coroutines`] (every live one).

use std::panic::Location;

use async_abi::AA_OK;

use super::coroutine::Coroutine;
use super::error::Cancelled;
use super::runtime;
use super::wait::{self, outside_runtime, with_me};

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
    let live = runtime::with_runtime(|rt| {
        rt.sched
            .live_coroutines()
            .into_iter()
            .map(|state| Coroutine { state })
            .collect()
    });
    // Not in a closure: the panic names the caller's line.
    let Some(live) = live else {
        outside_runtime("coroutines")
    };
    live
}

/// How many of the reactor's events keep the loop alive now (timers,
/// watches, requests in flight; not the runtime's own hidden ones): the
/// reactor's `alive` count, for diagnostics and tests (a leak of events
/// shows here).
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{live_events, run, time};
///
/// run(|| {
///     let before = live_events();
///     let t = time::timeout(60_000);
///     assert_eq!(live_events(), before + 1);
///     drop(t);
///     assert_eq!(live_events(), before);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn live_events() -> usize {
    let Some(alive) = runtime::with_runtime(|rt| rt.reactor.alive() as usize) else {
        outside_runtime("live_events")
    };
    alive
}
