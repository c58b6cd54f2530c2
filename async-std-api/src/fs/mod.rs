//! Files and directories whose blocking calls suspend the coroutine, and
//! filesystem watches.
//!
//! The names and signatures are [`std::fs`]'s, so code ports by changing
//! the import (`use async_std_api::fs;` for `use std::fs;`): [`File`] and
//! [`OpenOptions`], [`read`], [`write`](fn@write), [`read_dir`], [`metadata`], ...
//! [`File`] implements [`std::io::Read`], [`Write`] and
//! [`Seek`](std::io::Seek) (also for `&File`) and
//! [`std::os::unix::fs::FileExt`], so `std::io::copy`, `BufReader` and
//! `read_exact_at` work unchanged inside coroutines. [`Metadata`],
//! [`Permissions`], [`FileType`] and [`FileTimes`] are std's own types.
//! [`watch`] is this crate's addition: a [`Watcher`] whose
//! [`WatchEvent`]s are read in a loop.
//!
//! ```
//! use std::io::{Read, Seek, SeekFrom, Write};
//! use async_std_api::{fs, run};
//!
//! run(|| {
//!     let dir = std::env::temp_dir().join(format!("fs-doc-{}", std::process::id()));
//!     fs::create_dir_all(&dir)?;
//!     let path = dir.join("hello.txt");
//!     let mut f = fs::File::create(&path)?;
//!     f.write_all(b"hello, world")?;
//!     f.seek(SeekFrom::Start(7))?;
//!     drop(f);
//!     let mut s = String::new();
//!     fs::File::open(&path)?.read_to_string(&mut s)?;
//!     assert_eq!(s, "hello, world");
//!     assert_eq!(fs::read_to_string(&path)?, "hello, world");
//!     fs::remove_dir_all(&dir)
//! })
//! .unwrap()
//! .unwrap();
//! ```
//!
//! # How the work is done
//!
//! Every call that may block suspends only the calling coroutine (D-31),
//! and runs where the reactor allows:
//!
//! - [`File`]'s reads and writes are positional requests (`AA_IO_READ` /
//!   `AA_IO_WRITE` with an offset) submitted to the reactor when it runs
//!   I/O natively (`AA_CAP_IO_NATIVE`: the io_uring reactor); the kernel
//!   reads straight into the caller's buffer.
//! - Opening, `sync_all`/`sync_data`, `set_len`, a seek from the end (the
//!   size), [`remove_file`], [`remove_dir`], [`rename`], [`create_dir`]
//!   and [`exists`] are the reactor's file requests when it has them (ABI
//!   1.1 `AA_CAP_IO_FILE`, `AA_CAP_IO_FTRUNCATE`: io_uring's `OPENAT`,
//!   `FSYNC`, `FTRUNCATE`, `STATX`, `UNLINKAT`, `RENAMEAT`, `MKDIRAT`);
//!   with both, [`read`], [`read_to_string`] and [`write`](fn@write) are an
//!   open, reads or writes, and a close through the reactor too.
//! - Everything else (metadata, which is std's type, [`read_dir`],
//!   [`copy`], [`create_dir_all`], [`remove_dir_all`], links,
//!   permissions), and everything on a reactor without those capabilities,
//!   runs on the runtime's blocking pool (the one under
//!   [`spawn_blocking`](crate::spawn_blocking)). On a readiness reactor
//!   (mio), where a regular file is always "ready" and a read can still
//!   wait for the disk, a `File`'s reads and writes go through a buffer of
//!   the file's own, at most 2 MiB per call (a larger request is a short
//!   read or write, as `Read` and `Write` allow).
//! - A [`File`] keeps its cursor itself (as tokio's does; io_uring
//!   runtimes such as monoio read files at offsets only), so a
//!   read or write that is cancelled leaves it where it was (D-31).
//!
//! # Cancellation
//!
//! Every call that suspends is a cancellation point. A pool call whose
//! coroutine is cancelled returns the cancellation at once and is
//! *detached*: it runs to its end on its thread and its result is dropped
//! (as [`spawn_blocking`](crate::spawn_blocking), D-30). So a cancelled
//! [`write`](fn@write) or [`remove_dir_all`] on the pool may still
//! complete; a cancelled read changes nothing the caller can see. A request
//! in the reactor is cancelled in the kernel and waited for: the caller's
//! buffer is never written after the call returned (AA-R5), and what
//! completed before the cancellation (data read, a file opened, a name
//! removed) is returned, the cancellation staying pending (P-08); a
//! [`write`](fn@write) cancelled between two requests leaves the file
//! written in part.
//!
//! # Errors
//!
//! The system's errors are std's, unchanged (`NotFound` for `ENOENT`,
//! `PermissionDenied` for `EACCES`, `AlreadyExists` for `EEXIST`, the same
//! `raw_os_error`), so code that inspects them keeps working. A cancelled
//! call's error carries the [`Cancelled`](crate::Cancelled)
//! ([`io::cancelled`](crate::io::cancelled) finds it); a pool that cannot
//! run the work is an error saying why.
//!
//! # Backend differences
//!
//! - io_uring: reads, writes and the file requests above are ring
//!   operations; the rest is the pool.
//! - mio (and any reactor without `AA_CAP_IO_NATIVE` and `AA_CAP_IO_FILE`):
//!   a read first takes what the page cache holds, at once on the loop
//!   thread (`preadv2` with `RWF_NOWAIT`, up to 256 KiB; a cancellation
//!   point that spends the cooperative budget), and goes to the pool only
//!   when it would wait for the disk; everything else is the pool.
//! - The pool needs the reactor's trigger (`AA_CAP_TRIGGER`); [`watch`]
//!   needs `AA_CAP_FS_WATCH`. Without them the calls fail with an
//!   [`io::Error`] of kind [`Unsupported`](io::ErrorKind::Unsupported)
//!   naming the reactor and the capability.

mod dir;
mod file;
mod native;
mod nowait;
mod options;
mod pool;
mod raw;
mod rw;
mod watch;

pub use dir::{DirEntry, ReadDir};
pub use file::File;
pub use options::OpenOptions;
pub use std::fs::{FileTimes, FileType, Metadata, Permissions};
pub use watch::{watch, WatchEvent, Watcher};

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use pool::blocking;

/// Reads the whole file at `path`: [`std::fs::read`], in the reactor or on the blocking pool
/// (module docs, *How the work is done*).
///
/// # Errors
///
/// As [`std::fs::read`]; the cancellation (see the module's
/// *Cancellation*).
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; a cancelled read returns nothing (on the pool it
/// is detached and its bytes dropped).
///
/// # Examples
///
/// ```
/// use async_std_api::{fs, run};
///
/// run(|| {
///     let p = std::env::temp_dir().join(format!("fs-read-doc-{}", std::process::id()));
///     fs::write(&p, [1, 2, 3]).unwrap();
///     assert_eq!(fs::read(&p).unwrap(), [1, 2, 3]);
///     fs::remove_file(&p).unwrap();
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn read<P: AsRef<Path>>(path: P) -> io::Result<Vec<u8>> {
    if native::files() && native::rw() {
        let mut f = File::open(path)?;
        let mut v = Vec::with_capacity(f.len().map_or(0, |n| n as usize));
        f.read_to_end(&mut v)?;
        return Ok(v);
    }
    let path = path.as_ref().to_owned();
    blocking("fs::read", move || std::fs::read(path))
}

/// Reads the whole file at `path` as UTF-8: [`std::fs::read_to_string`] on
/// the reactor or on the blocking pool (as [`read`]).
///
/// # Errors
///
/// As [`std::fs::read_to_string`] (`InvalidData` for bytes that are not
/// UTF-8); the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// As [`read`].
#[track_caller]
pub fn read_to_string<P: AsRef<Path>>(path: P) -> io::Result<String> {
    if native::files() && native::rw() {
        let mut f = File::open(path)?;
        let mut s = String::with_capacity(f.len().map_or(0, |n| n as usize));
        f.read_to_string(&mut s)?;
        return Ok(s);
    }
    let path = path.as_ref().to_owned();
    blocking("fs::read_to_string", move || std::fs::read_to_string(path))
}

/// Writes `contents` as the whole file at `path`, creating or truncating
/// it: [`std::fs::write`], in the reactor or on the blocking pool (the
/// bytes are then copied for the pool thread; module docs).
///
/// # Errors
///
/// As [`std::fs::write`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; a cancelled write may have written part of the
/// file (in the reactor), or is detached and may still complete (on the
/// pool).
#[track_caller]
pub fn write<P: AsRef<Path>, C: AsRef<[u8]>>(path: P, contents: C) -> io::Result<()> {
    if native::files() && native::rw() {
        return File::create(path)?.write_all(contents.as_ref());
    }
    let path = path.as_ref().to_owned();
    let contents = contents.as_ref().to_vec();
    blocking("fs::write", move || std::fs::write(path, contents))
}

/// Copies the contents and permissions of `from` to `to`, returning the
/// number of bytes copied: [`std::fs::copy`] on the blocking pool (which
/// lets the kernel copy, `copy_file_range`, where it can).
///
/// # Errors
///
/// As [`std::fs::copy`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; a cancelled copy is detached and may still
/// complete.
#[track_caller]
pub fn copy<P: AsRef<Path>, Q: AsRef<Path>>(from: P, to: Q) -> io::Result<u64> {
    let (from, to) = (from.as_ref().to_owned(), to.as_ref().to_owned());
    blocking("fs::copy", move || std::fs::copy(from, to))
}

/// Renames `from` to `to`, replacing `to` if it exists:
/// [`std::fs::rename`], in the reactor or on the blocking pool
/// (module docs, *How the work is done*).
///
/// # Errors
///
/// As [`std::fs::rename`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; a rename done before the cancellation was seen
/// is reported done (in the reactor), or a cancelled one is detached and
/// may still happen (on the pool).
#[track_caller]
pub fn rename<P: AsRef<Path>, Q: AsRef<Path>>(from: P, to: Q) -> io::Result<()> {
    if native::files() {
        if let Ok(r) = native::rename(from.as_ref(), to.as_ref()) {
            return r;
        }
    }
    let (from, to) = (from.as_ref().to_owned(), to.as_ref().to_owned());
    blocking("fs::rename", move || std::fs::rename(from, to))
}

/// Removes a file: [`std::fs::remove_file`], in the reactor or on the blocking pool
/// (module docs, *How the work is done*).
///
/// # Errors
///
/// As [`std::fs::remove_file`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; as [`rename`].
#[track_caller]
pub fn remove_file<P: AsRef<Path>>(path: P) -> io::Result<()> {
    if native::files() {
        if let Ok(r) = native::unlink(path.as_ref(), false) {
            return r;
        }
    }
    let path = path.as_ref().to_owned();
    blocking("fs::remove_file", move || std::fs::remove_file(path))
}

/// Removes an empty directory: [`std::fs::remove_dir`], in the reactor or
/// on the blocking pool (module docs).
///
/// # Errors
///
/// As [`std::fs::remove_dir`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// As [`remove_file`].
#[track_caller]
pub fn remove_dir<P: AsRef<Path>>(path: P) -> io::Result<()> {
    if native::files() {
        if let Ok(r) = native::unlink(path.as_ref(), true) {
            return r;
        }
    }
    let path = path.as_ref().to_owned();
    blocking("fs::remove_dir", move || std::fs::remove_dir(path))
}

/// Removes a directory and everything in it: [`std::fs::remove_dir_all`]
/// on the blocking pool, as one piece of work.
///
/// # Errors
///
/// As [`std::fs::remove_dir_all`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; a cancelled removal is detached and goes on to
/// its end.
#[track_caller]
pub fn remove_dir_all<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    blocking("fs::remove_dir_all", move || std::fs::remove_dir_all(path))
}

/// Creates a directory: [`std::fs::create_dir`], in the reactor or on the blocking pool
/// (module docs, *How the work is done*).
///
/// # Errors
///
/// As [`std::fs::create_dir`] (`AlreadyExists` if it exists); the
/// cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; as [`rename`].
#[track_caller]
pub fn create_dir<P: AsRef<Path>>(path: P) -> io::Result<()> {
    if native::files() {
        // std's `DirBuilder` default: 0o777, less the umask.
        if let Ok(r) = native::mkdir(path.as_ref(), 0o777) {
            return r;
        }
    }
    let path = path.as_ref().to_owned();
    blocking("fs::create_dir", move || std::fs::create_dir(path))
}

/// Creates a directory and its missing parents:
/// [`std::fs::create_dir_all`] on the blocking pool.
///
/// # Errors
///
/// As [`std::fs::create_dir_all`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// As [`create_dir`].
#[track_caller]
pub fn create_dir_all<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    blocking("fs::create_dir_all", move || std::fs::create_dir_all(path))
}

/// The entries of a directory: [`std::fs::read_dir`], the whole directory
/// read on the blocking pool (see [`ReadDir`]).
///
/// # Errors
///
/// As [`std::fs::read_dir`]; the cancellation. An error reading one entry
/// is that entry's `Err`, as in std.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; a cancelled listing is detached and dropped.
///
/// # Examples
///
/// ```
/// use async_std_api::{fs, run};
///
/// run(|| {
///     let dir = std::env::temp_dir().join(format!("fs-read-dir-doc-{}", std::process::id()));
///     fs::create_dir_all(&dir).unwrap();
///     fs::write(dir.join("a"), "").unwrap();
///     let names: Vec<_> = fs::read_dir(&dir)
///         .unwrap()
///         .map(|e| e.unwrap().file_name())
///         .collect();
///     assert_eq!(names, ["a"]);
///     fs::remove_dir_all(&dir).unwrap();
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn read_dir<P: AsRef<Path>>(path: P) -> io::Result<ReadDir> {
    dir::read_dir(path.as_ref())
}

/// The metadata of `path`, following symbolic links: [`std::fs::metadata`]
/// on the blocking pool.
///
/// # Errors
///
/// As [`std::fs::metadata`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point.
#[track_caller]
pub fn metadata<P: AsRef<Path>>(path: P) -> io::Result<Metadata> {
    let path = path.as_ref().to_owned();
    blocking("fs::metadata", move || std::fs::metadata(path))
}

/// The metadata of `path` itself, not following a final symbolic link:
/// [`std::fs::symlink_metadata`] on the blocking pool.
///
/// # Errors
///
/// As [`std::fs::symlink_metadata`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point.
#[track_caller]
pub fn symlink_metadata<P: AsRef<Path>>(path: P) -> io::Result<Metadata> {
    let path = path.as_ref().to_owned();
    blocking("fs::symlink_metadata", move || {
        std::fs::symlink_metadata(path)
    })
}

/// Whether `path` exists (`Ok(false)` for a broken symbolic link):
/// [`std::fs::exists`], in the reactor or on the blocking pool
/// (module docs, *How the work is done*).
///
/// # Errors
///
/// As [`std::fs::exists`] (an error that is not "not found", such as
/// `PermissionDenied` on a parent); the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point.
#[track_caller]
pub fn exists<P: AsRef<Path>>(path: P) -> io::Result<bool> {
    if native::files() {
        if let Ok(r) = native::exists(path.as_ref()) {
            return r;
        }
    }
    let path = path.as_ref().to_owned();
    blocking("fs::exists", move || std::fs::exists(path))
}

/// The absolute path of `path` with every symbolic link, `.` and `..`
/// resolved: [`std::fs::canonicalize`] on the blocking pool.
///
/// # Errors
///
/// As [`std::fs::canonicalize`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point.
#[track_caller]
pub fn canonicalize<P: AsRef<Path>>(path: P) -> io::Result<PathBuf> {
    let path = path.as_ref().to_owned();
    blocking("fs::canonicalize", move || std::fs::canonicalize(path))
}

/// Makes `link` a new name (a hard link) of `original`:
/// [`std::fs::hard_link`] on the blocking pool.
///
/// # Errors
///
/// As [`std::fs::hard_link`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; a cancelled link is detached and may still be
/// made.
#[track_caller]
pub fn hard_link<P: AsRef<Path>, Q: AsRef<Path>>(original: P, link: Q) -> io::Result<()> {
    let (original, link) = (original.as_ref().to_owned(), link.as_ref().to_owned());
    blocking("fs::hard_link", move || std::fs::hard_link(original, link))
}

/// The target of the symbolic link `path`: [`std::fs::read_link`] on the
/// blocking pool.
///
/// # Errors
///
/// As [`std::fs::read_link`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point.
#[track_caller]
pub fn read_link<P: AsRef<Path>>(path: P) -> io::Result<PathBuf> {
    let path = path.as_ref().to_owned();
    blocking("fs::read_link", move || std::fs::read_link(path))
}

/// Changes the permissions of `path`: [`std::fs::set_permissions`] on the
/// blocking pool.
///
/// # Errors
///
/// As [`std::fs::set_permissions`]; the cancellation.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Cancellation
///
/// A cancellation point; a cancelled change is detached and may still be
/// made.
#[track_caller]
pub fn set_permissions<P: AsRef<Path>>(path: P, perm: Permissions) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    blocking("fs::set_permissions", move || {
        std::fs::set_permissions(path, perm)
    })
}
