//! Shutdown: every live coroutine is resumed (or started) with the reason,
//! until none is left.
//!
//! 1. [`start`] records the reason and enqueues every live coroutine except
//!    the running one with it (`enqueue` semantics: the first error wins, so
//!    one already queued with `AA_E_CANCELLED` keeps it). One that never
//!    started starts with the reason, so the host never runs its body (C1).
//!    A coroutine that kept an earlier error still *owes* the reason: its id
//!    is remembered (`shutdown_owed`).
//! 2. Coroutines created from then on are enqueued with the reason at
//!    creation (`Scheduler::spawn`).
//! 3. When the root loop finds nothing runnable, every coroutine that owes
//!    the reason and is suspended again is resumed with it
//!    ([`deliver_owed`]), before the loop blocks in the reactor. So every
//!    live coroutine is resumed with the reason at least once, as the ABI
//!    says, even one that was queued with a cancellation when shutdown came
//!    and then waited on something that keeps the reactor alive (a long
//!    timer): without this it would wait there and `run` would not end until
//!    the timer fired.
//! 4. When the root loop goes *idle* (nothing runnable, no microtask, no
//!    visible reactor event, one non-blocking poll that ran nothing) while
//!    coroutines still wait, [`idle_round`] resumes them with the reason
//!    again. That replaces deadlock detection during shutdown.
//! 5. Termination: rounds that end no coroutine are counted; after
//!    [`MAX_IDLE_ROUNDS`] of them, the loop gives up: it logs an error naming
//!    every coroutine still waiting, and `run` returns `AA_E_BUSY` (they are
//!    still alive, so `destroy` refuses too).
//!
//! Apart from step 3, while the reactor has visible events, the loop keeps
//! blocking in it as usual: a coroutine that cancelled its I/O on shutdown
//! waits there for the cancellation to complete (the host's rule), and it
//! is the host's job to cancel what its coroutines wait for.
//!
//! # Invariants
//!
//! - **H-I1** `Scheduler::shutdown` only goes from `None` to `Some`; the
//!   first reason is the one new coroutines start with.
//! - **H-I2** `shutdown_owed` holds coroutine ids, never pointers: an owing
//!   coroutine may finish (its record freed or reused) before step 3, and
//!   ids are never reused, so a stale id matches no live coroutine.
//!
//! # Who touches what
//!
//! `start` runs from the `shutdown` slot (in or outside `run`, inside a
//! coroutine or not) or from deadlock escalation; `idle_round` from the root
//! loop only.

use async_abi::{AaStatus, AA_E_BUSY, AA_E_INVALID, AA_OK};

use crate::coroutine::State;
use crate::deadlock;
use crate::scheduler::Scheduler;

/// Idle rounds in a row that end no coroutine before shutdown gives up.
pub(crate) const MAX_IDLE_ROUNDS: u32 = 16;

/// The `shutdown` slot (step 1).
///
/// # Errors
///
/// `AA_E_INVALID` for a non-negative reason.
pub(crate) fn start(s: &Scheduler, reason: AaStatus) -> AaStatus {
    if reason >= 0 {
        return AA_E_INVALID;
    }
    if s.shutdown.get().is_none() {
        s.shutdown.set(Some(reason));
        s.shutdown_rounds.set(0);
        s.shutdown_live.set(s.live.len());
    }
    let running = s.current.get();
    let all = s
        .live
        .collect(|c| c.state.get() != State::Finished && c.state.get() != State::Running);
    for c in all {
        if Some(c) != running {
            let _ = s.enqueue(c, reason);
            if c.get().status.get() != reason {
                // Step 1: an earlier error was kept; the reason is owed.
                s.shutdown_owed.borrow_mut().push(c.get().id);
            }
        }
    }
    AA_OK
}

/// Step 3: resumes with the shutdown reason every suspended coroutine that
/// kept an earlier error in [`start`]; whether it resumed any. Called by the
/// root loop when nothing is runnable, so an owing coroutine is suspended or
/// finished by then, and the list is emptied.
pub(crate) fn deliver_owed(s: &Scheduler) -> bool {
    let Some(reason) = s.shutdown.get() else {
        return false;
    };
    let owed = s.shutdown_owed.take();
    if owed.is_empty() {
        return false;
    }
    let waiters = s
        .live
        .collect(|c| c.state.get() == State::Suspended && owed.contains(&c.id));
    for c in &waiters {
        let _ = s.enqueue(*c, reason);
    }
    !waiters.is_empty()
}

/// Steps 4 and 5: resumes the waiters with `reason` again, or gives up.
///
/// # Errors
///
/// `AA_E_BUSY` when shutdown gives up (step 5).
pub(crate) fn idle_round(s: &Scheduler, reason: AaStatus) -> Result<(), AaStatus> {
    let live = s.live.len();
    if live < s.shutdown_live.get() {
        s.shutdown_rounds.set(0);
    }
    s.shutdown_live.set(live);
    let rounds = s.shutdown_rounds.get() + 1;
    s.shutdown_rounds.set(rounds);
    let waiters = deadlock::waiters(s);
    if rounds > MAX_IDLE_ROUNDS {
        let still = match waiters.len() {
            1 => "1 coroutine still waits".to_owned(),
            n => format!("{n} coroutines still wait"),
        };
        let msg = format!(
            "shutdown: giving up after {MAX_IDLE_ROUNDS} idle rounds of resuming with status \
             {reason}: {still}"
        );
        let status = s.fail(AA_E_BUSY, msg);
        for c in &waiters {
            async_abi::plugin_error!("{}", deadlock::describe(c.get()));
        }
        return Err(status);
    }
    for c in waiters {
        let _ = s.enqueue(c, reason);
    }
    Ok(())
}
