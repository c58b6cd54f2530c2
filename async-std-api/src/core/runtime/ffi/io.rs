//! I/O requests: submit, wait for the completion, and never give the
//! buffer back before the reactor is done with it.
//!
//! Invariants:
//! - **IO1** (AA-R5, P-21) [`perform`] returns only after the request
//!   completed inline (`AA_DONE`), failed to submit (nothing created,
//!   AA-R8), or its callback ran. Until then the caller's buffer (and a
//!   file request's paths and stat slot) stays borrowed by this call, so
//!   the reactor or kernel never reads or writes released memory. Cancelling only shortens the wait for the kernel; it
//!   never skips it.
//! - **IO2** The request's state (done flag, result, address) lives in a
//!   heap record owned by the event's `ud`, never only on the suspended
//!   stack; it is freed after the event is disposed (F5).
//! - **IO3** Each request has its own completion; a wake-up is re-checked
//!   against the record's done flag (P-22).
//! - **IO4** A record is reused only once nothing but `perform` refers to
//!   it (its request completed and its event is gone, or it never had
//!   one), so a request's hot path allocates nothing.
//!
//! # Safety
//!
//! See the parent module. IO1 is what makes handing raw buffer pointers to
//! `io_submit` sound: the pointers come from borrows that outlive this call.
#![allow(unsafe_code)]

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::c_void;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::ptr::{self, NonNull};
use std::rc::Rc;

use async_abi::{
    AaBytes, AaCoroutine, AaEvent, AaIoOp, AaSockAddr, AaStat, AA_CAP_IO, AA_DONE, AA_E_CANCELLED,
    AA_E_DEADLOCK, AA_E_INTERNAL, AA_E_PANIC, AA_E_SHUTDOWN, AA_E_UNSUPPORTED, AA_IO_ACCEPT,
    AA_IO_CLOSE, AA_IO_CONNECT, AA_IO_DATASYNC, AA_IO_FSYNC, AA_IO_FTRUNCATE, AA_IO_MKDIRAT,
    AA_IO_NOFOLLOW, AA_IO_OPENAT, AA_IO_PEEK, AA_IO_READ, AA_IO_RECVFROM, AA_IO_REMOVEDIR,
    AA_IO_RENAMEAT, AA_IO_SENDTO, AA_IO_STATX, AA_IO_TRY_INLINE, AA_IO_UNLINKAT, AA_IO_WRITE,
    AA_OK,
};

use super::Reactor;
use crate::core::budget;
use crate::core::runtime::{status_text, wake_raw, with_runtime, Runtime};
use crate::core::state::CoroState;

/// `ECANCELED` on Linux.
pub(crate) const ECANCELED: i32 = 125;

/// One request and the memory it borrows.
pub(crate) enum IoReq<'a> {
    /// `recv` into the buffer.
    Read(&'a mut [u8]),
    /// `send` from the buffer.
    Write(&'a [u8]),
    /// `pread` into the buffer at the file offset (never the descriptor's
    /// cursor, which it leaves alone).
    ReadAt(&'a mut [u8], u64),
    /// `pwrite` from the buffer at the file offset.
    WriteAt(&'a [u8], u64),
    /// `accept`; the peer address is written into the slot.
    Accept(&'a mut AaSockAddr),
    /// `connect` to the address.
    Connect(&'a AaSockAddr),
    /// `recvfrom` into the buffer, the sender's address into the slot;
    /// `peek` leaves the datagram queued (1.1, `AA_CAP_IO_DGRAM`).
    RecvFrom {
        buf: &'a mut [u8],
        from: &'a mut AaSockAddr,
        peek: bool,
    },
    /// `sendto` the address (1.1, `AA_CAP_IO_DGRAM`).
    SendTo { buf: &'a [u8], to: &'a AaSockAddr },
    /// `openat(fd, path, flags | O_CLOEXEC, mode)` (ABI 1.1,
    /// `AA_CAP_IO_FILE`): the result is a descriptor the host owns
    /// ([`accepted_fd`]).
    OpenAt {
        path: &'a [u8],
        flags: u32,
        mode: u32,
    },
    /// `statx` of `path` relative to `fd`, or of `fd` itself when `path` is
    /// empty, into the slot (1.1).
    Statx {
        path: &'a [u8],
        nofollow: bool,
        out: &'a mut AaStat,
    },
    /// `fsync`, or `fdatasync` (1.1).
    Fsync { datasync: bool },
    /// `ftruncate` to the length (1.1, `AA_CAP_IO_FTRUNCATE`).
    Ftruncate(u64),
    /// `unlinkat` of a file, or of an empty directory (1.1).
    UnlinkAt { path: &'a [u8], dir: bool },
    /// `renameat`, both paths relative to `fd` (1.1).
    RenameAt { from: &'a [u8], to: &'a [u8] },
    /// `mkdirat` with the permission bits (1.1).
    MkdirAt { path: &'a [u8], mode: u32 },
}

/// How a request's wait is described to the scheduler (deadlock and
/// watchdog reports), made only when the request has to wait.
pub(crate) trait Describe {
    /// The text, written into `buf` or `owned`, either of which lives until
    /// the request completed (the scheduler reads it meanwhile), or kept by
    /// the describer itself for at least as long.
    fn text<'b>(self, buf: &'b mut [u8; DESC_CAP], owned: &'b mut String) -> &'b [u8]
    where
        Self: 'b;
}

/// Room for the common descriptions (`"accept fd 123"`).
pub(crate) const DESC_CAP: usize = 40;

impl<F: FnOnce() -> String> Describe for F {
    fn text<'b>(self, _: &'b mut [u8; DESC_CAP], owned: &'b mut String) -> &'b [u8]
    where
        Self: 'b,
    {
        *owned = self();
        owned.as_bytes()
    }
}

/// `"<verb> fd <n>"`, written on the stack: the description of every read,
/// write and accept, so a request that waits formats and allocates nothing.
#[derive(Clone, Copy)]
pub(crate) struct FdWait(pub(crate) &'static str, pub(crate) RawFd);

impl Describe for FdWait {
    fn text<'b>(self, buf: &'b mut [u8; DESC_CAP], _: &'b mut String) -> &'b [u8]
    where
        Self: 'b,
    {
        let FdWait(verb, fd) = self;
        let verb = &verb.as_bytes()[..verb.len().min(DESC_CAP - 16)];
        let mut at = 0;
        for part in [verb, b" fd "] {
            buf[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        if fd < 0 {
            buf[at] = b'-';
            at += 1;
        }
        let mut digits = [0u8; crate::core::decimal::DIGITS];
        let tail = crate::core::decimal::digits(u128::from(fd.unsigned_abs()), &mut digits);
        buf[at..at + tail.len()].copy_from_slice(tail);
        &buf[..at + tail.len()]
    }
}

/// An [`FdWait`] written once and kept: a stream lane's verb and
/// descriptor never change, so a request that waits copies its text instead
/// of writing the digits again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WaitText {
    bytes: [u8; DESC_CAP],
    len: u8,
}

impl WaitText {
    pub(crate) fn new(what: FdWait) -> WaitText {
        let mut bytes = [0u8; DESC_CAP];
        // `FdWait` writes from the start of the buffer, at most `DESC_CAP`.
        let len = what.text(&mut bytes, &mut String::new()).len() as u8;
        WaitText { bytes, len }
    }
}

impl Describe for &WaitText {
    /// The kept text itself, not a copy: the caller's `WaitText` outlives
    /// the wait.
    fn text<'b>(self, _: &'b mut [u8; DESC_CAP], _: &'b mut String) -> &'b [u8]
    where
        Self: 'b,
    {
        &self.bytes[..usize::from(self.len)]
    }
}

/// What interrupted the wait for a request (the request itself was
/// cancelled in the reactor and then waited for, IO1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// The waiting coroutine's pending cancellation was taken.
    Cancelled,
    /// The scheduler is shutting down.
    Shutdown,
    /// The scheduler reported a deadlock.
    Deadlock,
}

/// How a request ended.
#[derive(Debug)]
pub(crate) struct IoOutcome {
    /// Bytes, a descriptor, 0, or `-errno`.
    pub(crate) result: i64,
    /// Set if the wait was interrupted.
    pub(crate) interrupt: Option<Interrupt>,
    /// The request did not complete inline: the coroutine waited for its
    /// callback (D-42 reads it as "this lane is not ready").
    pub(crate) waited: bool,
    /// The reactor failed the request with an error of its own
    /// (`AA_E_INTERNAL`, `AA_E_PANIC`): its one line, naming it (F11).
    pub(crate) failure: Option<Box<str>>,
}

struct IoRec {
    done: Cell<bool>,
    result: Cell<i64>,
    /// The waiting coroutine's handle: alive while its request is pending,
    /// since `perform` does not return before the completion (IO1, F4).
    waiter: Cell<*mut AaCoroutine>,
    addr: UnsafeCell<AaSockAddr>,
}

/// Records kept for reuse (IO4), so a request allocates nothing.
const SPARE_RECS: usize = 64;

thread_local! {
    static SPARE: RefCell<Vec<Rc<IoRec>>> = const { RefCell::new(Vec::new()) };
}

/// A fresh record for `me`'s request: a spare one reset, or a new one.
fn new_rec(me: &CoroState) -> Rc<IoRec> {
    match SPARE.with(|s| s.borrow_mut().pop()) {
        Some(rec) => {
            rec.done.set(false);
            rec.result.set(0);
            rec.waiter.set(me.raw.get());
            rec
        }
        None => Rc::new(IoRec {
            done: Cell::new(false),
            result: Cell::new(0),
            waiter: Cell::new(me.raw.get()),
            addr: UnsafeCell::new(AaSockAddr::EMPTY),
        }),
    }
}

/// IO4: keeps a record nothing else refers to (the reactor let go of it).
fn recycle(rec: Rc<IoRec>) {
    if Rc::strong_count(&rec) == 1 {
        SPARE.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < SPARE_RECS {
                s.push(rec);
            }
        });
    }
}

unsafe extern "C" fn io_cb(_ev: *mut AaEvent, result: i64, ud: *mut c_void) {
    // SAFETY: IO2/F5: `ud` is the record's strong count owned by the event,
    // released only after the event is disposed; this is its one callback.
    let rec = unsafe { &*ud.cast::<IoRec>() };
    if rec.done.get() {
        // F8: a second completion of one request; the first stands.
        super::called_twice("an I/O request's");
        return;
    }
    rec.result.set(result);
    rec.done.set(true);
    let _ = catch_unwind(AssertUnwindSafe(|| wake_raw(rec.waiter.get())));
}

/// Submits `req` on `fd` and waits for its completion (IO1), suspending the
/// current coroutine `me` with the wait description `what` (made only if
/// it has to wait: most requests complete inline). First it takes a unit
/// of the cooperative budget (`core::budget`, B2), which may give the loop
/// back; interrupted there, nothing is submitted. `spent` says the caller
/// already took this request's unit (a D-42 direct call that met `EAGAIN`
/// and hands the same request over), so one request never costs two.
///
/// A pending cancellation of `me` (or a shutdown or deadlock) cancels the
/// request in the reactor with `-ECANCELED`; the wait then goes on,
/// ignoring further wake-up reasons, until the request's callback ran.
pub(crate) fn perform(
    rt: &Runtime,
    me: &Rc<CoroState>,
    fd: RawFd,
    req: IoReq<'_>,
    what: impl Describe,
    at: &'static Location<'static>,
    spent: bool,
) -> IoOutcome {
    let (reactor, sched) = (&*rt.reactor, &rt.sched);
    let r = reactor.raw();
    if reactor.caps() & AA_CAP_IO == 0 {
        // F9: the reactor said it runs no requests.
        return IoOutcome {
            result: i64::from(AA_E_UNSUPPORTED),
            interrupt: None,
            waited: false,
            failure: None,
        };
    }
    if r.is_null() {
        return IoOutcome {
            result: -i64::from(ECANCELED),
            interrupt: None,
            waited: false,
            failure: None,
        };
    }
    if let Err(interrupt) = if spent {
        Ok(())
    } else {
        budget::spend(rt, me, at)
    } {
        return IoOutcome {
            result: -i64::from(ECANCELED),
            interrupt: Some(interrupt),
            waited: false,
            failure: None,
        };
    }
    let rec = new_rec(me);
    let fd = i64::from(fd);
    let mut accept_out = None;
    // The paths, buffers and slots below are borrowed from the caller until
    // this function returns, which is after the completion (IO1).
    let mut op = match req {
        IoReq::Read(b) => with_buf(AaIoOp::new(AA_IO_READ, fd), b.as_mut_ptr(), b.len(), -1),
        IoReq::Write(b) => with_buf(
            AaIoOp::new(AA_IO_WRITE, fd),
            b.as_ptr().cast_mut(),
            b.len(),
            -1,
        ),
        IoReq::ReadAt(b, at) => with_buf(
            AaIoOp::new(AA_IO_READ, fd),
            b.as_mut_ptr(),
            b.len(),
            file_offset(at),
        ),
        IoReq::WriteAt(b, at) => with_buf(
            AaIoOp::new(AA_IO_WRITE, fd),
            b.as_ptr().cast_mut(),
            b.len(),
            file_offset(at),
        ),
        IoReq::Accept(slot) => {
            // SAFETY: the record is not shared with the reactor yet.
            unsafe { *rec.addr.get() = AaSockAddr::EMPTY };
            accept_out = Some(slot);
            let mut op = AaIoOp::new(AA_IO_ACCEPT, fd);
            op.addr = rec.addr.get();
            op
        }
        IoReq::Connect(addr) => {
            // SAFETY: the record is fresh and not shared with the reactor yet.
            unsafe { *rec.addr.get() = *addr };
            let mut op = AaIoOp::new(AA_IO_CONNECT, fd);
            op.addr = rec.addr.get();
            op
        }
        IoReq::RecvFrom { buf, from, peek } => {
            // SAFETY: the record is not shared with the reactor yet.
            unsafe { *rec.addr.get() = AaSockAddr::EMPTY };
            accept_out = Some(from);
            let mut op = with_buf(
                AaIoOp::new(AA_IO_RECVFROM, fd),
                buf.as_mut_ptr(),
                buf.len(),
                -1,
            );
            op.addr = rec.addr.get();
            if peek {
                op.op_flags = AA_IO_PEEK;
            }
            op
        }
        IoReq::SendTo { buf, to } => {
            // SAFETY: the record is fresh and not shared with the reactor yet.
            unsafe { *rec.addr.get() = *to };
            let mut op = with_buf(
                AaIoOp::new(AA_IO_SENDTO, fd),
                buf.as_ptr().cast_mut(),
                buf.len(),
                -1,
            );
            op.addr = rec.addr.get();
            op
        }
        IoReq::OpenAt { path, flags, mode } => {
            let mut op = AaIoOp::new(AA_IO_OPENAT, fd);
            op.path = AaBytes::from_slice(path);
            op.open_flags = flags;
            op.mode = mode;
            op
        }
        IoReq::Statx {
            path,
            nofollow,
            out,
        } => {
            *out = AaStat::default();
            let mut op = with_buf(
                AaIoOp::new(AA_IO_STATX, fd),
                (out as *mut AaStat).cast(),
                std::mem::size_of::<AaStat>(),
                -1,
            );
            op.path = AaBytes::from_slice(path);
            if nofollow {
                op.op_flags = AA_IO_NOFOLLOW;
            }
            op
        }
        IoReq::Fsync { datasync } => {
            let mut op = AaIoOp::new(AA_IO_FSYNC, fd);
            if datasync {
                op.op_flags = AA_IO_DATASYNC;
            }
            op
        }
        IoReq::Ftruncate(len) => {
            let mut op = AaIoOp::new(AA_IO_FTRUNCATE, fd);
            op.offset = file_offset(len);
            op
        }
        IoReq::UnlinkAt { path, dir } => {
            let mut op = AaIoOp::new(AA_IO_UNLINKAT, fd);
            op.path = AaBytes::from_slice(path);
            if dir {
                op.op_flags = AA_IO_REMOVEDIR;
            }
            op
        }
        IoReq::RenameAt { from, to } => {
            let mut op = AaIoOp::new(AA_IO_RENAMEAT, fd);
            op.path = AaBytes::from_slice(from);
            op.path2 = AaBytes::from_slice(to);
            op.fd2 = fd;
            op
        }
        IoReq::MkdirAt { path, mode } => {
            let mut op = AaIoOp::new(AA_IO_MKDIRAT, fd);
            op.path = AaBytes::from_slice(path);
            op.mode = mode;
            op
        }
    };
    let ud = Rc::into_raw(rec.clone()) as *mut c_void;
    let io_submit = reactor.vtable().io_submit.expect("F1");
    let mut ev: *mut AaEvent = ptr::null_mut();
    // K5: the reactor's inline attempt makes its own system calls, under
    // its own borrows: never a hooked wait inside.
    let quiet = super::current::Quiet::new();
    // SAFETY: `r` is live (F2); `op` is valid for the call (AA-R2); `buf`
    // is borrowed by this function's caller and `addr` is in the record, both
    // until the callback ran (IO1, IO2); `io_cb` matches `AaIoCb`.
    let status = unsafe { io_submit(r, &mut op, AA_IO_TRY_INLINE, Some(io_cb), ud, &mut ev) };
    drop(quiet);
    let copy_addr = |slot: Option<&mut AaSockAddr>| {
        if let Some(slot) = slot {
            // SAFETY: the reactor is done with the record (inline completion,
            // or its callback ran), so nothing else accesses `addr`.
            *slot = unsafe { *rec.addr.get() };
        }
    };
    let ev = match NonNull::new(ev) {
        Some(ev) if status == AA_OK => ev,
        _ => {
            // SAFETY: AA_DONE or a failure created no event and runs no
            // callback (AA-R8), so the `ud` count is ours again.
            drop(unsafe { Rc::from_raw(ud as *const IoRec) });
            let result = if status == AA_DONE {
                op.result
            } else if status < 0 {
                i64::from(status)
            } else {
                -i64::from(ECANCELED)
            };
            // F11: the reactor's own failure reaches the caller with its
            // message (read now, while it describes this call), and the log.
            let failure = matches!(status, AA_E_INTERNAL | AA_E_PANIC)
                .then(|| reactor.failed_request(status).into_boxed_str());
            copy_addr(accept_out);
            recycle(rec);
            return IoOutcome {
                result,
                interrupt: None,
                waited: false,
                failure,
            };
        }
    };
    let (mut buf, mut owned) = ([0u8; DESC_CAP], String::new());
    let what = what.text(&mut buf, &mut owned);
    let mut interrupt = None;
    while !rec.done.get() {
        let st = sched.suspend(me, what, at);
        if rec.done.get() || interrupt.is_some() {
            continue;
        }
        let cause = match st {
            AA_E_CANCELLED if me.take_pending_cancel().is_some() => Some(Interrupt::Cancelled),
            AA_E_SHUTDOWN => Some(Interrupt::Shutdown),
            AA_E_DEADLOCK => Some(Interrupt::Deadlock),
            s if s < 0 && s != AA_E_CANCELLED => {
                // suspend itself failed: nothing can be waited for, yet the
                // reactor may still write into the buffer (IO1).
                tracing::error!(
                    "suspend failed while an I/O request was pending ({}): aborting",
                    status_text(s)
                );
                std::process::abort();
            }
            _ => None,
        };
        if let Some(c) = cause {
            interrupt = Some(c);
            let _ = reactor.cancel(ev, -ECANCELED);
        }
    }
    reactor.dispose(ev);
    // SAFETY: the callback ran and the event is disposed (F5): the `ud`
    // count is ours again.
    drop(unsafe { Rc::from_raw(ud as *const IoRec) });
    copy_addr(accept_out);
    let result = rec.result.get();
    recycle(rec);
    let failure = (result == i64::from(AA_E_INTERNAL))
        .then(|| reactor.failed_request(AA_E_INTERNAL).into_boxed_str());
    IoOutcome {
        result,
        interrupt,
        waited: true,
        failure,
    }
}

/// A read or write request's buffer and offset.
fn with_buf(mut op: AaIoOp, buf: *mut u8, len: usize, offset: i64) -> AaIoOp {
    op.buf = buf;
    op.len = len;
    op.offset = offset;
    op
}

/// The ABI's offset for a positional request. An offset past `i64::MAX`
/// cannot be expressed (-1 would mean "the cursor"); the kernel refuses
/// such offsets with `EINVAL` anyway, and so does the reactor for any
/// negative offset but -1, so it becomes -2.
fn file_offset(at: u64) -> i64 {
    i64::try_from(at).unwrap_or(-2)
}

unsafe extern "C" fn close_cb(ev: *mut AaEvent, _result: i64, _ud: *mut c_void) {
    // The close's one callback: the event is ours to dispose (F5).
    let _ = catch_unwind(|| {
        if let Some(ev) = NonNull::new(ev) {
            with_runtime(|rt| rt.reactor.dispose(ev));
        }
    });
}

/// Closes `fd` through the reactor (`AA_IO_CLOSE`), fire and forget: the
/// caller does not wait. A close that does not complete inline is disposed
/// by its own callback, after it completed (disposing it earlier would be
/// allowed by the ABI, but a reactor that drops a not-yet-submitted close
/// would leak the descriptor and never send the peer its EOF).
pub(crate) fn close(reactor: &Reactor, fd: OwnedFd) {
    use std::os::fd::IntoRawFd;
    let r = reactor.raw();
    if r.is_null() || reactor.caps() & AA_CAP_IO == 0 {
        drop(fd); // F9: no requests: closed here, at once
        return;
    }
    let raw = fd.into_raw_fd();
    let mut op = AaIoOp::new(AA_IO_CLOSE, i64::from(raw));
    let io_submit = reactor.vtable().io_submit.expect("F1");
    let mut ev: *mut AaEvent = ptr::null_mut();
    let _quiet = super::current::Quiet::new();
    // SAFETY: `r` is live (F2); `op` is valid for the call; the close
    // borrows no memory; `close_cb` does nothing with its null `ud`.
    let status = unsafe {
        io_submit(
            r,
            &mut op,
            AA_IO_TRY_INLINE,
            Some(close_cb),
            ptr::null_mut(),
            &mut ev,
        )
    };
    if status < 0 {
        // The reactor refused: close it ourselves.
        // SAFETY: `raw` came from `into_raw_fd` above and was not handed to
        // the reactor (AA-R8), so we still own it.
        drop(unsafe { OwnedFd::from_raw_fd(raw) });
    }
}

/// `recv(fd, buf, MSG_DONTWAIT)` as a bare system call, for the host's own
/// stream reads (D-43). glibc's `recv` is a thread-cancellation point and
/// spends about 60 instructions per call switching asynchronous
/// cancellation on and off around it; nothing here uses thread
/// cancellation, and a ping-pong connection makes one such call per request
/// in each direction. `MSG_DONTWAIT`: the call never blocks the loop, even
/// if a duplicate of the socket (`try_clone` and then `into_std`) made the
/// shared file description blocking.
pub(crate) fn recv(fd: std::os::fd::BorrowedFd<'_>, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: `recvfrom` writes at most `buf.len()` bytes into `buf`, which
    // the borrow keeps valid and unaliased for the call; the address
    // arguments are NULL. Every argument is a `c_long`, a pointer or a
    // `usize`, each as wide as the `long` that `syscall` reads.
    let n = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            libc::c_long::from(fd.as_raw_fd()),
            buf.as_mut_ptr(),
            buf.len(),
            libc::c_long::from(libc::MSG_DONTWAIT),
            ptr::null_mut::<libc::sockaddr>(),
            ptr::null_mut::<libc::socklen_t>(),
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `send(fd, buf, MSG_DONTWAIT | MSG_NOSIGNAL)` as a bare system call, for
/// the host's own stream writes (D-42); see [`recv`]. `MSG_NOSIGNAL`, as
/// std's `TcpStream::write` (and now a Unix stream's too): a reset peer is
/// `EPIPE`, not a `SIGPIPE`.
pub(crate) fn send(fd: std::os::fd::BorrowedFd<'_>, buf: &[u8]) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: `sendto` reads at most `buf.len()` bytes from `buf`, which the
    // borrow keeps valid for the call; the address arguments are NULL and 0.
    // Every argument is a `c_long`, a pointer or a `usize`, each as wide as
    // the `long` that `syscall` reads.
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            libc::c_long::from(fd.as_raw_fd()),
            buf.as_ptr(),
            buf.len(),
            libc::c_long::from(libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL),
            ptr::null::<libc::sockaddr>(),
            0 as libc::c_long,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Whether the open file description behind `fd` appends every write
/// (`O_APPEND`, from `fcntl(F_GETFL)`): positional writes cannot keep a
/// cursor of their own on it (the kernel appends whatever the offset).
pub(crate) fn is_append(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: `F_GETFL` only reads the flags of a descriptor the borrow
    // keeps open; it takes no pointer.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(flags & libc::O_APPEND != 0)
}

/// Takes ownership of a descriptor an accept or open request returned
/// (ABI: "the new descriptor ... owned by the host").
pub(crate) fn accepted_fd(result: i64) -> Option<OwnedFd> {
    let fd = RawFd::try_from(result).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: a successful `AA_IO_ACCEPT` result is a fresh descriptor that
    // the reactor hands to the host and never touches again.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_descriptions_are_written_without_formatting() {
        let (mut buf, mut owned) = ([0u8; DESC_CAP], String::new());
        let kept = WaitText::new(FdWait("read", 42));
        assert_eq!((&kept).text(&mut buf, &mut owned), b"read fd 42");
        assert_eq!(FdWait("read", 7).text(&mut buf, &mut owned), b"read fd 7");
        assert_eq!(
            FdWait("accept", 2_147_483_647).text(&mut buf, &mut owned),
            b"accept fd 2147483647"
        );
        assert_eq!(
            FdWait("write", -1).text(&mut buf, &mut owned),
            b"write fd -1"
        );
        let lazy = || "connect 127.0.0.1:80".to_owned();
        assert_eq!(lazy.text(&mut buf, &mut owned), b"connect 127.0.0.1:80");
    }
}
