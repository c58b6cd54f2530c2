//! Cancellation helpers for I/O.
//!
//! A blocking I/O call of a cancelled coroutine fails with an
//! [`std::io::Error`] of kind [`Other`](std::io::ErrorKind::Other) whose
//! inner error is the [`Cancelled`] (never `Interrupted`, which `read_exact`
//! and `write_all` would silently retry).

mod async_fd;
mod pipe;
mod stdio;

pub use async_fd::Async;
pub use pipe::{pipe, PipeReader, PipeWriter};
pub(crate) use pipe::{pipe_fd_traits, PipeFd};
pub use stdio::{stderr, stdin, stdout, Lines, Stderr, Stdin, Stdout};

use crate::core::error::Cancelled;

/// The cancellation inside an I/O error, if that is what it is.
///
/// # Examples
///
/// ```
/// use async_std_api::{current, io, run};
///
/// run(|| {
///     let id = current().id();
///     current().cancel();
///     let err = async_std_api::delay(1).map_err(std::io::Error::from).unwrap_err();
///     assert_eq!(io::cancelled(&err).map(|c| c.id()), Some(id));
///     assert_eq!(err.kind(), std::io::ErrorKind::Other);
/// })
/// .unwrap();
/// ```
pub fn cancelled(err: &std::io::Error) -> Option<&Cancelled> {
    err.get_ref()?.downcast_ref::<Cancelled>()
}
