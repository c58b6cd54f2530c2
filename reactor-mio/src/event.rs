//! Event memory: what an `*mut AaEvent` handed to the host points to.
//!
//! # What this module owns
//!
//! [`Event`]: the ABI header ([`AaEvent`], first, `#[repr(C)]`), the
//! host's callback, and the kind's state. Events live in an `Rc`: the host
//! holds one strong reference (leaked with `Rc::into_raw` by `ffi.rs`, taken
//! back by `dispose`), and the reactor holds one per place that may still
//! produce a callback (a pending request in a descriptor queue, a poll in a
//! descriptor's list, an open trigger, a deferred callback, an active
//! signal watcher in its signal's list, a process watch in the process
//! table, a filesystem watch in its inotify descriptor's list, a pending
//! lookup in the resolver). That is the
//! contract's refcount: "the host's reference + one per in-flight
//! operation". Timers are referenced weakly from the timer heap.
//!
//! # Invariants
//!
//! - **E1** The header is the first field and never changes after creation,
//!   so the host may read it at any time before `dispose`.
//! - **E2** Once `disposed` is set, no callback of the event runs again
//!   (every delivery checks it right before calling the host).
//! - **E3** A request's host buffer and address ([`crate::sys::HostBuf`]) are
//!   used only while the request is [`IoPhase::Queued`] or
//!   [`IoPhase::Connecting`]; once it is `Done` nothing touches them, so the
//!   host may reuse them as soon as the callback runs or the event is
//!   disposed (AA-R5).
//! - **E4** `counted` is true exactly when the event contributes 1 to the
//!   reactor's alive counter; [`Event::is_live`] says whether it should, and
//!   the reactor's `touch` reconciles the two after every change.
//! - **E5** `scheduled` counts this event's entries in the deferred queue;
//!   while it is non-zero the event is active.
//!
//! # Access
//!
//! Everything but `header` and `trigger` is loop-thread only (`Cell` and
//! `RefCell`). `trigger` is immutable after creation and points to
//! thread-safe state, so `trigger_fire` may reach it from any thread through
//! a raw pointer to that field alone. A `RefCell` borrow of `state` is never
//! held across a host callback.
//!
//! # Drop order
//!
//! The event's memory is freed when the last `Rc` goes: the host's (on
//! `dispose`) or the reactor's last queue entry, whichever is later.

use std::os::fd::RawFd;

use async_abi::AaSockAddr;

use crate::reactor::Reactor;
use crate::registry::Key;
use crate::sys::{HostAddr, HostBuf};
use crate::trigger::TriggerFlag;

/// One event; `*mut AaEvent` handed to the host points to its `header`.
/// The kit's generic event (`reactor_sdk::event::Ev`: header, magic,
/// callback, trigger half, `referenced`, `disposed`, `closing`, `counted`,
/// `scheduled`), with this reactor's kind state and trigger flag; its
/// `is_live` and `deliverable` are E4 and E2.
pub(crate) type Event = reactor_sdk::event::Ev<Reactor, State, TriggerFlag>;

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
    Trigger {
        /// Open until cancelled, closed or disposed.
        open: bool,
    },
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
    /// The child's pidfd, registered under `token` while the watch is active.
    pub(crate) pidfd: Option<std::os::fd::OwnedFd>,
    /// The mio token of the pidfd's registration.
    pub(crate) token: mio::Token,
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
    /// Its registry entry; `None` once the descriptor was closed through the
    /// reactor (the poll is then dead: `poll_set_interest` fails).
    pub(crate) key: Option<Key>,
    /// `AA_POLL_*` interest; 0 is disarmed.
    pub(crate) interest: u32,
    /// Whether the watch is on (cleared by cancel, close, `AA_IO_CLOSE`).
    pub(crate) armed: bool,
}

/// An I/O request's state.
#[derive(Debug)]
pub(crate) struct IoState {
    /// What to do.
    pub(crate) request: Request,
    /// Where it is.
    pub(crate) phase: IoPhase,
}

/// Where an I/O request is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IoPhase {
    /// Queued on its descriptor, not yet completed.
    Queued,
    /// `AA_IO_CONNECT` started; waiting for writability.
    Connecting,
    /// Completed, cancelled or closed: the callback is scheduled or ran.
    Done,
}

/// The operation of a request: the SDK's, so both reactors and the SDK's
/// reader of `AaIoOp` name opcodes alike. This reactor runs the socket
/// requests and the datagram ones (1.1); `ffi.rs` refuses the file requests
/// with `AA_E_UNSUPPORTED` (`AA_CAP_IO_FILE` is not set: regular files are
/// not pollable).
pub(crate) use async_abi::sdk::request::Opcode;

/// A request, converted from `AaIoOp` by `ffi.rs`.
#[derive(Debug)]
pub(crate) struct Request {
    /// The operation.
    pub(crate) opcode: Opcode,
    /// The descriptor.
    pub(crate) fd: RawFd,
    /// The data buffer (read, write); empty otherwise.
    pub(crate) buf: HostBuf,
    /// File offset, -1 for the current position or a stream.
    pub(crate) offset: i64,
    /// Accept, recvfrom: where to write the peer address.
    pub(crate) peer: Option<HostAddr>,
    /// Connect, sendto: the reactor's copy of the address.
    pub(crate) target: Option<Box<AaSockAddr>>,
    /// `AA_IO_PEEK`: leave the data queued (a read or recvfrom on a
    /// socket).
    pub(crate) peek: bool,
}

impl reactor_sdk::event::Kind for State {
    /// Marks memory made by this reactor as an event, to catch a foreign
    /// or stale pointer early.
    const MAGIC: u32 = 0x6d69_6f45;

    #[inline]
    fn is_active(&self) -> bool {
        match self {
            State::Timer(t) => t.armed,
            State::Poll(p) => p.armed && p.interest != 0,
            State::Io(io) => io.phase != IoPhase::Done,
            State::Trigger { open } => *open,
            State::Signal(s) => s.active,
            State::Process(p) => p.pidfd.is_some(),
            State::FsWatch(w) => w.active,
            State::Dns(d) => d.active,
        }
    }

    #[inline]
    fn armed_generation(&self) -> Option<u64> {
        match self {
            State::Timer(t) if t.armed => Some(t.generation),
            _ => None,
        }
    }
}
