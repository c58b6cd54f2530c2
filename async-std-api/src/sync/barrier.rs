//! [`Barrier`]: n coroutines wait until all have arrived.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::Location;

use super::queue::{enter, wait_for_grant, with_coroutine, Grantor, WaitQueue, WaitText};
use crate::core::error::Cancelled;

/// A meeting point for `n` coroutines: each [`wait`](Barrier::wait)s until
/// `n` have arrived, then all go on, and the barrier is ready for the next
/// round (the coroutine analogue of [`std::sync::Barrier`]).
///
/// # Cancellation
///
/// `wait` is a cancellation point; a coroutine cancelled while it waits
/// leaves the round (it no longer counts as arrived). One released just
/// before returns `Ok` with its cancellation pending (D-29).
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use async_std_api::sync::Barrier;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let barrier = Rc::new(Barrier::new(3));
///     let others: Vec<_> = (0..2)
///         .map(|_| {
///             let b = barrier.clone();
///             spawn(move || b.wait().unwrap().is_leader())
///         })
///         .collect();
///     let mine = barrier.wait().unwrap().is_leader();
///     let theirs = others.into_iter().map(|h| h.join().unwrap()).filter(|&l| l).count();
///     assert_eq!(theirs + usize::from(mine), 1, "one leader per round");
/// })
/// .unwrap();
/// ```
pub struct Barrier {
    n: usize,
    arrived: Cell<usize>,
    waiters: RefCell<WaitQueue<()>>,
    created_at: &'static Location<'static>,
    what: WaitText,
}

/// What [`Barrier::wait`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierWaitResult(bool);

impl BarrierWaitResult {
    /// True for exactly one coroutine of each round: the last to arrive.
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

impl Barrier {
    /// A barrier for `n` coroutines (`0` and `1` never wait).
    #[track_caller]
    pub fn new(n: usize) -> Barrier {
        Barrier {
            n,
            arrived: Cell::new(0),
            waiters: RefCell::new(WaitQueue::default()),
            created_at: Location::caller(),
            what: WaitText::default(),
        }
    }

    /// Waits until `n` coroutines have called `wait` in this round.
    ///
    /// # Errors
    ///
    /// [`Cancelled`] if the calling coroutine was cancelled first.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point (see the type's docs).
    #[track_caller]
    pub fn wait(&self) -> Result<BarrierWaitResult, Cancelled> {
        let at = Location::caller();
        enter("Barrier::wait")?;
        let arrived = self.arrived.get() + 1;
        if arrived >= self.n {
            self.arrived.set(0);
            let all: Vec<_> = self.waiters.borrow().iter().map(|(t, _)| t).collect();
            let mut q = self.waiters.borrow_mut();
            for t in all {
                q.grant(t, ());
            }
            return Ok(BarrierWaitResult(true));
        }
        self.arrived.set(arrived);
        let t = with_coroutine("Barrier::wait", |me| self.waiters.borrow_mut().push(me, ()));
        let what = self.what.get(|| {
            format!(
                "sync::Barrier of {} (created at {})",
                self.n, self.created_at
            )
        });
        wait_for_grant(self, t, what, at).map(|()| BarrierWaitResult(false))
    }
}

impl Grantor for Barrier {
    type Grant = ();
    type Want = ();
    fn queue(&self) -> &RefCell<WaitQueue<()>> {
        &self.waiters
    }
    fn give_back(&self, (): ()) {
        // Released, then unwound: the round is over either way.
    }
    fn left(&self) {
        self.arrived.set(self.arrived.get().saturating_sub(1));
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .field("arrived", &self.arrived.get())
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}
