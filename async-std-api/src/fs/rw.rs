//! How a [`File`]'s bytes move: positional requests through the reactor
//! when it runs I/O natively, the blocking pool otherwise; and the cursor
//! the file keeps itself.
//!
//! Owns: each file's [`Cursor`] (shared by the file and its `try_clone`s)
//! and the pool's bounce buffer.
//!
//! Invariants:
//! - **FI1** The cursor moves only by what a read or write that completed
//!   reported: a failed or cancelled one leaves it where it was (D-31).
//!   In [`Mode::Append`] a write leaves it at the end of the file (the
//!   kernel's position after the append); in [`Mode::Stream`] the kernel's
//!   own position is the cursor.
//! - **FI2** Cursor operations (read, write, seek) of one cursor run one at
//!   a time, in the order they asked (its lock), as the kernel's position
//!   lock orders them for std's files. Positional calls (`read_at`,
//!   `write_at`) take no turn.
//! - **FI3** The pool never gets the file's own descriptor, only a
//!   duplicate that its work owns and closes: so detached pool work never
//!   keeps the `File`'s descriptor open, and a descriptor a native reactor
//!   knows is closed through it (`AA_IO_CLOSE`) when the `File` goes.
//! - **FI4** A native request borrows the caller's buffer until its
//!   completion (IO1 in `core::runtime::ffi::io`), cancellation included.
//!   Pool work never touches the caller's buffer: it reads into or writes
//!   from a buffer it owns (a detached call keeps it), copied on the loop
//!   thread.
//! - **FI5** A read first asks the kernel for what the page cache holds,
//!   on the loop thread and without waiting (`preadv2` with `RWF_NOWAIT`,
//!   at most [`CACHED_READ`] bytes): a hit (or end of file) returns at
//!   once, with no pool round trip and its two cross-thread wake-ups, and
//!   on io_uring with no ring operation (one system call against a request
//!   record, an event and a completion: 4 KiB random reads 3.4 to about
//!   1.3 µs); only a read that would wait for the disk (`EAGAIN`) goes to
//!   the ring or, without native reads, the pool. A hit may be short (the cache held
//!   part of it), as any read may. Each such read is a cancellation point
//!   and takes a unit of the cooperative budget (B2), so a coroutine
//!   reading a cached file in a loop still gives the loop back. A file
//!   whose system refuses the flag (`EOPNOTSUPP`) is not asked again.

use std::cell::Cell;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::FileExt;
use std::panic::Location;

use super::file::File;
use super::native;
use super::nowait;
use super::pool::blocking;
use crate::core::budget;
use crate::core::readiness;
use crate::core::runtime::{self, io::IoReq};
use crate::core::wait::{checkpoint, with_me};
use crate::net;
use crate::sync::Mutex;

/// The most one pool read or write moves (FI4's buffer; tokio's is the
/// same): a larger request is a short read or write.
pub(super) const POOL_CHUNK: usize = 2 << 20;

/// The most a read takes from the page cache on the loop thread (FI5):
/// about 50 µs of copying here, so the loop is never held longer.
pub(super) const CACHED_READ: usize = 256 * 1024;

/// How a file's cursor is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Reads and writes at the cursor, which this side keeps.
    Positional,
    /// `O_APPEND`: reads at the cursor; every write goes to the end, after
    /// which the cursor is the end (the kernel ignores a write's offset).
    Append,
    /// Not seekable (a FIFO, a terminal): the kernel's position, requests
    /// without an offset.
    Stream,
}

/// The cursor of a file and its clones (FI1, FI2).
pub(super) struct Cursor {
    pub(super) pos: Cell<u64>,
    pub(super) mode: Cell<Mode>,
    lock: Mutex<()>,
    /// The pool's bounce buffer between calls (FI4).
    spare: Cell<Option<Vec<u8>>>,
    /// FI5: the file refused `RWF_NOWAIT`; its reads go to the pool.
    no_cached: Cell<bool>,
}

impl Cursor {
    pub(super) fn new(mode: Mode, pos: u64) -> Cursor {
        Cursor {
            pos: Cell::new(pos),
            mode: Cell::new(mode),
            lock: Mutex::new(()),
            spare: Cell::new(None),
            no_cached: Cell::new(false),
        }
    }

    fn take_spare(&self) -> Vec<u8> {
        self.spare.take().unwrap_or_default()
    }

    fn put_spare(&self, v: Vec<u8>) {
        if v.capacity() <= POOL_CHUNK {
            self.spare.set(Some(v));
        }
    }
}

/// How the cursor of a file just opened or adopted is kept, and where it
/// starts: `lseek` and `fcntl`, which never wait for the disk.
pub(super) fn probe(f: &std::fs::File) -> (Mode, u64) {
    let mut r = f;
    match r.stream_position() {
        Err(_) => (Mode::Stream, 0),
        Ok(pos) => match runtime::io::is_append(f.as_fd()) {
            Ok(true) => (Mode::Append, pos),
            _ => (Mode::Positional, pos),
        },
    }
}

/// `EINVAL`, as the kernel answers a position it cannot take (std's error
/// for the same seek or `pread`).
fn invalid() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

fn check_offset(offset: u64) -> io::Result<()> {
    if i64::try_from(offset).is_err() {
        return Err(invalid());
    }
    Ok(())
}

/// An empty read or write: no work for the pool, but still a
/// cancellation point, as every call that could suspend.
#[track_caller]
fn nothing_to_move() -> io::Result<usize> {
    with_me("file I/O", |_, me| checkpoint(me))?;
    Ok(0)
}

fn is_errno(e: &io::Error, errno: i32) -> bool {
    e.raw_os_error() == Some(errno)
}

impl File {
    /// Submits one request on the file's descriptor through the reactor.
    #[track_caller]
    fn submit(&self, req: IoReq<'_>, what: &'static str, offset: Option<u64>) -> io::Result<usize> {
        let at = Location::caller();
        let file = self.std();
        let fd = file.as_raw_fd();
        // FI3: from now on the reactor knows this descriptor.
        self.registered.set(true);
        let n = net::submit(
            file,
            req,
            || match offset {
                Some(o) => format!("{what} fd {fd} at {o}"),
                None => format!("{what} fd {fd}"),
            },
            at,
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// `pread`: from the page cache at once (FI5), else natively, else (or
    /// when the ring says `EAGAIN`, which a reactor that may not wait for
    /// the disk can) on the pool.
    #[track_caller]
    pub(super) fn pread(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        check_offset(offset)?;
        if let Some(r) = self.cached_read(buf, Some(offset)) {
            return r;
        }
        if native::rw() {
            match self.submit(IoReq::ReadAt(&mut *buf, offset), "read", Some(offset)) {
                Err(e) if is_errno(&e, libc::EAGAIN) => {}
                r => return r,
            }
        }
        self.pool_read(buf, Some(offset))
    }

    /// FI5: what the page cache holds of the read, without waiting; `None`
    /// when the read would wait for the disk (or the file refuses the
    /// flag), for the pool to make.
    #[track_caller]
    fn cached_read(&self, buf: &mut [u8], offset: Option<u64>) -> Option<io::Result<usize>> {
        if buf.is_empty() || self.cursor.no_cached.get() {
            return None;
        }
        let at = Location::caller();
        if let Err(e) = with_me("file read", |rt, me| -> io::Result<()> {
            checkpoint(me)?;
            budget::spend(rt, me, at).map_err(|i| readiness::interrupted(me, i))
        }) {
            return Some(Err(e));
        }
        let len = buf.len().min(CACHED_READ);
        let e = match nowait::pread_cached(self.std().as_fd(), &mut buf[..len], offset) {
            Ok(n) => return Some(Ok(n)),
            Err(e) => e,
        };
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => None,
            Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) | Some(libc::ENOSYS) => {
                self.cursor.no_cached.set(true);
                None
            }
            _ => Some(Err(e)),
        }
    }

    /// `pwrite`, as [`File::pread`].
    #[track_caller]
    pub(super) fn pwrite(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        check_offset(offset)?;
        if native::rw() {
            match self.submit(IoReq::WriteAt(buf, offset), "write", Some(offset)) {
                Err(e) if is_errno(&e, libc::EAGAIN) => {}
                r => return r,
            }
        }
        self.pool_write(buf, Some(offset)).map(|(n, _)| n)
    }

    /// A read at the kernel's position.
    #[track_caller]
    fn read_stream(&self, buf: &mut [u8]) -> io::Result<usize> {
        if native::rw() {
            match self.submit(IoReq::Read(&mut *buf), "read", None) {
                Err(e) if is_errno(&e, libc::EAGAIN) => {}
                r => return r,
            }
        }
        self.pool_read(buf, None)
    }

    /// A write at the kernel's position (or the end, with `O_APPEND`); with
    /// the kernel's position after it, when it can tell.
    #[track_caller]
    fn write_stream(&self, buf: &[u8]) -> io::Result<(usize, Option<u64>)> {
        if native::rw() {
            match self.submit(IoReq::Write(buf), "write", None) {
                Err(e) if is_errno(&e, libc::EAGAIN) => {}
                Err(e) => return Err(e),
                Ok(n) => {
                    let mut r = self.std();
                    return Ok((n, r.stream_position().ok()));
                }
            }
        }
        self.pool_write(buf, None)
    }

    /// A read on the pool, through the cursor's bounce buffer (FI3, FI4).
    #[track_caller]
    fn pool_read(&self, buf: &mut [u8], offset: Option<u64>) -> io::Result<usize> {
        if buf.is_empty() {
            return nothing_to_move();
        }
        let len = buf.len().min(POOL_CHUNK);
        let file = self.std().try_clone()?;
        let mut bounce = self.cursor.take_spare();
        let (bounce, r) = blocking("file read", move || {
            if bounce.len() < len {
                bounce.resize(len, 0);
            }
            let r = match offset {
                Some(o) => file.read_at(&mut bounce[..len], o),
                None => (&file).read(&mut bounce[..len]),
            };
            Ok((bounce, r))
        })?;
        let n = r.map(|n| n.min(len));
        if let Ok(n) = n {
            buf[..n].copy_from_slice(&bounce[..n]);
        }
        self.cursor.put_spare(bounce);
        n
    }

    /// A write on the pool (FI3, FI4); with the kernel's position after it
    /// when written at the kernel's position.
    #[track_caller]
    fn pool_write(&self, buf: &[u8], offset: Option<u64>) -> io::Result<(usize, Option<u64>)> {
        if buf.is_empty() {
            return nothing_to_move().map(|n| (n, None));
        }
        let len = buf.len().min(POOL_CHUNK);
        let file = self.std().try_clone()?;
        let mut bounce = self.cursor.take_spare();
        bounce.clear();
        bounce.extend_from_slice(&buf[..len]);
        let (bounce, r) = blocking("file write", move || {
            let r = match offset {
                Some(o) => file.write_at(&bounce, o).map(|n| (n, None)),
                None => (&file)
                    .write(&bounce)
                    .map(|n| (n, (&file).stream_position().ok())),
            };
            Ok((bounce, r))
        })?;
        self.cursor.put_spare(bounce);
        r
    }

    /// `Read::read` at the cursor (FI1, FI2).
    #[track_caller]
    pub(super) fn read_cursor(&self, buf: &mut [u8]) -> io::Result<usize> {
        let _turn = self.cursor.lock.lock()?;
        loop {
            match self.cursor.mode.get() {
                Mode::Stream => return self.read_stream(buf),
                Mode::Positional | Mode::Append => {
                    let pos = self.cursor.pos.get();
                    match self.pread(buf, pos) {
                        // A device that seeks but cannot `pread`: from now
                        // on the kernel's position.
                        Err(e) if is_errno(&e, libc::ESPIPE) => {
                            self.cursor.mode.set(Mode::Stream);
                        }
                        Err(e) => return Err(e),
                        Ok(n) => {
                            self.cursor.pos.set(pos + n as u64);
                            return Ok(n);
                        }
                    }
                }
            }
        }
    }

    /// `Write::write` at the cursor (FI1, FI2).
    #[track_caller]
    pub(super) fn write_cursor(&self, buf: &[u8]) -> io::Result<usize> {
        let _turn = self.cursor.lock.lock()?;
        loop {
            match self.cursor.mode.get() {
                Mode::Stream => return self.write_stream(buf).map(|(n, _)| n),
                Mode::Append => {
                    let (n, end) = self.write_stream(buf)?;
                    if let Some(end) = end {
                        self.cursor.pos.set(end);
                    }
                    return Ok(n);
                }
                Mode::Positional => {
                    let pos = self.cursor.pos.get();
                    match self.pwrite(buf, pos) {
                        Err(e) if is_errno(&e, libc::ESPIPE) => {
                            self.cursor.mode.set(Mode::Stream);
                        }
                        Err(e) => return Err(e),
                        Ok(n) => {
                            self.cursor.pos.set(pos + n as u64);
                            return Ok(n);
                        }
                    }
                }
            }
        }
    }

    /// The file's size: a `statx` of the descriptor in the reactor, or
    /// `fstat` on the pool.
    #[track_caller]
    pub(super) fn len(&self) -> io::Result<u64> {
        if native::files() {
            if let Ok(r) = native::len(self.std()) {
                return r;
            }
        }
        let file = self.std().try_clone()?;
        blocking("file size", move || file.metadata().map(|m| m.len()))
    }

    /// `Seek::seek` (FI2): the cursor, or the kernel's position for a
    /// stream. Only `SeekFrom::End` asks the file (its size).
    #[track_caller]
    pub(super) fn seek_cursor(&self, style: SeekFrom) -> io::Result<u64> {
        let _turn = self.cursor.lock.lock()?;
        if self.cursor.mode.get() == Mode::Stream {
            // `lseek` never waits: it fails (`ESPIPE`) or moves a number.
            let mut r = self.std();
            return r.seek(style);
        }
        let from = |base: u64, d: i64| {
            base.checked_add_signed(d)
                .filter(|p| i64::try_from(*p).is_ok())
                .ok_or_else(invalid)
        };
        let new = match style {
            SeekFrom::Start(n) => {
                check_offset(n)?;
                n
            }
            SeekFrom::Current(d) => from(self.cursor.pos.get(), d)?,
            SeekFrom::End(d) => from(self.len()?, d)?,
        };
        self.cursor.pos.set(new);
        Ok(new)
    }
}
