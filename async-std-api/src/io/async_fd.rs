//! [`Async`]: any descriptor, driven by readiness.

use std::cell::OnceCell;
use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::panic::Location;

use crate::core::readiness::{Direction, Readiness};
use crate::core::wait::with_me;

/// A non-blocking descriptor made by anyone (another crate's socket, a
/// pipe, a TTY, an eventfd) driven by the reactor's readiness reports, so
/// its blocking-style calls suspend the coroutine instead of the thread.
///
/// The pattern is smol's `Async`: try the operation; on
/// [`WouldBlock`](io::ErrorKind::WouldBlock) wait until the reactor says
/// the descriptor is ready, then try again. [`read_with`](Async::read_with)
/// and [`write_with`](Async::write_with) do that around any closure;
/// [`Read`] and [`Write`] are implemented on top when `T` has them, so
/// `std::io` code runs unchanged.
///
/// [`Async::new`] puts the descriptor in non-blocking mode. The watch is
/// made on the first wait, on the runtime of the calling thread; like
/// every handle of this crate an `Async` belongs to that thread (`!Send`).
/// Dropping it stops the watch and drops `T` (which closes the
/// descriptor if `T` owns it); [`into_inner`](Async::into_inner) stops the
/// watch and gives `T` back, still non-blocking.
///
/// # Backend differences
///
/// Needs the reactor's readiness watches (`AA_CAP_POLL`; both built-in
/// reactors have them). On a reactor without, a wait fails with an
/// [`io::Error`] of kind [`Unsupported`](io::ErrorKind::Unsupported)
/// naming the reactor and the capability. Regular files are never ready
/// in this sense (the kernel reports them always ready, or refuses to
/// watch them): use [`crate::spawn_blocking`] or a file API for those.
///
/// # Examples
///
/// A Unix socket pair made by std, driven by coroutines:
///
/// ```
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
/// use async_std_api::io::Async;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let (a, b) = UnixStream::pair().unwrap();
///     let (mut a, mut b) = (Async::new(a).unwrap(), Async::new(b).unwrap());
///     let reader = spawn(move || {
///         let mut buf = [0u8; 5];
///         b.read_exact(&mut buf).unwrap(); // suspends until the data is there
///         buf
///     });
///     a.write_all(b"hello").unwrap();
///     assert_eq!(&reader.join().unwrap(), b"hello");
/// })
/// .unwrap();
/// ```
pub struct Async<T: AsFd> {
    /// Declared before `io`: the watch goes before the descriptor.
    readiness: OnceCell<Readiness>,
    io: Option<T>,
}

impl<T: AsFd> Async<T> {
    /// Wraps `io`, putting its descriptor in non-blocking mode.
    ///
    /// # Errors
    ///
    /// The operating system's error setting the mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::io::Async;
    ///
    /// let (r, _w) = std::io::pipe().unwrap();
    /// let r = Async::new(r).unwrap();
    /// let _: &std::io::PipeReader = r.get_ref();
    /// ```
    pub fn new(io: T) -> io::Result<Async<T>> {
        // FIONBIO works on any descriptor, not only sockets.
        socket2::SockRef::from(&io).set_nonblocking(true)?;
        Ok(Async::new_nonblocking(io))
    }

    /// Wraps `io`, whose descriptor the caller has already made
    /// non-blocking. A blocking descriptor here blocks the whole thread on
    /// its first call that cannot complete.
    pub fn new_nonblocking(io: T) -> Async<T> {
        Async {
            readiness: OnceCell::new(),
            io: Some(io),
        }
    }

    /// The wrapped value.
    pub fn get_ref(&self) -> &T {
        self.io.as_ref().expect("present until into_inner")
    }

    /// The wrapped value, mutably. Do not make it blocking.
    pub fn get_mut(&mut self) -> &mut T {
        self.io.as_mut().expect("present until into_inner")
    }

    /// Stops the watch and returns the wrapped value (still non-blocking).
    ///
    /// # Errors
    ///
    /// None today; the `Result` mirrors smol's, whose reactor may fail to
    /// deregister.
    pub fn into_inner(mut self) -> io::Result<T> {
        drop(self.readiness.take());
        Ok(self.io.take().expect("present until into_inner"))
    }

    /// Waits until the descriptor is readable (or has an error or hang-up
    /// to report). Returns at once if a readiness was seen and not yet
    /// consumed by a [`WouldBlock`](io::ErrorKind::WouldBlock) in
    /// [`read_with`](Async::read_with).
    ///
    /// # Errors
    ///
    /// An error of kind `Other` carrying a [`Cancelled`](crate::Cancelled)
    /// if the coroutine is cancelled while it waits; `Unsupported` without
    /// the reactor's readiness capability.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn readable(&self) -> io::Result<()> {
        let at = Location::caller();
        let fd = self.as_raw_fd();
        self.watch()?
            .wait(Direction::Read, &|| format!("readable fd {fd}"), at)
    }

    /// Waits until the descriptor is writable; see [`readable`](Async::readable).
    ///
    /// # Errors
    ///
    /// As [`readable`](Async::readable).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn writable(&self) -> io::Result<()> {
        let at = Location::caller();
        let fd = self.as_raw_fd();
        self.watch()?
            .wait(Direction::Write, &|| format!("writable fd {fd}"), at)
    }

    /// Runs `op` until it does not fail with `WouldBlock`, waiting for
    /// readability in between. A cancellation point; an `op` that
    /// succeeded is never undone by a cancellation (it returns, and the
    /// cancellation comes at the next suspension point).
    ///
    /// # Errors
    ///
    /// `op`'s error, or as [`readable`](Async::readable).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::unix::net::UnixDatagram;
    /// use async_std_api::io::Async;
    /// use async_std_api::{run, spawn};
    ///
    /// run(|| {
    ///     let (a, b) = UnixDatagram::pair().unwrap();
    ///     let b = Async::new(b).unwrap();
    ///     let r = spawn(move || {
    ///         let mut buf = [0u8; 16];
    ///         let n = b.read_with(|s| s.recv(&mut buf)).unwrap();
    ///         buf[..n].to_vec()
    ///     });
    ///     a.send(b"datagram").unwrap();
    ///     assert_eq!(r.join().unwrap(), b"datagram");
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn read_with<R>(&self, op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let at = Location::caller();
        self.run(Direction::Read, "read", at, op)
    }

    /// [`read_with`](Async::read_with) with `&mut T`.
    ///
    /// # Errors
    ///
    /// As [`read_with`](Async::read_with).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn read_with_mut<R>(
        &mut self,
        mut op: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        let at = Location::caller();
        self.watch()?;
        let fd = self.as_raw_fd();
        // Disjoint fields: the watch borrowed shared, `io` mutably.
        let r = self.readiness.get().expect("made above");
        let io = self.io.as_mut().expect("present until into_inner");
        run_on(r, fd, Direction::Read, "read", at, || op(io))
    }

    /// Runs `op` until it does not fail with `WouldBlock`, waiting for
    /// writability in between; see [`read_with`](Async::read_with).
    ///
    /// # Errors
    ///
    /// As [`read_with`](Async::read_with).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn write_with<R>(&self, op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let at = Location::caller();
        self.run(Direction::Write, "write", at, op)
    }

    /// [`write_with`](Async::write_with) with `&mut T`.
    ///
    /// # Errors
    ///
    /// As [`read_with`](Async::read_with).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    #[track_caller]
    pub fn write_with_mut<R>(
        &mut self,
        mut op: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        let at = Location::caller();
        self.watch()?;
        let fd = self.as_raw_fd();
        // Disjoint fields: the watch borrowed shared, `io` mutably.
        let r = self.readiness.get().expect("made above");
        let io = self.io.as_mut().expect("present until into_inner");
        run_on(r, fd, Direction::Write, "write", at, || op(io))
    }

    #[track_caller]
    fn run<R>(
        &self,
        dir: Direction,
        what: &str,
        at: &'static Location<'static>,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let io = self.get_ref();
        let r = self.watch()?;
        run_on(r, self.as_raw_fd(), dir, what, at, || op(io))
    }

    /// The watch, made on first use.
    #[track_caller]
    fn watch(&self) -> io::Result<&Readiness> {
        if let Some(r) = self.readiness.get() {
            return Ok(r);
        }
        let fd = self.get_ref().as_fd();
        let r = with_me("a readiness wait", |rt, _| Readiness::new_dup(rt, fd))?;
        Ok(self.readiness.get_or_init(|| r))
    }
}

#[track_caller]
fn run_on<R>(
    r: &Readiness,
    fd: RawFd,
    dir: Direction,
    what: &str,
    at: &'static Location<'static>,
    op: impl FnMut() -> io::Result<R>,
) -> io::Result<R> {
    r.io(dir, &|| format!("{what} fd {fd}"), at, op)
}

impl<T: AsFd> AsFd for Async<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.get_ref().as_fd()
    }
}

impl<T: AsFd> AsRawFd for Async<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.get_ref().as_fd().as_raw_fd()
    }
}

impl<T: AsFd + fmt::Debug> fmt::Debug for Async<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Async").field("io", &self.io).finish()
    }
}

impl<T: AsFd + Read> Read for Async<T> {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.read_with_mut(|io| io.read(buf))
    }
}

impl<T: AsFd> Read for &Async<T>
where
    for<'a> &'a T: Read,
{
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.read_with(|mut io| io.read(buf))
    }
}

impl<T: AsFd + Write> Write for Async<T> {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.write_with_mut(|io| io.write(buf))
    }

    #[track_caller]
    fn flush(&mut self) -> io::Result<()> {
        self.write_with_mut(|io| io.flush())
    }
}

impl<T: AsFd> Write for &Async<T>
where
    for<'a> &'a T: Write,
{
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.write_with(|mut io| io.write(buf))
    }

    #[track_caller]
    fn flush(&mut self) -> io::Result<()> {
        self.write_with(|mut io| io.flush())
    }
}
