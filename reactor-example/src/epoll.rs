//! The backend: epoll through `libc`, edge-triggered, woken across threads
//! by an eventfd. Everything else is the kit's readiness driver.
//!
//! # Safety
//!
//! Each system call gets a descriptor this backend owns (the epoll and
//! eventfd descriptors, held in `OwnedFd`s for as long as they are used) or
//! one the driver names (its registration is the only thing touched), and
//! pointers to memory that lives for the call.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use async_abi::{AA_POLL_ERROR, AA_POLL_HUP, AA_POLL_READABLE, AA_POLL_WRITABLE};
use reactor_sdk::event::Wake;
use reactor_sdk::readiness::{Backend, BACKEND_TOKEN as WAKER};

/// Events taken per wait.
const CAPACITY: usize = 256;

/// An epoll instance (see the module doc).
pub struct Epoll {
    epfd: OwnedFd,
    eventfd: Arc<OwnedFd>,
    events: Vec<libc::epoll_event>,
}

impl fmt::Debug for Epoll {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Epoll").field("epfd", &self.epfd).finish()
    }
}

/// The cross-thread waker: one eventfd, registered with the epoll.
#[derive(Debug)]
pub struct EventFd(Arc<OwnedFd>);

impl Wake for EventFd {
    fn wake(&self) -> io::Result<()> {
        let one = 1u64.to_ne_bytes();
        // SAFETY: the eventfd is open (owned by `self.0`); `one` is 8
        // readable bytes.
        let n = unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), 8) };
        match check(n as i32) {
            // A full counter is a wake-up already pending.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            other => other,
        }
    }
}

/// A descriptor of a system call's result, or its `errno`.
fn owned(fd: RawFd) -> io::Result<OwnedFd> {
    check(fd)?;
    // SAFETY: `fd` was just returned by the kernel to us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(ret: i32) -> io::Result<()> {
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The driver's interest (`AA_POLL_*`) as epoll flags, edge-triggered.
fn flags(interest: u32) -> u32 {
    let mut flags = libc::EPOLLET;
    if interest & AA_POLL_READABLE != 0 {
        flags |= libc::EPOLLIN | libc::EPOLLRDHUP;
    }
    if interest & AA_POLL_WRITABLE != 0 {
        flags |= libc::EPOLLOUT;
    }
    flags as u32
}

/// What epoll reported, as the driver's bits: a hang-up reads (end of
/// file), an error writes (so a failed connect completes).
fn bits(events: u32) -> u32 {
    let events = events as i32;
    let mut bits = 0;
    if events & (libc::EPOLLIN | libc::EPOLLPRI) != 0 {
        bits |= AA_POLL_READABLE;
    }
    if events & libc::EPOLLOUT != 0 {
        bits |= AA_POLL_WRITABLE;
    }
    if events & libc::EPOLLERR != 0 {
        bits |= AA_POLL_ERROR | AA_POLL_WRITABLE;
    }
    if events & (libc::EPOLLHUP | libc::EPOLLRDHUP) != 0 {
        bits |= AA_POLL_HUP | AA_POLL_READABLE;
    }
    bits
}

impl Epoll {
    fn ctl(&self, op: i32, fd: RawFd, token: u64, interest: u32) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: flags(interest),
            u64: token,
        };
        // SAFETY: the epoll descriptor is open; `event` lives for the call.
        check(unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), op, fd, &mut event) })
    }

    /// Resets the eventfd's counter (non-blocking: nothing to read is fine).
    fn drain_waker(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: the eventfd is open; `buf` is 8 writable bytes.
        unsafe { libc::read(self.eventfd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    }
}

impl Backend for Epoll {
    const NAME: &'static std::ffi::CStr = c"reactor-example";
    const VENDOR: &'static std::ffi::CStr = c"async workspace";
    // The readiness driver's 1.1 requests (datagrams), and 1.2, which asks
    // nothing more of an edge-triggered poller, are what this example
    // implements; stated, never the SDK's AA_ABI_MINOR.
    const ABI_MINOR: u16 = 2;
    type Waker = EventFd;

    fn new() -> io::Result<(Epoll, EventFd)> {
        // SAFETY: plain system calls with flag arguments.
        let epfd = owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: as above.
        let eventfd = owned(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        let epoll = Epoll {
            epfd,
            eventfd: Arc::new(eventfd),
            events: Vec::with_capacity(CAPACITY),
        };
        let fd = epoll.eventfd.as_raw_fd();
        epoll.ctl(libc::EPOLL_CTL_ADD, fd, WAKER, AA_POLL_READABLE)?;
        let waker = EventFd(Arc::clone(&epoll.eventfd));
        Ok((epoll, waker))
    }

    fn register(&self, fd: RawFd, token: u64, interest: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, interest)
    }

    fn modify(&self, fd: RawFd, token: u64, interest: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, interest)
    }

    fn deregister(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<(u64, u32)>) -> io::Result<()> {
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
        // SAFETY: the epoll descriptor is open; `events` has room for
        // `CAPACITY` entries, of which the kernel fills the first `n`.
        let n = unsafe {
            libc::epoll_wait(
                self.epfd.as_raw_fd(),
                self.events.as_mut_ptr(),
                CAPACITY as i32,
                ms,
            )
        };
        check(n)?;
        // SAFETY: the kernel initialised the first `n` entries.
        unsafe { self.events.set_len(n as usize) };
        let mut woken = false;
        for event in self.events.drain(..) {
            let (token, events) = (event.u64, event.events);
            woken |= token == WAKER;
            ready.push((token, bits(events)));
        }
        if woken {
            self.drain_waker();
        }
        Ok(())
    }
}
