//! The owned driver: one io_uring, the ops in flight, the descriptors,
//! timers and deferred callbacks, and the loop iteration that drives them.
//!
//! # What this module owns
//!
//! [`Reactor`], made by `create` and freed by `destroy`: the [`Ring`], the
//! [`OpTable`], the [`Registry`], the [`TimerHeap`], the [`Waker`] and its
//! eventfd read, the queue of deferred callbacks (cancellations, on_closed,
//! completions reaped in the iteration that cancelled them), the cached
//! clock and the counters; and, made on first use, the signal watches
//! ([`Signals`], woken through the waker), the inotify instance
//! ([`Inotify`], with its own read) and the resolver ([`Resolver`], woken
//! through the waker).
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
//!   delivers only that batch. Nothing caused by `cancel` or `close` runs
//!   inside that call, nor in the iteration it was made from: a request
//!   whose cancelled completion is reaped in the iteration that cancelled it
//!   is deferred too (ops/io.rs).
//! - **R3** `alive` equals the number of events whose `counted` is set
//!   (event invariant E4): every state change ends with [`Reactor::touch`].
//! - **R4** `live_events` counts events created and not yet disposed, and
//!   the op table counts ops that hold an event (disposed or not): `destroy`
//!   refuses while either is non-zero, so nothing the kernel may still
//!   write into is ever freed (P-21).
//! - **R5** `run_once` never blocks when it already has work (callbacks ran
//!   before the wait, or deferred callbacks are waiting).
//! - **R6** Each iteration bounds its own work: timers armed during it wait
//!   for the next one, requests submitted from its callbacks reach the
//!   kernel at the next one, and it reaps at most a bounded number of
//!   completions.
//! - **R7** One `io_uring_enter` per iteration: `io_submit` and every other
//!   call only queue entries (ring invariant K3); the iteration submits
//!   them all and waits, for the caller's timeout or the nearest timer,
//!   in the same system call.
//!
//! # Access
//!
//! Loop thread only (checked at the ABI boundary against the thread that
//! called `create`), except `waker`, which `wake`, the signal handler (by
//! its descriptor) and the resolver threads reach from any thread.
//!
//! # Drop order
//!
//! `destroy` (with no live event and no event op in the kernel) clears the
//! deferred queue and the timers, gives back the signal port (restoring
//! dispositions; no handler writes the waker after that), ends the resolver
//! pool, cancels the waker's and the inotify reads and waits for their
//! completions, then closes the inotify descriptor; dropping the reactor
//! then drops the ring (unmapping it, closing its descriptor) and its
//! reference to the waker (a detached resolver thread may hold the other).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::mem;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Duration;

use async_abi::{AaEvent, AA_E_BUSY, AA_E_CLOSED};

use reactor_sdk::core::Core;

use crate::config::Config;
use crate::dns::Resolver;
use crate::error::{Error, Result};
use crate::event::{CloseState, Event, State};
use crate::ffi::HostCallback;
use crate::fs_watch::Inotify;
use crate::ops::{OpKey, OpTable};
use crate::probe::{self, Features};
use crate::registry::Registry;
use crate::ring::{Cqe, Ring, Wait};
use crate::signal::Signals;
use crate::timer::TimerHeap;
use crate::trigger::{TriggerShared, Waker};

/// A callback owed to the host, delivered by the next `run_once` (R2): the
/// kit's (`reactor_sdk::deferred`); `on_closed` moves from the event into
/// its item once the kernel released the event.
pub(crate) type Deferred = reactor_sdk::deferred::Deferred<Event>;

/// One event loop (see the module doc).
#[derive(Debug)]
pub(crate) struct Reactor {
    /// Signal watches, from the first `signal_new`. Declared first so its
    /// port is released before anything else goes (its handler writes the
    /// waker's eventfd).
    pub(crate) signals: RefCell<Option<Signals>>,
    /// What `wake`, the signal handler and resolver threads reach from
    /// other threads.
    pub(crate) waker: Arc<Waker>,
    this: Weak<Reactor>,
    /// The loop's bookkeeping (the kit's: thread, clock, alive count, live
    /// events, `run_once` re-entry, last error).
    pub(crate) core: Core,
    pub(crate) ring: RefCell<Ring>,
    /// The provided-buffer ring of the multishot receives, from the first
    /// one (ops/recv.rs). Declared after `ring`: freed after it.
    pub(crate) bufs: RefCell<Option<crate::ops::recv::BufRing>>,
    /// Reads on stream sockets park on one multishot receive per socket
    /// (`uring.multishot_recv`, where the kernel has it; cleared if the
    /// kernel refuses it; ops/recv.rs).
    pub(crate) multishot_recv: Cell<bool>,
    /// Sockets with parked reads and bytes (or an end) waiting for them,
    /// for the next iteration (ops/recv.rs).
    pub(crate) recv_matches: RefCell<Vec<std::os::fd::RawFd>>,
    pub(crate) features: Features,
    /// `IORING_POLL_ADD_MULTI` works (cleared the first time the kernel
    /// refuses it).
    pub(crate) multishot_poll: Cell<bool>,
    /// Reads and writes may not wait inside the kernel (`Config::old_kernel`).
    pub(crate) nowait: bool,
    /// Stream socket reads and writes allowed inline are tried at once
    /// (`uring.inline_streams`: the instance has `AA_CAP_IO_INLINE`).
    pub(crate) inline_streams: bool,
    /// Accepts on sockets park on one multishot accept per listener
    /// (`uring.multishot_accept`, where the kernel has it; ops/accept.rs).
    pub(crate) multishot_accept: bool,
    /// Listeners with parked accepts and connections waiting for them, for
    /// the next iteration (ops/accept.rs).
    pub(crate) accept_matches: RefCell<Vec<std::os::fd::RawFd>>,
    pub(crate) ops: RefCell<OpTable>,
    pub(crate) registry: RefCell<Registry>,
    pub(crate) timers: RefCell<TimerHeap>,
    deferred: RefCell<VecDeque<Deferred>>,
    cqes: RefCell<Vec<Cqe>>,
    iteration: Cell<u64>,
    wake_op: Cell<Option<OpKey>>,
    /// The inotify instance, from the first `fs_watch_new`.
    pub(crate) inotify: RefCell<Option<Inotify>>,
    /// The resolver, from the first `dns_resolve`.
    pub(crate) resolver: RefCell<Option<Resolver>>,
    /// Disposed request events nothing else refers to, kept for the next
    /// requests (R4): a request then allocates no event.
    spare_requests: RefCell<Vec<Rc<Event>>>,
}

/// The most disposed request events kept for reuse.
const SPARE_REQUESTS: usize = 256;

impl Reactor {
    /// Makes a reactor bound to the calling thread: probes the kernel, makes
    /// the ring and arms the waker's read.
    pub(crate) fn new(config: &Config) -> Result<Rc<Reactor>> {
        let waker = Waker::new().map_err(|e| Error::os("create: eventfd", &e))?;
        let (ring, features) = probe::open(config, waker.fd())?;
        let reactor = Rc::new_cyclic(|this| Reactor {
            signals: RefCell::new(None),
            waker: Arc::new(waker),
            this: this.clone(),
            core: Core::new(),
            ring: RefCell::new(ring),
            bufs: RefCell::new(None),
            multishot_recv: Cell::new(
                config.multishot_recv && features.recv_multi && !config.old_kernel,
            ),
            recv_matches: RefCell::new(Vec::new()),
            features,
            multishot_poll: Cell::new(!config.old_kernel),
            nowait: config.old_kernel,
            inline_streams: features.caps & async_abi::AA_CAP_IO_INLINE != 0,
            multishot_accept: config.multishot_accept
                && features.accept_multi
                && !config.old_kernel,
            accept_matches: RefCell::new(Vec::new()),
            ops: RefCell::new(OpTable::default()),
            registry: RefCell::new(Registry::default()),
            timers: RefCell::new(TimerHeap::default()),
            deferred: RefCell::new(VecDeque::new()),
            cqes: RefCell::new(Vec::new()),
            iteration: Cell::new(0),
            wake_op: Cell::new(None),
            inotify: RefCell::new(None),
            resolver: RefCell::new(None),
            spare_requests: RefCell::new(Vec::new()),
        });
        let key = reactor.arm_eventfd(None, reactor.waker.fd());
        reactor.wake_op.set(Some(key));
        async_abi::plugin_debug!(
            "reactor-uring: ring of {:?}, cancel by descriptor: {}, single issuer: {}, deferred task running: {}, multishot accept: {}, multishot receive: {}, inline streams: {}",
            reactor.ring.borrow(),
            features.cancel_fd,
            features.setup.single_issuer,
            features.setup.defer_taskrun,
            reactor.multishot_accept,
            reactor.multishot_recv.get(),
            reactor.inline_streams
        );
        Ok(reactor)
    }

    /// Refreshes and returns the cached clock (ns since `create`).
    #[inline]
    pub(crate) fn refresh_clock(&self) -> u64 {
        self.core.refresh_clock()
    }

    /// The cached clock.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.core.now()
    }

    /// The number of the current (or last) loop iteration.
    pub(crate) fn iteration(&self) -> u64 {
        self.iteration.get()
    }

    /// Reconciles the event's `counted` flag with its state (R3, E4).
    #[inline]
    pub(crate) fn touch(&self, ev: &Event) {
        self.core.touch(&ev.counted, ev.is_live());
    }

    /// Keeps a disposed request event for reuse if nothing else refers to
    /// it (no op in flight, no deferred callback, no host pointer: the host
    /// gave its reference up with `dispose`).
    pub(crate) fn recycle(&self, ev: Rc<Event>) {
        if ev.header.kind == async_abi::AA_EVENT_IO
            && Rc::strong_count(&ev) == 1
            && Rc::weak_count(&ev) == 0
        {
            // What the request's state still owns goes now, as it would
            // with the event.
            *ev.state.borrow_mut() = State::Trigger(crate::event::TriggerState {
                open: false,
                op: None,
            });
            let mut spare = self.spare_requests.borrow_mut();
            if spare.len() < SPARE_REQUESTS {
                spare.push(ev);
            }
        }
    }

    /// Makes an event of this reactor (R4).
    pub(crate) fn new_event(
        &self,
        kind: u32,
        flags: u32,
        callback: HostCallback,
        trigger: Option<Arc<TriggerShared>>,
        state: State,
    ) -> Rc<Event> {
        self.core.event_made();
        if kind == async_abi::AA_EVENT_IO && trigger.is_none() {
            if let Some(mut ev) = self.spare_requests.borrow_mut().pop() {
                // Spares are unshared (`recycle`), so this always succeeds.
                if let Some(slot) = Rc::get_mut(&mut ev) {
                    slot.header.flags = flags;
                    slot.callback = callback;
                    slot.trigger = None;
                    slot.referenced.set(true);
                    slot.disposed.set(false);
                    slot.close.set(CloseState::Open);
                    slot.on_closed.set(None);
                    slot.in_flight.set(0);
                    slot.counted.set(false);
                    slot.scheduled.set(0);
                    *slot.state.get_mut() = state;
                    return ev;
                }
            }
        }
        Rc::new(Event {
            header: AaEvent {
                struct_size: mem::size_of::<AaEvent>() as u32,
                kind,
                flags,
                _reserved: 0,
            },
            magic: crate::event::EVENT_MAGIC,
            reactor: self.this.clone(),
            callback,
            trigger,
            referenced: Cell::new(true),
            disposed: Cell::new(false),
            close: Cell::new(CloseState::Open),
            on_closed: Cell::new(None),
            in_flight: Cell::new(0),
            counted: Cell::new(false),
            scheduled: Cell::new(0),
            state: RefCell::new(state),
        })
    }

    /// The host disposed of an event (R4).
    pub(crate) fn forget_event(&self) {
        self.core.event_disposed();
    }

    /// Queues a callback for the next `run_once` (R2, E5).
    pub(crate) fn defer(&self, item: Deferred) {
        reactor_sdk::deferred::schedule(&self.deferred, item, |ev| self.touch(ev));
    }

    /// Schedules `on_closed` once a closing event has nothing left in the
    /// kernel (AA-R4, E3). Called after every change that may be the last.
    pub(crate) fn settle_close(&self, ev: &Rc<Event>) {
        if ev.close.get() == CloseState::Closing && ev.in_flight.get() == 0 {
            ev.close.set(CloseState::Drained);
            self.defer(Deferred::Closed {
                ev: Rc::clone(ev),
                on_closed: ev.on_closed.take(),
            });
        }
    }

    /// `AA_E_CLOSED` for a closing or closed event, naming `what`.
    pub(crate) fn check_open(&self, ev: &Event, what: &str) -> Result<()> {
        if ev.close.get() != CloseState::Open {
            return Err(Error::new(
                AA_E_CLOSED,
                format!("{what}: event is closed or closing"),
            ));
        }
        Ok(())
    }

    /// `destroy`: refuses while anything is alive (R4), then drains the
    /// waker's read so the ring can go.
    pub(crate) fn destroy(&self) -> Result<()> {
        self.core.check_destroy()?;
        let held = self.ops.borrow().owned();
        if held > 0 {
            return Err(Error::new(
                AA_E_BUSY,
                format!("destroy: the kernel still holds {held} operations of disposed events"),
            ));
        }
        self.deferred.borrow_mut().clear();
        self.timers.borrow_mut().clear();
        self.close_signals();
        self.close_resolver();
        let mut own: Vec<OpKey> = [self.wake_op.take(), self.take_inotify_op()]
            .into_iter()
            .flatten()
            .collect();
        own.extend(self.release_listeners());
        own.extend(self.armed_receives());
        let drained = self.drain_own_ops(&own);
        self.release_bufs(!drained);
        self.close_inotify();
        Ok(())
    }

    /// Cancels the reactor's own reads (the waker's, the inotify one) and
    /// waits (a bounded number of `io_uring_enter`s) for their final
    /// completions, so their buffers are not freed while the kernel may
    /// write them. Completions are reaped here, not dispatched, so every
    /// such read is drained in the same call. If the kernel does not
    /// answer, an op is leaked rather than freed.
    fn drain_own_ops(&self, keys: &[OpKey]) -> bool {
        let mut left: Vec<OpKey> = keys
            .iter()
            .copied()
            .filter(|&key| self.ops.borrow().get(key).is_some())
            // An op never submitted is retired by the cancel: nothing to
            // wait for.
            .filter(|&key| self.cancel_op(key).is_none())
            .collect();
        let mut cqes = Vec::new();
        for _ in 0..64 {
            if left.is_empty() {
                return true;
            }
            let entered = self
                .ring
                .borrow_mut()
                .enter(Wait::Forever, &mut |ud| self.hand_over(ud));
            if entered.is_err() {
                break;
            }
            cqes.clear();
            self.ring.borrow_mut().reap(&mut cqes);
            for cqe in &cqes {
                self.close_if_accepted(cqe);
                if let Some(at) = left
                    .iter()
                    .position(|k| k.user_data() == cqe.user_data && !cqe.more())
                {
                    self.retire(left.swap_remove(at));
                }
            }
        }
        for key in left {
            if let Some(op) = self.retire(key) {
                async_abi::plugin_error!("destroy: the kernel did not release a reactor read");
                mem::forget(op);
            }
        }
        false
    }

    /// A connection a multishot accept reported while `destroy` drains it:
    /// nobody will take it (G5).
    fn close_if_accepted(&self, cqe: &Cqe) {
        let Some(key) = crate::ops::OpKey::from_user_data(cqe.user_data) else {
            return;
        };
        let accept = matches!(
            self.ops.borrow().get(key).map(|op| &op.kind),
            Some(crate::ops::OpKind::AcceptMulti)
        );
        if accept && cqe.result >= 0 {
            crate::ops::sys::close_orphan(cqe.result);
        }
    }

    /// One loop iteration (see `async_abi::reactor`): returns the number of
    /// callbacks run.
    pub(crate) fn run_once(&self, timeout_ns: i64) -> Result<i32> {
        let _running = self.core.enter(timeout_ns)?;
        self.iteration.set(self.iteration.get() + 1);
        self.iterate(timeout_ns)
    }

    fn iterate(&self, timeout_ns: i64) -> Result<i32> {
        // R2: this iteration's share of deferred work, taken up front.
        let deferred = mem::take(&mut *self.deferred.borrow_mut());
        let (horizon, timers) = {
            let heap = self.timers.borrow();
            (heap.horizon(), !heap.is_empty())
        };

        // 1-2: clock (only with timers pending: reading it is most of an
        // empty iteration's cost), due timers; parked accepts with
        // connections waiting.
        let mut count = self
            .core
            .clock_for_timers(timers)
            .map_or(0, |now| self.run_timers(now, horizon));
        if self.has_accept_matches() {
            count += self.run_accept_matches();
        }
        if self.has_recv_matches() {
            count += self.run_recv_matches();
        }

        // 3: one io_uring_enter that submits everything and waits, cut short
        // by the nearest timer (R7); never blocking with work (R5).
        let has_work = count > 0 || !deferred.is_empty();
        loop {
            let (wait, timer_bound) = self.wait_for(timeout_ns, has_work);
            self.ring
                .borrow_mut()
                .enter(wait, &mut |ud| self.hand_over(ud))
                .map_err(|e| Error::os("run_once: io_uring_enter", &e))?;
            // 4: complete what the kernel reported.
            let (reaped, callbacks) = self.reap();
            count += callbacks;
            // A wait that did not block took about as long as a clock read:
            // what it could make due, the next iteration fires.
            let spent = matches!(wait, Wait::Poll | Wait::For(Duration::ZERO));
            // `timer_bound` too: a timer armed since the snapshot still
            // ends a wait it cut short (R-LOOP-5), never a re-wait on a
            // stale clock.
            let fired = if (timers || timer_bound) && !spent {
                self.run_timers(self.refresh_clock(), horizon)
            } else {
                0
            };
            count += fired;
            // A timer-bound wait that woke with nothing to do waits again:
            // `run_once(-1)` returns once the nearest timer was due.
            if reaped > 0 || fired > 0 || !timer_bound || spent {
                break;
            }
        }

        // Signals and lookups that arrived (their wake-ups completed the
        // waker's read, so this wait did not block past them).
        count += self.run_signals();
        count += self.run_dns();

        // 5: cancellations, early results and `on_closed` (R2).
        count += self.deliver(deferred);
        Ok(count)
    }

    /// How to wait for a requested `timeout_ns`, and whether the nearest
    /// timer (not the caller) decided it.
    fn wait_for(&self, timeout_ns: i64, has_work: bool) -> (Wait, bool) {
        if has_work || timeout_ns == 0 {
            return (Wait::Poll, false);
        }
        let requested = u64::try_from(timeout_ns).ok();
        let timer = self
            .next_timer()
            .map(|deadline| deadline.saturating_sub(self.now()));
        match (requested, timer) {
            (Some(r), Some(t)) if t < r => (Wait::For(Duration::from_nanos(t)), true),
            (None, Some(t)) => (Wait::For(Duration::from_nanos(t)), true),
            (Some(r), _) => (Wait::For(Duration::from_nanos(r)), false),
            (None, None) => (Wait::Forever, false),
        }
    }

    /// Reaps and completes what the completion queue holds, a bounded number
    /// of completions per iteration (R6). Returns (completions reaped,
    /// callbacks run).
    fn reap(&self) -> (usize, i32) {
        let budget = self.ring.borrow().cq_capacity().max(64) * 2;
        let mut batch = mem::take(&mut *self.cqes.borrow_mut());
        let mut reaped = 0;
        let mut callbacks = 0;
        while reaped < budget {
            batch.clear();
            let dropped = self.ring.borrow_mut().reap(&mut batch);
            if dropped > 0 {
                async_abi::plugin_error!(
                    "run_once: the kernel dropped {dropped} completions (no IORING_FEAT_NODROP?)"
                );
            }
            if batch.is_empty() {
                break;
            }
            reaped += batch.len();
            for cqe in batch.drain(..) {
                callbacks += self.complete(cqe);
            }
        }
        *self.cqes.borrow_mut() = batch;
        (reaped, callbacks)
    }

    /// Delivers the deferred batch taken at the start of the iteration (R2).
    fn deliver(&self, batch: VecDeque<Deferred>) -> i32 {
        let closed = |ev: &Event| ev.close.set(CloseState::Closed);
        reactor_sdk::deferred::deliver(batch, |ev| self.touch(ev), closed)
    }
}

/// Validates `AA_EVF_*` flags against the bits a constructor accepts.
pub(crate) use reactor_sdk::error::check_flags;
