//! [`read_dir`](super::read_dir): a directory's entries, listed on the
//! blocking pool.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};

use super::pool::blocking;
use super::{FileType, Metadata};

/// The entries of a directory: the coroutine analogue of
/// [`std::fs::ReadDir`], an iterator of `io::Result<`[`DirEntry`]`>`.
///
/// The whole directory was read on the blocking pool by
/// [`read_dir`](super::read_dir) (with each entry's type, which the
/// listing usually carries), so iterating never suspends and a cancelled
/// listing leaves nothing half read. The price is memory proportional to
/// the directory. As with std, the order is the filesystem's, and `.` and
/// `..` are skipped.
pub struct ReadDir {
    entries: std::vec::IntoIter<io::Result<DirEntry>>,
}

pub(super) fn read_dir(path: &Path) -> io::Result<ReadDir> {
    let path = path.to_owned();
    let entries = blocking("fs::read_dir", move || {
        Ok(std::fs::read_dir(path)?
            .map(|e| {
                e.map(|inner| {
                    // From the listing's `d_type`, or an `lstat` here, on
                    // the pool, rather than later on the loop.
                    let file_type = inner.file_type().ok();
                    DirEntry { inner, file_type }
                })
            })
            .collect::<Vec<_>>())
    })?;
    Ok(ReadDir {
        entries: entries.into_iter(),
    })
}

impl Iterator for ReadDir {
    type Item = io::Result<DirEntry>;

    fn next(&mut self) -> Option<io::Result<DirEntry>> {
        self.entries.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl fmt::Debug for ReadDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadDir")
            .field("remaining", &self.entries.len())
            .finish()
    }
}

/// One entry of a [`ReadDir`]: the coroutine analogue of
/// [`std::fs::DirEntry`] (which it wraps), whose
/// [`metadata`](DirEntry::metadata) runs on the blocking pool. It
/// implements std's `std::os::unix::fs::DirEntryExt` (`ino`).
pub struct DirEntry {
    inner: std::fs::DirEntry,
    /// Found while listing, on the pool; `None` if that failed.
    file_type: Option<FileType>,
}

impl DirEntry {
    /// The entry's full path (the directory given to `read_dir` joined with
    /// the name): [`std::fs::DirEntry::path`].
    #[must_use]
    pub fn path(&self) -> PathBuf {
        self.inner.path()
    }

    /// The entry's name: [`std::fs::DirEntry::file_name`].
    #[must_use]
    pub fn file_name(&self) -> OsString {
        self.inner.file_name()
    }

    /// The entry's metadata, not following a symbolic link (as
    /// [`std::fs::DirEntry::metadata`]), on the blocking pool.
    ///
    /// # Errors
    ///
    /// As [`std::fs::DirEntry::metadata`] (`NotFound` if the entry was
    /// removed since); the cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point.
    #[track_caller]
    pub fn metadata(&self) -> io::Result<Metadata> {
        let path = self.inner.path();
        blocking("fs::DirEntry::metadata", move || {
            std::fs::symlink_metadata(path)
        })
    }

    /// The entry's type, not following a symbolic link
    /// ([`std::fs::DirEntry::file_type`]): known since the listing, so it
    /// does not suspend; only if the listing could not tell is it asked
    /// again, on the pool.
    ///
    /// # Errors
    ///
    /// As [`metadata`](DirEntry::metadata), in that last case.
    ///
    /// # Panics
    ///
    /// Outside a coroutine, in that last case.
    ///
    /// # Cancellation
    ///
    /// A cancellation point in that last case only.
    #[track_caller]
    pub fn file_type(&self) -> io::Result<FileType> {
        match self.file_type {
            Some(t) => Ok(t),
            None => self.metadata().map(|m| m.file_type()),
        }
    }
}

impl DirEntryExt for DirEntry {
    fn ino(&self) -> u64 {
        self.inner.ino()
    }
}

impl fmt::Debug for DirEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DirEntry").field(&self.inner.path()).finish()
    }
}
