//! The inotify read: one ring `READ` of the reactor's inotify descriptor
//! into a buffer the op owns, always armed while the reactor has an
//! inotify instance (fs_watch.rs). Each completion is parsed, re-armed with
//! the same op (ops invariant O3), then reported; `EAGAIN` (a kernel that
//! does not wait inside the read) goes through the readiness fallback of
//! `retry_when_ready`.
//!
//! # Safety
//!
//! No unsafe code: the entry names the op's own boxed buffer
//! (`OwnedBuf::Bytes`, cells, so reading what the kernel wrote is plain
//! safe Rust), which stays in the op table until the read's final
//! completion (O1); `destroy` drains the read before the buffer can go.

use std::cell::Cell;
use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};

use crate::ops::{Hold, Life, NewOp, OpKey, OpKind, OwnedBuf};
use crate::reactor::Reactor;
use crate::ring::Cqe;
use reactor_sdk::inotify::{parse, Change};

/// The read buffer: room for many records, and always for one with the
/// longest name (`sizeof(struct inotify_event) + NAME_MAX + 1`).
const BUF: usize = 4096;

/// A `READ` of `fd` into the op's buffer; with `nowait`, one that may not
/// wait inside the kernel (`Config::old_kernel`).
fn read_entry(fd: RawFd, buf: &OwnedBuf, nowait: bool) -> squeue::Entry {
    let (ptr, len) = match buf {
        OwnedBuf::Bytes(bytes) => (bytes.as_ptr() as *mut u8, bytes.len() as u32),
        _ => (std::ptr::null_mut(), 0),
    };
    let rw_flags = if nowait { libc::RWF_NOWAIT } else { 0 };
    opcode::Read::new(types::Fd(fd), ptr, len)
        .rw_flags(rw_flags)
        .build()
}

impl Reactor {
    /// Starts the inotify read of descriptor `fd`.
    pub(crate) fn arm_inotify(&self, fd: RawFd) -> OpKey {
        let bytes: Box<[Cell<u8>]> = (0..BUF).map(|_| Cell::new(0)).collect();
        self.start_op(
            NewOp {
                owner: None,
                kind: OpKind::InotifyRead,
                fd: None,
                buf: OwnedBuf::Bytes(bytes),
                hold: Hold::No,
            },
            |_, buf| read_entry(fd, buf, self.nowait),
        )
    }

    /// The records a completed read put in its op's buffer.
    fn records(&self, key: OpKey, n: usize) -> Vec<Change> {
        let mut changes = Vec::new();
        if let Some(op) = self.ops.borrow().get(key) {
            if let OwnedBuf::Bytes(bytes) = &op.buf {
                let data: Vec<u8> = bytes[..n.min(bytes.len())].iter().map(Cell::get).collect();
                parse(&data, &mut changes);
            }
        }
        changes
    }

    /// The inotify read completed. Returns the number of host callbacks run.
    pub(super) fn complete_inotify_read(&self, key: OpKey, cqe: Cqe) -> i32 {
        let fd = match self.inotify.borrow().as_ref() {
            Some(inotify) if inotify.op == Some(key) => {
                std::os::fd::AsRawFd::as_raw_fd(inotify.watches.fd())
            }
            _ => {
                // Being drained by `destroy`, which waits for this itself.
                self.retire(key);
                return 0;
            }
        };
        if self.retry_when_ready(key, cqe, fd, libc::POLLIN as u32) {
            return 0;
        }
        let life = self.ops.borrow().get(key).map(|op| op.life);
        if life == Some(Life::Submitted) && cqe.result >= 0 {
            let changes = self.records(key, cqe.result as usize);
            self.repush(key);
            return self.deliver_changes(changes);
        }
        // Failed: the watches stop hearing from the kernel; say so once.
        self.retire(key);
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.op = None;
        }
        if cqe.result != -libc::ECANCELED {
            async_abi::plugin_error!(
                "the inotify read failed: {}",
                std::io::Error::from_raw_os_error(-cqe.result)
            );
        }
        0
    }
}
