//! [`File`]: an open file whose reads, writes and other blocking calls
//! suspend the coroutine.

use std::cell::Cell;
use std::fmt;
use std::io::{self, IoSlice, IoSliceMut, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::rc::Rc;
use std::time::SystemTime;

use super::native;
use super::options::OpenOptions;
use super::pool::blocking;
use super::rw::{probe, Cursor, Mode};
use super::{FileTimes, Metadata, Permissions};
use crate::net;

/// An open file: the coroutine analogue of [`std::fs::File`].
///
/// Reads and writes go through [`std::io::Read`], [`Write`] and [`Seek`]
/// (implemented for `File` and `&File`, as std does) and through
/// [`FileExt::read_at`] / [`FileExt::write_at`] (std's
/// `std::os::unix::fs::FileExt`, implemented here: `read_exact_at` and
/// `write_all_at` come with it). Each suspends only the calling coroutine
/// (see the [module docs](super) for how the work is done on each
/// reactor).
///
/// **The cursor** is kept by the `File` itself, not by the kernel (D-31):
/// a read or write starts at it and moves it by the bytes it reported, so
/// a failed or cancelled call leaves it where it was. Reads and writes at
/// the cursor of one file run one at a time, in order. A file opened with
/// [`append`](OpenOptions::append) writes at the end whatever the cursor
/// says, which is then the end; a file that cannot seek (a FIFO) uses the
/// kernel's position. [`try_clone`](File::try_clone) gives a `File` that
/// *shares* this cursor, as std's clones share the kernel's. The kernel's
/// own position is brought to the cursor when the file is converted back
/// into std's ([`into_std`](File::into_std), [`IntoRawFd`]); seen through
/// [`as_raw_fd`](AsRawFd::as_raw_fd) meanwhile, it has not moved.
///
/// Dropping a `File` closes it (through the reactor when it knows the
/// descriptor, so a reused number is never mistaken for it). As with std,
/// errors on closing are ignored: call [`sync_all`](File::sync_all) first
/// to see them.
///
/// `File` is `!Send`: it belongs to the coroutines of one runtime.
///
/// # Examples
///
/// ```
/// use std::io::{Read, Seek, SeekFrom, Write};
/// use std::os::unix::fs::FileExt;
/// use async_std_api::{fs::File, run};
///
/// run(|| -> std::io::Result<()> {
///     let path = std::env::temp_dir().join(format!("file-doc-{}", std::process::id()));
///     let mut f = File::create_new(&path)?;
///     f.write_all(b"0123456789")?;
///     f.seek(SeekFrom::Start(2))?;
///     let mut two = [0; 2];
///     f.read_exact(&mut two)?;
///     assert_eq!(&two, b"23");
///     f.read_exact_at(&mut two, 8)?; // does not move the cursor
///     assert_eq!(&two, b"89");
///     assert_eq!(f.stream_position()?, 4);
///     assert_eq!(f.metadata()?.len(), 10);
///     std::fs::remove_file(&path)
/// })
/// .unwrap()
/// .unwrap();
/// ```
pub struct File {
    /// The descriptor; `None` only once `into_std` took it.
    std: Option<std::fs::File>,
    pub(super) cursor: Rc<Cursor>,
    /// The reactor was given this descriptor (FI3: it is closed through it).
    pub(super) registered: Cell<bool>,
}

impl File {
    /// Opens a file for reading: [`std::fs::File::open`], in the reactor or
    /// on the blocking pool (see [`OpenOptions::open`]).
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::open`] (`NotFound`, `PermissionDenied`, ...);
    /// the calling coroutine's cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// As [`OpenOptions::open`].
    #[track_caller]
    pub fn open<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new().read(true).open(path)
    }

    /// Opens a file for writing, creating it or truncating it:
    /// [`std::fs::File::create`], as [`OpenOptions::open`].
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::create`]; the cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// As [`open`](File::open); a cancelled create may still have created
    /// or truncated the file.
    #[track_caller]
    pub fn create<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
    }

    /// Creates a new file for reading and writing, failing if it exists:
    /// [`std::fs::File::create_new`], as [`OpenOptions::open`].
    ///
    /// # Errors
    ///
    /// `AlreadyExists` if `path` exists, else as
    /// [`std::fs::File::create_new`]; the cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// As [`create`](File::create).
    #[track_caller]
    pub fn create_new<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
    }

    /// A blank [`OpenOptions`]: [`std::fs::File::options`].
    #[must_use]
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Adopts a std file: the cursor starts at its offset. Same as
    /// `File::from(file)`.
    #[must_use]
    pub fn from_std(file: std::fs::File) -> File {
        let (mode, pos) = probe(&file);
        File {
            std: Some(file),
            cursor: Rc::new(Cursor::new(mode, pos)),
            registered: Cell::new(false),
        }
    }

    /// The std file back, its offset set to this file's cursor (for a
    /// seekable file). If the reactor was given the descriptor, the std
    /// file gets a duplicate and the original is closed through the
    /// reactor, so the reactor never keeps a stale entry for its number.
    #[must_use]
    pub fn into_std(mut self) -> std::fs::File {
        let file = self
            .std
            .take()
            .expect("a File holds its descriptor until converted");
        if self.cursor.mode.get() != Mode::Stream {
            let mut r = &file;
            let _ = r.seek(SeekFrom::Start(self.cursor.pos.get()));
        }
        if self.registered.get() {
            if let Ok(dup) = file.try_clone() {
                net::close(OwnedFd::from(file));
                return dup;
            }
        }
        file
    }

    pub(super) fn std(&self) -> &std::fs::File {
        self.std
            .as_ref()
            .expect("a File holds its descriptor until converted")
    }

    /// Truncates or extends the file to `size` bytes:
    /// [`std::fs::File::set_len`] (`ftruncate`), in the reactor or on the
    /// blocking pool (module docs). The cursor does
    /// not move.
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::set_len`] (the file must be open for writing);
    /// the cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point; a change made before the cancellation was seen
    /// is reported made (in the reactor), or a cancelled call is detached
    /// and may still change the length (on the pool).
    #[track_caller]
    pub fn set_len(&self, size: u64) -> io::Result<()> {
        if native::ftruncate_too() {
            if let Ok(r) = native::set_len(self.std(), size) {
                return r;
            }
        }
        let file = self.std().try_clone()?;
        blocking("file set_len", move || file.set_len(size))
    }

    /// Flushes the file's data and metadata to the device:
    /// [`std::fs::File::sync_all`] (`fsync`), in the reactor or on the
    /// blocking pool (module docs).
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::sync_all`]; the cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point; a cancelled sync is cancelled in the kernel (in
    /// the reactor), or detached and goes on (on the pool).
    #[track_caller]
    pub fn sync_all(&self) -> io::Result<()> {
        if native::files() {
            if let Ok(r) = native::sync(self.std(), false) {
                return r;
            }
        }
        let file = self.std().try_clone()?;
        blocking("file sync_all", move || file.sync_all())
    }

    /// Flushes the file's data (not all of its metadata):
    /// [`std::fs::File::sync_data`] (`fdatasync`), as
    /// [`sync_all`](File::sync_all).
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::sync_data`]; the cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// As [`sync_all`](File::sync_all).
    #[track_caller]
    pub fn sync_data(&self) -> io::Result<()> {
        if native::files() {
            if let Ok(r) = native::sync(self.std(), true) {
                return r;
            }
        }
        let file = self.std().try_clone()?;
        blocking("file sync_data", move || file.sync_data())
    }

    /// The file's metadata: [`std::fs::File::metadata`], on the blocking
    /// pool.
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::metadata`]; the cancellation.
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
        let file = self.std().try_clone()?;
        blocking("file metadata", move || file.metadata())
    }

    /// A new `File` for the same open file (`dup`), sharing this one's
    /// cursor (as std's clones share the kernel's): a read through either
    /// moves both. It does not suspend (duplicating a descriptor never
    /// waits for the disk).
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::try_clone`] (`EMFILE`, ...).
    pub fn try_clone(&self) -> io::Result<File> {
        Ok(File {
            std: Some(self.std().try_clone()?),
            cursor: self.cursor.clone(),
            registered: Cell::new(false),
        })
    }

    /// Changes the file's permissions: [`std::fs::File::set_permissions`],
    /// on the blocking pool.
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::set_permissions`]; the cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point; a cancelled change is detached and may still
    /// be made.
    #[track_caller]
    pub fn set_permissions(&self, perm: Permissions) -> io::Result<()> {
        let file = self.std().try_clone()?;
        blocking("file set_permissions", move || file.set_permissions(perm))
    }

    /// Changes the file's access and modification times:
    /// [`std::fs::File::set_times`], on the blocking pool.
    ///
    /// # Errors
    ///
    /// As [`std::fs::File::set_times`]; the cancellation.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// As [`set_permissions`](File::set_permissions).
    #[track_caller]
    pub fn set_times(&self, times: FileTimes) -> io::Result<()> {
        let file = self.std().try_clone()?;
        blocking("file set_times", move || file.set_times(times))
    }

    /// Changes the file's modification time:
    /// [`std::fs::File::set_modified`], on the blocking pool.
    ///
    /// # Errors
    ///
    /// As [`set_times`](File::set_times).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// As [`set_permissions`](File::set_permissions).
    #[track_caller]
    pub fn set_modified(&self, time: SystemTime) -> io::Result<()> {
        self.set_times(FileTimes::new().set_modified(time))
    }
}

impl Drop for File {
    fn drop(&mut self) {
        if let Some(file) = self.std.take() {
            if self.registered.get() {
                // FI3: the reactor forgets the number before it is reused.
                net::close(OwnedFd::from(file));
            }
        }
    }
}

impl Read for &File {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_cursor(buf)
    }

    #[track_caller]
    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        let buf = bufs
            .iter_mut()
            .find(|b| !b.is_empty())
            .map_or(&mut [][..], |b| &mut **b);
        self.read_cursor(buf)
    }
}

impl Read for File {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_cursor(buf)
    }

    #[track_caller]
    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        (&*self).read_vectored(bufs)
    }
}

impl Write for &File {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_cursor(buf)
    }

    #[track_caller]
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let buf = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &**b);
        self.write_cursor(buf)
    }

    /// Nothing to do: a `File` keeps no bytes of its own (each write has
    /// reached the kernel when it returns), as std's.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for File {
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_cursor(buf)
    }

    #[track_caller]
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        (&*self).write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for &File {
    #[track_caller]
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.seek_cursor(pos)
    }
}

impl Seek for File {
    #[track_caller]
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.seek_cursor(pos)
    }
}

/// Positional reads and writes (`pread`/`pwrite`), which neither use nor
/// move the cursor and take no turn with the cursor's calls.
impl FileExt for File {
    #[track_caller]
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.pread(buf, offset)
    }

    #[track_caller]
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.pwrite(buf, offset)
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.std().as_fd()
    }
}

impl AsRawFd for File {
    fn as_raw_fd(&self) -> RawFd {
        self.std().as_raw_fd()
    }
}

impl IntoRawFd for File {
    fn into_raw_fd(self) -> RawFd {
        self.into_std().into_raw_fd()
    }
}

impl From<std::fs::File> for File {
    fn from(file: std::fs::File) -> File {
        File::from_std(file)
    }
}

impl From<File> for std::fs::File {
    fn from(file: File) -> std::fs::File {
        file.into_std()
    }
}

impl From<File> for OwnedFd {
    fn from(file: File) -> OwnedFd {
        file.into_std().into()
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("File");
        if let Some(file) = &self.std {
            d.field("fd", &file.as_raw_fd());
        }
        d.field("cursor", &self.cursor.pos.get())
            .field("mode", &self.cursor.mode.get())
            .finish()
    }
}
