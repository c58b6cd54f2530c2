//! `read`, `write` and their vectored and positioned forms: the transfer
//! loop every hooked transfer shares ([`drive`]), and the regular-file
//! route (page cache at once, the rest on the blocking pool).
//!
//! - **IO1** A transfer is tried without blocking first (`RWF_NOWAIT`, or
//!   `MSG_DONTWAIT` for the socket calls): the descriptor's own mode is
//!   never changed. On `EAGAIN` a descriptor the user made non-blocking
//!   returns it; a blocking one waits for readiness (bounded by the
//!   socket's timeout, which ends the call with `EAGAIN` as the kernel's
//!   would) and tries again.
//! - **IO2** A descriptor without per-call non-blocking transfers
//!   (`EOPNOTSUPP`: terminals, inotify) is read after a readiness wait with
//!   the plain call, and written with the plain call (terminal output
//!   rarely waits, and a wait per line would cost more than it saves).
//! - **IO3** A blocking write writes everything, as the kernel's does:
//!   short transfers are continued, and a failure after some bytes went
//!   returns the count.
//! - **IO5** The standard streams (descriptors 0, 1 and 2) are the C
//!   library's calls: std reaches them under its own process-wide locks
//!   (`Stdout` is a re-entrant lock around a `RefCell`), so a coroutine
//!   suspended inside `println!` would let another coroutine of the thread
//!   re-enter the lock and find the `RefCell` borrowed. A full terminal or
//!   pipe blocks the loop there as it did without the hooks; this crate's
//!   `io::stdout` and friends run on the blocking pool instead.
//! - **IO4** Regular files: a read takes at most 256 KiB from the page cache
//!   at once (`RWF_NOWAIT`); a larger read, one that would wait for the
//!   disk, and the rest of one the page cache held only in part go to the
//!   blocking pool, so the call still returns everything up to the end of
//!   the file (on io_uring, unless the coroutine is cancelled meanwhile:
//!   then the bytes moved so far, or `ECANCELED`, HK7). A write of at most
//!   64 KiB is made at once (to the page cache); a larger one goes to the
//!   pool. Pool work writes into the caller's buffer and is waited for to
//!   its end (HK5). On io_uring the reactor's requests take the pool's
//!   place (HK7 in `wait`).
//! - **IO6** A TCP socket found plain (FD4) whose watch this loop keeps
//!   makes its `recv`/`send` (and `read`/`write`, which are the same on
//!   TCP) on a short route: the non-blocking call, and on `EAGAIN` a wait on
//!   the cached watch, without asking the kernel or the hooks' table what
//!   the number is again. Nothing else changes (HK6: no switch unless the
//!   call would block). The first wait on a number, and every other
//!   descriptor, take IO1's route, which learns what IO6 needs.
#![allow(unsafe_code)]
// The `#[no_mangle]` entry points are public to the linker, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_int, c_void};
use std::time::Instant;

use libc::{iovec, off64_t, off_t, size_t, ssize_t};

use super::fds::{self, Kind};
use super::wait::{self, Woke};
use super::{errno, fail, real, sock_timeout, user_nonblocking, Way};

/// The most a hooked read takes from the page cache on the loop thread.
pub(super) const FILE_READ_INLINE: usize = 256 * 1024;

/// The most a hooked write gives the page cache on the loop thread.
pub(super) const FILE_WRITE_INLINE: usize = 64 * 1024;

/// The transfer loop (IO1, IO2): `nowait` tries without blocking, `plain`
/// is the C library's blocking call, `file` the regular-file route when
/// the call can meet one. Returns the C call's result, `errno` set on -1.
pub(super) fn drive(
    fd: c_int,
    way: Way,
    call: &'static str,
    nowait: &mut dyn FnMut() -> ssize_t,
    plain: &mut dyn FnMut() -> ssize_t,
    mut file: Option<&mut dyn FnMut() -> ssize_t>,
) -> ssize_t {
    let mut deadline: Option<Option<Instant>> = None;
    let mut after_ready = false;
    loop {
        let r = if after_ready { plain() } else { nowait() };
        if r >= 0 {
            return r;
        }
        let e = errno();
        if e == libc::EINTR {
            continue;
        }
        let unsupported = !after_ready && e == libc::EOPNOTSUPP;
        if e != libc::EAGAIN && !unsupported {
            return -1;
        }
        if let Some(f) = file.as_mut() {
            if fds::is_file(fds::kind(fd)) {
                return f();
            }
        }
        // FD4: a plain descriptor is blocking and has no timeouts.
        let known_plain = fds::is_plain(fd);
        if unsupported {
            if way == Way::Out || (!known_plain && user_nonblocking(fd)) {
                return plain();
            }
            after_ready = true;
        } else if !known_plain && user_nonblocking(fd) {
            return fail(libc::EAGAIN);
        }
        let deadline = *deadline.get_or_insert_with(|| {
            if known_plain {
                return None;
            }
            let t = sock_timeout(fd, way);
            if t.is_none() && sock_timeout(fd, way.other()).is_none() {
                fds::set_plain(fd, is_tcp(fd));
            }
            t.and_then(|t| Instant::now().checked_add(t))
        });
        let left = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return fail(libc::EAGAIN),
            },
        };
        match wait::fd_ready(fd, way.interest(), left, call) {
            Woke::Ready => {}
            Woke::TimedOut => return fail(libc::EAGAIN),
            Woke::Cancelled => return fail(libc::ECANCELED),
            Woke::Unavailable => return plain(),
        }
    }
}

/// IO6: whether `fd` is a TCP socket (asked once, as it is found plain).
fn is_tcp(fd: c_int) -> bool {
    let mut proto: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: `proto` and `len` are valid out pointers of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PROTOCOL,
            (&raw mut proto).cast(),
            &mut len,
        )
    };
    r == 0 && proto == libc::IPPROTO_TCP
}

/// IO3: repeats `step(done)` (one transfer of the bytes after `done`)
/// until `n` bytes went, the user's descriptor is non-blocking, or it
/// fails.
pub(super) fn all(fd: c_int, n: usize, mut step: impl FnMut(usize) -> ssize_t) -> ssize_t {
    let mut done = 0usize;
    loop {
        let r = step(done);
        if r < 0 {
            return if done > 0 { done as ssize_t } else { -1 };
        }
        done += r as usize;
        if done >= n || r == 0 || user_nonblocking(fd) {
            return done as ssize_t;
        }
    }
}

/// IO4: reads `n` bytes into `buf` (at `off`, or the file position) on the
/// blocking pool, continuing short reads until the end of the file.
fn file_read(fd: c_int, buf: *mut c_void, n: usize, off: Option<off64_t>) -> ssize_t {
    file_transfer(fd, buf as usize, n, off, Way::In)
}

/// IO4: writes `n` bytes of `buf` (at `off`, or the file position) on the
/// blocking pool.
fn file_write(fd: c_int, buf: *const c_void, n: usize, off: Option<off64_t>) -> ssize_t {
    file_transfer(fd, buf as usize, n, off, Way::Out)
}

/// One transfer of at most `n` bytes at `buf` (an address, so the closure
/// can cross to a pool thread), at `off` or the file position: a read into
/// the buffer (`Way::In`) or a write from it.
///
/// # Safety (of the calls inside)
///
/// `buf` is the hooked caller's buffer, valid for `n` bytes in the
/// direction of `way` until this returns: the caller waits for the pool's
/// work to end (HK5) or makes the call itself.
fn transfer_once(fd: c_int, buf: usize, n: usize, off: Option<off64_t>, way: Way) -> ssize_t {
    let p = buf as *mut c_void;
    // SAFETY: see the function's doc: `p` is valid for `n` bytes, writable
    // for a read and readable for a write.
    unsafe {
        match (way, off) {
            (Way::In, Some(o)) => real::pread64(fd, p, n, o),
            (Way::In, None) => real::read(fd, p, n),
            (Way::Out, Some(o)) => real::pwrite64(fd, p, n, o),
            (Way::Out, None) => real::write(fd, p, n),
        }
    }
}

/// IO4: the whole transfer, continuing short ones (`EINTR` retried; a
/// failure after some bytes returns the count; a read stops at the end of
/// the file): in the reactor's ring where it has one (HK7), else on the
/// blocking pool. If the pool cannot take it, one transfer is made here.
fn file_transfer(fd: c_int, buf: usize, n: usize, off: Option<off64_t>, way: Way) -> ssize_t {
    let call = match way {
        Way::In => "hooked read (file, in the ring)",
        Way::Out => "hooked write (file, in the ring)",
    };
    // HK7: the ring first where the reactor has one.
    // SAFETY: the caller lends `[buf, buf + n)` until this returns.
    let skip = match unsafe { wait::in_ring(fd, buf, n, off, way, call) } {
        wait::Ring::Done(r) => return finish(r),
        wait::Ring::Elsewhere(done) => done,
    };
    if skip > 0 {
        // The ring moved the first bytes and stopped short of the end:
        // the rest on the pool, returned together.
        let rest = pool_transfer(
            fd,
            buf + skip,
            n - skip,
            off.map(|o| o + skip as off64_t),
            way,
        );
        return if rest < 0 {
            skip as ssize_t
        } else {
            (skip + rest as usize) as ssize_t
        };
    }
    pool_transfer(fd, buf, n, off, way)
}

/// IO4: the transfer on the blocking pool. A coroutine already cancelled
/// fails at once with `ECANCELED` (HK3), as on the ring; once queued, the
/// work runs to its end (HK5).
fn pool_transfer(fd: c_int, buf: usize, n: usize, off: Option<off64_t>, way: Way) -> ssize_t {
    if wait::cancelled_now("hooked file transfer") {
        return fail(libc::ECANCELED);
    }
    let work = move || {
        let mut done = 0usize;
        while done < n {
            let at = off.map(|o| o + done as off64_t);
            let r = transfer_once(fd, buf + done, n - done, at, way);
            if r < 0 {
                if super::errno() == libc::EINTR {
                    continue;
                }
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(super::errno())
                };
            }
            if r == 0 {
                break;
            }
            done += r as usize;
        }
        Ok(done)
    };
    let what = match way {
        Way::In => "hooked read (file, on the blocking pool)",
        Way::Out => "hooked write (file, on the blocking pool)",
    };
    finish(wait::on_pool_fixed(what, work).unwrap_or_else(|| {
        // The pool could not take it: one transfer here.
        let r = transfer_once(fd, buf, n, off, way);
        if r < 0 {
            Err(super::errno())
        } else {
            Ok(r as usize)
        }
    }))
}

fn finish(r: Result<usize, c_int>) -> ssize_t {
    match r {
        Ok(n) => n as ssize_t,
        Err(e) => fail(e),
    }
}

/// A read of one buffer, at `off` or the file position.
fn read_one(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    off: Option<off64_t>,
    call: &'static str,
) -> ssize_t {
    if off.is_none() {
        if let Some(gen) = fds::plain_tcp_watched(fd) {
            // IO6: a TCP socket's `read` is its `recv`.
            let op = || {
                // SAFETY: the caller's buffer, as the caller passed it.
                unsafe { real::recv(fd, buf, n, libc::MSG_DONTWAIT) }
            };
            if let Some(r) = wait::plain_tcp(fd, gen, Way::In, call, op) {
                return r;
            }
        }
    }
    if n > FILE_READ_INLINE && fds::is_file(fds::kind(fd)) {
        return file_read(fd, buf, n, off);
    }
    let iov = iovec {
        iov_base: buf,
        iov_len: n,
    };
    let at = off.unwrap_or(-1);
    let mut nowait = || {
        // SAFETY: the caller's buffer, as the caller passed it.
        unsafe { libc::preadv2(fd, &iov, 1, at, libc::RWF_NOWAIT) }
    };
    let mut plain = || {
        // SAFETY: as above.
        unsafe {
            match off {
                Some(o) => real::pread64(fd, buf, n, o),
                None => real::read(fd, buf, n),
            }
        }
    };
    let mut file = || file_read(fd, buf, n, off);
    let r = drive(fd, Way::In, call, &mut nowait, &mut plain, Some(&mut file));
    // IO4: a file read that came back short goes on: from the page cache
    // again (a short read there is usually the end of the file: the next
    // one returns 0), and on the pool only for what would wait for the
    // disk.
    if r > 0 && (r as usize) < n && fds::is_file(fds::kind(fd)) {
        let mut done = r as usize;
        while done < n {
            // SAFETY: `done` is below `n`: within the caller's buffer.
            let p = unsafe { buf.cast::<u8>().add(done) }.cast::<c_void>();
            let at = off.map(|o| o + done as off64_t);
            let iov = iovec {
                iov_base: p,
                iov_len: n - done,
            };
            // SAFETY: the caller's buffer, from `done` to its end.
            let got = unsafe { libc::preadv2(fd, &iov, 1, at.unwrap_or(-1), libc::RWF_NOWAIT) };
            if got > 0 {
                done += got as usize;
                continue;
            }
            if got < 0 && super::errno() == libc::EAGAIN {
                let rest = file_read(fd, p, n - done, at);
                if rest > 0 {
                    done += rest as usize;
                }
            }
            // End of file, an error after some bytes (the count is the
            // result), or the pool's answer.
            break;
        }
        return done as ssize_t;
    }
    r
}

/// A write of one buffer, at `off` or the file position.
fn write_one(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    off: Option<off64_t>,
    call: &'static str,
) -> ssize_t {
    if fds::is_file(fds::kind(fd)) {
        fds::set(fd, Kind::Written);
        if n > FILE_WRITE_INLINE {
            return file_write(fd, buf, n, off);
        }
        // SAFETY: the caller's buffer, as the caller passed it.
        return unsafe {
            match off {
                Some(o) => real::pwrite64(fd, buf, n, o),
                None => real::write(fd, buf, n),
            }
        };
    }
    let fast = if off.is_none() {
        fds::plain_tcp_watched(fd)
    } else {
        None
    };
    all(fd, n, |done| {
        // SAFETY: `done` is below `n`: within the caller's buffer.
        let p = unsafe { buf.cast::<u8>().add(done) }.cast::<c_void>();
        let left = n - done;
        if let Some(gen) = fast {
            // IO6: a TCP socket's `write` is its `send` (without
            // MSG_NOSIGNAL: a write to a closed peer raises SIGPIPE).
            let op = || {
                // SAFETY: the caller's buffer from `done`, as passed.
                unsafe { real::send(fd, p, left, libc::MSG_DONTWAIT) }
            };
            if let Some(r) = wait::plain_tcp(fd, gen, Way::Out, call, op) {
                return r;
            }
        }
        let at = off.map(|o| o + done as off64_t);
        let iov = iovec {
            iov_base: p.cast_mut(),
            iov_len: left,
        };
        let mut nowait = || {
            // SAFETY: the caller's buffer, as the caller passed it.
            unsafe { libc::pwritev2(fd, &iov, 1, at.unwrap_or(-1), libc::RWF_NOWAIT) }
        };
        let mut plain = || {
            // SAFETY: as above.
            unsafe {
                match at {
                    Some(o) => real::pwrite64(fd, p, left, o),
                    None => real::write(fd, p, left),
                }
            }
        };
        let mut file = || file_write(fd, p, left, at);
        drive(fd, Way::Out, call, &mut nowait, &mut plain, Some(&mut file))
    })
}

/// Total length of an iovec array (`None` if it does not fit).
///
/// # Safety
///
/// `iov` points to `n` iovecs (or `n` is not positive).
unsafe fn iov_len(iov: *const iovec, n: c_int) -> Option<usize> {
    if n <= 0 || iov.is_null() {
        return Some(0);
    }
    // SAFETY: the caller's `n` iovecs.
    let v = unsafe { std::slice::from_raw_parts(iov, n as usize) };
    v.iter().try_fold(0usize, |a, e| a.checked_add(e.iov_len))
}

/// A vectored read, at `off` or the file position.
///
/// # Safety
///
/// As `readv(2)`.
unsafe fn readv_any(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: Option<off64_t>,
    call: &'static str,
) -> ssize_t {
    let at = off.unwrap_or(-1);
    let mut nowait = || {
        // SAFETY: the caller's iovecs, as the caller passed them.
        unsafe { libc::preadv2(fd, iov, n, at, libc::RWF_NOWAIT) }
    };
    let mut plain = || {
        // SAFETY: as above.
        unsafe {
            match off {
                Some(o) => real::preadv64(fd, iov, n, o),
                None => real::readv(fd, iov, n),
            }
        }
    };
    // A vectored file read that would wait is made whole on the pool, one
    // iovec after the other, into the caller's buffers.
    let mut file = || {
        // SAFETY: the caller's `n` iovecs.
        let v = unsafe { std::slice::from_raw_parts(iov, n.max(0) as usize) };
        let mut total = 0isize;
        for e in v {
            let r = file_read(fd, e.iov_base, e.iov_len, off.map(|o| o + total as off64_t));
            if r < 0 {
                return if total > 0 { total } else { -1 };
            }
            total += r;
            if (r as usize) < e.iov_len {
                break;
            }
        }
        total
    };
    drive(fd, Way::In, call, &mut nowait, &mut plain, Some(&mut file))
}

/// A vectored write, at `off` or the file position; a blocking one writes
/// everything (IO3).
///
/// # Safety
///
/// As `writev(2)`.
unsafe fn writev_any(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: Option<off64_t>,
    call: &'static str,
) -> ssize_t {
    // SAFETY: the caller's iovecs.
    let Some(total) = (unsafe { iov_len(iov, n) }) else {
        return fail(libc::EINVAL);
    };
    let file = fds::is_file(fds::kind(fd));
    if file {
        fds::set(fd, Kind::Written);
    }
    if file && total <= FILE_WRITE_INLINE {
        // SAFETY: as `writev`.
        return unsafe {
            match off {
                Some(o) => real::pwritev64(fd, iov, n, o),
                None => real::writev(fd, iov, n),
            }
        };
    }
    // SAFETY: the caller's `n` iovecs (read, never written).
    let whole = unsafe { std::slice::from_raw_parts(iov, n.max(0) as usize) };
    all(fd, total, |done| {
        // The iovecs after the first `done` bytes, the first one shortened:
        // a short transfer goes on without touching the caller's array.
        let mut skip = done;
        let mut v: Vec<iovec> = Vec::with_capacity(whole.len());
        for e in whole {
            if skip >= e.iov_len {
                skip -= e.iov_len;
                continue;
            }
            v.push(iovec {
                // SAFETY: `skip` is below this iovec's length.
                iov_base: unsafe { e.iov_base.cast::<u8>().add(skip) }.cast(),
                iov_len: e.iov_len - skip,
            });
            skip = 0;
        }
        let cnt = v.len() as c_int;
        let at = off.map(|o| o + done as off64_t);
        let mut nowait = || {
            // SAFETY: iovecs within the caller's buffers.
            unsafe { libc::pwritev2(fd, v.as_ptr(), cnt, at.unwrap_or(-1), libc::RWF_NOWAIT) }
        };
        let mut plain = || {
            // SAFETY: as above.
            unsafe {
                match at {
                    Some(o) => real::pwritev64(fd, v.as_ptr(), cnt, o),
                    None => real::writev(fd, v.as_ptr(), cnt),
                }
            }
        };
        let mut file = || {
            let mut sent = 0isize;
            for e in &v {
                let r = file_write(fd, e.iov_base, e.iov_len, at.map(|o| o + sent as off64_t));
                if r < 0 {
                    return if sent > 0 { sent } else { -1 };
                }
                sent += r;
                if (r as usize) < e.iov_len {
                    break;
                }
            }
            sent
        };
        drive(fd, Way::Out, call, &mut nowait, &mut plain, Some(&mut file))
    })
}

// The exported entry points. Each passes straight through unless a
// coroutine of a runtime with hooks on calls it (HK1).

/// Hooked `read(2)`.
///
/// # Safety
///
/// As `read(2)`.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    if !wait::active() || n == 0 || is_stdio(fd) {
        // SAFETY: the caller's contract.
        return unsafe { real::read(fd, buf, n) };
    }
    read_one(fd, buf, n, None, "hooked read")
}

/// Hooked `__read_chk`, what `read` becomes in C code built with
/// `_FORTIFY_SOURCE`.
///
/// # Safety
///
/// As `read(2)`; `buflen` is the buffer's size.
#[no_mangle]
pub unsafe extern "C" fn __read_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        chk_fail();
    }
    // SAFETY: the caller's contract.
    unsafe { read(fd, buf, n) }
}

/// Hooked `pread(2)`.
///
/// # Safety
///
/// As `pread(2)`.
#[no_mangle]
pub unsafe extern "C" fn pread(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { pread64(fd, buf, n, off as off64_t) }
}

/// Hooked `pread64`.
///
/// # Safety
///
/// As `pread(2)`.
#[no_mangle]
pub unsafe extern "C" fn pread64(fd: c_int, buf: *mut c_void, n: size_t, off: off64_t) -> ssize_t {
    if !wait::active() || n == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::pread64(fd, buf, n, off) };
    }
    read_one(fd, buf, n, Some(off), "hooked pread")
}

/// Hooked `__pread_chk`.
///
/// # Safety
///
/// As `pread(2)`; `buflen` is the buffer's size.
#[no_mangle]
pub unsafe extern "C" fn __pread_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    off: off_t,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        chk_fail();
    }
    // SAFETY: the caller's contract.
    unsafe { pread64(fd, buf, n, off as off64_t) }
}

/// Hooked `__pread64_chk`.
///
/// # Safety
///
/// As `pread(2)`; `buflen` is the buffer's size.
#[no_mangle]
pub unsafe extern "C" fn __pread64_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    off: off64_t,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        chk_fail();
    }
    // SAFETY: the caller's contract.
    unsafe { pread64(fd, buf, n, off) }
}

/// Hooked `readv(2)`.
///
/// # Safety
///
/// As `readv(2)`.
#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    // SAFETY: the caller's iovecs.
    if !wait::active() || is_stdio(fd) || unsafe { iov_len(iov, n) } == Some(0) {
        // SAFETY: the caller's contract.
        return unsafe { real::readv(fd, iov, n) };
    }
    // SAFETY: the caller's contract.
    unsafe { readv_any(fd, iov, n, None, "hooked readv") }
}

/// Hooked `preadv(2)`.
///
/// # Safety
///
/// As `preadv(2)`.
#[no_mangle]
pub unsafe extern "C" fn preadv(fd: c_int, iov: *const iovec, n: c_int, off: off_t) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { preadv64(fd, iov, n, off as off64_t) }
}

/// Hooked `preadv64`.
///
/// # Safety
///
/// As `preadv(2)`.
#[no_mangle]
pub unsafe extern "C" fn preadv64(fd: c_int, iov: *const iovec, n: c_int, off: off64_t) -> ssize_t {
    // SAFETY: the caller's iovecs.
    if !wait::active() || unsafe { iov_len(iov, n) } == Some(0) {
        // SAFETY: the caller's contract.
        return unsafe { real::preadv64(fd, iov, n, off) };
    }
    // SAFETY: the caller's contract.
    unsafe { readv_any(fd, iov, n, Some(off), "hooked preadv") }
}

/// Hooked `write(2)`.
///
/// # Safety
///
/// As `write(2)`.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    if !wait::active() || n == 0 || is_stdio(fd) {
        // SAFETY: the caller's contract.
        return unsafe { real::write(fd, buf, n) };
    }
    write_one(fd, buf, n, None, "hooked write")
}

/// Hooked `pwrite(2)`.
///
/// # Safety
///
/// As `pwrite(2)`.
#[no_mangle]
pub unsafe extern "C" fn pwrite(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { pwrite64(fd, buf, n, off as off64_t) }
}

/// Hooked `pwrite64`.
///
/// # Safety
///
/// As `pwrite(2)`.
#[no_mangle]
pub unsafe extern "C" fn pwrite64(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    off: off64_t,
) -> ssize_t {
    if !wait::active() || n == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::pwrite64(fd, buf, n, off) };
    }
    write_one(fd, buf, n, Some(off), "hooked pwrite")
}

/// Hooked `writev(2)`.
///
/// # Safety
///
/// As `writev(2)`.
#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    // SAFETY: the caller's iovecs.
    if !wait::active() || is_stdio(fd) || unsafe { iov_len(iov, n) } == Some(0) {
        // SAFETY: the caller's contract.
        return unsafe { real::writev(fd, iov, n) };
    }
    // SAFETY: the caller's contract.
    unsafe { writev_any(fd, iov, n, None, "hooked writev") }
}

/// Hooked `pwritev(2)`.
///
/// # Safety
///
/// As `pwritev(2)`.
#[no_mangle]
pub unsafe extern "C" fn pwritev(fd: c_int, iov: *const iovec, n: c_int, off: off_t) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { pwritev64(fd, iov, n, off as off64_t) }
}

/// Hooked `pwritev64`.
///
/// # Safety
///
/// As `pwritev(2)`.
#[no_mangle]
pub unsafe extern "C" fn pwritev64(
    fd: c_int,
    iov: *const iovec,
    n: c_int,
    off: off64_t,
) -> ssize_t {
    // SAFETY: the caller's iovecs.
    if !wait::active() || unsafe { iov_len(iov, n) } == Some(0) {
        // SAFETY: the caller's contract.
        return unsafe { real::pwritev64(fd, iov, n, off) };
    }
    // SAFETY: the caller's contract.
    unsafe { writev_any(fd, iov, n, Some(off), "hooked pwritev") }
}

/// IO5: descriptors 0, 1 and 2.
#[inline]
fn is_stdio(fd: c_int) -> bool {
    (0..=2).contains(&fd)
}

/// What glibc's fortified entry points do when the length exceeds the
/// buffer: end the process.
pub(super) fn chk_fail() -> ! {
    extern "C" {
        fn __chk_fail() -> !;
    }
    // SAFETY: glibc's `__chk_fail` takes nothing and does not return.
    unsafe { __chk_fail() }
}
