//! A generic readiness reactor, [`Readiness<B>`]: every kind of the ABI but
//! inline completion and file requests, over a small [`Backend`] (the OS
//! poller: register, modify and deregister a descriptor under a token, wait,
//! and a cross-thread waker). A reactor author writes only the backend and
//! exports it with `crate::export_reactor!(backend MyBackend)`. The backend
//! is edge-triggered ([`Backend`], "The edge contract"); a level-triggered
//! poller (poll(2), `select`) is a [`LevelBackend`], which
//! [`LevelTriggered`] makes a [`Backend`] (level.rs, L1-L5), exported with
//! `crate::export_reactor!(level MyPoller)`.
//!
//! Timers run on the kit's heap, triggers on [`crate::event::Fire`], signals
//! on the kit's halves (the handler writes a socket the backend watches),
//! lookups on the kit's pool, process watches on pidfds, filesystem watches
//! on the kit's inotify descriptor; socket, pipe and datagram requests
//! (read, write, accept, connect, close, recvfrom, sendto) run as readiness
//! plus the kit's non-blocking system calls (`fds`, invariants D1-D4).
//!
//! # Invariants
//!
//! - **R1** Callbacks run only inside `run_once`, never while a `RefCell`
//!   is borrowed: each step copies what it needs, lets go, then calls.
//! - **R2** A callback deferred during iteration N runs in iteration N+1 or
//!   later: `run_once` takes the deferred queue at its start
//!   (`crate::deferred`, Q2).
//! - **R3** `alive` counts the events whose `counted` is set (E3; the
//!   kit's `Core`, C1), and `destroy` refuses while an event is not
//!   disposed (C2).
//! - **R4** Each iteration bounds its work: timers armed during it and
//!   requests submitted during it wait for the next one; a descriptor's
//!   queue is tried at most as many times as it had requests when its
//!   readiness arrived.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::{CStr, CString};
use std::fmt::Debug;
use std::io::{self, Read};
use std::mem;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::rc::{Rc, Weak};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_abi::sdk::dns::Hints;
use async_abi::*;

use crate::core::Core;
use crate::dns::Resolver;
use crate::error::check_flags;
use crate::event::{Ev, Fire, Kind as KindState, Wake};
use crate::inotify::Inotify;
use crate::signal::Signals;
use crate::timer::{fire_due, next_deadline, TimerHeap};
use crate::{ClosedCallback, Error, HostCallback, Result};

use fds::{Fds, Req};
use watch::pidfd_of;

#[allow(unsafe_code)] // the trait implementation's raw pointers (F1-F5)
mod ffi;
mod fds;
mod level;
mod watch;

pub use ffi::Exported;
pub use level::{LevelBackend, LevelExported, LevelTriggered, RECHECK};

/// A token the driver never uses: for the backend's own registration (its
/// waker), whose wake-ups [`Backend::wait`] reports under it.
pub const BACKEND_TOKEN: u64 = u64::MAX;
/// The token of a descriptor is its number, of a pidfd its number with bit
/// 40 set (watch.rs); these are the driver's own.
const SIGNALS: u64 = u64::MAX - 1;
/// The inotify descriptor's token.
const INOTIFY: u64 = u64::MAX - 2;

/// An OS readiness poller: what a reactor author writes (epoll, kqueue,
/// poll(2)...). Every method is called on the loop thread.
///
/// Readiness is **edge-triggered**. A level-triggered poller (poll(2),
/// `select`) implements the smaller [`LevelBackend`] instead and is
/// wrapped in [`LevelTriggered`], which keeps this contract for it.
///
/// # The edge contract
///
/// What the driver does, so what it needs from the backend:
///
/// - **Registrations.** A descriptor gets one registration, under the
///   token of its number and for `AA_POLL_READABLE | AA_POLL_WRITABLE`,
///   while a request waits on it or a poll watches it, whatever the
///   requests' directions or the polls' interest; [`Backend::deregister`]
///   when the last one leaves and before an `AA_IO_CLOSE` closes it (fds.rs,
///   D1). The driver's own descriptors are registered for
///   `AA_POLL_READABLE`: the signal socket (from the first `signal_new`),
///   the inotify descriptor (from the first `fs_watch_new`) and each
///   process watch's pidfd, under tokens of their own.
/// - **What a report does.** `(token, bits)` with `AA_POLL_READABLE` or
///   `AA_POLL_ERROR` tries the descriptor's waiting reads, accepts and
///   `recvfrom`s, front first, at most as many as were queued when the
///   report arrived, stopping at the first that would block; `WRITABLE`
///   or `ERROR` does the same for writes, connects and `sendto`s. Then
///   every armed poll of the descriptor is called back with `bits &
///   (interest | ERROR | HUP)`, if that is not 0. The signal socket and the
///   inotify descriptor are read until `EAGAIN`; a pidfd's child is reaped.
/// - **A new request needs no edge**: it is tried once, in the next
///   `run_once`, before any wait on it (fds.rs, D3).
/// - **After `EAGAIN` the driver never re-arms.** A request that would
///   block, the signal socket and the inotify descriptor read dry: the
///   driver calls [`Backend::drained`] (a no-op for an edge-triggered
///   poller) and waits for the next report. So the backend must report the
///   next time that direction becomes ready, with no
///   [`Backend::modify`] in between. A poll's readiness is consumed by the
///   host, in its own system calls, which the driver never sees: the host
///   keeps readability armed across its `EAGAIN`s and counts on the same
///   edge; it sets the interest again (a `modify`) only when writability
///   starts or stops being waited for (`async-std-api`'s
///   `core/readiness.rs`, RD2 and RD3), or, from a backend that says
///   [`Backend::LEVEL_TRIGGERED`] (`AA_CAP_POLL_LEVEL`, ABI 1.2) under a
///   host of minor 2 or later, before every wait that follows its own
///   `EAGAIN` (RD7; R-POLL-8 in `docs/abi/poll.md`).
/// - **After a partial drain** (the requests that were queued completed,
///   data is left, nothing returned `EAGAIN`) the driver needs no report:
///   its next request on the descriptor is tried on submission. A report of
///   readiness that is still there is harmless to requests (a try that
///   would block waits again), but a poll must not be called back again
///   for readiness nobody consumed (R-POLL-3 in `docs/abi/poll.md`), so a
///   backend reports a direction again only once it became ready anew:
///   epoll's `EPOLLET`, which also reports every new arrival on a socket
///   that was not drained.
/// - **[`Backend::modify`] re-arms**: the next wait reports the
///   registration's current readiness, even if unchanged. The driver calls
///   it with the same token and interest when a poll is made or its
///   interest set (`poll_new`, `poll_set_interest`: "re-evaluates the
///   current readiness", R-POLL-2), and on a pidfd reported while its child
///   still runs (watch.rs, W2); never otherwise.
/// - **The waker** is the backend's own registration: the wake-ups since
///   the last wait are reported under [`BACKEND_TOKEN`] as one entry, and
///   the backend resets the waker then (`reactor-example` reads its
///   eventfd), so the next wait blocks again.
pub trait Backend: Debug + Sized + 'static {
    /// The plugin's name, `reactor-<name>`; options are `<name>.<key>`
    /// (this driver reads none).
    const NAME: &'static CStr;
    /// The plugin's vendor string.
    const VENDOR: &'static CStr;
    /// The ABI minor the plugin implements, stated by its author (see
    /// [`crate::Reactor::ABI_MINOR`]): the readiness driver runs every 1.1
    /// request it claims and 1.2 asks nothing more of an edge-triggered
    /// backend, so `2` is the usual answer (a level one gets
    /// `AA_CAP_POLL_LEVEL` with it, see [`Backend::LEVEL_TRIGGERED`]);
    /// never `AA_ABI_MINOR`.
    const ABI_MINOR: u16;
    /// Whether the backend keeps edges over a level-triggered poller and
    /// so cannot see a poll's readiness consumed by the host (the
    /// [`LevelTriggered`] adapter says `true`). With [`Backend::ABI_MINOR`]
    /// 2 or later the reactor then sets `AA_CAP_POLL_LEVEL`, and a host of
    /// minor 2 or later re-arms such a poll ([`Backend::modify`]) after its
    /// own `EAGAIN`. An edge-triggered poller keeps the default, `false`.
    const LEVEL_TRIGGERED: bool = false;
    /// The backend's cross-thread waker.
    type Waker: Wake;

    /// Makes the poller and its waker (whose wake-ups end a wait and are
    /// reported under [`BACKEND_TOKEN`]).
    fn new() -> io::Result<(Self, Self::Waker)>;
    /// Starts watching `fd` for `interest` (`AA_POLL_*` bits) under `token`.
    fn register(&self, fd: RawFd, token: u64, interest: u32) -> io::Result<()>;
    /// Replaces `fd`'s registration; the next wait reports its current
    /// readiness.
    fn modify(&self, fd: RawFd, token: u64, interest: u32) -> io::Result<()>;
    /// Stops watching `fd`.
    fn deregister(&self, fd: RawFd) -> io::Result<()>;
    /// Waits at most `timeout` (`None`: until something is ready or the
    /// waker is called; the driver rounds timeouts up to whole
    /// milliseconds) and appends `(token, AA_POLL_* bits)` to `ready` for
    /// every registration that became ready, and `(BACKEND_TOKEN, _)` if
    /// the waker was called (the host may have work queued: the driver
    /// must not mistake that wait for one the nearest timer cut short and
    /// wait again). A hang-up is
    /// `AA_POLL_HUP | AA_POLL_READABLE`, an error `AA_POLL_ERROR |
    /// AA_POLL_WRITABLE`. An `Interrupted` error counts as an empty wait.
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<(u64, u32)>) -> io::Result<()>;
    /// The driver consumed `fd`'s readiness in the directions of `bits`
    /// (`AA_POLL_READABLE`, `AA_POLL_WRITABLE`) until a system call
    /// returned `EAGAIN`: the next time that direction is ready is an edge
    /// to report. Nothing to do for an edge-triggered poller (the default);
    /// [`LevelTriggered`] unmasks the direction.
    fn drained(&self, fd: RawFd, bits: u32) {
        let _ = (fd, bits);
    }
}

/// The events of `Readiness<B>`.
pub type Event<B> = Ev<Readiness<B>, State>;

/// A callback owed to the host, delivered by a later `run_once` (R2).
type Deferred<B> = crate::deferred::Deferred<Event<B>>;

/// The kind state of a readiness event (opaque).
#[derive(Debug)]
pub struct State(Kind);

/// The kind's state.
#[derive(Debug)]
enum Kind {
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
        /// callback (AA-R5), and used only while `pending` (D4).
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
        pidfd: Option<OwnedFd>,
    },
    FsWatch {
        wd: i32,
        active: bool,
    },
}

impl KindState for State {
    const MAGIC: u32 = 0x7244_7952;

    fn is_active(&self) -> bool {
        match &self.0 {
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

    fn armed_generation(&self) -> Option<u64> {
        match &self.0 {
            Kind::Timer {
                armed: true,
                generation,
                ..
            } => Some(*generation),
            _ => None,
        }
    }
}

/// The loop's signal state: the kit's, and the socket its handler writes.
#[derive(Debug)]
struct SignalState<B: Backend> {
    kit: Signals<Event<B>>,
    rx: UnixStream,
    _tx: UnixStream,
}

/// A readiness reactor over backend `B` (see the module doc).
#[derive(Debug)]
pub struct Readiness<B: Backend> {
    /// `wake`, triggers and resolver threads reach this from any thread.
    waker: Arc<B::Waker>,
    this: Weak<Readiness<B>>,
    /// The kit's loop bookkeeping: thread, clock, alive count, live events,
    /// `run_once` re-entry, last error.
    core: Core,
    backend: RefCell<B>,
    fds: RefCell<Fds<B>>,
    timers: RefCell<TimerHeap<Event<B>>>,
    triggers: RefCell<Vec<Rc<Event<B>>>>,
    deferred: RefCell<VecDeque<Deferred<B>>>,
    signals: RefCell<Option<SignalState<B>>>,
    resolver: RefCell<Option<Resolver<Rc<Event<B>>>>>,
    /// Active process watches by pidfd (watch.rs).
    processes: RefCell<HashMap<RawFd, Rc<Event<B>>>>,
    /// The kit's inotify instance, from the first `fs_watch_new`.
    inotify: RefCell<Option<Inotify<Event<B>>>>,
}

impl<B: Backend> Readiness<B> {
    /// A reactor bound to the calling thread.
    fn new() -> Result<Rc<Readiness<B>>> {
        let (backend, waker) = B::new().map_err(|e| Error::os("create: the backend", &e))?;
        Ok(Rc::new_cyclic(|this| Readiness {
            waker: Arc::new(waker),
            this: this.clone(),
            core: Core::new(),
            backend: RefCell::new(backend),
            fds: RefCell::new(Fds::default()),
            timers: RefCell::new(TimerHeap::default()),
            triggers: RefCell::new(Vec::new()),
            deferred: RefCell::new(VecDeque::new()),
            signals: RefCell::new(None),
            resolver: RefCell::new(None),
            processes: RefCell::default(),
            inotify: RefCell::new(None),
        }))
    }

    fn refresh_clock(&self) -> u64 {
        self.core.refresh_clock()
    }

    /// Reconciles the event's `counted` flag with its state (R3).
    fn touch(&self, ev: &Event<B>) {
        self.core.touch(&ev.counted, ev.is_live());
    }

    /// Makes an event of this reactor.
    fn new_event(
        &self,
        kind: u32,
        flags: u32,
        callback: HostCallback,
        state: Kind,
    ) -> Rc<Event<B>> {
        self.core.event_made();
        let trigger = (kind == AA_EVENT_TRIGGER).then(|| {
            let waker: Arc<dyn Wake> = self.waker.clone();
            Arc::new(Fire::new(waker))
        });
        let state = State(state);
        Rc::new(Ev::new(
            self.this.clone(),
            kind,
            flags,
            callback,
            trigger,
            state,
        ))
    }

    /// Queues a callback for a later `run_once` (R2).
    fn defer(&self, item: Deferred<B>) {
        crate::deferred::schedule(&self.deferred, item, |ev| self.touch(ev));
    }

    fn destroy(&self) -> Result<()> {
        self.core.check_destroy()?;
        self.deferred.borrow_mut().clear();
        self.triggers.borrow_mut().clear();
        self.timers.borrow_mut().clear();
        self.fds.borrow_mut().clear();
        // The port goes before the socket its handler writes (SG3).
        drop(self.signals.borrow_mut().take());
        if let Some(mut resolver) = self.resolver.borrow_mut().take() {
            resolver.shut_down();
        }
        self.processes.borrow_mut().clear();
        if let Some(inotify) = self.inotify.borrow_mut().take() {
            let fd = inotify.fd().as_raw_fd();
            let _ = self.backend.borrow().deregister(fd);
        }
        Ok(())
    }

    // -----------------------------------------------------------------
    // One iteration
    // -----------------------------------------------------------------

    fn run_once(&self, timeout_ns: i64) -> Result<i32> {
        let _running = self.core.enter(timeout_ns)?;
        self.iterate(timeout_ns)
    }

    fn iterate(&self, timeout_ns: i64) -> Result<i32> {
        // R2, R4: this iteration's share, taken up front.
        let deferred = mem::take(&mut *self.deferred.borrow_mut());
        let fresh = self.fds.borrow_mut().take_fresh();
        let horizon = self.timers.borrow().horizon();
        let mut count = self.run_timers(self.refresh_clock(), horizon);

        let has_work = count > 0 || !deferred.is_empty() || !fresh.is_empty();
        let mut ready = Vec::new();
        loop {
            let (timeout, timer_bound) = self.wait_timeout(timeout_ns, has_work);
            self.wait(timeout, &mut ready)?;
            let fired = self.run_timers(self.refresh_clock(), horizon);
            count += fired;
            // A wait the nearest timer cut short, with nothing to do, waits
            // again (a millisecond wait may wake early); a wake-up is
            // reported (`BACKEND_TOKEN`), so it always ends the loop.
            if !ready.is_empty() || fired > 0 || !timer_bound || timeout == Some(Duration::ZERO) {
                break;
            }
        }
        count += self.start_fresh(fresh);
        for &(token, bits) in &ready {
            count += match token {
                BACKEND_TOKEN => 0,
                SIGNALS => {
                    self.drain_signal_socket();
                    0
                }
                INOTIFY => self.inotify_ready(),
                token => match pidfd_of(token) {
                    Some(fd) => self.process_ready(fd),
                    None => self.fd_ready(token as RawFd, bits),
                },
            };
        }
        count += self.run_triggers();
        count += self.run_signals();
        count += self.run_dns();
        count += self.deliver(deferred);
        Ok(count)
    }

    /// The wait's timeout, and whether the nearest timer decided it.
    fn wait_timeout(&self, timeout_ns: i64, has_work: bool) -> (Option<Duration>, bool) {
        if has_work || timeout_ns == 0 {
            return (Some(Duration::ZERO), false);
        }
        let requested = u64::try_from(timeout_ns).ok();
        let timer = self
            .timers
            .borrow_mut()
            .next_deadline()
            .map(|d| d.saturating_sub(self.core.now()));
        let (ns, timer_bound) = match (requested, timer) {
            (Some(r), Some(t)) if t < r => (Some(t), true),
            (None, Some(t)) => (Some(t), true),
            (r, _) => (r, false),
        };
        // Rounded up to a millisecond: never a busy 0 ms wait.
        let timeout = ns.map(|ns| Duration::from_millis(ns.div_ceil(1_000_000)));
        (timeout, timer_bound)
    }

    /// Waits and copies what the backend reported, so no borrow outlives
    /// it (R1); an interrupted wait reports nothing.
    fn wait(&self, timeout: Option<Duration>, ready: &mut Vec<(u64, u32)>) -> Result<()> {
        ready.clear();
        match self.backend.borrow_mut().wait(timeout, ready) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(Error::os("run_once: wait", &e)),
        }
    }

    /// Delivers the deferred batch taken at the iteration's start (R2).
    fn deliver(&self, batch: VecDeque<Deferred<B>>) -> i32 {
        crate::deferred::deliver(batch, |ev| self.touch(ev), |_| {})
    }

    // -----------------------------------------------------------------
    // Timers (the kit's heap)
    // -----------------------------------------------------------------

    fn timer_new(
        &self,
        first_ns: u64,
        repeat_ns: u64,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event<B>>> {
        check_flags("timer_new", flags, AA_EVF_HIDDEN)?;
        let deadline = self.refresh_clock().saturating_add(first_ns);
        let state = Kind::Timer {
            armed: true,
            repeat: repeat_ns,
            generation: 0,
        };
        let ev = self.new_event(AA_EVENT_TIMER, flags, cb, state);
        self.timers.borrow_mut().push(&ev, deadline, 0);
        self.touch(&ev);
        Ok(ev)
    }

    fn timer_rearm(&self, ev: &Rc<Event<B>>, first_ns: u64, repeat_ns: u64) -> Result<()> {
        ev.check_open("timer_rearm")?;
        let deadline = self.refresh_clock().saturating_add(first_ns);
        let (was_armed, generation) = match &mut ev.state.borrow_mut().0 {
            Kind::Timer {
                armed,
                repeat,
                generation,
            } => {
                *repeat = repeat_ns;
                *generation += 1;
                (mem::replace(armed, true), *generation)
            }
            _ => return Err(Error::invalid("timer_rearm: event is not a timer")),
        };
        let mut timers = self.timers.borrow_mut();
        timers.push(ev, deadline, generation);
        if was_armed {
            timers.note_stale();
        }
        drop(timers);
        self.touch(ev);
        Ok(())
    }

    /// Drops a timer's pending deadline; whether it had one.
    fn timer_disarm(&self, ev: &Event<B>) -> bool {
        let was_armed = match &mut ev.state.borrow_mut().0 {
            Kind::Timer {
                armed, generation, ..
            } if *armed => {
                *armed = false;
                *generation += 1;
                true
            }
            _ => false,
        };
        if was_armed {
            self.timers.borrow_mut().note_stale();
        }
        was_armed
    }

    /// Fires the timers due at `now` armed before `horizon` (R4); a
    /// periodic one re-arms from its deadline, skipping missed periods.
    fn run_timers(&self, now: u64, horizon: u64) -> i32 {
        let advance = |ev: &Event<B>, deadline: u64| match &mut ev.state.borrow_mut().0 {
            Kind::Timer {
                repeat, generation, ..
            } if *repeat > 0 => {
                *generation += 1;
                Some((next_deadline(deadline, *repeat, now), *generation))
            }
            Kind::Timer { armed, .. } => {
                *armed = false;
                None
            }
            _ => None,
        };
        fire_due(&self.timers, now, horizon, advance, |ev| self.touch(ev))
    }

    // -----------------------------------------------------------------
    // Triggers
    // -----------------------------------------------------------------

    fn trigger_new(&self, flags: u32, cb: HostCallback) -> Result<Rc<Event<B>>> {
        check_flags("trigger_new", flags, AA_EVF_HIDDEN)?;
        let ev = self.new_event(AA_EVENT_TRIGGER, flags, cb, Kind::Trigger { open: true });
        self.triggers.borrow_mut().push(Rc::clone(&ev));
        self.touch(&ev);
        Ok(ev)
    }

    /// Calls back each open trigger that was fired: O(open triggers), fine
    /// for the handful a program keeps open.
    fn run_triggers(&self) -> i32 {
        let triggers = self.triggers.borrow().clone();
        let mut count = 0;
        for ev in triggers {
            let Some(fire) = &ev.trigger else { continue };
            // Cleared before the callback, so a fire during it counts.
            if !fire.fired.swap(false, Ordering::AcqRel) {
                continue;
            }
            let open = matches!(&ev.state.borrow().0, Kind::Trigger { open: true });
            if open && ev.deliverable() {
                ev.callback.notify(&*ev, 0, 0);
                count += 1;
            }
        }
        count
    }

    fn end_trigger(&self, ev: &Rc<Event<B>>) -> bool {
        let was_open = match &mut ev.state.borrow_mut().0 {
            Kind::Trigger { open } => mem::replace(open, false),
            _ => false,
        };
        if let Some(fire) = &ev.trigger {
            fire.closed.store(true, Ordering::Release);
        }
        self.triggers.borrow_mut().retain(|t| !Rc::ptr_eq(t, ev));
        was_open
    }

    // -----------------------------------------------------------------
    // Signals (the kit's halves)
    // -----------------------------------------------------------------

    fn signal_new(&self, signum: i32, flags: u32, cb: HostCallback) -> Result<Rc<Event<B>>> {
        check_flags("signal_new", flags, AA_EVF_HIDDEN)?;
        crate::signal::check(signum)?;
        if self.signals.borrow().is_none() {
            *self.signals.borrow_mut() = Some(self.open_signals()?);
        }
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals.kit.prepare(signum)?;
        }
        let state = Kind::Signal {
            signum,
            active: true,
        };
        let ev = self.new_event(AA_EVENT_SIGNAL, flags, cb, state);
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals.kit.add(signum, Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// The handler writes a non-blocking socket the loop watches: no
    /// system call of our own beyond std's.
    fn open_signals(&self) -> Result<SignalState<B>> {
        let (rx, tx) = UnixStream::pair().map_err(|e| Error::os("signal_new: socketpair", &e))?;
        for s in [&rx, &tx] {
            s.set_nonblocking(true)
                .map_err(|e| Error::os("signal_new: socketpair", &e))?;
        }
        let kit = Signals::claim(tx.as_raw_fd())?;
        self.backend
            .borrow()
            .register(rx.as_raw_fd(), SIGNALS, AA_POLL_READABLE)
            .map_err(|e| Error::os("signal_new: register the signal socket", &e))?;
        Ok(SignalState { kit, rx, _tx: tx })
    }

    fn drain_signal_socket(&self) {
        if let Some(signals) = self.signals.borrow().as_ref() {
            let mut buf = [0u8; 64];
            while matches!((&signals.rx).read(&mut buf), Ok(n) if n > 0) {}
            // Read dry: a level-triggered backend may report it again.
            self.backend
                .borrow()
                .drained(signals.rx.as_raw_fd(), AA_POLL_READABLE);
        }
    }

    fn signal_stop(&self, ev: &Rc<Event<B>>) -> bool {
        let signum = match &mut ev.state.borrow_mut().0 {
            Kind::Signal { signum, active } if *active => {
                *active = false;
                *signum
            }
            _ => return false,
        };
        if let Some(signals) = self.signals.borrow_mut().as_mut() {
            signals.kit.remove(signum, ev);
        }
        self.touch(ev);
        true
    }

    fn run_signals(&self) -> i32 {
        let batch = match self.signals.borrow().as_ref() {
            Some(signals) => signals.kit.take_batch(),
            None => return 0,
        };
        crate::signal::deliver(batch, |ev| {
            matches!(&ev.state.borrow().0, Kind::Signal { active: true, .. })
        })
    }

    // -----------------------------------------------------------------
    // Name resolution (the kit's pool)
    // -----------------------------------------------------------------

    fn dns_resolve(
        &self,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        cb: HostCallback,
    ) -> Result<Rc<Event<B>>> {
        let id = {
            let mut resolver = self.resolver.borrow_mut();
            let resolver = resolver.get_or_insert_with(|| {
                let waker = Arc::clone(&self.waker);
                Resolver::new(Box::new(move || {
                    let _ = waker.wake();
                }))
            });
            resolver.reserve(node.as_ref())?
        };
        let ev = self.new_event(AA_EVENT_DNS, 0, cb, Kind::Dns { id, active: true });
        if let Some(resolver) = self.resolver.borrow_mut().as_mut() {
            resolver.start(id, node, service, hints, Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    fn dns_stop(&self, ev: &Rc<Event<B>>) -> bool {
        let id = match &mut ev.state.borrow_mut().0 {
            Kind::Dns { id, active } if *active => {
                *active = false;
                *id
            }
            _ => return false,
        };
        let owner = self.resolver.borrow_mut().as_mut().and_then(|r| r.stop(id));
        drop(owner);
        self.touch(ev);
        true
    }

    fn run_dns(&self) -> i32 {
        crate::dns::deliver(&self.resolver, |ev| {
            if let Kind::Dns { active, .. } = &mut ev.state.borrow_mut().0 {
                *active = false;
            }
            self.touch(ev);
        })
    }

    // -----------------------------------------------------------------
    // Cancel, close, dispose, set_ref
    // -----------------------------------------------------------------

    fn cancel(&self, ev: &Rc<Event<B>>, reason: AaStatus) -> Result<()> {
        if reason >= 0 {
            return Err(Error::invalid(format!(
                "cancel: reason {reason} is not a negative status"
            )));
        }
        ev.check_open("cancel")?;
        let mut value = 0;
        let pending = match ev.header.kind {
            AA_EVENT_TIMER => self.timer_disarm(ev),
            AA_EVENT_POLL => match &mut ev.state.borrow_mut().0 {
                Kind::Poll {
                    armed, interest, ..
                } if *armed && *interest != 0 => {
                    *armed = false;
                    true
                }
                _ => false,
            },
            AA_EVENT_IO => {
                if self.withdraw_request(ev) {
                    true
                } else if ev.scheduled.get() > 0 {
                    // Already completed: its real result is on its way.
                    return Ok(());
                } else {
                    false
                }
            }
            AA_EVENT_TRIGGER => self.end_trigger(ev),
            AA_EVENT_SIGNAL => {
                if let Kind::Signal { signum, .. } = &ev.state.borrow().0 {
                    value = i64::from(*signum);
                }
                self.signal_stop(ev)
            }
            AA_EVENT_DNS => self.dns_stop(ev),
            AA_EVENT_PROCESS => self.process_stop(ev),
            AA_EVENT_FS_WATCH => self.fs_watch_stop(ev),
            _ => false,
        };
        if !pending {
            return Err(Error::invalid("cancel: nothing is pending on the event"));
        }
        self.defer(Deferred::Notify {
            ev: Rc::clone(ev),
            status: reason,
            value,
        });
        Ok(())
    }

    fn close(&self, ev: &Rc<Event<B>>, on_closed: Option<ClosedCallback>) -> Result<()> {
        ev.check_open("close")?;
        ev.closing.set(true);
        if ev.header.kind == AA_EVENT_IO && self.withdraw_request(ev) {
            self.defer(Deferred::Notify {
                ev: Rc::clone(ev),
                status: 0,
                value: -i64::from(libc::ECANCELED),
            });
        } else {
            self.stop(ev);
        }
        self.defer(Deferred::Closed {
            ev: Rc::clone(ev),
            on_closed,
        });
        Ok(())
    }

    fn dispose(&self, ev: Rc<Event<B>>) {
        ev.disposed.set(true);
        self.core.event_disposed();
        if ev.header.kind == AA_EVENT_IO {
            self.withdraw_request(&ev);
        } else {
            self.stop(&ev);
        }
        self.touch(&ev);
    }

    /// Stops whatever the event watches, with no callback.
    fn stop(&self, ev: &Rc<Event<B>>) {
        match ev.header.kind {
            AA_EVENT_TIMER => {
                self.timer_disarm(ev);
            }
            AA_EVENT_POLL => self.release_poll(ev),
            AA_EVENT_TRIGGER => {
                self.end_trigger(ev);
            }
            AA_EVENT_SIGNAL => {
                self.signal_stop(ev);
            }
            AA_EVENT_DNS => {
                self.dns_stop(ev);
            }
            AA_EVENT_PROCESS => {
                self.process_stop(ev);
            }
            AA_EVENT_FS_WATCH => {
                self.fs_watch_stop(ev);
            }
            _ => {}
        }
        self.touch(ev);
    }

    fn set_ref(&self, ev: &Event<B>, referenced: bool) {
        ev.referenced.set(referenced);
        self.touch(ev);
    }
}
