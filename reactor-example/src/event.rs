//! Events: what an `*mut AaEvent` handed to the host points to.
//!
//! An event lives in an `Rc`: the host holds one reference (taken back by
//! `dispose`), the reactor one per place that may still call it back (a
//! descriptor queue, a poll list, the deferred queue, the trigger list, the
//! kit's signal and lookup lists); the timer heap holds a `Weak`.
//!
//! # Invariants
//!
//! - **E1** The header is the first field and never changes.
//! - **E2** Once `disposed` is set, no callback of the event runs again.
//! - **E3** `counted` is true exactly when the event counts in `alive()`;
//!   [`Event::is_live`] says whether it should, and `Reactor::touch`
//!   reconciles the two after every change.

use std::cell::{Cell, RefCell};
use std::os::fd::RawFd;
use std::rc::Weak;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_abi::{AaEvent, AaStatus, AA_EVF_HIDDEN, AA_E_CLOSED, AA_OK};
use reactor_sdk::HostCallback;

use crate::io::Req;
use crate::reactor::Reactor;

/// Marks memory made by this reactor as an event.
pub(crate) const EVENT_MAGIC: u32 = 0x6578_4576;

/// One event (see the module doc).
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Event {
    /// The ABI header (E1).
    pub(crate) header: AaEvent,
    pub(crate) magic: u32,
    pub(crate) reactor: Weak<Reactor>,
    pub(crate) callback: HostCallback,
    /// A trigger's cross-thread half; immutable after creation.
    pub(crate) trigger: Option<Arc<Fire>>,
    pub(crate) referenced: Cell<bool>,
    pub(crate) disposed: Cell<bool>,
    /// `close` was called (its `on_closed` is deferred or ran).
    pub(crate) closing: Cell<bool>,
    pub(crate) counted: Cell<bool>,
    /// Deferred callbacks queued for this event: active while non-zero.
    pub(crate) scheduled: Cell<u32>,
    pub(crate) state: RefCell<Kind>,
}

/// The kind's state.
#[derive(Debug)]
pub(crate) enum Kind {
    Timer {
        armed: bool,
        repeat: u64,
        /// Bumped whenever the pending deadline is replaced or dropped.
        generation: u64,
    },
    Poll {
        fd: RawFd,
        interest: u32,
        armed: bool,
        /// The reactor closed the descriptor (`AA_IO_CLOSE`): the poll is
        /// dead.
        dead: bool,
    },
    Io {
        /// The request; its pointers are the host's, lent until the
        /// callback (AA-R5), and used only while `pending`.
        req: Req,
        pending: bool,
        /// `connect` answered `EINPROGRESS`: wait for writability.
        connecting: bool,
    },
    Trigger {
        open: bool,
    },
    Signal {
        signum: i32,
        active: bool,
    },
    Dns {
        id: u64,
        active: bool,
    },
    /// Active while it holds the child's pidfd (watch.rs, W1).
    Process {
        pidfd: Option<std::os::fd::OwnedFd>,
    },
    FsWatch {
        wd: i32,
        active: bool,
    },
}

/// A trigger's cross-thread half: `trigger_fire` sets `fired` and wakes the
/// loop, which clears it before the callback (so a fire during the callback
/// counts).
#[derive(Debug)]
pub(crate) struct Fire {
    pub(crate) fired: AtomicBool,
    pub(crate) closed: AtomicBool,
    pub(crate) waker: Arc<mio::Waker>,
}

impl Fire {
    /// `trigger_fire`: coalesces, never blocks.
    pub(crate) fn fire(&self) -> AaStatus {
        if self.closed.load(Ordering::Acquire) {
            return AA_E_CLOSED;
        }
        if self.fired.swap(true, Ordering::AcqRel) {
            return AA_OK;
        }
        match self.waker.wake() {
            Ok(()) => AA_OK,
            Err(e) => reactor_sdk::error::neg_errno(&e),
        }
    }
}

impl Event {
    /// Whether the event should count in `alive()` (E3).
    pub(crate) fn is_live(&self) -> bool {
        if self.disposed.get() || !self.referenced.get() || self.header.flags & AA_EVF_HIDDEN != 0 {
            return false;
        }
        if self.scheduled.get() > 0 {
            return true;
        }
        if self.closing.get() {
            return false;
        }
        match &*self.state.borrow() {
            Kind::Timer { armed, .. } => *armed,
            Kind::Poll {
                armed, interest, ..
            } => *armed && *interest != 0,
            Kind::Io { pending, .. } => *pending,
            Kind::Trigger { open } => *open,
            Kind::Signal { active, .. } | Kind::Dns { active, .. } => *active,
            Kind::FsWatch { active, .. } => *active,
            Kind::Process { pidfd } => pidfd.is_some(),
        }
    }

    /// Whether the event may still call back (E2).
    pub(crate) fn deliverable(&self) -> bool {
        !self.disposed.get()
    }
}
