//! [`Awaitable`]: what [`join_until`](JoinHandle::join_until) and
//! the other `*_until` waits accept as their trigger.

use super::coroutine::Coroutine;
use super::failure::Failure;
use super::join::JoinHandle;
use super::state::{CoroState, Outcome};
use super::waiters::Completion;

// The sealed trait names a crate-private type on purpose: nobody outside
// can implement or call it (STYLE S1: tiny public surface).
#[allow(private_interfaces)]
pub(crate) mod sealed {
    /// The host-side view of an awaitable: a one-shot completion.
    pub trait Sealed {
        #[doc(hidden)]
        fn completion(&self) -> &crate::core::waiters::Completion;
        #[doc(hidden)]
        fn describe(&self) -> String;
        /// The failure this awaitable completed with, if it failed: a
        /// waiter whose until-trigger failed reports it as the cause (D-16).
        #[doc(hidden)]
        fn failure(&self) -> Option<crate::core::failure::Failure> {
            None
        }
    }
}

/// Something a coroutine can wait for, once: the RFC's `Awaitable`.
///
/// Implemented by [`Timeout`](crate::time::Timeout),
/// [`JoinHandle`](JoinHandle) and [`Coroutine`](Coroutine).
/// A value completes once and stays completed (R-CO7), so using it as a
/// trigger again gives the same answer at once.
///
/// The trait is sealed for now (it cannot be implemented outside this
/// crate): its contract with the scheduler is internal and still moving.
/// Futures, channels and signals will implement it here.
pub trait Awaitable: sealed::Sealed {
    /// True once it has completed.
    fn is_completed(&self) -> bool {
        self.completion().is_done()
    }
}

#[allow(private_interfaces)]
impl<T> sealed::Sealed for JoinHandle<T> {
    fn completion(&self) -> &Completion {
        &self.coroutine_state().done
    }
    fn describe(&self) -> String {
        format!("coroutine {}", self.coroutine_state().id())
    }
    fn failure(&self) -> Option<Failure> {
        failure_of(self.coroutine_state())
    }
}

impl<T> Awaitable for JoinHandle<T> {}

#[allow(private_interfaces)]
impl sealed::Sealed for Coroutine {
    fn completion(&self) -> &Completion {
        &self.state.done
    }
    fn describe(&self) -> String {
        format!("coroutine {}", self.state.id())
    }
    fn failure(&self) -> Option<Failure> {
        failure_of(&self.state)
    }
}

fn failure_of(state: &CoroState) -> Option<Failure> {
    state
        .with_outcome(|o| match o {
            Outcome::Failed(f) => Some(f.clone()),
            _ => None,
        })
        .flatten()
}

impl Awaitable for Coroutine {}
