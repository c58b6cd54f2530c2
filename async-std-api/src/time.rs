//! Timers: [`delay`], [`sleep`], [`timeout`] and [`interval`].
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
use crate::core::error::Cancelled;
use crate::core::runtime::{self, TimerEvent, WakeRec};
use crate::core::state::CoroState;
use crate::core::wait::{checkpoint, suspend_once, with_me, yield_once};
use crate::core::waiters::Completion;
use crate::structured::combinators::sealed::{Token, Watch};
use crate::structured::combinators::Trigger;

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
        panic!(
            "timeout called outside a coroutine runtime: run the program inside async_std_api::run"
        )
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
    })
    .unwrap_or_else(|| {
        panic!("interval called outside a coroutine runtime: run the program inside async_std_api::run")
    })
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
