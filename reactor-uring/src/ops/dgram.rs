//! `AA_IO_RECVFROM` and `AA_IO_SENDTO` (ABI 1.1) as ring `RECVMSG` and
//! `SENDMSG`: one datagram each, with the sender's address written straight
//! into the host's `AaSockAddr` (AA-R5) and the destination read from the
//! op's own copy (ops invariant O1).
//!
//! # Safety
//!
//! The `msghdr` and its `iovec` live in the op's [`MsgBuf`], boxed, so the
//! kernel reads (and, for `msg_namelen`, writes) memory that stays in the op
//! table until the final completion (O1). The `iovec` names the host's
//! buffer and `msg_name` a recvfrom's host address, both lent until the
//! callback (AA-R5), which runs after that completion. The header is in an
//! `UnsafeCell`: the kernel writes `msg_namelen` through the pointer it was
//! given, and the loop reads it back only after the final completion.

use std::cell::UnsafeCell;
use std::mem::offset_of;

use async_abi::AaSockAddr;
use io_uring::{opcode, squeue, types};

use crate::ops::io::{HostAddr, Opcode, Request};
use crate::ops::OwnedBuf;

/// The memory a datagram request lends the kernel (see the module doc).
pub(crate) struct MsgBuf {
    hdr: UnsafeCell<libc::msghdr>,
    iov: libc::iovec,
    /// A sendto's destination (the reactor's copy); unused by a recvfrom,
    /// whose sender goes straight into the host's address.
    name: AaSockAddr,
}

impl std::fmt::Debug for MsgBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MsgBuf")
            .field("iov_len", &self.iov.iov_len)
            .field("name_len", &self.name.len)
            .finish()
    }
}

impl MsgBuf {
    /// The header of `req`: one `iovec` over the host's buffer, and the
    /// address to send to (the op's copy) or to receive the sender into
    /// (the host's, or none).
    pub(super) fn new(req: &Request) -> Box<MsgBuf> {
        let mut msg = Box::new(MsgBuf {
            // SAFETY: `msghdr` is integers and raw pointers; all-zero is a
            // valid (empty) header.
            hdr: UnsafeCell::new(unsafe { std::mem::zeroed() }),
            iov: libc::iovec {
                iov_base: req.buf.as_mut_ptr().cast(),
                iov_len: req.buf.kernel_len() as usize,
            },
            name: req.target.as_deref().copied().unwrap_or(AaSockAddr::EMPTY),
        });
        let iov: *mut libc::iovec = &mut msg.iov;
        let (name, len) = match (req.opcode, req.peer) {
            (Opcode::SendTo, _) if req.target.is_some() => {
                (msg.name.storage.as_mut_ptr().cast(), msg.name.len)
            }
            (Opcode::RecvFrom, Some(peer)) => (
                storage_of(peer),
                std::mem::size_of::<[u64; 16]>() as libc::socklen_t,
            ),
            _ => (std::ptr::null_mut(), 0),
        };
        let hdr = msg.hdr.get_mut();
        hdr.msg_iov = iov;
        hdr.msg_iovlen = 1;
        hdr.msg_name = name;
        hdr.msg_namelen = len;
        msg
    }

    /// The header the kernel is given.
    fn hdr(&self) -> *mut libc::msghdr {
        self.hdr.get()
    }
}

/// The `storage` of a host address (AA-R5).
fn storage_of(peer: HostAddr) -> *mut libc::c_void {
    peer.as_mut_ptr()
        .cast::<u8>()
        .wrapping_add(offset_of!(AaSockAddr, storage))
        .cast()
}

/// The entry of a recvfrom or a sendto, naming the op's `MsgBuf`.
pub(super) fn entry(req: &Request, buf: &OwnedBuf) -> squeue::Entry {
    let OwnedBuf::Msg(msg) = buf else {
        unreachable!("a datagram request owns a MsgBuf (io.rs owned_buf)");
    };
    let fd = types::Fd(req.fd);
    if req.opcode == Opcode::RecvFrom {
        opcode::RecvMsg::new(fd, msg.hdr())
            .flags(req.msg_flags() as u32)
            .build()
    } else {
        opcode::SendMsg::new(fd, msg.hdr())
            .flags((libc::MSG_NOSIGNAL | req.msg_flags()) as u32)
            .build()
    }
}

/// A recvfrom's successful final completion: the sender's address is in
/// the host's storage; its length is what the kernel left in the header.
pub(super) fn finish(peer: HostAddr, msg: &MsgBuf) {
    // SAFETY: the final completion was reaped, so the kernel is done with
    // the header (O1) and nothing else refers to it.
    let len = unsafe { (*msg.hdr()).msg_namelen };
    // SAFETY: AA-R5: the host keeps `peer` valid and unmoved until this
    // request's callback, which has not run yet; it is aligned (checked by
    // the SDK's reader).
    unsafe { (*peer.as_mut_ptr()).len = len };
}
