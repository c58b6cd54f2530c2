//! [`LevelTriggered`]: the edge contract of [`Backend`] (mod.rs) kept over
//! a level-triggered poller, a [`LevelBackend`] (poll(2), `select`), so
//! that such a backend is correct by construction.
//!
//! A level poller reports a direction for as long as it is ready; the
//! driver wants it once per edge. The adapter remembers, per registration,
//! the directions it reported and has not seen consumed since (*masked*),
//! and never asks the poller to wait on a masked direction. A direction is
//! a side: the read side (`AA_POLL_READABLE`, and `AA_POLL_HUP`, reported
//! with it) or the write side (`AA_POLL_WRITABLE`, and `AA_POLL_ERROR`).
//!
//! # Invariants
//!
//! - **L1** A side is reported, then masked: a masked side is neither
//!   reported nor waited on, so a level report never repeats while nothing
//!   consumed it (R-POLL-3, `docs/abi/poll.md`).
//! - **L2** A side is unmasked, and its next readiness reported, when the
//!   driver re-arms the registration ([`Backend::modify`]), when the driver
//!   read or wrote it to `EAGAIN` ([`Backend::drained`]: requests, the
//!   signal socket, the inotify descriptor), or when a wait's first look
//!   finds it not ready (someone consumed it, the host through a poll).
//!   Every edge the driver waits for is therefore reported: none is lost.
//! - **L3** Only L2's look sees the host's consumption, and only as a low
//!   level: a host that reads to `EAGAIN` and has the descriptor refilled
//!   before the loop's next wait (its peer wrote in the same tick) leaves
//!   the level high, which the adapter cannot tell from unread data. So a
//!   side still ready [`RECHECK`] after it was masked is reported again: a
//!   poll sees at most one report per `RECHECK` for readiness nobody
//!   consumes, and a refill the look missed costs at most `RECHECK`, never
//!   a hang. Rechecks fall on a common grid, so they wake the loop at most
//!   once per `RECHECK` however many registrations are masked.
//! - **L3'** Under a host of ABI minor 2 or later, from a backend that
//!   states minor 2 or later, L3 is exact instead: the reactor sets
//!   `AA_CAP_POLL_LEVEL`, the host re-arms a poll ([`Backend::modify`],
//!   L2) before it waits after its own `EAGAIN` (R-POLL-8,
//!   `docs/abi/poll.md`), so a refill is reported at once and a side
//!   nobody consumes is never reported again: no recheck.
//! - **L4** poll(2) reports a hang-up or an error whether asked for or
//!   not: a registration that showed one is not watched at all while a side
//!   is masked, so a hung-up descriptor never makes the wait return at once
//!   over and over. The look (L2) still sees it.
//! - **L5** The waker is the level backend's own ([`LevelBackend::poll`]
//!   says whether it was called): reported under [`BACKEND_TOKEN`], never
//!   masked.
//!
//! The cost, next to an edge-triggered poller: a wait with anything masked
//! is two polls (the look, then the wait on what is not masked), each
//! O(registrations), as poll(2) always is.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::fmt::Debug;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use async_abi::{AaReactorVTable, AA_POLL_ERROR, AA_POLL_HUP, AA_POLL_READABLE, AA_POLL_WRITABLE};

use super::{Backend, Exported, BACKEND_TOKEN};
use crate::event::Wake;

/// How long a masked side that stays ready waits before it is reported
/// again (L3): long enough that a poll whose data nobody reads is not a busy
/// loop (R-POLL-3's iterations see no second report), short enough that a
/// refill the adapter could not see is a pause, not a hang.
pub const RECHECK: Duration = Duration::from_millis(100);

/// The read side: readable, and a hang-up (end of stream).
const READ_SIDE: u32 = AA_POLL_READABLE | AA_POLL_HUP;
/// The write side: writable, and an error (a failed connect).
const WRITE_SIDE: u32 = AA_POLL_WRITABLE | AA_POLL_ERROR;

/// A level-triggered OS poller (poll(2), `select`): what a reactor author
/// writes instead of a [`Backend`] when the OS reports readiness for as
/// long as it lasts. [`LevelTriggered`] makes it a [`Backend`]; export it
/// with `reactor_sdk::export_reactor!(level MyPoller)`.
///
/// It keeps no registrations: the adapter hands it the whole set on every
/// call, as poll(2) takes it.
pub trait LevelBackend: Debug + Sized + 'static {
    /// The plugin's name, `reactor-<name>`; options are `<name>.<key>`
    /// (the driver reads none).
    const NAME: &'static CStr;
    /// The plugin's vendor string.
    const VENDOR: &'static CStr;
    /// The ABI minor the plugin implements, stated by its author (see
    /// [`Backend::ABI_MINOR`]); never `AA_ABI_MINOR`.
    const ABI_MINOR: u16;
    /// The poller's cross-thread waker.
    type Waker: Wake;

    /// Makes the poller and its waker, whose wake-ups end a
    /// [`LevelBackend::poll`].
    fn new() -> io::Result<(Self, Self::Waker)>;

    /// Waits at most `timeout` (`None`: without limit; `Some(ZERO)`: not
    /// at all) until a descriptor of `watch` is ready or the waker was
    /// called, then writes into `levels[i]` (the same length as `watch`,
    /// zeroed) the `AA_POLL_*` bits `watch[i].0` is ready for now: readable
    /// and writable as asked by `watch[i].1`, a hang-up as `AA_POLL_HUP |
    /// AA_POLL_READABLE`, an error (or a descriptor that is not open) as
    /// `AA_POLL_ERROR | AA_POLL_WRITABLE`. An entry whose interest is 0 is
    /// not watched at all, not even for a hang-up (poll(2): a negative
    /// descriptor). Returns whether the waker was called since the last
    /// call (and resets it). An `Interrupted` error counts as an empty wait.
    fn poll(
        &mut self,
        watch: &[(RawFd, u32)],
        timeout: Option<Duration>,
        levels: &mut [u32],
    ) -> io::Result<bool>;
}

/// A [`LevelBackend`] `export_reactor!(level B)` exported: its statics;
/// not implemented by hand.
pub trait LevelExported: LevelBackend {
    /// The vtable of `Readiness<LevelTriggered<Self>>`.
    fn vtable() -> &'static AaReactorVTable;
}

impl<L: LevelExported> Exported for LevelTriggered<L> {
    #[inline]
    fn vtable() -> &'static AaReactorVTable {
        L::vtable()
    }
}

/// One registration (the driver's token and interest) and its masks.
#[derive(Debug)]
struct Reg {
    token: u64,
    interest: u32,
    /// The sides reported and not seen consumed (L1, L2), as
    /// `AA_POLL_READABLE` / `AA_POLL_WRITABLE`.
    masked: u32,
    /// The last look saw a hang-up or an error (L4).
    sticky: bool,
    /// When the masked sides are reported again if still ready (L3).
    recheck: Option<Instant>,
}

impl Reg {
    /// What the blocking wait watches: the sides not masked, nothing while
    /// a hang-up or an error would wake it at once (L4).
    fn watched(&self) -> u32 {
        if self.masked != 0 && self.sticky {
            0
        } else {
            self.interest & !self.masked
        }
    }

    fn unmask(&mut self, sides: u32) {
        self.masked &= !sides;
        if self.masked == 0 {
            self.recheck = None;
        }
    }
}

/// The sides `bits` touch, as `AA_POLL_READABLE` / `AA_POLL_WRITABLE`.
fn sides(bits: u32) -> u32 {
    let mut sides = 0;
    if bits & READ_SIDE != 0 {
        sides |= AA_POLL_READABLE;
    }
    if bits & WRITE_SIDE != 0 {
        sides |= AA_POLL_WRITABLE;
    }
    sides
}

/// Every bit of the sides in `sides`.
fn side_bits(sides: u32) -> u32 {
    let mut bits = 0;
    if sides & AA_POLL_READABLE != 0 {
        bits |= READ_SIDE;
    }
    if sides & AA_POLL_WRITABLE != 0 {
        bits |= WRITE_SIDE;
    }
    bits
}

/// A level report as the driver reads it: a hang-up reads, an error writes.
fn normalize(level: u32) -> u32 {
    let mut bits = level;
    if bits & AA_POLL_HUP != 0 {
        bits |= AA_POLL_READABLE;
    }
    if bits & AA_POLL_ERROR != 0 {
        bits |= AA_POLL_WRITABLE;
    }
    bits
}

/// An edge-triggered [`Backend`] over a level-triggered poller `L` (see
/// the module doc, invariants L1-L5).
#[derive(Debug)]
pub struct LevelTriggered<L> {
    level: L,
    /// By descriptor: a wait reports in descriptor order.
    regs: RefCell<BTreeMap<RawFd, Reg>>,
    /// The origin of the recheck grid (L3).
    epoch: Instant,
    /// The set handed to the poller, and what it answered (reused).
    watch: Vec<(RawFd, u32)>,
    levels: Vec<u32>,
    /// The host re-arms after its own `EAGAIN` (L3'): no recheck.
    host_rearms: bool,
    /// How far the tests moved the clock on.
    #[cfg(test)]
    skew: Duration,
}

impl<L: LevelBackend> LevelTriggered<L> {
    /// The adapter over `level`, with nothing registered, for a host that
    /// does not re-arm (L3: consumed readiness is looked for on the
    /// [`RECHECK`] grid).
    pub fn over(level: L) -> LevelTriggered<L> {
        LevelTriggered {
            level,
            regs: RefCell::new(BTreeMap::new()),
            epoch: Instant::now(),
            watch: Vec::new(),
            levels: Vec::new(),
            host_rearms: false,
            #[cfg(test)]
            skew: Duration::ZERO,
        }
    }

    /// The adapter over `level` for a host that re-arms a poll after its
    /// own `EAGAIN` (L3': ABI 1.2's `AA_CAP_POLL_LEVEL`): nothing is
    /// reported again until re-armed, consumed or drained.
    pub fn over_rearming_host(level: L) -> LevelTriggered<L> {
        LevelTriggered {
            host_rearms: true,
            ..LevelTriggered::over(level)
        }
    }

    /// Whether the adapter counts on the host's re-arms (L3') rather than
    /// rechecks (L3).
    pub fn host_rearms(&self) -> bool {
        self.host_rearms
    }

    /// The level poller, e.g. to inspect it.
    pub fn get_ref(&self) -> &L {
        &self.level
    }

    fn now(&self) -> Instant {
        #[cfg(test)]
        return Instant::now() + self.skew;
        #[cfg(not(test))]
        Instant::now()
    }

    /// The first grid point at least [`RECHECK`] after `now` (L3).
    fn recheck_after(&self, now: Instant) -> Instant {
        let step = RECHECK.as_nanos();
        let since = (now + RECHECK)
            .saturating_duration_since(self.epoch)
            .as_nanos();
        let points = since.div_ceil(step);
        let nanos = u64::try_from(points * step).unwrap_or(u64::MAX);
        self.epoch + Duration::from_nanos(nanos)
    }

    /// Asks the poller about every registration: for its whole interest
    /// (`look`: L2), or for what the blocking wait watches (L1, L4).
    fn poll(&mut self, look: bool, timeout: Option<Duration>) -> io::Result<bool> {
        let regs = self.regs.get_mut();
        self.watch.clear();
        self.watch.extend(
            regs.iter()
                .map(|(&fd, r)| (fd, if look { r.interest } else { r.watched() })),
        );
        self.levels.clear();
        self.levels.resize(self.watch.len(), 0);
        self.level.poll(&self.watch, timeout, &mut self.levels)
    }

    /// Turns what the poller answered into reports: unmasks what the look
    /// saw consumed (L2) or due for a recheck (L3), reports what is ready
    /// and not masked, and masks it (L1).
    fn settle(&mut self, look: bool, woken: bool, ready: &mut Vec<(u64, u32)>) {
        let now = self.now();
        let recheck = self.recheck_after(now);
        if woken {
            ready.push((BACKEND_TOKEN, AA_POLL_READABLE));
        }
        let regs = self.regs.get_mut();
        for (&(fd, asked), &level) in self.watch.iter().zip(&self.levels) {
            let Some(reg) = regs.get_mut(&fd) else {
                continue;
            };
            let level = normalize(level);
            let broken = level & (AA_POLL_HUP | AA_POLL_ERROR) != 0;
            if look {
                reg.sticky = broken;
                // L2: a masked side no longer ready was consumed.
                reg.unmask(reg.masked & !sides(level));
                // L3: one still ready after its recheck is reported again.
                if reg.recheck.is_some_and(|at| now >= at) {
                    reg.unmask(reg.masked);
                }
            } else if asked != 0 && broken {
                reg.sticky = true;
            }
            let report = level & !side_bits(reg.masked);
            if report != 0 {
                ready.push((reg.token, report));
                reg.masked |= sides(report);
                if !self.host_rearms {
                    reg.recheck.get_or_insert(recheck);
                }
            }
        }
    }

    /// The earliest recheck of a masked registration (L3).
    fn next_recheck(&mut self) -> Option<Instant> {
        self.regs
            .get_mut()
            .values()
            .filter(|r| r.masked != 0)
            .filter_map(|r| r.recheck)
            .min()
    }
}

/// `ENOENT` or `EEXIST`, as epoll answers them.
fn os_error(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

impl<L: LevelBackend> Backend for LevelTriggered<L> {
    const NAME: &'static CStr = L::NAME;
    const VENDOR: &'static CStr = L::VENDOR;
    const ABI_MINOR: u16 = L::ABI_MINOR;
    const LEVEL_TRIGGERED: bool = true;
    type Waker = L::Waker;

    /// The adapter counts on re-arms (L3') when both sides are of minor 2
    /// or later: the host then knows `AA_CAP_POLL_LEVEL` and the reactor
    /// sets it.
    fn new() -> io::Result<(Self, Self::Waker)> {
        let (level, waker) = L::new()?;
        let host = async_abi::sdk::host_minor().unwrap_or(0);
        let adapter = if L::ABI_MINOR >= 2 && host >= 2 {
            LevelTriggered::over_rearming_host(level)
        } else {
            LevelTriggered::over(level)
        };
        Ok((adapter, waker))
    }

    fn register(&self, fd: RawFd, token: u64, interest: u32) -> io::Result<()> {
        let mut regs = self.regs.borrow_mut();
        if regs.contains_key(&fd) {
            return Err(os_error(libc::EEXIST));
        }
        regs.insert(
            fd,
            Reg {
                token,
                interest,
                masked: 0,
                sticky: false,
                recheck: None,
            },
        );
        Ok(())
    }

    /// Re-arms: nothing is masked, so the next wait reports the current
    /// readiness (L2).
    fn modify(&self, fd: RawFd, token: u64, interest: u32) -> io::Result<()> {
        let mut regs = self.regs.borrow_mut();
        let reg = regs.get_mut(&fd).ok_or_else(|| os_error(libc::ENOENT))?;
        reg.token = token;
        reg.interest = interest;
        reg.unmask(reg.masked);
        Ok(())
    }

    fn deregister(&self, fd: RawFd) -> io::Result<()> {
        match self.regs.borrow_mut().remove(&fd) {
            Some(_) => Ok(()),
            None => Err(os_error(libc::ENOENT)),
        }
    }

    /// A look first if anything is masked (L2, L3) or the driver will not
    /// wait; then, if that found nothing, a wait on what is not masked,
    /// cut short by the next recheck, which is looked at then (so a recheck
    /// does not end the driver's wait empty-handed).
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<(u64, u32)>) -> io::Result<()> {
        let deadline = timeout.map(|t| self.now() + t);
        loop {
            let masked = self.regs.get_mut().values().any(|r| r.masked != 0);
            if masked || timeout == Some(Duration::ZERO) {
                let woken = self.poll(true, Some(Duration::ZERO))?;
                self.settle(true, woken, ready);
                if !ready.is_empty() || timeout == Some(Duration::ZERO) {
                    return Ok(());
                }
            }
            let now = self.now();
            let left = deadline.map(|d| d.saturating_duration_since(now));
            let recheck = self.next_recheck();
            let wait = match (left, recheck) {
                (left, Some(at)) => {
                    let until = at.saturating_duration_since(now);
                    Some(left.map_or(until, |l| l.min(until)))
                }
                (left, None) => left,
            };
            let woken = self.poll(false, wait)?;
            self.settle(false, woken, ready);
            let now = self.now();
            let timed_out = deadline.is_some_and(|d| now >= d);
            let due = recheck.is_some_and(|at| now >= at);
            if !ready.is_empty() || timed_out || !due {
                return Ok(());
            }
        }
    }

    /// The driver consumed `bits`' sides to `EAGAIN`: their next readiness
    /// is an edge (L2).
    fn drained(&self, fd: RawFd, bits: u32) {
        if let Some(reg) = self.regs.borrow_mut().get_mut(&fd) {
            reg.unmask(sides(bits));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::HashMap;
    use std::rc::Rc;

    use super::*;

    /// A waker that does nothing (the fake never blocks).
    #[derive(Debug)]
    struct NoWake;

    impl Wake for NoWake {
        fn wake(&self) -> io::Result<()> {
            Ok(())
        }
    }

    /// One call the fake poller received: the set and the timeout.
    type Call = (Vec<(RawFd, u32)>, Option<Duration>);

    /// What the fake poller shares with the test: each descriptor's level,
    /// the waker's flag, and every call it received.
    #[derive(Debug, Default)]
    struct World {
        levels: RefCell<HashMap<RawFd, u32>>,
        woken: Cell<bool>,
        calls: RefCell<Vec<Call>>,
    }

    impl World {
        fn set(&self, fd: RawFd, level: u32) {
            self.levels.borrow_mut().insert(fd, level);
        }

        /// The set of the last call, and its timeout.
        fn last(&self) -> Call {
            self.calls.borrow().last().cloned().expect("a call")
        }
    }

    /// A level poller that never blocks: it answers from `World`, as
    /// poll(2) would (hang-up and error whether asked or not, nothing for
    /// an entry of interest 0).
    #[derive(Debug)]
    struct Fake(Rc<World>);

    impl LevelBackend for Fake {
        const NAME: &'static CStr = c"reactor-fake";
        const VENDOR: &'static CStr = c"test";
        const ABI_MINOR: u16 = 1;
        type Waker = NoWake;

        fn new() -> io::Result<(Fake, NoWake)> {
            Ok((Fake(Rc::default()), NoWake))
        }

        fn poll(
            &mut self,
            watch: &[(RawFd, u32)],
            timeout: Option<Duration>,
            levels: &mut [u32],
        ) -> io::Result<bool> {
            self.0.calls.borrow_mut().push((watch.to_vec(), timeout));
            let world = self.0.levels.borrow();
            for (&(fd, interest), out) in watch.iter().zip(levels.iter_mut()) {
                if interest == 0 {
                    continue;
                }
                let level = world.get(&fd).copied().unwrap_or(0);
                *out = level & (interest | AA_POLL_HUP | AA_POLL_ERROR);
            }
            Ok(self.0.woken.replace(false))
        }
    }

    const R: u32 = AA_POLL_READABLE;
    const W: u32 = AA_POLL_WRITABLE;
    const BOTH: u32 = R | W;
    const WAIT: Option<Duration> = Some(Duration::from_secs(5));

    fn adapter() -> (LevelTriggered<Fake>, Rc<World>) {
        let world = Rc::new(World::default());
        (LevelTriggered::over(Fake(Rc::clone(&world))), world)
    }

    fn wait(lt: &mut LevelTriggered<Fake>, timeout: Option<Duration>) -> Vec<(u64, u32)> {
        let mut ready = Vec::new();
        lt.wait(timeout, &mut ready).expect("the fake never fails");
        ready
    }

    #[test]
    fn reports_in_descriptor_order_with_the_waker_first() {
        let (mut lt, world) = adapter();
        for fd in [7, 3, 5] {
            lt.register(fd, 100 + fd as u64, BOTH).unwrap();
            world.set(fd, R);
        }
        world.woken.set(true);
        assert_eq!(
            wait(&mut lt, WAIT),
            [(BACKEND_TOKEN, R), (103, R), (105, R), (107, R)]
        );
        // Nothing masked yet: one blocking call with every interest.
        assert_eq!(world.calls.borrow().len(), 1);
        let (set, timeout) = world.last();
        assert_eq!(set, [(3, BOTH), (5, BOTH), (7, BOTH)]);
        // The driver's timeout, less the time spent getting there.
        assert!(timeout.is_some_and(|t| t <= WAIT.unwrap() && t > WAIT.unwrap() / 2));
    }

    #[test]
    fn a_level_is_reported_once_and_then_not_waited_on() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, BOTH).unwrap();
        world.set(4, R);
        assert_eq!(wait(&mut lt, WAIT), [(4, R)]);
        // Still readable, nobody consumed it: no report (L1), and the wait
        // watches only the write side, bounded by the recheck (L3).
        assert_eq!(wait(&mut lt, WAIT), []);
        let (set, timeout) = world.last();
        assert_eq!(set, [(4, W)]);
        assert!(timeout.is_some_and(|t| t <= RECHECK * 2), "{timeout:?}");
    }

    #[test]
    fn write_side_is_its_own_edge() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, BOTH).unwrap();
        world.set(4, R);
        assert_eq!(wait(&mut lt, WAIT), [(4, R)]);
        world.set(4, BOTH);
        assert_eq!(wait(&mut lt, WAIT), [(4, W)]);
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
    }

    #[test]
    fn modify_rearms_and_reports_the_current_level() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, BOTH).unwrap();
        world.set(4, R);
        assert_eq!(wait(&mut lt, WAIT), [(4, R)]);
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
        lt.modify(4, 4, BOTH).unwrap();
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), [(4, R)]);
    }

    #[test]
    fn drained_to_eagain_unmasks_only_that_side() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, BOTH).unwrap();
        world.set(4, BOTH);
        assert_eq!(wait(&mut lt, WAIT), [(4, BOTH)]);
        // The driver read to EAGAIN and the level rose again before the
        // next wait (an inotify record, a signal): that is an edge.
        lt.drained(4, R);
        assert_eq!(wait(&mut lt, WAIT), [(4, R)]);
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
    }

    #[test]
    fn a_look_that_sees_it_consumed_unmasks() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, R).unwrap();
        world.set(4, R);
        assert_eq!(wait(&mut lt, WAIT), [(4, R)]);
        // The host read it dry through a poll: the look sees it low.
        world.set(4, 0);
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
        world.set(4, R);
        assert_eq!(wait(&mut lt, WAIT), [(4, R)]);
    }

    #[test]
    fn a_masked_level_is_reported_again_after_the_recheck() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, R).unwrap();
        world.set(4, R);
        assert_eq!(wait(&mut lt, WAIT), [(4, R)]);
        lt.skew = RECHECK / 2;
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
        lt.skew = RECHECK * 2 + Duration::from_millis(1);
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), [(4, R)]);
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
    }

    #[test]
    fn under_a_rearming_host_a_masked_level_waits_for_the_rearm() {
        let world = Rc::new(World::default());
        let mut lt = LevelTriggered::over_rearming_host(Fake(Rc::clone(&world)));
        assert!(lt.host_rearms());
        lt.register(4, 4, R).unwrap();
        world.set(4, R);
        assert_eq!(wait(&mut lt, WAIT), [(4, R)]);
        // L3': still ready long after, and nobody said it was consumed:
        // never reported again, and the wait is not cut short for a
        // recheck (the driver's timeout goes to the poller whole).
        lt.skew = RECHECK * 5;
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
        assert_eq!(wait(&mut lt, WAIT), []);
        let (_, timeout) = world.last();
        assert!(timeout.is_some_and(|t| t > RECHECK * 2), "{timeout:?}");
        // The host read to EAGAIN, the peer wrote again before the loop
        // looked, and the host re-armed (R-POLL-8): reported at once.
        lt.modify(4, 4, R).unwrap();
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), [(4, R)]);
    }

    /// A [`Fake`] that states ABI 1.2.
    #[derive(Debug)]
    struct Fake12(Fake);

    impl LevelBackend for Fake12 {
        const NAME: &'static CStr = c"reactor-fake12";
        const VENDOR: &'static CStr = c"test";
        const ABI_MINOR: u16 = 2;
        type Waker = NoWake;

        fn new() -> io::Result<(Fake12, NoWake)> {
            Ok((Fake12(Fake(Rc::default())), NoWake))
        }

        fn poll(
            &mut self,
            watch: &[(RawFd, u32)],
            timeout: Option<Duration>,
            levels: &mut [u32],
        ) -> io::Result<bool> {
            self.0.poll(watch, timeout, levels)
        }
    }

    /// L3': the adapter counts on re-arms only when the host (read from the
    /// table `init` recorded) and the backend are both of minor 2 or later;
    /// with no host, an older host or an older backend it rechecks (L3).
    #[test]
    #[allow(unsafe_code)] // set_host: a host table, as `init` records one
    fn rearms_are_counted_on_only_from_a_1_2_host_and_backend() {
        let host = |minor: u16| async_abi::AaHostApi {
            struct_size: std::mem::size_of::<async_abi::AaHostApi>() as u32,
            abi_major: async_abi::AA_ABI_MAJOR,
            abi_minor: minor,
            host_ctx: std::ptr::null_mut(),
            host_name: c"test host".as_ptr(),
            host_version: c"0".as_ptr(),
            log: None,
            log_enabled: None,
            get_extension: None,
        };
        let mut seen = Vec::new();
        for minor in [None, Some(1), Some(2)] {
            let table = minor.map(host);
            // SAFETY: `table` outlives its use: cleared below before it
            // goes; no function pointer in it is called (all NULL).
            unsafe { async_abi::sdk::set_host(table.as_ref().map_or(std::ptr::null(), |t| t)) };
            let (lt12, _) = <LevelTriggered<Fake12> as Backend>::new().unwrap();
            let (lt11, _) = <LevelTriggered<Fake> as Backend>::new().unwrap();
            async_abi::sdk::clear_host();
            seen.push((lt12.host_rearms(), lt11.host_rearms()));
        }
        assert_eq!(seen, [(false, false), (false, false), (true, false)]);
    }

    #[test]
    fn hang_up_reads_and_is_not_polled_in_a_loop() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, BOTH).unwrap();
        world.set(4, AA_POLL_HUP);
        assert_eq!(wait(&mut lt, WAIT), [(4, AA_POLL_HUP | R)]);
        // The write side is not ready, but poll(2) would answer the
        // hang-up at once: the descriptor is left out of the wait (L4).
        assert_eq!(wait(&mut lt, WAIT), []);
        assert_eq!(world.last().0, [(4, 0)]);
        // A re-arm reports it again.
        lt.modify(4, 4, BOTH).unwrap();
        assert_eq!(wait(&mut lt, WAIT), [(4, AA_POLL_HUP | R)]);
    }

    #[test]
    fn an_error_writes() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, BOTH).unwrap();
        world.set(4, AA_POLL_ERROR);
        assert_eq!(wait(&mut lt, WAIT), [(4, AA_POLL_ERROR | W)]);
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
    }

    #[test]
    fn registrations_answer_as_epoll_does() {
        let (lt, _world) = adapter();
        lt.register(4, 4, R).unwrap();
        let exists = lt.register(4, 4, R).unwrap_err();
        assert_eq!(exists.raw_os_error(), Some(libc::EEXIST));
        lt.deregister(4).unwrap();
        let gone = lt.deregister(4).unwrap_err();
        assert_eq!(gone.raw_os_error(), Some(libc::ENOENT));
        let gone = lt.modify(4, 4, R).unwrap_err();
        assert_eq!(gone.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn deregistered_descriptor_is_not_reported() {
        let (mut lt, world) = adapter();
        lt.register(4, 4, R).unwrap();
        world.set(4, R);
        lt.deregister(4).unwrap();
        assert_eq!(wait(&mut lt, Some(Duration::ZERO)), []);
        assert_eq!(world.last().0, []);
    }
}
