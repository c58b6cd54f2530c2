//! A child's standard streams as seen from the parent: [`ChildStdin`],
//! [`ChildStdout`], [`ChildStderr`]. Each is our end of a pipe std made
//! for the child, made non-blocking (the child's end is another open file
//! description: PP1 in `io::pipe`) and driven by the reactor.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::panic::Location;

use super::Stdio;
use crate::io::PipeFd;

/// The parent's handle to a child's standard input: the analogue of
/// [`std::process::ChildStdin`], whose writes suspend the calling
/// coroutine.
///
/// Implements [`Write`] (also for `&ChildStdin`). A write suspends while
/// the pipe is full and may be short; once the child has exited (or closed
/// its standard input) writes fail with
/// [`BrokenPipe`](io::ErrorKind::BrokenPipe). Dropping the handle closes
/// the pipe, which the child reads as the end of its input;
/// [`Child::wait`](super::Child::wait) drops it first for that reason.
///
/// A cancelled write returns an error of kind `Other` carrying the
/// [`Cancelled`](crate::Cancelled), unless bytes were already written: the
/// count is returned and the cancellation comes at the next suspension
/// point.
pub struct ChildStdin(pub(super) PipeFd);

/// The parent's handle to a child's standard output: the analogue of
/// [`std::process::ChildStdout`], whose reads suspend the calling
/// coroutine.
///
/// Implements [`Read`] (also for `&ChildStdout`). A read suspends until the
/// child wrote something and returns what is there (a short read is
/// normal); 0 once the child closed its output (usually: exited). Dropping
/// the handle closes the pipe: a child that writes more gets `EPIPE` or
/// `SIGPIPE`.
///
/// A cancelled read returns an error of kind `Other` carrying the
/// [`Cancelled`](crate::Cancelled) and consumes nothing; bytes that
/// arrived before the cancellation took effect are returned, and the
/// cancellation comes at the next suspension point.
pub struct ChildStdout(pub(super) PipeFd);

/// The parent's handle to a child's standard error: the analogue of
/// [`std::process::ChildStderr`]; reads as [`ChildStdout`]'s.
pub struct ChildStderr(pub(super) PipeFd);

impl Write for ChildStdin {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_at(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for &ChildStdin {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_at(buf, Location::caller())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

macro_rules! readable {
    ($t:ident) => {
        impl Read for $t {
            #[track_caller]
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.read_at(buf, Location::caller())
            }
        }

        impl Read for &$t {
            #[track_caller]
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.read_at(buf, Location::caller())
            }
        }
    };
}

readable!(ChildStdout);
readable!(ChildStderr);

macro_rules! conversions {
    ($t:ident) => {
        crate::io::pipe_fd_traits!($t);

        /// Connects the pipe to another child (a pipeline): it gets a
        /// blocking duplicate, as a program expects of its standard
        /// streams.
        impl From<$t> for Stdio {
            fn from(p: $t) -> Stdio {
                Stdio::from(OwnedFd::from(p))
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t)).field("fd", &self.0).finish()
            }
        }
    };
}

conversions!(ChildStdin);
conversions!(ChildStdout);
conversions!(ChildStderr);
