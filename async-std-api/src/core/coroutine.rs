//! [`Coroutine`]: the RFC's untyped `Coroutine` object (state queries,
//! cancellation, `on_finally`, introspection, waits).

use std::fmt;
use std::panic::Location;
use std::rc::Rc;

use async_abi::{AA_CORO_QUEUED, AA_CORO_SUSPENDED};

use super::awaitable::Awaitable;
use super::cancel::cancel;
use super::error::JoinError;
use super::id::CoroutineId;
use super::join::wait_state;
use super::runtime;
use super::state::{CoroState, HI_PRIORITY, ZOMBIE};

/// A coroutine, untyped and cloneable: the RFC's `Coroutine` object.
///
/// Obtained from [`JoinHandle::coroutine`](crate::JoinHandle::coroutine) or [`current`](crate::current). It observes
/// ([`is_suspended`](Coroutine::is_suspended), ...), cancels and waits, but
/// cannot take the value (only the [`JoinHandle`](crate::JoinHandle) can). Dropping it does
/// nothing to the coroutine.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn, suspend};
///
/// run(|| {
///     let c = spawn(|| suspend().is_ok()).coroutine();
///     assert!(c.is_queued() && !c.is_started());
///     c.wait().unwrap();
///     assert!(c.is_finished() && !c.is_cancelled());
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct Coroutine {
    pub(crate) state: Rc<CoroState>,
}

impl Coroutine {
    /// Its id.
    pub fn id(&self) -> CoroutineId {
        self.state.id()
    }

    /// Requests cancellation: the RFC's `$coroutine->cancel()`.
    ///
    /// - not started yet: it never starts; its body is dropped unrun and
    ///   joining it gives [`JoinError::is_cancelled`](crate::JoinError::is_cancelled);
    /// - suspended: it is resumed with [`Cancelled`](crate::Cancelled) at its suspension
    ///   point;
    /// - running (it cancels itself): [`Cancelled`](crate::Cancelled) is delivered at its next
    ///   suspension point (`cancel` is not itself a suspension point, P-23);
    /// - finished: nothing happens.
    ///
    /// The first request wins; later ones (and their reasons) are ignored.
    /// Delivery is edge-triggered: once delivered, later waits succeed
    /// (D-1), while [`is_cancellation_requested`](Coroutine::is_cancellation_requested)
    /// stays true.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn, suspend};
    ///
    /// run(|| {
    ///     let h = spawn(|| delay(10_000));
    ///     suspend().unwrap(); // let it start and block in delay
    ///     h.cancel();
    ///     let id = h.id();
    ///     // It ends cancelled, whatever its body returned after (D-25).
    ///     let err = h.join().unwrap_err();
    ///     assert_eq!(err.cancelled().unwrap().to_string(), format!("coroutine {id} cancelled"));
    /// })
    /// .unwrap();
    /// ```
    pub fn cancel(&self) {
        cancel(&self.state, None);
    }

    /// Requests cancellation with a reason, shown by [`Cancelled::reason`](crate::Cancelled::reason)
    /// and in its message. See [`cancel`](Coroutine::cancel).
    pub fn cancel_with(&self, reason: impl Into<String>) {
        cancel(&self.state, Some(reason.into()));
    }

    /// True once its body started running.
    pub fn is_started(&self) -> bool {
        self.state.is_started()
    }

    /// True while it waits in the run queue (to start or to resume).
    pub fn is_queued(&self) -> bool {
        self.sched_state() == Some(AA_CORO_QUEUED)
    }

    /// True if it is the running coroutine.
    pub fn is_running(&self) -> bool {
        std::ptr::eq(runtime::running(), Rc::as_ptr(&self.state))
    }

    /// True while it is suspended, waiting to be woken.
    pub fn is_suspended(&self) -> bool {
        self.sched_state() == Some(AA_CORO_SUSPENDED)
    }

    /// True once it has finished cancelled: the RFC's `isCancelled`, the
    /// "Cancelled" end state. A coroutine that caught its cancellation and
    /// returned ended cancelled too (D-25); one that failed after its
    /// cancellation ended failed, not cancelled (D-22).
    pub fn is_cancelled(&self) -> bool {
        self.state.is_cancelled()
    }

    /// True once a cancellation was requested; stays true (D-1): the RFC's
    /// `isCancellationRequested` ("Pending cancellation" while it runs).
    pub fn is_cancellation_requested(&self) -> bool {
        self.state.is_cancellation_requested()
    }

    /// True once it has finished (returned, failed, or was cancelled): the
    /// RFC's `isFinished` ("Completed" or "Cancelled").
    pub fn is_finished(&self) -> bool {
        self.state.is_finished()
    }

    /// Where it was spawned (the RFC's `getSpawnLocation` and
    /// `getSpawnFileAndLine`).
    pub fn spawn_location(&self) -> &'static Location<'static> {
        self.state.location
    }

    /// Its stack, as text (the RFC's `getTrace`): the running coroutine's
    /// now; a suspended one's as it was when it suspended, if the runtime
    /// traces suspensions ([`Builder::trace`](crate::Builder::trace),
    /// `ASYNC_TRACE=1`: off by default, since capturing costs microseconds
    /// per suspension); `None` otherwise, and once it finished.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, spawn, suspend, Builder};
    ///
    /// Builder::new()
    ///     .trace(true)
    ///     .run(|| {
    ///         let c = spawn(|| delay(20).unwrap()).coroutine();
    ///         suspend().unwrap();
    ///         let trace = c.trace().unwrap();
    ///         assert!(trace.contains("delay"), "{trace}");
    ///         c.wait().unwrap();
    ///         assert!(c.trace().is_none());
    ///     })
    ///     .unwrap();
    /// ```
    pub fn trace(&self) -> Option<String> {
        // Symbolising opens and reads the program's files under a
        // process-wide lock: with the C library's own calls (K5).
        let _quiet = runtime::Quiet::new();
        if self.is_running() {
            return Some(std::backtrace::Backtrace::force_capture().to_string());
        }
        if self.is_finished() {
            return None;
        }
        self.state
            .with_extra(|x| x.trace.as_ref().map(ToString::to_string))
    }

    /// Where it last suspended (the RFC's `getSuspendLocation` and
    /// `getSuspendFileAndLine`): the caller of the blocking call. `None` if
    /// it never suspended.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn, suspend};
    ///
    /// run(|| {
    ///     let c = spawn(|| delay(20).unwrap()).coroutine();
    ///     assert!(c.suspend_location().is_none());
    ///     suspend().unwrap();
    ///     let at = c.suspend_location().unwrap();
    ///     assert_eq!(at.file(), file!());
    ///     assert_eq!(c.awaiting_info().as_deref(), Some("delay 20 ms"));
    ///     c.wait().unwrap();
    /// })
    /// .unwrap();
    /// ```
    pub fn suspend_location(&self) -> Option<&'static Location<'static>> {
        self.state.last_suspend.get()
    }

    /// What it waits for while suspended (the RFC's `getAwaitingInfo`), as
    /// the scheduler reports it: `"delay 100 ms"`, `"join coroutine 7"`,
    /// `"read fd 9"`. `None` when it is not suspended. A wait inside a C
    /// library hook names the call and the code that made it, read from
    /// the coroutine's stack: `"hooked recv fd 7, called from
    /// my_app::fetch at src/main.rs:12"`.
    pub fn awaiting_info(&self) -> Option<String> {
        if !self.is_suspended() {
            return None;
        }
        let what = runtime::with_runtime(|rt| rt.sched.awaiting_info(&self.state)).flatten()?;
        match self.state.hooked_call_site() {
            Some(site) => Some(format!("{what}, called from {site}")),
            None => Some(what),
        }
    }

    /// True if it is a zombie: its scope was disposed safely while it ran
    /// (R-S9); it keeps running but does not count as active.
    pub fn is_zombie(&self) -> bool {
        self.state.has_flag(ZOMBIE)
    }

    /// True if it was spawned with high priority
    /// ([`hi_priority`](crate::hi_priority), R-HP1).
    pub fn is_hi_priority(&self) -> bool {
        self.state.has_flag(HI_PRIORITY)
    }

    /// Registers `f` to run once when the coroutine finishes (the RFC's
    /// `$coroutine->onFinally()`, Go's `defer`): after its body returned,
    /// panicked, or never started because it was cancelled first (D-23),
    /// before anyone waiting for it is woken.
    ///
    /// Handlers run newest first, each exactly once, even if the coroutine
    /// is cancelled or its scope disposed repeatedly (D-12). A handler
    /// registered after the coroutine finished runs now, in the caller
    /// (its panic goes to the caller). A panic in a handler that runs at
    /// the finish does not change the coroutine's outcome: the handlers'
    /// panics are collected into one [`Failure`](crate::Failure) (origin
    /// [`CoroutineFinally`](crate::FailureOrigin::CoroutineFinally)) sent
    /// to the coroutine's scope.
    ///
    /// Handlers run on the coroutine's own stack and may suspend; the
    /// coroutine can no longer be cancelled then (its body is done, I6).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    /// use async_std_api::{run, spawn};
    ///
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// let l = log.clone();
    /// run(move || {
    ///     let l1 = l.clone();
    ///     let h = spawn(move || l1.borrow_mut().push("body"));
    ///     let l2 = l.clone();
    ///     h.coroutine().on_finally(move || l2.borrow_mut().push("finally"));
    ///     h.join().unwrap();
    ///     l.borrow_mut().push("joined");
    /// })
    /// .unwrap();
    /// assert_eq!(*log.borrow(), ["body", "finally", "joined"]);
    /// ```
    pub fn on_finally(&self, f: impl FnOnce() + 'static) {
        if self.state.is_finished() {
            f();
            return;
        }
        self.state.push_finally(Box::new(f));
    }

    /// Waits until it finishes, without taking its value: the untyped
    /// `await`.
    ///
    /// # Errors
    ///
    /// As [`JoinHandle::join`](crate::JoinHandle::join).
    ///
    /// # Panics
    ///
    /// As [`JoinHandle::join`](crate::JoinHandle::join).
    ///
    /// # Cancellation
    ///
    /// As [`JoinHandle::join`](crate::JoinHandle::join).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, spawn};
    ///
    /// run(|| {
    ///     let c = spawn(|| panic!("oops")).coroutine();
    ///     let (a, b) = (c.wait().unwrap_err(), c.wait().unwrap_err());
    ///     assert!(async_std_api::JoinError::same_failure(&a, &b));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn wait(&self) -> Result<(), JoinError> {
        wait_state(&self.state, None, Location::caller())
    }

    /// Waits until it finishes or `until` completes.
    ///
    /// # Errors
    ///
    /// As [`JoinHandle::join_until`](crate::JoinHandle::join_until).
    ///
    /// # Panics
    ///
    /// As [`JoinHandle::join`](crate::JoinHandle::join).
    ///
    /// # Cancellation
    ///
    /// As [`JoinHandle::join_until`](crate::JoinHandle::join_until).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn, timeout};
    ///
    /// run(|| {
    ///     let c = spawn(|| delay(5).unwrap()).coroutine();
    ///     assert!(c.wait_until(&timeout(2000)).is_ok());
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn wait_until(&self, until: &impl Awaitable) -> Result<(), JoinError> {
        wait_state(&self.state, Some(until), Location::caller())
    }

    fn sched_state(&self) -> Option<u32> {
        runtime::with_runtime(|rt| rt.sched.coroutine_state(&self.state)).flatten()
    }
}

impl PartialEq for Coroutine {
    fn eq(&self, other: &Coroutine) -> bool {
        Rc::ptr_eq(&self.state, &other.state)
    }
}

impl Eq for Coroutine {}

impl fmt::Debug for Coroutine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coroutine")
            .field("id", &self.state.id())
            .field("spawned_at", &self.state.location)
            .field("finished", &self.state.is_finished())
            .finish()
    }
}
