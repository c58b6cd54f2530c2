//! The owned driver: one `mio::Poll`, its descriptors, timers, triggers and
//! the deferred-callback queue, and the loop iteration that drives them.
//!
//! # What this module owns
//!
//! [`Reactor`], made by `create` and freed by `destroy`: the poll and its
//! event buffer, the [`Registry`], the [`TimerHeap`], the open triggers, the
//! queue of deferred callbacks (cancellations, results of requests that never
//! waited, `on_closed`), the list of descriptors whose queues must be tried
//! without waiting for an edge ("dirty"), the cached clock and the counters;
//! and, made on first use, the signal watches ([`Signals`]), the process
//! watches by token, the inotify instance ([`Inotify`]) and the resolver
//! ([`Resolver`]).
//!
//! # Invariants
//!
//! - **R1** Callbacks run only inside `run_once`, and never while a
//!   `RefCell` of the reactor or of an event is borrowed: every step copies
//!   what it needs, releases its borrows, then calls the host, and looks the
//!   world up again afterwards (a callback may create, cancel, close and
//!   dispose anything, and submit requests).
//! - **R2** A deferred callback queued during iteration N is delivered in
//!   iteration N+1 or later: `run_once` takes the queue at its start and
//!   delivers only that batch, so nothing scheduled by `cancel` or `close`
//!   runs inside that call, nor in the iteration it was made from.
//! - **R3** `alive` equals the number of events whose `counted` is set
//!   (event invariant E4): every state change ends with [`Reactor::touch`].
//! - **R4** `live_events` counts events created and not yet disposed;
//!   `destroy` refuses while it is non-zero. mio completes requests
//!   synchronously, so a disposed event is never held by the kernel.
//! - **R5** `run_once` never blocks when it already has work: callbacks ran
//!   before the wait, deferred callbacks or dirty descriptors are waiting.
//! - **R6** Each iteration bounds its own work: timers armed during it, and
//!   requests queued during it beyond the queue's length at its start, wait
//!   for the next one, so a callback that re-arms itself cannot spin a
//!   single `run_once` forever.
//! - **R7** mio tokens: a registry key never has `u32::MAX` in its low half
//!   (registry invariant G5); the reactor's own sources (the waker, the
//!   signal eventfd, the inotify descriptor, the timerfd, each pidfd) all
//!   do, so a token names either a descriptor entry or one of them, never
//!   both.
//!
//! # Access
//!
//! Loop thread only (checked at the ABI boundary against the thread that
//! called `create`), except [`Reactor::shared`], which `wake` and
//! `trigger_fire` reach from any thread.
//!
//! # Drop order
//!
//! `destroy` (with no live event) clears the deferred queue, the triggers
//! and their fired list (a fired flag holds the shared waker), the timers
//! and the registry; gives back the signal port (restoring dispositions),
//! closes the inotify descriptor and ends the resolver pool; then drops the
//! poll, which closes the epoll descriptor; events that were disposed and
//! still sat in a queue go with them.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::mem;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Duration;

use async_abi::{AA_POLL_ERROR, AA_POLL_HUP};
use async_abi::{AA_POLL_READABLE, AA_POLL_WRITABLE};
use std::os::fd::{AsRawFd, OwnedFd};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use reactor_sdk::core::Core;

use crate::config::Config;
use crate::dns::Resolver;
use crate::error::{Error, Result};
use crate::event::{Event, State};
use crate::ffi::HostCallback;
use crate::fs_watch::Inotify;
use crate::registry::{Key, Registry};
use crate::signal::Signals;
use crate::sys;
use crate::timer::TimerHeap;
use crate::trigger::{Shared, TriggerFlag};

/// The low half of every token of the reactor's own sources (R7).
const OWN_SOURCE: usize = 0xffff_ffff;

/// The waker's token (R7).
pub(crate) const WAKER_TOKEN: Token = Token(usize::MAX);
/// The signal eventfd's token (R7).
pub(crate) const SIGNAL_TOKEN: Token = Token(0xffff_fffe << 32 | OWN_SOURCE);
/// The inotify descriptor's token (R7).
pub(crate) const INOTIFY_TOKEN: Token = Token(0xffff_fffd << 32 | OWN_SOURCE);
/// The timerfd's token (R7).
pub(crate) const TIMERFD_TOKEN: Token = Token(0xffff_fffc << 32 | OWN_SOURCE);
/// The highest id of a pidfd's token, below the fixed ones.
pub(crate) const LAST_PROCESS_ID: u32 = 0xffff_fffb;

/// The token of the pidfd with `id` (1..=[`LAST_PROCESS_ID`], R7).
pub(crate) fn process_token(id: u32) -> Token {
    Token((id as usize) << 32 | OWN_SOURCE)
}

/// A callback owed to the host, delivered by the next `run_once` (R2): the
/// kit's (`reactor_sdk::deferred`).
pub(crate) type Deferred = reactor_sdk::deferred::Deferred<Event>;

/// One event loop (see the module doc).
#[derive(Debug)]
pub(crate) struct Reactor {
    /// What other threads reach: the waker and the fired triggers.
    pub(crate) shared: Arc<Shared>,
    this: Weak<Reactor>,
    /// The loop's bookkeeping (the kit's: thread, clock, alive count, live
    /// events, `run_once` re-entry, last error).
    pub(crate) core: Core,
    poll: RefCell<Poll>,
    events: RefCell<Events>,
    /// Wakes the wait at the nearest timer deadline with nanosecond
    /// precision (epoll's own timeout is in whole milliseconds).
    timerfd: OwnedFd,
    /// The deadline (reactor clock) the timerfd is armed for, if any.
    timerfd_armed: Cell<Option<u64>>,
    pub(crate) registry: RefCell<Registry>,
    pub(crate) timers: RefCell<TimerHeap>,
    /// Open triggers by id.
    pub(crate) triggers: RefCell<HashMap<u64, Rc<Event>>>,
    spare_fired: RefCell<Vec<Arc<TriggerFlag>>>,
    next_trigger: Cell<u64>,
    deferred: RefCell<VecDeque<Deferred>>,
    dirty: RefCell<Vec<Key>>,
    /// What the last wait reported, kept so an iteration allocates nothing.
    ready: RefCell<Vec<(Token, u32)>>,
    /// The polls one readiness report notifies, kept likewise.
    pub(crate) poll_scratch: RefCell<Vec<Rc<Event>>>,
    /// Signal watches, from the first `signal_new`.
    pub(crate) signals: RefCell<Option<Signals>>,
    /// Active process watches by their pidfd's token.
    pub(crate) processes: RefCell<HashMap<Token, Rc<Event>>>,
    /// The next pidfd token id to try.
    pub(crate) next_process: Cell<u32>,
    /// The inotify instance, from the first `fs_watch_new`.
    pub(crate) inotify: RefCell<Option<Inotify>>,
    /// The resolver, from the first `dns_resolve`.
    pub(crate) resolver: RefCell<Option<Resolver>>,
    /// Disposed request events nothing else refers to, kept for the next
    /// requests (R4): a request that waits then costs no allocation.
    spare_requests: RefCell<Vec<Rc<Event>>>,
}

/// The most disposed request events kept for reuse.
const SPARE_REQUESTS: usize = 256;

impl Reactor {
    /// Makes a reactor bound to the calling thread.
    pub(crate) fn new(config: &Config) -> Result<Rc<Reactor>> {
        let poll = Poll::new().map_err(|e| Error::os("create: epoll_create1", &e))?;
        let waker = mio::Waker::new(poll.registry(), WAKER_TOKEN)
            .map_err(|e| Error::os("create: eventfd waker", &e))?;
        let timerfd = sys::timerfd().map_err(|e| Error::os("create: timerfd_create", &e))?;
        poll.registry()
            .register(
                &mut SourceFd(&timerfd.as_raw_fd()),
                TIMERFD_TOKEN,
                Interest::READABLE,
            )
            .map_err(|e| Error::os("create: epoll_ctl (timerfd)", &e))?;
        let shared = Arc::new(Shared::new(waker));
        Ok(Rc::new_cyclic(|this| Reactor {
            shared,
            this: this.clone(),
            core: Core::new(),
            poll: RefCell::new(poll),
            events: RefCell::new(Events::with_capacity(config.events_capacity)),
            timerfd,
            timerfd_armed: Cell::new(None),
            registry: RefCell::new(Registry::default()),
            timers: RefCell::new(TimerHeap::default()),
            triggers: RefCell::new(HashMap::new()),
            spare_fired: RefCell::new(Vec::new()),
            next_trigger: Cell::new(1),
            deferred: RefCell::new(VecDeque::new()),
            dirty: RefCell::new(Vec::new()),
            ready: RefCell::new(Vec::new()),
            poll_scratch: RefCell::new(Vec::new()),
            signals: RefCell::new(None),
            processes: RefCell::new(HashMap::new()),
            next_process: Cell::new(1),
            inotify: RefCell::new(None),
            resolver: RefCell::new(None),
            spare_requests: RefCell::new(Vec::new()),
        }))
    }

    /// Refreshes and returns the cached clock (ns since `create`).
    #[inline]
    pub(crate) fn refresh_clock(&self) -> u64 {
        self.core.refresh_clock()
    }

    /// Reconciles the event's `counted` flag with its state (R3, E4).
    #[inline]
    pub(crate) fn touch(&self, ev: &Event) {
        self.core.touch(&ev.counted, ev.is_live());
    }

    /// Makes an event of this reactor (R4).
    pub(crate) fn new_event(
        &self,
        kind: u32,
        flags: u32,
        callback: HostCallback,
        trigger: Option<Arc<TriggerFlag>>,
        state: State,
    ) -> Rc<Event> {
        self.core.event_made();
        if kind == async_abi::AA_EVENT_IO && trigger.is_none() {
            if let Some(mut ev) = self.spare_requests.borrow_mut().pop() {
                // Spares are unshared (`recycle`), so this always succeeds.
                if let Some(slot) = Rc::get_mut(&mut ev) {
                    slot.renew(flags, callback, state);
                    return ev;
                }
            }
        }
        Rc::new(Event::new(
            self.this.clone(),
            kind,
            flags,
            callback,
            trigger,
            state,
        ))
    }

    /// Keeps a disposed request event for reuse if nothing else refers to
    /// it (no queue, no deferred callback, no host pointer: the host gave
    /// its reference up with `dispose`).
    pub(crate) fn recycle(&self, ev: Rc<Event>) {
        if ev.header.kind == async_abi::AA_EVENT_IO
            && Rc::strong_count(&ev) == 1
            && Rc::weak_count(&ev) == 0
        {
            // Whatever the request's state still owns (a descriptor to
            // close, a buffer) goes now, as it would with the event.
            *ev.state.borrow_mut() = State::Trigger { open: false };
            let mut spare = self.spare_requests.borrow_mut();
            if spare.len() < SPARE_REQUESTS {
                spare.push(ev);
            }
        }
    }

    /// Counts a disposed event out of `live_events` (R4).
    pub(crate) fn forget_event(&self) {
        self.core.event_disposed();
    }

    /// Queues a callback for the next `run_once` (R2, E5).
    pub(crate) fn defer(&self, item: Deferred) {
        reactor_sdk::deferred::schedule(&self.deferred, item, |ev| self.touch(ev));
    }

    /// Asks the next `run_once` to try the queues of `key` without waiting
    /// for an edge.
    pub(crate) fn mark_dirty(&self, key: Key) {
        let mut dirty = self.dirty.borrow_mut();
        if !dirty.contains(&key) {
            dirty.push(key);
        }
    }

    /// The mio registry, for (re)registrations.
    pub(crate) fn with_mio<T>(&self, f: impl FnOnce(&mio::Registry) -> T) -> T {
        f(self.poll.borrow().registry())
    }

    /// Allocates a trigger id and reserves fired-list room for every open
    /// trigger plus this one (trigger invariant T2).
    pub(crate) fn next_trigger_id(&self) -> u64 {
        let id = self.next_trigger.get();
        self.next_trigger.set(id + 1);
        let flags = self.triggers.borrow().len() + 1;
        self.shared.reserve(flags);
        self.spare_fired.borrow_mut().reserve(flags);
        id
    }

    /// `destroy`: refuses while events are alive (R4), else drops
    /// everything (see the drop order).
    pub(crate) fn destroy(&self) -> Result<()> {
        self.core.check_destroy()?;
        self.deferred.borrow_mut().clear();
        self.triggers.borrow_mut().clear();
        self.shared.clear_fired();
        self.spare_fired.borrow_mut().clear();
        self.timers.borrow_mut().clear();
        self.registry.borrow_mut().clear();
        self.dirty.borrow_mut().clear();
        self.processes.borrow_mut().clear();
        self.close_signals();
        self.close_inotify();
        self.close_resolver();
        Ok(())
    }

    /// One loop iteration (see `async_abi::reactor`): returns the number of
    /// callbacks run.
    pub(crate) fn run_once(&self, timeout_ns: i64) -> Result<i32> {
        // Reset even if the iteration panics (the panic becomes AA_E_PANIC at
        // the boundary and the host may still call `destroy`).
        let _running = self.core.enter(timeout_ns)?;
        self.iterate(timeout_ns)
    }

    fn iterate(&self, timeout_ns: i64) -> Result<i32> {
        // R2: this iteration's share of deferred work, taken up front.
        let deferred = mem::take(&mut *self.deferred.borrow_mut());
        let dirty = mem::take(&mut *self.dirty.borrow_mut());
        let (horizon, timers) = {
            let heap = self.timers.borrow();
            (heap.horizon(), !heap.is_empty())
        };

        // 1-2: clock (only with timers pending: reading it is most of an
        // empty iteration's cost), due timers.
        let mut count = self
            .core
            .clock_for_timers(timers)
            .map_or(0, |now| self.run_timers(now, horizon));

        // 3: wait, cut short by the nearest timer; never block with work (R5).
        let has_work = count > 0 || !deferred.is_empty() || !dirty.is_empty();
        // Taken out of its cell while callbacks run (R1), put back after.
        let mut ready = mem::take(&mut *self.ready.borrow_mut());
        loop {
            let (timeout, timer_bound) = self.wait_timeout(timeout_ns, has_work);
            self.wait(timeout, &mut ready)?;
            // A wait that did not block took about as long as a clock read:
            // what it could make due, the next iteration fires.
            // `timer_bound` too: a timer armed since the snapshot still
            // ends a wait it cut short (R-LOOP-5), never a re-wait on a
            // stale clock.
            let fired = if (timers || timer_bound) && timeout != Some(Duration::ZERO) {
                self.run_timers(self.refresh_clock(), horizon)
            } else {
                0
            };
            count += fired;
            // A timer-bound wait that woke with nothing to do waits again:
            // `run_once(-1)` returns once the nearest timer was due.
            if !ready.is_empty() || fired > 0 || !timer_bound || timeout == Some(Duration::ZERO) {
                break;
            }
        }

        // 4: complete what the OS reported, and what did not need to wait.
        count += self.complete_ready(&ready);
        *self.ready.borrow_mut() = ready;
        for key in dirty {
            count += self.drain(key, true);
            count += self.drain(key, false);
        }
        count += self.run_triggers();
        count += self.run_signals();
        count += self.run_dns();

        // 5: cancellations, early results and `on_closed` (R2).
        count += self.deliver(deferred);
        Ok(count)
    }

    /// The poll timeout for a requested `timeout_ns`, and whether the nearest
    /// timer (not the caller) decided it.
    fn wait_timeout(&self, timeout_ns: i64, has_work: bool) -> (Option<Duration>, bool) {
        if has_work || timeout_ns == 0 {
            return (Some(Duration::ZERO), false);
        }
        let requested = u64::try_from(timeout_ns).ok();
        let deadline = self.timers.borrow_mut().next_deadline();
        let timer = deadline.map(|d| d.saturating_sub(self.core.now()));
        let timer_bound = match (requested, timer) {
            (Some(r), Some(t)) => t < r,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if let (true, Some(deadline), Some(t)) = (timer_bound, deadline, timer) {
            if t == 0 {
                return (Some(Duration::ZERO), true);
            }
            // The timerfd wakes the wait at the deadline to the nanosecond;
            // epoll's own timeout would round it to a whole millisecond (up,
            // so a sub-millisecond remainder never becomes a busy 0 ms wait,
            // which made timers wake up to 1 ms late). Re-arm only when the
            // nearest deadline changed: usually no system call at all.
            let armed = self.timerfd_armed.get() == Some(deadline) || self.arm_timerfd(deadline);
            let timeout = if armed {
                // The caller's own bound (longer than the timer's) still
                // applies, rounded up; the timerfd comes first.
                requested.map(|r| Duration::from_millis(r.div_ceil(1_000_000)))
            } else {
                // The kernel refused the timerfd: fall back to epoll's unit.
                Some(Duration::from_millis(t.div_ceil(1_000_000)))
            };
            return (timeout, true);
        }
        let timeout = requested.map(|r| Duration::from_millis(r.div_ceil(1_000_000)));
        (timeout, false)
    }

    /// Arms the timerfd for `deadline` (reactor clock), measured from a
    /// fresh clock reading; false if the kernel refused (then the wait uses
    /// epoll's millisecond timeout instead).
    fn arm_timerfd(&self, deadline: u64) -> bool {
        let now = self.refresh_clock();
        match sys::timerfd_arm(&self.timerfd, deadline.saturating_sub(now)) {
            Ok(()) => {
                self.timerfd_armed.set(Some(deadline));
                true
            }
            Err(_) => {
                self.timerfd_armed.set(None);
                false
            }
        }
    }

    /// Waits for the OS and copies what it reported (token, `AA_POLL_*`
    /// bits) into `ready`, so no borrow of the poll outlives the wait.
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
            if event.is_writable() {
                bits |= AA_POLL_WRITABLE;
            }
            if event.is_error() {
                bits |= AA_POLL_ERROR;
            }
            if event.is_read_closed() {
                // A read will not block: it returns end of stream.
                bits |= AA_POLL_HUP | AA_POLL_READABLE;
            }
            if event.is_write_closed() {
                bits |= AA_POLL_WRITABLE;
            }
            ready.push((event.token(), bits));
        }
        Ok(())
    }

    /// Completes requests and notifies polls for what the OS reported.
    fn complete_ready(&self, ready: &[(Token, u32)]) -> i32 {
        let mut count = 0;
        for &(token, bits) in ready {
            if token.0 & OWN_SOURCE == OWN_SOURCE {
                count += self.complete_own(token);
                continue;
            }
            let key = Key(token.0);
            let readable = bits & (AA_POLL_READABLE | AA_POLL_ERROR) != 0;
            let writable = bits & (AA_POLL_WRITABLE | AA_POLL_ERROR) != 0;
            // One look at the entry decides what to drain: an edge usually
            // reports both directions, while only one has a request waiting.
            let (readers, writers, polls) = {
                let mut registry = self.registry.borrow_mut();
                let Some(entry) = registry.get_mut(key) else {
                    continue;
                };
                entry.note_ready(readable, writable, bits & AA_POLL_HUP != 0);
                let readers = readable && !entry.readers.is_empty();
                let writers = writable && !entry.writers.is_empty();
                // The common report, a lone poll and no request: taken
                // now, so the entry is looked up once (requests drained
                // first may change the list: then it is looked up again).
                let polls = match &entry.polls[..] {
                    [] => Polls::None,
                    [only] if !readers && !writers => Polls::One(Rc::clone(only)),
                    _ => Polls::Listed,
                };
                (readers, writers, polls)
            };
            if readers {
                count += self.drain(key, true);
            }
            if writers {
                count += self.drain(key, false);
            }
            match polls {
                Polls::One(only) => count += i32::from(self.notify_poll(&only, key, bits)),
                Polls::Listed => count += self.notify_polls(key, bits),
                Polls::None => {}
            }
        }
        count
    }

    /// Handles a report of one of the reactor's own sources (R7).
    fn complete_own(&self, token: Token) -> i32 {
        match token {
            WAKER_TOKEN => 0,
            SIGNAL_TOKEN => {
                // The signals themselves are taken by `run_signals`.
                self.drain_signal_fd();
                0
            }
            INOTIFY_TOKEN => self.read_inotify(),
            TIMERFD_TOKEN => {
                // Expired: the timers themselves run after the wait.
                sys::eventfd_drain(&self.timerfd);
                self.timerfd_armed.set(None);
                0
            }
            _ => self.complete_process(token),
        }
    }

    /// Delivers the deferred batch taken at the start of the iteration (R2).
    fn deliver(&self, batch: VecDeque<Deferred>) -> i32 {
        reactor_sdk::deferred::deliver(batch, |ev| self.touch(ev), |_| {})
    }

    /// Delivers fired triggers: O(fired), not O(triggers).
    fn run_triggers(&self) -> i32 {
        let mut batch = mem::take(&mut *self.spare_fired.borrow_mut());
        self.shared.take_fired(&mut batch);
        let mut count = 0;
        for flag in batch.drain(..) {
            // T1: clear before the callback, so a fire during it counts.
            flag.rearm();
            let ev = self.triggers.borrow().get(&flag.id).cloned();
            let Some(ev) = ev else { continue };
            let open = matches!(&*ev.state.borrow(), State::Trigger { open: true });
            if open && ev.deliverable() {
                ev.callback.notify(&*ev, 0, 0);
                count += 1;
            }
        }
        let flags = self.triggers.borrow().len();
        batch.reserve(flags);
        *self.spare_fired.borrow_mut() = batch;
        count
    }

    /// `AA_E_INVALID` for a closing or closed event, naming `what`.
    pub(crate) fn check_open(&self, ev: &Event, what: &str) -> Result<()> {
        if ev.closing.get() {
            return Err(Error::new(
                async_abi::AA_E_CLOSED,
                format!("{what}: event is closed or closing"),
            ));
        }
        Ok(())
    }
}

/// Validates `AA_EVF_*` flags against the bits a constructor accepts.
pub(crate) use reactor_sdk::error::check_flags;

/// The polls of an entry that a report finds, as `complete_ready` takes
/// them.
enum Polls {
    /// None: nothing to notify.
    None,
    /// The lone poll, taken with the entry's one look-up.
    One(Rc<Event>),
    /// Several, or requests drained first: `notify_polls` looks again.
    Listed,
}
