//! Timers: [`delay`], [`sleep`], [`timeout`] and [`interval`]; and
//! deadlines that cancel: [`with_timeout`].
//!
//! A timer is a reactor event armed on the loop's monotonic clock; the
//! reactor refreshes its clock before arming, so a delay that follows a long
//! burst of CPU work still waits its full duration (REF-24).

use std::cell::Cell;
use std::fmt;
use std::panic::Location;
use std::rc::Rc;
use std::time::Duration;

use std::convert::Infallible;

use crate::core::awaitable::{sealed, sealed::Sealed, Awaitable};
use crate::core::error::{Cancelled, JoinError};
use crate::core::failure::Failure;
use crate::core::id::CoroutineId;
use crate::core::runtime::{self, TimerEvent, WakeRec};
use crate::core::state::CoroState;
use crate::core::wait::{checkpoint, outside_runtime, suspend_once, with_me, yield_once};
use crate::core::waiters::Completion;
use crate::structured::combinators::sealed::{Token, Watch};
use crate::structured::combinators::Trigger;
use crate::structured::select::{Decided, Owned};

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Suspends the calling coroutine for `ms` milliseconds: the RFC's
/// `Async\delay`.
///
/// The coroutine analogue of [`std::thread::sleep`]: other coroutines run
/// meanwhile. A zero delay is a yield ([`suspend`](crate::suspend)).
///
/// # Errors
///
/// [`Cancelled`] if the calling coroutine is cancelled before or while it
/// waits; the timer is disposed first.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point: the delay ends early with `Err(Cancelled)`, once;
/// a later delay waits normally (D-1).
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use async_std_api::{delay, run};
///
/// run(|| {
///     let t = Instant::now();
///     delay(20).unwrap();
///     assert!(t.elapsed().as_millis() >= 20);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn delay(ms: u64) -> Result<(), Cancelled> {
    sleep_at(Duration::from_millis(ms), Location::caller())
}

/// Suspends the calling coroutine for `duration`. See [`delay`].
///
/// # Errors
///
/// As [`delay`].
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// As [`delay`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use async_std_api::{run, sleep};
///
/// run(|| sleep(Duration::from_millis(5)).unwrap()).unwrap();
/// ```
#[track_caller]
pub fn sleep(duration: Duration) -> Result<(), Cancelled> {
    sleep_at(duration, Location::caller())
}

// Track the caller: outside a coroutine the panic points at the user's call.
#[track_caller]
fn sleep_at(duration: Duration, at: &'static Location<'static>) -> Result<(), Cancelled> {
    if duration.is_zero() {
        return yield_at(at);
    }
    with_me("delay", |rt, me| sleep_as(rt, me, duration, at))
}

/// `"delay <ms> ms"`, written on the stack without `fmt`: a million
/// sleepers should neither each hold a string nor each pay the formatter
/// (it was a fifth of a sleep's instructions).
fn delay_text(buf: &mut [u8; 48], ms: u128) -> &[u8] {
    const HEAD: &[u8] = b"delay ";
    const TAIL: &[u8] = b" ms";
    let mut digits = [0u8; crate::core::decimal::DIGITS];
    let number = crate::core::decimal::digits(ms, &mut digits);
    let mut at = 0;
    for part in [HEAD, number, TAIL] {
        let part = &part[..part.len().min(buf.len() - at)];
        buf[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    &buf[..at]
}

fn sleep_as(
    rt: &runtime::Runtime,
    me: &Rc<CoroState>,
    duration: Duration,
    at: &'static Location<'static>,
) -> Result<(), Cancelled> {
    checkpoint(me)?;
    // Declared before the timer, so the timer is disposed first.
    let rec = WakeRec::new(me);
    let _timer = rt
        .reactor
        .wake_timer(nanos(duration), &rec)
        .unwrap_or_else(|s| panic!("cannot arm a timer: {}", runtime::status_text(s)));
    let mut buf = [0u8; 48];
    let what = delay_text(&mut buf, duration.as_millis());
    while !rec.fired() {
        suspend_once(rt, me, what, at)?; // `_timer` is disposed on return
    }
    Ok(())
}

#[track_caller]
fn yield_at(at: &'static Location<'static>) -> Result<(), Cancelled> {
    with_me("delay", |rt, me| {
        checkpoint(me)?;
        yield_once(rt, me, b"delay 0 ms", at)
    })
}

/// A timer that completes `ms` milliseconds after it was created: the RFC's
/// `Async\timeout`, an [`Awaitable`] for
/// [`join_until`](crate::JoinHandle::join_until).
///
/// It is armed when created. Dropping it disposes the timer (no callback
/// runs afterwards). It does not cancel anything by itself: a wait that uses
/// it as its trigger ends with
/// [`JoinError::is_await_cancelled`](crate::JoinError::is_await_cancelled).
///
/// # Examples
///
/// ```
/// use async_std_api::{delay, run, timeout};
///
/// run(|| {
///     let t = timeout(10);
///     assert!(!t.is_expired());
///     delay(30).unwrap();
///     assert!(t.is_expired());
/// })
/// .unwrap();
/// ```
pub struct Timeout {
    ms: u64,
    done: Rc<Completion>,
    _timer: Option<TimerEvent>,
}

/// Creates a [`Timeout`] that completes after `ms` milliseconds (`0`:
/// already expired).
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, timeout};
///
/// run(|| assert!(timeout(0).is_expired())).unwrap();
/// ```
#[track_caller]
pub fn timeout(ms: u64) -> Timeout {
    if runtime::with_runtime(|_| ()).is_none() {
        outside_runtime("timeout");
    }
    let done = Rc::new(Completion::new());
    if ms == 0 {
        done.complete();
        return Timeout {
            ms,
            done,
            _timer: None,
        };
    }
    let on_fire = {
        let done = done.clone();
        Box::new(move |_status| done.complete())
    };
    let timer =
        runtime::with_runtime(|rt| rt.reactor.timer(nanos(Duration::from_millis(ms)), on_fire))
            .expect("checked above: inside a runtime")
            .unwrap_or_else(|s| panic!("cannot arm a timer: {}", runtime::status_text(s)));
    Timeout {
        ms,
        done,
        _timer: Some(timer),
    }
}

impl Timeout {
    /// True once the time is up.
    pub fn is_expired(&self) -> bool {
        self.done.is_done()
    }
}

impl fmt::Debug for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("ms", &self.ms)
            .field("expired", &self.is_expired())
            .finish()
    }
}

#[allow(private_interfaces)] // sealed: see `awaitable`
impl sealed::Sealed for Timeout {
    fn completion(&self) -> &Completion {
        &self.done
    }
    fn describe(&self) -> String {
        format!("timeout {} ms", self.ms)
    }
}

impl Awaitable for Timeout {}

// A timeout is a combinator input (unit once it expires). The trait
// belongs to the structured layer, which imports nothing from the
// surfaces, so the impl lives here.
impl Trigger for Timeout {
    type Output = ();
    type Error = Infallible;
    fn poll_trigger(&self, _: Token) -> Option<Result<(), Infallible>> {
        self.is_expired().then_some(Ok(()))
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Once(Sealed::completion(self))
    }
}

impl Trigger for &Timeout {
    type Output = ();
    type Error = Infallible;
    fn poll_trigger(&self, t: Token) -> Option<Result<(), Infallible>> {
        (**self).poll_trigger(t)
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, t: Token) -> Watch<'_> {
        (**self).watch_trigger(t)
    }
}

/// Runs `f` in a coroutine of its own and cancels it if it has not
/// finished after `ms` milliseconds: a deadline that cancels (D-44).
///
/// The analogue of tokio's `time::timeout` and Kotlin's `withTimeout`:
/// [`Ok`] with `f`'s value if it finished in time; otherwise the coroutine
/// is cancelled (it gets a [`Cancelled`] at its suspension point, with the
/// reason `"deadline of <ms> ms passed"`), `with_timeout` waits until it
/// has finished, cleanup and `on_finally` handlers included, and returns
/// [`TimeoutError::is_elapsed`]. It is named `with_timeout` (Kotlin's
/// name) because [`timeout`] is already the RFC's trigger, which cancels
/// nothing: `handle.join_until(&timeout(ms))` only stops *waiting* and the
/// coroutine runs on (R-AU3), where this stops the *work*.
///
/// `f` runs in a child scope of the caller's scope, made for the call: it
/// sees the caller's context, and what it spawns is the call's too. When
/// `with_timeout` returns, for whatever reason, that scope has been
/// cancelled and everything in it has finished: nothing started here
/// outlives the call.
///
/// # Errors
///
/// A [`TimeoutError`]; exactly one of:
/// - [`is_elapsed`](TimeoutError::is_elapsed): the deadline passed first.
///   Not a cancellation of the caller (like an await-cancelled error,
///   D-19): returned by a [`spawn_try`](crate::spawn_try) body, it is an
///   ordinary failure, never silently suppressed (P-03).
/// - [`is_failed`](TimeoutError::is_failed): `f` panicked first; the
///   failure is consumed here, as a [`join`](crate::JoinHandle::join)
///   consumes it (D-3), and is in
///   [`join_error`](TimeoutError::join_error).
/// - [`is_cancelled`](TimeoutError::is_cancelled): someone else cancelled
///   `f`'s coroutine first.
/// - [`is_interrupted`](TimeoutError::is_interrupted): the caller was
///   cancelled first; `f` was cancelled and has finished.
///
/// A failure of `f` *after* the deadline passed (in its cleanup) is not
/// this call's result: it goes through the error flow, from the call's
/// scope to the caller's, like any failure nobody awaited.
///
/// # Panics
///
/// Outside a coroutine, if the caller's scope is closed (cancelled or
/// disposed: it starts no new work, R-S4), or if the reactor cannot arm a
/// timer.
///
/// # Cancellation
///
/// A cancellation point. If the caller is cancelled while it waits, `f` is
/// cancelled and awaited before `with_timeout` returns
/// [`is_interrupted`](TimeoutError::is_interrupted); if `f` had already
/// returned its value when the caller saw its cancellation, the value is
/// returned instead and the cancellation stays pending for the next
/// suspension point (D-29, P-08). An outcome already there also wins over
/// a deadline that passed at the same moment (D-20).
///
/// # Examples
///
/// ```
/// use async_std_api::time::with_timeout;
/// use async_std_api::{coroutines, delay, run};
///
/// run(|| {
///     assert_eq!(with_timeout(1_000, || 6 * 7).unwrap(), 42);
///
///     let err = with_timeout(10, || {
///         if let Err(c) = delay(60_000) {
///             assert_eq!(c.reason(), Some("deadline of 10 ms passed"));
///         }
///     })
///     .unwrap_err();
///     assert!(err.is_elapsed());
///     assert_eq!(err.to_string(), format!("deadline of 10 ms passed: coroutine {} was cancelled", err.id()));
///     assert_eq!(coroutines().len(), 1); // nothing left behind
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn with_timeout<T, F>(ms: u64, f: F) -> Result<T, TimeoutError>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let mut owned = Owned::start("with_timeout", "its closure", vec![Box::new(f)]);
    let id = owned.branch(0).id();
    let deadline = timeout(ms);
    let decided = owned.decide(Some(Box::new(deadline)));
    let finished = owned.finish(|| match &decided {
        Decided::Until => format!("deadline of {ms} ms passed"),
        Decided::Won(..) => String::from("with_timeout: its closure returned"),
        Decided::Interrupted(_) => String::from("with_timeout: the caller was cancelled"),
    });
    let join = |e| Err(TimeoutError(TimeoutRepr::Join(e)));
    if let Err(c) = finished {
        return join(JoinError::interrupted(id, c)); // SL3: a deadlock
    }
    match decided {
        Decided::Won(_, Ok(v)) => Ok(v),
        Decided::Won(_, Err(e)) => join(e),
        Decided::Until => Err(TimeoutError(TimeoutRepr::Elapsed { id, ms })),
        Decided::Interrupted(c) => join(JoinError::interrupted(id, c)),
    }
}

#[derive(Clone)]
enum TimeoutRepr {
    /// The deadline passed: the coroutine was cancelled and has finished.
    Elapsed { id: CoroutineId, ms: u64 },
    /// What joining the coroutine gave instead.
    Join(JoinError),
}

/// Why [`with_timeout`] gave no value: the deadline passed (tokio's
/// `Elapsed`), or what joining the closure's coroutine gave instead.
///
/// Opaque, with predicates; exactly one of
/// [`is_elapsed`](Self::is_elapsed), [`is_failed`](Self::is_failed),
/// [`is_cancelled`](Self::is_cancelled) and
/// [`is_interrupted`](Self::is_interrupted) is true. Its
/// [`source`](std::error::Error::source) is the [`JoinError`] unless it
/// elapsed, so `?` inside a [`spawn_try`](crate::spawn_try) body ends
/// that coroutine cancelled when the caller was interrupted (P-01) and
/// failed when the deadline passed (P-03).
///
/// # Examples
///
/// ```
/// use async_std_api::time::with_timeout;
/// use async_std_api::run;
///
/// run(|| {
///     let err = with_timeout(1_000, || -> u8 { panic!("bad request") }).unwrap_err();
///     assert!(err.is_failed() && !err.is_elapsed());
///     assert_eq!(err.failure().and_then(|f| f.panic_message()), Some("bad request"));
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct TimeoutError(TimeoutRepr);

impl TimeoutError {
    /// True if the deadline passed first: the coroutine was cancelled and
    /// has finished (with everything it spawned).
    pub fn is_elapsed(&self) -> bool {
        matches!(self.0, TimeoutRepr::Elapsed { .. })
    }

    /// True if the closure failed (it panicked) before the deadline:
    /// [`failure`](Self::failure) has the failure.
    pub fn is_failed(&self) -> bool {
        self.join_error().is_some_and(JoinError::is_failed)
    }

    /// True if someone else cancelled the closure's coroutine first.
    pub fn is_cancelled(&self) -> bool {
        self.join_error().is_some_and(JoinError::is_cancelled)
    }

    /// True if the caller was cancelled while it waited; the closure's
    /// coroutine was cancelled and has finished.
    pub fn is_interrupted(&self) -> bool {
        self.join_error().is_some_and(JoinError::is_interrupted)
    }

    /// The closure's failure, if [`is_failed`](Self::is_failed): the same
    /// object every observer gets (R-CO5).
    pub fn failure(&self) -> Option<&Failure> {
        self.join_error().and_then(JoinError::failure)
    }

    /// What joining the closure's coroutine gave, unless the deadline
    /// passed.
    pub fn join_error(&self) -> Option<&JoinError> {
        match &self.0 {
            TimeoutRepr::Join(e) => Some(e),
            TimeoutRepr::Elapsed { .. } => None,
        }
    }

    /// The [`JoinError`], by value, unless the deadline passed.
    pub fn into_join_error(self) -> Option<JoinError> {
        match self.0 {
            TimeoutRepr::Join(e) => Some(e),
            TimeoutRepr::Elapsed { .. } => None,
        }
    }

    /// The coroutine that ran the closure.
    pub fn id(&self) -> CoroutineId {
        match &self.0 {
            TimeoutRepr::Elapsed { id, .. } => *id,
            TimeoutRepr::Join(e) => e.id(),
        }
    }
}

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            TimeoutRepr::Elapsed { id, ms } => {
                write!(
                    f,
                    "deadline of {ms} ms passed: coroutine {id} was cancelled"
                )
            }
            TimeoutRepr::Join(e) => e.fmt(f),
        }
    }
}

impl fmt::Debug for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TimeoutError")
            .field(&self.to_string())
            .finish()
    }
}

impl std::error::Error for TimeoutError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            TimeoutRepr::Join(e) => Some(e),
            // An ordinary error, not a cancellation (P-03).
            TimeoutRepr::Elapsed { .. } => None,
        }
    }
}

/// A periodic timer: [`tick`](Interval::tick) suspends until the next
/// period has elapsed. Made by [`interval`].
///
/// It is one reactor timer for all its ticks, kept registered between
/// waits: a loop that waits on it re-registers nothing, where a loop of
/// [`delay`]s arms and disposes a timer per turn (the design's persistent
/// await context; `cargo xtask bench -- --profile` counts the
/// difference). A tick that fires while nobody waits is kept, and the
/// next `tick` returns at once; periods missed while the loop was busy
/// are skipped, and the next tick comes at the next point of the period's
/// grid (tokio's "skip" behaviour). Dropping it disarms the timer.
pub struct Interval {
    period: Duration,
    state: Rc<TickState>,
    _timer: TimerEvent,
}

struct TickState {
    /// Ticks that fired and were not yet taken by `tick`.
    pending: Cell<u64>,
    waiters: crate::core::waiters::Notify,
}

/// A periodic timer whose first tick is one `period` from now; see
/// [`Interval`].
///
/// # Panics
///
/// Outside a runtime, or if the reactor cannot arm a timer.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use async_std_api::{run, time};
///
/// run(|| {
///     let start = Instant::now();
///     let mut every = time::interval(Duration::from_millis(5));
///     for _ in 0..3 {
///         every.tick().unwrap();
///     }
///     assert!(start.elapsed() >= Duration::from_millis(15));
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    let state = Rc::new(TickState {
        pending: Cell::new(0),
        waiters: crate::core::waiters::Notify::new(),
    });
    let s = state.clone();
    let ns = nanos(period).max(1);
    let timer = runtime::with_runtime(|rt| {
        rt.reactor.timer_repeating(
            ns,
            ns,
            Box::new(move |status| {
                if status >= 0 {
                    s.pending.set(s.pending.get() + 1);
                    s.waiters.wake_all();
                }
            }),
        )
    });
    // Not in a closure: the panic names the caller's line.
    let Some(timer) = timer else {
        outside_runtime("interval")
    };
    let timer = timer
        .unwrap_or_else(|s| panic!("cannot arm an interval timer: {}", runtime::status_text(s)));
    Interval {
        period,
        state,
        _timer: timer,
    }
}

impl Interval {
    /// Waits for the next tick (at once if one passed untaken).
    ///
    /// # Errors
    ///
    /// [`Cancelled`] if the calling coroutine is cancelled before or while
    /// it waits; the tick it would have taken stays for the next call.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn tick(&mut self) -> Result<(), Cancelled> {
        let at = Location::caller();
        with_me("Interval::tick", |rt, me| {
            checkpoint(me)?;
            let s = &self.state;
            if s.pending.get() == 0 {
                let _sub = crate::core::waiters::NotifySubscription::new(&s.waiters, me);
                while s.pending.get() == 0 {
                    suspend_once(rt, me, b"interval tick", at)?;
                }
            }
            s.pending.set(s.pending.get() - 1);
            Ok(())
        })
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
}

impl fmt::Debug for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interval")
            .field("period", &self.period)
            .field("pending", &self.state.pending.get())
            .finish()
    }
}

#[cfg(test)]
mod delay_text_tests {
    #[test]
    fn the_wait_description_names_the_delay_in_milliseconds() {
        let mut buf = [0u8; 48];
        assert_eq!(super::delay_text(&mut buf, 0), b"delay 0 ms");
        assert_eq!(super::delay_text(&mut buf, 1234), b"delay 1234 ms");
        let max = super::delay_text(&mut buf, u128::MAX).to_vec();
        assert!(max.starts_with(b"delay 34028236692093846346337460743176821145"));
    }
}
