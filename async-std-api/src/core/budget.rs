//! The cooperative budget: a coroutine whose operations keep completing
//! without suspending is made to give the loop back, so one busy
//! connection cannot starve the others, and a retry loop over a failing
//! call (an `accept` that keeps failing with `EMFILE`) cannot starve the
//! signal handler that would stop it. tokio's `coop` budget is the model.
//!
//! Rules:
//! - **B1** Each time a coroutine gets control (it starts, or a suspension
//!   returns) its budget is [`BUDGET`] operations (`core::runtime::ffi::current`:
//!   one store on the switch path).
//! - **B2** Every operation that may complete without suspending (an I/O
//!   request: success or error, whatever the reactor) takes one unit first;
//!   with none left, it first [`give_back`]s the loop, then proceeds.
//! - **B3** Giving the loop back is a *suspension until the reactor has
//!   been polled*, not a plain yield: a zero-delay timer wakes the
//!   coroutine, and timers fire only when the reactor runs, so the events
//!   that arrived meanwhile (another connection's data, a signal) are seen
//!   and their coroutines queued; then one yield puts this one behind them
//!   (the timer may have fired first in that poll). The timer is
//!   ordinary reactor work, so this holds for any scheduler and reactor
//!   behind the ABI.
//! - **B4** It is a cancellation point like the operation it precedes: a
//!   cancellation (or shutdown, or deadlock) delivered there ends the
//!   operation before it was submitted.

use std::cell::Cell;
use std::panic::Location;
use std::rc::Rc;

use async_abi::{AA_E_CANCELLED, AA_E_DEADLOCK, AA_E_SHUTDOWN};

use super::runtime::{self, io::Interrupt, Runtime};
use super::state::CoroState;

/// Operations a coroutine may complete in a row without suspending (B1).
/// tokio's is 128 polls; each of ours is at least one system call, often
/// moving a few KiB, and 64 of them keep a streaming connection's turn near
/// 100 µs: the measured small-echo round trip beside one (`cargo xtask
/// bench -- fairness`) was a median of 170 µs at 128 and 106 µs at 64.
pub(crate) const BUDGET: u32 = 64;

/// B2: takes a unit of the running coroutine's budget; with none left,
/// gives the loop back first (B3). `Err` if the coroutine was interrupted
/// there (B4).
#[inline]
pub(crate) fn spend(
    rt: &Runtime,
    me: &Rc<CoroState>,
    at: &'static Location<'static>,
) -> Result<(), Interrupt> {
    if runtime::take_budget() {
        return Ok(());
    }
    give_back(rt, me, at)
}

/// B3: suspends `me` until the reactor has run once (a zero-delay timer).
#[cold]
#[inline(never)]
pub(crate) fn give_back(
    rt: &Runtime,
    me: &Rc<CoroState>,
    at: &'static Location<'static>,
) -> Result<(), Interrupt> {
    let fired = Rc::new(Cell::new(false));
    let (f, who) = (fired.clone(), me.clone());
    let timer = rt.reactor.timer(
        0,
        Box::new(move |_status| {
            f.set(true);
            runtime::wake(&who);
        }),
    );
    let Ok(timer) = timer else {
        // No timer (a reactor out of memory): a plain yield still lets the
        // others run.
        return resumed(me, rt.sched.yield_now(me, b"cooperative yield", at));
    };
    while !fired.get() {
        resumed(me, rt.sched.suspend(me, b"cooperative yield", at))?;
    }
    drop(timer);
    // The timer may fire in the same poll as the I/O it was meant to let
    // through, and ahead of it: one yield lets the coroutines that poll
    // woke run before this one takes another budget.
    resumed(me, rt.sched.yield_now(me, b"cooperative yield", at))
}

/// B4: what a resume status means here (a stale wake-up goes on waiting).
fn resumed(me: &CoroState, status: i32) -> Result<(), Interrupt> {
    match status {
        AA_E_CANCELLED if me.take_pending_cancel().is_some() => Err(Interrupt::Cancelled),
        AA_E_SHUTDOWN => Err(Interrupt::Shutdown),
        AA_E_DEADLOCK => Err(Interrupt::Deadlock),
        _ => Ok(()),
    }
}
