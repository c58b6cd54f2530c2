//! Anonymous pipes whose reads and writes suspend the calling coroutine:
//! [`pipe`], [`PipeReader`], [`PipeWriter`], the analogues of std's
//! `std::io::pipe` (Rust 1.87) with the same names.
//!
//! Also the descriptor under the process module's `ChildStdin`,
//! `ChildStdout` and `ChildStderr` ([`PipeFd`]).
//!
//! Rules:
//! - **PP1** A [`PipeFd`]'s descriptor is non-blocking, and it is ours
//!   alone: an end made by [`pipe`], or our end of a child's pipe (the
//!   child has the other end, a different open file description), so
//!   setting `O_NONBLOCK` changes nothing anyone else sees. A descriptor
//!   handed over by the user (`From<OwnedFd>`) becomes non-blocking too,
//!   which the conversion documents.
//! - **PP2** Reads and writes are reactor requests (`AA_IO_READ`,
//!   `AA_IO_WRITE`: `read`/`write` on a pipe in both built-in reactors),
//!   with the cancellation policy of `net::submit` (data first).
//! - **PP3** The descriptor is closed through the reactor, which forgets
//!   it first (so a reused number never meets the old registration). A
//!   descriptor given away (`into_raw_fd`, `OwnedFd::from`, a child's
//!   `Stdio`) is a duplicate made blocking again (as std hands out its
//!   pipes, and as a child expects its standard streams), and the
//!   reactor's one is closed through the reactor.

use std::fmt;
use std::io::{self, Read, Write};
use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::panic::Location;
use std::rc::Rc;

use crate::core::runtime::io::{FdWait, IoReq};
use crate::core::runtime::process::{self as sys};
use crate::net::{close, submit};

/// One end of a pipe, owned by the host (PP1-PP3). `!Send`: the reactor
/// of the thread that used it may keep state about its descriptor until
/// it is closed through that same reactor.
pub(crate) struct PipeFd {
    fd: Option<OwnedFd>,
    _not_send: PhantomData<Rc<()>>,
}

impl PipeFd {
    /// Takes `fd` and makes it non-blocking (PP1).
    pub(crate) fn new(fd: OwnedFd) -> PipeFd {
        // `F_SETFL` on a valid descriptor does not fail; an invalid one
        // fails its first request with `EBADF`, as std's would.
        let _ = sys::set_nonblocking(fd.as_fd(), true);
        PipeFd {
            fd: Some(fd),
            _not_send: PhantomData,
        }
    }

    fn get(&self) -> &OwnedFd {
        self.fd.as_ref().expect("present until drop or into_owned")
    }

    /// Reads what is there (at most `buf.len()` bytes), suspending until
    /// something is; 0 at the end of the stream.
    #[track_caller]
    pub(crate) fn read_at(
        &self,
        buf: &mut [u8],
        at: &'static Location<'static>,
    ) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let fd = self.get().as_raw_fd();
        let n = submit(self.get(), IoReq::Read(buf), FdWait("read pipe", fd), at)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Writes some of `buf`, suspending while the pipe is full.
    #[track_caller]
    pub(crate) fn write_at(&self, buf: &[u8], at: &'static Location<'static>) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let fd = self.get().as_raw_fd();
        let n = submit(self.get(), IoReq::Write(buf), FdWait("write pipe", fd), at)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// A second descriptor for the same end (`dup`): non-blocking already,
    /// since the flag belongs to the shared open file description.
    pub(crate) fn try_clone(&self) -> io::Result<PipeFd> {
        Ok(PipeFd {
            fd: Some(self.get().try_clone()?),
            _not_send: PhantomData,
        })
    }

    /// Gives the descriptor away, blocking again (PP3).
    pub(crate) fn into_owned(mut self) -> OwnedFd {
        let fd = self.fd.take().expect("present until drop or into_owned");
        // Valid descriptor: `F_SETFL` does not fail.
        let _ = sys::set_nonblocking(fd.as_fd(), false);
        match fd.try_clone() {
            Ok(dup) => {
                close(fd);
                dup
            }
            // Out of descriptors: hand out the reactor's one; at worst the
            // reactor keeps a stale entry for its number.
            Err(_) => fd,
        }
    }
}

impl AsRawFd for PipeFd {
    fn as_raw_fd(&self) -> RawFd {
        self.get().as_raw_fd()
    }
}

impl AsFd for PipeFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.get().as_fd()
    }
}

impl Drop for PipeFd {
    fn drop(&mut self) {
        if let Some(fd) = self.fd.take() {
            close(fd);
        }
    }
}

impl fmt::Debug for PipeFd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.fd {
            Some(fd) => write!(f, "{}", fd.as_raw_fd()),
            None => f.write_str("closed"),
        }
    }
}

/// Creates an anonymous pipe: the analogue of `std::io::pipe` (Rust 1.87),
/// whose reads and writes suspend the calling coroutine instead of the
/// thread.
///
/// Bytes written to the [`PipeWriter`] come out of the [`PipeReader`] in
/// order; once every writer is dropped, reads return 0 (end of stream);
/// once every reader is dropped, writes fail with
/// [`BrokenPipe`](io::ErrorKind::BrokenPipe). Both ends are close-on-exec
/// and non-blocking (a child gets an end through
/// [`Stdio`](crate::process::Stdio), which hands over a blocking duplicate).
///
/// Both ends are `!Send`: they belong to the runtime of the thread that
/// used them.
///
/// # Errors
///
/// The operating system's error (`EMFILE`, `ENFILE`).
///
/// # Examples
///
/// ```
/// use std::io::{Read, Write};
/// use async_std_api::{io, run, spawn};
///
/// run(|| {
///     let (mut reader, mut writer) = io::pipe().unwrap();
///     let w = spawn(move || {
///         writer.write_all(b"hello").unwrap();
///         // Dropping the writer ends the stream.
///     });
///     let mut got = String::new();
///     reader.read_to_string(&mut got).unwrap();
///     w.join().unwrap();
///     assert_eq!(got, "hello");
/// })
/// .unwrap();
/// ```
pub fn pipe() -> io::Result<(PipeReader, PipeWriter)> {
    let (r, w) = sys::pipe()?;
    Ok((PipeReader(PipeFd::new(r)), PipeWriter(PipeFd::new(w))))
}

/// The read end of a [`pipe`]: the analogue of `std::io::PipeReader`.
///
/// Implements [`Read`] (also for `&PipeReader`); a read suspends the
/// coroutine until bytes are there and returns what is there, up to the
/// buffer's length (a short read is normal). Dropping it closes the end.
///
/// A cancelled read returns an error of kind `Other` carrying the
/// [`Cancelled`](crate::Cancelled) and consumes nothing; the pipe stays
/// usable. Bytes that arrived before the cancellation took effect are
/// returned, and the cancellation comes at the next suspension point.
pub struct PipeReader(pub(crate) PipeFd);

/// The write end of a [`pipe`]: the analogue of `std::io::PipeWriter`.
///
/// Implements [`Write`] (also for `&PipeWriter`); a write suspends while
/// the pipe is full and may be short. Dropping it closes the end (the
/// reader sees the end of the stream once every writer is gone).
///
/// A cancelled write returns an error of kind `Other` carrying the
/// [`Cancelled`](crate::Cancelled), unless bytes were already written: the
/// count is returned and the cancellation comes at the next suspension
/// point.
pub struct PipeWriter(pub(crate) PipeFd);

impl PipeReader {
    /// Another handle to the same end (`dup`).
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn try_clone(&self) -> io::Result<PipeReader> {
        Ok(PipeReader(self.0.try_clone()?))
    }
}

impl PipeWriter {
    /// Another handle to the same end (`dup`); the reader sees the end of
    /// the stream once every clone is dropped.
    ///
    /// # Errors
    ///
    /// The operating system's error (`EMFILE`).
    pub fn try_clone(&self) -> io::Result<PipeWriter> {
        Ok(PipeWriter(self.0.try_clone()?))
    }
}

impl Read for PipeReader {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read_at(buf, Location::caller())
    }
}

impl Read for &PipeReader {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read_at(buf, Location::caller())
    }
}

impl Write for PipeWriter {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_at(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for &PipeWriter {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_at(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The descriptor traits of a type wrapping a [`PipeFd`] (`$t.0`): this
/// module's pipe ends and `process`'s child pipes.
macro_rules! pipe_fd_traits {
    ($t:ident) => {
        impl std::os::fd::AsFd for $t {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                self.0.as_fd()
            }
        }

        impl std::os::fd::AsRawFd for $t {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                self.0.as_raw_fd()
            }
        }

        /// A blocking duplicate; the reactor's descriptor is closed
        /// through the reactor (PP3 in `io::pipe`), so the number differs
        /// from [`as_raw_fd`](std::os::fd::AsRawFd::as_raw_fd)'s.
        impl From<$t> for std::os::fd::OwnedFd {
            fn from(p: $t) -> std::os::fd::OwnedFd {
                p.0.into_owned()
            }
        }

        /// As `From<_> for OwnedFd`.
        impl std::os::fd::IntoRawFd for $t {
            fn into_raw_fd(self) -> std::os::fd::RawFd {
                std::os::fd::IntoRawFd::into_raw_fd(std::os::fd::OwnedFd::from(self))
            }
        }
    };
}
pub(crate) use pipe_fd_traits;

macro_rules! fd_conversions {
    ($t:ident) => {
        pipe_fd_traits!($t);

        /// Takes a pipe end and makes it non-blocking: the flag belongs to
        /// the open file description, so other holders of it see the
        /// change (PP1).
        impl From<OwnedFd> for $t {
            fn from(fd: OwnedFd) -> $t {
                $t(PipeFd::new(fd))
            }
        }

        // The one unsafe item: std's trait, forwarded to `From<OwnedFd>`.
        #[allow(unsafe_code)]
        impl std::os::fd::FromRawFd for $t {
            /// Takes ownership of the descriptor, as `From<OwnedFd>`.
            ///
            /// # Safety
            ///
            /// `fd` must be an open pipe end that nothing else owns (std's
            /// contract).
            unsafe fn from_raw_fd(fd: RawFd) -> $t {
                // SAFETY: the caller's contract is std's.
                $t::from(unsafe { OwnedFd::from_raw_fd(fd) })
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t)).field("fd", &self.0).finish()
            }
        }
    };
}

fd_conversions!(PipeReader);
fd_conversions!(PipeWriter);
