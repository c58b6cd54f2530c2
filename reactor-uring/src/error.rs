//! The reactor's error: an ABI status plus one lowercase line for
//! `last_error_message` (and, from `create`, for `cfg->err_buf`).

use std::fmt;
use std::io;

use async_abi::{AaStatus, AA_E_INVALID};

/// A failed call: the status returned to the host and the message kept for
/// `last_error_message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    /// Negative: `-errno` or an ABI code.
    pub(crate) status: AaStatus,
    /// One line naming the thing and the reason.
    pub(crate) message: String,
}

impl Error {
    /// An error with an explicit status.
    pub(crate) fn new(status: AaStatus, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
    }

    /// `AA_E_INVALID` with a message.
    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(AA_E_INVALID, message)
    }

    /// An OS error: `-errno`, and the message names `what` failed.
    pub(crate) fn os(what: impl fmt::Display, err: &io::Error) -> Error {
        Error::new(neg_errno(err), format!("{what}: {}", os_reason(err)))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// `-errno` of an I/O error (`-EIO` when it carries none).
pub(crate) fn neg_errno(err: &io::Error) -> AaStatus {
    -err.raw_os_error().unwrap_or(libc::EIO)
}

/// The OS's description of an error, lowercased and without the
/// `(os error N)` suffix std adds.
pub(crate) fn os_reason(err: &io::Error) -> String {
    let text = err.to_string();
    let text = match text.find(" (os error") {
        Some(at) => &text[..at],
        None => &text,
    };
    text.to_lowercase()
}

/// The result type of the reactor's safe API.
pub(crate) type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_error_names_the_thing_and_the_lowercase_reason() {
        let err = Error::os("fd 7", &io::Error::from_raw_os_error(libc::EBADF));
        assert_eq!(err.status, -libc::EBADF);
        assert_eq!(err.message, "fd 7: bad file descriptor");
    }
}
