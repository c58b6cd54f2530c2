//! [`RwLock`]: many readers or one writer, served in arrival order.

use std::cell::{Cell, Ref, RefCell, RefMut};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::Location;

use super::queue::{enter, wait_for_grant, with_coroutine, Grantor, WaitQueue, WaitText};
use crate::core::error::Cancelled;

/// What a waiter of a [`RwLock`] wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// A reader-writer lock for data shared by the coroutines of one runtime:
/// the coroutine analogue of [`std::sync::RwLock`].
///
/// Any number of readers, or one writer. Waiters are served in arrival
/// order: once a writer waits, readers that come after it wait behind it
/// (a stream of readers cannot starve a writer), and when a writer leaves,
/// the readers at the head of the queue all get in together.
///
/// # Cancellation
///
/// `read` and `write` are cancellation points, with the [`Mutex`](super::Mutex)'s
/// rule: a waiter cancelled before it was let in takes nothing; one let in
/// just before keeps the lock and its cancellation stays pending (D-29).
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use async_std_api::sync::RwLock;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let config = Rc::new(RwLock::new(String::from("v1")));
///     let c = config.clone();
///     let reader = spawn(move || c.read().unwrap().clone());
///     *config.write().unwrap() = String::from("v2");
///     // The writer came first: the reader sees its write.
///     assert_eq!(reader.join().unwrap(), "v2");
/// })
/// .unwrap();
/// ```
pub struct RwLock<T: ?Sized> {
    readers: Cell<usize>,
    writer: Cell<bool>,
    waiters: RefCell<WaitQueue<Access, Access>>,
    created_at: &'static Location<'static>,
    read_what: WaitText,
    write_what: WaitText,
    value: RefCell<T>,
}

impl<T> RwLock<T> {
    /// A new, unlocked lock.
    #[track_caller]
    pub fn new(value: T) -> RwLock<T> {
        RwLock {
            readers: Cell::new(0),
            writer: Cell::new(false),
            waiters: RefCell::new(WaitQueue::default()),
            created_at: Location::caller(),
            read_what: WaitText::default(),
            write_what: WaitText::default(),
            value: RefCell::new(value),
        }
    }

    /// The value, the lock consumed.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Locks it for reading, waiting while a writer holds it or waits.
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
    pub fn read(&self) -> Result<RwLockReadGuard<'_, T>, Cancelled> {
        let at = Location::caller();
        enter("RwLock::read")?;
        if let Some(g) = self.try_read() {
            return Ok(g);
        }
        self.wait(Access::Read, at)?;
        Ok(self.read_guard())
    }

    /// Locks it for writing, waiting while anyone holds it or waits.
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
    pub fn write(&self) -> Result<RwLockWriteGuard<'_, T>, Cancelled> {
        let at = Location::caller();
        enter("RwLock::write")?;
        if let Some(g) = self.try_write() {
            return Ok(g);
        }
        self.wait(Access::Write, at)?;
        Ok(self.write_guard())
    }

    /// Locks it for reading if no writer holds it or waits; never suspends.
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        if self.writer.get() || !self.waiters.borrow().is_empty() {
            return None;
        }
        self.readers.set(self.readers.get() + 1);
        Some(self.read_guard())
    }

    /// Locks it for writing if nobody holds it or waits; never suspends.
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        if self.writer.get() || self.readers.get() > 0 || !self.waiters.borrow().is_empty() {
            return None;
        }
        self.writer.set(true);
        Some(self.write_guard())
    }

    /// The value, through a unique borrow of the lock.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    #[track_caller]
    fn wait(&self, access: Access, at: &'static Location<'static>) -> Result<(), Cancelled> {
        let t = with_coroutine("RwLock", |me| self.waiters.borrow_mut().push(me, access));
        let (text, verb) = match access {
            Access::Read => (&self.read_what, "read-lock"),
            Access::Write => (&self.write_what, "write-lock"),
        };
        let what = text.get(|| format!("{verb} sync::RwLock (created at {})", self.created_at));
        wait_for_grant(self, t, what, at).map(|_| ())
    }

    fn read_guard(&self) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard {
            lock: self,
            value: Some(self.value.borrow()),
        }
    }

    fn write_guard(&self) -> RwLockWriteGuard<'_, T> {
        RwLockWriteGuard {
            lock: self,
            value: Some(self.value.borrow_mut()),
        }
    }

    /// Lets in what the head of the queue can have: one writer, or every
    /// reader up to the next writer.
    fn serve(&self) {
        loop {
            let head = self.waiters.borrow().first().map(|(t, &a)| (t, a));
            match head {
                Some((t, Access::Write)) if !self.writer.get() && self.readers.get() == 0 => {
                    self.writer.set(true);
                    self.waiters.borrow_mut().grant(t, Access::Write);
                    return;
                }
                Some((t, Access::Read)) if !self.writer.get() => {
                    self.readers.set(self.readers.get() + 1);
                    self.waiters.borrow_mut().grant(t, Access::Read);
                }
                _ => return,
            }
        }
    }

    fn release(&self, access: Access) {
        match access {
            Access::Read => self.readers.set(self.readers.get() - 1),
            Access::Write => self.writer.set(false),
        }
        self.serve();
    }
}

impl<T: ?Sized> Grantor for RwLock<T> {
    type Grant = Access;
    type Want = Access;
    fn queue(&self) -> &RefCell<WaitQueue<Access, Access>> {
        &self.waiters
    }
    fn give_back(&self, a: Access) {
        self.release(a);
    }
    fn left(&self) {
        // A writer at the head that gave up lets the readers behind it in.
        self.serve();
    }
}

impl<T: ?Sized> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock")
            .field("readers", &self.readers.get())
            .field("writer", &self.writer.get())
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// Read access to a [`RwLock`]'s value; dropping it releases it.
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    value: Option<Ref<'a, T>>,
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_deref().expect("present until drop")
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        drop(self.value.take());
        self.lock.release(Access::Read);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Write access to a [`RwLock`]'s value; dropping it releases it.
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    value: Option<RefMut<'a, T>>,
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_deref().expect("present until drop")
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_deref_mut().expect("present until drop")
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        drop(self.value.take());
        self.lock.release(Access::Write);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
