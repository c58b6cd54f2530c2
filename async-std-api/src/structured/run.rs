//! Running a program: [`run`] and [`Builder::run`] build a core runtime,
//! give it the record of this layer (the global scope, the zombie policy),
//! spawn the main coroutine into the global scope, run the loop, tear down
//! and turn how the run ended into `run`'s result.
//!
//! Invariants:
//! - **RN1** The global scope exists for the whole run (made before the
//!   main coroutine, which is its first member); graceful shutdown and the
//!   zombie policy hang off it, and the zombie timers are dropped before the
//!   runtime's teardown (R5 in `core::runtime`).
//! - **RN2** What `run` returns, in order: a panic of the main coroutine
//!   resumes; a plugin that could not start the main coroutine is
//!   [`ErrorKind::Plugin`]; an unhandled failure is [`ErrorKind::Failed`]
//!   (carrying it); a deadlock [`ErrorKind::Deadlock`]; a scheduler error
//!   [`ErrorKind::Plugin`]; otherwise the main coroutine's value, or
//!   [`ErrorKind::Cancelled`].

use std::cell::Cell;
use std::panic::Location;
use std::rc::Rc;

use async_abi::AA_E_DEADLOCK;

use super::scope::state::ScopeState;
use super::zombie::Zombies;
use crate::core::id::ScopeId;
use crate::core::runtime::{self, status_text, Builder, Error, ErrorKind, Explicit, Runtime};
use crate::core::state::{Body, BodyResult, Outcome};

/// This layer's record of a runtime (R5 in `core::runtime`).
pub(crate) struct Structure {
    /// The global scope: the root of every scope (the main coroutine's).
    pub(crate) global: Rc<ScopeState>,
    next_scope: Cell<u64>,
    /// The zombie policy (`zombie`).
    pub(crate) zombies: Zombies,
}

/// This layer's record of `rt`.
#[inline]
pub(crate) fn structure(rt: &Runtime) -> &Structure {
    rt.upper::<Structure>()
}

/// The global scope of `rt` (a new reference).
#[inline]
pub(crate) fn global(rt: &Runtime) -> Rc<ScopeState> {
    structure(rt).global.clone()
}

/// A new scope id (the global scope is 1).
pub(crate) fn next_scope_id(rt: &Runtime) -> ScopeId {
    let next = &structure(rt).next_scope;
    let id = next.get();
    next.set(id + 1);
    ScopeId(id)
}

/// Runs `f` as the main coroutine of a new runtime on this thread and
/// returns its value once every coroutine has finished.
///
/// The configuration comes from the environment (`ASYNC_SCHEDULER`,
/// `ASYNC_REACTOR`, ...), a config file (`ASYNC_CONFIG`), or the embedded
/// defaults; use [`Builder`] to set it in code. Coroutines still running
/// when `f` returns run to completion before `run` returns (REF-3); zombies
/// get the zombie timeout, then are cancelled (R-S10). `f` runs in the
/// global scope: a plain [`spawn`](crate::spawn) from it puts coroutines there.
///
/// # Errors
///
/// - [`ErrorKind::Config`], [`ErrorKind::Load`], [`ErrorKind::Plugin`]: the
///   configuration is invalid, a plugin cannot be loaded, or refuses to
///   start; returned before `f` runs, as one line naming the value and the
///   reason;
/// - [`ErrorKind::Deadlock`]: coroutines waited with nothing left to wake
///   them (the scheduler logged each of them); they were resumed with
///   [`Cancelled`](crate::Cancelled) (cause [`CancelCause::Deadlock`](crate::CancelCause::Deadlock));
/// - [`ErrorKind::AlreadyRunning`]: a runtime is already running on this
///   thread ("a runtime is already running on this thread");
/// - [`ErrorKind::Failed`]: a coroutine failed and nothing handled it (the
///   failure reached the global scope and started graceful shutdown):
///   `unhandled failure: coroutine 3 panicked: boom`, with `(and N more
///   failures)` if more happened during the shutdown; [`Error::failure`]
///   is that failure;
/// - [`ErrorKind::Cancelled`]: the main coroutine ended cancelled, without
///   a value: its own cancellation was still undelivered when it returned
///   (after [`graceful_shutdown`](crate::graceful_shutdown), main that caught the cancellation and
///   returned keeps its value, D-25), or it returned its cancellation.
///
/// # Panics
///
/// If `f` panics, the other coroutines are unwound (their locals are
/// dropped), the runtime is torn down, and the panic resumes here.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn};
///
/// let sum = run(|| {
///     let handles: Vec<_> = (1..=3).map(|i| spawn(move || i * 10)).collect();
///     handles.into_iter().map(|h| h.join().unwrap()).sum::<i32>()
/// })
/// .unwrap();
/// assert_eq!(sum, 60);
/// ```
#[track_caller]
pub fn run<F, T>(f: F) -> Result<T, Error>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    Builder::new().run(f)
}

impl Builder {
    /// Runs `f` as the main coroutine of a new runtime and returns its value
    /// once every coroutine has finished. See [`run`].
    ///
    /// # Errors
    ///
    /// As [`run`]: configuration, load and start-up errors (before `f`
    /// runs), a deadlock, an unhandled failure, or a runtime already
    /// running on this thread.
    ///
    /// # Panics
    ///
    /// If `f` panics, the other coroutines are unwound, the runtime is torn
    /// down and the panic is resumed here.
    #[track_caller]
    pub fn run<F, T>(self, f: F) -> Result<T, Error>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        if let Some(n) = self.per_core.threads.filter(|&n| n != 1) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("Builder::threads({n}) needs Builder::run_per_core: run starts one loop"),
            ));
        }
        run_with(&self.explicit, f, Location::caller())
    }

    /// [`run`](Builder::run) with the main coroutine's spawn location given
    /// (each loop of `run_per_core` names the caller of `run_per_core`).
    pub(crate) fn run_at<F, T>(self, f: F, location: &'static Location<'static>) -> Result<T, Error>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        run_with(&self.explicit, f, location)
    }
}

/// Starts the runtime, runs `f` as the main coroutine in the global scope,
/// tears down and reads the result (RN1, RN2).
fn run_with<F, T>(
    explicit: &Explicit,
    f: F,
    location: &'static Location<'static>,
) -> Result<T, Error>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let mut rt = Runtime::start(explicit)?;
    rt.set_upper(Box::new(Structure {
        global: ScopeState::new(ScopeId(1), None, location),
        next_scope: Cell::new(2),
        zombies: Zombies::new(rt.zombie_timeout),
    }));
    // R1: installed for the run and the teardown, cleared on every path.
    let (main, status, why) = runtime::installed(&rt, || {
        let body: Body = Box::new(move || BodyResult::Value(Box::new(f())));
        let main = rt.spawn_main(body, location);
        let status = match &main {
            Ok(m) => {
                structure(&rt).global.add_member(m);
                rt.sched.run()
            }
            Err(_) => 0,
        };
        // A failed run: the plugins' own words, read before they go.
        let why = (status < 0 && status != AA_E_DEADLOCK).then(|| rt.plugin_failure(status));
        // RN1: the zombie timers go before the reactor does.
        structure(&rt).zombies.clear();
        rt.teardown();
        (main, status, why)
    });
    rt.finish();
    let main = main?;
    if let Some(f) = rt.lifecycle.failure.borrow().clone() {
        return Err(Error::failed(f));
    }
    if status == AA_E_DEADLOCK || rt.lifecycle.deadlock.get() {
        return Err(Error::new(
            ErrorKind::Deadlock,
            "deadlock: coroutines waited with nothing left to wake them",
        ));
    }
    if status < 0 {
        let why = why.unwrap_or_else(|| {
            format!(
                "scheduler {} failed: {}",
                rt.scheduler_label,
                status_text(status)
            )
        });
        return Err(Error::new(ErrorKind::Plugin, why));
    }
    let value = main.with_outcome(|o| match o {
        Outcome::Value(v) => Ok(v.take()),
        Outcome::Cancelled(c) => Err((**c).clone()),
        Outcome::Failed(_) => Ok(None),
    });
    match value {
        Some(Ok(Some(v))) => match v.downcast::<T>() {
            Ok(v) => Ok(*v),
            Err(_) => unreachable!("the main coroutine's value has run's type"),
        },
        Some(Err(c)) => Err(Error::new(
            ErrorKind::Cancelled,
            format!("the main coroutine ended cancelled: {c}"),
        )),
        _ => Err(Error::new(
            ErrorKind::Plugin,
            "the main coroutine finished without a value",
        )),
    }
}
