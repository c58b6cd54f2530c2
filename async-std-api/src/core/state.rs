//! The host's record of one coroutine.
//!
//! Owns: [`CoroState`] (one per coroutine, shared by `Rc` between the
//! coroutine's entry, its handles, the member set of the scope it belongs
//! to and the waiter lists it is in). The waiter lists themselves are in
//! `core::waiters`.
//!
//! Invariants:
//! - **I1** `raw` is non-null exactly while the coroutine's entry has not
//!   returned: the scheduler still owns a live handle (ABI rule C2), so the
//!   FFI wrappers may pass it to `enqueue`/`coroutine_info`. The entry
//!   trampoline nulls it as its last step.
//! - **I2** `outcome` is set once, by the entry, before the coroutine's
//!   completion fires; a finished coroutine's outcome never changes.
//! - **I3** `cancel` is set at most once (first reason wins) and is never
//!   cleared (`is_cancellation_requested` is sticky). `cancel_pending` says
//!   the coroutine has not seen it yet; it is cleared when delivered (D-1:
//!   once) and may be set again only by I/O that returned data first (P-08)
//!   or by the end of the outermost `protect` (D-21). While `protect_depth`
//!   is non-zero a request is kept in `cancel_deferred` instead, and the
//!   coroutine is not enqueued with it (R-C2).
//! - **I4** A waiter is in a [`WaitList`] only while it runs the wait loop
//!   that put it there; the loop removes it before returning (a drop guard
//!   does it when the stack unwinds). A completion keeps the waiter's
//!   scheduler handle (`raw`; the oldest in its `solo` slot, the others in
//!   the list), which is therefore live whenever it is kept (I1), so a
//!   completion can enqueue it (F4) without holding a reference count.
//! - **I5** `scope` is set from spawn until the coroutine's finish
//!   accounting ([`Membership::finished`]), while the coroutine is a member
//!   of that scope under `member_key`; then both are cleared, so a finished
//!   coroutine keeps no scope (and no context) alive. The core never looks
//!   inside the scope: it is the layer above's record, behind
//!   [`Membership`].
//! - **I6** Once `BODY_DONE` is set (the body returned, panicked, or never
//!   ran) a cancellation request is refused: the outcome is decided (D-11)
//!   and `on_finally` handlers run undisturbed.
//!
//! Everything here is touched only on the loop thread (`!Send` by `Rc`).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::ptr;
use std::rc::Rc;

use async_abi::AaCoroutine;

use super::error::{CancelCause, Cancelled};
use super::events::{self, CoroutineRef, Event};
use super::failure::Failure;
use super::id::{CoroutineId, ScopeId};
use super::runtime;
use super::waiters::Completion;

/// The body of a coroutine, type-erased: returns the value boxed, or the
/// failure / cancellation a [`spawn_try`](crate::spawn_try) body returned.
pub(crate) type Body = Box<dyn FnOnce() -> BodyResult>;

/// What a body produced.
pub(crate) enum BodyResult {
    /// A value (boxed as `Box<T>`).
    Value(Box<dyn Any>),
    /// A `spawn_try` body returned an error that is not a cancellation.
    Error(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A `spawn_try` body returned a cancellation (R-C1: suppressed).
    /// Boxed: the common variants stay small to move.
    Cancelled(Box<Cancelled>),
}

/// How a finished coroutine ended (I2).
pub(crate) enum Outcome {
    /// Its body returned; the value until a `join` takes it.
    Value(Option<Box<dyn Any>>),
    /// It ended because it was cancelled (never started, unwound, returned
    /// with its cancellation undelivered, or returned it). Boxed: the common
    /// variants stay small to move.
    Cancelled(Box<Cancelled>),
    /// It failed; shared by all waiters (FA1 in `task::failure`).
    Failed(Failure),
}

/// Rarely used parts of a coroutine's record, allocated on first use so the
/// common spawn writes nothing for them.
#[derive(Default)]
pub(crate) struct CoroExtra {
    /// `on_finally` handlers, run once, newest first (R-CO8, D-12).
    pub(crate) on_finally: Vec<Box<dyn FnOnce()>>,
    /// The key in the runtime's zombie set while it is a zombie (R-S10).
    pub(crate) zombie_key: Option<usize>,
    /// A hook for the coroutine-local context (`coroutine_context()`): a
    /// value that lives exactly as long as the coroutine runs, dropped at
    /// its finish (R-CX2): see [`CoroState::with_local_context`].
    pub(crate) local: Option<Box<dyn Any>>,
    /// The task group this coroutine is an explicit task of (R-TG1), and
    /// its key in the group's task set; set with [`IN_GROUP`] before the
    /// coroutine is queued, taken at its finish (`structured::task_group` TG2).
    pub(crate) group: Option<(Rc<dyn GroupSink>, usize)>,
    /// Its stack at its last suspension, when the runtime traces (the
    /// RFC's `getTrace`, `Builder::trace`).
    pub(crate) trace: Option<std::backtrace::Backtrace>,
}

/// What a task group is told when one of its explicit tasks finishes
/// (the hook `structured::task_group` needs; see TG2 there).
pub(crate) trait GroupSink {
    /// The task under `key` finished and its outcome is stored (the sink
    /// may take the value out of it). Returns true if the group is being
    /// awaited: a failure is then consumed by that await, as by a `join`
    /// (D-3, R-TG2).
    fn task_finished(&self, key: usize, task: &CoroState) -> bool;
}

/// The layer above's record of the scope a coroutine belongs to (I5),
/// opaque to the core: kept from spawn to the finish, then told. Its one
/// implementation is the scope record of `structured::scope`; like
/// [`GroupSink`], it is the seam that keeps the core from knowing scopes.
pub(crate) trait Membership: Any {
    /// `state` finished: its outcome is stored and its joiners were woken;
    /// `state.scope` was taken already (the finish owns this reference).
    /// `unawaited` is its failure if no await consumed it (D-3),
    /// `finally_failure` the failures of its `on_finally` handlers (D-12).
    /// The implementation must end with [`CoroState::drop_extra`] and
    /// leave the scope.
    fn finished(
        self: Rc<Self>,
        state: &Rc<CoroState>,
        unawaited: Option<Failure>,
        finally_failure: Option<Failure>,
    );

    /// This record as `Any`, for the layer above to get its own type back.
    fn as_any(self: Rc<Self>) -> Rc<dyn Any>;

    /// The scope's id if it takes no new member (it is closed).
    fn closed(&self) -> Option<ScopeId>;

    /// Takes `state`, not started yet, as a member; this reference (one
    /// the caller made for it) becomes its `scope` (I5). The spawn path
    /// goes through these two, not `as_any`, so it pays no downcast and
    /// no extra reference count.
    fn admit(self: Rc<Self>, state: &Rc<CoroState>);
}

/// `flags` bit: the body is done (I6).
pub(crate) const BODY_DONE: u8 = 1 << 0;
/// `flags` bit: a zombie (R-S9): it does not count as active.
pub(crate) const ZOMBIE: u8 = 1 << 1;
/// `flags` bit: spawned with `AA_PRIORITY_HIGH` (R-HP1).
pub(crate) const HI_PRIORITY: u8 = 1 << 2;
/// `flags` bit: an `on_finally` handler was registered (the finish checks
/// the bit, not the extra record).
pub(crate) const HAS_FINALLY: u8 = 1 << 3;
/// `flags` bit: registered with the watchdog (WD4), so its finish
/// unregisters it.
pub(crate) const WATCHED: u8 = 1 << 4;
/// `flags` bit: forced shutdown (GS3 in `core::runtime::lifecycle`): its
/// cancellation stays pending, and every suspension point unwinds it.
pub(crate) const FORCED: u8 = 1 << 5;
/// `flags` bit: an explicit task of a task group (R-TG1): its finish tells
/// the group (`CoroExtra::group`), so it takes the uncommon end.
pub(crate) const IN_GROUP: u8 = 1 << 6;
/// `flags` bit: a cancellation was recorded (I3), delivered or not: the
/// finish tests this bit, not the `RefCell`, to keep the common end cheap
/// (D-11, D-25).
pub(crate) const CANCEL_REQUESTED: u8 = 1 << 7;

/// The host's record of one coroutine.
pub(crate) struct CoroState {
    /// Set right after `coroutine_new`.
    pub(crate) id: Cell<u64>,
    /// I1.
    pub(crate) raw: Cell<*mut AaCoroutine>,
    pub(crate) location: &'static Location<'static>,
    /// The main coroutine: its panic shuts the runtime down.
    pub(crate) is_main: bool,
    started: Cell<bool>,
    /// `BODY_DONE`, `ZOMBIE`, `HI_PRIORITY`.
    flags: Cell<u8>,
    body: Cell<Option<Body>>,
    /// I3.
    /// Boxed: rare, and a `Cancelled` is 64 bytes every record would carry.
    cancel: RefCell<Option<Box<Cancelled>>>,
    cancel_pending: Cell<bool>,
    cancel_deferred: Cell<bool>,
    protect_depth: Cell<u32>,
    /// Where it last suspended (R-T1); `None` until it does.
    pub(crate) last_suspend: Cell<Option<&'static Location<'static>>>,
    /// I2.
    outcome: RefCell<Option<Outcome>>,
    /// I5.
    pub(crate) scope: Cell<Option<Rc<dyn Membership>>>,
    /// I5: the key in its scope's member set.
    pub(crate) member_key: Cell<usize>,
    /// [`CoroExtra`], taken out and put back by whoever uses it.
    pub(crate) extra: Cell<Option<Box<CoroExtra>>>,
    /// While it waits in a C library hook, the stack pointer of the hook's
    /// frame, so a report can name the code that made the call
    /// (`runtime::called_from`); 0 otherwise. Here, not in [`CoroExtra`]:
    /// every hooked transfer sets and clears it.
    #[cfg(feature = "hooks")]
    pub(crate) hooked_sp: Cell<usize>,
    /// While it is suspended, its values of other runtimes' thread-locals
    /// if they are not the initial ones (`core::foreign_tls`, FT3).
    #[cfg(feature = "hooks")]
    pub(crate) foreign_tls: Cell<Option<Box<[u8]>>>,
    /// Fires when the coroutine finishes.
    pub(crate) done: Completion,
}

impl CoroState {
    #[inline]
    pub(crate) fn new(body: Body, location: &'static Location<'static>, is_main: bool) -> Self {
        CoroState {
            id: Cell::new(0),
            raw: Cell::new(ptr::null_mut()),
            location,
            is_main,
            started: Cell::new(false),
            flags: Cell::new(0),
            body: Cell::new(Some(body)),
            cancel: RefCell::new(None),
            cancel_pending: Cell::new(false),
            cancel_deferred: Cell::new(false),
            protect_depth: Cell::new(0),
            last_suspend: Cell::new(None),
            outcome: RefCell::new(None),
            scope: Cell::new(None),
            member_key: Cell::new(usize::MAX),
            extra: Cell::new(None),
            #[cfg(feature = "hooks")]
            hooked_sp: Cell::new(0),
            #[cfg(feature = "hooks")]
            foreign_tls: Cell::new(None),
            done: Completion::new(),
        }
    }

    /// Drops everything the record holds for the coroutine (its body, its
    /// outcome, its cancellation), as dropping the record would; the record
    /// is about to be kept for reuse (runtime R4).
    #[inline]
    pub(crate) fn empty(&mut self) {
        *self.body.get_mut() = None;
        // The usual joined outcome is a taken value: nothing to drop, so
        // the drop glue runs only for the others.
        let slot = self.outcome.get_mut();
        if matches!(slot, None | Some(Outcome::Value(None))) {
            // Owns nothing: forgetting it leaks nothing.
            std::mem::forget(slot.take());
        } else {
            *slot = None;
        }
        if self.cancel.get_mut().is_some() {
            *self.cancel.get_mut() = None;
        }
        // Taken at the finish (I5) unless the coroutine never finished.
        if self.scope.get_mut().is_some() {
            *self.scope.get_mut() = None;
        }
        if self.extra.get_mut().is_some() {
            *self.extra.get_mut() = None;
        }
    }

    /// Makes an emptied record (see [`CoroState::empty`]) the record of a
    /// new coroutine, as [`CoroState::new`] would make it.
    #[inline]
    pub(crate) fn reuse(&mut self, body: Body, location: &'static Location<'static>) {
        *self.id.get_mut() = 0;
        *self.raw.get_mut() = ptr::null_mut();
        self.location = location;
        self.is_main = false;
        *self.started.get_mut() = false;
        *self.flags.get_mut() = 0;
        *self.body.get_mut() = Some(body);
        *self.cancel_pending.get_mut() = false;
        *self.cancel_deferred.get_mut() = false;
        *self.protect_depth.get_mut() = 0;
        *self.last_suspend.get_mut() = None;
        *self.member_key.get_mut() = usize::MAX;
        self.done.reuse();
    }

    pub(crate) fn id(&self) -> CoroutineId {
        CoroutineId(self.id.get())
    }

    /// How events name it: its id and spawn location.
    pub(crate) fn event_ref(&self) -> CoroutineRef {
        CoroutineRef {
            id: self.id(),
            spawned_at: self.location,
        }
    }

    pub(crate) fn is_started(&self) -> bool {
        self.started.get()
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.outcome.borrow().is_some()
    }

    pub(crate) fn take_body(&self) -> Option<Body> {
        self.body.take()
    }

    pub(crate) fn mark_started(&self) {
        self.started.set(true);
    }

    #[inline]
    pub(crate) fn has_flag(&self, flag: u8) -> bool {
        self.flags.get() & flag != 0
    }

    #[inline]
    pub(crate) fn set_flag(&self, flag: u8, on: bool) {
        let f = self.flags.get();
        self.flags.set(if on { f | flag } else { f & !flag });
    }

    /// The coroutine-local Context hook (R-CX2): runs `f` with this
    /// coroutine's record of the context module's type `C`, made by `make`
    /// on first use. It is dropped when the coroutine finishes (so its
    /// values' destructors run then) and is never inherited.
    ///
    /// # Panics
    ///
    /// If two different types are used for the same coroutine.
    pub(crate) fn with_local_context<C: 'static, R>(
        &self,
        make: impl FnOnce() -> C,
        f: impl FnOnce(&mut C) -> R,
    ) -> R {
        let mut local = self.with_extra(|x| x.local.take());
        let r = {
            let slot = local.get_or_insert_with(|| Box::new(make()));
            let c = slot
                .downcast_mut::<C>()
                .unwrap_or_else(|| panic!("one coroutine context type"));
            f(c)
        };
        self.with_extra(|x| x.local = local);
        r
    }

    /// Registers an `on_finally` handler (R-CO8).
    pub(crate) fn push_finally(&self, f: Box<dyn FnOnce()>) {
        self.set_flag(HAS_FINALLY, true);
        self.with_extra(|x| x.on_finally.push(f));
    }

    /// Drops a finished coroutine's extra record, then any record made
    /// while it dropped: a coroutine-context value's destructor may call
    /// `coroutine_context()` and make a new one; it dies here too (CX4 in
    /// `structured::context`). Out of line: most coroutines have none.
    #[inline]
    pub(crate) fn drop_extra(&self) {
        if let Some(extra) = self.extra.take() {
            drop_extra_slow(self, extra);
        }
    }

    /// Runs `f` with the extra record, allocating it on first use.
    pub(crate) fn with_extra<R>(&self, f: impl FnOnce(&mut CoroExtra) -> R) -> R {
        let mut extra = self.extra.take().unwrap_or_default();
        let r = f(&mut extra);
        self.extra.set(Some(extra));
        r
    }

    /// The coroutine's scope record (a new reference), while it has one
    /// (I5).
    #[inline]
    pub(crate) fn scope(&self) -> Option<Rc<dyn Membership>> {
        let s = self.scope.take();
        let r = s.clone();
        // The slot holds the `None` just taken: nothing to drop. Not
        // `set`, whose drop of the old value reloads the slot as one
        // 16-byte load right after the 8-byte store of `None` (the clone's
        // count increment may alias it, as far as the compiler knows): a
        // load that cannot be forwarded from the store and waits for it
        // to retire, on every spawn.
        std::mem::forget(self.scope.replace(s));
        r
    }

    pub(crate) fn cancellation(&self) -> Option<Cancelled> {
        self.cancel.borrow().as_deref().cloned()
    }

    pub(crate) fn is_cancellation_requested(&self) -> bool {
        self.cancel.borrow().is_some()
    }

    /// Records a cancellation request (I3: first wins; I6). Returns false if
    /// one was already recorded or the body is done. Inside `protect` the
    /// request is deferred (R-C2); the caller must not enqueue then, which
    /// [`CoroState::is_protected`] tells.
    pub(crate) fn request_cancel(&self, c: Cancelled) -> bool {
        if self.has_flag(BODY_DONE) || self.is_finished() || self.cancel.borrow().is_some() {
            return false;
        }
        *self.cancel.borrow_mut() = Some(Box::new(c));
        self.set_flag(CANCEL_REQUESTED, true);
        if self.protect_depth.get() > 0 {
            self.cancel_deferred.set(true);
        } else {
            self.cancel_pending.set(true);
        }
        true
    }

    /// True while it runs inside `protect` (R-C2).
    pub(crate) fn is_protected(&self) -> bool {
        self.protect_depth.get() > 0
    }

    /// Enters a `protect` region: a pending cancellation is deferred until
    /// the outermost region ends (D-21); a forced shutdown is not (REF-8).
    pub(crate) fn protect_enter(&self) {
        let depth = self.protect_depth.get();
        if depth == 0 && !self.has_flag(FORCED) && self.cancel_pending.replace(false) {
            self.cancel_deferred.set(true);
        }
        self.protect_depth.set(depth + 1);
    }

    /// Leaves a `protect` region; the outermost one makes a deferred
    /// cancellation pending again, for the next suspension point (D-21,
    /// D-22).
    pub(crate) fn protect_leave(&self) {
        let depth = self.protect_depth.get().saturating_sub(1);
        self.protect_depth.set(depth);
        if depth == 0 && self.cancel_deferred.replace(false) {
            self.cancel_pending.set(true);
        }
    }

    /// Delivers a pending cancellation (D-1: once).
    #[inline]
    pub(crate) fn take_pending_cancel(&self) -> Option<Cancelled> {
        if self.cancel_pending.get() {
            self.deliver_cancel()
        } else {
            None
        }
    }

    /// Whether a cancellation waits to be delivered (without delivering it).
    #[inline]
    pub(crate) fn has_pending_cancel(&self) -> bool {
        self.cancel_pending.get()
    }

    #[cold]
    #[inline(never)]
    fn deliver_cancel(&self) -> Option<Cancelled> {
        // Forced (GS3): it stays pending, for every later suspension point.
        if !self.has_flag(FORCED) {
            self.cancel_pending.set(false);
        }
        self.cancellation()
    }

    /// GS3: from now on every suspension point of this coroutine unwinds
    /// its stack (a cancellation with cause `Shutdown` is recorded if none
    /// was, and stays pending). Protect does not defer it.
    pub(crate) fn force_shutdown(&self) {
        if self.has_flag(BODY_DONE) || self.is_finished() {
            return;
        }
        self.set_flag(FORCED | CANCEL_REQUESTED, true);
        {
            let mut slot = self.cancel.borrow_mut();
            if slot.is_none() {
                *slot = Some(Box::new(Cancelled::of(
                    self.id(),
                    CancelCause::Shutdown,
                    None,
                )));
            }
        }
        self.cancel_deferred.set(false);
        self.cancel_pending.set(true);
    }

    /// Puts a delivered cancellation back, for the next suspension point
    /// (P-08: I/O that returned data first).
    pub(crate) fn repend_cancel(&self) {
        if self.cancel.borrow().is_some() {
            self.cancel_pending.set(true);
        }
    }

    /// While it waits in a C library hook, the code that made the call
    /// (read from its stack, `runtime::called_from`).
    pub(crate) fn hooked_call_site(&self) -> Option<String> {
        #[cfg(feature = "hooks")]
        let sp = self.hooked_sp.get();
        #[cfg(not(feature = "hooks"))]
        let sp = 0;
        (sp != 0).then(|| runtime::called_from(sp)).flatten()
    }

    /// The scheduler found a deadlock while this coroutine waited: records a
    /// cancellation with cause `Deadlock` if none was requested, and returns
    /// the `Cancelled` to deliver now. The runtime enters graceful shutdown
    /// (R-DL1).
    pub(crate) fn deadlocked(&self) -> Cancelled {
        runtime::deadlock_seen();
        let called_from = self.hooked_call_site();
        events::emit(Event::Deadlock {
            coroutine: self.event_ref(),
            waited_at: self.last_suspend.get(),
            called_from,
        });
        self.cancel_pending.set(false);
        self.cancel_deferred.set(false);
        self.set_flag(CANCEL_REQUESTED, true);
        let mut slot = self.cancel.borrow_mut();
        if slot.is_none() {
            *slot = Some(Box::new(Cancelled::of(
                self.id(),
                CancelCause::Deadlock,
                None,
            )));
        }
        Cancelled::of(self.id(), CancelCause::Deadlock, None)
    }

    /// Stores the outcome (I2) and wakes the coroutine's waiters. Returns
    /// whether at least one waiter was registered at that moment: a failure
    /// is then *consumed* by them (D-3, D-17).
    #[inline]
    pub(crate) fn finish(&self, outcome: Outcome) -> bool {
        // I2: set once, so the replaced value is `None` (nothing to drop).
        let before = self.outcome.replace(Some(outcome));
        debug_assert!(before.is_none(), "I2: the outcome is set once");
        std::mem::forget(before);
        let awaited = self.done.has_waiters();
        self.done.complete();
        awaited
    }

    /// Reads the outcome of a finished coroutine.
    #[inline]
    pub(crate) fn with_outcome<R>(&self, f: impl FnOnce(&mut Outcome) -> R) -> Option<R> {
        self.outcome.borrow_mut().as_mut().map(f)
    }

    /// True if it finished cancelled (a failure after a cancellation is a
    /// failure, D-22; a value after one is a cancellation, D-25).
    pub(crate) fn is_cancelled(&self) -> bool {
        matches!(&*self.outcome.borrow(), Some(Outcome::Cancelled(_)))
    }
}

#[cold]
#[inline(never)]
fn drop_extra_slow(state: &CoroState, extra: Box<CoroExtra>) {
    drop(extra);
    while let Some(extra) = state.extra.take() {
        drop(extra);
    }
}
