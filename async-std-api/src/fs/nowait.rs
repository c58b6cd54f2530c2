//! The page-cache read (FI5 in `rw`): `preadv2` with `RWF_NOWAIT`, which
//! returns what the page cache holds and fails with `EAGAIN` rather than
//! wait for the disk. Kept apart so the unsafe inventory names it (STYLE
//! S13).
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Reads into `buf` at `offset` (the file position when `None`) from the
/// page cache only.
///
/// # Errors
///
/// `EAGAIN` when the read would wait for the disk; `EOPNOTSUPP` where the
/// file system refuses the flag; the read's own errors.
pub(super) fn pread_cached(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    offset: Option<u64>,
) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let off = match offset {
        Some(o) => {
            libc::off_t::try_from(o).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?
        }
        None => -1,
    };
    // SAFETY: `iov` describes `buf`, borrowed mutably for the call, and
    // `fd` is open for it; the kernel writes at most `buf.len()` bytes.
    let r = unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, off, libc::RWF_NOWAIT) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}
