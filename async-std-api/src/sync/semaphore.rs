//! [`Semaphore`]: a count of permits, handed out in arrival order.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::Location;

use super::queue::{enter, wait_for_grant, with_coroutine, Grantor, WaitQueue, WaitText};
use crate::core::error::Cancelled;

/// A number of permits that coroutines acquire and give back: a limit on
/// how many do something at once (connections to a database, requests in
/// flight), like tokio's `Semaphore`.
///
/// Waiters are served in arrival order: a waiter that wants 3 permits at
/// the head of the queue is not overtaken by a later one that wants 1,
/// even if 1 is free (no starvation of large requests). Permits come back
/// when their [`SemaphorePermit`] is dropped (or with
/// [`add_permits`](Semaphore::add_permits)).
///
/// # Cancellation
///
/// `acquire` is a cancellation point. A waiter cancelled before its
/// permits were handed over takes none (and the waiters behind it are
/// reconsidered); one handed its permits just before keeps them, and the
/// cancellation stays pending (D-29). Permits are never lost or leaked.
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use async_std_api::sync::Semaphore;
/// use async_std_api::{delay, run, spawn};
///
/// run(|| {
///     let limit = Rc::new(Semaphore::new(2));
///     let (now, peak) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
///     let jobs: Vec<_> = (0..6)
///         .map(|_| {
///             let (limit, now, peak) = (limit.clone(), now.clone(), peak.clone());
///             spawn(move || {
///                 let _permit = limit.acquire().unwrap();
///                 now.set(now.get() + 1);
///                 peak.set(peak.get().max(now.get()));
///                 delay(2).unwrap();
///                 now.set(now.get() - 1);
///             })
///         })
///         .collect();
///     for j in jobs {
///         j.join().unwrap();
///     }
///     assert_eq!(peak.get(), 2);
///     assert_eq!(limit.available_permits(), 2);
/// })
/// .unwrap();
/// ```
pub struct Semaphore {
    permits: Cell<usize>,
    waiters: RefCell<WaitQueue<usize, usize>>,
    created_at: &'static Location<'static>,
    what: WaitText,
}

impl Semaphore {
    /// A semaphore with `permits` permits.
    #[track_caller]
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            permits: Cell::new(permits),
            waiters: RefCell::new(WaitQueue::default()),
            created_at: Location::caller(),
            what: WaitText::default(),
        }
    }

    /// Acquires one permit, waiting while none is free.
    ///
    /// # Errors
    ///
    /// [`Cancelled`] if the calling coroutine was cancelled before it got
    /// the permit.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point (see the type's docs).
    #[track_caller]
    pub fn acquire(&self) -> Result<SemaphorePermit<'_>, Cancelled> {
        self.acquire_many_at(1, Location::caller())
    }

    /// Acquires `n` permits at once (all or none), waiting while fewer are
    /// free. `n == 0` succeeds at once.
    ///
    /// # Errors
    ///
    /// As [`acquire`](Semaphore::acquire).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// As [`acquire`](Semaphore::acquire).
    #[track_caller]
    pub fn acquire_many(&self, n: usize) -> Result<SemaphorePermit<'_>, Cancelled> {
        self.acquire_many_at(n, Location::caller())
    }

    #[track_caller]
    fn acquire_many_at(
        &self,
        n: usize,
        at: &'static Location<'static>,
    ) -> Result<SemaphorePermit<'_>, Cancelled> {
        enter("Semaphore::acquire")?;
        if let Some(p) = self.try_acquire_many(n) {
            return Ok(p);
        }
        let t = with_coroutine("Semaphore::acquire", |me| {
            self.waiters.borrow_mut().push(me, n)
        });
        let what = self.what.get(|| {
            format!(
                "acquire permits of sync::Semaphore (created at {})",
                self.created_at
            )
        });
        let got = wait_for_grant(self, t, what, at)?;
        Ok(SemaphorePermit { sem: self, n: got })
    }

    /// Acquires one permit if one is free and nobody waits; never suspends.
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.try_acquire_many(1)
    }

    /// Acquires `n` permits if they are free and nobody waits.
    pub fn try_acquire_many(&self, n: usize) -> Option<SemaphorePermit<'_>> {
        if !self.waiters.borrow().is_empty() || self.permits.get() < n {
            return None;
        }
        self.permits.set(self.permits.get() - n);
        Some(SemaphorePermit { sem: self, n })
    }

    /// The permits free now.
    pub fn available_permits(&self) -> usize {
        self.permits.get()
    }

    /// Adds `n` permits (and hands them to waiters, oldest first).
    pub fn add_permits(&self, n: usize) {
        self.permits.set(self.permits.get() + n);
        self.serve();
    }

    /// Grants waiters from the head while the head's request fits.
    fn serve(&self) {
        loop {
            let head = self.waiters.borrow().first().map(|(t, &n)| (t, n));
            match head {
                Some((t, n)) if n <= self.permits.get() => {
                    self.permits.set(self.permits.get() - n);
                    self.waiters.borrow_mut().grant(t, n);
                }
                _ => return,
            }
        }
    }
}

impl Grantor for Semaphore {
    type Grant = usize;
    type Want = usize;
    fn queue(&self) -> &RefCell<WaitQueue<usize, usize>> {
        &self.waiters
    }
    fn give_back(&self, n: usize) {
        self.add_permits(n);
    }
    fn left(&self) {
        // A large request at the head may have gone: the next may fit.
        self.serve();
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("permits", &self.permits.get())
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// Permits acquired from a [`Semaphore`]; dropping it gives them back.
#[must_use = "dropping the permit gives it back at once"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    n: usize,
}

impl SemaphorePermit<'_> {
    /// How many permits it holds.
    pub fn num_permits(&self) -> usize {
        self.n
    }

    /// Keeps the permits out of the semaphore for good (they are not given
    /// back).
    pub fn forget(mut self) {
        self.n = 0;
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        if self.n > 0 {
            self.sem.add_permits(self.n);
        }
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("permits", &self.n)
            .finish()
    }
}
