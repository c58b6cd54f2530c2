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
    // A bare system call, as the host's socket reads (`recv` in the
    // runtime's io module): glibc's `preadv2` is a thread-cancellation point
    // and spends about 30 of its 70 instructions per call switching
    // asynchronous cancellation on and off, which nothing here uses. On
    // 64-bit Linux the whole offset is the low word (`pos_l`; `-1`: the
    // file position) and the high word is ignored; glibc passes `off >> 32`
    // there, and so do we.
    // SAFETY: `iov` describes `buf`, borrowed mutably for the call, and
    // `fd` is open for it; the kernel writes at most `buf.len()` bytes.
    // Every argument is a `c_long` or a pointer, as wide as the `long` that
    // `syscall` reads.
    #[cfg(target_pointer_width = "64")]
    let r = unsafe {
        libc::syscall(
            libc::SYS_preadv2,
            libc::c_long::from(fd.as_raw_fd()),
            &iov as *const libc::iovec,
            1 as libc::c_long,
            off as libc::c_long,
            ((off as u64) >> 32) as libc::c_long,
            libc::c_long::from(libc::RWF_NOWAIT),
        )
    };
    // SAFETY: as above; glibc splits the offset into the two words.
    #[cfg(not(target_pointer_width = "64"))]
    let r = unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, off, libc::RWF_NOWAIT) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, SeekFrom, Write};
    use std::os::fd::AsFd;

    use super::pread_cached;

    /// A file in the temporary directory, removed when dropped.
    struct Temp(std::path::PathBuf);

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn temp(name: &str) -> (Temp, std::fs::File) {
        let path = std::env::temp_dir().join(format!("nowait-{name}-{}", std::process::id()));
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        (Temp(path), f)
    }

    /// Whether the file system refused the flag: then there is nothing of
    /// this path to check.
    fn refused(e: &std::io::Error) -> bool {
        e.raw_os_error() == Some(libc::EOPNOTSUPP)
    }

    #[test]
    fn a_positional_read_takes_the_bytes_at_the_offset_and_leaves_the_position() {
        let (_t, mut f) = temp("at");
        let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        f.seek(SeekFrom::Start(100)).unwrap();
        let mut buf = [0u8; 64];
        match pread_cached(f.as_fd(), &mut buf, Some(5000)) {
            Ok(n) => {
                assert_eq!(n, 64);
                assert_eq!(&buf[..], &data[5000..5064]);
            }
            Err(e) if refused(&e) => return,
            Err(e) => panic!("a cached read: {e}"),
        }
        assert_eq!(f.stream_position().unwrap(), 100, "pread moves no cursor");
        // Past the end: end of file, not an error.
        assert_eq!(pread_cached(f.as_fd(), &mut buf, Some(8192)).unwrap(), 0);
    }

    #[test]
    fn an_offset_above_4_gib_is_not_cut_to_its_low_word() {
        // The system call takes the offset in two words: the bytes at
        // 5 GiB + 7 must not come from 1 GiB + 7, its low word (a sparse
        // file: both pages were just written, so both are cached).
        let (_t, mut f) = temp("high");
        let high = (5u64 << 30) + 7;
        let low = high - (4u64 << 30);
        f.seek(SeekFrom::Start(low)).unwrap();
        f.write_all(b"below").unwrap();
        f.seek(SeekFrom::Start(high)).unwrap();
        f.write_all(b"above").unwrap();
        let mut buf = [0xAAu8; 5];
        match pread_cached(f.as_fd(), &mut buf, Some(high)) {
            Ok(n) => assert_eq!(&buf[..n], b"above"),
            Err(e) if refused(&e) => return,
            Err(e) => panic!("a cached read at 5 GiB: {e}"),
        }
        pread_cached(f.as_fd(), &mut buf, Some(low)).unwrap();
        assert_eq!(&buf, b"below");
    }

    #[test]
    fn without_an_offset_it_reads_at_the_file_position_and_moves_it() {
        let (_t, mut f) = temp("cursor");
        f.write_all(b"0123456789").unwrap();
        f.seek(SeekFrom::Start(3)).unwrap();
        let mut buf = [0u8; 4];
        match pread_cached(f.as_fd(), &mut buf, None) {
            Ok(n) => assert_eq!(&buf[..n], b"3456"),
            Err(e) if refused(&e) => return,
            Err(e) => panic!("a cached read at the position: {e}"),
        }
        assert_eq!(f.stream_position().unwrap(), 7);
    }

    #[test]
    fn a_negative_offset_is_invalid_input() {
        let (_t, f) = temp("neg");
        let mut buf = [0u8; 4];
        let e = pread_cached(f.as_fd(), &mut buf, Some(u64::MAX)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    }
}
