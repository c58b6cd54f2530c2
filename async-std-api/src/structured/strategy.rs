//! Where and how [`spawn_in`](crate::spawn_in) starts a coroutine: the RFC's
//! `ScopeProvider` and `SpawnStrategy` interfaces, the `hiPriority`
//! strategy and the `Supervisor` pattern.
//!
//! - **ScopeProvider** [`ScopeProvider::provide_scope`] gives the scope to
//!   spawn in, or `None` for the current one.
//! - **SpawnStrategy** adds hooks around the enqueue. The ABI fixes a
//!   coroutine's priority when the scheduler creates it, so the RFC's
//!   `Coroutine::asHiPriority()` called from `beforeCoroutineEnqueue` maps
//!   to [`SpawnStrategy::spawn_options`] (the "list of options for the
//!   Scheduler" the RFC lets `beforeCoroutineEnqueue` return), asked before
//!   the coroutine is created. [`SpawnStrategy::before_coroutine_enqueue`]
//!   then sees the created, not yet queued coroutine (it can register
//!   `on_finally` handlers, as the RFC's Supervisor does), and
//!   [`SpawnStrategy::after_coroutine_enqueue`] the queued one.
//! - **R-HP1** [`hi_priority`]: the coroutine is created with
//!   `AA_PRIORITY_HIGH`, which the scheduler queues at the head: it runs
//!   before normal work queued earlier. A hint: users must not rely on it.
//! - **Supervisor** [`Supervisor`]: each task in its own child scope of the
//!   supervisor's scope, cancelled when the task finishes; a failing task
//!   cancels its own children, not its siblings.
//!
//! Every type that implements only `ScopeProvider` in the RFC implements
//! `SpawnStrategy` here too, with the default (empty) hooks: `impl
//! SpawnStrategy for MyProvider {}`. [`Scope`] and [`ScopeRef`] do.

use std::cell::RefCell;
use std::rc::Rc;

use super::scope::{Scope, ScopeRef};
use crate::core::coroutine::Coroutine;
use crate::core::failure::Failure;

/// Options for the scheduler, chosen by a [`SpawnStrategy`] before the
/// coroutine is created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpawnOptions {
    /// Create it with high priority (R-HP1): queued at the head.
    pub hi_priority: bool,
}

impl SpawnOptions {
    /// Normal priority.
    pub fn new() -> SpawnOptions {
        SpawnOptions::default()
    }

    /// With [`hi_priority`](SpawnOptions::hi_priority) set.
    pub fn hi_priority(mut self) -> SpawnOptions {
        self.hi_priority = true;
        self
    }
}

/// Something that provides the scope to spawn in: the RFC's
/// `Async\ScopeProvider`.
///
/// # Examples
///
/// ```
/// use async_std_api::{run, spawn_in, Scope, ScopeProvider, ScopeRef, SpawnStrategy};
///
/// struct Service {
///     scope: Scope,
/// }
/// impl ScopeProvider for Service {
///     fn provide_scope(&self) -> Option<ScopeRef> {
///         Some(ScopeRef::clone(&self.scope))
///     }
/// }
/// impl SpawnStrategy for Service {}
///
/// run(|| {
///     let service = Service { scope: Scope::new() };
///     let h = spawn_in(&service, || async_std_api::current_scope().id()).unwrap();
///     assert_eq!(h.join().unwrap(), service.scope.id());
/// })
/// .unwrap();
/// ```
pub trait ScopeProvider {
    /// The scope to spawn in; `None` means the current one.
    fn provide_scope(&self) -> Option<ScopeRef>;
}

/// A [`ScopeProvider`] with hooks around the enqueue of each coroutine
/// spawned through it: the RFC's `Async\SpawnStrategy`.
///
/// The order for one [`spawn_in`](crate::spawn_in): `provide_scope`,
/// [`spawn_options`](SpawnStrategy::spawn_options), the coroutine is
/// created (registered in the scope, not queued),
/// [`before_coroutine_enqueue`](SpawnStrategy::before_coroutine_enqueue),
/// it is queued, [`after_coroutine_enqueue`](SpawnStrategy::after_coroutine_enqueue).
/// The body never runs before `spawn_in` returns.
///
/// A hook that panics: the coroutine is cancelled before it starts (its
/// body never runs, its captures are dropped) and the panic continues in the
/// caller of `spawn_in`.
pub trait SpawnStrategy: ScopeProvider {
    /// The scheduler options for the coroutine about to be created.
    fn spawn_options(&self, _scope: &ScopeRef) -> SpawnOptions {
        SpawnOptions::default()
    }

    /// Called after the coroutine is created, before it is queued.
    fn before_coroutine_enqueue(&self, _coroutine: &Coroutine, _scope: &ScopeRef) {}

    /// Called after the coroutine is queued.
    fn after_coroutine_enqueue(&self, _coroutine: &Coroutine, _scope: &ScopeRef) {}
}

impl ScopeProvider for ScopeRef {
    fn provide_scope(&self) -> Option<ScopeRef> {
        Some(self.clone())
    }
}

impl SpawnStrategy for ScopeRef {}

impl ScopeProvider for Scope {
    fn provide_scope(&self) -> Option<ScopeRef> {
        Some(ScopeRef::clone(self))
    }
}

impl SpawnStrategy for Scope {}

/// The strategy of [`hi_priority`].
#[derive(Debug, Clone)]
pub struct HiPriority {
    scope: Option<ScopeRef>,
}

/// A strategy that spawns with high priority (R-HP1), in the current scope:
/// the RFC's `spawn with hiPriority()`.
///
/// The coroutine is queued at the head, so it runs before normal work that
/// was queued earlier. A recommendation to the scheduler, not a promise:
/// programs must not depend on it (a chaos scheduler ignores it).
///
/// # Examples
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use async_std_api::{hi_priority, run, spawn, spawn_in, suspend};
///
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let l = log.clone();
/// run(move || {
///     let (a, b) = (l.clone(), l.clone());
///     spawn(move || a.borrow_mut().push("normal priority"));
///     spawn_in(&hi_priority(), move || b.borrow_mut().push("high priority")).unwrap();
///     suspend().unwrap();
/// })
/// .unwrap();
/// // Under the FIFO scheduler (the default):
/// # if std::env::var("ASYNC_SCHEDULER").map_or(true, |s| s != "chaos") {
/// assert_eq!(*log.borrow(), ["high priority", "normal priority"]);
/// # }
/// ```
pub fn hi_priority() -> HiPriority {
    HiPriority { scope: None }
}

/// [`hi_priority`] in a given scope: the RFC's `hiPriority($scope)`.
pub fn hi_priority_in(scope: &ScopeRef) -> HiPriority {
    HiPriority {
        scope: Some(scope.clone()),
    }
}

impl ScopeProvider for HiPriority {
    fn provide_scope(&self) -> Option<ScopeRef> {
        self.scope.clone()
    }
}

impl SpawnStrategy for HiPriority {
    fn spawn_options(&self, _scope: &ScopeRef) -> SpawnOptions {
        SpawnOptions::new().hi_priority()
    }
}

/// A group of tasks in which a failure stops the failing task's own
/// children but not its siblings: the RFC's `Supervisor` sketch.
///
/// Built from the RFC's sketch and the pieces above: the supervisor owns a
/// scope; [`provide_scope`](ScopeProvider::provide_scope) gives each task a
/// new child scope of it (detached: owned by the task);
/// [`before_coroutine_enqueue`](SpawnStrategy::before_coroutine_enqueue)
/// registers an `on_finally` on the task that cancels that child scope when
/// the task finishes (the RFC's sketch disposes it, which also warns about
/// each child it stops; stopping them is the point here). One addition the
/// RFC's own error flow requires: a child-scope exception handler on the
/// supervisor's scope, which keeps the failures (see
/// [`failures`](Supervisor::failures)); without it a task's failure would go
/// on to the supervisor's scope and cancel the siblings.
///
/// Dropping the supervisor drops its scope handle: if it was the last,
/// what still runs is cancelled (D-9).
///
/// # Examples
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use async_std_api::{run, spawn, spawn_in, timeout, Supervisor};
///
/// run(|| {
///     let log = Rc::new(RefCell::new(Vec::new()));
///     let supervisor = Supervisor::new();
///     let l = log.clone();
///     spawn_in(&supervisor, move || {
///         let l2 = l.clone();
///         spawn(move || l2.borrow_mut().push("This code is not executed"));
///         panic!("Task 1");
///     })
///     .unwrap();
///     let l = log.clone();
///     spawn_in(&supervisor, move || l.borrow_mut().push("Task 2")).unwrap();
///     supervisor.scope().await_completion(&timeout(5_000)).unwrap();
///     assert_eq!(*log.borrow(), ["Task 2"]);
///     assert_eq!(supervisor.failures()[0].panic_message(), Some("Task 1"));
/// })
/// .unwrap();
/// ```
pub struct Supervisor {
    scope: Scope,
    failures: Rc<RefCell<Vec<Failure>>>,
}

impl Supervisor {
    /// A supervisor with its own root scope.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    #[allow(clippy::new_without_default)] // it creates a scope in the running runtime: not a default value
    pub fn new() -> Supervisor {
        let scope = Scope::new();
        let failures: Rc<RefCell<Vec<Failure>>> = Rc::default();
        let kept = failures.clone();
        scope
            .set_child_scope_exception_handler(move |_, _, f| {
                kept.borrow_mut().push(f.clone());
                Ok(())
            })
            .expect("a new scope is not the global scope");
        Supervisor { scope, failures }
    }

    /// The supervisor's scope (every task's scope is a child of it).
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The failures of tasks (and of their children) so far, oldest first.
    pub fn failures(&self) -> Vec<Failure> {
        self.failures.borrow().clone()
    }
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("scope", &self.scope.id())
            .field("failures", &self.failures.borrow().len())
            .finish()
    }
}

impl ScopeProvider for Supervisor {
    fn provide_scope(&self) -> Option<ScopeRef> {
        Some(Scope::inherit_from(&self.scope).detach())
    }
}

impl SpawnStrategy for Supervisor {
    fn before_coroutine_enqueue(&self, coroutine: &Coroutine, scope: &ScopeRef) {
        // The task's children stop with it: a cancel (a dispose would warn
        // about each, though stopping them is the point).
        let scope = scope.clone();
        coroutine.on_finally(move || scope.cancel());
    }
}
