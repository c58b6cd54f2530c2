//! Suspension points and the generic wait loop every blocking call uses.
//!
//! Rules (ARCHITECTURE "The host"):
//! - **W1** Every blocking call is a cancellation point: a pending
//!   cancellation of the calling coroutine is delivered before it waits,
//!   once (D-1).
//! - **W2** A wait is a loop that re-checks its own condition after every
//!   resume; a wake-up is never proof of completion (P-22).
//! - **W3** When a waiter resumes, its own cancellation wins, then the
//!   awaited outcome if final, then the until-trigger (D-20).
//! - **W4** A wait deregisters from everything it subscribed to before it
//!   returns or unwinds (I4 in `task::state`).

use std::panic::Location;
use std::rc::Rc;

use async_abi::{AaStatus, AA_E_CANCELLED, AA_E_DEADLOCK, AA_E_SHUTDOWN, AA_OK};

use super::error::{CancelCause, Cancelled};
use super::runtime::{self, Runtime};
use super::state::{CoroState, FORCED};
use super::waiters::{Completion, Subscription};

/// The payload that unwinds a coroutine's stack when the runtime shuts
/// down. Raised with `resume_unwind` (no panic hook, nothing printed) and
/// caught by the coroutine's entry.
pub(crate) struct ForcedUnwind;

/// Unwinds the current coroutine's stack (shutdown).
pub(crate) fn forced_unwind() -> ! {
    std::panic::resume_unwind(Box::new(ForcedUnwind))
}

/// Runs `f` with the runtime and the running coroutine (borrowed: no
/// reference count is taken, `runtime::ffi::current` K3).
///
/// # Panics
///
/// Outside a coroutine, with a message naming `what` and the fix.
#[track_caller]
#[inline(always)]
pub(crate) fn with_me<R>(what: &str, f: impl FnOnce(&Runtime, &Rc<CoroState>) -> R) -> R {
    match runtime::with_running(f) {
        Some(r) => r,
        None => not_in_coroutine(what),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn not_in_coroutine(what: &str) -> ! {
    if runtime::with_runtime(|_| ()).is_none() {
        panic!(
            "{what} called outside a coroutine runtime: run the program inside async_std_api::run"
        )
    }
    panic!("{what} called outside a coroutine: call it from a coroutine of async_std_api::run")
}

/// Panics unless a coroutine is running, as [`with_me`] would: for a public
/// call whose own wait is reached through a closure (where a panic names the
/// closure's line, not the user's), so it checks first, at its top.
#[track_caller]
#[inline]
pub(crate) fn require_coroutine(what: &str) {
    with_me(what, |_, _| ());
}

/// The misuse panic of a call that needs a runtime (not necessarily a
/// coroutine), raised at the caller's line through `#[track_caller]`; call
/// it outside closures (`let ... else`), whose own line a panic would name.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn outside_runtime(what: &str) -> ! {
    panic!("{what} called outside a coroutine runtime: run the program inside async_std_api::run")
}

/// W1: delivers a pending cancellation; under a forced shutdown (GS3),
/// unwinds the coroutine's stack instead (unless it is already unwinding:
/// a `Drop` that blocks then gets the cancellation as an error).
#[inline]
pub(crate) fn checkpoint(me: &CoroState) -> Result<(), Cancelled> {
    match me.take_pending_cancel() {
        Some(c) => forced_or(me, c),
        None => Ok(()),
    }
}

#[cold]
#[inline(never)]
fn forced_or(me: &CoroState, c: Cancelled) -> Result<(), Cancelled> {
    if me.has_flag(FORCED) && !std::thread::panicking() {
        forced_unwind();
    }
    Err(c)
}

/// Suspends once and turns the resume status into the host's policy:
/// `AA_E_CANCELLED` delivers a pending cancellation (a stale one is a
/// spurious wake-up), `AA_E_SHUTDOWN` unwinds, `AA_E_DEADLOCK` is a
/// cancellation with cause `Deadlock`.
#[inline]
pub(crate) fn suspend_once(
    rt: &Runtime,
    me: &Rc<CoroState>,
    what: &[u8],
    at: &'static Location<'static>,
) -> Result<(), Cancelled> {
    resumed(me, rt.sched.suspend(me, what, at))
}

/// Yields once (enqueue with status 0, then suspend) with the same policy
/// as [`suspend_once`].
#[inline]
pub(crate) fn yield_once(
    rt: &Runtime,
    me: &Rc<CoroState>,
    what: &[u8],
    at: &'static Location<'static>,
) -> Result<(), Cancelled> {
    resumed(me, rt.sched.yield_now(me, what, at))
}

/// Not a status any scheduler returns: "a cancellation was pending before
/// the suspension" ([`not_resumed_ok`] delivers it, W1).
pub(crate) const PENDING_CANCEL: AaStatus = AaStatus::MIN;

/// The out-of-line half of a hot suspension point (W1, then the policy of
/// [`suspend_once`]) for a `status` that is [`PENDING_CANCEL`] or negative.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn not_resumed_ok(status: AaStatus) -> Result<(), Cancelled> {
    with_me("suspend", |_, me| {
        if status == PENDING_CANCEL {
            checkpoint(me)
        } else {
            resumed_with_error(me, status)
        }
    })
}

/// The policy of [`suspend_once`] for a resume status.
#[inline]
fn resumed(me: &CoroState, status: AaStatus) -> Result<(), Cancelled> {
    if status >= AA_OK {
        return Ok(());
    }
    resumed_with_error(me, status)
}

#[cold]
#[inline(never)]
fn resumed_with_error(me: &CoroState, status: AaStatus) -> Result<(), Cancelled> {
    match status {
        AA_E_CANCELLED => checkpoint(me),
        AA_E_SHUTDOWN if std::thread::panicking() => Err(me
            .cancellation()
            .unwrap_or_else(|| Cancelled::of(me.id(), CancelCause::Shutdown, None))),
        AA_E_SHUTDOWN => forced_unwind(),
        AA_E_DEADLOCK => Err(me.deadlocked()),
        s => panic!(
            "the scheduler could not suspend coroutine {}: {}",
            me.id(),
            runtime::status_text(s)
        ),
    }
}

/// How a wait on a completion ended.
pub(crate) enum WaitEnd {
    /// The awaited thing completed.
    Done,
    /// The until-trigger completed first.
    Trigger,
    /// The waiter itself was cancelled (or deadlocked).
    Interrupted(Cancelled),
    /// The waiter is the awaited coroutine (R-CO6); nothing was awaited.
    SelfAwait,
}

/// Waits until `target` completes, or `until` does, or the waiter is
/// cancelled (W1-W4).
pub(crate) fn wait_for(
    rt: &Runtime,
    me: &Rc<CoroState>,
    target: &Completion,
    until: Option<&Completion>,
    what: &[u8],
    at: &'static Location<'static>,
) -> WaitEnd {
    wait_for_inlined(rt, me, target, until, what, at)
}

/// [`wait_for`], inlined into its caller: for the hot waits (a join),
/// so that the waiter resumes from the scheduler's `suspend` straight into
/// its caller's frame. The context engine's jump leaves the CPU's
/// return-stack predictor one entry out of step, so every `ret` between a
/// coroutine's resumption and its next call mispredicts (about 20 cycles
/// each); a wait loop in a function of its own is two more of them per
/// join.
#[inline(always)]
pub(crate) fn wait_for_inlined(
    rt: &Runtime,
    me: &Rc<CoroState>,
    target: &Completion,
    until: Option<&Completion>,
    what: &[u8],
    at: &'static Location<'static>,
) -> WaitEnd {
    if let Err(c) = checkpoint(me) {
        return WaitEnd::Interrupted(c);
    }
    if target.is_done() {
        return WaitEnd::Done;
    }
    if until.is_some_and(Completion::is_done) {
        return WaitEnd::Trigger;
    }
    // W4: both leave their lists when this function returns or unwinds.
    let _target = Subscription::new(target, me);
    let _until = until.map(|u| Subscription::new(u, me));
    loop {
        if let Err(c) = suspend_once(rt, me, what, at) {
            return WaitEnd::Interrupted(c);
        }
        // W2, W3: re-check after every resume.
        if target.is_done() {
            return WaitEnd::Done;
        }
        if until.is_some_and(Completion::is_done) {
            return WaitEnd::Trigger;
        }
    }
}

/// Room for `"join coroutine <id>"`: the prefix and the 20 digits of
/// `u64::MAX`.
pub(crate) const JOIN_WHAT_CAP: usize = 15 + 20;

/// Formats `"join coroutine <id>"` into `buf` (on the caller's stack: the hot
/// join path describes its wait without allocating) and returns the text,
/// ASCII. Written in place and never moved: the scheduler reads it much
/// later, while the caller is suspended.
// Out of line: called before the join suspends, so the call costs nothing
// after the resumption, and the digit loop stays out of every inlined join.
#[inline(never)]
pub(crate) fn join_what(id: u64, buf: &mut [u8; JOIN_WHAT_CAP]) -> &[u8] {
    const PREFIX: &[u8; 15] = b"join coroutine ";
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
                                2021222324252627282930313233343536373839\
                                4041424344454647484950515253545556575859\
                                6061626364656667686970717273747576777879\
                                8081828384858687888990919293949596979899";
    let pair = |n: u64| -> [u8; 2] {
        let i = (n % 100) as usize * 2;
        [PAIRS[i], PAIRS[i + 1]]
    };
    // Digits right-aligned, four per division; `at` stays above the prefix
    // (at most 20 digits), which the bound check makes plain to the
    // compiler.
    let mut at = JOIN_WHAT_CAP;
    let mut n = id;
    while n >= 10_000 && at >= PREFIX.len() + 4 {
        let four = n % 10_000;
        n /= 10_000;
        let [a, b] = pair(four / 100);
        let [c, d] = pair(four);
        at -= 4;
        buf[at..at + 4].copy_from_slice(&[a, b, c, d]);
    }
    if n >= 100 {
        let [c, d] = pair(n);
        n /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&[c, d]);
    }
    if n >= 10 {
        let [c, d] = pair(n);
        at -= 2;
        buf[at..at + 2].copy_from_slice(&[c, d]);
    } else {
        at -= 1;
        buf[at] = b'0' + n as u8;
    }
    at -= PREFIX.len();
    buf[at..at + PREFIX.len()].copy_from_slice(PREFIX);
    &buf[at..]
}

#[cfg(test)]
mod tests {
    use super::{join_what, JOIN_WHAT_CAP};

    #[test]
    fn join_what_reads_like_format() {
        for id in [
            0,
            1,
            9,
            10,
            42,
            99,
            100,
            101,
            999,
            1000,
            9999,
            10_000,
            12345,
            999_999,
            1_000_000,
            123_456_789,
            u64::MAX,
        ] {
            let mut buf = [0; JOIN_WHAT_CAP];
            let what = join_what(id, &mut buf);
            assert_eq!(what, format!("join coroutine {id}").as_bytes());
        }
    }
}
