//! Sockets: the transfers with `MSG_DONTWAIT`, `accept`, `connect`, and
//! the bookkeeping of descriptors made and ended (FD2).
//!
//! - **NT1** `recv`/`send` and their forms add `MSG_DONTWAIT` to the
//!   caller's flags and go through the shared transfer loop (IO1); a
//!   caller that passed `MSG_DONTWAIT` itself gets the real call. A
//!   blocking `send` sends everything (IO3); `recv` with `MSG_WAITALL`
//!   gathers everything asked for, or up to end of stream or an error.
//! - **NT2** `accept` and `connect` have no per-call non-blocking flag:
//!   on a blocking socket the hook sets `O_NONBLOCK` for that one call and
//!   restores the flags before anything else runs on the loop (the loop is
//!   one thread, and nothing suspends in between). `connect` then waits
//!   for writability and reports `SO_ERROR`; its wait is bounded by
//!   `SO_SNDTIMEO` and ends with `EINPROGRESS`, as Linux's blocking
//!   connect does. `accept`'s wait is bounded by `SO_RCVTIMEO` (`EAGAIN`).
//!   A Unix socket whose listener's backlog is full (`EAGAIN` from a
//!   non-blocking connect) is tried again after a short pause.
#![allow(unsafe_code)]
// The `#[no_mangle]` entry points are public to the linker, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

use libc::{msghdr, size_t, sockaddr, socklen_t, ssize_t};

use super::fds::{self, Kind};
use super::io::{all, chk_fail, drive};
use super::wait::{self, Woke};
use super::{errno, fail, real, set_errno, sock_timeout, what, Way};

/// A `recv`-like call through the transfer loop (NT1).
fn recv_like(
    fd: c_int,
    n: usize,
    flags: c_int,
    call: &'static str,
    op: impl Fn(usize, c_int) -> ssize_t,
) -> ssize_t {
    let waitall = flags & libc::MSG_WAITALL != 0;
    let base = flags & !libc::MSG_WAITALL;
    let one = |done: usize| {
        let mut nowait = || op(done, base | libc::MSG_DONTWAIT);
        let mut plain = || op(done, flags);
        drive(fd, Way::In, call, &mut nowait, &mut plain, None)
    };
    if !waitall {
        return one(0);
    }
    if flags & libc::MSG_PEEK != 0 {
        // A peek leaves the bytes queued: gathering would peek the same
        // head again. Peek the whole length from the start until it is
        // there (or end of stream, or an error); no readiness reports
        // "more", so the tries are paced by a growing pause.
        let mut pause = Duration::from_millis(1);
        loop {
            let r = one(0);
            if r <= 0 || r as usize >= n {
                return r;
            }
            if !wait::sleep(pause, &what(call, fd)) {
                return fail(libc::ECANCELED);
            }
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
    let mut done = 0usize;
    while done < n {
        let r = one(done);
        if r < 0 {
            return if done > 0 { done as ssize_t } else { -1 };
        }
        if r == 0 {
            break;
        }
        done += r as usize;
    }
    done as ssize_t
}

/// Hooked `recv(2)`.
///
/// # Safety
///
/// As `recv(2)`.
#[no_mangle]
pub unsafe extern "C" fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
    if !wait::active() || flags & libc::MSG_DONTWAIT != 0 || n == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::recv(fd, buf, n, flags) };
    }
    if flags == 0 {
        if let Some(gen) = fds::plain_tcp_watched(fd) {
            // SAFETY: the caller's buffer, as the caller passed it.
            let op = || unsafe { real::recv(fd, buf, n, libc::MSG_DONTWAIT) };
            if let Some(r) = wait::plain_tcp(fd, gen, Way::In, "hooked recv", op) {
                return r;
            }
        }
    }
    recv_like(fd, n, flags, "hooked recv", |done, f| {
        // SAFETY: `done` is below `n`: within the caller's buffer.
        unsafe { real::recv(fd, buf.cast::<u8>().add(done).cast(), n - done, f) }
    })
}

/// Hooked `__recv_chk` (`recv` in C code built with `_FORTIFY_SOURCE`).
///
/// # Safety
///
/// As `recv(2)`; `buflen` is the buffer's size.
#[no_mangle]
pub unsafe extern "C" fn __recv_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    buflen: size_t,
    flags: c_int,
) -> ssize_t {
    if n > buflen {
        chk_fail();
    }
    // SAFETY: the caller's contract.
    unsafe { recv(fd, buf, n, flags) }
}

/// Hooked `recvfrom(2)`.
///
/// # Safety
///
/// As `recvfrom(2)`.
#[no_mangle]
pub unsafe extern "C" fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> ssize_t {
    if !wait::active() || flags & libc::MSG_DONTWAIT != 0 || n == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::recvfrom(fd, buf, n, flags, addr, len) };
    }
    recv_like(fd, n, flags, "hooked recvfrom", |done, f| {
        // SAFETY: `done` is below `n`: within the caller's buffer; the
        // address out pointers are the caller's.
        unsafe {
            real::recvfrom(
                fd,
                buf.cast::<u8>().add(done).cast(),
                n - done,
                f,
                addr,
                len,
            )
        }
    })
}

/// Hooked `__recvfrom_chk`.
///
/// # Safety
///
/// As `recvfrom(2)`; `buflen` is the buffer's size.
#[no_mangle]
pub unsafe extern "C" fn __recvfrom_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    buflen: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> ssize_t {
    if n > buflen {
        chk_fail();
    }
    // SAFETY: the caller's contract.
    unsafe { recvfrom(fd, buf, n, flags, addr, len) }
}

/// Hooked `recvmsg(2)`. `MSG_WAITALL` is left to the kernel's non-blocking
/// behaviour (one transfer), as gathering into a caller's iovecs would
/// rewrite them.
///
/// # Safety
///
/// As `recvmsg(2)`.
#[no_mangle]
pub unsafe extern "C" fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    if !wait::active() || flags & libc::MSG_DONTWAIT != 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::recvmsg(fd, msg, flags) };
    }
    // SAFETY: the caller's message header, as the caller passed it.
    let mut nowait = || unsafe { real::recvmsg(fd, msg, flags | libc::MSG_DONTWAIT) };
    // SAFETY: as above.
    let mut plain = || unsafe { real::recvmsg(fd, msg, flags) };
    let r = drive(fd, Way::In, "hooked recvmsg", &mut nowait, &mut plain, None);
    if r >= 0 {
        // SAFETY: the kernel filled the header for a successful call.
        unsafe { note_received_fds(msg) };
    }
    r
}

/// FD2: descriptors received with `SCM_RIGHTS` are new numbers.
///
/// # Safety
///
/// `msg` is a header `recvmsg` filled.
unsafe fn note_received_fds(msg: *const msghdr) {
    // SAFETY: walking the control messages the kernel wrote, with libc's
    // macros over the caller's header.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<c_int>();
                let n = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / size_of::<c_int>();
                for i in 0..n {
                    let _ = fds::forget(data.add(i).read_unaligned());
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
}

/// Hooked `send(2)`.
///
/// # Safety
///
/// As `send(2)`.
#[no_mangle]
pub unsafe extern "C" fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
    if !wait::active() || flags & libc::MSG_DONTWAIT != 0 || n == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::send(fd, buf, n, flags) };
    }
    // IO6: std's stream writes pass MSG_NOSIGNAL and nothing else.
    let fast = if flags & !libc::MSG_NOSIGNAL == 0 {
        fds::plain_tcp_watched(fd)
    } else {
        None
    };
    all(fd, n, |done| {
        // SAFETY: `done` is below `n`: within the caller's buffer.
        let p = unsafe { buf.cast::<u8>().add(done) }.cast::<c_void>();
        if let Some(gen) = fast {
            // SAFETY: as above.
            let op = || unsafe { real::send(fd, p, n - done, flags | libc::MSG_DONTWAIT) };
            if let Some(r) = wait::plain_tcp(fd, gen, Way::Out, "hooked send", op) {
                return r;
            }
        }
        // SAFETY: as above.
        let mut nowait = || unsafe { real::send(fd, p, n - done, flags | libc::MSG_DONTWAIT) };
        // SAFETY: as above.
        let mut plain = || unsafe { real::send(fd, p, n - done, flags) };
        drive(fd, Way::Out, "hooked send", &mut nowait, &mut plain, None)
    })
}

/// Hooked `sendto(2)`.
///
/// # Safety
///
/// As `sendto(2)`.
#[no_mangle]
pub unsafe extern "C" fn sendto(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const sockaddr,
    len: socklen_t,
) -> ssize_t {
    if !wait::active() || flags & libc::MSG_DONTWAIT != 0 || n == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::sendto(fd, buf, n, flags, addr, len) };
    }
    all(fd, n, |done| {
        // SAFETY: `done` is below `n`: within the caller's buffer.
        let p = unsafe { buf.cast::<u8>().add(done) }.cast::<c_void>();
        let mut nowait =
            // SAFETY: as above; the address is the caller's.
            || unsafe { real::sendto(fd, p, n - done, flags | libc::MSG_DONTWAIT, addr, len) };
        // SAFETY: as above.
        let mut plain = || unsafe { real::sendto(fd, p, n - done, flags, addr, len) };
        drive(fd, Way::Out, "hooked sendto", &mut nowait, &mut plain, None)
    })
}

/// Hooked `sendmsg(2)`: one message, as a non-blocking send makes it
/// (datagrams go whole; a stream's short send is returned short, which
/// callers of `sendmsg` handle, rather than rewriting the caller's
/// iovecs).
///
/// # Safety
///
/// As `sendmsg(2)`.
#[no_mangle]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    if !wait::active() || flags & libc::MSG_DONTWAIT != 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::sendmsg(fd, msg, flags) };
    }
    // SAFETY: the caller's message, as the caller passed it.
    let mut nowait = || unsafe { real::sendmsg(fd, msg, flags | libc::MSG_DONTWAIT) };
    // SAFETY: as above.
    let mut plain = || unsafe { real::sendmsg(fd, msg, flags) };
    drive(
        fd,
        Way::Out,
        "hooked sendmsg",
        &mut nowait,
        &mut plain,
        None,
    )
}

/// Runs `op` with `O_NONBLOCK` set on `fd` for the one call (NT2), the
/// flags restored before returning; `errno` is `op`'s.
fn nonblocking_once(fd: c_int, flags: c_int, op: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: F_SETFL with an int argument touches no memory.
    unsafe { real::fcntl(fd, libc::F_SETFL, (flags | libc::O_NONBLOCK) as usize) };
    let r = op();
    let e = errno();
    // SAFETY: as above.
    unsafe { real::fcntl(fd, libc::F_SETFL, flags as usize) };
    set_errno(e);
    r
}

fn accept_any(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
    call: &'static str,
) -> c_int {
    // SAFETY: F_GETFL touches no memory.
    let fl = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
    if fl < 0 || fl & libc::O_NONBLOCK != 0 {
        // SAFETY: the caller's contract.
        return note(unsafe { real::accept4(fd, addr, len, flags) });
    }
    let timeout = sock_timeout(fd, Way::In).and_then(|t| Instant::now().checked_add(t));
    let mut fl = fl;
    loop {
        // SAFETY: the caller's out pointers, as the caller passed them.
        let r = nonblocking_once(fd, fl, || unsafe { real::accept4(fd, addr, len, flags) });
        if r >= 0 {
            return note(r);
        }
        let e = errno();
        if e == libc::EINTR || e == libc::ECONNABORTED {
            continue;
        }
        if e != libc::EAGAIN {
            return -1;
        }
        let left = match timeout {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(l) if !l.is_zero() => Some(l),
                _ => return fail(libc::EAGAIN),
            },
        };
        match wait::fd_ready(fd, Way::In.interest(), left, call) {
            Woke::Ready => {}
            Woke::TimedOut => return fail(libc::EAGAIN),
            Woke::Cancelled => return fail(libc::ECANCELED),
            // SAFETY: the caller's contract.
            Woke::Unavailable => return note(unsafe { real::accept4(fd, addr, len, flags) }),
        }
        // The flags may have changed while it waited (another coroutine
        // made the socket non-blocking): restore what is there now.
        // SAFETY: F_GETFL touches no memory.
        fl = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
        if fl < 0 || fl & libc::O_NONBLOCK != 0 {
            // SAFETY: the caller's contract.
            return note(unsafe { real::accept4(fd, addr, len, flags) });
        }
    }
}

/// FD2: a descriptor a hooked call made is not a file, and nothing else
/// is known of it yet.
fn note(fd: c_int) -> c_int {
    if fd >= 0 {
        fds::reset(fd, Kind::Other);
    }
    fd
}

/// Hooked `accept(2)`.
///
/// # Safety
///
/// As `accept(2)`.
#[no_mangle]
pub unsafe extern "C" fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return note(unsafe { real::accept(fd, addr, len) });
    }
    accept_any(fd, addr, len, 0, "hooked accept")
}

/// Hooked `accept4(2)`.
///
/// # Safety
///
/// As `accept4(2)`.
#[no_mangle]
pub unsafe extern "C" fn accept4(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return note(unsafe { real::accept4(fd, addr, len, flags) });
    }
    accept_any(fd, addr, len, flags, "hooked accept4")
}

/// Hooked `connect(2)` (NT2).
///
/// # Safety
///
/// As `connect(2)`.
#[no_mangle]
pub unsafe extern "C" fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return unsafe { real::connect(fd, addr, len) };
    }
    // SAFETY: F_GETFL touches no memory.
    let fl = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
    if fl < 0 || fl & libc::O_NONBLOCK != 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::connect(fd, addr, len) };
    }
    let mut pause = Duration::from_millis(1);
    loop {
        // SAFETY: the caller's address, as the caller passed it.
        let r = nonblocking_once(fd, fl, || unsafe { real::connect(fd, addr, len) });
        if r == 0 {
            return 0;
        }
        match errno() {
            libc::EINPROGRESS => break,
            // A Unix listener's full backlog: a blocking connect waits for
            // room, which no readiness reports; try again shortly.
            libc::EAGAIN => {
                if !wait::sleep(pause, &what("hooked connect", fd)) {
                    return fail(libc::ECANCELED);
                }
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            libc::EINTR => {}
            _ => return -1,
        }
    }
    let deadline = sock_timeout(fd, Way::Out).and_then(|t| Instant::now().checked_add(t));
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    loop {
        let left = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(l) if !l.is_zero() => Some(l),
                _ => return fail(libc::EINPROGRESS),
            },
        };
        match wait::fd_ready(fd, Way::Out.interest(), left, "hooked connect") {
            Woke::Ready => {
                // Done when the kernel says writable (or failed); a watch's
                // report alone may be an error of the watch itself.
                // SAFETY: one valid pollfd, zero timeout.
                if unsafe { real::poll(&mut p, 1, 0) } != 0 {
                    break;
                }
            }
            Woke::Unavailable => {
                // No wait was possible: block in poll for the result.
                // SAFETY: one valid pollfd.
                unsafe { real::poll(&mut p, 1, -1) };
                break;
            }
            Woke::TimedOut => return fail(libc::EINPROGRESS),
            Woke::Cancelled => return fail(libc::ECANCELED),
        }
    }
    let mut err: c_int = 0;
    let mut elen = size_of::<c_int>() as socklen_t;
    // SAFETY: `err` and `elen` are valid out pointers of the sizes given.
    if unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&raw mut err).cast(),
            &mut elen,
        )
    } != 0
    {
        return -1;
    }
    if err != 0 {
        return fail(err);
    }
    0
}

/// Hooked `socket(2)`: FD2.
///
/// # Safety
///
/// As `socket(2)`.
#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    // SAFETY: the caller's contract.
    note(unsafe { real::socket(domain, ty, protocol) })
}

/// Hooked `socketpair(2)`: FD2.
///
/// # Safety
///
/// As `socketpair(2)`.
#[no_mangle]
pub unsafe extern "C" fn socketpair(
    domain: c_int,
    ty: c_int,
    protocol: c_int,
    sv: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    let r = unsafe { real::socketpair(domain, ty, protocol, sv) };
    if r == 0 {
        // SAFETY: the kernel filled both slots.
        unsafe {
            note(*sv);
            note(*sv.add(1));
        }
    }
    r
}

/// Hooked `close(2)`: FD2, on any thread, hooks on or off. Closing a
/// regular file a hooked call wrote to may wait for the disk (ext4 flushes
/// a file rewritten after a truncation; measured: 63 ms for 200 MiB), so
/// inside a coroutine that close runs on the blocking pool; the number
/// stays taken until it is done, as with any close.
///
/// # Safety
///
/// As `close(2)`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let was = fds::forget(fd);
    if was == Some(Kind::Written) && wait::active() {
        let work = move || {
            // SAFETY: the caller's descriptor, closed once, by this job.
            let r = unsafe { real::close(fd) };
            (r, errno())
        };
        // Waited for to its end: a close always releases the number, so
        // its result is the one to report, cancelled or not.
        return match wait::on_pool_fixed("hooked close (file, on the blocking pool)", work) {
            Some((r, e)) => {
                set_errno(e);
                r
            }
            // SAFETY: the pool did not take it: the caller's contract.
            None => unsafe { real::close(fd) },
        };
    }
    // SAFETY: the caller's contract.
    unsafe { real::close(fd) }
}

/// Hooked `dup(2)`: FD2.
///
/// # Safety
///
/// As `dup(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: the caller's contract.
    let r = unsafe { real::dup(fd) };
    if r >= 0 {
        let _ = fds::forget(r);
    }
    r
}

/// Hooked `dup2(2)`: FD2 (the target is replaced).
///
/// # Safety
///
/// As `dup2(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, to: c_int) -> c_int {
    let _ = fds::forget(to);
    // SAFETY: the caller's contract.
    unsafe { real::dup2(fd, to) }
}

/// Hooked `dup3(2)`: FD2 (the target is replaced).
///
/// # Safety
///
/// As `dup3(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, to: c_int, flags: c_int) -> c_int {
    let _ = fds::forget(to);
    // SAFETY: the caller's contract.
    unsafe { real::dup3(fd, to, flags) }
}

/// Hooked `fcntl(2)`: FD4 (`F_SETFL` may change the mode) and FD2 (the
/// `F_DUPFD` commands make a descriptor), on any thread, hooks on or off.
/// Declared with the argument as a fixed third parameter, which the x86-64
/// and AArch64 Linux calling conventions pass where a variadic call puts
/// it; the argument is passed on as the caller gave it.
///
/// # Safety
///
/// As `fcntl(2)`.
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: usize) -> c_int {
    if cmd == libc::F_SETFL {
        fds::unplain(fd);
    }
    // SAFETY: the caller's contract.
    let r = unsafe { real::fcntl(fd, cmd, arg) };
    if r >= 0 && (cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC) {
        let _ = fds::forget(r);
    }
    r
}

/// Hooked `fcntl64`, the name `fcntl` has in code built with 64-bit file
/// offsets.
///
/// # Safety
///
/// As `fcntl(2)`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: usize) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { fcntl(fd, cmd, arg) }
}

/// Hooked `ioctl(2)`: FD4 (`FIONBIO` changes the mode), on any thread.
/// Declared as `fcntl` is.
///
/// # Safety
///
/// As `ioctl(2)`.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: libc::c_ulong, arg: usize) -> c_int {
    if request == libc::FIONBIO {
        fds::unplain(fd);
    }
    // SAFETY: the caller's contract.
    unsafe { real::ioctl(fd, request, arg) }
}

/// Hooked `setsockopt(2)`: FD4 (a receive or send timeout), on any thread.
///
/// # Safety
///
/// As `setsockopt(2)`.
#[no_mangle]
pub unsafe extern "C" fn setsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    value: *const c_void,
    len: socklen_t,
) -> c_int {
    if level == libc::SOL_SOCKET && (name == libc::SO_RCVTIMEO || name == libc::SO_SNDTIMEO) {
        fds::unplain(fd);
    }
    // SAFETY: the caller's contract.
    unsafe { real::setsockopt(fd, level, name, value, len) }
}

/// Hooked `pipe(2)`: FD2.
///
/// # Safety
///
/// As `pipe(2)`.
#[no_mangle]
pub unsafe extern "C" fn pipe(fds_out: *mut c_int) -> c_int {
    // SAFETY: the caller's contract.
    let r = unsafe { real::pipe(fds_out) };
    if r == 0 {
        // SAFETY: the kernel filled both slots.
        unsafe {
            note(*fds_out);
            note(*fds_out.add(1));
        }
    }
    r
}

/// Hooked `pipe2(2)`: FD2.
///
/// # Safety
///
/// As `pipe2(2)`.
#[no_mangle]
pub unsafe extern "C" fn pipe2(fds_out: *mut c_int, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    let r = unsafe { real::pipe2(fds_out, flags) };
    if r == 0 {
        // SAFETY: the kernel filled both slots.
        unsafe {
            note(*fds_out);
            note(*fds_out.add(1));
        }
    }
    r
}

/// Hooked `eventfd(2)`: FD2.
///
/// # Safety
///
/// As `eventfd(2)`.
#[no_mangle]
pub unsafe extern "C" fn eventfd(initval: libc::c_uint, flags: c_int) -> c_int {
    // SAFETY: the caller's contract.
    note(unsafe { real::eventfd(initval, flags) })
}
