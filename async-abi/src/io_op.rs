//! Completion-level I/O requests.
//!
//! The ABI speaks in requests that complete with a result, not in readiness:
//! io_uring runs them natively; a readiness reactor (epoll through mio) runs
//! them as a readiness wait plus a non-blocking system call. Either way the
//! host sees the same thing: `io_submit` returns, later the request's
//! [`AaIoCb`] runs once with the result.
//!
//! Ownership (AA-R5): the [`AaIoOp`] struct itself is borrowed only for the
//! `io_submit` call, but the memory it points to (`buf`, `addr`, and since
//! 1.1 `path` and `path2`) belongs to the request until its callback has
//! run, `-ECANCELED` included. A cancelled request still waits for the
//! kernel's completion before its callback runs, so the kernel never writes
//! into memory the host has reused. A disposed request keeps its event alive
//! inside the reactor until that completion. A reactor may copy what it
//! only reads (an address to send to, a path) at `io_submit`; the host
//! keeps it anyway.
//!
//! Requests on one descriptor are independent: each has its own event and
//! its own completion, and a reactor never completes one request with
//! another's result. Reads at the current position on one descriptor
//! complete in submission order (`AA_IO_READ` without an offset and
//! `AA_IO_RECVFROM`), and so do writes (`AA_IO_WRITE` without an offset and
//! `AA_IO_SENDTO`). File requests (1.1) are independent of each other: a
//! host that needs one to follow another (a rename after a mkdir) submits
//! the second from the first's callback.
//!
//! A request cancelled or disposed before the next `run_once` never starts.
//! An `AA_IO_CLOSE` is never stopped: cancelling, closing or disposing its
//! event only drops the callback; the descriptor is still closed.
//!
//! # ABI 1.1: datagrams and files
//!
//! Minor 1 appends datagram requests (`AA_IO_RECVFROM`, `AA_IO_SENDTO`, the
//! `AA_IO_PEEK` flag; capability `AA_CAP_IO_DGRAM`) and file requests
//! (`AA_IO_OPENAT` .. `AA_IO_MKDIRAT`, capability `AA_CAP_IO_FILE`;
//! `AA_IO_FTRUNCATE`, capability `AA_CAP_IO_FTRUNCATE`), and five fields at
//! the end of [`AaIoOp`]. Nothing of 1.0 changed meaning or place:
//!
//! - A host sends a 1.1 opcode only to a reactor whose capabilities
//!   (`caps`, narrowed by `instance_caps` where the slot exists) have its
//!   bit. A reactor asked for an opcode it does not run answers
//!   `AA_E_UNSUPPORTED` (a 1.0 reactor answered `AA_E_INVALID`), creating
//!   nothing (AA-R8); the host then falls back (its blocking pool) or
//!   reports the capability missing.
//! - A reactor reads `min(op->struct_size, sizeof(AaIoOp))` bytes and
//!   treats the missing tail as zero, so an `AaIoOp` of a 1.0 host (its
//!   `struct_size` is `offsetof(AaIoOp, path)`) is served for every 1.0
//!   opcode. A `struct_size` below that is `AA_E_INVALID`, and so is a 1.1
//!   opcode whose fields lie beyond `struct_size` (a path request from a
//!   struct that has no `path`).
//! - Paths are byte strings of `len` bytes, not NUL-terminated, without a
//!   NUL inside (`AA_E_INVALID`), relative to the directory descriptor in
//!   `fd` (`fd2` for `path2`), or to the current directory when that is
//!   [`AA_IO_CWD`]; an absolute path ignores the descriptor.
//! - File requests take the platform's values where the platform defines
//!   them (`open(2)` flags, mode bits), as [`crate::AaSockAddr`] carries the
//!   platform's `struct sockaddr`.

use core::ffi::c_void;

use crate::{AaBytes, AaEvent, AaOsHandle, AaSockAddr};

/// Read up to `len` bytes into `buf` (`recv` on a socket). Result: bytes
/// read, 0 at end of stream. With `AA_IO_PEEK` in `op_flags` (1.1, sockets
/// only) the data is left queued (`MSG_PEEK`).
pub const AA_IO_READ: u32 = 1;
/// Write up to `len` bytes from `buf` (`send` on a socket, never raising
/// `SIGPIPE`). Result: bytes written.
pub const AA_IO_WRITE: u32 = 2;
/// Accept a connection on the listening socket `fd`. Result: the new
/// descriptor, non-blocking and close-on-exec, owned by the host. The peer
/// address is written to `addr` if it is not NULL.
pub const AA_IO_ACCEPT: u32 = 3;
/// Connect the non-blocking socket `fd` to `addr`. Result: 0.
pub const AA_IO_CONNECT: u32 = 4;
/// Close `fd`, after the reactor has forgotten everything it kept about it:
/// pending requests on it complete with `-ECANCELED`, and armed polls on it
/// end (their callback runs once with `-ECANCELED`; `poll_set_interest` then
/// returns `AA_E_CLOSED`). Result: 0. The host closes descriptors it used
/// with the reactor this way, so a reused descriptor number is never
/// mistaken for the old one.
pub const AA_IO_CLOSE: u32 = 5;
/// 1.1, `AA_CAP_IO_DGRAM`. Receive one datagram (or stream data) on the
/// socket `fd` into `buf` (`len` bytes; a longer datagram is truncated, as
/// `recvfrom` does), writing the sender's address and its length to `addr`
/// if it is not NULL (length 0: the sender has no address, an unbound Unix
/// socket). `AA_IO_PEEK` leaves the datagram queued. Result: bytes received.
/// UDP and Unix datagram sockets; `AaSockAddr` holds a `sockaddr_un`.
pub const AA_IO_RECVFROM: u32 = 6;
/// 1.1, `AA_CAP_IO_DGRAM`. Send `len` bytes of `buf` as one datagram to
/// `addr` from the socket `fd` (`sendto`, never raising `SIGPIPE`). `addr`
/// may be NULL on a connected socket. Result: bytes sent.
pub const AA_IO_SENDTO: u32 = 7;
/// 1.1, `AA_CAP_IO_FILE`. Open `path` (relative to the directory `fd`, or
/// [`AA_IO_CWD`]) with `open_flags` (the platform's `O_*` values; the
/// reactor adds `O_CLOEXEC`) and `mode` (for `O_CREAT`/`O_TMPFILE`).
/// Result: the new descriptor, owned by the host. If the request was
/// disposed before the open completed, the reactor closes the descriptor;
/// a cancelled open that completed anyway reports the descriptor, which the
/// host then owns.
pub const AA_IO_OPENAT: u32 = 8;
/// 1.1, `AA_CAP_IO_FILE`. Read the metadata of `path` (relative to `fd` or
/// [`AA_IO_CWD`]), or of the descriptor `fd` itself when `path` is empty,
/// into the [`AaStat`] at `buf` (`len` is `sizeof(AaStat)` as the host was
/// compiled, at least the 1.1 size; `buf` aligned for it). A final symbolic
/// link is followed unless `op_flags` has `AA_IO_NOFOLLOW`. Result: 0.
pub const AA_IO_STATX: u32 = 9;
/// 1.1, `AA_CAP_IO_FILE`. Flush the file `fd` to its device (`fsync`, or
/// `fdatasync` with `AA_IO_DATASYNC`). Result: 0.
pub const AA_IO_FSYNC: u32 = 10;
/// 1.1, `AA_CAP_IO_FILE`. Remove the name `path` (relative to `fd` or
/// [`AA_IO_CWD`]): a file, or an empty directory with `AA_IO_REMOVEDIR`.
/// Result: 0.
pub const AA_IO_UNLINKAT: u32 = 11;
/// 1.1, `AA_CAP_IO_FILE`. Rename `path` (relative to `fd`) to `path2`
/// (relative to `fd2`), replacing what `path2` named (`renameat`). Result:
/// 0.
pub const AA_IO_RENAMEAT: u32 = 12;
/// 1.1, `AA_CAP_IO_FILE`. Make the directory `path` (relative to `fd` or
/// [`AA_IO_CWD`]) with the permission bits `mode` (less the umask). Result:
/// 0.
pub const AA_IO_MKDIRAT: u32 = 13;
/// 1.1, `AA_CAP_IO_FTRUNCATE`. Set the length of the file `fd` to `offset`
/// bytes (`ftruncate`; `offset` >= 0). Result: 0.
pub const AA_IO_FTRUNCATE: u32 = 14;

/// `io_submit` flag: the reactor may complete the request before returning,
/// writing the result to `AaIoOp::result` and returning `AA_DONE` (no event,
/// no callback). Without it, the result always comes through the callback.
pub const AA_IO_TRY_INLINE: u32 = 1 << 0;

/// `AaIoOp::op_flags` bit (1.1): leave the data queued (`MSG_PEEK`). Valid
/// for `AA_IO_READ` on a socket and for `AA_IO_RECVFROM`; `AA_E_INVALID`
/// elsewhere.
pub const AA_IO_PEEK: u32 = 1 << 0;
/// `AaIoOp::op_flags` bit (1.1): `AA_IO_FSYNC` flushes the data and only the
/// metadata needed to read it back (`fdatasync`).
pub const AA_IO_DATASYNC: u32 = 1 << 1;
/// `AaIoOp::op_flags` bit (1.1): `AA_IO_UNLINKAT` removes a directory
/// (`AT_REMOVEDIR`).
pub const AA_IO_REMOVEDIR: u32 = 1 << 2;
/// `AaIoOp::op_flags` bit (1.1): `AA_IO_STATX` does not follow a final
/// symbolic link (`AT_SYMLINK_NOFOLLOW`).
pub const AA_IO_NOFOLLOW: u32 = 1 << 3;

/// `AaIoOp::fd` and `fd2` value (1.1): a path request's path is relative to
/// the current directory. Equal to Linux's `AT_FDCWD`.
pub const AA_IO_CWD: i64 = -100;

/// One I/O request, as passed to `io_submit`.
///
/// Grows only at the end (see the module doc): the fields after `result`
/// are ABI 1.1, and `offsetof(AaIoOp, path)` is the size of a 1.0 request.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaIoOp {
    /// `sizeof(AaIoOp)` as the host was compiled.
    pub struct_size: u32,
    /// One of the `AA_IO_*` operation codes.
    pub opcode: u32,
    /// The descriptor the request acts on; for a path request, the
    /// directory `path` is relative to, or `AA_IO_CWD`.
    pub fd: AaOsHandle,
    /// Data buffer for `AA_IO_READ`, `AA_IO_WRITE`, `AA_IO_RECVFROM` and
    /// `AA_IO_SENDTO`; the `AaStat` of `AA_IO_STATX`. Owned by the request
    /// until its callback has run (AA-R5).
    pub buf: *mut u8,
    /// Length of `buf` in bytes.
    pub len: usize,
    /// File offset, or -1 for the current position / a stream;
    /// `AA_IO_FTRUNCATE`: the new length.
    pub offset: i64,
    /// `AA_IO_CONNECT`, `AA_IO_SENDTO`: the address to connect or send to.
    /// `AA_IO_ACCEPT`, `AA_IO_RECVFROM`: where the peer address is written,
    /// or NULL. Owned by the request (AA-R5).
    pub addr: *mut AaSockAddr,
    /// `AA_IO_PEEK`, `AA_IO_DATASYNC`, `AA_IO_REMOVEDIR`, `AA_IO_NOFOLLOW`
    /// (1.1), each valid only for the opcodes it names; zero otherwise. An
    /// unknown or misplaced bit is `AA_E_INVALID`.
    pub op_flags: u32,
    /// Zero.
    pub _reserved: u32,
    /// Out: the result of a request completed inline (`AA_DONE`): bytes,
    /// a descriptor, 0, or `-errno`.
    pub result: i64,
    /// 1.1: the path of `AA_IO_OPENAT`, `AA_IO_STATX`, `AA_IO_UNLINKAT`,
    /// `AA_IO_MKDIRAT`, and the old path of `AA_IO_RENAMEAT`: bytes, not
    /// NUL-terminated, no NUL inside. Owned by the request (AA-R5).
    pub path: AaBytes,
    /// 1.1: the new path of `AA_IO_RENAMEAT`, relative to `fd2`. Owned by
    /// the request (AA-R5).
    pub path2: AaBytes,
    /// 1.1: the directory `path2` is relative to, or `AA_IO_CWD`.
    pub fd2: AaOsHandle,
    /// 1.1: `AA_IO_OPENAT`'s `open(2)` flags, the platform's values
    /// (`O_RDONLY`, `O_CREAT | O_EXCL`, ...); the reactor adds `O_CLOEXEC`.
    pub open_flags: u32,
    /// 1.1: the permission bits of `AA_IO_OPENAT` (with `O_CREAT`) and
    /// `AA_IO_MKDIRAT`, less the process umask.
    pub mode: u32,
}

impl AaIoOp {
    /// The `struct_size` of an ABI 1.0 request: everything up to `result`.
    /// The smallest size a reactor accepts.
    pub const SIZE_V1_0: usize = core::mem::offset_of!(AaIoOp, path);

    /// A request with every optional field empty (`fd2` is -1, no path).
    pub const fn new(opcode: u32, fd: AaOsHandle) -> AaIoOp {
        AaIoOp {
            struct_size: core::mem::size_of::<AaIoOp>() as u32,
            opcode,
            fd,
            buf: core::ptr::null_mut(),
            len: 0,
            offset: -1,
            addr: core::ptr::null_mut(),
            op_flags: 0,
            _reserved: 0,
            result: 0,
            path: AaBytes::EMPTY,
            path2: AaBytes::EMPTY,
            fd2: -1,
            open_flags: 0,
            mode: 0,
        }
    }
}

/// `AaStat::valid` bit (1.1): `btime` holds the file's creation time (not
/// every filesystem records one).
pub const AA_STAT_BTIME: u32 = 1 << 0;

/// A point in time as seconds and nanoseconds since the Unix epoch (1.1).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AaTimespec {
    /// Whole seconds; negative before 1970.
    pub sec: i64,
    /// Nanoseconds, 0 to 999,999,999.
    pub nsec: u32,
    /// Zero.
    pub _reserved: u32,
}

/// The metadata `AA_IO_STATX` writes (1.1): the fields `std::fs::Metadata`
/// and `std::os::unix::fs::MetadataExt` report, in fixed-width integers.
///
/// An ABI struct rather than the kernel's `struct statx`, so a host and a
/// reactor need no Linux header and a reactor on another system can fill
/// it. The io_uring reactor receives the kernel's `statx` into its own
/// memory and converts it on completion. Grows only at the end: the host
/// zeroes the buffer and passes its size in `AaIoOp::len`; a reactor writes
/// `min(len, its sizeof(AaStat))` bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AaStat {
    /// `AA_STAT_*` bits: which optional fields hold values.
    pub valid: u32,
    /// File type and permission bits, as `st_mode` (`S_IFREG | 0644`).
    pub mode: u32,
    /// Number of hard links.
    pub nlink: u64,
    /// Owner's user id.
    pub uid: u32,
    /// Owner's group id.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// Allocated size in 512-byte blocks.
    pub blocks: u64,
    /// Preferred I/O block size.
    pub blksize: u64,
    /// Inode number.
    pub ino: u64,
    /// Device of the filesystem, as `st_dev` (`makedev(major, minor)`).
    pub dev: u64,
    /// Device a special file stands for, as `st_rdev`.
    pub rdev: u64,
    /// Last access.
    pub atime: AaTimespec,
    /// Last modification of the contents.
    pub mtime: AaTimespec,
    /// Last change of the metadata.
    pub ctime: AaTimespec,
    /// Creation, if `valid` has `AA_STAT_BTIME`; zero otherwise.
    pub btime: AaTimespec,
}

/// Called once when a request completes: `result` is bytes, a descriptor or
/// 0 on success, `-errno` on failure (`-ECANCELED` when cancelled before the
/// kernel completed it). `[loop]`
pub type AaIoCb = Option<unsafe extern "C" fn(ev: *mut AaEvent, result: i64, ud: *mut c_void)>;
