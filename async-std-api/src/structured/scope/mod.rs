//! Scopes: [`Scope`] (an owning handle), [`ScopeRef`] (a non-owning one),
//! [`current_scope`], [`global_scope`], and the error flow.
//!
//! The RFC's `Async\Scope` is an object released by reference counting: the
//! code that owns it is the *point of responsibility* for every coroutine
//! in it, and losing the last reference disposes it. Coroutines running in
//! a scope do not keep that object alive. In Rust:
//!
//! - a [`Scope`] is the owning handle: `Clone` shares ownership, and
//!   dropping the last clone disposes the scope (D-9: cancel what still runs
//!   in it, with a warning naming it). It derefs to [`ScopeRef`], which has
//!   every method.
//! - a [`ScopeRef`] refers to a scope without owning it: what
//!   [`current_scope`] returns and what coroutines hold. Dropping it does
//!   nothing. [`Scope::detach`] turns an owning handle into a `ScopeRef`
//!   without disposing (the scope is then disposed only explicitly), which
//!   is how a scope's lifetime is tied to something else than a handle
//!   (the [`Supervisor`](crate::Supervisor) ties each task scope to its
//!   task).
//!
//! Rules (see `state` SC1-SC6, `flow` EF1-EF5, `wait`):
//! - **R-S1** A plain [`spawn`](crate::spawn) inside a coroutine goes to that
//!   coroutine's scope: coroutines spawned by one another are siblings.
//! - **R-S2** [`Scope::new`] makes a root scope (a child of the global scope
//!   for error propagation and shutdown, not of the current scope);
//!   [`Scope::inherit`] a child of the current scope;
//!   [`Scope::inherit_from`] a child of a given one.
//! - **R-S3**, **D-8** [`cancel`](ScopeRef::cancel) cancels the child scopes
//!   first (bottom-up), then the scope's own coroutines, and closes it.
//! - **R-S4**, **P-17** Spawning into a closed scope fails synchronously
//!   ([`spawn_in`](crate::spawn_in) returns [`ScopeErrorKind::Closed`];
//!   plain `spawn` panics, having no error to return).
//! - **R-S5** `cancel_with` on a scope already cancelled is ignored with a
//!   warning; `dispose*` may be called repeatedly.
//! - **R-S6**, **R-S8** [`await_completion`](ScopeRef::await_completion)
//!   (with a mandatory token) waits for the scope and its descendants,
//!   receives their failures, fails at once on a cancelled scope and when
//!   called from inside.
//! - **R-S7** [`await_after_cancellation`](ScopeRef::await_after_cancellation).
//! - **R-S9**, **R-S10**, **D-10**, **D-18**, **P-18** `dispose`,
//!   `dispose_safely` (zombies), `dispose_after_timeout`; zombies do not
//!   count as active and are cancelled after the zombie timeout once
//!   nothing else is left (see `runtime::zombie`). `cancel()` always
//!   cancels; only `dispose_safely` makes zombies.
//! - **R-S11** Introspection and the Context hook (`ScopeState::context`).
//! - **D-11** A coroutine that cancels its own scope is not interrupted at
//!   the call; its siblings are cancelled, and it receives the cancellation
//!   at its next suspension point (or finishes with it as its result if it
//!   does not suspend again).

pub(crate) mod error;
pub(crate) mod flow;
pub(crate) mod state;
mod wait;

use std::fmt;
use std::ops::Deref;
use std::panic::Location;
use std::rc::Rc;
use std::time::Duration;

pub use error::{ScopeError, ScopeErrorKind};
use state::{scope_of, Mode, ScopeCancel, ScopeState, Walk};

use super::context::{of_scope, Context};
use super::run::{global, next_scope_id};
use super::shutdown;
use crate::core::awaitable::Awaitable;
use crate::core::coroutine::Coroutine;
use crate::core::error::CancelCause;
use crate::core::events::{self, Event};
use crate::core::failure::Failure;
use crate::core::id::ScopeId;
use crate::core::runtime;
use crate::core::state::CoroState;
use crate::core::wait::outside_runtime;

/// A reference to a scope that does not own it: the RFC's `Async\Scope` as
/// seen from inside (what coroutines hold).
///
/// The analogue of `std::rc::Weak` for the *lifetime* of a scope (dropping
/// it never disposes anything), though it keeps the scope's record readable:
/// a `ScopeRef` to a disposed scope answers `is_closed() == true`, and
/// spawning through it fails. Obtained from [`current_scope`],
/// [`global_scope`], [`Scope::detach`], [`ScopeRef::child_scopes`], or by
/// deref from a [`Scope`] (every method of a `Scope` is here).
///
/// # Examples
///
/// ```
/// use async_std_api::{current_scope, run, spawn, Scope};
///
/// run(|| {
///     let scope = Scope::new();
///     let inner = async_std_api::spawn_in(&scope, || current_scope().id()).unwrap();
///     assert_eq!(inner.join().unwrap(), scope.id());
///     // Plain spawn in main goes to the global scope.
///     assert!(spawn(|| current_scope().is_global()).join().unwrap());
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct ScopeRef {
    pub(crate) state: Rc<ScopeState>,
}

/// The owner of a scope: dropping the last [`Scope`] clone disposes it.
struct Owner {
    scope: ScopeRef,
    detached: std::cell::Cell<bool>,
}

/// An owning handle to a scope: the RFC's `Async\Scope` object, a container
/// that manages the lifetime of the coroutines spawned in it.
///
/// The analogue of a tokio `JoinSet` or a Kotlin `CoroutineScope` bound to
/// an object: `Clone` shares ownership; **dropping the last clone disposes
/// the scope** (D-9): whatever still runs in it and its child scopes is
/// cancelled, with one warning naming those coroutines, and the scope is
/// closed. Coroutines running in the scope do not keep it alive; use
/// [`detach`](Scope::detach) to give up ownership without disposing.
///
/// Every method is on [`ScopeRef`], which a `Scope` derefs to.
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use async_std_api::{delay, run, spawn, spawn_in, timeout, Scope};
///
/// run(|| {
///     let done = Rc::new(Cell::new(0));
///     let scope = Scope::new();
///     let d = done.clone();
///     spawn_in(&scope, move || {
///         // Plain spawn inside goes to the same scope (siblings, R-S1).
///         let d2 = d.clone();
///         spawn(move || d2.set(d2.get() + 1));
///         delay(5).unwrap();
///         d.set(d.get() + 1);
///     })
///     .unwrap();
///     scope.await_completion(&timeout(5_000)).unwrap();
///     assert_eq!(done.get(), 2);
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct Scope {
    owner: Rc<Owner>,
}

impl Scope {
    /// Creates a root scope: the RFC's `new Scope()`.
    ///
    /// It is not a child of the current scope (R-S2); for error propagation
    /// and shutdown its parent is the global scope.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_scope, run, Scope};
    ///
    /// run(|| {
    ///     let s = Scope::new();
    ///     assert!(s.parent().unwrap().is_global());
    ///     assert_ne!(s.id(), current_scope().id());
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    #[allow(clippy::new_without_default)] // creating a scope registers it in the running runtime: not a default value
    pub fn new() -> Scope {
        let at = Location::caller();
        Scope::create("Scope::new", |rt, _| global(rt), at)
    }

    /// Creates a child scope of the current coroutine's scope: the RFC's
    /// `Scope::inherit()`.
    ///
    /// Cancelling or disposing the parent cancels or disposes the child
    /// too; a failure nothing handles in the child goes on to the parent.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_scope, run, Scope};
    ///
    /// run(|| {
    ///     let child = Scope::inherit();
    ///     assert_eq!(child.parent().unwrap().id(), current_scope().id());
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn inherit() -> Scope {
        let at = Location::caller();
        Scope::create(
            "Scope::inherit",
            |rt, me| me.and_then(|m| scope_of(m)).unwrap_or_else(|| global(rt)),
            at,
        )
    }

    /// Creates a child scope of `parent`: the RFC's `Scope::inherit($parent)`.
    ///
    /// A child of a closed scope starts closed and cancelled.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, Scope};
    ///
    /// run(|| {
    ///     let parent = Scope::new();
    ///     let child = Scope::inherit_from(&parent);
    ///     assert_eq!(parent.child_scopes()[0].id(), child.id());
    ///     parent.cancel();
    ///     assert!(child.is_cancelled() && child.is_closed());
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn inherit_from(parent: &ScopeRef) -> Scope {
        let at = Location::caller();
        let p = parent.state.clone();
        Scope::create("Scope::inherit_from", move |_, _| p, at)
    }

    // Track the caller: outside a runtime the panic names the user's line.
    #[track_caller]
    fn create(
        what: &str,
        parent: impl FnOnce(&runtime::Runtime, Option<&Rc<CoroState>>) -> Rc<ScopeState>,
        at: &'static Location<'static>,
    ) -> Scope {
        let state = runtime::with_current(|rt, me| {
            let parent = parent(rt, me);
            ScopeState::new(next_scope_id(rt), Some(parent), at)
        });
        let Some(state) = state else {
            outside_runtime(what)
        };
        Scope {
            owner: Rc::new(Owner {
                scope: ScopeRef { state },
                detached: std::cell::Cell::new(false),
            }),
        }
    }

    /// Gives up this handle's ownership without disposing: returns a
    /// [`ScopeRef`]. If it was the last owner, the scope is no longer
    /// disposed automatically; it runs until cancelled or disposed
    /// explicitly (or by an ancestor), like a detached thread.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, spawn_in, Scope};
    ///
    /// run(|| {
    ///     let scope = Scope::new().detach();
    ///     let h = spawn_in(&scope, || 5).unwrap();
    ///     assert!(!scope.is_closed());
    ///     assert_eq!(h.join().unwrap(), 5);
    ///     scope.dispose();
    /// })
    /// .unwrap();
    /// ```
    pub fn detach(self) -> ScopeRef {
        self.owner.detached.set(true);
        self.owner.scope.clone()
    }

    /// True if this is the only owning handle (the hook for a task group,
    /// which disposes its scope only when it holds the last owner, R-TG5).
    pub(crate) fn is_sole_owner(&self) -> bool {
        Rc::strong_count(&self.owner) == 1 && !self.owner.detached.get()
    }
}

impl Deref for Scope {
    type Target = ScopeRef;

    fn deref(&self) -> &ScopeRef {
        &self.owner.scope
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope").field("id", &self.id()).finish()
    }
}

impl Drop for Owner {
    /// D-9: the last owner is gone: cancel what still runs, with a warning
    /// naming it, and close the scope.
    fn drop(&mut self) {
        let s = &self.scope.state;
        if self.detached.get() || s.is_global || s.is_closed() {
            return;
        }
        if runtime::with_runtime(|_| ()).is_none() {
            return; // after `run`: nothing runs any more
        }
        let still = tree_members(s)
            .into_iter()
            .filter(|m| !m.is_finished())
            .map(|m| m.event_ref())
            .collect::<Vec<_>>();
        if !still.is_empty() {
            events::emit(Event::ScopeDisposed {
                scope: s.id,
                created_at: s.created_at,
                disposed_at: None,
                cancelled: still,
            });
        }
        let cancel = ScopeCancel {
            cause: CancelCause::Scope,
            reason: None,
            failure: None,
            origin: s.id,
        };
        s.walk(&Walk {
            mode: Mode::Cancel,
            cancel: &cancel,
            at: None,
        });
    }
}

/// Every member of `s` and its descendants.
fn tree_members(s: &ScopeState) -> Vec<Rc<CoroState>> {
    let mut out = s.members();
    for c in s.children() {
        out.extend(tree_members(&c));
    }
    out
}

/// The scope of the running coroutine: where a plain [`spawn`](crate::spawn)
/// puts new coroutines (R-S1). Outside a coroutine (but inside a runtime),
/// the global scope.
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{current_scope, run};
///
/// run(|| assert!(current_scope().is_global())).unwrap();
/// ```
#[track_caller]
pub fn current_scope() -> ScopeRef {
    let scope = runtime::with_current(|rt, me| ScopeRef {
        state: me.and_then(|m| scope_of(m)).unwrap_or_else(|| global(rt)),
    });
    let Some(scope) = scope else {
        outside_runtime("current_scope")
    };
    scope
}

/// The global scope: the root of every scope, where the main coroutine
/// runs. Cancelling or disposing it starts graceful shutdown (R-GS1).
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{global_scope, run, Scope};
///
/// run(|| {
///     let g = global_scope();
///     assert!(g.is_global() && g.parent().is_none());
///     assert_eq!(Scope::new().parent().unwrap().id(), g.id());
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn global_scope() -> ScopeRef {
    let Some(state) = runtime::with_runtime(global) else {
        outside_runtime("global_scope")
    };
    ScopeRef { state }
}

impl ScopeRef {
    /// Its id.
    pub fn id(&self) -> ScopeId {
        self.state.id
    }

    /// Its parent (`None` for the global scope).
    pub fn parent(&self) -> Option<ScopeRef> {
        self.state.parent.clone().map(|state| ScopeRef { state })
    }

    /// True for the global scope.
    pub fn is_global(&self) -> bool {
        self.state.is_global
    }

    /// Where it was created.
    pub fn created_at(&self) -> &'static Location<'static> {
        self.state.created_at
    }

    /// True once it was cancelled or disposed: nothing more can be spawned
    /// in it (R-S4, D-8). The global scope is never closed.
    pub fn is_closed(&self) -> bool {
        self.state.is_closed()
    }

    /// True once it was cancelled (directly, through an ancestor, by a
    /// failure, by `dispose`, or by dropping its last owner).
    pub fn is_cancelled(&self) -> bool {
        self.state.is_cancelled()
    }

    /// True when no coroutine runs in it or its descendants, zombies
    /// included.
    pub fn is_finished(&self) -> bool {
        self.state.is_empty()
    }

    /// The coroutines registered in it now (not those of child scopes):
    /// the RFC's `Scope::getCoroutines()`.
    pub fn coroutines(&self) -> Vec<Coroutine> {
        self.state
            .members()
            .into_iter()
            .map(|state| Coroutine { state })
            .collect()
    }

    /// Its child scopes now: the RFC's `Scope::getChildScopes()`.
    pub fn child_scopes(&self) -> Vec<ScopeRef> {
        self.state
            .children()
            .into_iter()
            .map(|state| ScopeRef { state })
            .collect()
    }

    /// Cancels every coroutine in the scope and its child scopes (children
    /// first, R-S3) and closes the scope (D-8): the RFC's `$scope->cancel()`.
    ///
    /// On the global scope it starts graceful shutdown instead (nothing is
    /// closed, R-GS1). Calling it again does nothing.
    ///
    /// # Cancellation
    ///
    /// Not a suspension point. Cancelling the calling coroutine's own scope
    /// does not interrupt it here (D-11): it receives its cancellation at
    /// its next suspension point.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn_in, suspend, CancelCause, Scope};
    ///
    /// run(|| {
    ///     let scope = Scope::new();
    ///     let h = spawn_in(&scope, || delay(60_000)).unwrap();
    ///     suspend().unwrap();
    ///     scope.cancel();
    ///     assert!(scope.is_cancelled() && scope.is_closed());
    ///     let c = h.join().unwrap_err().cancelled().unwrap().clone();
    ///     assert_eq!(c.cause(), CancelCause::Scope);
    ///     assert_eq!(c.scope(), Some(scope.id()));
    /// })
    /// .unwrap();
    /// ```
    pub fn cancel(&self) {
        self.cancel_as(None);
    }

    /// [`cancel`](ScopeRef::cancel) with a reason, which every cancelled
    /// coroutine's [`Cancelled::reason`](crate::Cancelled::reason) carries.
    /// On a scope already cancelled it is ignored with a warning (R-S5).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn_in, suspend, Scope};
    ///
    /// run(|| {
    ///     let scope = Scope::new();
    ///     let h = spawn_in(&scope, || delay(60_000)).unwrap();
    ///     suspend().unwrap();
    ///     scope.cancel_with("server shutdown");
    ///     let c = h.join().unwrap_err().cancelled().unwrap().clone();
    ///     assert_eq!(c.to_string(), format!("coroutine {} cancelled: server shutdown", c.id()));
    /// })
    /// .unwrap();
    /// ```
    pub fn cancel_with(&self, reason: impl Into<String>) {
        self.cancel_as(Some(reason.into()));
    }

    fn cancel_as(&self, reason: Option<String>) {
        let s = &self.state;
        if s.is_global {
            shutdown::graceful(reason, None);
            return;
        }
        if s.is_cancelled() {
            if reason.is_some() {
                events::emit(Event::CancelIgnored { scope: s.id });
            }
            return;
        }
        let cancel = ScopeCancel {
            cause: CancelCause::Scope,
            reason,
            failure: None,
            origin: s.id,
        };
        s.walk(&Walk {
            mode: Mode::Cancel,
            cancel: &cancel,
            at: None,
        });
    }

    /// Cancels everything in the scope and its children, with a warning
    /// naming each coroutine that had not been cancelled yet, and closes it:
    /// the RFC's `$scope->dispose()`. May be called repeatedly.
    ///
    /// The warning says the coroutines were not cancelled on purpose but
    /// because the scope was disposed (the RFC's "error detection" 3). On
    /// the global scope it starts graceful shutdown.
    ///
    /// # Cancellation
    ///
    /// Not a suspension point (D-11 applies as for [`cancel`](ScopeRef::cancel)).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn_in, suspend, Scope};
    ///
    /// run(|| {
    ///     let scope = Scope::new();
    ///     let h = spawn_in(&scope, || delay(60_000)).unwrap();
    ///     suspend().unwrap();
    ///     scope.dispose(); // logs: scope N disposed at ...: cancelling coroutine M ...
    ///     assert!(h.join().unwrap_err().is_cancelled());
    ///     assert!(scope.is_closed());
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn dispose(&self) {
        let at = Location::caller();
        let s = &self.state;
        if s.is_global {
            shutdown::graceful(None, None);
            return;
        }
        let cancel = s.cancel_record().unwrap_or(ScopeCancel {
            cause: CancelCause::Scope,
            reason: None,
            failure: None,
            origin: s.id,
        });
        s.walk(&Walk {
            mode: Mode::Dispose,
            cancel: &cancel,
            at: Some(at),
        });
    }

    /// Closes the scope and its children without cancelling: unfinished
    /// coroutines become **zombies** (with a warning each) and keep running
    /// (R-S9): the RFC's `$scope->disposeSafely()`.
    ///
    /// Zombies do not count as active: [`await_completion`](ScopeRef::await_completion)
    /// does not wait for them, and they do not keep the program alive; once
    /// nothing else runs they get the zombie timeout
    /// ([`Builder::zombie_timeout`](crate::Builder::zombie_timeout), 5 s by
    /// default) and are then cancelled (R-S10, P-18).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn_in, suspend, timeout, Scope};
    ///
    /// run(|| {
    ///     let scope = Scope::new();
    ///     let h = spawn_in(&scope, || delay(20).is_ok()).unwrap();
    ///     suspend().unwrap();
    ///     scope.dispose_safely(); // logs: coroutine N (...) is a zombie: ...
    ///     assert!(scope.is_closed() && !scope.is_cancelled());
    ///     // Nothing active is left in it...
    ///     scope.await_completion(&timeout(0)).unwrap();
    ///     // ...but the zombie still runs to its end.
    ///     assert!(h.join().unwrap());
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn dispose_safely(&self) {
        let at = Location::caller();
        let s = &self.state;
        if s.is_global {
            return;
        }
        let cancel = ScopeCancel {
            cause: CancelCause::ZombieTimeout,
            reason: None,
            failure: None,
            origin: s.id,
        };
        s.walk(&Walk {
            mode: Mode::DisposeSafely,
            cancel: &cancel,
            at: Some(at),
        });
    }

    /// [`dispose_safely`](ScopeRef::dispose_safely) now, then cancels the
    /// zombies still running after `ms` milliseconds (D-10): the RFC's
    /// `$scope->disposeAfterTimeout($ms)`.
    ///
    /// The delay's timer keeps the program alive at most `ms` (an armed
    /// `delay` inside a zombie cannot extend it, P-18); it is dropped as
    /// soon as the scope is empty. The global zombie timeout may cancel the
    /// zombies earlier, once nothing else runs.
    ///
    /// # Errors
    ///
    /// [`ScopeErrorKind::InvalidTimeout`] if `ms` is 0 or 10 minutes or more
    /// (the RFC's bounds, R-S9); nothing was done to the scope.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{delay, run, spawn_in, suspend, CancelCause, Scope, ScopeErrorKind};
    ///
    /// run(|| {
    ///     let scope = Scope::new();
    ///     let h = spawn_in(&scope, || delay(60_000)).unwrap();
    ///     suspend().unwrap();
    ///     let err = scope.dispose_after_timeout(0).unwrap_err();
    ///     assert_eq!(err.kind(), ScopeErrorKind::InvalidTimeout);
    ///     scope.dispose_after_timeout(10).unwrap();
    ///     let c = h.join().unwrap_err();
    ///     assert_eq!(c.cancelled().unwrap().cause(), CancelCause::ZombieTimeout);
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn dispose_after_timeout(&self, ms: u64) -> Result<(), ScopeError> {
        if !(1..600_000).contains(&ms) {
            return Err(ScopeError::invalid_timeout(self.state.id, ms));
        }
        self.dispose_safely();
        self.state.arm_dispose_timer(Duration::from_millis(ms));
        Ok(())
    }

    /// Waits until every coroutine of the scope and its descendants has
    /// finished (zombies excluded), or until `cancellation` completes: the
    /// RFC's `$scope->awaitCompletion($cancellation)`.
    ///
    /// The token is mandatory, so the wait cannot last forever by accident.
    /// While it waits, the caller is a *responsibility point*: a failure of
    /// a coroutine in the scope that no handler took is delivered to every
    /// waiting point (the same [`Failure`]). The failure cancels the scope,
    /// and the wait returns it only once the scope is idle again, after the
    /// cancelled coroutines finished their cleanup (D-26, Trio's nursery
    /// rule), with the failures that arrived meanwhile
    /// [`attached`](Failure::attached) to it.
    ///
    /// # Errors
    ///
    /// - [`ScopeErrorKind::Failed`]: a coroutine of the scope or of a child
    ///   scope failed (the scope has been cancelled, and is idle now);
    /// - [`ScopeErrorKind::Cancelled`]: the scope is or got cancelled (at
    ///   once if it already was, R-S6); use
    ///   [`await_after_cancellation`](ScopeRef::await_after_cancellation)
    ///   then;
    /// - [`ScopeErrorKind::FromInside`]: called from a coroutine of the
    ///   scope or one of its descendants (R-S8);
    /// - [`ScopeErrorKind::AwaitCancelled`]: `cancellation` completed first;
    /// - [`ScopeErrorKind::Interrupted`]: the caller itself was cancelled.
    ///
    /// The last two end the wait at once, even while a received failure
    /// waits for the scope to become idle; the error then carries that
    /// failure ([`ScopeError::failure`]), so it is not lost.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point: the caller's cancellation wins over everything
    /// else (D-20). The scope is not affected.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, spawn, spawn_in, timeout, Scope, ScopeErrorKind};
    ///
    /// run(|| {
    ///     let scope = Scope::new();
    ///     spawn_in(&scope, || {
    ///         spawn(|| panic!("Error occurred"));
    ///     })
    ///     .unwrap();
    ///     let err = scope.await_completion(&timeout(5_000)).unwrap_err();
    ///     assert_eq!(err.kind(), ScopeErrorKind::Failed);
    ///     assert_eq!(err.failure().unwrap().panic_message(), Some("Error occurred"));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn await_completion(&self, cancellation: &dyn Awaitable) -> Result<(), ScopeError> {
        wait::await_completion(&self.state, cancellation, Location::caller())
    }

    /// Waits until every coroutine of a cancelled scope and its descendants
    /// has finished (zombies included: their cleanup too), or until
    /// `cancellation` completes: the RFC's `$scope->awaitAfterCancellation()`.
    ///
    /// Failures that happen meanwhile (cleanup that panics) go to
    /// `error_handler`, one call each; without a handler the first one is
    /// returned.
    ///
    /// # Errors
    ///
    /// [`ScopeErrorKind::NotCancelled`] if the scope was not cancelled;
    /// [`ScopeErrorKind::Failed`] (no handler);
    /// [`ScopeErrorKind::FromInside`], [`ScopeErrorKind::AwaitCancelled`],
    /// [`ScopeErrorKind::Interrupted`] as for
    /// [`await_completion`](ScopeRef::await_completion).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// As [`await_completion`](ScopeRef::await_completion).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    /// use async_std_api::{delay, run, spawn_in, suspend, timeout, Scope};
    ///
    /// run(|| {
    ///     let log = Rc::new(RefCell::new(Vec::new()));
    ///     let scope = Scope::new();
    ///     let l = log.clone();
    ///     spawn_in(&scope, move || {
    ///         if delay(60_000).is_err() {
    ///             delay(5).unwrap(); // cleanup may block (edge-triggered)
    ///             l.borrow_mut().push("Finally");
    ///         }
    ///     })
    ///     .unwrap();
    ///     suspend().unwrap();
    ///     scope.cancel();
    ///     scope.await_after_cancellation(None, Some(&timeout(5_000))).unwrap();
    ///     assert_eq!(*log.borrow(), ["Finally"]);
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn await_after_cancellation(
        &self,
        error_handler: Option<&dyn Fn(Failure)>,
        cancellation: Option<&dyn Awaitable>,
    ) -> Result<(), ScopeError> {
        wait::await_after_cancellation(&self.state, error_handler, cancellation, Location::caller())
    }

    /// Sets the handler of failures of this scope's coroutines (and of
    /// child scopes' failures, unless a child-scope handler is set): the
    /// RFC's `setExceptionHandler`.
    ///
    /// Called once per failure with the scope, the failing coroutine and
    /// the failure. `Ok(())` absorbs it: the scope is not cancelled and the
    /// failure goes no further. `Err(f)` passes `f` (the same or another) on
    /// to the parent scope; so does a panic inside the handler (as a
    /// failure of the handler).
    ///
    /// # Errors
    ///
    /// [`ScopeErrorKind::GlobalScope`] on the global scope.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    /// use async_std_api::{run, spawn_in, timeout, Scope};
    ///
    /// run(|| {
    ///     let seen = Rc::new(RefCell::new(Vec::new()));
    ///     let scope = Scope::new();
    ///     let s = seen.clone();
    ///     scope
    ///         .set_exception_handler(move |_, _, f| {
    ///             s.borrow_mut().push(f.panic_message().unwrap().to_owned());
    ///             Ok(())
    ///         })
    ///         .unwrap();
    ///     spawn_in(&scope, || panic!("Task 1")).unwrap();
    ///     scope.await_completion(&timeout(5_000)).unwrap();
    ///     assert_eq!(*seen.borrow(), ["Task 1"]);
    ///     assert!(!scope.is_cancelled());
    /// })
    /// .unwrap();
    /// ```
    pub fn set_exception_handler<F>(&self, handler: F) -> Result<(), ScopeError>
    where
        F: Fn(&ScopeRef, &Coroutine, &Failure) -> Result<(), Failure> + 'static,
    {
        if self.state.is_global {
            return Err(ScopeError::plain(self.id(), ScopeErrorKind::GlobalScope));
        }
        *self.state.handler.borrow_mut() = Some(Rc::new(handler));
        Ok(())
    }

    /// Sets the handler of failures that come from child scopes: the RFC's
    /// `setChildScopeExceptionHandler`, the building block of supervisors.
    /// Same contract as [`set_exception_handler`](ScopeRef::set_exception_handler);
    /// it takes precedence over it for failures from children.
    ///
    /// # Errors
    ///
    /// [`ScopeErrorKind::GlobalScope`] on the global scope.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use async_std_api::{run, spawn_in, timeout, Scope};
    ///
    /// run(|| {
    ///     let service = Scope::new();
    ///     let failures = Rc::new(Cell::new(0));
    ///     let f2 = failures.clone();
    ///     service
    ///         .set_child_scope_exception_handler(move |_, _, _| {
    ///             f2.set(f2.get() + 1);
    ///             Ok(())
    ///         })
    ///         .unwrap();
    ///     let request = Scope::inherit_from(&service);
    ///     spawn_in(&request, || panic!("bad request")).unwrap();
    ///     service.await_completion(&timeout(5_000)).unwrap();
    ///     assert_eq!(failures.get(), 1);
    ///     assert!(request.is_cancelled() && !service.is_cancelled());
    /// })
    /// .unwrap();
    /// ```
    pub fn set_child_scope_exception_handler<F>(&self, handler: F) -> Result<(), ScopeError>
    where
        F: Fn(&ScopeRef, &Coroutine, &Failure) -> Result<(), Failure> + 'static,
    {
        if self.state.is_global {
            return Err(ScopeError::plain(self.id(), ScopeErrorKind::GlobalScope));
        }
        *self.state.child_handler.borrow_mut() = Some(Rc::new(handler));
        Ok(())
    }

    /// Registers `f` to run once when the scope is done (closed, and no
    /// coroutine left in it or its descendants): the RFC's
    /// `$scope->onFinally()`. If it is already done, `f` runs now. Handlers
    /// run newest first; a panicking one is a failure reported to the
    /// parent scope.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use async_std_api::{run, spawn_in, timeout, Scope};
    ///
    /// run(|| {
    ///     let ran = Rc::new(Cell::new(false));
    ///     let scope = Scope::new();
    ///     let r = ran.clone();
    ///     scope.on_finally(move || r.set(true));
    ///     spawn_in(&scope, || ()).unwrap();
    ///     scope.await_completion(&timeout(5_000)).unwrap();
    ///     assert!(!ran.get()); // not closed yet
    ///     scope.dispose();
    ///     assert!(ran.get());
    /// })
    /// .unwrap();
    /// ```
    pub fn on_finally(&self, f: impl FnOnce() + 'static) {
        self.state.on_finally(Box::new(f));
    }

    /// The scope's context: the RFC's `$scope->context` (R-CX1, R-S11).
    ///
    /// Made with the scope's record on first use and chained to the parent
    /// scope's context (a [`Scope::new`] scope's parent is the global
    /// scope, so every chain ends at the global context). Its values live
    /// as long as the scope's record: until no handle, member coroutine or
    /// child scope is left (the RFC frees them "once all coroutines owning
    /// the Scope complete, or the Scope itself is terminated"; a handle
    /// kept after `dispose` keeps them too, and a [`Context`](crate::Context)
    /// handle keeps them as well). See [`Context`](crate::Context).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run, Scope};
    ///
    /// run(|| {
    ///     let child = Scope::inherit();
    ///     child.context().set("k", 1).unwrap();
    ///     assert!(child.context().ptr_eq(&child.context()));
    ///     assert!(child.context().parent().unwrap().ptr_eq(&current_context()));
    ///     assert!(!current_context().has("k"));
    /// })
    /// .unwrap();
    /// ```
    pub fn context(&self) -> Context {
        of_scope(&self.state)
    }
}

impl Coroutine {
    /// The scope it runs in (`None` once it has finished: a finished
    /// coroutine keeps no scope alive).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current, current_scope, run};
    ///
    /// run(|| assert_eq!(current().scope(), Some(current_scope()))).unwrap();
    /// ```
    pub fn scope(&self) -> Option<ScopeRef> {
        scope_of(&self.state).map(|state| ScopeRef { state })
    }
}

impl fmt::Debug for ScopeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeRef")
            .field("id", &self.id())
            .field("closed", &self.is_closed())
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl PartialEq for ScopeRef {
    fn eq(&self, other: &ScopeRef) -> bool {
        Rc::ptr_eq(&self.state, &other.state)
    }
}

impl Eq for ScopeRef {}
