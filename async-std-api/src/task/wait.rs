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

use async_abi::{AA_E_CANCELLED, AA_E_DEADLOCK, AA_E_SHUTDOWN, AA_OK};

use super::error::Cancelled;
use super::state::{Completion, CoroState, Subscription};
use crate::runtime::{self, Runtime};

/// The payload that unwinds a coroutine's stack when the runtime shuts
/// down. Raised with `resume_unwind` (no panic hook, nothing printed) and
/// caught by the coroutine's entry.
pub(crate) struct ForcedUnwind;

/// Unwinds the current coroutine's stack (shutdown).
pub(crate) fn forced_unwind() -> ! {
    std::panic::resume_unwind(Box::new(ForcedUnwind))
}

/// The runtime and the running coroutine.
///
/// # Panics
///
/// Outside a coroutine, with a message naming `what` and the fix.
#[track_caller]
pub(crate) fn me(what: &str) -> (Rc<Runtime>, Rc<CoroState>) {
    let rt = runtime::current().unwrap_or_else(|| {
        panic!(
            "{what} called outside a coroutine runtime: run the program inside async_std_api::run"
        )
    });
    let me = rt.sched.current().unwrap_or_else(|| {
        panic!("{what} called outside a coroutine: call it from a coroutine of async_std_api::run")
    });
    (rt, me)
}

/// W1: delivers a pending cancellation.
pub(crate) fn checkpoint(me: &CoroState) -> Result<(), Cancelled> {
    match me.take_pending_cancel() {
        Some(c) => Err(c),
        None => Ok(()),
    }
}

/// Suspends once and turns the resume status into the host's policy:
/// `AA_E_CANCELLED` delivers a pending cancellation (a stale one is a
/// spurious wake-up), `AA_E_SHUTDOWN` unwinds, `AA_E_DEADLOCK` is a
/// cancellation with cause `Deadlock`.
pub(crate) fn suspend_once(
    rt: &Runtime,
    me: &CoroState,
    what: &str,
    at: &'static Location<'static>,
) -> Result<(), Cancelled> {
    match rt.sched.suspend(what, at) {
        AA_OK => Ok(()),
        AA_E_CANCELLED => checkpoint(me),
        AA_E_SHUTDOWN => forced_unwind(),
        AA_E_DEADLOCK => Err(me.deadlocked()),
        s if s > 0 => Ok(()),
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
}

/// Waits until `target` completes, or `until` does, or the waiter is
/// cancelled (W1-W4).
pub(crate) fn wait_for(
    rt: &Runtime,
    me: &Rc<CoroState>,
    target: &Completion,
    until: Option<&Completion>,
    what: &str,
    at: &'static Location<'static>,
) -> WaitEnd {
    if let Err(c) = checkpoint(me) {
        return WaitEnd::Interrupted(c);
    }
    let mut subs: Option<(Subscription<'_>, Option<Subscription<'_>>)> = None;
    loop {
        if target.is_done() {
            return WaitEnd::Done;
        }
        if until.is_some_and(Completion::is_done) {
            return WaitEnd::Trigger;
        }
        if subs.is_none() {
            subs = Some((
                Subscription::new(target, me.clone()),
                until.map(|u| Subscription::new(u, me.clone())),
            ));
        }
        if let Err(c) = suspend_once(rt, me, what, at) {
            return WaitEnd::Interrupted(c);
        }
    }
}
