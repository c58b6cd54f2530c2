//! The file requests of ABI 1.1 as ring operations: `OPENAT`, `STATX`,
//! `FSYNC`, `UNLINKAT`, `RENAMEAT`, `MKDIRAT` and `FTRUNCATE`. The kernel
//! runs them on its own workers; the loop never blocks.
//!
//! Paths are the request's own NUL-terminated copies (the SDK's reader made
//! them at `io_submit`), kept in the op's `kind` until the final completion
//! (ops invariant O1). A statx fills the kernel's `struct statx` in the
//! op's own box; the final completion converts it into the host's `AaStat`
//! (AA-R5), before the callback.
//!
//! # Safety
//!
//! The statx box is an `UnsafeCell`: the kernel writes it through the
//! pointer it was given, and the loop reads it only after the final
//! completion (O1).

use std::cell::UnsafeCell;

use async_abi::sdk::request::{stat_from_statx, write_stat};
use async_abi::{AA_IO_DATASYNC, AA_IO_NOFOLLOW, AA_IO_REMOVEDIR};
use io_uring::{opcode, squeue, types};

use crate::ops::io::{Opcode, Request};
use crate::ops::OwnedBuf;

/// The kernel's `struct statx`, written by a `STATX` (see the module doc).
pub(crate) type StatxBuf = Box<UnsafeCell<libc::statx>>;

/// The box a statx lends the kernel.
pub(super) fn statx_buf() -> OwnedBuf {
    // SAFETY: `statx` is integers; all-zero is a valid value.
    OwnedBuf::Statx(Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() })))
}

/// The path a request names, NUL-terminated ("" if it has none).
fn path(p: &Option<std::ffi::CString>) -> *const libc::c_char {
    p.as_deref().unwrap_or(c"").as_ptr()
}

/// The entry of a file request.
pub(super) fn entry(req: &Request, buf: &OwnedBuf) -> squeue::Entry {
    let fd = types::Fd(req.fd);
    match req.opcode {
        Opcode::OpenAt => opcode::OpenAt::new(fd, path(&req.path))
            .flags(req.open_flags | libc::O_CLOEXEC)
            .mode(req.mode)
            .build(),
        Opcode::Statx => {
            let OwnedBuf::Statx(stat) = buf else {
                unreachable!("a statx owns a statx box (file.rs statx_buf)");
            };
            let mut flags = 0;
            if req.path.as_ref().is_none_or(|p| p.is_empty()) {
                flags |= libc::AT_EMPTY_PATH;
            }
            if req.has(AA_IO_NOFOLLOW) {
                flags |= libc::AT_SYMLINK_NOFOLLOW;
            }
            opcode::Statx::new(fd, path(&req.path), stat.get().cast())
                .flags(flags)
                .mask(libc::STATX_BASIC_STATS | libc::STATX_BTIME)
                .build()
        }
        Opcode::Fsync => {
            let flags = if req.has(AA_IO_DATASYNC) {
                types::FsyncFlags::DATASYNC
            } else {
                types::FsyncFlags::empty()
            };
            opcode::Fsync::new(fd).flags(flags).build()
        }
        Opcode::UnlinkAt => {
            let flags = if req.has(AA_IO_REMOVEDIR) {
                libc::AT_REMOVEDIR
            } else {
                0
            };
            opcode::UnlinkAt::new(fd, path(&req.path))
                .flags(flags)
                .build()
        }
        Opcode::RenameAt => {
            opcode::RenameAt::new(fd, path(&req.path), types::Fd(req.fd2), path(&req.path2)).build()
        }
        Opcode::MkDirAt => opcode::MkDirAt::new(fd, path(&req.path))
            .mode(req.mode)
            .build(),
        Opcode::Ftruncate => opcode::Ftruncate::new(fd, req.offset as u64).build(),
        other => unreachable!("{} is not a file request", other.name()),
    }
}

/// A statx's successful final completion: the host's `AaStat` gets the
/// kernel's answer.
pub(super) fn finish_statx(req: &Request, stat: &StatxBuf) {
    // SAFETY: the final completion was reaped: the kernel is done writing
    // the box (O1), and nothing else refers to it.
    let kernel = unsafe { &*stat.get() };
    // SAFETY: the SDK's reader checked `buf` aligned for an `AaStat` and at
    // least its size; AA-R5: the host lends it until this request's
    // callback, which has not run yet.
    unsafe { write_stat(req.buf.as_mut_ptr(), &stat_from_statx(kernel)) };
}

#[cfg(test)]
mod tests {
    //! The refusal a host falls back on, for a kernel without the file
    //! opcodes (forced through `Config::without` on a kernel that has them).

    use std::ptr;

    use async_abi::*;

    use crate::config::Config;
    use crate::ffi::{create_with, VTABLE};

    unsafe extern "C" fn never(_: *mut AaEvent, _: i64, _: *mut std::ffi::c_void) {
        panic!("a refused request called back");
    }

    fn last_error(r: *mut AaReactor) -> String {
        let mut buf = [0u8; 256];
        // SAFETY: a live reactor; `buf` is a local of its length.
        let n = unsafe { (VTABLE.last_error_message.unwrap())(r, buf.as_mut_ptr(), buf.len()) };
        String::from_utf8_lossy(&buf[..n.min(buf.len() - 1)]).into_owned()
    }

    #[test]
    fn an_instance_without_the_file_opcodes_refuses_them_naming_the_opcode() {
        let without = AA_CAP_IO_FILE | AA_CAP_IO_FTRUNCATE;
        let Some(r) = create_with(&Config {
            without,
            ..Config::default()
        }) else {
            return;
        };
        // SAFETY: a live reactor of this thread.
        let caps = unsafe { (VTABLE.instance_caps.unwrap())(r) };
        assert_eq!(caps, VTABLE.caps & !without);
        let cases = [
            (AA_IO_OPENAT, "IORING_OP_OPENAT (linux 5.6)"),
            (AA_IO_FTRUNCATE, "IORING_OP_FTRUNCATE (linux 6.9)"),
        ];
        for (opcode, lacking) in cases {
            let mut op = AaIoOp::new(opcode, AA_IO_CWD);
            op.path = AaBytes::from_slice(b"/");
            op.offset = 0;
            if opcode == AA_IO_FTRUNCATE {
                op.fd = 0;
            }
            let mut ev = ptr::null_mut();
            // SAFETY: a live reactor; `op` and its path are valid for the
            // call; the callback must never run.
            let status = unsafe {
                (VTABLE.io_submit.unwrap())(r, &mut op, 0, Some(never), ptr::null_mut(), &mut ev)
            };
            assert_eq!(status, AA_E_UNSUPPORTED);
            assert!(ev.is_null());
            let name = async_abi::sdk::request::Opcode::from_raw(opcode)
                .unwrap()
                .name();
            assert_eq!(
                last_error(r),
                format!("io_submit: {name} needs {lacking}, which this kernel's io_uring lacks")
            );
        }
        // SAFETY: a live reactor of this thread.
        assert!(unsafe { (VTABLE.run_once.unwrap())(r, 0) } >= 0);
        // SAFETY: as above; nothing was created.
        assert_eq!(unsafe { (VTABLE.destroy.unwrap())(r) }, AA_OK);
    }
}
