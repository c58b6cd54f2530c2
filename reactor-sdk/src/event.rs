//! One generic event type, [`Ev`]: what an `*mut AaEvent` handed to the host
//! points to, for any reactor whose events are the ABI header, the kit's
//! bookkeeping and a kind state of its own ([`Kind`]). The
//! [`Event`] and [`Timed`] implementations are written once
//! here.
//!
//! An event lives in an `Rc`: the host holds one reference (taken back by
//! `dispose`), the reactor one per place that may still call it back (a
//! descriptor queue, a poll list, the deferred queue, the trigger list, the
//! kit's signal and lookup lists); the timer heap holds a `Weak`.
//!
//! # Invariants
//!
//! - **E1** The header is the first field and never changes.
//! - **E2** Once `disposed` is set, no callback of the event runs again
//!   ([`Ev::deliverable`], which the kit's delivery loops check right before
//!   each call).
//! - **E3** `counted` is true exactly when the event counts in `alive()`;
//!   [`Ev::is_live`] says whether it should, and the reactor's `touch`
//!   ([`crate::core::Core::touch`]) reconciles the two after every change.

use std::cell::{Cell, RefCell};
use std::fmt::Debug;
use std::io;
use std::mem;
use std::ptr::addr_of;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_abi::{AaEvent, AaStatus, AA_EVF_HIDDEN, AA_E_CLOSED, AA_E_INVALID, AA_OK};

use crate::callback::HostCallback;
use crate::error::{neg_errno, Error, Result};
use crate::timer::Timed;
use crate::traits::{Event, Reactor};

/// A reactor's kind state (the `RefCell` inside [`Ev`]).
pub trait Kind: Debug + Sized + 'static {
    /// Marks memory made by this reactor as an event ([`Event::is_ours`]).
    const MAGIC: u32;
    /// Whether something is pending on the event (an armed timer, a
    /// waiting request, an open trigger...): with the kit's flags, whether
    /// it counts in `alive()` (E3).
    fn is_active(&self) -> bool;
    /// A timer's pending generation ([`Timed`]); `None` for other kinds.
    fn armed_generation(&self) -> Option<u64>;
}

/// A cross-thread waker (the loop's, which `wake`, triggers and the resolver
/// pool call).
pub trait Wake: Send + Sync + Debug + 'static {
    /// Makes the loop's current or next wait return; never blocks.
    fn wake(&self) -> io::Result<()>;
}

/// A trigger's cross-thread half (immutable in the event after creation):
/// what `trigger_fire` calls, from any thread.
pub trait Trigger: Send + Sync + Debug + 'static {
    /// `trigger_fire`: marks the trigger fired and wakes the loop
    /// (coalescing; never blocks); `AA_E_CLOSED` once the loop closed it.
    fn fire(this: &Arc<Self>) -> AaStatus;
}

/// The kit's trigger half: `trigger_fire` sets `fired` and wakes the
/// loop, which clears it before the callback (so a fire during the callback
/// counts).
#[derive(Debug)]
pub struct Fire {
    /// Fired since the loop last looked.
    pub fired: AtomicBool,
    /// Closed, cancelled or disposed: `trigger_fire` answers `AA_E_CLOSED`.
    pub closed: AtomicBool,
    waker: Arc<dyn Wake>,
}

impl Fire {
    /// A trigger half waking the loop through `waker`.
    pub fn new(waker: Arc<dyn Wake>) -> Fire {
        Fire {
            fired: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            waker,
        }
    }
}

impl Trigger for Fire {
    fn fire(this: &Arc<Fire>) -> AaStatus {
        if this.closed.load(Ordering::Acquire) {
            return AA_E_CLOSED;
        }
        if this.fired.swap(true, Ordering::AcqRel) {
            return AA_OK;
        }
        match this.waker.wake() {
            Ok(()) => AA_OK,
            Err(e) => neg_errno(&e),
        }
    }
}

/// One event of reactor `R` with kind state `K` and trigger half `T` (see
/// the module doc).
#[repr(C)]
#[derive(Debug)]
pub struct Ev<R, K, T = Fire> {
    /// The ABI header (E1).
    pub header: AaEvent,
    magic: u32,
    reactor: Weak<R>,
    /// The host's callback.
    pub callback: HostCallback,
    /// A trigger's cross-thread half; immutable after creation.
    pub trigger: Option<Arc<T>>,
    /// `set_ref`.
    pub referenced: Cell<bool>,
    /// `dispose` ran (E2).
    pub disposed: Cell<bool>,
    /// `close` was called (its `on_closed` is deferred or ran).
    pub closing: Cell<bool>,
    /// Counted in `alive()` (E3).
    pub counted: Cell<bool>,
    /// Deferred callbacks queued for this event: active while non-zero
    /// (`crate::deferred`, Q1).
    pub scheduled: Cell<u32>,
    /// The kind's state.
    pub state: RefCell<K>,
}

impl<R, K: Kind, T> Ev<R, K, T> {
    /// A new event of `kind` (an `AA_EVENT_*`), referenced, not yet
    /// counted: the caller puts it in an `Rc` (or a recycled one's place)
    /// and calls its `touch` once the event is listed.
    #[inline]
    pub fn new(
        reactor: Weak<R>,
        kind: u32,
        flags: u32,
        callback: HostCallback,
        trigger: Option<Arc<T>>,
        state: K,
    ) -> Ev<R, K, T> {
        Ev {
            header: AaEvent {
                struct_size: mem::size_of::<AaEvent>() as u32,
                kind,
                flags,
                _reserved: 0,
            },
            magic: K::MAGIC,
            reactor,
            callback,
            trigger,
            referenced: Cell::new(true),
            disposed: Cell::new(false),
            closing: Cell::new(false),
            counted: Cell::new(false),
            scheduled: Cell::new(0),
            state: RefCell::new(state),
        }
    }

    /// Gives a spare event of this reactor and kind a new life (a recycled
    /// request's, once nothing referred to it any more), in place: cheaper
    /// than building a fresh one and dropping the old. The header's kind,
    /// the magic and the reactor stay; everything else starts over.
    #[inline]
    pub fn renew(&mut self, flags: u32, callback: HostCallback, state: K) {
        self.header.flags = flags;
        self.callback = callback;
        self.trigger = None;
        self.referenced.set(true);
        self.disposed.set(false);
        self.closing.set(false);
        self.counted.set(false);
        self.scheduled.set(0);
        *self.state.get_mut() = state;
    }

    /// Whether the event should count in `alive()` (E3).
    #[inline]
    pub fn is_live(&self) -> bool {
        if self.disposed.get() || !self.referenced.get() || self.header.flags & AA_EVF_HIDDEN != 0 {
            return false;
        }
        if self.scheduled.get() > 0 {
            return true;
        }
        !self.closing.get() && self.state.borrow().is_active()
    }

    /// Whether the event may still call back (E2).
    #[inline]
    pub fn deliverable(&self) -> bool {
        !self.disposed.get()
    }

    /// `AA_E_CLOSED` for an event that is closing or closed.
    pub fn check_open(&self, what: &str) -> Result<()> {
        if self.closing.get() {
            return Err(Error::new(
                AA_E_CLOSED,
                format!("{what}: event is closed or closing"),
            ));
        }
        Ok(())
    }
}

// SAFETY: `Ev` is `#[repr(C)]` with its `AaEvent` header first, never
// changed (E1); `fire` keeps F4.
unsafe impl<R, K, T> Event for Ev<R, K, T>
where
    R: Reactor<Event = Ev<R, K, T>>,
    K: Kind,
    T: Trigger,
{
    type Reactor = R;

    #[inline]
    fn is_ours(&self) -> bool {
        self.magic == K::MAGIC
    }

    #[inline]
    fn reactor(&self) -> Option<Rc<R>> {
        self.reactor.upgrade()
    }

    #[inline]
    fn callback(&self) -> &HostCallback {
        &self.callback
    }

    #[inline]
    fn deliverable(&self) -> bool {
        !self.disposed.get()
    }

    #[inline]
    fn scheduled(&self) -> &Cell<u32> {
        &self.scheduled
    }

    unsafe fn fire(ev: *const Self) -> AaStatus {
        // SAFETY: F2 and F4: `magic` and `trigger` never change after
        // creation; only those fields are read.
        let (magic, trigger) = unsafe { (*addr_of!((*ev).magic), &*addr_of!((*ev).trigger)) };
        match (magic == K::MAGIC, trigger) {
            (true, Some(trigger)) => T::fire(trigger),
            _ => AA_E_INVALID,
        }
    }
}

impl<R, K: Kind, T> Timed for Ev<R, K, T> {
    #[inline]
    fn armed_generation(&self) -> Option<u64> {
        self.state.borrow().armed_generation()
    }
}
