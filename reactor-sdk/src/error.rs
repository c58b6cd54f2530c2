//! A reactor's error: an ABI status plus one line for
//! `last_error_message` (and, from `create`, for `cfg->err_buf`).

use std::fmt;
use std::io;

use async_abi::{AaStatus, AA_E_INVALID};

/// A failed call: the status returned to the host and the message kept for
/// `last_error_message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Negative: `-errno` or an ABI code.
    pub status: AaStatus,
    /// One line naming the thing and the reason.
    pub message: String,
}

impl Error {
    /// An error with an explicit status.
    pub fn new(status: AaStatus, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
    }

    /// `AA_E_INVALID` with a message.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(AA_E_INVALID, message)
    }

    /// An OS error: `-errno`, and the message names `what` failed.
    pub fn os(what: impl fmt::Display, err: &io::Error) -> Error {
        Error::new(neg_errno(err), format!("{what}: {}", os_reason(err)))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `-errno` of an I/O error (`-EIO` when it carries none).
#[inline]
pub fn neg_errno(err: &io::Error) -> AaStatus {
    -err.raw_os_error().unwrap_or(libc::EIO)
}

/// The OS's description of an error, lowercased and without the
/// `(os error N)` suffix std adds.
pub fn os_reason(err: &io::Error) -> String {
    let text = err.to_string();
    let text = match text.find(" (os error") {
        Some(at) => &text[..at],
        None => &text,
    };
    text.to_lowercase()
}

/// The result type of a reactor's safe API.
pub type Result<T> = std::result::Result<T, Error>;

/// Validates `AA_EVF_*` flags against the bits a constructor accepts.
#[inline]
pub fn check_flags(what: &str, flags: u32, allowed: u32) -> Result<()> {
    if flags & !allowed != 0 {
        return Err(Error::invalid(format!(
            "{what}: unknown flag bits {:#x}",
            flags & !allowed
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_error_names_the_thing_and_the_lowercase_reason() {
        let err = Error::os("fd 7", &io::Error::from_raw_os_error(libc::EBADF));
        assert_eq!(err.status, -libc::EBADF);
        assert_eq!(err.message, "fd 7: bad file descriptor");
    }

    #[test]
    fn unknown_flag_bits_are_named() {
        let err = check_flags("timer_new", 0x5, 0x1).unwrap_err();
        assert_eq!(err.status, AA_E_INVALID);
        assert_eq!(err.message, "timer_new: unknown flag bits 0x4");
    }
}
