//! Completion-level I/O requests.
//!
//! The ABI speaks in requests that complete with a result, not in readiness:
//! io_uring runs them natively; a readiness reactor (epoll through mio) runs
//! them as a readiness wait plus a non-blocking system call. Either way the
//! host sees the same thing: `io_submit` returns, later the request's
//! [`AaIoCb`] runs once with the result.
//!
//! Ownership (AA-R5): the [`AaIoOp`] struct itself is borrowed only for the
//! `io_submit` call, but the memory it points to (`buf`, `addr`) belongs to
//! the request until its callback has run, `-ECANCELED` included. A cancelled
//! request still waits for the kernel's completion before its callback runs,
//! so the kernel never writes into memory the host has reused. A disposed
//! request keeps its event alive inside the reactor until that completion.
//!
//! Requests on one descriptor are independent: each has its own event and
//! its own completion, and a reactor never completes one request with
//! another's result. Reads at the current position on one descriptor
//! complete in submission order, and so do writes.
//!
//! A request cancelled or disposed before the next `run_once` never starts.
//! An `AA_IO_CLOSE` is never stopped: cancelling, closing or disposing its
//! event only drops the callback; the descriptor is still closed.

use core::ffi::c_void;

use crate::{AaEvent, AaOsHandle, AaSockAddr};

/// Read up to `len` bytes into `buf` (`recv` on a socket). Result: bytes
/// read, 0 at end of stream.
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

/// `io_submit` flag: the reactor may complete the request before returning,
/// writing the result to `AaIoOp::result` and returning `AA_DONE` (no event,
/// no callback). Without it, the result always comes through the callback.
pub const AA_IO_TRY_INLINE: u32 = 1 << 0;

/// One I/O request, as passed to `io_submit`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaIoOp {
    /// `sizeof(AaIoOp)` as the host was compiled.
    pub struct_size: u32,
    /// One of the `AA_IO_*` operation codes.
    pub opcode: u32,
    /// The descriptor the request acts on.
    pub fd: AaOsHandle,
    /// Data buffer for `AA_IO_READ` and `AA_IO_WRITE`; owned by the request
    /// until its callback has run (AA-R5).
    pub buf: *mut u8,
    /// Length of `buf` in bytes.
    pub len: usize,
    /// File offset, or -1 for the current position / a stream.
    pub offset: i64,
    /// `AA_IO_CONNECT`: the address to connect to. `AA_IO_ACCEPT`: where the
    /// peer address is written, or NULL. Owned by the request (AA-R5).
    pub addr: *mut AaSockAddr,
    /// Zero; reserved for per-operation flags.
    pub op_flags: u32,
    /// Zero.
    pub _reserved: u32,
    /// Out: the result of a request completed inline (`AA_DONE`): bytes,
    /// a descriptor, 0, or `-errno`.
    pub result: i64,
}

impl AaIoOp {
    /// A request with every optional field empty.
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
        }
    }
}

/// Called once when a request completes: `result` is bytes, a descriptor or
/// 0 on success, `-errno` on failure (`-ECANCELED` when cancelled before the
/// kernel completed it). `[loop]`
pub type AaIoCb = Option<unsafe extern "C" fn(ev: *mut AaEvent, result: i64, ud: *mut c_void)>;
