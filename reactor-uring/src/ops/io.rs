//! `AA_IO_*` requests as ring operations: `RECV`/`READ`, `SEND`/`WRITE`,
//! `ACCEPT`, `CONNECT` and `CLOSE`, and since ABI 1.1 `RECVMSG`/`SENDMSG`
//! (dgram.rs) and the file operations (file.rs), one entry and one
//! completion each.
//!
//! A request is built from the host's `AaIoOp` by `ffi.rs` (through the
//! SDK's reader, `async_abi::sdk::request`) into a [`Request`] (the op
//! struct itself is borrowed only for `io_submit`, AA-R2), then into an
//! entry whose pointers are the host's buffer and address (AA-R5), the
//! request's own copies (paths, ops invariant O1: they live in the op's
//! `kind`) or the op's own boxed memory (O1). Its final completion is
//! delivered to the host exactly once: the real result, or the
//! cancellation reason when the kernel confirms the cancel with
//! `-ECANCELED`.
//!
//! # Safety
//!
//! [`HostBuf`] and [`HostAddr`] (the kit's) carry host pointers; they are
//! made only by `reactor_sdk::sys::lent`, called by `ffi.rs`, whose
//! `unsafe` contract carries the AA-R5 promise, and the
//! writes into host memory outside the kernel (an accept's or a recvfrom's
//! peer address length, a statx's `AaStat`) happen on the request's final
//! completion, before its callback.

use std::ffi::CString;
use std::mem::size_of;
use std::os::fd::RawFd;
use std::rc::Rc;

use async_abi::{AaSockAddr, AA_EVENT_IO, AA_E_UNSUPPORTED};
use io_uring::{opcode, squeue, types};

use crate::error::{Error, Result};
use crate::event::{Event, IoState, State};
use crate::ffi::HostCallback;
use crate::ops::{dgram, file, Hold, Lane, NewOp, OpKey, OpKind, OwnedBuf};
use crate::reactor::{Deferred, Reactor};
use crate::ring::Cqe;

/// The operation of a request: the SDK's, so the reactors and the SDK's
/// reader of `AaIoOp` name opcodes alike.
pub(crate) use async_abi::sdk::request::Opcode;

/// Host memory lent to one request until its callback (AA-R5): the kit's
/// wrappers, whose `unsafe` constructors carry that promise.
pub(crate) use reactor_sdk::sys::{HostAddr, HostBuf};

/// A request, converted from `AaIoOp` by `ffi.rs`.
#[derive(Debug)]
pub(crate) struct Request {
    /// The operation.
    pub(crate) opcode: Opcode,
    /// The descriptor.
    pub(crate) fd: RawFd,
    /// The data buffer (read, write, recvfrom, sendto) or the host's
    /// `AaStat` (statx); empty otherwise.
    pub(crate) buf: HostBuf,
    /// File offset, -1 for the current position or a stream.
    pub(crate) offset: i64,
    /// Accept, recvfrom: where to write the peer address.
    pub(crate) peer: Option<HostAddr>,
    /// Connect, sendto: the address (copied into the op's own memory;
    /// boxed, so a request without one stays small).
    pub(crate) target: Option<Box<AaSockAddr>>,
    /// Whether the descriptor is a socket (`RECV`/`SEND` rather than
    /// `READ`/`WRITE`), from the registry.
    pub(crate) socket: bool,
    /// Whether it is a regular file or a block device, from the registry:
    /// always "ready", so an `EAGAIN` (a `RWF_NOWAIT` read the page cache
    /// cannot serve) is the host's to answer, never a readiness wait.
    pub(crate) regular: bool,
    /// The request may not wait inside the kernel (`Config::old_kernel`).
    pub(crate) nowait: bool,
    /// `AaIoOp::op_flags` (`AA_IO_PEEK`, `AA_IO_DATASYNC`, ...), checked.
    pub(crate) flags: u32,
    /// A path request's path, the request's own copy (O1).
    pub(crate) path: Option<CString>,
    /// A rename's new path, the request's own copy (O1).
    pub(crate) path2: Option<CString>,
    /// A rename's new directory (`AT_FDCWD` for the current one).
    pub(crate) fd2: RawFd,
    /// An open's `open(2)` flags.
    pub(crate) open_flags: i32,
    /// An open's or a mkdir's permission bits.
    pub(crate) mode: u32,
}

impl Request {
    /// The lane of a stream request: reads and writes at the current
    /// position complete in submission order (registry invariant G4);
    /// accepts, connects and positional I/O are independent.
    fn lane(&self) -> Option<Lane> {
        match self.opcode {
            Opcode::Read if self.offset < 0 => Some(Lane::Read),
            Opcode::Write if self.offset < 0 => Some(Lane::Write),
            Opcode::RecvFrom => Some(Lane::Read),
            Opcode::SendTo => Some(Lane::Write),
            _ => None,
        }
    }

    /// The `poll(2)` mask that means "this request can make progress", for
    /// a request that may answer `EAGAIN` (a descriptor that cannot wait
    /// inside the kernel); `None` for the file requests, which never do.
    fn readiness_mask(&self) -> Option<u32> {
        if self.regular {
            // poll(2) says a regular file is always ready: a wait would
            // spin. The host takes `EAGAIN` to its blocking pool.
            return None;
        }
        match self.opcode {
            Opcode::Read | Opcode::Accept | Opcode::RecvFrom => Some(libc::POLLIN as u32),
            Opcode::Write | Opcode::Connect | Opcode::SendTo => Some(libc::POLLOUT as u32),
            _ => None,
        }
    }

    /// Whether `op_flags` has `bit`.
    pub(super) fn has(&self, bit: u32) -> bool {
        self.flags & bit != 0
    }

    /// The `MSG_*` flags of a socket request: `MSG_PEEK` for a peek,
    /// `MSG_DONTWAIT` when it may not wait in the kernel.
    pub(super) fn msg_flags(&self) -> i32 {
        let mut flags = 0;
        if self.has(async_abi::AA_IO_PEEK) {
            flags |= libc::MSG_PEEK;
        }
        if self.nowait {
            flags |= libc::MSG_DONTWAIT;
        }
        flags
    }
}

/// The offset field of a `READ`/`WRITE`: -1 (all ones) is the file's
/// current position (`IORING_FEAT_RW_CUR_POS`).
fn file_offset(offset: i64) -> u64 {
    if offset < 0 {
        u64::MAX
    } else {
        offset as u64
    }
}

/// The memory a request lends the kernel from the reactor's side.
fn owned_buf(req: &Request) -> OwnedBuf {
    match req.opcode {
        Opcode::Accept if req.peer.is_some() => {
            OwnedBuf::AddrLen(Box::new(size_of::<[u64; 16]>() as libc::socklen_t))
        }
        Opcode::Connect => OwnedBuf::Addr(
            req.target
                .clone()
                .unwrap_or_else(|| Box::new(AaSockAddr::EMPTY)),
        ),
        Opcode::RecvFrom | Opcode::SendTo => OwnedBuf::Msg(dgram::MsgBuf::new(req)),
        Opcode::Statx => file::statx_buf(),
        _ => OwnedBuf::None,
    }
}

/// The entry of a request, naming the host's buffer and address (AA-R5)
/// and the op's own `buf` (O1).
fn entry(req: &Request, buf: &OwnedBuf) -> squeue::Entry {
    let fd = types::Fd(req.fd);
    let rw_flags = if req.nowait { libc::RWF_NOWAIT } else { 0 };
    let msg_flags = req.msg_flags();
    match req.opcode {
        Opcode::Read if req.socket => {
            opcode::Recv::new(fd, req.buf.as_mut_ptr(), req.buf.kernel_len())
                .flags(msg_flags)
                .build()
        }
        Opcode::Read => opcode::Read::new(fd, req.buf.as_mut_ptr(), req.buf.kernel_len())
            .offset(file_offset(req.offset))
            .rw_flags(rw_flags)
            .build(),
        Opcode::Write if req.socket => {
            opcode::Send::new(fd, req.buf.as_mut_ptr().cast_const(), req.buf.kernel_len())
                .flags(libc::MSG_NOSIGNAL | msg_flags)
                .build()
        }
        Opcode::Write => {
            opcode::Write::new(fd, req.buf.as_mut_ptr().cast_const(), req.buf.kernel_len())
                .offset(file_offset(req.offset))
                .rw_flags(rw_flags)
                .build()
        }
        Opcode::Accept => {
            let (addr, len) = match (req.peer, buf) {
                (Some(peer), OwnedBuf::AddrLen(len)) => (
                    // The peer address is written straight into the host's
                    // storage (AA-R5); its length into the op's box (O1).
                    peer.as_mut_ptr()
                        .cast::<u8>()
                        .wrapping_add(std::mem::offset_of!(AaSockAddr, storage)),
                    &**len as *const libc::socklen_t as *mut libc::socklen_t,
                ),
                _ => (std::ptr::null_mut(), std::ptr::null_mut()),
            };
            opcode::Accept::new(fd, addr.cast(), len)
                .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
                .build()
        }
        Opcode::Connect => {
            let (addr, len) = match buf {
                OwnedBuf::Addr(addr) => (addr.storage.as_ptr(), addr.len),
                _ => (std::ptr::null(), 0),
            };
            opcode::Connect::new(fd, addr.cast(), len).build()
        }
        Opcode::Close => close_entry(req.fd),
        Opcode::RecvFrom | Opcode::SendTo => dgram::entry(req, buf),
        _ => file::entry(req, buf),
    }
}

/// The entry that closes `fd` (no memory).
pub(crate) fn close_entry(fd: RawFd) -> squeue::Entry {
    opcode::Close::new(types::Fd(fd)).build()
}

/// Turns a request's final completion into its result, finishing what the
/// kernel left to user space: an accept's peer address length.
fn finish(req: &Request, buf: &OwnedBuf, result: i32) -> i64 {
    if result < 0 {
        return i64::from(result);
    }
    match (req.opcode, req.peer, buf) {
        (Opcode::Accept, Some(peer), OwnedBuf::AddrLen(len)) => {
            // SAFETY: AA-R5: the host keeps `peer` valid and unmoved until
            // this request's callback, which has not run yet (it runs after
            // this function returns); `ptr` is aligned (checked by ffi.rs).
            unsafe { (*peer.as_mut_ptr()).len = **len };
        }
        (Opcode::RecvFrom, Some(peer), OwnedBuf::Msg(msg)) => dgram::finish(peer, msg),
        (Opcode::Statx, _, OwnedBuf::Statx(stat)) => file::finish_statx(req, stat),
        _ => {}
    }
    i64::from(result)
}

impl Reactor {
    /// `io_submit` for a converted request: one ring operation, never
    /// completed inline (the ABI lets a reactor ignore `AA_IO_TRY_INLINE`).
    ///
    /// A descriptor is looked up in the registry (and counts its op, so a
    /// close through the reactor waits for it, G3) unless it is `AT_FDCWD`,
    /// the current directory of a path request.
    pub(crate) fn io_submit(&self, mut req: Request, callback: HostCallback) -> Result<Rc<Event>> {
        let fd = req.fd;
        let cap = req.opcode.capability();
        if self.features.caps & cap == 0 {
            let why = self.features.lacking(cap).unwrap_or("the operation");
            return Err(Error::new(
                AA_E_UNSUPPORTED,
                format!(
                    "io_submit: {} needs {why}, which this kernel's io_uring lacks",
                    req.opcode.name()
                ),
            ));
        }
        req.nowait = self.nowait;
        let registered = fd >= 0;
        let mut stream = false;
        if registered {
            let entry = self
                .registry
                .borrow_mut()
                .open(fd)
                .map_err(|e| Error::os(format_args!("io_submit: fd {fd}"), &e))
                .map(|e| (e.socket, e.stream, e.regular))?;
            (req.socket, stream, req.regular) = entry;
        }
        if req.has(async_abi::AA_IO_PEEK) && !req.socket {
            return Err(Error::invalid(format!(
                "io_submit: AA_IO_PEEK on fd {fd}, which is not a socket"
            )));
        }
        let ev = self.new_event(
            AA_EVENT_IO,
            0,
            callback,
            None,
            State::Io(IoState {
                op: None,
                cancel: None,
            }),
        );
        let key = if req.opcode == Opcode::Close {
            self.close_fd(fd, Rc::clone(&ev), OpKind::Request(req))
        } else {
            let buf = owned_buf(&req);
            let parked_read = self.parks_read(&req, stream);
            let parked = self.parks_accept(&req) || parked_read;
            let hold = if parked {
                Hold::Parked
            } else {
                req.lane().map_or(Hold::No, Hold::Lane)
            };
            let key = self.start_op(
                NewOp {
                    owner: Some(Rc::clone(&ev)),
                    kind: OpKind::Request(req),
                    fd: registered.then_some(fd),
                    buf,
                    hold,
                },
                |kind, buf| match kind {
                    OpKind::Request(req) => entry(req, buf),
                    _ => unreachable!("a request op"),
                },
            );
            if parked_read {
                self.park_read(fd, key);
            } else if parked {
                self.park_accept(fd, key);
            }
            key
        };
        if let State::Io(io) = &mut *ev.state.borrow_mut() {
            io.op = Some(key);
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// `uring.inline_streams`: a read or write at the position of a stream
    /// socket, allowed inline by the host, made at once as a non-blocking
    /// `recv`/`send` when no request of its direction is held or in the
    /// kernel (G4: it cannot overtake one). Its result (bytes, or
    /// `-errno`), or `None` to take the ring: it would block, or it is not
    /// such a request. The host makes the same call itself on a ready
    /// lane (its D-42) and reads by readiness (D-43) once the instance has
    /// `AA_CAP_IO_INLINE`, which is what this buys: a ping-pong stream
    /// costs no request record, ring entry or event per read.
    pub(crate) fn try_inline(&self, req: &Request) -> Option<i64> {
        if !self.inline_streams || req.fd < 0 || req.offset >= 0 {
            return None;
        }
        let lane = match req.opcode {
            Opcode::Read => Lane::Read,
            Opcode::Write => Lane::Write,
            _ => return None,
        };
        {
            let mut registry = self.registry.borrow_mut();
            let entry = registry.open(req.fd).ok()?;
            if !(entry.socket && entry.stream && entry.idle(lane)) {
                return None;
            }
        }
        let peek = if req.has(async_abi::AA_IO_PEEK) {
            libc::MSG_PEEK
        } else {
            0
        };
        loop {
            let n = match lane {
                // SAFETY: the host lends `buf` (writable for `len` bytes)
                // until this call returns (AA-R5, F5); `MSG_DONTWAIT`: the
                // call never blocks, whatever the descriptor's mode.
                Lane::Read => unsafe {
                    libc::recv(
                        req.fd,
                        req.buf.as_mut_ptr().cast(),
                        req.buf.len(),
                        libc::MSG_DONTWAIT | peek,
                    )
                },
                // SAFETY: as above, `buf` readable for `len` bytes;
                // `MSG_NOSIGNAL`: a reset peer is `EPIPE`, never `SIGPIPE`.
                Lane::Write => unsafe {
                    libc::send(
                        req.fd,
                        req.buf.as_mut_ptr().cast_const().cast(),
                        req.buf.len(),
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    )
                },
            };
            if n >= 0 {
                return Some(n as i64);
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => return None,
                Some(e) => return Some(-i64::from(e)),
                None => return None,
            }
        }
    }

    /// A request's completion (see the module doc). Returns the number of
    /// host callbacks run.
    pub(super) fn complete_request(&self, key: OpKey, cqe: Cqe) -> i32 {
        if self.retry_request(key, cqe) {
            return 0;
        }
        let Some(op) = self.retire(key) else { return 0 };
        let (Some(ev), OpKind::Request(req)) = (op.owner, op.kind) else {
            return 0;
        };
        let result = finish(&req, &op.buf, cqe.result);
        if req.opcode == Opcode::Close {
            self.registry.borrow_mut().forget(req.fd);
        }
        let cancel = match &mut *ev.state.borrow_mut() {
            State::Io(io) => {
                io.op = None;
                io.cancel
            }
            _ => None,
        };
        self.touch(&ev);
        if !ev.deliverable() {
            if matches!(req.opcode, Opcode::Accept | Opcode::OpenAt) && result >= 0 {
                // Nobody will ever see this connection or file: the host
                // disposed of the request before the kernel finished it.
                super::sys::close_orphan(result as RawFd);
            }
            self.settle_close(&ev);
            return 0;
        }
        // E6: a confirmed cancel reports its reason; a request that finished
        // first reports its real result (P-08: data is never lost).
        let (value, now) = match cancel {
            Some(c) if cqe.result == -libc::ECANCELED => (i64::from(c.reason), c.iteration),
            Some(c) => (result, c.iteration),
            None => (result, 0),
        };
        let count = if now < self.iteration() {
            ev.callback.notify(&*ev, 0, value);
            1
        } else {
            // R2: cancelled during this very iteration; the callback waits
            // for the next one.
            self.defer(Deferred::Notify {
                ev: Rc::clone(&ev),
                status: 0,
                value,
            });
            0
        };
        self.settle_close(&ev);
        count
    }

    /// Whether the op named `key` is an `AA_IO_CLOSE`.
    fn is_close(&self, key: OpKey) -> bool {
        matches!(self.ops.borrow().get(key).map(|op| &op.kind),
            Some(OpKind::Request(req)) if req.opcode == Opcode::Close)
    }

    /// Retries that stay inside the request: `EAGAIN` (wait for readiness,
    /// then push again) and `ENOTSOCK` (the descriptor number was reused for
    /// a non-socket behind the reactor's back: `RECV`/`SEND` become
    /// `READ`/`WRITE`). Returns whether the completion was consumed.
    fn retry_request(&self, key: OpKey, cqe: Cqe) -> bool {
        let (fd, mask, opcode, socket, peek) = match self.ops.borrow().get(key) {
            Some(op) => match &op.kind {
                OpKind::Request(req) => (
                    req.fd,
                    req.readiness_mask(),
                    req.opcode,
                    req.socket,
                    req.has(async_abi::AA_IO_PEEK),
                ),
                _ => return false,
            },
            None => return false,
        };
        let Some(mask) = mask else { return false };
        if self.retry_when_ready(key, cqe, fd, mask) {
            return true;
        }
        // A peek has no non-socket form: it reports the -ENOTSOCK.
        let not_socket = cqe.result == -libc::ENOTSOCK
            && socket
            && !peek
            && matches!(opcode, Opcode::Read | Opcode::Write);
        if !not_socket {
            return false;
        }
        let rebuilt = {
            let mut ops = self.ops.borrow_mut();
            match ops.get_mut(key) {
                Some(op) if op.life == super::Life::Submitted => match &mut op.kind {
                    OpKind::Request(req) => {
                        req.socket = false;
                        Some(entry(req, &op.buf))
                    }
                    _ => None,
                },
                _ => None,
            }
        };
        let Some(rebuilt) = rebuilt else { return false };
        self.registry.borrow_mut().mark_not_socket(fd);
        self.replace_entry(key, rebuilt);
        true
    }

    /// Ends a pending request (cancel, close, dispose): records the reason
    /// (E6) and cancels its op. Returns whether it was pending.
    ///
    /// An `AA_IO_CLOSE` is never stopped: a dropped close would leak the
    /// descriptor and never send the peer its end of stream, and the epoll
    /// reactor closes at once anyway. It runs to completion and reports its
    /// real result (to nobody, if the request was disposed).
    pub(crate) fn cancel_request(&self, ev: &Rc<Event>, reason: i32) -> bool {
        let key = {
            let mut state = ev.state.borrow_mut();
            let State::Io(io) = &mut *state else {
                return false;
            };
            let Some(key) = io.op else { return false };
            if io.cancel.is_some() || self.is_close(key) {
                return true;
            }
            io.cancel = Some(crate::event::Cancel {
                reason,
                iteration: self.iteration(),
            });
            key
        };
        if let Some(op) = self.cancel_op(key) {
            // The kernel never saw it (held in its lane, or staged): it ends
            // here, and its callback runs from the next `run_once` (R2).
            self.end_unsubmitted(op, reason);
        }
        self.touch(ev);
        true
    }
}
