//! Deadlock detection and resolution.
//!
//! A deadlock is the root loop finding nothing runnable, no microtask, a
//! reactor with no visible event (`alive() == 0`, and one non-blocking
//! `run_once` that ran nothing), and live coroutines: they are all waiting
//! and nothing can wake them.
//!
//! Resolution:
//! 1. log one ERROR record through the host,
//!    `deadlock: N coroutines wait and nothing can wake them`, then one per
//!    waiter: `coroutine 3 (spawned at src/main.rs:10:5) waits at
//!    src/main.rs:12:9 for join coroutine 4` (see [`describe`]);
//! 2. resume each waiter with `AA_E_DEADLOCK` (a coroutine that was created
//!    but never enqueued starts with it, so its body never runs);
//! 3. `run` will return `AA_E_DEADLOCK` when it ends.
//!
//! A second deadlock in the same `run` means the waiters ignored the first
//! resolution: it is reported the same way, then escalated to
//! `shutdown(AA_E_SHUTDOWN)`, whose bounded rounds end the run.
//!
//! # Invariants
//!
//! - **DL1** The waiters are snapshotted before anything is called out
//!   (logging, enqueue), and enqueue never frees a record, so the snapshot
//!   stays valid (coroutine C-I1).
//!
//! # Who touches what
//!
//! The root loop only, on the loop thread.

use async_abi::{AaStatus, AA_E_DEADLOCK, AA_E_INTERNAL, AA_E_SHUTDOWN};

use crate::coroutine::{Coro, CoroPtr, State};
use crate::scheduler::Scheduler;
use crate::shutdown;

/// Resolves a deadlock (module doc).
///
/// # Errors
///
/// `AA_E_INTERNAL` if the loop went idle with live coroutines none of which
/// is waiting (a bug in the scheduler).
pub(crate) fn resolve(s: &Scheduler) -> Result<(), AaStatus> {
    let waiters = waiters(s);
    if waiters.is_empty() {
        let msg = format!(
            "scheduler idle with {} live coroutines and none waiting",
            s.live.len()
        );
        return Err(s.fail(AA_E_INTERNAL, msg));
    }
    let n = s.deadlocks.get() + 1;
    s.deadlocks.set(n);
    report(&waiters);
    if n == 1 {
        for c in waiters {
            let _ = s.enqueue(c, AA_E_DEADLOCK);
        }
    } else {
        async_abi::plugin_error!(
            "deadlock again after the waiters were resumed with AA_E_DEADLOCK: shutting down"
        );
        shutdown::start(s, AA_E_SHUTDOWN);
    }
    Ok(())
}

/// The live coroutines that wait: suspended, or created and never enqueued
/// (DL1: a snapshot).
pub(crate) fn waiters(s: &Scheduler) -> Vec<CoroPtr> {
    s.live
        .collect(|c| matches!(c.state.get(), State::Suspended | State::Created))
}

fn report(waiters: &[CoroPtr]) {
    match waiters.len() {
        1 => async_abi::plugin_error!("deadlock: 1 coroutine waits and nothing can wake it"),
        n => async_abi::plugin_error!("deadlock: {n} coroutines wait and nothing can wake them"),
    }
    for c in waiters {
        async_abi::plugin_error!("{}", describe(c.get()));
    }
}

/// One line about a waiting coroutine: id, spawn location, wait location
/// and what it waits for.
pub(crate) fn describe(c: &Coro) -> String {
    let file = c.spawn_file();
    let mut line = if file.is_empty() {
        format!("coroutine {} (spawned at an unknown place)", c.id)
    } else {
        format!(
            "coroutine {} (spawned at {file}:{}:{})",
            c.id, c.spawn.line, c.spawn.column
        )
    };
    if c.state.get() == State::Created {
        line.push_str(" never started");
        return line;
    }
    match c.wait_view() {
        Some(w) => {
            if w.file.is_empty() {
                line.push_str(" waits at an unknown place");
            } else {
                line.push_str(&format!(" waits at {}:{}:{}", w.file, w.line, w.column));
            }
            if !w.what.is_empty() {
                line.push_str(&format!(" for {}", w.what));
            }
        }
        None => line.push_str(" waits at an unknown place"),
    }
    line
}
