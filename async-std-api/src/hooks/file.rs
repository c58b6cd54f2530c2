//! `open`, `openat`, `fsync`, `fdatasync`: the reactor's requests on
//! io_uring (`AA_CAP_IO_FILE`, HK7 in `wait`), else on the blocking pool.
//! Opening may wait for a slow disk or network file system, or for a
//! FIFO's other end; syncing waits for the disk.
//!
//! - **FL1** The pool thread opens a copy of the path and owns the new
//!   descriptor until the caller takes it: a coroutine cancelled while it
//!   waits fails with `ECANCELED` and the descriptor nobody took is closed.
//! - **FL2** An open with `O_NONBLOCK` cannot wait (a FIFO opens at once),
//!   so it is made at once; so is every open outside a coroutine.
//! - **FL3** A sync touches no caller memory: a cancelled waiter returns
//!   `ECANCELED` while the sync finishes on its own.
#![allow(unsafe_code)]
// The `#[no_mangle]` entry points are public to the linker, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};

use super::fds;
use super::wait::{self, PoolError};
use super::{fail, real, set_errno};

/// FL1: opens `path` relative to `dirfd` on the pool.
fn open_on_pool(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if path.is_null() || flags & libc::O_NONBLOCK != 0 {
        // SAFETY: the caller's contract (FL2).
        return note(unsafe { real::openat64(dirfd, path, flags, mode) });
    }
    // SAFETY: a non-null C string the caller passed.
    let borrowed = unsafe { CStr::from_ptr(path) };
    // HK7: the reactor's own open where it has one.
    if let Some(r) = wait::open_in_ring(dirfd, borrowed, flags, mode) {
        return match r {
            Ok(fd) => note(fd),
            Err(e) => fail(e),
        };
    }
    let owned: CString = borrowed.to_owned();
    let work = move || {
        // SAFETY: our copy of the path.
        let fd = unsafe { real::openat64(dirfd, owned.as_ptr(), flags, mode) };
        if fd < 0 {
            Err(super::errno())
        } else {
            // SAFETY: a descriptor open just returned, owned by nobody else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    };
    match wait::on_pool("hooked open", work) {
        Ok(Ok(fd)) => note(fd.into_raw_fd()),
        Ok(Err(e)) => fail(e),
        Err(PoolError::Cancelled) => fail(libc::ECANCELED),
        // SAFETY: the caller's contract.
        Err(PoolError::Unavailable) => note(unsafe { real::openat64(dirfd, path, flags, mode) }),
    }
}

/// FD2: a new descriptor's kind is learned on its first transfer.
fn note(fd: c_int) -> c_int {
    if fd >= 0 {
        let _ = fds::forget(fd);
    }
    fd
}

/// Hooked `open(2)`. Declared with the mode as a fixed third argument:
/// on the x86-64 and AArch64 Linux calling conventions a variadic call
/// passes it in the same register, and it is read only when `flags` asks
/// for it (`O_CREAT`, `O_TMPFILE`), as the C library reads it.
///
/// # Safety
///
/// As `open(2)`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { open64(path, flags, mode) }
}

/// Hooked `open64`.
///
/// # Safety
///
/// As `open(2)`.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return note(unsafe { real::open64(path, flags, mode) });
    }
    open_on_pool(libc::AT_FDCWD, path, flags, mode)
}

/// Hooked `openat(2)`.
///
/// # Safety
///
/// As `openat(2)`.
#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { openat64(dirfd, path, flags, mode) }
}

/// Hooked `openat64`.
///
/// # Safety
///
/// As `openat(2)`.
#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return note(unsafe { real::openat64(dirfd, path, flags, mode) });
    }
    open_on_pool(dirfd, path, flags, mode)
}

/// Hooked `__open_2` (`open` without a mode in C code built with
/// `_FORTIFY_SOURCE`).
///
/// # Safety
///
/// As `open(2)` without `O_CREAT`.
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { open64(path, flags, 0) }
}

/// Hooked `__open64_2`.
///
/// # Safety
///
/// As `open(2)` without `O_CREAT`.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { open64(path, flags, 0) }
}

/// Hooked `__openat_2`.
///
/// # Safety
///
/// As `openat(2)` without `O_CREAT`.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { openat64(dirfd, path, flags, 0) }
}

/// Hooked `__openat64_2`.
///
/// # Safety
///
/// As `openat(2)` without `O_CREAT`.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { openat64(dirfd, path, flags, 0) }
}

/// FL3: a sync on the pool (the reactor's request where it has one, HK7).
fn sync_on_pool(fd: c_int, data_only: bool) -> c_int {
    if let Some(r) = wait::sync_in_ring(fd, data_only) {
        return match r {
            Ok(()) => 0,
            Err(e) => fail(e),
        };
    }
    let work = move || {
        // SAFETY: the caller's descriptor; a sync touches no memory.
        let r = unsafe {
            if data_only {
                real::fdatasync(fd)
            } else {
                real::fsync(fd)
            }
        };
        if r < 0 {
            Err(super::errno())
        } else {
            Ok(())
        }
    };
    let what = if data_only {
        "hooked fdatasync"
    } else {
        "hooked fsync"
    };
    match wait::on_pool(what, work) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => fail(e),
        Err(PoolError::Cancelled) => fail(libc::ECANCELED),
        Err(PoolError::Unavailable) => {
            set_errno(0);
            // SAFETY: as above.
            unsafe {
                if data_only {
                    real::fdatasync(fd)
                } else {
                    real::fsync(fd)
                }
            }
        }
    }
}

/// Hooked `fsync(2)`.
///
/// # Safety
///
/// As `fsync(2)`.
#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return unsafe { real::fsync(fd) };
    }
    sync_on_pool(fd, false)
}

/// Hooked `fdatasync(2)`.
///
/// # Safety
///
/// As `fdatasync(2)`.
#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return unsafe { real::fdatasync(fd) };
    }
    sync_on_pool(fd, true)
}
