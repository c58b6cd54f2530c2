//! Reading an `AaIoOp` the way the ABI says, once for every Rust reactor:
//! `min(struct_size, ours)` bytes into a zeroed copy (so a 1.0 host's
//! shorter struct is served), then the checks every opcode needs (flags,
//! buffers, addresses, paths, descriptors), giving a typed [`Request`] or
//! a one-line [`Refusal`].
//!
//! What it leaves to the reactor: whether it runs the opcode at all
//! (capabilities: [`Opcode::capability`]) and checks that need the
//! descriptor (`AA_IO_PEEK` only on a socket).
//!
//! # Safety
//!
//! [`read`] reads the host's struct, within the `struct_size` it declares,
//! and the paths it points to, for `len` bytes each (AA-R2: borrowed for
//! the call; the copies are the reactor's). The buffers and addresses it
//! returns as raw pointers stay the host's (AA-R5): [`Request`] only carries
//! them to the reactor, which wraps them under its own contract.

use std::ffi::CString;
use std::mem::{align_of, offset_of, size_of, MaybeUninit};
use std::ptr;

use crate::*;

/// A request's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// `AA_IO_READ`.
    Read,
    /// `AA_IO_WRITE`.
    Write,
    /// `AA_IO_ACCEPT`.
    Accept,
    /// `AA_IO_CONNECT`.
    Connect,
    /// `AA_IO_CLOSE`.
    Close,
    /// `AA_IO_RECVFROM` (1.1).
    RecvFrom,
    /// `AA_IO_SENDTO` (1.1).
    SendTo,
    /// `AA_IO_OPENAT` (1.1).
    OpenAt,
    /// `AA_IO_STATX` (1.1).
    Statx,
    /// `AA_IO_FSYNC` (1.1).
    Fsync,
    /// `AA_IO_UNLINKAT` (1.1).
    UnlinkAt,
    /// `AA_IO_RENAMEAT` (1.1).
    RenameAt,
    /// `AA_IO_MKDIRAT` (1.1).
    MkDirAt,
    /// `AA_IO_FTRUNCATE` (1.1).
    Ftruncate,
}

impl Opcode {
    /// The opcode of an `AA_IO_*` value, if the ABI defines it.
    pub fn from_raw(raw: u32) -> Option<Opcode> {
        Some(match raw {
            AA_IO_READ => Opcode::Read,
            AA_IO_WRITE => Opcode::Write,
            AA_IO_ACCEPT => Opcode::Accept,
            AA_IO_CONNECT => Opcode::Connect,
            AA_IO_CLOSE => Opcode::Close,
            AA_IO_RECVFROM => Opcode::RecvFrom,
            AA_IO_SENDTO => Opcode::SendTo,
            AA_IO_OPENAT => Opcode::OpenAt,
            AA_IO_STATX => Opcode::Statx,
            AA_IO_FSYNC => Opcode::Fsync,
            AA_IO_UNLINKAT => Opcode::UnlinkAt,
            AA_IO_RENAMEAT => Opcode::RenameAt,
            AA_IO_MKDIRAT => Opcode::MkDirAt,
            AA_IO_FTRUNCATE => Opcode::Ftruncate,
            _ => return None,
        })
    }

    /// The constant's name, `"AA_IO_RECVFROM"`, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Read => "AA_IO_READ",
            Opcode::Write => "AA_IO_WRITE",
            Opcode::Accept => "AA_IO_ACCEPT",
            Opcode::Connect => "AA_IO_CONNECT",
            Opcode::Close => "AA_IO_CLOSE",
            Opcode::RecvFrom => "AA_IO_RECVFROM",
            Opcode::SendTo => "AA_IO_SENDTO",
            Opcode::OpenAt => "AA_IO_OPENAT",
            Opcode::Statx => "AA_IO_STATX",
            Opcode::Fsync => "AA_IO_FSYNC",
            Opcode::UnlinkAt => "AA_IO_UNLINKAT",
            Opcode::RenameAt => "AA_IO_RENAMEAT",
            Opcode::MkDirAt => "AA_IO_MKDIRAT",
            Opcode::Ftruncate => "AA_IO_FTRUNCATE",
        }
    }

    /// The capability bit a reactor must have to run it.
    pub fn capability(self) -> u64 {
        match self {
            Opcode::Read | Opcode::Write | Opcode::Accept | Opcode::Connect | Opcode::Close => {
                AA_CAP_IO
            }
            Opcode::RecvFrom | Opcode::SendTo => AA_CAP_IO_DGRAM,
            Opcode::Ftruncate => AA_CAP_IO_FTRUNCATE,
            _ => AA_CAP_IO_FILE,
        }
    }

    /// The `op_flags` bits valid for it.
    pub fn valid_flags(self) -> u32 {
        match self {
            Opcode::Read | Opcode::RecvFrom => AA_IO_PEEK,
            Opcode::Fsync => AA_IO_DATASYNC,
            Opcode::UnlinkAt => AA_IO_REMOVEDIR,
            Opcode::Statx => AA_IO_NOFOLLOW,
            _ => 0,
        }
    }

    /// Whether its `fd` names a directory for a path (so it may be
    /// `AA_IO_CWD`).
    pub fn takes_path(self) -> bool {
        matches!(
            self,
            Opcode::OpenAt | Opcode::Statx | Opcode::UnlinkAt | Opcode::RenameAt | Opcode::MkDirAt
        )
    }

    /// Whether it waits for readability (else writability) on a readiness
    /// reactor, and runs in the descriptor's read lane.
    pub fn reads(self) -> bool {
        matches!(self, Opcode::Read | Opcode::Accept | Opcode::RecvFrom)
    }
}

/// A request read from the host's `AaIoOp` and checked.
///
/// Pointers stay the host's: `buf`, `peer` and (for `AA_IO_STATX`) the
/// `AaStat` at `buf` are lent until the request's callback (AA-R5); the
/// address to connect or send to and the paths are copies.
#[derive(Debug)]
pub struct Request {
    /// The operation.
    pub opcode: Opcode,
    /// The descriptor; for a path request the directory, `AT_FDCWD` for
    /// `AA_IO_CWD`.
    pub fd: i32,
    /// Data buffer (read, write, recvfrom, sendto) or the `AaStat` (statx);
    /// NULL with `len` 0 otherwise.
    pub buf: *mut u8,
    /// Length of `buf`.
    pub len: usize,
    /// File offset, -1 for the current position; the length of a
    /// truncation.
    pub offset: i64,
    /// Where an accept or a recvfrom writes the peer address: NULL or
    /// non-NULL and aligned.
    pub peer: *mut AaSockAddr,
    /// The address of a connect (always) or a sendto (unless the socket is
    /// connected), copied. Boxed: inline, its 136 bytes would be copied
    /// with every move of every request, reads and writes included.
    pub target: Option<Box<AaSockAddr>>,
    /// `op_flags`, checked against [`Opcode::valid_flags`].
    pub flags: u32,
    /// The path of a path request, copied with its NUL.
    pub path: Option<CString>,
    /// The new path of a rename, copied.
    pub path2: Option<CString>,
    /// The directory of `path2` (`AT_FDCWD` for `AA_IO_CWD`), -1 otherwise.
    pub fd2: i32,
    /// `open(2)` flags of an open, as the host gave them.
    pub open_flags: i32,
    /// Permission bits of an open or a mkdir.
    pub mode: u32,
}

impl Request {
    /// Whether `op_flags` has `bit`.
    pub fn has(&self, bit: u32) -> bool {
        self.flags & bit != 0
    }
}

/// Why [`read`] refused a request: the status `io_submit` returns and one
/// line for `last_error_message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `AA_E_INVALID`, `AA_E_UNSUPPORTED` or `-EBADF`.
    pub status: AaStatus,
    /// One lowercase line, starting `io_submit: `.
    pub message: String,
}

fn invalid(message: String) -> Refusal {
    Refusal {
        status: AA_E_INVALID,
        message,
    }
}

/// The `struct_size` a path request needs: the whole 1.1 struct.
const SIZE_V1_1: usize = offset_of!(AaIoOp, mode) + size_of::<u32>();

/// Reads and checks the host's request (see the module doc).
///
/// # Errors
///
/// `AA_E_INVALID` for a `struct_size` below the 1.0 size, a path request
/// in a struct without the 1.1 fields, a flag bit the opcode does not take,
/// a NULL or misaligned buffer or address where one is needed, a length out
/// of range, a path with a NUL inside; `AA_E_UNSUPPORTED` for an opcode the
/// ABI does not define; `-EBADF` for a descriptor no kernel would give.
///
/// # Safety
///
/// `op` must be non-NULL, aligned and valid for reads of its `struct_size`
/// bytes, and its paths valid for `len` bytes each, for the call (AA-R2).
#[inline]
pub unsafe fn read(op: *const AaIoOp) -> Result<Request, Refusal> {
    // SAFETY: every request begins with its `u32` struct_size (caller).
    let theirs = unsafe { ptr::addr_of!((*op).struct_size).read() } as usize;
    if theirs < AaIoOp::SIZE_V1_0 {
        return Err(invalid(format!(
            "io_submit: op struct_size {theirs} is smaller than {} (ABI 1.0)",
            AaIoOp::SIZE_V1_0
        )));
    }
    let op = if theirs >= size_of::<AaIoOp>() {
        // The common case, a host of this minor or newer: one fixed-size
        // copy the compiler inlines, no zeroing and no `memcpy` call.
        // SAFETY: `op` is aligned and readable for `theirs` bytes (caller),
        // at least the whole `AaIoOp`, whose fields are integers and raw
        // pointers (any bits are valid).
        unsafe { ptr::read(op) }
    } else {
        let mut copy = MaybeUninit::<AaIoOp>::zeroed();
        // SAFETY: `op` is readable for `theirs` bytes (caller), less than
        // `copy`'s size here; they do not overlap.
        unsafe {
            ptr::copy_nonoverlapping(op.cast::<u8>(), copy.as_mut_ptr().cast::<u8>(), theirs)
        };
        // SAFETY: an all-zero `AaIoOp` is valid (integers and raw
        // pointers), and so is one with a prefix copied from a valid one.
        unsafe { copy.assume_init() }
    };
    let opcode = Opcode::from_raw(op.opcode).ok_or_else(|| Refusal {
        status: AA_E_UNSUPPORTED,
        message: format!("io_submit: unknown opcode {}", op.opcode),
    })?;
    if opcode.takes_path() && theirs < SIZE_V1_1 {
        return Err(invalid(format!(
            "io_submit: {} needs the ABI 1.1 AaIoOp ({SIZE_V1_1} bytes), got struct_size {theirs}",
            opcode.name()
        )));
    }
    let stray = op.op_flags & !opcode.valid_flags();
    if stray != 0 {
        return Err(invalid(format!(
            "io_submit: op_flags {stray:#x} are not valid for {}",
            opcode.name()
        )));
    }
    let mut req = Request {
        opcode,
        fd: descriptor(op.fd, opcode.takes_path())?,
        buf: ptr::null_mut(),
        len: 0,
        offset: -1,
        peer: ptr::null_mut(),
        target: None,
        flags: op.op_flags,
        path: None,
        path2: None,
        fd2: -1,
        open_flags: 0,
        mode: 0,
    };
    match opcode {
        Opcode::Read | Opcode::Write | Opcode::RecvFrom | Opcode::SendTo => {
            if op.buf.is_null() && op.len > 0 {
                return Err(invalid(
                    "io_submit: NULL buffer with a non-zero length".into(),
                ));
            }
            if op.len > isize::MAX as usize || op.offset < -1 {
                return Err(invalid("io_submit: length or offset out of range".into()));
            }
            req.buf = op.buf;
            req.len = op.len;
            if matches!(opcode, Opcode::Read | Opcode::Write) {
                req.offset = op.offset;
            }
        }
        Opcode::Statx => {
            if op.buf.is_null()
                || !op.buf.cast::<AaStat>().is_aligned()
                || op.len < size_of::<AaStat>()
            {
                return Err(invalid(format!(
                    "io_submit: AA_IO_STATX needs an aligned AaStat of at least {} bytes",
                    size_of::<AaStat>()
                )));
            }
            req.buf = op.buf;
            req.len = op.len;
        }
        Opcode::Ftruncate => {
            if op.offset < 0 {
                return Err(invalid(format!(
                    "io_submit: AA_IO_FTRUNCATE to a negative length {}",
                    op.offset
                )));
            }
            req.offset = op.offset;
        }
        _ => {}
    }
    match opcode {
        Opcode::Accept | Opcode::RecvFrom if !op.addr.is_null() => {
            if !op.addr.is_aligned() {
                return Err(invalid("io_submit: misaligned address".into()));
            }
            req.peer = op.addr;
        }
        Opcode::Connect => {
            if op.addr.is_null() {
                return Err(invalid("io_submit: connect needs an address".into()));
            }
            // SAFETY: the address is borrowed for the call (AA-R2/AA-R5).
            req.target = Some(unsafe { target(op.addr) }?);
        }
        Opcode::SendTo if !op.addr.is_null() => {
            // SAFETY: as above.
            req.target = Some(unsafe { target(op.addr) }?);
        }
        _ => {}
    }
    if opcode.takes_path() {
        // SAFETY: the paths are borrowed for the call (caller).
        req.path = Some(unsafe { path(op.path, "path") }?);
        req.open_flags = op.open_flags as i32;
        req.mode = op.mode;
    }
    if opcode == Opcode::RenameAt {
        // SAFETY: as above.
        req.path2 = Some(unsafe { path(op.path2, "path2") }?);
        req.fd2 = descriptor(op.fd2, true)?;
    }
    Ok(req)
}

/// A descriptor number (`AT_FDCWD` where a directory may be the current
/// one), or `-EBADF` for one no kernel would give.
fn descriptor(fd: AaOsHandle, cwd_allowed: bool) -> Result<i32, Refusal> {
    if cwd_allowed && fd == AA_IO_CWD {
        return Ok(libc::AT_FDCWD);
    }
    i32::try_from(fd)
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(|| Refusal {
            status: -libc::EBADF,
            message: format!("io_submit: fd {fd} is not a descriptor"),
        })
}

/// Copies an address to connect or send to.
///
/// # Safety
///
/// `addr` must be non-NULL and valid for reads of an `AaSockAddr` if it is
/// aligned (checked here).
unsafe fn target(addr: *const AaSockAddr) -> Result<Box<AaSockAddr>, Refusal> {
    if !addr.is_aligned() {
        return Err(invalid("io_submit: misaligned address".into()));
    }
    // SAFETY: non-NULL and aligned (checked), valid for the call (caller).
    let addr = unsafe { addr.read() };
    if addr.len == 0 || addr.len as usize > size_of::<[u64; 16]>() {
        return Err(invalid(format!(
            "io_submit: address length {} is out of range",
            addr.len
        )));
    }
    Ok(Box::new(addr))
}

/// Copies a path, adding its NUL.
///
/// # Safety
///
/// `bytes.ptr` must be valid for `bytes.len` bytes, or `len` must be 0.
unsafe fn path(bytes: AaBytes, what: &str) -> Result<CString, Refusal> {
    if bytes.ptr.is_null() && bytes.len > 0 {
        return Err(invalid(format!(
            "io_submit: NULL {what} with a non-zero length"
        )));
    }
    let slice = if bytes.len == 0 {
        &[][..]
    } else {
        // SAFETY: valid for `len` bytes for the call (caller).
        unsafe { std::slice::from_raw_parts(bytes.ptr, bytes.len) }
    };
    CString::new(slice).map_err(|_| invalid(format!("io_submit: {what} contains a NUL byte")))
}

/// The `AaStat` of a kernel `struct statx` (`STATX_BASIC_STATS`, and the
/// creation time when the kernel reports `STATX_BTIME`).
#[cfg(target_os = "linux")]
pub fn stat_from_statx(st: &libc::statx) -> AaStat {
    let time = |t: libc::statx_timestamp| AaTimespec {
        sec: t.tv_sec,
        nsec: t.tv_nsec,
        _reserved: 0,
    };
    let btime = st.stx_mask & libc::STATX_BTIME != 0;
    AaStat {
        valid: if btime { AA_STAT_BTIME } else { 0 },
        mode: u32::from(st.stx_mode),
        nlink: u64::from(st.stx_nlink),
        uid: st.stx_uid,
        gid: st.stx_gid,
        size: st.stx_size,
        blocks: st.stx_blocks,
        blksize: u64::from(st.stx_blksize),
        ino: st.stx_ino,
        dev: libc::makedev(st.stx_dev_major, st.stx_dev_minor),
        rdev: libc::makedev(st.stx_rdev_major, st.stx_rdev_minor),
        atime: time(st.stx_atime),
        mtime: time(st.stx_mtime),
        ctime: time(st.stx_ctime),
        btime: if btime {
            time(st.stx_btime)
        } else {
            AaTimespec::default()
        },
    }
}

/// Writes `stat` into the host's `AaStat` of a checked `AA_IO_STATX`.
///
/// # Safety
///
/// `req` came from [`read`] (so `buf` is aligned for an `AaStat` and `len`
/// at least its size), and the host still lends `buf` (AA-R5: the
/// request's callback has not run).
pub unsafe fn write_stat(req_buf: *mut u8, stat: &AaStat) {
    debug_assert!(req_buf.cast::<AaStat>().is_aligned());
    const _: () = assert!(align_of::<AaStat>() == 8);
    // SAFETY: aligned, at least `size_of::<AaStat>()` bytes, lent (caller).
    unsafe { req_buf.cast::<AaStat>().write(*stat) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(op: &AaIoOp) -> Refusal {
        // SAFETY: a local, fully initialised op.
        unsafe { read(op) }.expect_err("the op must be refused")
    }

    #[test]
    fn a_1_0_sized_op_is_read_and_its_missing_tail_is_zero() {
        let mut buf = [0u8; 4];
        let mut op = AaIoOp::new(AA_IO_READ, 3);
        op.buf = buf.as_mut_ptr();
        op.len = 4;
        op.struct_size = AaIoOp::SIZE_V1_0 as u32;
        // Garbage beyond struct_size is never read.
        op.fd2 = 77;
        op.path = AaBytes {
            ptr: ptr::dangling::<u8>(),
            len: 99,
        };
        // SAFETY: a local op.
        let req = unsafe { read(&op) }.expect("a 1.0 read is served");
        assert_eq!((req.opcode, req.fd, req.len), (Opcode::Read, 3, 4));
        assert_eq!((req.fd2, req.path), (-1, None));
    }

    #[test]
    fn refusals_are_one_line_with_the_right_status() {
        let mut op = AaIoOp::new(AA_IO_READ, 3);
        op.struct_size = 8;
        let r = refused(&op);
        assert_eq!(r.status, AA_E_INVALID);
        assert_eq!(
            r.message,
            format!(
                "io_submit: op struct_size 8 is smaller than {} (ABI 1.0)",
                AaIoOp::SIZE_V1_0
            )
        );
        let op = AaIoOp::new(0x4000, 3);
        assert_eq!(
            refused(&op),
            Refusal {
                status: AA_E_UNSUPPORTED,
                message: "io_submit: unknown opcode 16384".into()
            }
        );
        let mut op = AaIoOp::new(AA_IO_WRITE, 3);
        op.op_flags = AA_IO_PEEK;
        assert_eq!(
            refused(&op).message,
            "io_submit: op_flags 0x1 are not valid for AA_IO_WRITE"
        );
        let mut op = AaIoOp::new(AA_IO_OPENAT, AA_IO_CWD);
        op.struct_size = AaIoOp::SIZE_V1_0 as u32;
        assert_eq!(
            refused(&op).message,
            format!(
                "io_submit: AA_IO_OPENAT needs the ABI 1.1 AaIoOp ({} bytes), got struct_size {}",
                size_of::<AaIoOp>(),
                AaIoOp::SIZE_V1_0
            )
        );
        let mut op = AaIoOp::new(AA_IO_MKDIRAT, AA_IO_CWD);
        op.path = AaBytes::from_slice(b"a\0b");
        assert_eq!(refused(&op).message, "io_submit: path contains a NUL byte");
        let op = AaIoOp::new(AA_IO_FSYNC, AA_IO_CWD);
        assert_eq!(refused(&op).status, -libc::EBADF);
        let mut stat = AaStat::default();
        let mut op = AaIoOp::new(AA_IO_STATX, 3);
        op.buf = (&mut stat as *mut AaStat).cast();
        op.len = 8;
        assert_eq!(
            refused(&op).message,
            format!(
                "io_submit: AA_IO_STATX needs an aligned AaStat of at least {} bytes",
                size_of::<AaStat>()
            )
        );
    }

    #[test]
    fn a_rename_copies_both_paths_and_maps_the_current_directory() {
        let mut op = AaIoOp::new(AA_IO_RENAMEAT, AA_IO_CWD);
        op.path = AaBytes::from_slice(b"old");
        op.path2 = AaBytes::from_slice(b"new");
        op.fd2 = 5;
        // SAFETY: a local op whose paths are static.
        let req = unsafe { read(&op) }.expect("a rename");
        assert_eq!(req.fd, libc::AT_FDCWD);
        assert_eq!(req.fd2, 5);
        assert_eq!(req.path.as_deref(), Some(c"old"));
        assert_eq!(req.path2.as_deref(), Some(c"new"));
    }
}
