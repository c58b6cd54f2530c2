//! [`Mutex`]: mutual exclusion between coroutines, with FIFO hand-off.

use std::cell::{Cell, RefCell, RefMut};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::Location;

use super::queue::{enter, wait_for_grant, with_coroutine, Grantor, WaitQueue, WaitText};
use crate::core::error::Cancelled;

/// A lock for data shared by the coroutines of one runtime: the coroutine
/// analogue of [`std::sync::Mutex`].
///
/// [`lock`](Mutex::lock) suspends the calling coroutine (not the thread)
/// while another holds the lock. Waiters get the lock in the order they
/// asked: when the holder unlocks, the lock is *handed* to the oldest
/// waiter, so a coroutine that asks later cannot take it first (no
/// barging, unlike `std`'s). Share it with `Rc<Mutex<T>>` (the runtime is
/// single-threaded, and so is this lock: it is `!Send`).
///
/// There is no poisoning: a panic while the lock is held unlocks it (the
/// guard is dropped as the stack unwinds), and the panic is the
/// coroutine's failure, which the error flow reports.
///
/// # Cancellation
///
/// `lock` is a cancellation point. A waiter cancelled before it was handed
/// the lock leaves the queue and takes nothing; one handed the lock just
/// before its cancellation was seen gets the lock, and the cancellation
/// stays pending for its next suspension point (D-29): a lock is never
/// lost or leaked.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use async_std_api::sync::Mutex;
/// use async_std_api::{delay, run, spawn};
///
/// run(|| {
///     let total = Rc::new(Mutex::new(0));
///     let workers: Vec<_> = (0..3)
///         .map(|i| {
///             let total = total.clone();
///             spawn(move || {
///                 let mut t = total.lock().unwrap();
///                 let read = *t;
///                 delay(1).unwrap(); // holds the lock across a suspension
///                 *t = read + i;
///             })
///         })
///         .collect();
///     for w in workers {
///         w.join().unwrap();
///     }
///     assert_eq!(*total.lock().unwrap(), 0 + 1 + 2);
/// })
/// .unwrap();
/// ```
pub struct Mutex<T: ?Sized> {
    locked: Cell<bool>,
    waiters: RefCell<WaitQueue<()>>,
    created_at: &'static Location<'static>,
    what: WaitText,
    value: RefCell<T>,
}

impl<T> Mutex<T> {
    /// A new, unlocked mutex.
    #[track_caller]
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            locked: Cell::new(false),
            waiters: RefCell::new(WaitQueue::default()),
            created_at: Location::caller(),
            what: WaitText::default(),
            value: RefCell::new(value),
        }
    }

    /// The value, the mutex consumed.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks it, waiting (suspending) while another coroutine holds it.
    ///
    /// # Errors
    ///
    /// [`Cancelled`] if the calling coroutine was cancelled before it got
    /// the lock.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point (see the type's docs).
    #[track_caller]
    pub fn lock(&self) -> Result<MutexGuard<'_, T>, Cancelled> {
        let at = Location::caller();
        enter("Mutex::lock")?;
        if !self.locked.get() && self.waiters.borrow().is_empty() {
            self.locked.set(true);
            return Ok(self.guard());
        }
        let t = with_coroutine("Mutex::lock", |me| self.waiters.borrow_mut().push(me, ()));
        let what = self
            .what
            .get(|| format!("lock sync::Mutex (created at {})", self.created_at));
        wait_for_grant(self, t, what, at)?;
        // Handed over: `locked` stayed true for us.
        Ok(self.guard())
    }

    /// Locks it if nobody holds it or waits for it; never suspends.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        if self.locked.get() || !self.waiters.borrow().is_empty() {
            return None;
        }
        self.locked.set(true);
        Some(self.guard())
    }

    /// True while a coroutine holds the lock.
    pub fn is_locked(&self) -> bool {
        self.locked.get()
    }

    /// The value, through a unique borrow of the mutex (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    fn guard(&self) -> MutexGuard<'_, T> {
        MutexGuard {
            mutex: self,
            value: Some(self.value.borrow_mut()),
        }
    }

    /// Hands the lock to the oldest waiter, or unlocks.
    fn release(&self) {
        let first = self.waiters.borrow().first().map(|(t, _)| t);
        match first {
            Some(t) => self.waiters.borrow_mut().grant(t, ()),
            None => self.locked.set(false),
        }
    }
}

impl<T: ?Sized> Grantor for Mutex<T> {
    type Grant = ();
    type Want = ();
    fn queue(&self) -> &RefCell<WaitQueue<()>> {
        &self.waiters
    }
    fn give_back(&self, (): ()) {
        self.release();
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("locked", &self.locked.get())
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// Holds the lock of a [`Mutex`] and gives access to its value; dropping
/// it hands the lock to the next waiter.
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    /// The borrow of the value: only one guard exists at a time, so it
    /// never conflicts; released before the lock is handed on.
    value: Option<RefMut<'a, T>>,
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_deref().expect("present until drop")
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_deref_mut().expect("present until drop")
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        drop(self.value.take());
        self.mutex.release();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
