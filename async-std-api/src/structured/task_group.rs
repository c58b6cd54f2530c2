//! [`TaskGroup`]: an explicit group of tasks with their results and errors
//! kept by ordinal, the RFC's `Async\TaskGroup` (R-TG1 .. R-TG6).
//!
//! Owns: the group's record (`GroupCore`): its scope handle, the set of
//! running explicit tasks, the results and errors of the finished ones, the
//! order they finished in, and the waiters.
//!
//! Invariants:
//! - **TG1** Membership is O(1): a task is inserted in the `tasks` slab
//!   when it is created (before it is queued, so it cannot finish first)
//!   and removed when it finishes; its key is kept in the task's own record
//!   (`CoroExtra::group`), never searched for.
//! - **TG2** A task's finish (`task/spawn.rs` SP2) calls
//!   `GroupSink::task_finished` once, after its outcome is stored: the group
//!   records the value (for tasks spawned by [`TaskGroup::spawn`]) or the
//!   error under the task's ordinal, appends the ordinal to the finish
//!   order, and wakes every group waiter. If a waiter was registered at
//!   that moment the task's failure is consumed, as by a `join` (D-3).
//! - **TG3** Ordinals count the tasks spawned since the group was made or
//!   since the last [`TaskGroup::dispose_results`], from 0; running tasks
//!   are renumbered from 0 by `dispose_results` (in spawn order), so new
//!   ones never collide with them (R-TG3).
//! - **TG4** `cancelled` is set once, by [`TaskGroup::cancel`] /
//!   [`TaskGroup::dispose`] or when the group's scope is found cancelled;
//!   then the group is closed: [`TaskGroup::spawn`] refuses.
//! - **TG5** With a concurrency limit (REF-19), `queue` holds closures that
//!   have not started (no coroutine, no scope membership), with their
//!   ordinals; one starts each time a started task finishes and a slot is
//!   free (from `task_finished`, in the finishing coroutine); cancelling or
//!   disposing the group drops them unstarted.
//!
//! Everything is touched on the loop thread only (`Rc`, `!Send`).
//!
//! Drop order: dropping the [`TaskGroup`] handle disposes the group (its
//! tasks are cancelled without warnings), and its scope too if the group
//! held the only owning handle of it or was made `bounded` (R-TG5).
//!
//! Decisions (ids defined in `docs/semantics.md`):
//! - The RFC's `captureResults` is [`TaskGroupBuilder::capture_results`];
//!   without it, `join` and `all` return no values (the RFC's `NULL`) and a
//!   value is kept only once [`TaskGroup::race`] or
//!   [`TaskGroup::first_result`] was asked for (their RFC examples race a
//!   group that does not capture). Values are cloned out by `join`, `all`
//!   and `first_result` (PHP arrays are copies), moved out by `race`.
//! - Awaiting the group ([`TaskGroup::join`]) waits for every explicit
//!   task, then reports: the results by ordinal; or all the errors by
//!   ordinal in one [`TaskGroupError`] of kind `Failed` whatever their
//!   number (P-12); or, if no task failed but the group or its scope was
//!   cancelled, kind `Cancelled` ("task group was cancelled") carrying the
//!   failure that cancelled the scope (R-TG6, D-14).
//! - A coroutine awaiting the group is *not* a responsibility point of the
//!   group's scope (D-27): a failure of an implicit coroutine cancels the
//!   scope, and the await reports "task group was cancelled" with that
//!   failure as its cause (R-TG6, D-14); but a cancellation that merely
//!   carries the failure does not consume it, so the failure itself goes on
//!   through the error flow to the scope's parent (its exception handler,
//!   and finally graceful shutdown).
//! - A task spawned through [`spawn_in`](crate::spawn_in)`(&group, f)` (the
//!   group as a [`SpawnStrategy`]) is an explicit task, but its value
//!   belongs to its [`JoinHandle`](crate::JoinHandle): the group records
//!   only its errors.
//! - Combinators and `race` never cancel the other tasks (D-7).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::marker::PhantomData;
use std::panic::Location;
use std::rc::{Rc, Weak};

use super::scope::{Scope, ScopeError, ScopeRef};
use super::spawn::{spawn_in, spawn_in_at, spawn_try_in};
use super::strategy::{ScopeProvider, SpawnStrategy};
use crate::core::cancel::cancel;
use crate::core::coroutine::Coroutine;
use crate::core::error::{Cancelled, JoinError};
use crate::core::failure::Failure;
use crate::core::runtime::with_runtime;
use crate::core::slab::Slab;
use crate::core::state::{CoroState, GroupSink, Outcome, IN_GROUP};
use crate::core::wait::{checkpoint, outside_runtime, suspend_once, with_me};
use crate::core::waiters::{Notify, NotifySubscription};

/// One running explicit task (TG1).
struct Task {
    state: Rc<CoroState>,
    ordinal: usize,
    /// Spawned by [`TaskGroup::spawn`]: the group owns its value.
    owns_value: bool,
}

/// The group's record, shared by the handle, the triggers and the tasks.
pub(crate) struct GroupCore<T: 'static> {
    /// The owning handle when the group made its scope or was given a
    /// [`Scope`]; `None` once disposed.
    owner: RefCell<Option<Scope>>,
    scope: ScopeRef,
    capture: bool,
    bounded: bool,
    /// A `race` or `first_result` was asked for: values are kept.
    wants_values: Cell<bool>,
    tasks: RefCell<Slab<Task>>,
    next_ordinal: Cell<usize>,
    results: RefCell<BTreeMap<usize, T>>,
    errors: RefCell<BTreeMap<usize, JoinError>>,
    /// Ordinals in the order their tasks finished (since `dispose_results`).
    finished: RefCell<Vec<usize>>,
    /// How far `race` has read `finished`.
    race_cursor: Cell<usize>,
    /// TG4: the reason given to `cancel`, once cancelled.
    cancelled: RefCell<Option<Option<String>>>,
    /// Set by `spawn` around its `spawn_in` (the value is the group's).
    spawning_own: Cell<bool>,
    notify: Notify,
    waiters: Cell<usize>,
    /// REF-19: at most this many started tasks; the others wait in `queue`.
    limit: Option<usize>,
    /// TG5: tasks not started yet, with their ordinals, oldest first.
    queue: RefCell<VecDeque<Queued<T>>>,
    /// The ordinal of the queued task being started (TG5).
    starting: Cell<Option<usize>>,
    /// The record itself, to start queued tasks from `task_finished`.
    this: Weak<GroupCore<T>>,
}

/// How a queued task is started (TG5).
type StartFn<T> = Box<dyn FnOnce(&Own<T>) -> Result<Coroutine, ScopeError>>;

/// A queued task (TG5): its ordinal and how to start it.
struct Queued<T: 'static> {
    ordinal: usize,
    start: StartFn<T>,
}

/// The group as the strategy its queued tasks are spawned with (the public
/// handle's `Drop` disposes the group, so it cannot be made here).
struct Own<T: 'static>(Rc<GroupCore<T>>);

impl<T: 'static> ScopeProvider for Own<T> {
    fn provide_scope(&self) -> Option<ScopeRef> {
        Some(self.0.scope.clone())
    }
}

impl<T: 'static> SpawnStrategy for Own<T> {
    fn before_coroutine_enqueue(&self, coroutine: &Coroutine, _scope: &ScopeRef) {
        self.0.register(coroutine);
    }
}

impl<T: 'static> GroupSink for GroupCore<T> {
    fn task_finished(&self, key: usize, task: &CoroState) -> bool {
        // TG2.
        let Some(entry) = self.tasks.borrow_mut().remove(key) else {
            return self.waiters.get() > 0;
        };
        let ordinal = entry.ordinal;
        let id = task.id();
        let keep = entry.owns_value && (self.capture || self.wants_values.get());
        let recorded = task.with_outcome(|o| match o {
            Outcome::Value(v) => {
                if keep {
                    if let Some(b) = v.take() {
                        match b.downcast::<T>() {
                            Ok(t) => return Some(Ok(*t)),
                            Err(b) => *v = Some(b),
                        }
                    }
                }
                None
            }
            Outcome::Failed(f) => Some(Err(JoinError::failed(id, f.clone()))),
            Outcome::Cancelled(c) => Some(Err(JoinError::cancelled_with(id, (**c).clone()))),
        });
        match recorded.flatten() {
            Some(Ok(v)) => {
                self.results.borrow_mut().insert(ordinal, v);
            }
            Some(Err(e)) => {
                self.errors.borrow_mut().insert(ordinal, e);
            }
            None => {}
        }
        self.finished.borrow_mut().push(ordinal);
        let awaited = self.waiters.get() > 0;
        self.start_queued();
        self.notify.wake_all();
        awaited
    }
}

impl<T: 'static> GroupCore<T> {
    fn running(&self) -> usize {
        self.tasks.borrow().len()
    }

    /// Started and queued tasks not finished.
    fn unfinished(&self) -> usize {
        self.tasks.borrow().len() + self.queue.borrow().len()
    }

    fn has_slot(&self) -> bool {
        self.limit.is_none_or(|n| self.running() < n)
    }

    /// TG1: registers a created coroutine as an explicit task.
    fn register(&self, coroutine: &Coroutine) {
        let ordinal = match self.starting.take() {
            Some(o) => o,
            None => {
                let o = self.next_ordinal.get();
                self.next_ordinal.set(o + 1);
                o
            }
        };
        let state = coroutine.state.clone();
        let key = self.tasks.borrow_mut().insert(Task {
            state: state.clone(),
            ordinal,
            owns_value: self.spawning_own.get(),
        });
        let Some(me) = self.this.upgrade() else {
            return;
        };
        let sink: Rc<dyn GroupSink> = me;
        state.with_extra(|x| x.group = Some((sink, key)));
        state.set_flag(IN_GROUP, true);
    }

    /// TG5: starts queued tasks while there is a free slot; one whose
    /// scope closed meanwhile never starts.
    fn start_queued(&self) {
        let Some(me) = self.this.upgrade() else {
            return;
        };
        let own = Own(me);
        while self.has_slot() && !self.is_cancelled() {
            let Some(q) = self.queue.borrow_mut().pop_front() else {
                break;
            };
            self.starting.set(Some(q.ordinal));
            self.spawning_own.set(true);
            let _ = (q.start)(&own);
            self.spawning_own.set(false);
            self.starting.set(None);
        }
    }

    /// TG4: the group's own cancellation, or its scope's.
    fn is_cancelled(&self) -> bool {
        self.cancelled.borrow().is_some() || self.scope.is_cancelled()
    }

    fn cancel_error(&self) -> TaskGroupError {
        let reason = self.cancelled.borrow().clone().flatten();
        let failure = self.scope.state.failure();
        TaskGroupError::new(Kind::Cancelled {
            reason,
            cause: failure,
        })
    }

    /// Cancels the running tasks with `reason` (no warnings, R-TG5).
    fn cancel_tasks(&self, reason: Option<String>) {
        // TG5: queued tasks never start.
        let queued = std::mem::take(&mut *self.queue.borrow_mut());
        drop(queued);
        {
            let mut c = self.cancelled.borrow_mut();
            if c.is_none() {
                *c = Some(reason.clone());
            }
        }
        let tasks: Vec<Rc<CoroState>> = self
            .tasks
            .borrow()
            .iter()
            .map(|t| t.state.clone())
            .collect();
        for t in tasks {
            cancel(&t, reason.clone());
        }
    }

    fn release_scope(&self) {
        let owner = self.owner.borrow_mut().take();
        let sole = owner.as_ref().is_some_and(Scope::is_sole_owner);
        if sole || (self.bounded && owner.is_some()) {
            self.scope.dispose();
        }
        if let Some(owner) = owner {
            if sole {
                // Already disposed: dropping the last owner does nothing more.
                drop(owner.detach());
            }
        }
    }

    /// A waiter's loop over the group (W1-W4 of `task::wait`): `ready`
    /// is asked after every wake-up; the waiter is counted as an await of
    /// the group (TG2), not as a responsibility point of its scope (D-27).
    #[track_caller]
    fn wait<R>(
        &self,
        what: &str,
        at: &'static Location<'static>,
        mut ready: impl FnMut() -> Option<R>,
    ) -> Result<R, TaskGroupError> {
        let me_ptr = self as *const Self as *const ();
        with_me("TaskGroup::join", |rt, me| {
            checkpoint(me).map_err(|c| TaskGroupError::new(Kind::Interrupted(c)))?;
            if let Some(r) = ready() {
                return Ok(r);
            }
            if me.has_flag(IN_GROUP) {
                let own = me.with_extra(|x| {
                    x.group
                        .as_ref()
                        .is_some_and(|(g, _)| Rc::as_ptr(g) as *const () == me_ptr)
                });
                if own {
                    return Err(TaskGroupError::new(Kind::OwnTask));
                }
            }
            self.waiters.set(self.waiters.get() + 1);
            let _count = WaiterCount(&self.waiters);
            let _sub = NotifySubscription::new(&self.notify, me);
            loop {
                suspend_once(rt, me, what.as_bytes(), at)
                    .map_err(|c| TaskGroupError::new(Kind::Interrupted(c)))?;
                if let Some(r) = ready() {
                    return Ok(r);
                }
            }
        })
    }

    /// The outcome of awaiting the group once no task runs (R-TG2).
    fn settle(&self) -> Result<(), TaskGroupError> {
        let errors = self.errors.borrow();
        let failed = errors.values().any(JoinError::is_failed);
        if failed {
            return Err(TaskGroupError::failed(errors.clone()));
        }
        if self.is_cancelled() {
            return Err(self.cancel_error());
        }
        if !errors.is_empty() {
            return Err(TaskGroupError::failed(errors.clone()));
        }
        Ok(())
    }
}

/// Counts a waiter of the group while it waits (TG2).
struct WaiterCount<'a>(&'a Cell<usize>);

impl Drop for WaiterCount<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

/// How to make a [`TaskGroup`]: the RFC's constructor arguments `scope`,
/// `captureResults` and `bounded`.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, Scope, TaskGroup};
///
/// run(|| {
///     let scope = Scope::new();
///     let group = TaskGroup::<i32>::builder()
///         .scope(&scope)
///         .capture_results(true)
///         .build();
///     group.spawn(|| 1).unwrap();
///     assert_eq!(group.join().unwrap().into_values().collect::<Vec<_>>(), [1]);
/// })
/// .unwrap();
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until build() is called"]
pub struct TaskGroupBuilder<T> {
    scope: Option<Scope>,
    capture: bool,
    bounded: bool,
    concurrency: Option<usize>,
    _t: PhantomData<fn() -> T>,
}

impl<T: 'static> TaskGroupBuilder<T> {
    /// Runs the tasks in `scope` (the group keeps an owning handle to it);
    /// without it the group makes its own new scope.
    pub fn scope(mut self, scope: &Scope) -> Self {
        self.scope = Some(scope.clone());
        self
    }

    /// Keeps each task's value by ordinal, for [`TaskGroup::join`] and
    /// [`TaskGroup::all`] (the RFC's `captureResults`; default off).
    pub fn capture_results(mut self, on: bool) -> Self {
        self.capture = on;
        self
    }

    /// Disposing (or dropping) the group disposes its scope even if others
    /// own it too (the RFC's `bounded`; default off).
    pub fn bounded(mut self, on: bool) -> Self {
        self.bounded = on;
        self
    }

    /// At most `n` tasks run at once (REF-19): [`TaskGroup::queue`] holds
    /// the others as closures that have not started (no coroutine yet)
    /// until a task finishes. [`TaskGroup::spawn`] always starts at once
    /// (and counts).
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use async_std_api::{delay, run, TaskGroup};
    ///
    /// run(|| {
    ///     let group = TaskGroup::<()>::builder().concurrency(2).build();
    ///     let (now, peak) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    ///     for _ in 0..5 {
    ///         let (now, peak) = (now.clone(), peak.clone());
    ///         group.queue(move || {
    ///             now.set(now.get() + 1);
    ///             peak.set(peak.get().max(now.get()));
    ///             delay(2).unwrap();
    ///             now.set(now.get() - 1);
    ///         })
    ///         .unwrap();
    ///     }
    ///     assert_eq!((group.running(), group.queued()), (2, 3));
    ///     group.join().unwrap();
    ///     assert_eq!(peak.get(), 2);
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn concurrency(mut self, n: usize) -> Self {
        assert!(n > 0, "a task group's concurrency limit must be at least 1");
        self.concurrency = Some(n);
        self
    }

    /// Makes the group.
    ///
    /// # Panics
    ///
    /// Outside a runtime, when it has to make its own scope.
    #[track_caller]
    pub fn build(self) -> TaskGroup<T> {
        // A `match`, not `unwrap_or_else(Scope::new)`: called from inside
        // another function, `Scope::new` would name that function's line
        // in its panic instead of the caller's.
        let owner = match self.scope {
            Some(s) => s,
            None => {
                if with_runtime(|_| ()).is_none() {
                    outside_runtime("TaskGroup::new");
                }
                Scope::new()
            }
        };
        let scope = ScopeRef::clone(&owner);
        let limit = self.concurrency;
        TaskGroup {
            core: Rc::new_cyclic(|this| GroupCore {
                owner: RefCell::new(Some(owner)),
                scope,
                capture: self.capture,
                bounded: self.bounded,
                wants_values: Cell::new(false),
                tasks: RefCell::new(Slab::new()),
                next_ordinal: Cell::new(0),
                results: RefCell::new(BTreeMap::new()),
                errors: RefCell::new(BTreeMap::new()),
                finished: RefCell::new(Vec::new()),
                race_cursor: Cell::new(0),
                cancelled: RefCell::new(None),
                spawning_own: Cell::new(false),
                notify: Notify::new(),
                waiters: Cell::new(0),
                limit,
                queue: RefCell::new(VecDeque::new()),
                starting: Cell::new(None),
                this: this.clone(),
            }),
        }
    }
}

/// An explicit group of tasks whose results and errors are kept by
/// ordinal: the RFC's `Async\TaskGroup`.
///
/// Like a tokio `JoinSet` or a Swift task group, with the RFC's split
/// between *explicit* tasks (spawned with [`spawn`](TaskGroup::spawn): the
/// group awaits them and keeps their results) and *implicit* ones (what
/// those tasks spawn: they go to the group's scope, not the group, R-TG1).
/// `T` is the tasks' value type.
///
/// Dropping the group disposes it: its running tasks are cancelled without
/// warnings, and its scope is disposed too if the group held its only
/// owning handle (the default, a scope of its own) or was `bounded`
/// (R-TG5). Keep the group alive while you need its tasks.
///
/// # Examples
///
/// The RFC's `mergeFiles`:
///
/// ```
/// use async_std_api::{delay, run, TaskGroup};
///
/// let merged = run(|| {
///     let group = TaskGroup::builder().capture_results(true).build();
///     for (i, name) in ["file1", "file2", "file3"].into_iter().enumerate() {
///         group.spawn(move || {
///             delay(10 - 3 * i as u64).unwrap(); // finish in any order
///             format!("<{name}>")
///         })
///         .unwrap();
///     }
///     // By ordinal, whatever the order they finished in.
///     group.join().unwrap().into_values().collect::<Vec<_>>().join("\n")
/// })
/// .unwrap();
/// assert_eq!(merged, "<file1>\n<file2>\n<file3>");
/// ```
pub struct TaskGroup<T: 'static> {
    core: Rc<GroupCore<T>>,
}

impl<T: 'static> Default for TaskGroup<T> {
    fn default() -> Self {
        TaskGroup::new()
    }
}

impl<T: 'static> TaskGroup<T> {
    /// A group with a new scope of its own, not capturing results: the
    /// RFC's `new TaskGroup()`.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn new() -> TaskGroup<T> {
        TaskGroup::builder().build()
    }

    /// A group running its tasks in `scope`: `new TaskGroup($scope)`.
    #[track_caller]
    pub fn with_scope(scope: &Scope) -> TaskGroup<T> {
        TaskGroup::builder().scope(scope).build()
    }

    /// The options of the RFC's constructor.
    pub fn builder() -> TaskGroupBuilder<T> {
        TaskGroupBuilder {
            scope: None,
            capture: false,
            bounded: false,
            concurrency: None,
            _t: PhantomData,
        }
    }

    /// The scope the tasks run in.
    pub fn scope(&self) -> &ScopeRef {
        &self.core.scope
    }

    /// Spawns `f` as an explicit task of the group: the RFC's `spawn with
    /// $taskGroup f()`. It runs in the group's scope; what it spawns goes to
    /// that scope, not to the group (R-TG1). Returns its [`Coroutine`] (to
    /// observe or cancel it; its value is the group's).
    ///
    /// # Errors
    ///
    /// [`TaskGroupErrorKind::Closed`] if the group was cancelled or disposed,
    /// or its scope is closed ("task group is closed: cannot spawn a task
    /// in it").
    ///
    /// # Cancellation
    ///
    /// Not a suspension point.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, spawn, TaskGroup};
    ///
    /// run(|| {
    ///     let group = TaskGroup::<u32>::builder().capture_results(true).build();
    ///     let task = group.spawn(|| {
    ///         spawn(|| ()); // implicit: in the group's scope, not the group
    ///         7
    ///     })
    ///     .unwrap();
    ///     assert_eq!(task.scope(), Some(group.scope().clone()));
    ///     assert_eq!(group.join().unwrap()[&0], 7);
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, f: F) -> Result<Coroutine, TaskGroupError>
    where
        F: FnOnce() -> T + 'static,
    {
        self.spawn_own(|s| spawn_in(s, f).map(|h| h.coroutine()))
    }

    /// [`spawn`](TaskGroup::spawn) for a body that returns a `Result`: an
    /// `Err` is the task's failure (or its cancellation, if it holds one),
    /// as with [`spawn_try`](crate::spawn_try).
    ///
    /// # Errors
    ///
    /// As [`spawn`](TaskGroup::spawn).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, TaskGroup};
    ///
    /// run(|| {
    ///     let group = TaskGroup::<u32>::new();
    ///     group.spawn_try(|| "x".parse::<u32>()).unwrap();
    ///     let e = group.join().unwrap_err();
    ///     assert!(e.is_failed());
    ///     assert!(e.errors()[&0].is_failed());
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn spawn_try<F, E>(&self, f: F) -> Result<Coroutine, TaskGroupError>
    where
        F: FnOnce() -> Result<T, E> + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync + 'static>> + 'static,
    {
        self.spawn_own(|s| spawn_try_in(s, f).map(|h| h.coroutine()))
    }

    /// Adds `f` as an explicit task that starts when the group has a free
    /// slot of its [`concurrency`](TaskGroupBuilder::concurrency) limit (at
    /// once without a limit): REF-19's queued callables. Its ordinal is
    /// given now. A queued task that has not started when the group is
    /// cancelled or disposed never starts and leaves no result or error.
    ///
    /// # Errors
    ///
    /// As [`spawn`](TaskGroup::spawn).
    #[track_caller]
    pub fn queue<F>(&self, f: F) -> Result<(), TaskGroupError>
    where
        F: FnOnce() -> T + 'static,
    {
        let core = &self.core;
        if core.has_slot() && core.queue.borrow().is_empty() {
            return self.spawn(f).map(drop);
        }
        if core.is_cancelled() || core.scope.is_closed() {
            return Err(TaskGroupError::new(Kind::Closed));
        }
        let ordinal = core.next_ordinal.get();
        core.next_ordinal.set(ordinal + 1);
        let at = Location::caller();
        core.queue.borrow_mut().push_back(Queued {
            ordinal,
            start: Box::new(move |own| spawn_in_at(own, f, at).map(|h| h.coroutine())),
        });
        Ok(())
    }

    #[track_caller]
    fn spawn_own(
        &self,
        go: impl FnOnce(&Self) -> Result<Coroutine, ScopeError>,
    ) -> Result<Coroutine, TaskGroupError> {
        if self.core.is_cancelled() {
            return Err(TaskGroupError::new(Kind::Closed));
        }
        self.core.spawning_own.set(true);
        let r = go(self);
        self.core.spawning_own.set(false);
        r.map_err(|_| TaskGroupError::new(Kind::Closed))
    }

    /// Waits for every explicit task and returns their values by ordinal:
    /// the RFC's `await $taskGroup` (R-TG2). Implicit coroutines are not
    /// waited for. Returns at once if no task runs; the group can be awaited
    /// again (tasks spawned meanwhile are then awaited too, R-CO7).
    ///
    /// Without [`capture_results`](TaskGroupBuilder::capture_results) the
    /// map is empty (the RFC's `NULL`). Values are cloned: they stay in the
    /// group until [`dispose_results`](TaskGroup::dispose_results).
    ///
    /// # Errors
    ///
    /// - [`TaskGroupErrorKind::Failed`]: a task failed (or was cancelled on
    ///   its own); [`errors`](TaskGroupError::errors) has every error by
    ///   ordinal, whatever their number (P-12);
    /// - [`TaskGroupErrorKind::Cancelled`]: no task failed, but the group
    ///   was cancelled or disposed, or its scope was: "task group was
    ///   cancelled"; [`cause`](TaskGroupError::cause) is the failure that
    ///   cancelled the scope (R-TG6, D-14);
    /// - [`TaskGroupErrorKind::Interrupted`]: the waiter itself was
    ///   cancelled ([`cancelled`](TaskGroupError::cancelled));
    /// - [`TaskGroupErrorKind::OwnTask`]: called from one of the group's
    ///   tasks (it would wait for itself).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point: a cancellation of the caller ends the wait
    /// (kind `Interrupted`); the tasks go on.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, TaskGroup};
    ///
    /// run(|| {
    ///     let group = TaskGroup::builder().capture_results(true).build();
    ///     group.spawn(|| "a").unwrap();
    ///     assert_eq!(group.join().unwrap().len(), 1);
    ///     group.spawn(|| "b").unwrap();
    ///     let all = group.join().unwrap();
    ///     assert_eq!(all.into_values().collect::<Vec<_>>(), ["a", "b"]);
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn join(&self) -> Result<BTreeMap<usize, T>, TaskGroupError>
    where
        T: Clone,
    {
        let core = &self.core;
        core.wait("join task group", Location::caller(), || {
            (core.unfinished() == 0).then(|| core.settle())
        })??;
        if !core.capture {
            return Ok(BTreeMap::new());
        }
        Ok(core.results.borrow().clone())
    }

    /// A trigger that fires when every task is done and gives the results
    /// by ordinal, the RFC's `all(ignoreErrors, nullOnFail)` (R-TG3): with
    /// `ignore_errors` a failed task does not fail it; its ordinal is then
    /// missing, or `None` with `null_on_fail`. See [`GroupAll::join`].
    ///
    /// # Examples
    ///
    /// The RFC's example:
    ///
    /// ```
    /// use async_std_api::{run, TaskGroup};
    ///
    /// run(|| {
    ///     let group = TaskGroup::builder().capture_results(true).build();
    ///     group.spawn(|| "result 1").unwrap();
    ///     group.spawn(|| panic!("Error")).unwrap();
    ///     let all = group.all(true, true).join().unwrap();
    ///     assert_eq!(all.into_iter().collect::<Vec<_>>(), [(0, Some("result 1")), (1, None)]);
    ///     assert!(group.errors()[&1].is_panic());
    /// })
    /// .unwrap();
    /// ```
    pub fn all(&self, ignore_errors: bool, null_on_fail: bool) -> GroupAll<T> {
        GroupAll {
            core: self.core.clone(),
            ignore_errors,
            null_on_fail,
        }
    }

    /// A re-usable trigger that gives the *next* task to finish and takes
    /// its value out of the group: the RFC's `race(ignoreErrors)` (R-TG4).
    /// See [`Race::join`].
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, TaskGroup};
    ///
    /// run(|| {
    ///     let group = TaskGroup::new();
    ///     let race = group.race(true);
    ///     group.spawn(|| { delay(50).unwrap(); "slow" }).unwrap();
    ///     group.spawn_try(|| Err::<&str, _>("down")).unwrap();
    ///     group.spawn(|| { delay(1).unwrap(); "fast" }).unwrap();
    ///     assert_eq!(race.join().unwrap(), "fast");
    ///     assert_eq!(race.join().unwrap(), "slow");
    ///     assert!(race.join().unwrap_err().is_empty());
    /// })
    /// .unwrap();
    /// ```
    pub fn race(&self, ignore_errors: bool) -> Race<T> {
        self.core.wants_values.set(true);
        Race {
            core: self.core.clone(),
            ignore_errors,
        }
    }

    /// A trigger that gives the first task to finish, and the same one
    /// again until [`dispose_results`](TaskGroup::dispose_results): the
    /// RFC's `firstResult(ignoreErrors)` (R-TG4). See [`FirstResult::join`].
    pub fn first_result(&self, ignore_errors: bool) -> FirstResult<T> {
        self.core.wants_values.set(true);
        FirstResult {
            core: self.core.clone(),
            ignore_errors,
        }
    }

    /// The errors of the finished tasks by ordinal: the RFC's
    /// `getErrors()` (a copy; the errors share their failures, D-13).
    pub fn errors(&self) -> BTreeMap<usize, JoinError> {
        self.core.errors.borrow().clone()
    }

    /// How many explicit tasks have started and not finished.
    pub fn running(&self) -> usize {
        self.core.running()
    }

    /// True if no explicit task runs: the RFC's `isFinished()`.
    pub fn is_finished(&self) -> bool {
        self.core.unfinished() == 0
    }

    /// How many tasks wait for a free slot of the
    /// [`concurrency`](TaskGroupBuilder::concurrency) limit (never started).
    pub fn queued(&self) -> usize {
        self.core.queue.borrow().len()
    }

    /// True once the group was cancelled or disposed, or its scope was
    /// cancelled (TG4): it takes no more tasks.
    pub fn is_cancelled(&self) -> bool {
        self.core.is_cancelled()
    }

    /// Forgets the results and errors kept so far and restarts the ordinals
    /// at 0: the RFC's `disposeResults()` (R-TG3). Tasks still running are
    /// renumbered from 0 in spawn order (TG3).
    ///
    /// # Examples
    ///
    /// The RFC's `processInBatches`:
    ///
    /// ```
    /// use async_std_api::{run, TaskGroup};
    ///
    /// let all = run(|| {
    ///     let group = TaskGroup::builder().capture_results(true).build();
    ///     let mut all = Vec::new();
    ///     for (n, file) in ["f1", "f2", "f3"].into_iter().enumerate() {
    ///         group.spawn(move || file).unwrap();
    ///         if n % 2 == 1 {
    ///             all.extend(group.join().unwrap().into_values());
    ///             group.dispose_results();
    ///         }
    ///     }
    ///     let last = group.join().unwrap();
    ///     assert_eq!(last.keys().copied().collect::<Vec<_>>(), [0]);
    ///     all.extend(last.into_values());
    ///     all
    /// })
    /// .unwrap();
    /// assert_eq!(all, ["f1", "f2", "f3"]);
    /// ```
    pub fn dispose_results(&self) {
        let core = &self.core;
        core.results.borrow_mut().clear();
        core.errors.borrow_mut().clear();
        core.finished.borrow_mut().clear();
        core.race_cursor.set(0);
        let mut tasks = core.tasks.borrow_mut();
        let mut queue = core.queue.borrow_mut();
        let mut order: Vec<&mut usize> = tasks
            .iter_mut()
            .map(|t| &mut t.ordinal)
            .chain(queue.iter_mut().map(|q| &mut q.ordinal))
            .collect();
        order.sort_by_key(|o| **o);
        let n = order.len();
        for (i, o) in order.into_iter().enumerate() {
            *o = i;
        }
        core.next_ordinal.set(n);
    }

    /// Cancels the group's running tasks with `reason`, without warnings,
    /// and closes the group: the RFC's `cancel(new CancellationException(
    /// reason))` (R-TG5). Each task gets a [`Cancelled`] with cause
    /// [`CancelCause::Explicit`](crate::CancelCause::Explicit) and this reason. If the group holds the
    /// only owning handle of its scope (or is `bounded`), the scope is
    /// disposed too, which cancels the implicit coroutines.
    ///
    /// # Examples
    ///
    /// The RFC's example:
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    /// use async_std_api::{run, suspend, TaskGroup};
    ///
    /// let out = Rc::new(RefCell::new(String::new()));
    /// let o = out.clone();
    /// run(move || {
    ///     let group = TaskGroup::new();
    ///     group.spawn(move || {
    ///         if let Err(c) = suspend().and_then(|_| async_std_api::delay(60_000)) {
    ///             *o.borrow_mut() = format!("Task was cancelled: {}", c.reason().unwrap());
    ///         }
    ///     })
    ///     .unwrap();
    ///     suspend().unwrap();
    ///     group.cancel("Custom cancellation message");
    ///     assert!(group.join().unwrap_err().is_cancelled());
    /// })
    /// .unwrap();
    /// assert_eq!(*out.borrow(), "Task was cancelled: Custom cancellation message");
    /// ```
    #[track_caller]
    pub fn cancel(&self, reason: impl Into<String>) {
        self.core.cancel_tasks(Some(reason.into()));
        self.core.release_scope();
    }

    /// Cancels the group's running tasks without warnings and closes the
    /// group: the RFC's `dispose()` (R-TG5); the scope as for
    /// [`cancel`](TaskGroup::cancel). May be called repeatedly.
    #[track_caller]
    pub fn dispose(&self) {
        self.core.cancel_tasks(None);
        self.core.release_scope();
    }
}

impl<T: 'static> Drop for TaskGroup<T> {
    /// R-TG5: releasing the group disposes it (and its own scope).
    fn drop(&mut self) {
        if with_runtime(|_| ()).is_none() {
            return;
        }
        if self.core.unfinished() > 0 || self.core.owner.borrow().is_some() {
            self.dispose();
        }
    }
}

impl<T: 'static> fmt::Debug for TaskGroup<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskGroup")
            .field("scope", &self.core.scope.id())
            .field("running", &self.core.running())
            .field("cancelled", &self.core.is_cancelled())
            .finish()
    }
}

impl<T: 'static> ScopeProvider for TaskGroup<T> {
    fn provide_scope(&self) -> Option<ScopeRef> {
        Some(self.core.scope.clone())
    }
}

impl<T: 'static> SpawnStrategy for TaskGroup<T> {
    /// Registers the created coroutine as an explicit task (TG1), before it
    /// is queued.
    fn before_coroutine_enqueue(&self, coroutine: &Coroutine, _scope: &ScopeRef) {
        self.core.register(coroutine);
    }
}

/// The trigger of [`TaskGroup::all`].
pub struct GroupAll<T: 'static> {
    core: Rc<GroupCore<T>>,
    ignore_errors: bool,
    null_on_fail: bool,
}

impl<T: Clone + 'static> GroupAll<T> {
    /// Waits until every task of the group is done and returns the values
    /// by ordinal (R-TG3). Can be awaited again.
    ///
    /// # Errors
    ///
    /// As [`TaskGroup::join`], except that with `ignore_errors` the tasks'
    /// errors are not reported (read them with [`TaskGroup::errors`]).
    ///
    /// # Cancellation
    ///
    /// As [`TaskGroup::join`].
    #[track_caller]
    pub fn join(&self) -> Result<BTreeMap<usize, Option<T>>, TaskGroupError> {
        let core = &self.core;
        core.wait("join task group all", Location::caller(), || {
            (core.unfinished() == 0).then(|| self.collect())
        })?
    }

    fn collect(&self) -> Result<BTreeMap<usize, Option<T>>, TaskGroupError> {
        let core = &self.core;
        if !self.ignore_errors {
            core.settle()?;
        }
        let mut out: BTreeMap<usize, Option<T>> = BTreeMap::new();
        if core.capture {
            for (k, v) in core.results.borrow().iter() {
                out.insert(*k, Some(v.clone()));
            }
        }
        if self.null_on_fail {
            for k in core.errors.borrow().keys() {
                out.insert(*k, None);
            }
        }
        Ok(out)
    }
}

/// The trigger of [`TaskGroup::race`].
pub struct Race<T: 'static> {
    core: Rc<GroupCore<T>>,
    ignore_errors: bool,
}

impl<T: 'static> Race<T> {
    /// Waits for the next task to finish (one that finished earlier and was
    /// not raced yet counts) and takes its value out of the group (R-TG4).
    ///
    /// # Errors
    ///
    /// - [`TaskGroupErrorKind::Task`]: that task failed or was cancelled
    ///   (without `ignore_errors`; with it such tasks are skipped): its
    ///   [`JoinError`] is [`task_error`](TaskGroupError::task_error);
    /// - [`TaskGroupErrorKind::Empty`]: no task runs and none is left to
    ///   give ("task group has no task left to race");
    /// - [`TaskGroupErrorKind::Interrupted`], [`TaskGroupErrorKind::OwnTask`]
    ///   as for [`TaskGroup::join`].
    ///
    /// # Cancellation
    ///
    /// As [`TaskGroup::join`]. The other tasks are not cancelled (D-7).
    #[track_caller]
    pub fn join(&self) -> Result<T, TaskGroupError> {
        let core = &self.core;
        core.wait("race task group", Location::caller(), || self.try_next())?
    }

    fn try_next(&self) -> Option<Result<T, TaskGroupError>> {
        let core = &self.core;
        loop {
            let at = core.race_cursor.get();
            let ordinal = core.finished.borrow().get(at).copied();
            let Some(ordinal) = ordinal else {
                return (core.unfinished() == 0).then(|| Err(TaskGroupError::new(Kind::Empty)));
            };
            core.race_cursor.set(at + 1);
            if let Some(v) = core.results.borrow_mut().remove(&ordinal) {
                return Some(Ok(v));
            }
            if let Some(e) = core.errors.borrow().get(&ordinal) {
                if !self.ignore_errors {
                    return Some(Err(TaskGroupError::task(ordinal, e.clone())));
                }
            }
        }
    }
}

/// The trigger of [`TaskGroup::first_result`].
pub struct FirstResult<T: 'static> {
    core: Rc<GroupCore<T>>,
    ignore_errors: bool,
}

impl<T: Clone + 'static> FirstResult<T> {
    /// Waits until a task has finished and returns the first one's value,
    /// the same each time until [`TaskGroup::dispose_results`] (R-TG4); a
    /// value [`Race`] took is no longer there, and the next one counts.
    ///
    /// # Errors
    ///
    /// As [`Race::join`].
    #[track_caller]
    pub fn join(&self) -> Result<T, TaskGroupError> {
        let core = &self.core;
        core.wait("first result of task group", Location::caller(), || {
            self.try_first()
        })?
    }

    fn try_first(&self) -> Option<Result<T, TaskGroupError>> {
        let core = &self.core;
        for ordinal in core.finished.borrow().iter() {
            if let Some(v) = core.results.borrow().get(ordinal) {
                return Some(Ok(v.clone()));
            }
            if let Some(e) = core.errors.borrow().get(ordinal) {
                if !self.ignore_errors {
                    return Some(Err(TaskGroupError::task(*ordinal, e.clone())));
                }
            }
        }
        (core.unfinished() == 0).then(|| Err(TaskGroupError::new(Kind::Empty)))
    }
}

macro_rules! debug_trigger {
    ($t:ident) => {
        impl<T: 'static> fmt::Debug for $t<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("scope", &self.core.scope.id())
                    .field("ignore_errors", &self.ignore_errors)
                    .finish()
            }
        }
    };
}
debug_trigger!(GroupAll);
debug_trigger!(Race);
debug_trigger!(FirstResult);

// ---- the combinator hooks (`combinators` Trigger) ----

impl<T: Clone + 'static> TaskGroup<T> {
    pub(crate) fn poll_join(&self) -> Option<Result<BTreeMap<usize, T>, TaskGroupError>> {
        let core = &self.core;
        (core.unfinished() == 0).then(|| {
            core.settle()?;
            Ok(if core.capture {
                core.results.borrow().clone()
            } else {
                BTreeMap::new()
            })
        })
    }
}

impl<T: 'static> TaskGroup<T> {
    pub(crate) fn notify(&self) -> &Notify {
        &self.core.notify
    }
}

impl<T: Clone + 'static> GroupAll<T> {
    pub(crate) fn poll(&self) -> Option<Result<BTreeMap<usize, Option<T>>, TaskGroupError>> {
        (self.core.unfinished() == 0).then(|| self.collect())
    }
    pub(crate) fn notify(&self) -> &Notify {
        &self.core.notify
    }
}

impl<T: 'static> Race<T> {
    pub(crate) fn poll(&self) -> Option<Result<T, TaskGroupError>> {
        self.try_next()
    }
    pub(crate) fn notify(&self) -> &Notify {
        &self.core.notify
    }
}

impl<T: Clone + 'static> FirstResult<T> {
    pub(crate) fn poll(&self) -> Option<Result<T, TaskGroupError>> {
        self.try_first()
    }
    pub(crate) fn notify(&self) -> &Notify {
        &self.core.notify
    }
}

// ---- errors ----

/// What went wrong with a task group (closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskGroupErrorKind {
    /// One or more tasks failed or were cancelled on their own:
    /// [`TaskGroupError::errors`] has them all by ordinal (P-12).
    Failed,
    /// The group or its scope was cancelled or disposed (R-TG6, D-14).
    Cancelled,
    /// The one task a [`Race`] or [`FirstResult`] gave failed.
    Task,
    /// The waiter itself was cancelled.
    Interrupted,
    /// A [`Race`] or [`FirstResult`] found no task running and none left.
    Empty,
    /// [`TaskGroup::spawn`] on a cancelled or disposed group (or a closed
    /// scope).
    Closed,
    /// One of the group's own tasks awaited it.
    OwnTask,
}

#[derive(Clone)]
enum Kind {
    Failed(BTreeMap<usize, JoinError>),
    Cancelled {
        reason: Option<String>,
        cause: Option<Failure>,
    },
    Task(usize, JoinError),
    Interrupted(Cancelled),
    Empty,
    Closed,
    OwnTask,
}

/// The error of a task group's waits and spawns: opaque, with predicates
/// and a closed [`TaskGroupErrorKind`].
///
/// One shape whatever the number of failed tasks (P-12): kind
/// [`Failed`](TaskGroupErrorKind::Failed) with every error by ordinal.
///
/// # Examples
///
/// The RFC's R-TG6 example: an implicit coroutine fails, the scope cancels
/// everything, and the await gets a cancellation whose cause is that
/// failure (D-14). The cancellation does not consume the failure (D-27): it
/// goes on to the group scope's parent, here a scope whose handler takes
/// it (without one it would reach the global scope and start graceful
/// shutdown).
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use async_std_api::{delay, run, spawn, Scope, TaskGroup};
///
/// run(|| {
///     let handled = Rc::new(RefCell::new(Vec::new()));
///     let (server, h) = (Scope::new(), handled.clone());
///     server
///         .set_exception_handler(move |_, _, f| {
///             h.borrow_mut().push(f.panic_message().unwrap().to_owned());
///             Ok(())
///         })
///         .unwrap();
///     let group = TaskGroup::<()>::with_scope(&Scope::inherit_from(&server));
///     group.spawn(|| {
///         spawn(|| panic!("Error in coroutine")); // in the scope, not the group
///         let _ = delay(1_000);
///     })
///     .unwrap();
///     let e = group.join().unwrap_err();
///     assert!(e.is_cancelled());
///     assert!(e.to_string().starts_with("task group was cancelled: coroutine "));
///     assert_eq!(e.cause().unwrap().panic_message(), Some("Error in coroutine"));
///     assert_eq!(*handled.borrow(), ["Error in coroutine"]);
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct TaskGroupError {
    kind: Kind,
}

impl TaskGroupError {
    fn new(kind: Kind) -> Self {
        TaskGroupError { kind }
    }

    fn failed(errors: BTreeMap<usize, JoinError>) -> Self {
        TaskGroupError::new(Kind::Failed(errors))
    }

    fn task(ordinal: usize, e: JoinError) -> Self {
        TaskGroupError::new(Kind::Task(ordinal, e))
    }

    /// Which error it is.
    pub fn kind(&self) -> TaskGroupErrorKind {
        match &self.kind {
            Kind::Failed(_) => TaskGroupErrorKind::Failed,
            Kind::Cancelled { .. } => TaskGroupErrorKind::Cancelled,
            Kind::Task(..) => TaskGroupErrorKind::Task,
            Kind::Interrupted(_) => TaskGroupErrorKind::Interrupted,
            Kind::Empty => TaskGroupErrorKind::Empty,
            Kind::Closed => TaskGroupErrorKind::Closed,
            Kind::OwnTask => TaskGroupErrorKind::OwnTask,
        }
    }

    /// True for [`TaskGroupErrorKind::Failed`].
    pub fn is_failed(&self) -> bool {
        matches!(self.kind, Kind::Failed(_))
    }

    /// True for [`TaskGroupErrorKind::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        matches!(self.kind, Kind::Cancelled { .. })
    }

    /// True for [`TaskGroupErrorKind::Interrupted`].
    pub fn is_interrupted(&self) -> bool {
        matches!(self.kind, Kind::Interrupted(_))
    }

    /// True for [`TaskGroupErrorKind::Empty`].
    pub fn is_empty(&self) -> bool {
        matches!(self.kind, Kind::Empty)
    }

    /// The tasks' errors by ordinal (kind `Failed`; empty otherwise).
    pub fn errors(&self) -> BTreeMap<usize, JoinError> {
        match &self.kind {
            Kind::Failed(e) => e.clone(),
            Kind::Task(i, e) => BTreeMap::from([(*i, e.clone())]),
            _ => BTreeMap::new(),
        }
    }

    /// The error of the one task a [`Race`] or [`FirstResult`] gave (kind
    /// `Task`), with its ordinal.
    pub fn task_error(&self) -> Option<(usize, &JoinError)> {
        match &self.kind {
            Kind::Task(i, e) => Some((*i, e)),
            _ => None,
        }
    }

    /// The failure that cancelled the group's scope (kind `Cancelled`;
    /// R-TG6, D-14).
    pub fn cause(&self) -> Option<&Failure> {
        match &self.kind {
            Kind::Cancelled { cause, .. } => cause.as_ref(),
            _ => None,
        }
    }

    /// The reason given to [`TaskGroup::cancel`] (kind `Cancelled`).
    pub fn reason(&self) -> Option<&str> {
        match &self.kind {
            Kind::Cancelled { reason, .. } => reason.as_deref(),
            _ => None,
        }
    }

    /// The waiter's own cancellation (kind `Interrupted`).
    pub fn cancelled(&self) -> Option<&Cancelled> {
        match &self.kind {
            Kind::Interrupted(c) => Some(c),
            _ => None,
        }
    }
}

impl fmt::Display for TaskGroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Failed(errors) => {
                let mut it = errors.iter();
                match it.next() {
                    Some((i, e)) => write!(f, "task group failed: task {i}: {e}")?,
                    None => write!(f, "task group failed")?,
                }
                match errors.len() {
                    0 | 1 => Ok(()),
                    2 => write!(f, " (and 1 more error)"),
                    n => write!(f, " (and {} more errors)", n - 1),
                }
            }
            Kind::Cancelled { reason, cause } => {
                write!(f, "task group was cancelled")?;
                if let Some(r) = reason {
                    write!(f, ": {r}")?;
                } else if let Some(c) = cause {
                    write!(f, ": {c}")?;
                }
                Ok(())
            }
            Kind::Task(i, e) => write!(f, "task {i} of the task group: {e}"),
            Kind::Interrupted(c) => write!(f, "waiting for a task group interrupted: {c}"),
            Kind::Empty => write!(f, "task group has no task left to race"),
            Kind::Closed => write!(f, "task group is closed: cannot spawn a task in it"),
            Kind::OwnTask => write!(
                f,
                "task group awaited from one of its tasks: it would wait forever"
            ),
        }
    }
}

impl fmt::Debug for TaskGroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TaskGroupError")
            .field(&self.to_string())
            .finish()
    }
}

impl std::error::Error for TaskGroupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Interrupted(c) => Some(c),
            Kind::Cancelled { cause: Some(f), .. } => Some(f),
            Kind::Task(_, e) => Some(e),
            _ => None,
        }
    }
}
