//! The coroutine side of a hooked call: the waits a hook makes instead of
//! blocking the thread, and the rules they keep.
//!
//! - **HK1** A hook waits only when [`active`] (K5 in `core::runtime`): a
//!   runtime with hooks on is installed, a coroutine runs, no quiet
//!   section is open. Everywhere else it is the C library's call.
//! - **HK2** A wait never unwinds into the hook's caller (C frames, or
//!   std's behind an `extern "C"` boundary): every call into the runtime is
//!   under `catch_unwind`. A forced shutdown caught there is recorded
//!   (`force_shutdown`) so the coroutine's next suspension point in the
//!   runtime's API unwinds it; the hooked call fails as cancelled.
//! - **HK3** Cancellation: a hooked wait is a cancellation point that does
//!   not consume the cancellation. A wait that finds one pending, or is
//!   cancelled while it waits, yields once (so a retry loop cannot starve
//!   the loop) and reports [`Woke::Cancelled`]; the cancellation stays
//!   pending for the next suspension point in the runtime's API.
//! - **HK4** A wait on one descriptor uses the loop's watch for its
//!   number (`core::fd_watches`, FW1-FW5): made at the first wait on a
//!   duplicate the reactor owns and closes (RD5), kept for the next ones,
//!   valid only under the number's generation (FD5), and disposed by the
//!   `close` or `dup2` over the number before the descriptor goes. So a
//!   descriptor closed and its number reused never meets an old
//!   registration, and a stream read that waits costs a suspension, not a
//!   registration. A wait on several (`poll`), or on a descriptor the hooks
//!   close themselves (a pidfd), makes watches for that wait only.
//! - **HK6** A hook suspends only where the C library's call would block:
//!   a transfer that finds data, or room, returns without a switch, as the
//!   real call does. Code written for threads holds locks across such calls
//!   (std's stdout lock, a `Mutex<TcpStream>`), and a switch there would let
//!   another coroutine of the thread meet the lock held. So a coroutine
//!   whose hooked reads always find data keeps the loop, as a busy loop
//!   does (the activity watchdog names it); this crate's own I/O types give
//!   the loop back by their cooperative budget.
//! - **HK7** On a reactor that completes file transfers itself
//!   (`AA_CAP_IO_NATIVE`: io_uring), a regular file's transfer that the
//!   page cache could not serve at once is the reactor's request on the
//!   caller's descriptor, not pool work ([`in_ring`]); the request returns
//!   only after its completion, so the caller's buffer is never written
//!   after the call. The reactor forgets what it knew of the number when
//!   the request retires (reactor-uring's G7), so the caller's own
//!   `close(2)` leaves nothing behind for the number's next owner.
//! - **HK5** Work handed to the blocking pool that writes into the caller's
//!   memory is waited for to its end ([`on_pool_fixed`]): neither a
//!   cancellation nor a shutdown returns before the pool thread is done
//!   with the buffer. Work that owns what it touches ([`on_pool`]) may be
//!   left to finish on its own when the waiter is cancelled.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::os::fd::{BorrowedFd, RawFd};

use super::{fds, Way};
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;
use std::time::Duration;

use async_abi::AA_OK;

use crate::core::offload::{offload, OffloadError};
use crate::core::readiness::Direction;
use crate::core::runtime::io::FdWait;
use crate::core::runtime::{self, Quiet, Runtime, WakeRec};
use crate::core::state::CoroState;
use crate::core::wait::ForcedUnwind;

/// HK1: whether a hook called now should make its call suspend the
/// running coroutine.
#[inline(always)]
pub(super) fn active() -> bool {
    runtime::hooked()
}

/// How a hooked wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Woke {
    /// What was waited for happened (or may have: the caller checks).
    Ready,
    /// The timeout passed first.
    TimedOut,
    /// The coroutine is cancelled (HK3) or the runtime shuts down (HK2).
    Cancelled,
    /// The wait could not be set up (no watch for this descriptor, no
    /// timer, no descriptor left for the duplicate): the caller does the
    /// C library's blocking call instead.
    Unavailable,
}

/// Runs `f` with the runtime and the running coroutine, catching whatever
/// unwinds (HK2). `None` if nothing runs or `f` unwound.
fn guarded<R>(f: impl FnOnce(&Runtime, &Rc<CoroState>) -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(|| runtime::with_running(f))) {
        Ok(r) => r,
        Err(payload) => {
            if payload.is::<ForcedUnwind>() {
                // HK2: the next suspension point in the runtime's API
                // unwinds the coroutine.
                let _ = runtime::with_running(|_, me| me.force_shutdown());
            } else {
                let _quiet = Quiet::new();
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_owned());
                tracing::error!(target: "async_std_api::hooks", "a hooked call failed inside the runtime: {msg}");
            }
            None
        }
    }
}

/// While alive, reports can name the code that made the hooked call: the
/// coroutine's record holds the stack pointer of the wait's frame
/// (`CoroState::hooked_sp`), from which the frames of the callers are read
/// only when a report asks (`Coroutine::awaiting_info`, a deadlock).
struct Site<'a>(&'a CoroState);

impl<'a> Site<'a> {
    fn mark(me: &'a CoroState) -> Site<'a> {
        let here = 0u8;
        let sp = std::hint::black_box(&here) as *const u8 as usize;
        me.hooked_sp.set(sp);
        Site(me)
    }
}

impl Drop for Site<'_> {
    fn drop(&mut self) {
        self.0.hooked_sp.set(0);
    }
}

/// HK3: a pending cancellation ends the wait before it starts; the
/// coroutine yields once on the way out.
#[inline]
fn cancelled_before(
    rt: &Runtime,
    me: &Rc<CoroState>,
    what: &[u8],
    at: &'static Location<'static>,
) -> bool {
    me.has_pending_cancel() && yield_cancelled(rt, me, what, at)
}

/// The rare half of [`cancelled_before`], out of line: every hooked wait
/// checks, almost none is cancelled.
#[cold]
#[inline(never)]
fn yield_cancelled(
    rt: &Runtime,
    me: &Rc<CoroState>,
    what: &[u8],
    at: &'static Location<'static>,
) -> bool {
    let _ = rt.sched.yield_now(me, what, at);
    true
}

/// HK3 for work that, once begun, runs to its end (a file transfer on the
/// pool, HK5): whether the running coroutine is already cancelled, in
/// which case it yields once and the caller fails with `ECANCELED` before
/// anything starts. `false` outside a coroutine.
#[track_caller]
pub(super) fn cancelled_now(what: &str) -> bool {
    if !active() {
        return false;
    }
    let at = Location::caller();
    guarded(|rt, me| cancelled_before(rt, me, what.as_bytes(), at)).unwrap_or(false)
}

/// Suspends once; `false` if the coroutine was resumed with an error
/// (cancelled, shut down, deadlocked), which stays recorded for the next
/// suspension point in the runtime's API (HK3).
fn suspend(rt: &Runtime, me: &Rc<CoroState>, what: &[u8], at: &'static Location<'static>) -> bool {
    let status = rt.sched.suspend(me, what, at);
    if status >= AA_OK {
        return true;
    }
    match status {
        async_abi::AA_E_SHUTDOWN => me.force_shutdown(),
        async_abi::AA_E_DEADLOCK => {
            // Records the deadlock as the coroutine's cancellation; it is
            // delivered at the next suspension point.
            let _ = me.deadlocked();
            me.repend_cancel();
        }
        _ => {}
    }
    false
}

/// Waits until one of `fds` is ready for its interest (`AA_POLL_*` bits),
/// `timeout` passes, or the coroutine is cancelled. `what` names the wait
/// in deadlock reports and `Coroutine::awaiting_info`.
#[track_caller]
pub(super) fn fds_ready(fds: &[(RawFd, u32)], timeout: Option<Duration>, what: &str) -> Woke {
    let at = Location::caller();
    guarded(|rt, me| wait_fds(rt, me, fds, timeout, what.as_bytes(), at)).unwrap_or(Woke::Cancelled)
}

/// Waits until `fd`, which the caller just found not ready (`EAGAIN`), is
/// ready for `interest`, on the loop's cached watch for the number (HK4,
/// `core::fd_watches`): a wait costs a suspension, not a registration. For
/// descriptors the caller owns and closes itself with the C library's own
/// call, [`fds_ready`] (a watch per wait).
#[track_caller]
pub(super) fn fd_ready(
    fd: RawFd,
    interest: u32,
    timeout: Option<Duration>,
    call: &'static str,
) -> Woke {
    let at = Location::caller();
    guarded(|rt, me| {
        if cancelled_before(rt, me, call.as_bytes(), at) {
            return Woke::Cancelled;
        }
        let Some(gen) = fds::cache_under(fd) else {
            let what = super::what(call, fd);
            return wait_fds(rt, me, &[(fd, interest)], timeout, what.as_bytes(), at);
        };
        let watch = {
            let _quiet = Quiet::new();
            // SAFETY: the hooked call's descriptor, open for the duration
            // of the call; borrowed only to duplicate it (FW1).
            let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
            rt.fd_watches
                .watch(rt, borrowed, gen, fds::remote_closes(), fds::generation)
        };
        let Ok(watch) = watch else {
            return Woke::Unavailable;
        };
        let dir = if interest & async_abi::AA_POLL_WRITABLE != 0 {
            Direction::Write
        } else {
            Direction::Read
        };
        // RD2: the caller's attempt said not ready; the next edge wakes us.
        watch.clear(dir);
        let _site = Site::mark(me);
        match watch.wait_timeout(dir, timeout, FdWait(call, fd), at) {
            Ok(()) => Woke::Ready,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Woke::TimedOut,
            Err(_) => {
                // Delivered by the wait (W1): pending again, for the
                // runtime's next suspension point (HK3).
                me.repend_cancel();
                Woke::Cancelled
            }
        }
    })
    .unwrap_or(Woke::Cancelled)
}

/// IO6: one transfer on a plain TCP socket whose watch this loop keeps:
/// `op`, the non-blocking call, and on `EAGAIN` a wait on the watch and
/// `op` again. As IO1 but without asking what the number is, and nothing
/// between the call and its result (HK6: no budget, no cancellation check
/// unless the call would block). `None` when the route does not apply (no
/// watch under the number's generation in this loop, or a close elsewhere
/// not yet swept): the caller takes the general one ([`fd_ready`]). A
/// cancellation fails the call with `ECANCELED` and stays pending (HK3).
#[track_caller]
pub(super) fn plain_tcp(
    fd: RawFd,
    gen: u32,
    way: Way,
    call: &'static str,
    mut op: impl FnMut() -> libc::ssize_t,
) -> Option<libc::ssize_t> {
    let at = Location::caller();
    guarded(|rt, me| {
        let write = way == Way::Out;
        let watch = rt.fd_watches.cached(fd, gen, fds::remote_closes())?;
        let dir = if write {
            Direction::Write
        } else {
            Direction::Read
        };
        loop {
            let r = op();
            if r >= 0 {
                return Some(r);
            }
            match super::errno() {
                libc::EINTR => continue,
                libc::EAGAIN => {}
                // `errno` is the call's.
                _ => return Some(-1),
            }
            // The C library's call would block here (HK6).
            if cancelled_before(rt, me, call.as_bytes(), at) {
                return Some(super::fail(libc::ECANCELED));
            }
            // RD2: the attempt said not ready; the next edge wakes us.
            watch.clear(dir);
            let what = rt.fd_watches.wait_text(fd, write, call);
            let _site = Site::mark(me);
            if watch.wait_ready(rt, me, dir, &what, at).is_err() {
                // Delivered by the wait (W1): pending again, for the
                // runtime's next suspension point (HK3).
                me.repend_cancel();
                return Some(super::fail(libc::ECANCELED));
            }
        }
    })
    .unwrap_or_else(|| Some(super::fail(libc::ECANCELED)))
}

/// FD5: disposes the calling thread's loop's watch for `fd` before the
/// descriptor goes; `false` if this thread's loop has none (another
/// thread's loop may: it looks again at its next wait).
pub(super) fn drop_watch(fd: RawFd) -> bool {
    runtime::with_runtime(|rt| rt.fd_watches.remove(fd) == Some(true)).unwrap_or(false)
}

fn wait_fds(
    rt: &Runtime,
    me: &Rc<CoroState>,
    fds: &[(RawFd, u32)],
    timeout: Option<Duration>,
    what: &[u8],
    at: &'static Location<'static>,
) -> Woke {
    if cancelled_before(rt, me, what, at) {
        return Woke::Cancelled;
    }
    let fired = Rc::new(Cell::new(false));
    let mut watches = Vec::with_capacity(fds.len());
    {
        let _quiet = Quiet::new();
        for &(fd, interest) in fds {
            // SAFETY: the caller's descriptor, open for the duration of
            // this call (the hooked call received it); borrowed only to
            // duplicate it.
            let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
            // HK4: a duplicate the reactor owns and closes.
            let Ok(dup) = borrowed.try_clone_to_owned() else {
                return Woke::Unavailable;
            };
            let (f, who) = (fired.clone(), me.clone());
            let watch = rt.reactor.poll_owned(
                dup,
                interest,
                0,
                Box::new(move |_status, _bits| {
                    f.set(true);
                    runtime::wake(&who);
                }),
            );
            match watch {
                Ok(w) => watches.push(w),
                Err(_) => return Woke::Unavailable,
            }
        }
    }
    let rec = WakeRec::new(me);
    let _timer = match timeout {
        Some(t) => {
            let _quiet = Quiet::new();
            match rt.reactor.wake_timer(nanos(t), &rec) {
                Ok(timer) => Some(timer),
                Err(_) => return Woke::Unavailable,
            }
        }
        None => None,
    };
    let _site = Site::mark(me);
    loop {
        if !suspend(rt, me, what, at) {
            return Woke::Cancelled;
        }
        if fired.get() {
            return Woke::Ready;
        }
        if rec.fired() {
            return Woke::TimedOut;
        }
    }
}

/// Suspends the coroutine for `d` (a zero duration yields). `false` if it
/// was cancelled first (HK3).
#[track_caller]
pub(super) fn sleep(d: Duration, what: &str) -> bool {
    let at = Location::caller();
    guarded(|rt, me| {
        if cancelled_before(rt, me, what.as_bytes(), at) {
            return false;
        }
        if d.is_zero() {
            return rt.sched.yield_now(me, what.as_bytes(), at) >= AA_OK;
        }
        let rec = WakeRec::new(me);
        let timer = {
            let _quiet = Quiet::new();
            rt.reactor.wake_timer(nanos(d), &rec)
        };
        let Ok(_timer) = timer else {
            return false;
        };
        let _site = Site::mark(me);
        while !rec.fired() {
            if !suspend(rt, me, what.as_bytes(), at) {
                return false;
            }
        }
        true
    })
    .unwrap_or(false)
}

/// Why pool work gave no value.
#[derive(Debug)]
pub(super) enum PoolError {
    /// The waiter was cancelled; the work runs to its end on its own.
    Cancelled,
    /// The pool could not take it: the caller does the work itself.
    Unavailable,
}

/// Runs `f` on the blocking pool and waits for it; `f` owns everything it
/// touches, so a cancelled waiter may leave it to finish alone (HK5).
#[track_caller]
pub(super) fn on_pool<T, F>(what: &'static str, f: F) -> Result<T, PoolError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let at = Location::caller();
    let out = guarded(move |rt, me| {
        if cancelled_before(rt, me, what.as_bytes(), at) {
            return Err(PoolError::Cancelled);
        }
        let _site = Site::mark(me);
        match offload(what, f) {
            Ok(Ok(v)) => Ok(v),
            // A panic in the C library call: not ours to unwind through C.
            Ok(Err(_panic)) => Err(PoolError::Unavailable),
            Err(OffloadError::Cancelled(_)) => {
                me.repend_cancel();
                Err(PoolError::Cancelled)
            }
            Err(OffloadError::Unavailable(_)) => Err(PoolError::Unavailable),
        }
    });
    out.unwrap_or(Err(PoolError::Cancelled))
}

/// Runs `f` on the blocking pool and waits for it to its end whatever
/// happens to the coroutine meanwhile (HK5): `f` writes into memory the
/// caller lent, which must outlive it. `None` if the pool could not take
/// it (the caller does the work itself); a cancellation that arrived in
/// the meantime stays pending.
#[track_caller]
pub(super) fn on_pool_fixed<T, F>(what: &'static str, f: F) -> Option<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let at = Location::caller();
    // HK5: once the job is queued, nothing may return before it ends; a
    // panic after that point (a bug) ends the process rather than hand the
    // caller's memory back while a pool thread may write into it.
    let queued = Cell::new(false);
    let out = guarded(|rt, me| {
        let done: Rc<Cell<Option<Option<std::thread::Result<T>>>>> = Rc::new(Cell::new(None));
        let (id, promise) = {
            let _quiet = Quiet::new();
            let (d, who) = (done.clone(), me.clone());
            rt.remote
                .register(move |v: Option<std::thread::Result<T>>| {
                    d.set(Some(v));
                    runtime::wake(&who);
                })
                .ok()?
        };
        let submitted = {
            let _quiet = Quiet::new();
            rt.pool.submit(Box::new(move || {
                let r = catch_unwind(AssertUnwindSafe(f));
                promise.keep(r);
            }))
        };
        if submitted.is_err() {
            rt.remote.forget(id);
            return None;
        }
        queued.set(true);
        // HK5: no early return from here until the work has ended; a
        // resumption with an error is recorded (`suspend`) and waited past.
        let _site = Site::mark(me);
        loop {
            if let Some(v) = done.take() {
                rt.remote.forget(id);
                return match v {
                    Some(Ok(value)) => Some(value),
                    // Dropped before it ran (the runtime is stopping), or
                    // the C call panicked: nothing touches the memory now.
                    _ => None,
                };
            }
            let _ = suspend(rt, me, what.as_bytes(), at);
        }
    });
    match out {
        Some(v) => v,
        None if queued.get() => {
            let _quiet = Quiet::new();
            eprintln!(
                "async-std-api hooks: {what}: the wait for the blocking pool failed while the \
                 pool may still be writing into the caller's memory; aborting"
            );
            std::process::abort()
        }
        None => None,
    }
}

/// How a transfer through the reactor's ring ended ([`in_ring`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ring {
    /// The transfer's result: bytes (short only at the end of the file, or
    /// when a cancellation or an error came after some bytes), or an
    /// errno (`ECANCELED` for a cancelled one).
    Done(Result<usize, libc::c_int>),
    /// The reactor runs no file transfers here (no `AA_CAP_IO_NATIVE`,
    /// outside a coroutine), or would not wait for the disk (`EAGAIN`), or
    /// failed with an error of its own: the caller moves the bytes after
    /// the first `n` elsewhere (the pool).
    Elsewhere(usize),
}

/// The most one request of [`in_ring`] moves.
const RING_PIECE: usize = 256 * 1024;

/// HK7: moves `n` bytes between the caller's buffer at `buf` and the
/// regular file `fd` (at `off`, or the file position: the ring's offset
/// -1, which uses and advances it as `read(2)` does) by the reactor's own
/// requests of at most [`RING_PIECE`] bytes, continuing short ones. Each
/// request returns only after its completion, a cancelled one's included
/// (IO1 of `core::runtime::io`), so nothing writes into the caller's
/// memory once this returns. A
/// cancellation ends the transfer as the hooks' rule for cancelled calls
/// says (HK3): `ECANCELED` if nothing moved yet, else the bytes moved so
/// far (a short count, as `read(2)` interrupted after some data returns);
/// the cancellation stays pending for the next suspension point.
///
/// # Safety
///
/// `buf` is valid for `n` bytes, writable for a read and readable for a
/// write, until this returns.
pub(super) unsafe fn in_ring(
    fd: RawFd,
    buf: usize,
    n: usize,
    off: Option<i64>,
    way: super::Way,
    call: &'static str,
) -> Ring {
    use crate::core::runtime::io::IoReq;
    if !active() {
        // HK1: no coroutine to suspend; the caller's route is the pool's.
        return Ring::Elsewhere(0);
    }
    let at = Location::caller();
    // HK5 for the ring: once a request is submitted, nothing may return
    // before it completed; a panic after that point (a bug: `perform`
    // waits past every interruption, IO1) ends the process rather than
    // hand the caller's memory back while the kernel may write into it.
    let submitted = Cell::new(false);
    let out = guarded(|rt, me| {
        if rt.reactor.caps() & async_abi::AA_CAP_IO_NATIVE == 0 {
            return Ring::Elsewhere(0);
        }
        if cancelled_before(rt, me, call.as_bytes(), at) {
            return Ring::Done(Err(libc::ECANCELED));
        }
        let _site = Site::mark(me);
        let mut done = 0usize;
        while done < n {
            // io_uring makes a transfer the page cache can serve inline,
            // in the loop's own `io_uring_enter`: in pieces, each request
            // one unit of the cooperative budget, the loop is given back
            // between them (B2) instead of held for the whole transfer.
            let (p, len) = (buf + done, (n - done).min(RING_PIECE));
            let at_off = off.map(|o| o as u64 + done as u64);
            // SAFETY: the function's contract: `[buf, buf + n)` is the
            // caller's, in the direction of `way`, until we return; the
            // request borrows its tail only until `perform` returns.
            let req = unsafe {
                match (way, at_off) {
                    (super::Way::In, Some(o)) => {
                        IoReq::ReadAt(std::slice::from_raw_parts_mut(p as *mut u8, len), o)
                    }
                    (super::Way::In, None) => {
                        IoReq::Read(std::slice::from_raw_parts_mut(p as *mut u8, len))
                    }
                    (super::Way::Out, Some(o)) => {
                        IoReq::WriteAt(std::slice::from_raw_parts(p as *const u8, len), o)
                    }
                    (super::Way::Out, None) => {
                        IoReq::Write(std::slice::from_raw_parts(p as *const u8, len))
                    }
                }
            };
            submitted.set(true);
            let o = ring_once(rt, me, fd, req, call, at);
            submitted.set(false);
            if o.result > 0 {
                done += o.result as usize;
            }
            if o.interrupted {
                return Ring::Done(if done > 0 {
                    Ok(done)
                } else {
                    Err(libc::ECANCELED)
                });
            }
            if o.failed || o.result == -i64::from(libc::EAGAIN) || o.result < -4095 {
                // The reactor's own failure (reported by it, F11), or a
                // ring that would not wait for the disk: the rest
                // elsewhere.
                return Ring::Elsewhere(done);
            }
            if o.result == -i64::from(libc::EINTR) {
                continue;
            }
            if o.result < 0 {
                return Ring::Done(if done > 0 {
                    Ok(done)
                } else {
                    Err((-o.result) as libc::c_int)
                });
            }
            if o.result == 0 {
                break;
            }
        }
        Ring::Done(Ok(done))
    });
    match out {
        Some(ring) => ring,
        None if submitted.get() => {
            let _quiet = Quiet::new();
            eprintln!(
                "async-std-api hooks: {call}: the wait for the ring's request failed while the \
                 kernel may still be writing into the caller's memory; aborting"
            );
            std::process::abort()
        }
        None => Ring::Done(Err(libc::ECANCELED)),
    }
}

/// One request's outcome in [`ring_once`].
struct Once {
    /// Bytes, a descriptor, 0, or `-errno` (or an ABI status).
    result: i64,
    /// The wait was interrupted (cancelled, shut down, deadlocked): the
    /// cause is recorded for the next suspension point (HK2, HK3).
    interrupted: bool,
    /// The reactor failed it with an error of its own (F11).
    failed: bool,
}

/// One request of the running coroutine `me` in the reactor, waited for to
/// its completion (IO1), a cancellation's included.
fn ring_once(
    rt: &Runtime,
    me: &Rc<CoroState>,
    fd: RawFd,
    req: crate::core::runtime::io::IoReq<'_>,
    call: &'static str,
    at: &'static Location<'static>,
) -> Once {
    use crate::core::runtime::io::{perform, Interrupt};
    let o = perform(rt, me, fd, req, FdWait(call, fd), at, false);
    match o.interrupt {
        None => {}
        Some(Interrupt::Cancelled) => me.repend_cancel(),
        Some(Interrupt::Shutdown) => me.force_shutdown(),
        Some(Interrupt::Deadlock) => {
            let _ = me.deadlocked();
            me.repend_cancel();
        }
    }
    Once {
        result: o.result,
        interrupted: o.interrupt.is_some(),
        failed: o.failure.is_some(),
    }
}

/// HK7: `openat(dirfd, path, flags, mode)` as the reactor's request where
/// it has file requests (`AA_CAP_IO_FILE`), `None` elsewhere or when it
/// refuses (the caller opens on the pool). The reactor opens with
/// `O_CLOEXEC`; a caller that did not ask for it gets it cleared. An open
/// that completed is the caller's even when the coroutine was cancelled
/// meanwhile (the cancellation stays pending, P-08).
pub(super) fn open_in_ring(
    dirfd: RawFd,
    path: &std::ffi::CStr,
    flags: libc::c_int,
    mode: libc::c_uint,
) -> Option<Result<RawFd, libc::c_int>> {
    use crate::core::runtime::io::IoReq;
    if !active() {
        return None;
    }
    let at = Location::caller();
    guarded(|rt, me| {
        if rt.reactor.caps() & async_abi::AA_CAP_IO_FILE == 0 {
            return None;
        }
        if cancelled_before(rt, me, b"hooked open (in the ring)", at) {
            return Some(Err(libc::ECANCELED));
        }
        let _site = Site::mark(me);
        let req = IoReq::OpenAt {
            path: path.to_bytes(),
            flags: flags as u32,
            mode,
        };
        let o = ring_once(rt, me, dirfd, req, "hooked open (in the ring)", at);
        if o.failed || o.result < -4095 {
            return None;
        }
        if o.result < 0 {
            return Some(Err(if o.interrupted {
                libc::ECANCELED
            } else {
                (-o.result) as libc::c_int
            }));
        }
        let fd = o.result as RawFd;
        if flags & libc::O_CLOEXEC == 0 {
            // SAFETY: the descriptor the open just returned, ours.
            unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        }
        Some(Ok(fd))
    })
    .flatten()
}

/// HK7: `fsync`/`fdatasync` of `fd` as the reactor's request where it has
/// file requests, `None` elsewhere or when it refuses (the pool then).
pub(super) fn sync_in_ring(fd: RawFd, data_only: bool) -> Option<Result<(), libc::c_int>> {
    use crate::core::runtime::io::IoReq;
    if !active() {
        return None;
    }
    let at = Location::caller();
    guarded(|rt, me| {
        if rt.reactor.caps() & async_abi::AA_CAP_IO_FILE == 0 {
            return None;
        }
        if cancelled_before(rt, me, b"hooked fsync (in the ring)", at) {
            return Some(Err(libc::ECANCELED));
        }
        let _site = Site::mark(me);
        let req = IoReq::Fsync {
            datasync: data_only,
        };
        let o = ring_once(rt, me, fd, req, "hooked fsync (in the ring)", at);
        if o.failed || o.result < -4095 {
            return None;
        }
        Some(match o.result {
            r if r >= 0 => Ok(()),
            _ if o.interrupted => Err(libc::ECANCELED),
            r => Err((-r) as libc::c_int),
        })
    })
    .flatten()
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
