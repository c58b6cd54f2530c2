//! The scheduler instance: the state behind one `*mut AaScheduler`.
//!
//! # What it owns
//!
//! The live coroutines (through the live list), the run queue, the microtask
//! queue, the fibers and their stacks (the pool), the engine's root context,
//! and a copy of the reactor's `run_once`/`alive` slots with the reactor
//! instance (borrowed: the host keeps the reactor alive longer).
//!
//! # Invariants
//!
//! - **SR1** Every field is a `Cell`, a `RefCell` borrowed for one leaf
//!   operation, or immutable: the scheduler is only ever reached through a
//!   shared `&Scheduler`, and no borrow is held across a call into the
//!   reactor, an entry, a microtask, a handler or a switch. Those calls
//!   re-enter the scheduler (`enqueue`, `defer`, `coroutine_new`) and must
//!   find it consistent.
//! - **SR2** `current` is the coroutine whose entry is executing and which
//!   has not entered its own `suspend` tick; it is `None` in the root context,
//!   while microtasks drain and while the reactor is polled, so none of those
//!   can suspend.
//! - **SR3** `no_suspend > 0` while switch handlers or an `iterate` visitor
//!   run: `suspend` fails there with `AA_E_INVALID` instead of switching
//!   inside a callback that promised not to.
//! - **SR4** `in_run` is true exactly while `run` executes on the creating
//!   thread's stack; the root context exists only then.
//!
//! # Who touches what
//!
//! Only the thread that created it (the ABI's `[loop]` rule; `run` checks
//! the thread). Reactor callbacks, entries, microtasks and handlers run on
//! that thread and may call any `[loop]` function.
//!
//! # Drop order (`destroy`)
//!
//! Refused with `AA_E_BUSY` while a coroutine is alive or `run` is
//! executing. Then: idle fibers are discarded (their stacks released), the
//! stack allocator unmaps its slabs, queued microtasks are dropped unrun,
//! kept coroutine records are freed.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::thread::ThreadId;
use std::time::Instant;

use async_abi::{AaStatus, AA_E_DEADLOCK, AA_E_INVALID, AA_OK, AA_PRIORITY_HIGH};

use crate::coroutine::state::{self, Enqueue, State};
use crate::coroutine::{Coro, CoroPtr, EntryFn, LiveList, RecordPool, SpawnSite};
use crate::ffi::Reactor;
use crate::fiber::FiberPool;
use crate::microtask::Microtasks;
use crate::options::Options;
use crate::run_queue::{Policy, RunQueue};
use crate::switch::{Ctx, RootState};

/// Counters for tests and benchmarks (`ffi::stats`).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Context switches made by the scheduler (a direct switch counts once,
    /// even when the engine makes it as two).
    pub(crate) switches: Cell<u64>,
    /// Coroutines started on the fiber of the one that just finished, with
    /// no switch.
    pub(crate) inline_starts: Cell<u64>,
    /// Non-blocking reactor polls made by the tick (the 61-switch rule).
    pub(crate) tick_polls: Cell<u64>,
    /// Coroutines finished.
    pub(crate) finished: Cell<u64>,
}

impl Counters {
    #[inline]
    pub(crate) fn bump(cell: &Cell<u64>) {
        cell.set(cell.get() + 1);
    }
}

/// One scheduler. See the module invariants.
#[derive(Debug)]
pub(crate) struct Scheduler {
    pub(crate) reactor: Reactor,
    pub(crate) opts: Options,
    pub(crate) owner: ThreadId,
    /// The next coroutine id (ids start at 1 and only grow).
    pub(crate) next_id: Cell<u64>,
    /// SR2.
    pub(crate) current: Cell<Option<CoroPtr>>,
    pub(crate) live: LiveList,
    /// Finished coroutine records kept for reuse (coroutine C-I6).
    pub(crate) records: RecordPool,
    pub(crate) queue: RunQueue,
    pub(crate) microtasks: Microtasks,
    pub(crate) fibers: FiberPool,
    pub(crate) root: RootState,
    /// Ticks with a non-empty queue since the last non-blocking poll.
    pub(crate) ticks: Cell<u32>,
    /// When the tick last polled the reactor (`tick::fairness_poll`).
    pub(crate) last_poll: Cell<Instant>,
    /// That poll ran no callback.
    pub(crate) poll_idle: Cell<bool>,
    /// `Options::poll_gap_us`.
    pub(crate) poll_gap: std::time::Duration,
    /// The busy tick count at which the tick takes its slow path
    /// (`tick::slow_tick`): `POLL_EVERY` under FIFO, 0 under chaos (every
    /// busy tick, so the chaos pick costs FIFO nothing).
    pub(crate) slow_tick_at: u32,
    /// SR3.
    pub(crate) no_suspend: Cell<u32>,
    /// SR4.
    pub(crate) in_run: Cell<bool>,
    /// Deadlocks detected during the current `run`.
    pub(crate) deadlocks: Cell<u32>,
    /// The shutdown reason, once `shutdown` was called.
    pub(crate) shutdown: Cell<Option<AaStatus>>,
    /// Idle rounds in shutdown with no coroutine finishing (shutdown.rs).
    pub(crate) shutdown_rounds: Cell<u32>,
    /// Live coroutines at the last idle shutdown round.
    pub(crate) shutdown_live: Cell<usize>,
    /// Ids of the coroutines that kept an earlier error when shutdown
    /// enqueued them, and still owe its reason (shutdown.rs step 3).
    pub(crate) shutdown_owed: RefCell<Vec<u64>>,
    /// An error a tick could not report itself (a stack could not be
    /// mapped); `run` returns it.
    pub(crate) pending_error: Cell<Option<AaStatus>>,
    pub(crate) last_error: RefCell<String>,
    pub(crate) counters: Counters,
}

impl Scheduler {
    /// A scheduler bound to the calling thread.
    pub(crate) fn new(reactor: Reactor, opts: Options) -> Scheduler {
        let seed = match opts.policy {
            Policy::Fifo => 0,
            Policy::Chaos => {
                let seed = opts.seed.resolve();
                async_abi::plugin_debug!(
                    "chaos policy, seed {seed} (replay with ASYNC_SCHEDULER=chaos \
                     ASYNC_SCHEDULER_OPTIONS=seed={seed})"
                );
                seed
            }
        };
        Scheduler {
            reactor,
            opts,
            owner: std::thread::current().id(),
            next_id: Cell::new(1),
            current: Cell::new(None),
            live: LiveList::default(),
            records: RecordPool::default(),
            queue: RunQueue::new(opts.policy, seed),
            microtasks: Microtasks::default(),
            fibers: FiberPool::new(
                opts.engine,
                opts.stack_pool,
                opts.stack_size,
                opts.stack_prefault,
            ),
            root: RootState::default(),
            ticks: Cell::new(0),
            last_poll: Cell::new(Instant::now()),
            poll_idle: Cell::new(false),
            // Chaos replays depend on no clock: its polls keep the 61-tick
            // rhythm exactly.
            poll_gap: match opts.policy {
                Policy::Fifo => std::time::Duration::from_micros(u64::from(opts.poll_gap_us)),
                Policy::Chaos => std::time::Duration::ZERO,
            },
            slow_tick_at: match opts.policy {
                Policy::Fifo => crate::tick::POLL_EVERY,
                Policy::Chaos => 0,
            },
            no_suspend: Cell::new(0),
            in_run: Cell::new(false),
            deadlocks: Cell::new(0),
            shutdown: Cell::new(None),
            shutdown_rounds: Cell::new(0),
            shutdown_live: Cell::new(0),
            shutdown_owed: RefCell::new(Vec::new()),
            pending_error: Cell::new(None),
            last_error: RefCell::new(String::new()),
            counters: Counters::default(),
        }
    }

    /// Records `msg` for `last_error_message` and logs it at error level.
    pub(crate) fn fail(&self, status: AaStatus, msg: String) -> AaStatus {
        async_abi::plugin_error!("{msg}");
        *self.last_error.borrow_mut() = msg;
        status
    }

    /// Runs `f` with suspension forbidden (SR3).
    pub(crate) fn forbid_suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        self.no_suspend.set(self.no_suspend.get() + 1);
        let out = f();
        self.no_suspend.set(self.no_suspend.get() - 1);
        out
    }
}

impl Scheduler {
    /// Creates a coroutine in state CREATED and links it into the live list.
    /// During shutdown it is enqueued at once with the shutdown reason, so it
    /// starts with it (its body never runs) even if nobody enqueues it.
    ///
    /// Inlined into `coroutine_new`, its only caller, so the spawn site
    /// goes from the host's struct into the record in registers, not
    /// through a stack copy read back in wider loads than it was written.
    #[inline(always)]
    pub(crate) fn spawn(
        &self,
        entry: EntryFn,
        arg: *mut c_void,
        priority: u32,
        stack_size: usize,
        spawn: SpawnSite,
    ) -> CoroPtr {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let c = self
            .records
            .alloc(Coro::new(id, entry, arg, priority, stack_size, spawn));
        self.live.push_back(c);
        if let Some(reason) = self.shutdown.get() {
            let _ = self.enqueue(c, reason);
        }
        c
    }

    /// Queues `c` to start or resume with `status` (the `enqueue` slot; see
    /// `coroutine/state.rs` for the transitions and the first-error rule).
    ///
    /// # Errors
    ///
    /// `AA_E_INVALID` for a finished coroutine.
    #[inline]
    pub(crate) fn enqueue(&self, c: CoroPtr, status: AaStatus) -> AaStatus {
        self.enqueue_in(c, c.get().state.get(), status)
    }

    /// [`Scheduler::enqueue`] of the running coroutine (a yield): the same
    /// transition, with the state known so the match folds away.
    #[inline]
    pub(crate) fn enqueue_running(&self, c: CoroPtr, status: AaStatus) -> AaStatus {
        self.enqueue_in(c, State::Running, status)
    }

    /// Puts `c` in the run queue: at the head if it has high priority,
    /// else at the tail (run queue Q-I3). `c` is not queued (Q-I1).
    #[inline(always)]
    pub(crate) fn push_by_priority(&self, c: CoroPtr) {
        if c.get().priority == AA_PRIORITY_HIGH {
            self.queue.push_front(c);
        } else {
            self.queue.push_back(c);
        }
    }

    #[inline(always)]
    fn enqueue_in(&self, c: CoroPtr, state: State, status: AaStatus) -> AaStatus {
        let co = c.get();
        let (action, next) = state::enqueue(state, co.in_queue.get());
        match action {
            Enqueue::Push => {
                co.status.set(status);
                co.state.set(next);
                if next == State::Running {
                    // A yield: it keeps running and is queued for its next
                    // suspension (Q-I1).
                    co.in_queue.set(true);
                }
                self.push_by_priority(c);
                AA_OK
            }
            Enqueue::KeepPlace => {
                co.status.set(state::merge_status(co.status.get(), status));
                AA_OK
            }
            Enqueue::Finished => AA_E_INVALID,
        }
    }
}

impl Scheduler {
    /// The `run` slot: runs the root loop on this thread's stack until no
    /// coroutine is left (SR4).
    ///
    /// # Errors
    ///
    /// `AA_E_INVALID` on another thread, inside a coroutine or inside `run`;
    /// `AA_E_DEADLOCK` if a deadlock was resolved during the run; the
    /// reactor's status if `run_once` failed; `AA_E_NOMEM` if a stack could
    /// not be mapped; `AA_E_BUSY` if shutdown gave up.
    pub(crate) fn run(&self) -> AaStatus {
        if std::thread::current().id() != self.owner {
            let msg = "run called on a thread other than the one that created the scheduler";
            return self.fail(AA_E_INVALID, msg.to_owned());
        }
        if self.in_run.get() || self.current.get().is_some() || self.root.running.get() != Ctx::Root
        {
            let msg = "run called inside a coroutine or inside run: call it from the thread's own \
                       stack";
            return self.fail(AA_E_INVALID, msg.to_owned());
        }
        self.in_run.set(true);
        // O-I3: a stack overflow during the run names this scheduler's
        // coroutine.
        let _active = crate::stack::overflow::Active::enter(self);
        self.deadlocks.set(0);
        // A new run gets fresh shutdown rounds (shutdown.rs step 5).
        self.shutdown_rounds.set(0);
        let status = crate::tick::run_loop(self);
        self.in_run.set(false);
        if status == AA_OK && self.deadlocks.get() > 0 {
            AA_E_DEADLOCK
        } else {
            status
        }
    }
}
