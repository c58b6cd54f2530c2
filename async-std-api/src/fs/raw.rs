//! [`FromRawFd`] for [`File`]: the one trait of `fs` whose method is
//! `unsafe` (std declares it so), kept apart so the unsafe inventory names
//! it (STYLE S13).
#![allow(unsafe_code)]

use std::os::fd::{FromRawFd, RawFd};

use super::file::File;

impl FromRawFd for File {
    /// A file from a raw descriptor, as [`std::fs::File::from_raw_fd`];
    /// its cursor starts at the descriptor's offset.
    ///
    /// # Safety
    ///
    /// As [`std::fs::File::from_raw_fd`]: `fd` is an open descriptor that
    /// nothing else owns (it is closed when the `File` is dropped).
    unsafe fn from_raw_fd(fd: RawFd) -> File {
        // SAFETY: the caller's obligation is std's, passed on unchanged.
        File::from(unsafe { std::fs::File::from_raw_fd(fd) })
    }
}
