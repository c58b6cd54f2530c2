//! `poll`, `ppoll`, `select`, `pselect`, `epoll_wait`, `epoll_pwait`:
//! how C libraries (libpq, libcurl) and embedded event loops wait.
//!
//! - **PL1** The real call is made first with a zero timeout: what is ready
//!   now is returned at once, with the kernel's own `revents` (and every
//!   `POLLNVAL`, `POLLERR` the kernel reports). Only when nothing is ready
//!   and the caller would wait does the coroutine wait on the reactor: one
//!   watch per descriptor (readable for `POLLIN`/`POLLPRI`, writable for
//!   `POLLOUT`), the timeout as a reactor timer. After a wake-up the real
//!   call with a zero timeout reports what is ready; a wake-up it does not
//!   confirm waits again.
//! - **PL2** An `epoll` descriptor is itself readable while events are
//!   pending, so `epoll_wait` waits for its descriptor the same way.
//! - **PL3** Signal masks (`ppoll`, `pselect`, `epoll_pwait`) apply to the
//!   real calls; while the coroutine waits, the thread runs with its own
//!   mask (other coroutines run meanwhile).
#![allow(unsafe_code)]
// The `#[no_mangle]` entry points are public to the linker, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::c_int;
use std::time::{Duration, Instant};

use libc::{epoll_event, fd_set, nfds_t, pollfd, sigset_t, timespec, timeval};

use super::wait::{self, Woke};
use super::{fail, real};

/// How a hooked wait that gave up ended.
enum Stop {
    Cancelled,
    Unavailable,
}

/// PL1: waits until `check()` (the real call with a zero timeout) reports
/// something (its result, `> 0` or an error), or `timeout` passes (`0`).
fn wait_until(
    watch: &[(c_int, u32)],
    timeout: Option<Duration>,
    what: &str,
    mut check: impl FnMut() -> c_int,
) -> Result<c_int, Stop> {
    // A timeout too far to add is no timeout.
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    loop {
        let left = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(l) if !l.is_zero() => Some(l),
                _ => return Ok(check()),
            },
        };
        match wait::fds_ready(watch, left, what) {
            Woke::Ready => {
                let r = check();
                if r != 0 {
                    return Ok(r);
                }
            }
            Woke::TimedOut => return Ok(check()),
            Woke::Cancelled => return Err(Stop::Cancelled),
            Woke::Unavailable => return Err(Stop::Unavailable),
        }
    }
}

/// The reactor interest for `poll` events.
fn interest(events: libc::c_short) -> u32 {
    let mut i = 0;
    if events & (libc::POLLIN | libc::POLLPRI | libc::POLLRDNORM | libc::POLLRDBAND) != 0 {
        i |= async_abi::AA_POLL_READABLE;
    }
    if events & (libc::POLLOUT | libc::POLLWRNORM | libc::POLLWRBAND) != 0 {
        i |= async_abi::AA_POLL_WRITABLE;
    }
    if i == 0 {
        // Errors and hang-ups are reported whatever was asked.
        i = async_abi::AA_POLL_READABLE;
    }
    i
}

fn ms(timeout: c_int) -> Option<Duration> {
    (timeout >= 0).then(|| Duration::from_millis(timeout as u64))
}

fn ts(t: *const timespec) -> Option<Duration> {
    if t.is_null() {
        return None;
    }
    // SAFETY: a non-null timeout the caller passed.
    let t = unsafe { *t };
    Some(Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    ))
}

/// Hooked poll over the caller's array (PL1); `None` if no wait could be
/// set up, for the caller to make the real, blocking call.
///
/// # Safety
///
/// `fds` points to `n` pollfds.
unsafe fn poll_hooked(
    fds: *mut pollfd,
    n: nfds_t,
    timeout: Option<Duration>,
    call: &'static str,
    mut real_now: impl FnMut() -> c_int,
) -> Option<c_int> {
    let r = real_now();
    if r != 0 || timeout.is_some_and(|t| t.is_zero()) {
        return Some(r);
    }
    // No descriptors: `poll(NULL, 0, ms)` is how C code sleeps.
    if n == 0 || fds.is_null() {
        let what = format!("hooked {call}(no fds)");
        let slept = wait::sleep(timeout.unwrap_or(Duration::MAX), &what);
        return Some(if slept { 0 } else { fail(libc::ECANCELED) });
    }
    // SAFETY: the caller's `n` pollfds (non-null, n > 0).
    let all = unsafe { std::slice::from_raw_parts(fds, n as usize) };
    let watch: Vec<(c_int, u32)> = all
        .iter()
        .filter(|p| p.fd >= 0)
        .map(|p| (p.fd, interest(p.events)))
        .collect();
    let what = match watch.first() {
        Some((fd, _)) if watch.len() == 1 => format!("hooked {call}(fd {fd})"),
        _ => format!("hooked {call}({} fds)", watch.len()),
    };
    match wait_until(&watch, timeout, &what, real_now) {
        Ok(r) => Some(r),
        Err(Stop::Cancelled) => Some(fail(libc::ECANCELED)),
        Err(Stop::Unavailable) => None,
    }
}

/// Hooked `poll(2)`.
///
/// # Safety
///
/// As `poll(2)`.
#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int {
    if !wait::active() || timeout == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::poll(fds, n, timeout) };
    }
    // SAFETY: the caller's contract, for each real call.
    unsafe { poll_hooked(fds, n, ms(timeout), "poll", || real::poll(fds, n, 0)) }
        // SAFETY: the caller's contract.
        .unwrap_or_else(|| unsafe { real::poll(fds, n, timeout) })
}

/// Hooked `__poll_chk` (`poll` in C code built with `_FORTIFY_SOURCE`).
///
/// # Safety
///
/// As `poll(2)`; `fdslen` is the array's size in bytes.
#[no_mangle]
pub unsafe extern "C" fn __poll_chk(
    fds: *mut pollfd,
    n: nfds_t,
    timeout: c_int,
    fdslen: libc::size_t,
) -> c_int {
    if (fdslen / size_of::<pollfd>()) < n as usize {
        super::io::chk_fail();
    }
    // SAFETY: the caller's contract.
    unsafe { poll(fds, n, timeout) }
}

/// Hooked `ppoll(2)` (PL3).
///
/// # Safety
///
/// As `ppoll(2)`.
#[no_mangle]
pub unsafe extern "C" fn ppoll(
    fds: *mut pollfd,
    n: nfds_t,
    t: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    let timeout = ts(t);
    if !wait::active() || timeout.is_some_and(|t| t.is_zero()) {
        // SAFETY: the caller's contract.
        return unsafe { real::ppoll(fds, n, t, mask) };
    }
    let zero = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the caller's contract, for each real call.
    unsafe {
        poll_hooked(fds, n, timeout, "ppoll", || {
            real::ppoll(fds, n, &zero, mask)
        })
    }
    // SAFETY: the caller's contract.
    .unwrap_or_else(|| unsafe { real::ppoll(fds, n, t, mask) })
}

/// `select` through `poll`: the sets become pollfds and back.
///
/// # Safety
///
/// As `select(2)`.
unsafe fn select_hooked(
    nfds: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    timeout: Option<Duration>,
    call: &'static str,
    real_block: impl FnOnce() -> c_int,
) -> c_int {
    let is = |set: *mut fd_set, fd: c_int| {
        // SAFETY: a non-null set the caller passed, and `fd` below `nfds`
        // (at most FD_SETSIZE, checked by the caller).
        !set.is_null() && unsafe { libc::FD_ISSET(fd, set) }
    };
    let mut pfds = Vec::new();
    for fd in 0..nfds {
        let mut ev = 0;
        if is(r, fd) {
            ev |= libc::POLLIN;
        }
        if is(w, fd) {
            ev |= libc::POLLOUT;
        }
        if is(e, fd) {
            ev |= libc::POLLPRI;
        }
        if ev != 0 {
            pfds.push(pollfd {
                fd,
                events: ev,
                revents: 0,
            });
        }
    }
    let (p, n) = (pfds.as_mut_ptr(), pfds.len() as nfds_t);
    // SAFETY: our own array of `n` pollfds, for each real call.
    let Some(got) = (unsafe { poll_hooked(p, n, timeout, call, || real::poll(p, n, 0)) }) else {
        // The wait could not be set up: the real select, blocking.
        return real_block();
    };
    if got < 0 {
        return got;
    }
    // The sets report what is ready; a bad descriptor fails the call, as
    // select's EBADF.
    let clear = |set: *mut fd_set| {
        if !set.is_null() {
            // SAFETY: a set the caller passed.
            unsafe { libc::FD_ZERO(set) }
        }
    };
    if pfds.iter().any(|p| p.revents & libc::POLLNVAL != 0) {
        return fail(libc::EBADF);
    }
    clear(r);
    clear(w);
    clear(e);
    let mut count = 0;
    for p in &pfds {
        let set = |s: *mut fd_set, on: bool| {
            if on && !s.is_null() {
                // SAFETY: a set the caller passed; `p.fd` below `nfds`.
                unsafe { libc::FD_SET(p.fd, s) };
                1
            } else {
                0
            }
        };
        let rev = p.revents;
        count += set(
            r,
            p.events & libc::POLLIN != 0
                && rev & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0,
        );
        count += set(
            w,
            p.events & libc::POLLOUT != 0 && rev & (libc::POLLOUT | libc::POLLERR) != 0,
        );
        count += set(e, p.events & libc::POLLPRI != 0 && rev & libc::POLLPRI != 0);
    }
    count
}

/// Hooked `select(2)`. On Linux `select` writes the time not slept back
/// into `timeout`; so does this.
///
/// # Safety
///
/// As `select(2)`.
#[no_mangle]
pub unsafe extern "C" fn select(
    nfds: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    t: *mut timeval,
) -> c_int {
    let timeout = if t.is_null() {
        None
    } else {
        // SAFETY: a non-null timeout the caller passed.
        let tv = unsafe { *t };
        Some(Duration::new(
            tv.tv_sec.max(0) as u64,
            (tv.tv_usec.clamp(0, 999_999) as u32) * 1000,
        ))
    };
    if !wait::active()
        || timeout.is_some_and(|d| d.is_zero())
        || !(0..=libc::FD_SETSIZE as c_int).contains(&nfds)
    {
        // SAFETY: the caller's contract.
        return unsafe { real::select(nfds, r, w, e, t) };
    }
    let start = Instant::now();
    // SAFETY: the caller's contract.
    let n = unsafe {
        select_hooked(nfds, r, w, e, timeout, "select", || {
            real::select(nfds, r, w, e, t)
        })
    };
    if let (Some(d), false) = (timeout, t.is_null()) {
        let left = d.saturating_sub(start.elapsed());
        // SAFETY: the caller's timeval.
        unsafe {
            (*t).tv_sec = left.as_secs() as libc::time_t;
            (*t).tv_usec = left.subsec_micros() as libc::suseconds_t;
        }
    }
    n
}

/// Hooked `pselect(2)` (PL3).
///
/// # Safety
///
/// As `pselect(2)`.
#[no_mangle]
pub unsafe extern "C" fn pselect(
    nfds: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    e: *mut fd_set,
    t: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    let timeout = ts(t);
    if !wait::active()
        || timeout.is_some_and(|d| d.is_zero())
        || !(0..=libc::FD_SETSIZE as c_int).contains(&nfds)
    {
        // SAFETY: the caller's contract.
        return unsafe { real::pselect(nfds, r, w, e, t, mask) };
    }
    // SAFETY: the caller's contract.
    unsafe {
        select_hooked(nfds, r, w, e, timeout, "pselect", || {
            real::pselect(nfds, r, w, e, t, mask)
        })
    }
}

/// Hooked epoll wait (PL2).
fn epoll_hooked(
    epfd: c_int,
    timeout: c_int,
    call: &'static str,
    mut real_now: impl FnMut() -> c_int,
    mut real_block: impl FnMut() -> c_int,
) -> c_int {
    let r = real_now();
    if r != 0 {
        return r;
    }
    let what = format!("hooked {call}(epoll fd {epfd})");
    match wait_until(
        &[(epfd, async_abi::AA_POLL_READABLE)],
        ms(timeout),
        &what,
        real_now,
    ) {
        Ok(r) => r,
        // An embedded event loop retries EINTR (module doc, "Cancellation").
        Err(Stop::Cancelled) => fail(libc::EINTR),
        Err(Stop::Unavailable) => real_block(),
    }
}

/// Hooked `epoll_wait(2)`.
///
/// # Safety
///
/// As `epoll_wait(2)`.
#[no_mangle]
pub unsafe extern "C" fn epoll_wait(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: c_int,
) -> c_int {
    if !wait::active() || timeout == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::epoll_wait(epfd, events, max, timeout) };
    }
    epoll_hooked(
        epfd,
        timeout,
        "epoll_wait",
        // SAFETY: the caller's contract.
        || unsafe { real::epoll_wait(epfd, events, max, 0) },
        // SAFETY: the caller's contract.
        || unsafe { real::epoll_wait(epfd, events, max, timeout) },
    )
}

/// Hooked `epoll_pwait(2)` (PL3).
///
/// # Safety
///
/// As `epoll_pwait(2)`.
#[no_mangle]
pub unsafe extern "C" fn epoll_pwait(
    epfd: c_int,
    events: *mut epoll_event,
    max: c_int,
    timeout: c_int,
    mask: *const sigset_t,
) -> c_int {
    if !wait::active() || timeout == 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::epoll_pwait(epfd, events, max, timeout, mask) };
    }
    epoll_hooked(
        epfd,
        timeout,
        "epoll_pwait",
        // SAFETY: the caller's contract.
        || unsafe { real::epoll_pwait(epfd, events, max, 0, mask) },
        // SAFETY: the caller's contract.
        || unsafe { real::epoll_pwait(epfd, events, max, timeout, mask) },
    )
}
