//! Unix signals: [`signal`] (an [`Awaitable`] that completes on the next
//! delivery) and [`wait`].
//!
//! A signal watch is a reactor event (`signal_new`, `AA_CAP_SIGNAL`): the
//! reactor owns the signal's disposition while something watches it, and
//! restores the previous one when the last watch goes. Callbacks run on the
//! loop thread, never in the signal handler.
//!
//! The RFC leaves `Async\signal()` to the standard library; here it is the
//! token the RFC's examples pass to `awaitCompletion` and the way a server
//! starts its graceful shutdown on `SIGINT`/`SIGTERM`:
//!
//! ```no_run
//! use async_std_api::{graceful_shutdown, signal, spawn_try};
//!
//! # async_std_api::run(|| {
//! spawn_try(|| {
//!     signal::any(&[signal::SIGINT, signal::SIGTERM])?.wait()?;
//!     graceful_shutdown();
//!     Ok::<(), std::io::Error>(())
//! });
//! # }).unwrap();
//! ```
//!
//! A watch is a *visible* event: a coroutine waiting for a signal keeps the
//! program alive (it waits for something that can happen). Cancel it (or
//! its scope) when the program is done.
//!
//! # Backend differences
//!
//! A reactor without `AA_CAP_SIGNAL` (a third party's) makes [`signal`]
//! fail with an [`io::Error`] of kind [`Unsupported`](io::ErrorKind::Unsupported).

use std::cell::Cell;
use std::fmt;
use std::io;
use std::panic::Location;
use std::rc::Rc;

use crate::core::awaitable::sealed::Sealed as _;
use crate::core::awaitable::{sealed, Awaitable};
use crate::core::runtime::{self, SignalEvent};
use crate::core::wait::{checkpoint, outside_runtime, suspend_once, with_me};
use crate::core::waiters::{Completion, Subscription};

/// `SIGINT` (interrupt from the keyboard, Ctrl-C) on Linux.
pub const SIGINT: i32 = 2;
/// `SIGTERM` (termination request) on Linux.
pub const SIGTERM: i32 = 15;
/// `SIGHUP` on Linux.
pub const SIGHUP: i32 = 1;
/// `SIGUSR1` on Linux.
pub const SIGUSR1: i32 = 10;
/// `SIGUSR2` on Linux.
pub const SIGUSR2: i32 = 12;

/// A watch for one signal that completes on its first delivery after it was
/// created: the RFC's `Async\signal($signum)`, an [`Awaitable`].
///
/// Usable as the cancellation token of
/// [`ScopeRef::await_completion`](crate::ScopeRef::await_completion) and
/// [`JoinHandle::join_until`](crate::JoinHandle::join_until), or waited for
/// with [`Signal::wait`]. It completes once and stays completed (R-CO7).
///
/// Dropping it stops the watch (the reactor restores the disposition when
/// it was the last watch of that signal).
///
/// # Examples
///
/// ```
/// use async_std_api::{run, signal};
///
/// run(|| {
///     let usr1 = signal::signal(signal::SIGUSR1).unwrap();
///     assert!(!usr1.is_received());
///     // SAFETY-free: raise the signal at our own process.
///     std::process::Command::new("kill")
///         .args(["-USR1", &std::process::id().to_string()])
///         .status()
///         .unwrap();
///     usr1.wait().unwrap();
///     assert!(usr1.is_received());
/// })
/// .unwrap();
/// ```
pub struct Signal {
    signums: Vec<i32>,
    /// The signal that completed it (0 until then).
    received: Rc<Cell<i32>>,
    done: Rc<Completion>,
    _events: Vec<SignalEvent>,
}

/// Starts watching `signum`; see [`Signal`].
///
/// # Errors
///
/// An [`io::Error`] of kind [`Unsupported`](io::ErrorKind::Unsupported)
/// if the reactor cannot watch signals (no `AA_CAP_SIGNAL`), of kind
/// [`InvalidInput`](io::ErrorKind::InvalidInput) for a number the reactor
/// refuses (not a signal, `SIGKILL`, `SIGSTOP`, a synchronous fault, or one
/// the C library reserves).
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, signal};
///
/// run(|| {
///     let err = signal::signal(9).err().unwrap(); // SIGKILL cannot be watched
///     assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
///     assert_eq!(err.to_string(), "cannot watch signal 9: the reactor refuses it");
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn signal(signum: i32) -> io::Result<Signal> {
    any(&[signum])
}

/// Watches several signals at once: the [`Signal`] completes on the first
/// delivery of any of them ([`Signal::received`] tells which). A server
/// watches `SIGINT` and `SIGTERM` this way.
///
/// # Errors
///
/// As [`signal`], for the first signal that cannot be watched (the others
/// are not watched either).
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, signal};
///
/// run(|| {
///     let s = signal::any(&[signal::SIGUSR1, signal::SIGUSR2]).unwrap();
///     assert_eq!(s.signums(), [signal::SIGUSR1, signal::SIGUSR2]);
///     assert_eq!(s.received(), None);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn any(signums: &[i32]) -> io::Result<Signal> {
    let done = Rc::new(Completion::new());
    let received = Rc::new(Cell::new(0));
    let mut events = Vec::with_capacity(signums.len());
    for &signum in signums {
        let on_signal = {
            let done = done.clone();
            let received = received.clone();
            Box::new(move |status| {
                if status >= 0 && received.get() == 0 {
                    received.set(signum);
                }
                done.complete();
            })
        };
        // Not in a closure: the panic names the caller's line.
        let Some(event) = runtime::with_runtime(|rt| rt.reactor.signal(signum, on_signal)) else {
            outside_runtime("signal")
        };
        let event = event.map_err(|status| watch_error(signum, status))?;
        events.push(event);
    }
    Ok(Signal {
        signums: signums.to_vec(),
        received,
        done,
        _events: events,
    })
}

fn watch_error(signum: i32, status: async_abi::AaStatus) -> io::Error {
    match status {
        async_abi::AA_E_UNSUPPORTED => io::Error::new(
            io::ErrorKind::Unsupported,
            format!("cannot watch signal {signum}: the reactor does not support signals"),
        ),
        async_abi::AA_E_INVALID => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot watch signal {signum}: the reactor refuses it"),
        ),
        s => io::Error::other(format!(
            "cannot watch signal {signum}: {}",
            runtime::status_text(s)
        )),
    }
}

impl Signal {
    /// The watched signals' numbers.
    pub fn signums(&self) -> &[i32] {
        &self.signums
    }

    /// The signal that was delivered, once one was.
    pub fn received(&self) -> Option<i32> {
        match self.received.get() {
            0 => None,
            n => Some(n),
        }
    }

    /// True once the signal was delivered.
    pub fn is_received(&self) -> bool {
        self.done.is_done()
    }

    /// Waits until the signal is delivered (at once if it already was).
    ///
    /// # Errors
    ///
    /// The calling coroutine's cancellation, as an [`io::Error`] of kind
    /// `Other` carrying the [`Cancelled`](crate::Cancelled).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point.
    #[track_caller]
    pub fn wait(&self) -> io::Result<()> {
        let at = Location::caller();
        with_me("signal wait", |rt, me| {
            checkpoint(me)?;
            if self.done.is_done() {
                return Ok(());
            }
            let _sub = Subscription::new(&self.done, me);
            let what = self.describe();
            while !self.done.is_done() {
                suspend_once(rt, me, what.as_bytes(), at)?;
            }
            Ok(())
        })
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("signums", &self.signums)
            .field("received", &self.is_received())
            .finish()
    }
}

#[allow(private_interfaces)] // sealed: see `awaitable`
impl sealed::Sealed for Signal {
    fn completion(&self) -> &Completion {
        &self.done
    }
    fn describe(&self) -> String {
        let nums: Vec<String> = self.signums.iter().map(i32::to_string).collect();
        format!("signal {}", nums.join(" or "))
    }
}

impl Awaitable for Signal {}

/// Waits for the next delivery of `signum`: [`signal`] then [`Signal::wait`].
///
/// # Errors
///
/// As [`signal`] and [`Signal::wait`].
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point.
///
/// # Examples
///
/// ```no_run
/// use async_std_api::{run, signal};
///
/// run(|| {
///     signal::wait(signal::SIGINT).unwrap();
///     println!("interrupted");
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn wait(signum: i32) -> io::Result<()> {
    signal(signum)?.wait()
}

#[cfg(test)]
mod tests {
    use super::watch_error;

    #[test]
    fn a_reactor_without_signals_is_an_unsupported_io_error() {
        let e = watch_error(2, async_abi::AA_E_UNSUPPORTED);
        assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
        assert_eq!(
            e.to_string(),
            "cannot watch signal 2: the reactor does not support signals"
        );
    }
}
