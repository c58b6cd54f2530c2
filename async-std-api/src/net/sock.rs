//! [`Sock`]: a descriptor the host owns and closes through the reactor.

use std::marker::PhantomData;
use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::rc::Rc;

use super::close;

/// A socket (or any descriptor) owned by the host; dropped through the
/// reactor's close, so a reused descriptor number is never mistaken for
/// this one.
///
/// `!Send`: the reactor of the thread that used it may keep state about its
/// descriptor until it is closed through that same reactor.
pub(crate) struct Sock<T: Into<OwnedFd> = socket2::Socket>(Option<T>, PhantomData<Rc<()>>);

impl<T: Into<OwnedFd>> Sock<T> {
    pub(crate) fn new(s: T) -> Sock<T> {
        Sock(Some(s), PhantomData)
    }

    pub(crate) fn get(&self) -> &T {
        self.0.as_ref().expect("present until drop")
    }

    /// Gives the descriptor back without closing it (`into_std`). The
    /// caller's reactor state for it (a readiness watch) must be gone.
    pub(crate) fn into_inner(mut self) -> T {
        self.0.take().expect("present until drop")
    }
}

impl<T: Into<OwnedFd>> Deref for Sock<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.get()
    }
}

impl<T: Into<OwnedFd> + AsRawFd> AsRawFd for Sock<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.get().as_raw_fd()
    }
}

impl<T: Into<OwnedFd> + AsFd> AsFd for Sock<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.get().as_fd()
    }
}

impl<T: Into<OwnedFd>> Drop for Sock<T> {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            close(s.into());
        }
    }
}
