//! The host's record of one scope: membership, the tree, the counters that
//! make "wait for the scope and its descendants" O(1) per change, and the
//! cancel / dispose / zombify walks.
//!
//! Owns: [`ScopeState`] (shared by `Rc` between the scope's handles, its
//! member coroutines, its child scopes' `parent` links and the runtime for
//! the global scope).
//!
//! Invariants:
//! - **SC1** Membership: a coroutine belongs to exactly one scope from
//!   spawn until its finish accounting (I5 in `task::state`): its `scope`.
//!   A scope other than the global one also lists it in `members`, under
//!   the key it keeps in `CoroState::member_key`; add and remove are O(1)
//!   (`slab`), whatever the number of members. The global scope keeps no
//!   list (its members are the scheduler's live coroutines whose `scope` is
//!   it, found with `iterate` when needed: listing, shutdown), which keeps
//!   the most common spawn to a counter.
//! - **SC2** Tree links: a child holds its parent strongly (`parent`); a
//!   parent holds its children weakly (`children`, under `parent_key`), so a
//!   scope record lives while a handle, a member or a child needs it, and a
//!   dropped child leaves its parent's set in `Drop`.
//! - **SC3** Counters: `active` = own members that are not zombies + child
//!   scopes whose `active` > 0; `live` = own members + child scopes whose
//!   `live` > 0. A count changes its parent's only when it crosses zero, so
//!   a spawn or a finish touches one scope unless the scope goes from idle
//!   to busy or back (amortised O(1)); "the scope and all its descendants
//!   are done" is `active == 0` (zombies excluded, R-S10) or `live == 0`.
//! - **SC4** `closed` only goes from false to true (R-S3, D-8): after
//!   `cancel` or any `dispose*`, spawning into the scope is refused (R-S4).
//!   The global scope is never closed (graceful shutdown keeps spawning
//!   allowed, R-GS1).
//! - **SC5** `cancelled` is set once (the first cause and reason win; R-S5)
//!   and never cleared. `failure` is the scope's first failure (D-4), set
//!   once.
//! - **SC6** `finally` handlers run exactly once, when the scope is *done*:
//!   closed and `live == 0`; a handler added afterwards runs at once.
//!
//! Who touches what: the loop thread only. No `RefCell` borrow is held
//! while user code runs (handlers, finally handlers) or while another
//! scope's method is called, so re-entry from user code is safe.
//!
//! Drop order: a scope record drops when its last handle, member and child
//! are gone; by SC3 it is then idle. The dispose timer it may own is
//! dropped with it (or as soon as `live` reaches 0).

use std::any::Any;
use std::cell::{Cell, OnceCell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::rc::{Rc, Weak};
use std::time::Duration;

use super::ScopeRef;
use crate::core::cancel::cancel_with;
use crate::core::coroutine::Coroutine;
use crate::core::error::{CancelCause, Cancelled};
use crate::core::events::{self, Event};
use crate::core::failure::{Failure, FailureOrigin};
use crate::core::id::ScopeId;
use crate::core::runtime::{self, TimerEvent};
use crate::core::slab::Slab;
use crate::core::state::{CoroState, Membership, BODY_DONE, IN_GROUP, ZOMBIE};
use crate::core::waiters::Notify;
use crate::structured::{shutdown, zombie};

/// An exception handler (R-S11, the RFC's `setExceptionHandler`): `Ok`
/// absorbs the failure, `Err` passes a failure on to the parent scope.
pub(crate) type Handler = Rc<dyn Fn(&ScopeRef, &Coroutine, &Failure) -> Result<(), Failure>>;

/// How a scope was cancelled (SC5).
#[derive(Clone)]
pub(crate) struct ScopeCancel {
    pub(crate) cause: CancelCause,
    pub(crate) reason: Option<String>,
    pub(crate) failure: Option<Failure>,
    /// The scope `cancel` was called on (this one or an ancestor).
    pub(crate) origin: ScopeId,
}

/// What a walk over the tree does to each member (R-S9).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// `cancel`: cancel every coroutine, no warning.
    Cancel,
    /// `dispose`: cancel every unfinished coroutine, with a warning each.
    Dispose,
    /// `dispose_safely`: unfinished coroutines become zombies, with a
    /// warning each; nothing is cancelled.
    DisposeSafely,
    /// Graceful shutdown (R-GS1): cancel every coroutine, close nothing.
    Shutdown,
    /// The zombie timeout passed: cancel the zombies only.
    Zombies,
}

/// One walk: the mode and the cancellation the members receive.
pub(crate) struct Walk<'a> {
    pub(crate) mode: Mode,
    pub(crate) cancel: &'a ScopeCancel,
    /// Where `dispose*` was called (for the warnings).
    pub(crate) at: Option<&'static Location<'static>>,
}

/// Responsibility points (the RFC's `awaitCompletion` callers): how many
/// wait now, and the failures delivered to them, numbered.
#[derive(Default)]
struct Responsibility {
    points: usize,
    /// Failures delivered since the oldest waiter started; `log[i]` has
    /// serial `base + i`.
    log: Vec<Failure>,
    base: u64,
}

/// The host's record of one scope.
pub(crate) struct ScopeState {
    pub(crate) id: ScopeId,
    /// SC2.
    pub(crate) parent: Option<Rc<ScopeState>>,
    parent_key: Cell<usize>,
    pub(crate) created_at: &'static Location<'static>,
    pub(crate) is_global: bool,
    /// SC1.
    members: RefCell<Slab<Rc<CoroState>>>,
    /// SC2.
    children: RefCell<Slab<Weak<ScopeState>>>,
    /// SC3.
    active: Cell<usize>,
    live: Cell<usize>,
    /// SC4.
    closed: Cell<bool>,
    /// SC5.
    cancelled: RefCell<Option<ScopeCancel>>,
    failure: RefCell<Option<Failure>>,
    pub(crate) handler: RefCell<Option<Handler>>,
    pub(crate) child_handler: RefCell<Option<Handler>>,
    /// SC6.
    finally: RefCell<Vec<Box<dyn FnOnce()>>>,
    finally_done: Cell<bool>,
    /// Wakes `await_completion` / `await_after_cancellation` waiters when
    /// the scope goes idle, is cancelled, or a failure is delivered.
    pub(crate) notify: Notify,
    resp: RefCell<Responsibility>,
    dispose_timer: RefCell<Option<TimerEvent>>,
    /// The hook for the scope's Context (R-CX1): see
    /// [`ScopeState::context`].
    context: OnceCell<Rc<dyn Any>>,
}

impl ScopeState {
    /// A new scope, child of `parent` (None: the global scope). A child of
    /// a closed scope starts closed and cancelled (it could never run
    /// anything).
    pub(crate) fn new(
        id: ScopeId,
        parent: Option<Rc<ScopeState>>,
        created_at: &'static Location<'static>,
    ) -> Rc<ScopeState> {
        let is_global = parent.is_none();
        let inherited = parent
            .as_ref()
            .filter(|p| p.is_closed())
            .map(|p| ScopeCancel {
                cause: CancelCause::Scope,
                reason: None,
                failure: p.failure(),
                origin: p.id,
            });
        let state = Rc::new(ScopeState {
            id,
            parent,
            parent_key: Cell::new(usize::MAX),
            created_at,
            is_global,
            members: RefCell::new(Slab::new()),
            children: RefCell::new(Slab::new()),
            active: Cell::new(0),
            live: Cell::new(0),
            closed: Cell::new(inherited.is_some()),
            cancelled: RefCell::new(inherited),
            failure: RefCell::new(None),
            handler: RefCell::new(None),
            child_handler: RefCell::new(None),
            finally: RefCell::new(Vec::new()),
            finally_done: Cell::new(false),
            notify: Notify::new(),
            resp: RefCell::new(Responsibility::default()),
            dispose_timer: RefCell::new(None),
            context: OnceCell::new(),
        });
        if let Some(p) = &state.parent {
            let key = p.children.borrow_mut().insert(Rc::downgrade(&state));
            state.parent_key.set(key);
        }
        state
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.get()
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.borrow().is_some()
    }

    pub(crate) fn cancel_record(&self) -> Option<ScopeCancel> {
        self.cancelled.borrow().clone()
    }

    pub(crate) fn failure(&self) -> Option<Failure> {
        self.failure.borrow().clone()
    }

    pub(crate) fn set_failure(&self, f: Failure) {
        let mut slot = self.failure.borrow_mut();
        if slot.is_none() {
            *slot = Some(f);
        }
    }

    /// No non-zombie coroutine left in the scope or its descendants.
    pub(crate) fn is_idle(&self) -> bool {
        self.active.get() == 0
    }

    /// No coroutine at all (zombies included) left in the tree.
    pub(crate) fn is_empty(&self) -> bool {
        self.live.get() == 0
    }

    /// True if `self` is `other` or one of its descendants.
    pub(crate) fn is_within(&self, other: &ScopeState) -> bool {
        let mut s: Option<&ScopeState> = Some(self);
        while let Some(x) = s {
            if std::ptr::eq(x, other) {
                return true;
            }
            s = x.parent.as_deref();
        }
        false
    }

    // ---- the Context hook (R-CX1, R-S11) ----

    /// The scope's Context record, of the context module's type `C`: made
    /// once per scope by `make`, which receives the parent scope's record
    /// (made first, so the chain exists up to the global scope's) to chain
    /// to. Every later call returns the same `Rc`; the record lives as long
    /// as the scope's record (SC2: while a handle, a member or a child needs
    /// it), so its values are dropped when the scope is gone.
    ///
    /// # Panics
    ///
    /// If two different types are used for the same scope (one context
    /// module owns this slot).
    pub(crate) fn context<C: 'static>(&self, make: &dyn Fn(Option<Rc<C>>) -> Rc<C>) -> Rc<C> {
        if let Some(c) = self.context.get() {
            return Rc::clone(c)
                .downcast::<C>()
                .unwrap_or_else(|_| panic!("one context type per scope"));
        }
        let parent = self.parent.as_ref().map(|p| p.context(make));
        let c = make(parent);
        let _ = self.context.set(c.clone() as Rc<dyn Any>);
        c
    }

    // ---- membership (SC1) and counters (SC3) ----

    /// Adds a new coroutine (not started yet) to the scope.
    #[inline]
    pub(crate) fn add_member(self: &Rc<Self>, state: &Rc<CoroState>) {
        self.clone().admit(state);
    }

    /// Removes a finished coroutine (whose `scope` was just taken, I5); may
    /// make the scope idle, empty, done.
    #[inline]
    pub(crate) fn remove_member(&self, state: &CoroState) {
        let key = state.member_key.replace(usize::MAX);
        if key != usize::MAX {
            let removed = self.members.borrow_mut().remove(key);
            drop(removed);
        }
        if !state.has_flag(ZOMBIE) {
            self.dec_active();
        }
        self.dec_live();
    }

    #[inline]
    fn inc_active(&self) {
        let n = self.active.get();
        self.active.set(n + 1);
        if n == 0 {
            self.became_active();
        }
    }

    #[cold]
    fn became_active(&self) {
        match &self.parent {
            Some(p) => p.inc_active(),
            None => zombie::global_busy(),
        }
    }

    #[inline]
    fn dec_active(&self) {
        let n = self.active.get() - 1;
        self.active.set(n);
        if n == 0 {
            self.became_idle();
        }
    }

    #[cold]
    fn became_idle(&self) {
        self.notify.wake_all();
        match &self.parent {
            Some(p) => p.dec_active(),
            None => zombie::global_idle(),
        }
    }

    #[inline]
    fn inc_live(&self) {
        let n = self.live.get();
        self.live.set(n + 1);
        if n == 0 {
            if let Some(p) = &self.parent {
                p.inc_live();
            }
        }
    }

    #[inline]
    fn dec_live(&self) {
        let n = self.live.get() - 1;
        self.live.set(n);
        if n == 0 {
            self.became_empty();
        }
    }

    #[cold]
    fn became_empty(&self) {
        self.notify.wake_all();
        drop(self.dispose_timer.borrow_mut().take());
        if self.closed.get() {
            self.run_finally();
        }
        if let Some(p) = &self.parent {
            p.dec_live();
        }
    }

    // ---- introspection ----

    /// The members now (a snapshot). For the global scope (SC1), the
    /// scheduler's live coroutines that belong to it.
    pub(crate) fn members(&self) -> Vec<Rc<CoroState>> {
        if self.is_global {
            let all = runtime::with_runtime(|rt| rt.sched.live_coroutines()).unwrap_or_default();
            return all
                .into_iter()
                .filter(|m| scope_of(m).is_some_and(|s| std::ptr::eq(&*s, self)))
                .collect();
        }
        self.members.borrow().iter().cloned().collect()
    }

    /// The child scopes now (a snapshot).
    pub(crate) fn children(&self) -> Vec<Rc<ScopeState>> {
        self.children
            .borrow()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    // ---- cancel, dispose, zombies (R-S3, R-S9) ----

    /// Applies `walk` to the tree: children first (bottom-up, R-S3), with
    /// the same strategy; then this scope's own members. Closes each scope
    /// unless the mode is `Shutdown` or `Zombies` (SC4).
    pub(crate) fn walk(&self, walk: &Walk<'_>) {
        let closes = !matches!(walk.mode, Mode::Shutdown | Mode::Zombies);
        let cancels = !matches!(walk.mode, Mode::DisposeSafely | Mode::Zombies);
        if closes && !self.is_global {
            self.closed.set(true);
        }
        if cancels {
            let mut c = self.cancelled.borrow_mut();
            if c.is_none() {
                *c = Some(walk.cancel.clone());
            }
        }
        for child in self.children() {
            child.walk(walk);
        }
        let mut dispose_warnings = Vec::new();
        for m in self.members() {
            if m.is_finished() {
                continue;
            }
            match walk.mode {
                Mode::Cancel | Mode::Shutdown => cancel_member(&m, walk.cancel),
                Mode::Dispose => {
                    // R-TG5: a task group's explicit tasks are disposed with
                    // their group, without a warning; a member whose body is
                    // done is finishing (a scope disposed from its own
                    // on_finally handler), not cancelled.
                    if !m.is_cancellation_requested() && !m.has_flag(IN_GROUP | BODY_DONE) {
                        dispose_warnings.push(m.event_ref());
                    }
                    cancel_member(&m, walk.cancel);
                }
                Mode::DisposeSafely => {
                    if !m.has_flag(ZOMBIE) {
                        self.zombify(&m, walk.at);
                    }
                }
                Mode::Zombies => {
                    if m.has_flag(ZOMBIE) {
                        cancel_member(&m, walk.cancel);
                    }
                }
            }
        }
        if !dispose_warnings.is_empty() {
            events::emit(Event::ScopeDisposed {
                scope: self.id,
                created_at: self.created_at,
                disposed_at: walk.at,
                cancelled: dispose_warnings,
            });
        }
        self.notify.wake_all();
        if self.closed.get() && self.live.get() == 0 {
            self.run_finally();
        }
    }

    /// Makes `m` a zombie (R-S9, R-S10): it keeps running, no longer counts
    /// as active, and is reported.
    fn zombify(&self, m: &Rc<CoroState>, at: Option<&'static Location<'static>>) {
        m.set_flag(ZOMBIE, true);
        events::emit(Event::Zombie {
            coroutine: m.event_ref(),
            scope: self.id,
            disposed_at: at,
        });
        zombie::add(m);
        self.dec_active();
    }

    /// Arms the delay of `dispose_after_timeout` (D-10): once it passes, the
    /// zombies still running in this tree are cancelled. Dropped as soon as
    /// the tree is empty (or with the scope).
    pub(crate) fn arm_dispose_timer(self: &Rc<Self>, after: Duration) {
        if self.live.get() == 0 {
            return;
        }
        let weak = Rc::downgrade(self);
        let on_fire = Box::new(move |_status| {
            if let Some(s) = weak.upgrade() {
                let cancel = ScopeCancel {
                    cause: CancelCause::ZombieTimeout,
                    reason: None,
                    failure: None,
                    origin: s.id,
                };
                s.walk(&Walk {
                    mode: Mode::Zombies,
                    cancel: &cancel,
                    at: None,
                });
            }
        });
        let nanos = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
        let timer =
            runtime::with_runtime(|rt| rt.reactor.timer(nanos, on_fire)).and_then(Result::ok);
        *self.dispose_timer.borrow_mut() = timer;
    }

    // ---- finally handlers (SC6) ----

    /// Adds a finally handler, or runs it now if the scope is done.
    pub(crate) fn on_finally(&self, f: Box<dyn FnOnce()>) {
        if self.finally_done.get() {
            f();
        } else {
            self.finally.borrow_mut().push(f);
        }
    }

    /// Runs the finally handlers once (SC6), newest first; a panicking one
    /// is a failure of this scope's parent.
    pub(crate) fn run_finally(&self) {
        if self.finally_done.replace(true) {
            return;
        }
        let mut failures: Option<Failure> = None;
        loop {
            let handlers = std::mem::take(&mut *self.finally.borrow_mut());
            if handlers.is_empty() {
                break;
            }
            for h in handlers.into_iter().rev() {
                if let Err(p) = catch_unwind(AssertUnwindSafe(h)) {
                    let f = Failure::from_panic(FailureOrigin::ScopeFinally(self.id), p);
                    match &failures {
                        Some(first) => first.attach(f),
                        None => failures = Some(f),
                    }
                }
            }
        }
        if let Some(f) = failures {
            match &self.parent {
                Some(p) => super::flow::failed_in_context(p, f, true),
                None => shutdown::unhandled_failure(f),
            }
        }
    }

    // ---- responsibility points (R-S6, the RFC's error flow step 5) ----

    /// A responsibility point starts waiting; returns its cursor in the log.
    pub(crate) fn resp_enter(&self) -> u64 {
        let mut r = self.resp.borrow_mut();
        r.points += 1;
        r.base + r.log.len() as u64
    }

    /// A responsibility point stops waiting; the log is cleared once none
    /// waits.
    pub(crate) fn resp_leave(&self) {
        let mut r = self.resp.borrow_mut();
        r.points -= 1;
        if r.points == 0 {
            let n = r.log.len() as u64;
            r.base += n;
            r.log.clear();
        }
    }

    /// True if a responsibility point waits now.
    pub(crate) fn has_resp_points(&self) -> bool {
        self.resp.borrow().points > 0
    }

    /// Delivers a failure to every waiting responsibility point.
    pub(crate) fn resp_deliver(&self, f: Failure) {
        self.resp.borrow_mut().log.push(f);
        self.notify.wake_all();
    }

    /// The failure at `cursor`, if delivered since.
    pub(crate) fn resp_failure_at(&self, cursor: u64) -> Option<Failure> {
        let r = self.resp.borrow();
        let i = cursor.checked_sub(r.base)?;
        r.log.get(usize::try_from(i).ok()?).cloned()
    }
}

impl Membership for ScopeState {
    /// A member finished (SP2 in `core::entry`): the error flow for its
    /// unawaited failure and its `on_finally` failures (`flow`), the zombie
    /// set, its extra record, and then it leaves the scope (SC1, I5).
    #[inline]
    fn finished(
        self: Rc<Self>,
        state: &Rc<CoroState>,
        unawaited: Option<Failure>,
        finally_failure: Option<Failure>,
    ) {
        if unawaited.is_some() || finally_failure.is_some() {
            // The handlers see the coroutine still in its scope (I5).
            state.scope.set(Some(self.clone() as Rc<dyn Membership>));
            super::flow::report(&self, state, unawaited, finally_failure);
            drop(state.scope.take());
        }
        if state.has_flag(ZOMBIE) {
            zombie::remove(state);
        }
        // Its handlers ran and its zombie key is gone: the extra record, and
        // the coroutine-local context in it, dies with the coroutine (R-CX2).
        state.drop_extra();
        self.remove_member(state);
    }

    fn as_any(self: Rc<Self>) -> Rc<dyn Any> {
        self
    }

    #[inline]
    fn closed(&self) -> Option<ScopeId> {
        self.is_closed().then_some(self.id)
    }

    #[inline]
    fn admit(self: Rc<Self>, state: &Rc<CoroState>) {
        if !self.is_global {
            let key = self.members.borrow_mut().insert(state.clone());
            state.member_key.set(key);
        }
        self.inc_active();
        self.inc_live();
        state.scope.set(Some(self as Rc<dyn Membership>));
    }
}

/// The scope `state` belongs to (a new reference), while it has one (I5).
#[inline]
pub(crate) fn scope_of(state: &CoroState) -> Option<Rc<ScopeState>> {
    state.scope()?.as_any().downcast::<ScopeState>().ok()
}

impl Drop for ScopeState {
    fn drop(&mut self) {
        if let Some(p) = &self.parent {
            p.children.borrow_mut().remove(self.parent_key.get());
        }
    }
}

/// Cancels a member with the scope's cancellation (its own `Cancelled`).
fn cancel_member(m: &Rc<CoroState>, c: &ScopeCancel) {
    let cancelled = Cancelled::of(m.id(), c.cause, c.reason.clone())
        .with_origin(Some(c.origin), c.failure.clone());
    cancel_with(m, cancelled);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the context module's record: the chain it was given.
    struct Ctx {
        scope: u64,
        parent: Option<Rc<Ctx>>,
    }

    #[test]
    fn the_context_hook_is_made_once_per_scope_and_chained_to_the_parent() {
        let at = Location::caller();
        let global = ScopeState::new(ScopeId(1), None, at);
        let child = ScopeState::new(ScopeId(2), Some(global.clone()), at);
        let made = std::cell::Cell::new(0);
        let make = |parent: Option<Rc<Ctx>>| {
            made.set(made.get() + 1);
            let scope = parent.as_ref().map_or(1, |p| p.scope + 1);
            Rc::new(Ctx { scope, parent })
        };
        let c = child.context(&make);
        assert_eq!(c.scope, 2);
        let p = c.parent.clone().unwrap();
        assert_eq!(p.scope, 1);
        assert!(Rc::ptr_eq(&p, &global.context(&make)));
        assert!(Rc::ptr_eq(&c, &child.context(&make)));
        assert_eq!(made.get(), 2, "one record per scope");
    }
}
