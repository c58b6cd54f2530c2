//! [`Awaitable`]: what [`join_until`](JoinHandle::join_until) and
//! the other `*_until` waits accept as their trigger.

use std::cell::RefCell;
use std::fmt;
use std::panic::Location;
use std::rc::Rc;

use super::coroutine::Coroutine;
use super::error::Cancelled;
use super::failure::Failure;
use super::failure::FailureOrigin;
use super::join::JoinHandle;
use super::state::{CoroState, Outcome};
use super::wait::{wait_for, with_me, WaitEnd};
use super::waiters::Completion;

// The sealed trait names a crate-private type on purpose: nobody outside
// can implement or call it (STYLE S1: tiny public surface).
#[allow(private_interfaces)]
pub(crate) mod sealed {
    /// The host-side view of an awaitable: a one-shot completion.
    pub trait Sealed {
        #[doc(hidden)]
        fn completion(&self) -> &crate::core::waiters::Completion;
        #[doc(hidden)]
        fn describe(&self) -> String;
        /// The failure this awaitable completed with, if it failed: a
        /// waiter whose until-trigger failed reports it as the cause (D-16).
        #[doc(hidden)]
        fn failure(&self) -> Option<crate::core::failure::Failure> {
            None
        }
    }
}

/// Something a coroutine can wait for, once: the RFC's `Awaitable`.
///
/// Implemented by [`Timeout`](crate::time::Timeout),
/// [`JoinHandle`](JoinHandle) and [`Coroutine`](Coroutine).
/// A value completes once and stays completed (R-CO7), so using it as a
/// trigger again gives the same answer at once.
///
/// The trait is sealed (its contract with the scheduler is internal): a
/// user-made awaitable is a [`Latch`] that the user's own linking logic
/// opens, from any of the runtime's events (see [`Latch`] for the
/// design's `AwaitSocket` example).
pub trait Awaitable: sealed::Sealed {
    /// True once it has completed.
    fn is_completed(&self) -> bool {
        self.completion().is_done()
    }
}

#[allow(private_interfaces)]
impl<T> sealed::Sealed for JoinHandle<T> {
    fn completion(&self) -> &Completion {
        &self.coroutine_state().done
    }
    fn describe(&self) -> String {
        format!("coroutine {}", self.coroutine_state().id())
    }
    fn failure(&self) -> Option<Failure> {
        failure_of(self.coroutine_state())
    }
}

impl<T> Awaitable for JoinHandle<T> {}

#[allow(private_interfaces)]
impl sealed::Sealed for Coroutine {
    fn completion(&self) -> &Completion {
        &self.state.done
    }
    fn describe(&self) -> String {
        format!("coroutine {}", self.state.id())
    }
    fn failure(&self) -> Option<Failure> {
        failure_of(&self.state)
    }
}

fn failure_of(state: &CoroState) -> Option<Failure> {
    state
        .with_outcome(|o| match o {
            Outcome::Failed(f) => Some(f.clone()),
            _ => None,
        })
        .flatten()
}

impl Awaitable for Coroutine {}

/// A one-shot awaitable that its owner completes: the building block of
/// user-made await contexts (the design's `AwaitContext` with its own
/// linking logic). A latch starts closed; [`open`](Latch::open) or
/// [`fail`](Latch::fail) completes it once, waking every waiter, and it
/// stays completed (R-CO7). It works wherever the built-in awaitables do:
/// as an `until` trigger, in the combinators
/// ([`combinators::Trigger`](crate::combinators::Trigger)), with
/// [`wait`] and its own [`wait`](Latch::wait); a failed latch used as an
/// `until` trigger is the await-cancelled error's cause (D-16).
///
/// Clones are the same latch: hand one to whatever should open it (a
/// coroutine waiting for a descriptor, a timer's callback coroutine, a
/// [`sync::Deferred`](crate::sync::Deferred)'s resolver side).
///
/// # Examples
///
/// The design's `AwaitSocket`: readable or timed out, whichever comes
/// first, as one awaitable.
///
/// ```
/// use std::os::unix::net::UnixStream;
/// use async_std_api::awaitable::{wait, Latch};
/// use async_std_api::io::Async;
/// use async_std_api::{run, spawn, time};
///
/// run(|| {
///     let (_peer, sock) = UnixStream::pair().unwrap();
///     let sock = Async::new(sock).unwrap();
///     let ready = Latch::new("socket readable or timed out");
///     let (r1, r2) = (ready.clone(), ready.clone());
///     let reader = spawn(move || {
///         if sock.readable().is_ok() {
///             r1.open();
///         }
///     });
///     let t = time::timeout(20);
///     let timer = spawn(move || {
///         if wait(&t).is_ok() {
///             r2.fail("timed out");
///         }
///     });
///     ready.wait().unwrap(); // completes when either link fires
///     assert!(ready.failure().unwrap().to_string().ends_with("timed out"));
///     reader.cancel();
///     let _ = (reader.join(), timer.join());
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct Latch {
    inner: Rc<LatchInner>,
}

struct LatchInner {
    done: Completion,
    failure: RefCell<Option<Failure>>,
    what: String,
    created_at: &'static Location<'static>,
}

impl Latch {
    /// A closed latch; `what` names it in deadlock and watchdog reports.
    #[track_caller]
    pub fn new(what: impl Into<String>) -> Latch {
        Latch {
            inner: Rc::new(LatchInner {
                done: Completion::new(),
                failure: RefCell::new(None),
                what: what.into(),
                created_at: Location::caller(),
            }),
        }
    }

    /// Completes it, waking every waiter. True if this call completed it
    /// (false: it was already completed, and stays as it was).
    pub fn open(&self) -> bool {
        if self.inner.done.is_done() {
            return false;
        }
        self.inner.done.complete();
        true
    }

    /// Completes it with a failure (its waiters and `until` users see it as
    /// the cause). True if this call completed it.
    pub fn fail(
        &self,
        error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> bool {
        if self.inner.done.is_done() {
            return false;
        }
        *self.inner.failure.borrow_mut() =
            Some(Failure::from_error(FailureOrigin::Rejected, error.into()));
        self.inner.done.complete();
        true
    }

    /// True once completed (opened or failed).
    pub fn is_open(&self) -> bool {
        self.inner.done.is_done()
    }

    /// The failure it completed with, if [`fail`](Latch::fail) completed it.
    pub fn failure(&self) -> Option<Failure> {
        self.inner.failure.borrow().clone()
    }

    /// Suspends until it is completed (at once if it is). A cancellation
    /// point.
    ///
    /// # Errors
    ///
    /// The caller's cancellation (or a deadlock: nothing left can open it).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn wait(&self) -> Result<(), Cancelled> {
        wait(self)
    }
}

impl fmt::Debug for Latch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latch")
            .field("what", &self.inner.what)
            .field("open", &self.is_open())
            .field("failed", &self.inner.failure.borrow().is_some())
            .finish()
    }
}

#[allow(private_interfaces)]
impl sealed::Sealed for Latch {
    fn completion(&self) -> &Completion {
        &self.inner.done
    }
    fn describe(&self) -> String {
        format!("{} (created at {})", self.inner.what, self.inner.created_at)
    }
    fn failure(&self) -> Option<Failure> {
        self.inner.failure.borrow().clone()
    }
}

impl Awaitable for Latch {}

/// Suspends until `a` completes (at once if it has): any [`Awaitable`],
/// built-in or a [`Latch`]. A cancellation point. Whether it completed
/// well is the awaitable's own business (a latch's
/// [`failure`](Latch::failure), a handle's `join`).
///
/// # Errors
///
/// The caller's cancellation (or a deadlock: nothing left can complete
/// it).
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Examples
///
/// ```
/// use async_std_api::{awaitable, run, time};
///
/// run(|| {
///     let t = time::timeout(5);
///     awaitable::wait(&t).unwrap();
///     assert!(t.is_expired());
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn wait<A: Awaitable + ?Sized>(a: &A) -> Result<(), Cancelled> {
    let at = Location::caller();
    with_me("awaitable::wait", |rt, me| {
        let what = a.describe();
        match wait_for(rt, me, a.completion(), None, what.as_bytes(), at) {
            WaitEnd::Done | WaitEnd::Trigger | WaitEnd::SelfAwait => Ok(()),
            WaitEnd::Interrupted(c) => Err(c),
        }
    })
}
