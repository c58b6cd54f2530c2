//! Readiness-driven I/O on a non-blocking descriptor: try the system call,
//! and on `EAGAIN` wait for the reactor to say the descriptor is ready,
//! then try again. What `io::Async` offers users and what datagram sockets
//! use where the reactor has no request for their operation.
//!
//! Rules:
//! - **RD1** An operation is tried first (no wait when it can complete:
//!   the common case for a busy socket), after one unit of the cooperative
//!   budget (B2) and the cancellation check (W1).
//! - **RD2** A ready bit is set by the reactor's callback and cleared only
//!   by the operation that got `EAGAIN` (the reactor reports a new edge
//!   after `EAGAIN`): a readiness is never lost between a failed attempt
//!   and the wait that follows it. An error or hang-up counts as both
//!   readable and writable, so the next attempt sees the error.
//! - **RD3** The watch is armed for writability only while someone waits
//!   for it (writable is reported on every acknowledgement on some
//!   reactors); readability, once armed, stays armed (a re-arm is a system
//!   call). Arming re-evaluates the current readiness, so a waiter that
//!   arms never misses a readiness that was already there. The watch keeps
//!   the loop alive only while someone waits: an armed watch nobody waits
//!   on must not hide a deadlock. The watch itself is hidden, and the
//!   runtime's one [`WaitHold`](super::runtime::WaitHold) trigger is
//!   referenced while any coroutine waits on any watch (one toggle when the
//!   first starts, and one when none waits any more and a coroutine leaves
//!   the CPU, the only time the loop can look: not two calls per read); on
//!   a reactor without triggers the watch references itself while waited on.
//! - **RD4** Waiters of one direction are woken together and each re-checks
//!   (P-22); a waiter leaves the list when it stops waiting (W4), also when
//!   cancelled. An operation that completed is never undone by a
//!   cancellation: it returns, and the cancellation waits for the next
//!   suspension point (P-08).
//! - **RD6** A TCP stream transfer ([`Readiness::stream_in`] with
//!   `short_drains`, D-43) also forgets a readiness when it comes back short
//!   (fewer bytes than asked: the kernel had no more at that moment; every
//!   later arrival is a new edge), unless the peer closed its side or an
//!   error was reported (sticky: end of stream or the error may already be
//!   pending and will not be reported again). A direction known not to be
//!   ready (`EAGAIN` or a short transfer, and no edge since) waits before
//!   trying, so a ping-pong read makes one system call, not an `EAGAIN` and
//!   then one. Unix streams do not take the short-read shortcut: a read
//!   stops at a message that carries descriptors or other credentials with
//!   bytes still queued and no new edge to come. TCP urgent data (without
//!   `SO_OOBINLINE`) also stops a read early with bytes queued behind the
//!   mark: a reader then waits for the peer's next bytes (as tokio's does).
//! - **RD5** A descriptor its owner closes directly (a user's, through
//!   `io::Async`) is watched through a duplicate the reactor owns and
//!   closes after deregistering it: epoll keeps a registration until every
//!   descriptor of the file is closed, so watching the user's own number
//!   would leave a stale registration under a number the kernel reuses.
//! - **RD7** On a reactor that keeps polls edge-style over a level poller
//!   (`AA_CAP_POLL_LEVEL`, ABI 1.2), a wait for a direction known not to be
//!   ready (RD2, RD6) first re-arms the watch with its interest: such a
//!   reactor cannot see that the host read or wrote to `EAGAIN`, and would
//!   otherwise hold back a readiness that came back before its loop looked.
//!   Other reactors see every edge themselves and get no extra call.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::panic::Location;
use std::rc::Rc;
use std::time::Duration;

use async_abi::{
    AaCoroutine, AA_CAP_POLL_LEVEL, AA_EVF_HIDDEN, AA_E_UNSUPPORTED, AA_POLL_ERROR, AA_POLL_HUP,
    AA_POLL_READABLE, AA_POLL_WRITABLE,
};

use super::budget;
use super::error::Cancelled;
use super::runtime::io::{Describe, Interrupt, DESC_CAP};
use super::runtime::{self, PollEvent, Runtime, TimerEvent};
use super::state::CoroState;
use super::wait::{checkpoint, forced_unwind, suspend_once, with_me};
use super::waiters::{Notify, NotifySubscription};

/// A direction of readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl Direction {
    fn bit(self) -> u32 {
        match self {
            Direction::Read => AA_POLL_READABLE,
            Direction::Write => AA_POLL_WRITABLE,
        }
    }
}

/// What the callback and the waiters share.
struct Shared {
    /// Ready bits seen and not yet consumed by an `EAGAIN` (RD2).
    ready: Cell<u32>,
    /// Directions known not to be ready: consumed by an `EAGAIN` or a
    /// short transfer, with no edge since (RD6).
    drained: Cell<u32>,
    /// The peer closed its side, or an error was reported (RD6, sticky).
    closed: Cell<bool>,
    /// A lone waiter per direction, held here rather than in the list (the
    /// usual case: one reader of a stream), while the list is empty.
    reader: Cell<*mut AaCoroutine>,
    writer: Cell<*mut AaCoroutine>,
    readers: Notify,
    writers: Notify,
}

impl Shared {
    /// Wakes everyone waiting for `dir`: the lone waiter, then the list
    /// (RD4).
    fn wake(&self, dir: Direction) {
        let (one, list) = self.waiters(dir);
        let who = one.get();
        if !who.is_null() {
            runtime::wake_raw(who);
        }
        list.wake_all();
    }

    fn waiters(&self, dir: Direction) -> (&Cell<*mut AaCoroutine>, &Notify) {
        match dir {
            Direction::Read => (&self.reader, &self.readers),
            Direction::Write => (&self.writer, &self.writers),
        }
    }
}

/// A waiter's place while it waits (RD4): the lone waiter's slot when the
/// direction has no other waiter, else the list. Leaving it is what
/// dropping it does.
enum Place<'a> {
    Alone(&'a Cell<*mut AaCoroutine>, *mut AaCoroutine),
    Listed { _sub: NotifySubscription<'a> },
}

impl<'a> Place<'a> {
    fn take(shared: &'a Shared, dir: Direction, me: &CoroState) -> Place<'a> {
        let (one, list) = shared.waiters(dir);
        let who = me.raw.get();
        if one.get().is_null() && list.is_empty() {
            one.set(who);
            Place::Alone(one, who)
        } else {
            Place::Listed {
                _sub: NotifySubscription::new(list, me),
            }
        }
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if let Place::Alone(one, who) = self {
            if one.get() == *who {
                one.set(std::ptr::null_mut());
            }
        }
    }
}

/// A descriptor's readiness watch and its waiters. The descriptor is not
/// owned: its owner drops this first, then closes it.
pub(crate) struct Readiness {
    event: PollEvent,
    shared: Rc<Shared>,
    /// The interest the watch is armed with (RD3).
    armed: Cell<u32>,
    /// Coroutines waiting on the watch: something keeps the loop alive
    /// while non-zero (RD3).
    waiting: Cell<u32>,
    /// That something is the runtime's [`WaitHold`](super::runtime::WaitHold)
    /// (the watch is hidden), not the watch's own reference.
    held_by_runtime: bool,
    /// Waiters per direction, to disarm writable when none is left.
    waiting_writers: Cell<usize>,
    /// The reactor keeps polls edge-style over a level poller and asks to
    /// be told when readiness was consumed (`AA_CAP_POLL_LEVEL`, RD7).
    rearm_on_drain: bool,
}

impl Readiness {
    /// Starts watching `fd` (armed for nothing yet).
    ///
    /// # Errors
    ///
    /// `Unsupported` naming the reactor if it has no `AA_CAP_POLL`; the
    /// reactor's error otherwise.
    pub(crate) fn new(rt: &Runtime, fd: RawFd) -> io::Result<Readiness> {
        Readiness::make(rt, fd, None)
    }

    /// Watches a duplicate of `fd` that the reactor owns and closes with
    /// the watch (RD5): for a descriptor its owner closes directly, not
    /// through the reactor.
    ///
    /// # Errors
    ///
    /// As [`Readiness::new`], and the operating system's error duplicating
    /// the descriptor (`EMFILE`).
    pub(crate) fn new_dup(rt: &Runtime, fd: BorrowedFd<'_>) -> io::Result<Readiness> {
        let dup = fd.try_clone_to_owned()?;
        let raw = dup.as_raw_fd();
        Readiness::make(rt, raw, Some(dup))
    }

    fn make(rt: &Runtime, fd: RawFd, owned: Option<OwnedFd>) -> io::Result<Readiness> {
        let shared = Rc::new(Shared {
            ready: Cell::new(0),
            drained: Cell::new(0),
            closed: Cell::new(false),
            reader: Cell::new(std::ptr::null_mut()),
            writer: Cell::new(std::ptr::null_mut()),
            readers: Notify::new(),
            writers: Notify::new(),
        });
        let s = shared.clone();
        let on_ready: Box<dyn Fn(async_abi::AaStatus, u32)> = Box::new(move |status, bits| {
            // A watch that ended (the descriptor closed under it)
            // wakes everyone: the next attempt reports the error.
            let bits = if status < 0 {
                AA_POLL_READABLE | AA_POLL_WRITABLE
            } else {
                bits
            };
            let bits = if bits & (AA_POLL_ERROR | AA_POLL_HUP) != 0 {
                bits | AA_POLL_READABLE | AA_POLL_WRITABLE
            } else {
                bits
            };
            if bits & (AA_POLL_ERROR | AA_POLL_HUP) != 0 {
                s.closed.set(true);
            }
            s.ready.set(s.ready.get() | bits);
            s.drained.set(s.drained.get() & !bits);
            if bits & AA_POLL_READABLE != 0 {
                s.wake(Direction::Read);
            }
            if bits & AA_POLL_WRITABLE != 0 {
                s.wake(Direction::Write);
            }
        });
        // RD3: only a waiter keeps the loop alive: through the runtime's
        // one hold, the watch hidden; or, on a reactor without triggers,
        // through the watch's own reference.
        let held_by_runtime = rt.wait_hold.available(&rt.reactor);
        let flags = if held_by_runtime { AA_EVF_HIDDEN } else { 0 };
        let event = match owned {
            Some(dup) => rt.reactor.poll_owned(dup, 0, flags, on_ready),
            None => rt.reactor.poll(fd, 0, flags, on_ready),
        }
        .map_err(|status| poll_error(rt, fd, status))?;
        if !held_by_runtime {
            event.set_ref(false);
        }
        Ok(Readiness {
            event,
            shared,
            armed: Cell::new(0),
            waiting: Cell::new(0),
            held_by_runtime,
            waiting_writers: Cell::new(0),
            rearm_on_drain: rt.reactor.caps() & AA_CAP_POLL_LEVEL != 0,
        })
    }

    /// Runs `op` until it does not fail with `WouldBlock`, waiting for
    /// `dir` in between (RD1-RD4). `what` names the wait in deadlock and
    /// watchdog reports (made only when the call waits).
    #[track_caller]
    pub(crate) fn io<R>(
        &self,
        dir: Direction,
        what: &dyn Fn() -> String,
        at: &'static Location<'static>,
        op: impl FnMut() -> io::Result<R>,
    ) -> io::Result<R> {
        self.io_timeout(dir, None, what, at, op)
    }

    /// [`Readiness::io`], giving up with `WouldBlock` (std's error for a
    /// socket timeout on Unix) once `timeout` has passed without the
    /// operation completing.
    #[track_caller]
    pub(crate) fn io_timeout<R>(
        &self,
        dir: Direction,
        timeout: Option<Duration>,
        what: &dyn Fn() -> String,
        at: &'static Location<'static>,
        mut op: impl FnMut() -> io::Result<R>,
    ) -> io::Result<R> {
        with_me("blocking I/O", |rt, me| {
            checkpoint(me).map_err(io::Error::from)?;
            budget::spend(rt, me, at).map_err(|i| interrupted(me, i))?;
            let mut deadline: Option<Deadline> = None;
            loop {
                match op() {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        // RD2: consumed; the reactor reports the next edge.
                        self.clear(dir);
                        if let Some(t) = timeout {
                            if deadline.is_none() {
                                deadline = Some(Deadline::start(rt, me, t)?);
                            }
                        }
                        let expired = deadline.as_ref().map(|d| &*d.expired);
                        match self.wait_as(rt, me, dir, expired, what, at) {
                            Ok(true) => {}
                            Ok(false) => return Err(timed_out()),
                            Err(c) => return Err(c.into()),
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    other => return other,
                }
            }
        })
    }

    /// Waits until the descriptor is ready for `dir` (a readiness already
    /// seen returns at once). A cancellation point.
    #[track_caller]
    pub(crate) fn wait(
        &self,
        dir: Direction,
        what: &dyn Fn() -> String,
        at: &'static Location<'static>,
    ) -> io::Result<()> {
        self.wait_timeout(dir, None, what, at)
    }

    /// [`Readiness::wait`] that gives up with `TimedOut` after `timeout`.
    #[track_caller]
    pub(crate) fn wait_timeout(
        &self,
        dir: Direction,
        timeout: Option<Duration>,
        what: impl Describe,
        at: &'static Location<'static>,
    ) -> io::Result<()> {
        with_me("a readiness wait", |rt, me| {
            checkpoint(me).map_err(io::Error::from)?;
            let deadline = match timeout {
                Some(t) => Some(Deadline::start(rt, me, t)?),
                None => None,
            };
            let expired = deadline.as_ref().map(|d| &*d.expired);
            match self.wait_as(rt, me, dir, expired, what, at) {
                Ok(true) => Ok(()),
                Ok(false) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the descriptor did not become ready in time",
                )),
                Err(c) => Err(c.into()),
            }
        })
    }

    /// A stream transfer in `dir` (D-43) by `op`, a non-blocking system
    /// call of at most `want` bytes, for the running coroutine `me`: one unit
    /// of the cooperative budget and a cancellation check first (RD1), a
    /// wait first if the direction is known not to be ready (RD6), and
    /// `op` again after every `EAGAIN` and readiness (RD2). A short transfer
    /// drains the direction only with `short_drains` (TCP; RD6). `what`
    /// names the wait in reports.
    ///
    /// # Errors
    ///
    /// `op`'s error; the cancellation (or shutdown, or deadlock) that ended
    /// the wait.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn stream_in(
        &self,
        rt: &Runtime,
        me: &Rc<CoroState>,
        dir: Direction,
        want: usize,
        short_drains: bool,
        what: impl Describe + Copy,
        at: &'static Location<'static>,
        mut op: impl FnMut() -> io::Result<usize>,
    ) -> io::Result<usize> {
        checkpoint(me).map_err(io::Error::from)?;
        budget::spend(rt, me, at).map_err(|i| interrupted(me, i))?;
        loop {
            if self.shared.drained.get() & dir.bit() != 0 {
                if let Err(c) = self.wait_as(rt, me, dir, None, what, at) {
                    return Err(c.into());
                }
            }
            match op() {
                Ok(n) => {
                    // RD6: short, so drained, unless end of stream or an
                    // error may be waiting behind it. End of stream itself
                    // stays: every later read returns it at once.
                    if n == 0 {
                        self.shared.closed.set(true);
                    } else if short_drains && n < want && !self.shared.closed.get() {
                        self.clear(dir);
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.clear(dir),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits until `dir` is ready, for the running coroutine `me` (the
    /// caller cleared it after its `EAGAIN`, RD2): no budget, no
    /// cancellation check before the wait (the C library hooks, HK6).
    ///
    /// # Errors
    ///
    /// The cancellation (or shutdown, or deadlock) that ended the wait.
    #[cfg(feature = "hooks")]
    pub(crate) fn wait_ready(
        &self,
        rt: &Runtime,
        me: &Rc<CoroState>,
        dir: Direction,
        what: impl Describe,
        at: &'static Location<'static>,
    ) -> Result<(), Cancelled> {
        self.wait_as(rt, me, dir, None, what, at).map(|_| ())
    }

    /// Forgets a readiness of `dir` (the caller got `EAGAIN`, or a short
    /// stream transfer: RD2, RD6).
    pub(crate) fn clear(&self, dir: Direction) {
        let s = &self.shared;
        s.ready.set(s.ready.get() & !dir.bit());
        s.drained.set(s.drained.get() | dir.bit());
    }

    fn wait_as(
        &self,
        rt: &Runtime,
        me: &Rc<CoroState>,
        dir: Direction,
        expired: Option<&Cell<bool>>,
        what: impl Describe,
        at: &'static Location<'static>,
    ) -> Result<bool, Cancelled> {
        if self.shared.ready.get() & dir.bit() != 0 {
            return Ok(true);
        }
        // Kept here, unmoved, while suspended: the scheduler reads it.
        let (mut buf, mut owned) = ([0u8; DESC_CAP], String::new());
        let what = what.text(&mut buf, &mut owned);
        let _writer = (dir == Direction::Write).then(|| WriterCount::new(self));
        let interest = self.armed.get() | dir.bit();
        if self.rearm_on_drain && self.shared.drained.get() & dir.bit() != 0 {
            // RD7: tell a level reactor the direction was consumed.
            self.armed.set(interest);
            let _ = self.event.set_interest(interest);
        } else {
            self.arm(interest);
        }
        let _place = Place::take(&self.shared, dir, me);
        let _held = Held::new(rt, self);
        loop {
            suspend_once(rt, me, what, at)?;
            if self.shared.ready.get() & dir.bit() != 0 {
                return Ok(true);
            }
            if expired.is_some_and(Cell::get) {
                return Ok(false);
            }
        }
    }

    /// RD3: (re-)arms the watch; arming re-evaluates readiness.
    fn arm(&self, interest: u32) {
        if interest != self.armed.get() {
            self.armed.set(interest);
            let _ = self.event.set_interest(interest);
        }
    }
}

/// Counts a waiter on the watch, which keeps the loop alive while any
/// waits (RD3).
struct Held<'a>(&'a Runtime, &'a Readiness);

impl<'a> Held<'a> {
    fn new(rt: &'a Runtime, r: &'a Readiness) -> Held<'a> {
        if r.held_by_runtime {
            rt.wait_hold.acquire();
        } else {
            let n = r.waiting.get();
            if n == 0 {
                r.event.set_ref(true);
            }
            r.waiting.set(n + 1);
        }
        Held(rt, r)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let Held(rt, r) = *self;
        if r.held_by_runtime {
            rt.wait_hold.release();
        } else {
            let n = r.waiting.get() - 1;
            r.waiting.set(n);
            if n == 0 {
                r.event.set_ref(false);
            }
        }
    }
}

/// A timer that marks a wait expired and wakes its waiter; disarmed when
/// dropped.
struct Deadline {
    expired: Rc<Cell<bool>>,
    _timer: TimerEvent,
}

impl Deadline {
    fn start(rt: &Runtime, me: &Rc<CoroState>, after: Duration) -> io::Result<Deadline> {
        let expired = Rc::new(Cell::new(false));
        let (e, who) = (expired.clone(), me.clone());
        let ns = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
        let timer = rt
            .reactor
            .timer(
                ns,
                Box::new(move |_| {
                    e.set(true);
                    runtime::wake(&who);
                }),
            )
            .map_err(|s| {
                io::Error::other(format!("cannot arm a timeout: {}", runtime::status_text(s)))
            })?;
        Ok(Deadline {
            expired,
            _timer: timer,
        })
    }
}

fn timed_out() -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        "the operation timed out (the socket's read or write timeout)",
    )
}

/// Counts a writer while it waits; the last one disarms writable (RD3).
struct WriterCount<'a>(&'a Readiness);

impl<'a> WriterCount<'a> {
    fn new(r: &'a Readiness) -> Self {
        r.waiting_writers.set(r.waiting_writers.get() + 1);
        WriterCount(r)
    }
}

impl Drop for WriterCount<'_> {
    fn drop(&mut self) {
        let r = self.0;
        let n = r.waiting_writers.get() - 1;
        r.waiting_writers.set(n);
        if n == 0 {
            r.arm(r.armed.get() & !AA_POLL_WRITABLE);
        }
    }
}

fn poll_error(rt: &Runtime, fd: RawFd, status: async_abi::AaStatus) -> io::Error {
    if status == AA_E_UNSUPPORTED {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "reactor \"{}\" lacks AA_CAP_POLL: cannot wait for fd {fd} to be ready",
                rt.reactor.label()
            ),
        )
    } else if status < 0 && status > -4096 {
        io::Error::from_raw_os_error(-status)
    } else {
        io::Error::other(format!(
            "cannot watch fd {fd}: {}",
            runtime::status_text(status)
        ))
    }
}

/// The budget's interruption as the error an I/O call returns.
pub(crate) fn interrupted(me: &CoroState, i: Interrupt) -> io::Error {
    match i {
        Interrupt::Shutdown if !std::thread::panicking() => forced_unwind(),
        Interrupt::Deadlock => me.deadlocked().into(),
        _ => me
            .cancellation()
            .unwrap_or_else(|| Cancelled::of(me.id(), super::error::CancelCause::Shutdown, None))
            .into(),
    }
}
