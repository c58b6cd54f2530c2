//! Thread-per-core: N loops, one per thread, each its own scheduler and
//! reactor built from the same configuration ([`run_per_core`],
//! [`Builder::run_per_core`]); [`spawn_on`] for a `Send` closure on a given
//! loop, [`LoopSender`] for messages between loops, and one graceful
//! shutdown for all of them ([`Loops::shutdown`],
//! [`Builder::shutdown_on_signals`]).
//!
//! Everything else stays per loop: coroutines, scopes, sockets and
//! channels are `!Send` and live on the loop that made them. Listeners bound
//! with [`TcpListener::bind_reuseport`](crate::net::TcpListener::bind_reuseport)
//! on every loop let the kernel spread connections over the loops.
//!
//! What this module owns, and its rules:
//! - **PC1** Each loop has a *door*: a `Port` registered on its runtime's
//!   door for other threads (`core::runtime::remote`), through which
//!   [`spawn_on`] and [`Loops::shutdown`] reach it. Every door opens before
//!   any loop runs `f` (a start gate), so `spawn_on` from `f` finds every
//!   loop; a loop that cannot start opens the gate with a failure, and then
//!   no loop runs `f`.
//! - **PC2** An open door keeps its loop alive (RM2): a loop whose `f`
//!   returned still serves `spawn_on` while another loop's `f` runs. The
//!   doors close together, when the last `f` returns or at a shutdown; then
//!   each loop ends as a [`run`](crate::run) does (REF-3: its remaining
//!   coroutines finish first). A wait nothing can complete is reported as a
//!   deadlock only once the doors are closed.
//! - **PC3** A shutdown (by [`Loops::shutdown`], a signal, or a loop's
//!   failure) sends every open door a graceful shutdown (R-GS1: every
//!   coroutine of that loop cancelled, cause
//!   [`Shutdown`](crate::CancelCause::Shutdown), with the reason), then
//!   closes the doors. Sent once; later calls do nothing.
//! - **PC4** A loop *fails* when its run ends with an error or a panic, or
//!   when a failure reaches its global scope unhandled (the
//!   [`UnhandledFailure`](crate::events::Event::UnhandledFailure) event):
//!   the first failure shuts every loop down (PC3, reason `loop <i>
//!   failed`), and [`run_per_core`] returns that loop's error, its message
//!   prefixed with `loop <i>: `; a panic resumes in the caller once every
//!   loop ended.
//!
//! Who touches what: `Shared` is behind one lock (doors) and atomics,
//! reached from every loop thread and any thread holding a [`Loops`]; a
//! door's callback runs on its own loop thread only.

mod pin;
mod sender;
mod spawn_on;

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;

use crate::core::coroutine::Coroutine;
use crate::core::events::{self, Event, Handler};
use crate::core::runtime::remote::Port;
use crate::core::runtime::{self, with_runtime, Builder, Error, ErrorKind};
use crate::core::state::CoroState;
use crate::core::wait::{suspend_once, with_me};
use crate::structured::scope::global_scope;
use crate::structured::shutdown::graceful_shutdown_with;
use crate::structured::spawn::spawn_in;

pub use sender::LoopSender;
pub use spawn_on::{spawn_on, LoopJoinHandle};

/// Which loop of a [`run_per_core`]: `0..n`, in the order of the result.
///
/// Displays as `loop 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoopId(usize);

impl LoopId {
    /// The loop of this index (`0..n`); [`spawn_on`] refuses one out of
    /// range.
    pub fn new(index: usize) -> LoopId {
        LoopId(index)
    }

    /// The index, `0..n`.
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for LoopId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "loop {}", self.0)
    }
}

/// What a door carries to its loop.
enum Command {
    /// Runs on the loop thread, outside any coroutine: spawns one.
    Spawn(Box<dyn FnOnce() + Send>),
    /// PC3: a graceful shutdown with this reason.
    Shutdown(String),
    /// SO4: cancel this `spawn_on` coroutine.
    Cancel(u64),
}

/// The start gate (PC1).
struct Gate {
    /// Loops that have not opened their door (or failed) yet.
    waiting: usize,
    failed: bool,
}

/// What the loops of one run share (module doc).
struct Shared {
    n: usize,
    /// PC1, PC2: `None` before a loop opened its door and once closed.
    doors: Mutex<Vec<Option<Port<Command>>>>,
    gate: Mutex<Gate>,
    gate_cv: Condvar,
    /// Loops whose `f` has not ended (PC2); per loop, whether it ended.
    running: AtomicUsize,
    ended: Vec<AtomicBool>,
    /// PC3: sent once.
    shut: AtomicBool,
    /// PC4: the first loop that failed.
    cause: Mutex<Option<usize>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics under these locks but a value's drop, which never
    // runs under them: recover instead of poisoning every loop.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn new(n: usize) -> Shared {
        Shared {
            n,
            doors: Mutex::new((0..n).map(|_| None).collect()),
            gate: Mutex::new(Gate {
                waiting: n,
                failed: false,
            }),
            gate_cv: Condvar::new(),
            running: AtomicUsize::new(n),
            ended: (0..n).map(|_| AtomicBool::new(false)).collect(),
            shut: AtomicBool::new(false),
            cause: Mutex::new(None),
        }
    }

    /// PC1: this loop opened its door (or failed); waits for the others.
    /// True if every loop opened its door.
    fn pass_gate(&self, opened: bool) -> bool {
        let mut g = lock(&self.gate);
        g.waiting -= 1;
        g.failed |= !opened;
        self.gate_cv.notify_all();
        while g.waiting > 0 && !g.failed {
            g = self.gate_cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        !g.failed
    }

    /// PC2: loop `i`'s `f` ended (or never ran); idempotent.
    fn loop_ended(&self, i: usize) {
        if !self.ended[i].swap(true, Ordering::AcqRel)
            && self.running.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.close_doors();
        }
    }

    /// PC2: every door closes; each loop ends once its coroutines did.
    fn close_doors(&self) {
        let doors: Vec<_> = lock(&self.doors).iter_mut().map(Option::take).collect();
        drop(doors); // outside the lock: each drop delivers to its loop (RM1)
    }

    /// PC3.
    fn shutdown(&self, reason: &str) {
        if self.shut.swap(true, Ordering::AcqRel) {
            return;
        }
        let doors: Vec<_> = lock(&self.doors).iter_mut().map(Option::take).collect();
        for door in doors.iter().flatten() {
            door.send(Command::Shutdown(reason.to_owned()));
        }
    }

    /// PC4: loop `i` failed.
    fn failed(&self, i: usize) {
        {
            let mut cause = lock(&self.cause);
            if cause.is_none() {
                *cause = Some(i);
            }
        }
        self.shutdown(&format!("loop {i} failed"));
    }

    /// Hands `cmd` to loop `id`'s door.
    fn send(&self, id: LoopId, cmd: Command, what: &str) -> io::Result<()> {
        if id.0 >= self.n {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{what}: no {id} (the run has {} loops)", self.n),
            ));
        }
        // The port is cloned under the lock and used outside it, so a send
        // never waits for another loop's delivery.
        let door = lock(&self.doors)[id.0].clone();
        match door {
            Some(door) => {
                door.send(cmd);
                Ok(())
            }
            None => Err(io::Error::other(format!(
                "{what}: {id} no longer accepts coroutines (every loop's closure returned, \
                 or the loops are shutting down)"
            ))),
        }
    }
}

/// A handle on every loop of a [`run_per_core`]: `Send`, `Sync` and
/// cheap to clone, so plain threads can [`spawn_on`](Loops::spawn_on) a
/// loop and [`shutdown`](Loops::shutdown) them all. Dropping it does
/// nothing; it does not keep the loops alive.
///
/// # Examples
///
/// ```
/// use async_std_api::per_core::{LoopId, Loops};
/// use async_std_api::Builder;
///
/// let sums = Builder::new()
///     .threads(2)
///     .run_per_core(|id| {
///         let loops = Loops::current().unwrap();
///         assert_eq!(loops.len(), 2);
///         // Each loop asks the other one for a square.
///         let other = LoopId::new(1 - id.index());
///         let i = id.index() as u64 + 2;
///         loops.spawn_on(other, move || i * i).unwrap().join().unwrap()
///     })
///     .unwrap();
/// assert_eq!(sums, [4, 9]);
/// ```
#[derive(Clone)]
pub struct Loops {
    shared: Arc<Shared>,
}

impl fmt::Debug for Loops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loops")
            .field("len", &self.shared.n)
            .finish()
    }
}

thread_local! {
    /// The loop this thread runs, for the whole life of a loop thread.
    static CURRENT: RefCell<Option<(LoopId, Loops)>> = const { RefCell::new(None) };
}

/// The loop this thread runs, inside a [`run_per_core`]; `None` elsewhere
/// (a plain [`run`](crate::run), another thread).
pub fn current_loop() -> Option<LoopId> {
    CURRENT.with(|c| c.borrow().as_ref().map(|(id, _)| *id))
}

impl Loops {
    /// The loops of the [`run_per_core`] this thread runs in; `None`
    /// elsewhere.
    pub fn current() -> Option<Loops> {
        CURRENT.with(|c| c.borrow().as_ref().map(|(_, l)| l.clone()))
    }

    /// How many loops the run has.
    #[allow(clippy::len_without_is_empty)] // a run has at least one loop
    pub fn len(&self) -> usize {
        self.shared.n
    }

    /// Every loop's id, in order.
    pub fn ids(&self) -> impl Iterator<Item = LoopId> {
        (0..self.shared.n).map(LoopId)
    }

    /// Shuts every loop down gracefully (PC3): each loop's coroutines are
    /// cancelled (cause [`Shutdown`](crate::CancelCause::Shutdown), with
    /// `reason`), their cleanup runs, and [`run_per_core`] returns once
    /// every loop ended. From any thread; calling it again does nothing.
    ///
    /// What the run returns then is what [`run`](crate::run) returns after
    /// [`graceful_shutdown`](crate::graceful_shutdown), per loop: a loop
    /// whose closure caught the cancellation and returned keeps its value
    /// (D-25); one that ended cancelled is an error of kind
    /// [`ErrorKind::Cancelled`].
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::per_core::Loops;
    /// use async_std_api::{delay, Builder};
    ///
    /// let ends = Builder::new()
    ///     .threads(2)
    ///     .run_per_core(|id| {
    ///         if id.index() == 0 {
    ///             Loops::current().unwrap().shutdown("done");
    ///         }
    ///         // Both loops wait "forever", and are cancelled.
    ///         let c = delay(60_000).unwrap_err();
    ///         c.reason().unwrap().to_owned()
    ///     })
    ///     .unwrap();
    /// assert_eq!(ends, ["done", "done"]);
    /// ```
    pub fn shutdown(&self, reason: impl Into<String>) {
        self.shared.shutdown(&reason.into());
    }
}

/// Runs `f` on `n` loops, one per thread, each its own scheduler and
/// reactor built from the environment and config file (as [`run`](crate::run)
/// builds one), and returns every loop's value in loop order. Shorthand
/// for `Builder::new().threads(n).run_per_core(f)`: see
/// [`Builder::run_per_core`].
///
/// # Errors
///
/// As [`Builder::run_per_core`].
///
/// # Examples
///
/// ```
/// use async_std_api::per_core::run_per_core;
/// use async_std_api::spawn;
///
/// let values = run_per_core(3, |id| spawn(move || id.index() * 10).join().unwrap()).unwrap();
/// assert_eq!(values, [0, 10, 20]);
/// ```
#[track_caller]
pub fn run_per_core<F, T>(n: usize, f: F) -> Result<Vec<T>, Error>
where
    F: Fn(LoopId) -> T + Send + Sync + 'static,
    T: Send + 'static,
{
    Builder::new().threads(n).run_per_core(f)
}

impl Builder {
    /// Runs `f` on [`threads`](Builder::threads) loops (one per core by
    /// default), one per thread, each its own scheduler and reactor built
    /// from this configuration exactly as [`run`](Builder::run) builds one;
    /// on each, `f(id)` is the main coroutine. Returns once every loop
    /// ended, with every loop's value in loop order.
    ///
    /// - The loops reach each other through [`spawn_on`] and
    ///   [`LoopSender`]; everything else stays on its loop.
    /// - A loop whose `f` returned keeps serving [`spawn_on`] until every
    ///   loop's `f` returned; then each loop ends as [`run`](crate::run)
    ///   does, once its coroutines finished.
    /// - [`Loops::shutdown`] (or SIGINT/SIGTERM with
    ///   [`shutdown_on_signals`](Builder::shutdown_on_signals)) shuts every
    ///   loop down gracefully.
    /// - Loop `i` is pinned to core `i` with [`pin`](Builder::pin).
    ///
    /// # Errors
    ///
    /// The first loop's error, its message prefixed with `loop <i>: `: a
    /// loop that could not start (configuration, plugins; then no loop runs
    /// `f`), an unhandled failure, a deadlock, or a loop that ended
    /// cancelled after a shutdown. A failure in one loop shuts the others
    /// down gracefully, and it is the error returned. Also
    /// [`ErrorKind::Config`] for zero threads, and
    /// [`ErrorKind::AlreadyRunning`] on a runtime's thread (waiting for the
    /// loops would stop that loop).
    ///
    /// # Panics
    ///
    /// If `f` panics on a loop, the other loops are shut down gracefully,
    /// and once every loop ended the first panic resumes here.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{spawn, Builder};
    ///
    /// let doubled = Builder::new()
    ///     .threads(2)
    ///     .run_per_core(|id| spawn(move || 2 * id.index()).join().unwrap())
    ///     .unwrap();
    /// assert_eq!(doubled, [0, 2]);
    /// ```
    #[track_caller]
    pub fn run_per_core<F, T>(self, f: F) -> Result<Vec<T>, Error>
    where
        F: Fn(LoopId) -> T + Send + Sync + 'static,
        T: Send + 'static,
    {
        let at = Location::caller();
        if with_runtime(|_| ()).is_some() {
            return Err(Error::new(
                ErrorKind::AlreadyRunning,
                "run_per_core called on a runtime's thread: waiting for the loops would stop this loop",
            ));
        }
        let n = match self.per_core.threads {
            Some(n) => n,
            None => thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if n == 0 {
            return Err(Error::new(
                ErrorKind::Config,
                "run_per_core: zero threads: a run needs at least one loop",
            ));
        }
        let shared = Arc::new(Shared::new(n));
        let f = Arc::new(f);
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let (sh, f, builder) = (shared.clone(), f.clone(), self.clone());
            let spawned = thread::Builder::new()
                .name(format!("async-loop-{i}"))
                .spawn(move || run_loop(i, builder, sh, f, at));
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // The loops already started never pass the gate (PC1).
                    for _ in i..n {
                        shared.pass_gate(false);
                    }
                    for t in threads {
                        let _ = t.join();
                    }
                    return Err(Error::new(
                        ErrorKind::Plugin,
                        format!("run_per_core: cannot start the thread of loop {i}: {e}"),
                    ));
                }
            }
        }
        let results: Vec<_> = threads
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|p| Ended::Panicked(p)))
            .collect();
        let cause = *lock(&shared.cause);
        collect(results, cause)
    }
}

/// How one loop ended.
enum Ended<T> {
    Value(T),
    /// Did not run `f`: another loop could not start (PC1).
    NotRun,
    Failed(Error),
    Panicked(Box<dyn Any + Send>),
}

/// PC4: every value, or the failing loop's error, or the first panic.
fn collect<T>(results: Vec<Ended<T>>, cause: Option<usize>) -> Result<Vec<T>, Error> {
    let mut values = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    let mut panic = None;
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ended::Value(v) => values.push(v),
            Ended::NotRun => {}
            Ended::Failed(e) => errors.push((i, e)),
            Ended::Panicked(p) => {
                panic.get_or_insert(p);
            }
        }
    }
    if let Some(p) = panic {
        resume_unwind(p);
    }
    if errors.is_empty() {
        return Ok(values);
    }
    // The loop that started the shutdown, else the first that did not just
    // end cancelled by it, else the first.
    let pick = errors
        .iter()
        .position(|(i, _)| Some(*i) == cause)
        .or_else(|| {
            errors
                .iter()
                .position(|(_, e)| e.kind() != ErrorKind::Cancelled)
        })
        .unwrap_or(0);
    let (i, e) = errors.swap_remove(pick);
    Err(e.in_loop(i))
}

/// One loop thread: its run, its door, the gate (PC1), its end (PC2, PC4).
fn run_loop<F, T>(
    i: usize,
    mut builder: Builder,
    shared: Arc<Shared>,
    f: Arc<F>,
    at: &'static Location<'static>,
) -> Ended<T>
where
    F: Fn(LoopId) -> T + Send + Sync + 'static,
    T: Send + 'static,
{
    let id = LoopId(i);
    let loops = Loops {
        shared: shared.clone(),
    };
    CURRENT.with(|c| *c.borrow_mut() = Some((id, loops)));
    if builder.per_core.pin {
        pin::to_core(i);
    }
    builder.per_core.threads = None;
    builder.explicit.events = Some(failure_hook(i, &shared, builder.explicit.events.take()));
    let signals = builder.per_core.signals && i == 0;
    let gated = Arc::new(AtomicBool::new(false));
    let (s, g) = (shared.clone(), gated.clone());
    let run = catch_unwind(AssertUnwindSafe(move || {
        builder.run_at(
            move || {
                let door = Rc::new(DoorState::default());
                let opened = open_door(i, &s, signals, &door);
                g.store(true, Ordering::Release);
                if !s.pass_gate(opened.is_ok()) {
                    s.loop_ended(i);
                    return opened.err().map(Err);
                }
                let value = {
                    let _end = EndGuard(&s, i);
                    f(id)
                };
                door.wait_closed();
                Some(Ok(value))
            },
            at,
        )
    }));
    if !gated.load(Ordering::Acquire) {
        shared.pass_gate(false); // it never reached the gate: it could not start
    }
    shared.loop_ended(i);
    let ended = match run {
        Ok(Ok(Some(Ok(v)))) => return Ended::Value(v),
        Ok(Ok(None)) => return Ended::NotRun,
        Ok(Ok(Some(Err(e)))) | Ok(Err(e)) => Ended::Failed(e),
        Err(p) => Ended::Panicked(p),
    };
    shared.failed(i);
    ended
}

/// PC2: `f` ended on loop `i`, returned or unwound.
struct EndGuard<'a>(&'a Shared, usize);

impl Drop for EndGuard<'_> {
    fn drop(&mut self) {
        self.0.loop_ended(self.1);
    }
}

/// A loop's side of its door: whether it closed, who waits for that, and
/// the signal watcher to cancel then (PC2).
#[derive(Default)]
struct DoorState {
    closed: Cell<bool>,
    waiter: RefCell<Option<Rc<CoroState>>>,
    watcher: RefCell<Option<Coroutine>>,
}

impl DoorState {
    /// PC2: the doors closed.
    fn close(&self) {
        self.closed.set(true);
        if let Some(c) = self.watcher.borrow_mut().take() {
            c.cancel();
        }
        if let Some(w) = self.waiter.borrow_mut().take() {
            runtime::wake(&w);
        }
    }

    /// PC2: the main coroutine, once `f` returned, keeps its loop running
    /// (a scheduler ends with its last coroutine) until the doors close. A
    /// cancellation seen meanwhile is put back, so the loop's main ends as
    /// `f` left it (D-11, D-25).
    #[track_caller]
    fn wait_closed(&self) {
        let at = Location::caller();
        with_me("run_per_core", |rt, me| {
            let mut cancelled = false;
            while !self.closed.get() {
                *self.waiter.borrow_mut() = Some(me.clone());
                cancelled |= suspend_once(rt, me, WAIT_DOORS, at).is_err();
            }
            self.waiter.borrow_mut().take();
            if cancelled {
                me.repend_cancel();
            }
        });
    }
}

const WAIT_DOORS: &[u8] =
    b"run_per_core: the other loops' closures (this loop serves spawn_on until they return)";

/// PC1: registers loop `i`'s door (on its loop thread, in its main
/// coroutine), and, on loop 0 with `signals`, the signal watcher.
fn open_door(i: usize, shared: &Shared, signals: bool, door: &Rc<DoorState>) -> Result<(), Error> {
    let d = door.clone();
    let port = with_runtime(|rt| {
        let label = rt.reactor.label().to_owned();
        rt.remote
            .port(move |cmd: Option<Command>| match cmd {
                Some(Command::Spawn(job)) => job(),
                Some(Command::Shutdown(reason)) => graceful_shutdown_with(reason),
                Some(Command::Cancel(ticket)) => spawn_on::cancel_here(ticket),
                None => d.close(),
            })
            .map_err(|_| {
                Error::new(
                    ErrorKind::Plugin,
                    format!(
                        "reactor \"{label}\" lacks AA_CAP_TRIGGER: the loops of run_per_core cannot reach each other"
                    ),
                )
            })
    })
    .expect("the main coroutine runs in a runtime")?;
    lock(&shared.doors)[i] = Some(port);
    if signals {
        let loops = Loops::current().expect("set for the loop thread");
        // Made before the gate (PC1): no loop runs `f` before the signals
        // are watched.
        let sig = crate::signal::any(&[libc::SIGINT, libc::SIGTERM])
            .map_err(|e| Error::new(ErrorKind::Plugin, format!("shutdown_on_signals: {e}")))?;
        let watching = spawn_in(&global_scope(), move || {
            // Cancelled when the doors close (PC2): nothing to do then.
            if sig.wait().is_ok() {
                let n = sig.received().unwrap_or(0);
                loops.shutdown(format!("signal {n}"));
            }
        })
        .map_err(|e| Error::new(ErrorKind::Plugin, format!("shutdown_on_signals: {e}")))?;
        *door.watcher.borrow_mut() = Some(watching.coroutine());
    }
    Ok(())
}

/// PC4: the runtime's event handler for loop `i`: the user's, then a
/// shutdown of every loop on an unhandled failure.
fn failure_hook(i: usize, shared: &Arc<Shared>, user: Option<Handler>) -> Handler {
    let shared = shared.clone();
    Handler(Arc::new(move |e: &Event| {
        match &user {
            Some(h) => (h.0)(e),
            // Installing a handler silences the standard-error fallback:
            // keep it for a program that installed none.
            None if !events::subscribed() => events::report(None, e.clone()),
            None => {}
        }
        if matches!(e, Event::UnhandledFailure { .. }) {
            shared.failed(i);
        }
    }))
}
