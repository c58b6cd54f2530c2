//! [`Notify`]: wake one waiting coroutine, or all of them.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::Location;

use super::queue::{enter, wait_for_grant, with_coroutine, Grantor, WaitQueue, WaitText};
use crate::core::error::Cancelled;

/// A wake-up signal between coroutines, like tokio's `Notify`: a waiter
/// calls [`notified`](Notify::notified); another coroutine calls
/// [`notify_one`](Notify::notify_one) or
/// [`notify_waiters`](Notify::notify_waiters).
///
/// `notify_one` wakes the oldest waiter, or, if nobody waits, stores one
/// permit that the next `notified` consumes at once (so a notification sent
/// just before the wait is not lost; several such notifications are one
/// permit). `notify_waiters` wakes everyone waiting now and stores nothing.
///
/// # Cancellation
///
/// `notified` is a cancellation point; a waiter cancelled before it was
/// woken takes nothing (a `notify_one` goes to the next waiter), one woken
/// just before returns `Ok` with its cancellation pending (D-29).
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use async_std_api::sync::Notify;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let ready = Rc::new(Notify::new());
///     let r = ready.clone();
///     let waiter = spawn(move || r.notified().map(|()| "woken"));
///     ready.notify_one();
///     assert_eq!(waiter.join().unwrap().unwrap(), "woken");
/// })
/// .unwrap();
/// ```
pub struct Notify {
    permit: Cell<bool>,
    waiters: RefCell<WaitQueue<()>>,
    created_at: &'static Location<'static>,
    what: WaitText,
}

impl Notify {
    /// A notify with no permit stored.
    #[track_caller]
    pub fn new() -> Notify {
        Notify {
            permit: Cell::new(false),
            waiters: RefCell::new(WaitQueue::default()),
            created_at: Location::caller(),
            what: WaitText::default(),
        }
    }

    /// Waits for a notification (or consumes the stored permit at once).
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
    pub fn notified(&self) -> Result<(), Cancelled> {
        let at = Location::caller();
        enter("Notify::notified")?;
        if self.permit.replace(false) {
            return Ok(());
        }
        let t = with_coroutine("Notify::notified", |me| {
            self.waiters.borrow_mut().push(me, ())
        });
        let what = self
            .what
            .get(|| format!("sync::Notify (created at {})", self.created_at));
        wait_for_grant(self, t, what, at)
    }

    /// Wakes the oldest waiter, or stores a permit if nobody waits.
    pub fn notify_one(&self) {
        let first = self.waiters.borrow().first().map(|(t, _)| t);
        match first {
            Some(t) => self.waiters.borrow_mut().grant(t, ()),
            None => self.permit.set(true),
        }
    }

    /// Wakes every coroutine waiting now; stores nothing.
    pub fn notify_waiters(&self) {
        let all: Vec<_> = self.waiters.borrow().iter().map(|(t, _)| t).collect();
        let mut q = self.waiters.borrow_mut();
        for t in all {
            q.grant(t, ());
        }
    }
}

impl Default for Notify {
    #[track_caller]
    fn default() -> Self {
        Notify::new()
    }
}

impl Grantor for Notify {
    type Grant = ();
    type Want = ();
    fn queue(&self) -> &RefCell<WaitQueue<()>> {
        &self.waiters
    }
    fn give_back(&self, (): ()) {
        // A woken waiter that unwound: its wake-up goes to the next one.
        self.notify_one();
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notify")
            .field("permit", &self.permit.get())
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}
