//! The file requests a reactor may run itself (ABI 1.1, `AA_CAP_IO_FILE`
//! and `AA_CAP_IO_FTRUNCATE`: io_uring's `OPENAT`, `STATX`, `FSYNC`,
//! `UNLINKAT`, `RENAMEAT`, `MKDIRAT`, `FTRUNCATE`), and which reactor runs
//! what.
//!
//! Rules:
//! - **NA1** A request goes to the reactor only if the running instance
//!   has its capability (`caps` narrowed by `instance_caps`); otherwise,
//!   and for a path the ring cannot take (empty, or with a NUL byte, which
//!   std refuses with its own error), the caller runs std's call on the
//!   pool. A reactor that refuses a request anyway (an ABI status, not an
//!   errno) is answered the same way: [`Refused`], then the pool.
//! - **NA2** Paths are the caller's bytes, borrowed by the request until
//!   its completion (IO1); a relative path is relative to the current
//!   directory (`AA_IO_CWD`), as std's.
//! - **NA3** A descriptor an open returns belongs to the host at once, a
//!   cancelled open's included (the ABI reports it when the open completed
//!   anyway: the file is returned and the cancellation stays pending, P-08).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::panic::Location;
use std::path::Path;

use async_abi::{AaStat, AA_CAP_IO_FILE, AA_CAP_IO_FTRUNCATE, AA_CAP_IO_NATIVE, AA_IO_CWD};

use crate::core::runtime::{self, io::IoReq};
use crate::net;

/// Whether the running reactor instance has `bit`; a user call that falls
/// back without it is said once (F10).
fn has(bit: u64) -> bool {
    runtime::with_runtime(|rt| rt.reactor.has_or_falls_back(bit)).unwrap_or(false)
}

/// Reads and writes at offsets run in the reactor.
pub(super) fn rw() -> bool {
    has(AA_CAP_IO_NATIVE)
}

/// Open, stat, sync, unlink, rename and mkdir run in the reactor.
pub(super) fn files() -> bool {
    has(AA_CAP_IO_FILE)
}

/// `ftruncate` runs in the reactor.
pub(super) fn ftruncate_too() -> bool {
    has(AA_CAP_IO_FTRUNCATE)
}

/// The reactor did not run a request it was given (NA1): the caller falls
/// back to the pool.
#[derive(Debug)]
pub(super) struct Refused;

/// The result of a native request: the system's answer, or [`Refused`].
pub(super) type Native<T> = Result<io::Result<T>, Refused>;

/// The bytes of a path the ring can take (NA1), or `None`.
fn ring_path(path: &Path) -> Option<&[u8]> {
    let b = path.as_os_str().as_bytes();
    (!b.is_empty() && !b.contains(&0)).then_some(b)
}

/// The current directory as a request's directory descriptor (NA2).
struct Cwd;

impl AsRawFd for Cwd {
    fn as_raw_fd(&self) -> RawFd {
        AA_IO_CWD as RawFd
    }
}

/// Submits one request; the reactor's refusal (`AA_E_UNSUPPORTED`, which
/// [`net::os_error`] makes an `Unsupported` error without an errno) is
/// [`Refused`]; an errno, or the reactor's own failure (F11), is the
/// caller's error.
#[track_caller]
fn submit(
    fd: &impl AsRawFd,
    req: IoReq<'_>,
    what: impl FnOnce() -> String,
    at: &'static Location<'static>,
) -> Native<i64> {
    match net::submit(fd, req, what, at) {
        Err(e) if e.kind() == io::ErrorKind::Unsupported && e.raw_os_error().is_none() => {
            Err(Refused)
        }
        r => Ok(r),
    }
}

/// `openat(AT_FDCWD, path, flags | O_CLOEXEC, mode)` (NA3).
#[track_caller]
pub(super) fn open(path: &Path, flags: u32, mode: u32) -> Native<OwnedFd> {
    let at = Location::caller();
    let bytes = ring_path(path).ok_or(Refused)?;
    let r = submit(
        &Cwd,
        IoReq::OpenAt {
            path: bytes,
            flags,
            mode,
        },
        || format!("open {}", path.display()),
        at,
    )?;
    Ok(r.and_then(|fd| {
        runtime::io::accepted_fd(fd)
            .ok_or_else(|| io::Error::other(format!("the reactor's open returned {fd}")))
    }))
}

/// The size of the open file `file` (`statx` of the descriptor).
#[track_caller]
pub(super) fn len(file: &std::fs::File) -> Native<u64> {
    let at = Location::caller();
    let fd = file.as_raw_fd();
    let mut st = AaStat::default();
    let r = submit(
        file,
        IoReq::Statx {
            path: &[],
            nofollow: false,
            out: &mut st,
        },
        || format!("stat fd {fd}"),
        at,
    )?;
    Ok(r.map(|_| st.size))
}

/// Whether `path` exists, following symbolic links (std's `exists`).
#[track_caller]
pub(super) fn exists(path: &Path) -> Native<bool> {
    let at = Location::caller();
    let bytes = ring_path(path).ok_or(Refused)?;
    let mut st = AaStat::default();
    let r = submit(
        &Cwd,
        IoReq::Statx {
            path: bytes,
            nofollow: false,
            out: &mut st,
        },
        || format!("stat {}", path.display()),
        at,
    )?;
    Ok(match r {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    })
}

/// `fsync` or `fdatasync`.
#[track_caller]
pub(super) fn sync(file: &std::fs::File, datasync: bool) -> Native<()> {
    let at = Location::caller();
    let fd = file.as_raw_fd();
    let r = submit(
        file,
        IoReq::Fsync { datasync },
        || format!("sync fd {fd}"),
        at,
    )?;
    Ok(r.map(drop))
}

/// `ftruncate`.
#[track_caller]
pub(super) fn set_len(file: &std::fs::File, size: u64) -> Native<()> {
    let at = Location::caller();
    if i64::try_from(size).is_err() {
        return Ok(Err(io::Error::from_raw_os_error(libc::EINVAL)));
    }
    let fd = file.as_raw_fd();
    let r = submit(
        file,
        IoReq::Ftruncate(size),
        || format!("set_len fd {fd}"),
        at,
    )?;
    Ok(r.map(drop))
}

/// `unlinkat`: a file, or an empty directory.
#[track_caller]
pub(super) fn unlink(path: &Path, dir: bool) -> Native<()> {
    let at = Location::caller();
    let bytes = ring_path(path).ok_or(Refused)?;
    let r = submit(
        &Cwd,
        IoReq::UnlinkAt { path: bytes, dir },
        || format!("remove {}", path.display()),
        at,
    )?;
    Ok(r.map(drop))
}

/// `renameat`.
#[track_caller]
pub(super) fn rename(from: &Path, to: &Path) -> Native<()> {
    let at = Location::caller();
    let (Some(f), Some(t)) = (ring_path(from), ring_path(to)) else {
        return Err(Refused);
    };
    let r = submit(
        &Cwd,
        IoReq::RenameAt { from: f, to: t },
        || format!("rename {} to {}", from.display(), to.display()),
        at,
    )?;
    Ok(r.map(drop))
}

/// `mkdirat` with the permission bits `mode` (less the umask).
#[track_caller]
pub(super) fn mkdir(path: &Path, mode: u32) -> Native<()> {
    let at = Location::caller();
    let bytes = ring_path(path).ok_or(Refused)?;
    let r = submit(
        &Cwd,
        IoReq::MkdirAt { path: bytes, mode },
        || format!("create directory {}", path.display()),
        at,
    )?;
    Ok(r.map(drop))
}
