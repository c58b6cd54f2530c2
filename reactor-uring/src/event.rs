//! Event memory: what an `*mut AaEvent` handed to the host points to.
//!
//! # What this module owns
//!
//! [`Event`]: the ABI header ([`AaEvent`], first, `#[repr(C)]`), the host's
//! callback, and the kind's state. Events live in an `Rc`. The host holds
//! one strong reference (leaked with `Rc::into_raw` by `ffi.rs`, taken back
//! by `dispose`); the reactor holds one per in-flight ring operation (in the
//! op table, ops invariant O1), one per deferred callback, one per place an
//! active signal watcher, filesystem watch or pending lookup is listed
//! (signal.rs, fs_watch.rs, dns.rs), and, for a timer, a weak one in the
//! heap. That is the ABI's refcount: "the host's
//! reference + one per in-flight operation" — so a disposed event whose
//! buffer the kernel may still write stays allocated until the kernel's
//! completion has been reaped (P-21).
//!
//! # Invariants
//!
//! - **E1** The header is the first field and never changes after creation,
//!   so the host may read it at any time before `dispose`.
//! - **E2** Once `disposed` is set, no callback of the event runs again
//!   (every delivery checks it right before calling the host).
//! - **E3** `in_flight` counts the op-table entries that name this event as
//!   their owner; while it is non-zero the kernel may still use memory the
//!   event answers for, and a `close` is not finished.
//! - **E4** `counted` is true exactly when the event contributes 1 to the
//!   reactor's alive counter; [`Event::is_live`] says whether it should, and
//!   the reactor's `touch` reconciles the two after every change.
//! - **E5** `scheduled` counts this event's entries in the deferred queue;
//!   while it is non-zero the event is active.
//! - **E6** A request's `op` is `Some` from `io_submit` until its final
//!   completion was reaped; `cancel` is set at most once per request and
//!   never cleared, so the first reason wins.
//!
//! # Access
//!
//! Everything but `header`, `magic` and `trigger` is loop-thread only
//! (`Cell` and `RefCell`). `trigger` is immutable after creation and points
//! to thread-safe state, so `trigger_fire` may reach it from any thread
//! through a raw pointer to that field alone. A `RefCell` borrow of `state`
//! is never held across a host callback.
//!
//! # Drop order
//!
//! The event's memory is freed when the last `Rc` goes: the host's (on
//! `dispose`), the op table's (on the final completion) or the deferred
//! queue's, whichever is last. A trigger's eventfd goes with its
//! [`TriggerShared`], which the event holds.

use std::cell::{Cell, RefCell};
use std::os::fd::RawFd;
use std::rc::Weak;
use std::sync::Arc;

use async_abi::{AaEvent, AaStatus, AA_EVF_HIDDEN};

use crate::ffi::{ClosedCallback, HostCallback};
use crate::ops::OpKey;
use crate::reactor::Reactor;
use crate::trigger::TriggerShared;

/// Marks memory made by this reactor as an event, to catch a foreign or
/// stale pointer early.
pub(crate) const EVENT_MAGIC: u32 = 0x7572_4576;

/// One event; `*mut AaEvent` handed to the host points to `header`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Event {
    /// The ABI header (E1).
    pub(crate) header: AaEvent,
    /// [`EVENT_MAGIC`].
    pub(crate) magic: u32,
    /// The reactor that made the event.
    pub(crate) reactor: Weak<Reactor>,
    /// The host's callback and user data.
    pub(crate) callback: HostCallback,
    /// Cross-thread state of a trigger; `None` for other kinds.
    pub(crate) trigger: Option<Arc<TriggerShared>>,
    /// `set_ref` state.
    pub(crate) referenced: Cell<bool>,
    /// Whether the host disposed of the event (E2).
    pub(crate) disposed: Cell<bool>,
    /// Where the event is in `close` (AA-R4).
    pub(crate) close: Cell<CloseState>,
    /// The host's `on_closed`, from `close` until it runs.
    pub(crate) on_closed: Cell<Option<ClosedCallback>>,
    /// Ring operations that own this event (E3).
    pub(crate) in_flight: Cell<u32>,
    /// Whether the event contributes to the alive count (E4).
    pub(crate) counted: Cell<bool>,
    /// Deferred callbacks queued for this event (E5).
    pub(crate) scheduled: Cell<u32>,
    /// The kind's state.
    pub(crate) state: RefCell<State>,
}

/// Where an event is in `close` (AA-R4); never goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseState {
    /// `close` was not called.
    Open,
    /// `close` was called; waiting for the kernel to release the event's
    /// operations (E3), then for `on_closed` to be scheduled.
    Closing,
    /// `on_closed` is scheduled: nothing of the event is left in the kernel.
    Drained,
    /// `on_closed` ran (or the event was disposed before it could).
    Closed,
}

/// The kind-specific state of an event.
#[derive(Debug)]
pub(crate) enum State {
    /// A timer.
    Timer(TimerState),
    /// A readiness watch.
    Poll(PollState),
    /// An I/O request.
    Io(IoState),
    /// A cross-thread trigger.
    Trigger(TriggerState),
    /// A signal watch (`signal.rs`).
    Signal(SignalState),
    /// A child process watch (`process.rs`).
    Process(ProcessState),
    /// A filesystem watch (`fs_watch.rs`).
    FsWatch(FsWatchState),
    /// A name resolution (`dns.rs`).
    Dns(DnsState),
}

/// A signal watch's state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SignalState {
    /// The signal number.
    pub(crate) signum: i32,
    /// Watching until cancelled, closed or disposed.
    pub(crate) active: bool,
}

/// A child process watch's state.
#[derive(Debug)]
pub(crate) struct ProcessState {
    /// The child's pidfd while the watch is active.
    pub(crate) pidfd: Option<std::os::fd::OwnedFd>,
    /// The `POLL_ADD` on the pidfd currently reporting for this watch;
    /// completions of any other op of the event are stale.
    pub(crate) op: Option<OpKey>,
}

/// A filesystem watch's state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FsWatchState {
    /// The inotify watch descriptor (shared by watches of one inode).
    pub(crate) wd: i32,
    /// Reporting until cancelled, closed, disposed or the watch ended.
    pub(crate) active: bool,
}

/// A name resolution's state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DnsState {
    /// The lookup's id in the resolver.
    pub(crate) id: u64,
    /// Pending until its result was delivered, or it was cancelled, closed
    /// or disposed.
    pub(crate) active: bool,
}

/// A timer's state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimerState {
    /// Whether a deadline is pending.
    pub(crate) armed: bool,
    /// The pending deadline, on the reactor's clock.
    pub(crate) deadline: u64,
    /// The period, 0 for a one-shot timer.
    pub(crate) repeat: u64,
    /// Bumped whenever the pending deadline is replaced or dropped: heap
    /// entries with another generation are stale.
    pub(crate) generation: u64,
}

/// A poll's state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PollState {
    /// The watched descriptor.
    pub(crate) fd: RawFd,
    /// `AA_POLL_*` interest; 0 is disarmed.
    pub(crate) interest: u32,
    /// Whether the watch is on (cleared by cancel, close, dispose, a failed
    /// watch, and the close of its descriptor through the reactor).
    pub(crate) armed: bool,
    /// The registry epoch of the descriptor when the watch was made: once
    /// the reactor closed that descriptor, the watch cannot be re-armed.
    pub(crate) epoch: u64,
    /// The `POLL_ADD` operation currently reporting for this watch; CQEs of
    /// any other operation of the event are stale.
    pub(crate) op: Option<OpKey>,
}

/// An I/O request's state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IoState {
    /// The ring operation while the request is pending (E6).
    pub(crate) op: Option<OpKey>,
    /// Set by `cancel`, `close` or `dispose` (E6).
    pub(crate) cancel: Option<Cancel>,
}

/// A cancellation asked of a pending request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cancel {
    /// Reported instead of `-ECANCELED` when the kernel confirms it.
    pub(crate) reason: AaStatus,
    /// The loop iteration it was asked in: a completion reaped in that same
    /// iteration is deferred to the next one (reactor invariant R2).
    pub(crate) iteration: u64,
}

/// A trigger's loop-side state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TriggerState {
    /// Open until cancelled, closed or disposed.
    pub(crate) open: bool,
    /// The eventfd read in flight.
    pub(crate) op: Option<OpKey>,
}

impl Event {
    /// Whether the event should count in `alive()` (E4).
    pub(crate) fn is_live(&self) -> bool {
        if self.disposed.get() || !self.referenced.get() || self.header.flags & AA_EVF_HIDDEN != 0 {
            return false;
        }
        if matches!(self.close.get(), CloseState::Closing | CloseState::Drained)
            || self.scheduled.get() > 0
        {
            return true;
        }
        match &*self.state.borrow() {
            State::Timer(t) => t.armed,
            State::Poll(p) => p.armed && p.interest != 0,
            State::Io(io) => io.op.is_some(),
            State::Trigger(t) => t.open,
            State::Signal(s) => s.active,
            State::Process(p) => p.pidfd.is_some(),
            State::FsWatch(w) => w.active,
            State::Dns(d) => d.active,
        }
    }

    /// Whether the event may still produce a callback (E2).
    pub(crate) fn deliverable(&self) -> bool {
        !self.disposed.get()
    }
}
