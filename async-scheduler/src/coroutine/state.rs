//! A coroutine's lifecycle, as typed states and the transitions `enqueue`
//! and `suspend` make.
//!
//! ```text
//!  coroutine_new     enqueue          popped           suspend
//! -------------> CREATED ---> QUEUED ---------> RUNNING --------> SUSPENDED
//!                               ^  ^             |  |                 |
//!                               |  +-------------+  | entry returns   |
//!                               |  enqueue while    v                 |
//!                               |  running, then   FINISHED (freed)   |
//!                               |  suspend                            |
//!                               +------------------enqueue------------+
//! ```
//!
//! What is never undone:
//! - leaving CREATED (a coroutine starts at most once: rule C1);
//! - FINISHED (the record is freed right after the FINISH handlers: C2).
//!
//! The state is stored in the record (`Coro::state`); a RUNNING coroutine may
//! also be *in the queue* (enqueued while running: a yield, or an enqueue of
//! itself by a microtask it triggered), which `Coro::in_queue` says.

use async_abi::{
    AaStatus, AA_CORO_CREATED, AA_CORO_FINISHED, AA_CORO_QUEUED, AA_CORO_RUNNING, AA_CORO_SUSPENDED,
};

/// Where a coroutine is in its lifecycle. See the module diagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Created, never enqueued; its entry has not run.
    Created,
    /// In the run queue, for its first start or a resume.
    Queued,
    /// Running now, or inside its own `suspend` tick before it leaves.
    Running,
    /// Inside `suspend`, waiting for an `enqueue`.
    Suspended,
    /// Its entry returned; the record is about to be freed.
    Finished,
}

impl State {
    /// The `AA_CORO_*` constant for this state.
    pub(crate) fn abi(self) -> u32 {
        match self {
            State::Created => AA_CORO_CREATED,
            State::Queued => AA_CORO_QUEUED,
            State::Running => AA_CORO_RUNNING,
            State::Suspended => AA_CORO_SUSPENDED,
            State::Finished => AA_CORO_FINISHED,
        }
    }
}

/// What `enqueue` must do next, decided from the state (and the in-queue
/// flag of a running coroutine).
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Enqueue {
    /// Push it into the run queue, at the head or tail by priority; its
    /// status is the one given.
    Push,
    /// It is queued already: it keeps its place, and the status is merged
    /// with [`merge_status`].
    KeepPlace,
    /// It finished: `AA_E_INVALID`.
    Finished,
}

/// The transition `enqueue` makes from `state`. `in_queue` is the running
/// coroutine's flag (ignored in other states).
#[inline]
pub(crate) fn enqueue(state: State, in_queue: bool) -> (Enqueue, State) {
    match state {
        State::Created | State::Suspended => (Enqueue::Push, State::Queued),
        State::Queued => (Enqueue::KeepPlace, State::Queued),
        State::Running if in_queue => (Enqueue::KeepPlace, State::Running),
        State::Running => (Enqueue::Push, State::Running),
        State::Finished => (Enqueue::Finished, State::Finished),
    }
}

/// The status of a coroutine enqueued twice: the first error wins, so a
/// negative status replaces a non-negative one and nothing replaces an
/// error.
#[inline]
pub(crate) fn merge_status(current: AaStatus, new: AaStatus) -> AaStatus {
    if new < 0 && current >= 0 {
        new
    } else {
        current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_error_wins_when_enqueued_twice() {
        assert_eq!(merge_status(0, -5), -5);
        assert_eq!(merge_status(-5, -7), -5);
        assert_eq!(merge_status(-5, 0), -5);
        assert_eq!(merge_status(0, 3), 0);
    }

    #[test]
    fn enqueue_transitions() {
        assert_eq!(
            enqueue(State::Created, false),
            (Enqueue::Push, State::Queued)
        );
        assert_eq!(
            enqueue(State::Running, false),
            (Enqueue::Push, State::Running)
        );
        assert_eq!(
            enqueue(State::Running, true),
            (Enqueue::KeepPlace, State::Running)
        );
        assert_eq!(enqueue(State::Finished, false).0, Enqueue::Finished);
    }
}
