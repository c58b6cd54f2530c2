//! The loop: one `mio::Poll` (epoll, edge-triggered), the kit's timer heap,
//! signal watches and resolver, the open triggers, the deferred callbacks,
//! and what each iteration does.
//!
//! # Invariants
//!
//! - **R1** Callbacks run only inside `run_once`, never while a `RefCell`
//!   is borrowed: each step copies what it needs, lets go, then calls.
//! - **R2** A callback deferred during iteration N runs in iteration N+1 or
//!   later: `run_once` takes the deferred queue at its start.
//! - **R3** `alive` counts the events whose `counted` is set (E3; the
//!   kit's `Core`, C1), and `destroy` refuses while an event is not
//!   disposed (C2).
//! - **R4** Each iteration bounds its work: timers armed during it and
//!   requests submitted during it wait for the next one.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::CString;
use std::io::{self, Read};
use std::mem;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::rc::{Rc, Weak};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_abi::sdk::dns::Hints;
use async_abi::*;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use reactor_sdk::core::Core;
use reactor_sdk::dns::Resolver;
use reactor_sdk::error::check_flags;
use reactor_sdk::signal::Signals;
use reactor_sdk::timer::{fire_due, next_deadline, TimerHeap};
use reactor_sdk::{ClosedCallback, Error, HostCallback, Result};

use crate::event::{Event, Fire, Kind, EVENT_MAGIC};
use crate::io::Fds;
use crate::watch::{pidfd_of, INOTIFY};

/// The waker's token; descriptors use their number, which is never this.
const WAKER: Token = Token(usize::MAX);
/// The signal socket's token.
const SIGNALS: Token = Token(usize::MAX - 1);

/// A callback owed to the host, delivered by a later `run_once` (R2).
pub(crate) type Deferred = reactor_sdk::deferred::Deferred<Event>;

/// The loop's signal state: the kit's, and the socket its handler writes.
#[derive(Debug)]
struct SignalState {
    kit: Signals<Event>,
    rx: UnixStream,
    _tx: UnixStream,
}

/// One event loop.
#[derive(Debug)]
pub(crate) struct Reactor {
    /// `wake`, triggers and resolver threads reach this from any thread.
    pub(crate) waker: Arc<mio::Waker>,
    this: Weak<Reactor>,
    /// The kit's loop bookkeeping: thread, clock, alive count, live events,
    /// `run_once` re-entry, last error.
    pub(crate) core: Core,
    pub(crate) poll: RefCell<Poll>,
    events: RefCell<Events>,
    pub(crate) fds: RefCell<Fds>,
    timers: RefCell<TimerHeap<Event>>,
    triggers: RefCell<Vec<Rc<Event>>>,
    deferred: RefCell<VecDeque<Deferred>>,
    signals: RefCell<Option<SignalState>>,
    resolver: RefCell<Option<Resolver<Rc<Event>>>>,
    /// Active process watches by pidfd (watch.rs).
    pub(crate) processes: RefCell<std::collections::HashMap<std::os::fd::RawFd, Rc<Event>>>,
    /// The kit's inotify instance, from the first `fs_watch_new`.
    pub(crate) inotify: RefCell<Option<reactor_sdk::inotify::Inotify<Event>>>,
}

impl Reactor {
    /// A reactor bound to the calling thread.
    pub(crate) fn new() -> Result<Rc<Reactor>> {
        let poll = Poll::new().map_err(|e| Error::os("create: epoll_create1", &e))?;
        let waker = mio::Waker::new(poll.registry(), WAKER)
            .map_err(|e| Error::os("create: eventfd waker", &e))?;
        Ok(Rc::new_cyclic(|this| Reactor {
            waker: Arc::new(waker),
            this: this.clone(),
            core: Core::new(),
            poll: RefCell::new(poll),
            events: RefCell::new(Events::with_capacity(256)),
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

    pub(crate) fn refresh_clock(&self) -> u64 {
        self.core.refresh_clock()
    }

    /// Reconciles the event's `counted` flag with its state (R3).
    pub(crate) fn touch(&self, ev: &Event) {
        self.core.touch(&ev.counted, ev.is_live());
    }

    /// Makes an event of this reactor.
    pub(crate) fn new_event(
        &self,
        kind: u32,
        flags: u32,
        callback: HostCallback,
        state: Kind,
    ) -> Rc<Event> {
        self.core.event_made();
        let trigger = (kind == AA_EVENT_TRIGGER).then(|| {
            Arc::new(Fire {
                fired: false.into(),
                closed: false.into(),
                waker: Arc::clone(&self.waker),
            })
        });
        Rc::new(Event {
            header: AaEvent {
                struct_size: mem::size_of::<AaEvent>() as u32,
                kind,
                flags,
                _reserved: 0,
            },
            magic: EVENT_MAGIC,
            reactor: self.this.clone(),
            callback,
            trigger,
            referenced: Cell::new(true),
            disposed: Cell::new(false),
            closing: Cell::new(false),
            counted: Cell::new(false),
            scheduled: Cell::new(0),
            state: RefCell::new(state),
        })
    }

    /// Queues a callback for a later `run_once` (R2).
    pub(crate) fn defer(&self, item: Deferred) {
        reactor_sdk::deferred::schedule(&self.deferred, item, |ev| self.touch(ev));
    }

    pub(crate) fn destroy(&self) -> Result<()> {
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
            let _ = self.poll.borrow().registry().deregister(&mut SourceFd(&fd));
        }
        Ok(())
    }

    // -----------------------------------------------------------------
    // One iteration
    // -----------------------------------------------------------------

    pub(crate) fn run_once(&self, timeout_ns: i64) -> Result<i32> {
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
            // again (epoll's unit is a millisecond: it may wake early).
            if !ready.is_empty() || fired > 0 || !timer_bound || timeout == Some(Duration::ZERO) {
                break;
            }
        }
        count += self.start_fresh(fresh);
        for &(token, bits) in &ready {
            count += match token {
                WAKER => 0,
                SIGNALS => {
                    self.drain_signal_socket();
                    0
                }
                INOTIFY => self.inotify_ready(),
                token => match pidfd_of(token) {
                    Some(fd) => self.process_ready(fd),
                    None => self.fd_ready(token.0 as i32, bits),
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
        // Rounded up to epoll's millisecond: never a busy 0 ms wait.
        let timeout = ns.map(|ns| Duration::from_millis(ns.div_ceil(1_000_000)));
        (timeout, timer_bound)
    }

    /// Waits and copies what epoll reported, so no borrow outlives it.
    fn wait(&self, timeout: Option<Duration>, ready: &mut Vec<(Token, u32)>) -> Result<()> {
        ready.clear();
        let mut poll = self.poll.borrow_mut();
        let mut events = self.events.borrow_mut();
        match poll.poll(&mut events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(Error::os("run_once: epoll_wait", &e)),
        }
        for event in events.iter() {
            let mut bits = 0;
            if event.is_readable() {
                bits |= AA_POLL_READABLE;
            }
            if event.is_writable() || event.is_write_closed() {
                bits |= AA_POLL_WRITABLE;
            }
            if event.is_error() {
                bits |= AA_POLL_ERROR;
            }
            if event.is_read_closed() {
                bits |= AA_POLL_HUP | AA_POLL_READABLE;
            }
            ready.push((event.token(), bits));
        }
        Ok(())
    }

    /// Delivers the deferred batch taken at the iteration's start (R2).
    fn deliver(&self, batch: VecDeque<Deferred>) -> i32 {
        reactor_sdk::deferred::deliver(batch, |ev| self.touch(ev), |_| {})
    }

    // -----------------------------------------------------------------
    // Timers (the kit's heap)
    // -----------------------------------------------------------------

    pub(crate) fn timer_new(
        &self,
        first_ns: u64,
        repeat_ns: u64,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
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

    pub(crate) fn timer_rearm(&self, ev: &Rc<Event>, first_ns: u64, repeat_ns: u64) -> Result<()> {
        check_open(ev, "timer_rearm")?;
        let deadline = self.refresh_clock().saturating_add(first_ns);
        let (was_armed, generation) = match &mut *ev.state.borrow_mut() {
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
    fn timer_disarm(&self, ev: &Event) -> bool {
        let was_armed = match &mut *ev.state.borrow_mut() {
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
        let advance = |ev: &Event, deadline: u64| match &mut *ev.state.borrow_mut() {
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

    pub(crate) fn trigger_new(&self, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        check_flags("trigger_new", flags, AA_EVF_HIDDEN)?;
        let ev = self.new_event(AA_EVENT_TRIGGER, flags, cb, Kind::Trigger { open: true });
        self.triggers.borrow_mut().push(Rc::clone(&ev));
        self.touch(&ev);
        Ok(ev)
    }

    /// Calls back each open trigger that was fired: O(open triggers), which
    /// an example can afford.
    fn run_triggers(&self) -> i32 {
        let triggers = self.triggers.borrow().clone();
        let mut count = 0;
        for ev in triggers {
            let Some(fire) = &ev.trigger else { continue };
            // Cleared before the callback, so a fire during it counts.
            if !fire.fired.swap(false, Ordering::AcqRel) {
                continue;
            }
            let open = matches!(&*ev.state.borrow(), Kind::Trigger { open: true });
            if open && ev.deliverable() {
                ev.callback.notify(&*ev, 0, 0);
                count += 1;
            }
        }
        count
    }

    fn end_trigger(&self, ev: &Rc<Event>) -> bool {
        let was_open = match &mut *ev.state.borrow_mut() {
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

    pub(crate) fn signal_new(
        &self,
        signum: i32,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
        check_flags("signal_new", flags, AA_EVF_HIDDEN)?;
        reactor_sdk::signal::check(signum)?;
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
    fn open_signals(&self) -> Result<SignalState> {
        let (rx, tx) = UnixStream::pair().map_err(|e| Error::os("signal_new: socketpair", &e))?;
        for s in [&rx, &tx] {
            s.set_nonblocking(true)
                .map_err(|e| Error::os("signal_new: socketpair", &e))?;
        }
        let kit = Signals::claim(tx.as_raw_fd())?;
        self.poll
            .borrow()
            .registry()
            .register(&mut SourceFd(&rx.as_raw_fd()), SIGNALS, Interest::READABLE)
            .map_err(|e| Error::os("signal_new: register the signal socket", &e))?;
        Ok(SignalState { kit, rx, _tx: tx })
    }

    fn drain_signal_socket(&self) {
        if let Some(signals) = self.signals.borrow().as_ref() {
            let mut buf = [0u8; 64];
            while matches!((&signals.rx).read(&mut buf), Ok(n) if n > 0) {}
        }
    }

    fn signal_stop(&self, ev: &Rc<Event>) -> bool {
        let signum = match &mut *ev.state.borrow_mut() {
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
        reactor_sdk::signal::deliver(batch, |ev| {
            matches!(&*ev.state.borrow(), Kind::Signal { active: true, .. })
        })
    }

    // -----------------------------------------------------------------
    // Name resolution (the kit's pool)
    // -----------------------------------------------------------------

    pub(crate) fn dns_resolve(
        &self,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
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

    fn dns_stop(&self, ev: &Rc<Event>) -> bool {
        let id = match &mut *ev.state.borrow_mut() {
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
        reactor_sdk::dns::deliver(&self.resolver, |ev| {
            if let Kind::Dns { active, .. } = &mut *ev.state.borrow_mut() {
                *active = false;
            }
            self.touch(ev);
        })
    }

    // -----------------------------------------------------------------
    // Cancel, close, dispose, set_ref
    // -----------------------------------------------------------------

    pub(crate) fn cancel(&self, ev: &Rc<Event>, reason: AaStatus) -> Result<()> {
        if reason >= 0 {
            return Err(Error::invalid(format!(
                "cancel: reason {reason} is not a negative status"
            )));
        }
        check_open(ev, "cancel")?;
        let mut value = 0;
        let pending = match ev.header.kind {
            AA_EVENT_TIMER => self.timer_disarm(ev),
            AA_EVENT_POLL => match &mut *ev.state.borrow_mut() {
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
                if let Kind::Signal { signum, .. } = &*ev.state.borrow() {
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

    pub(crate) fn close(&self, ev: &Rc<Event>, on_closed: Option<ClosedCallback>) -> Result<()> {
        check_open(ev, "close")?;
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

    pub(crate) fn dispose(&self, ev: Rc<Event>) {
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
    fn stop(&self, ev: &Rc<Event>) {
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

    pub(crate) fn set_ref(&self, ev: &Event, referenced: bool) {
        ev.referenced.set(referenced);
        self.touch(ev);
    }
}

/// `AA_E_CLOSED` for an event that is closing or closed.
pub(crate) fn check_open(ev: &Event, what: &str) -> Result<()> {
    if ev.closing.get() {
        return Err(Error::new(
            AA_E_CLOSED,
            format!("{what}: event is closed or closing"),
        ));
    }
    Ok(())
}
