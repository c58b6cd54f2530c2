//! [`spawn_on`]: a `Send` closure as a coroutine on another loop, and the
//! `Send` handle that joins it from anywhere.
//!
//! Rules:
//! - **SO1** The closure goes through the target loop's door (PC1) and is
//!   spawned there into the global scope, outside any coroutine: so it
//!   runs even if the caller's scope ends first.
//! - **SO2** The outcome lands in a [`Slot`] under one lock: the value, the
//!   panic (as the handle's [`JoinError`], `is_panic`), or a cancellation
//!   when the coroutine never ran, was unwound by a forced shutdown, or
//!   returned after its cancellation was requested (D-25, D-11: the value
//!   is dropped, as a local `join` would say). It
//!   is set once; whoever waits is woken: a coroutine through its own
//!   loop's door for other threads (a [`Promise`]), a thread through the
//!   slot's condition variable.
//! - **SO3** A panic whose handle was dropped first is not lost: it
//!   resumes in the coroutine, so it is that loop's unhandled failure (as a
//!   detached [`spawn`](crate::spawn)'s), and PC4 shuts the loops down.
//! - **SO4** [`LoopJoinHandle::cancel`] goes through the same door as the
//!   spawn, after it (one inbox, in order), and finds the coroutine in its
//!   loop's table of running `spawn_on` coroutines (`RUNNING`, this loop
//!   thread only), which the job leaves when it ends.

use std::collections::HashMap;
use std::io;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::{cell::Cell, cell::RefCell, fmt};

use super::{lock, Command, LoopId, Loops, Shared};
use crate::core::coroutine::Coroutine;
use crate::core::error::{CancelCause, Cancelled, JoinError};
use crate::core::failure::{Failure, FailureOrigin};
use crate::core::id::CoroutineId;
use crate::core::runtime::remote::Promise;
use crate::core::runtime::{self, with_running, with_runtime};
use crate::core::task::current;
use crate::core::wait::{checkpoint, suspend_once, ForcedUnwind};
use crate::structured::scope::global_scope;
use crate::structured::spawn::spawn_in_at;

/// SO2.
struct Slot<T> {
    state: Mutex<SlotState<T>>,
    done: Condvar,
    /// SO4: the key of the coroutine in its loop's `RUNNING`.
    ticket: u64,
}

static NEXT_TICKET: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// SO4: this loop's running `spawn_on` coroutines.
    static RUNNING: RefCell<HashMap<u64, Coroutine>> = RefCell::new(HashMap::new());
}

/// SO4: on the loop thread, from its door.
pub(super) fn cancel_here(ticket: u64) {
    let c = RUNNING.with(|r| r.borrow().get(&ticket).cloned());
    if let Some(c) = c {
        c.cancel();
    }
}

struct SlotState<T> {
    outcome: Option<Result<T, JoinError>>,
    /// The coroutine, once spawned on its loop.
    id: Option<CoroutineId>,
    /// A coroutine waiting on another loop (SO2).
    waiter: Option<Promise<()>>,
    /// The handle is gone (SO3).
    detached: bool,
}

impl<T> Slot<T> {
    fn id(&self) -> CoroutineId {
        lock(&self.state).id.unwrap_or(CoroutineId(0))
    }

    /// SO2: the first outcome wins.
    fn finish(&self, outcome: Result<T, JoinError>) {
        let waiter = {
            let mut s = lock(&self.state);
            if s.outcome.is_some() {
                return;
            }
            s.outcome = Some(outcome);
            s.waiter.take()
        };
        self.done.notify_all();
        if let Some(w) = waiter {
            w.keep(());
        }
    }
}

/// SO2: the outcome when the closure never ran, or its stack was unwound
/// by a forced shutdown; set by the drop of the job, whatever way it goes.
struct Job<T> {
    slot: Arc<Slot<T>>,
    loop_id: LoopId,
}

impl<T> Drop for Job<T> {
    fn drop(&mut self) {
        let ticket = self.slot.ticket;
        // Off its loop (a door closed under it, RM4) this finds nothing.
        let _ = RUNNING.try_with(|r| r.borrow_mut().remove(&ticket));
        let id = self.slot.id();
        let reason = format!("{} shut down before the coroutine finished", self.loop_id);
        let c = Cancelled::of(id, CancelCause::Shutdown, Some(reason));
        self.slot.finish(Err(JoinError::cancelled_with(id, c)));
    }
}

/// The handle of a coroutine started by [`spawn_on`]: the cross-loop
/// analogue of [`JoinHandle`](crate::JoinHandle), and `Send`, so it can be
/// joined from a coroutine on any loop (which suspends) or from a plain
/// thread (which blocks), like `std::thread::JoinHandle`.
///
/// Dropping it detaches the coroutine: it runs on, its value is dropped,
/// and a panic becomes its loop's unhandled failure (SO3).
pub struct LoopJoinHandle<T> {
    slot: Arc<Slot<T>>,
    loop_id: LoopId,
    shared: Arc<Shared>,
    _value: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for LoopJoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopJoinHandle")
            .field("loop", &self.loop_id)
            .finish_non_exhaustive()
    }
}

impl<T> Drop for LoopJoinHandle<T> {
    fn drop(&mut self) {
        lock(&self.slot.state).detached = true;
    }
}

impl<T: Send + 'static> LoopJoinHandle<T> {
    /// The loop the coroutine runs on.
    pub fn loop_id(&self) -> LoopId {
        self.loop_id
    }

    /// Cancels the coroutine (cause [`Explicit`](crate::CancelCause::Explicit)),
    /// from any thread: the request goes to its loop after the spawn
    /// (SO4) and is delivered there as any cancellation (D-1: at its next
    /// suspension point; one that never started never runs). Does nothing
    /// once it finished or its loop stopped taking requests.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::per_core::{spawn_on, LoopId};
    /// use async_std_api::{delay, Builder};
    ///
    /// Builder::new()
    ///     .threads(2)
    ///     .run_per_core(|id| {
    ///         if id.index() == 0 {
    ///             let h = spawn_on(LoopId::new(1), || delay(60_000)).unwrap();
    ///             h.cancel();
    ///             assert!(h.join().unwrap_err().is_cancelled());
    ///         }
    ///     })
    ///     .unwrap();
    /// ```
    pub fn cancel(&self) {
        let cmd = Command::Cancel(self.slot.ticket);
        let _ = self
            .shared
            .send(self.loop_id, cmd, "LoopJoinHandle::cancel");
    }

    /// True once the coroutine has an outcome (`join` would not wait).
    pub fn is_finished(&self) -> bool {
        lock(&self.slot.state).outcome.is_some()
    }

    /// Waits for the coroutine and returns its value: in a coroutine (on
    /// any loop, or in a plain [`run`](crate::run)) only that coroutine
    /// suspends; on a plain thread, the thread blocks.
    ///
    /// # Errors
    ///
    /// A [`JoinError`]: [`is_panic`](JoinError::is_panic) if the closure
    /// panicked (the payload is [`into_panic`](JoinError::into_panic));
    /// [`is_cancelled`](JoinError::is_cancelled) (cause
    /// [`Shutdown`](crate::CancelCause::Shutdown)) if its loop shut down
    /// before it ran, or unwound it in a forced shutdown;
    /// [`is_interrupted`](JoinError::is_interrupted) if the *joining*
    /// coroutine was cancelled while it waited (the handle is then gone:
    /// the coroutine is detached). A closure that returns after its own
    /// cancellation gives its value.
    ///
    /// # Panics
    ///
    /// On a runtime's thread outside a coroutine (blocking would stop that
    /// loop).
    ///
    /// # Cancellation
    ///
    /// In a coroutine, a cancellation point: a pending cancellation is
    /// returned before waiting; an outcome that arrived before the
    /// cancellation was seen wins, and the cancellation stays pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::per_core::{spawn_on, LoopId};
    /// use async_std_api::Builder;
    ///
    /// Builder::new()
    ///     .threads(2)
    ///     .run_per_core(|id| {
    ///         if id.index() == 0 {
    ///             let h = spawn_on(LoopId::new(1), || panic!("boom")).unwrap();
    ///             assert_eq!(h.join().unwrap_err().panic_message(), Some("boom"));
    ///         }
    ///     })
    ///     .unwrap();
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T, JoinError> {
        let at = Location::caller();
        if let Some(r) = with_running(|rt, me| join_in_coroutine(&self.slot, rt, me, at)) {
            return r;
        }
        if with_runtime(|_| ()).is_some() {
            panic!(
                "LoopJoinHandle::join called on a runtime's thread outside a coroutine: \
                 it would block the loop; join it from a coroutine"
            );
        }
        let mut s = lock(&self.slot.state);
        loop {
            if let Some(r) = s.outcome.take() {
                return r;
            }
            s = self.slot.done.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

const WAIT_WHAT: &[u8] = b"join of a coroutine on another loop (spawn_on)";

/// SO2: the coroutine waits for its own loop's door to be knocked.
fn join_in_coroutine<T: Send + 'static>(
    slot: &Arc<Slot<T>>,
    rt: &runtime::Runtime,
    me: &Rc<crate::core::state::CoroState>,
    at: &'static Location<'static>,
) -> Result<T, JoinError> {
    if let Err(c) = checkpoint(me) {
        return Err(JoinError::interrupted(slot.id(), c));
    }
    let woken = Rc::new(Cell::new(false));
    let (w, waiter) = (woken.clone(), me.clone());
    let registered = rt.remote.register(move |_: Option<()>| {
        w.set(true);
        runtime::wake(&waiter);
    });
    let (rid, promise) = match registered {
        Ok(r) => r,
        Err(_) => {
            let e = io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "LoopJoinHandle::join: reactor \"{}\" lacks AA_CAP_TRIGGER: \
                     other loops cannot wake this one",
                    rt.reactor.label()
                ),
            );
            let id = slot.id();
            return Err(JoinError::failed(
                id,
                Failure::from_error(FailureOrigin::Coroutine(id), Box::new(e)),
            ));
        }
    };
    let forget = Forget(rt, rid);
    {
        let mut s = lock(&slot.state);
        if let Some(r) = s.outcome.take() {
            return r;
        }
        s.waiter = Some(promise);
    }
    loop {
        let resumed = suspend_once(rt, me, WAIT_WHAT, at);
        let mut s = lock(&slot.state);
        if let Some(r) = s.outcome.take() {
            if resumed.is_err() {
                me.repend_cancel();
            }
            return r;
        }
        if let Err(c) = resumed {
            let unkept = s.waiter.take();
            drop(s);
            drop(forget); // RM3 first: the unkept promise then reports nothing
            drop(unkept);
            return Err(JoinError::interrupted(slot.id(), c));
        }
    }
}

struct Forget<'a>(&'a runtime::Runtime, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.remote.forget(self.1);
    }
}

/// Runs `f` as a coroutine on loop `id` of the current [`run_per_core`](super::run_per_core)
/// and returns a `Send` handle to its value: [`Loops::spawn_on`] on
/// [`Loops::current`].
///
/// # Errors
///
/// As [`Loops::spawn_on`].
///
/// # Panics
///
/// Outside a [`run_per_core`](super::run_per_core) loop thread (use
/// [`Loops::spawn_on`] with a [`Loops`] handle from a plain thread).
///
/// # Examples
///
/// ```
/// use async_std_api::per_core::{current_loop, spawn_on, LoopId};
/// use async_std_api::Builder;
///
/// let seen = Builder::new()
///     .threads(2)
///     .run_per_core(|id| {
///         let h = spawn_on(LoopId::new(1), current_loop).unwrap();
///         (id.index(), h.join().unwrap().unwrap().index())
///     })
///     .unwrap();
/// assert_eq!(seen, [(0, 1), (1, 1)]);
/// ```
#[track_caller]
pub fn spawn_on<F, T>(id: LoopId, f: F) -> io::Result<LoopJoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match Loops::current() {
        Some(loops) => loops.spawn_on(id, f),
        None => panic!(
            "spawn_on called outside run_per_core: run the loops with Builder::run_per_core, \
             or use Loops::spawn_on from another thread"
        ),
    }
}

impl Loops {
    /// Runs `f` as a coroutine on loop `id` (in that loop's global scope,
    /// SO1) and returns a `Send` handle to its value; from any thread, a
    /// loop's or a plain one. `f` runs once the loop takes it from its
    /// door, never before `spawn_on` returns.
    ///
    /// # Errors
    ///
    /// `InvalidInput` if the run has no such loop; `Other` if the loop no
    /// longer accepts coroutines (every loop's closure returned, or the
    /// loops are shutting down, PC2, PC3).
    ///
    /// # Cancellation
    ///
    /// Does not suspend. Cancelling the caller does not cancel the
    /// coroutine: it belongs to its loop.
    #[track_caller]
    pub fn spawn_on<F, T>(&self, id: LoopId, f: F) -> io::Result<LoopJoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let at = Location::caller();
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                outcome: None,
                id: None,
                waiter: None,
                detached: false,
            }),
            done: Condvar::new(),
            ticket: NEXT_TICKET.fetch_add(1, Ordering::Relaxed),
        });
        let job = Job {
            slot: slot.clone(),
            loop_id: id,
        };
        let start = move || start(job, f, at);
        self.shared
            .send(id, Command::Spawn(Box::new(start)), "spawn_on")?;
        Ok(LoopJoinHandle {
            slot,
            loop_id: id,
            shared: self.shared.clone(),
            _value: PhantomData,
        })
    }
}

/// SO1: on the target loop, in its door's callback.
fn start<F, T>(job: Job<T>, f: F, at: &'static Location<'static>)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let slot = job.slot.clone();
    let body = move || {
        let id = current().id();
        match catch_unwind(AssertUnwindSafe(f)) {
            // D-25, D-11: a coroutine whose cancellation was requested ends
            // cancelled, its value dropped, as its own `join` would say.
            Ok(v) => match with_running(|_, me| me.cancellation()).flatten() {
                Some(c) => job.slot.finish(Err(JoinError::cancelled_with(id, c))),
                None => job.slot.finish(Ok(v)),
            },
            // A forced shutdown unwinds through here: let it, and the
            // job's drop reports the cancellation (SO2).
            Err(p) if p.is::<ForcedUnwind>() => resume_unwind(p),
            Err(p) if lock(&job.slot.state).detached => resume_unwind(p), // SO3
            Err(p) => {
                let failure = Failure::from_panic(FailureOrigin::Coroutine(id), p);
                job.slot.finish(Err(JoinError::failed(id, failure)));
            }
        }
    };
    // A closed global scope (the loop is ending) drops the body, and with it
    // the job, which reports the cancellation (SO2).
    if let Ok(h) = spawn_in_at(&global_scope(), body, at) {
        lock(&slot.state).id = Some(h.id());
        RUNNING.with(|r| r.borrow_mut().insert(slot.ticket, h.coroutine()));
    }
}
