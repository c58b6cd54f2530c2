//! The level-triggered poller: poll(2) through `libc`, woken across
//! threads by an eventfd. It keeps no registrations: the kit's
//! `LevelTriggered` adapter hands it the whole set on every call, and turns
//! its level reports into the edges the driver wants.
//!
//! # Safety
//!
//! Each system call gets the eventfd this poller owns (in an `OwnedFd`
//! shared with the waker, so it stays open while either uses it) or the
//! `pollfd` array, which lives for the call.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use async_abi::{AA_POLL_ERROR, AA_POLL_HUP, AA_POLL_READABLE, AA_POLL_WRITABLE};
use reactor_sdk::event::Wake;
use reactor_sdk::readiness::LevelBackend;

/// A poll(2) poller (see the module doc).
#[derive(Debug)]
pub struct Poll {
    eventfd: Arc<OwnedFd>,
    /// The eventfd, then the adapter's set, rebuilt on every call.
    fds: Vec<libc::pollfd>,
}

/// The cross-thread waker: one eventfd, always in the poll set.
#[derive(Debug)]
pub struct EventFd(Arc<OwnedFd>);

impl Wake for EventFd {
    fn wake(&self) -> io::Result<()> {
        let one = 1u64.to_ne_bytes();
        // SAFETY: the eventfd is open (owned by `self.0`); `one` is 8
        // readable bytes.
        let n = unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), 8) };
        match n {
            8 => Ok(()),
            // A full counter is a wake-up already pending.
            _ => match io::Error::last_os_error() {
                e if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                e => Err(e),
            },
        }
    }
}

/// The interest (`AA_POLL_*`) as poll(2) events.
fn events(interest: u32) -> i16 {
    let mut events = 0;
    if interest & AA_POLL_READABLE != 0 {
        events |= libc::POLLIN | libc::POLLRDHUP;
    }
    if interest & AA_POLL_WRITABLE != 0 {
        events |= libc::POLLOUT;
    }
    events
}

/// What poll(2) answered, as the adapter's bits: a hang-up reads (end of
/// file), an error or a descriptor that is not open writes.
fn bits(revents: i16) -> u32 {
    let mut bits = 0;
    if revents & (libc::POLLIN | libc::POLLPRI) != 0 {
        bits |= AA_POLL_READABLE;
    }
    if revents & libc::POLLOUT != 0 {
        bits |= AA_POLL_WRITABLE;
    }
    if revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
        bits |= AA_POLL_ERROR | AA_POLL_WRITABLE;
    }
    if revents & (libc::POLLHUP | libc::POLLRDHUP) != 0 {
        bits |= AA_POLL_HUP | AA_POLL_READABLE;
    }
    bits
}

impl LevelBackend for Poll {
    const NAME: &'static std::ffi::CStr = c"reactor-poll";
    const VENDOR: &'static std::ffi::CStr = c"async workspace";
    // The readiness driver runs every 1.1 request this reactor claims, and
    // 1.2 lets the adapter count on the host's re-arms (AA_CAP_POLL_LEVEL)
    // instead of rechecking every 100 ms.
    const ABI_MINOR: u16 = 2;
    type Waker = EventFd;

    fn new() -> io::Result<(Poll, EventFd)> {
        // SAFETY: a plain system call with flag arguments.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by the kernel to us alone.
        let eventfd = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        let waker = EventFd(Arc::clone(&eventfd));
        let fds = Vec::new();
        Ok((Poll { eventfd, fds }, waker))
    }

    fn poll(
        &mut self,
        watch: &[(RawFd, u32)],
        timeout: Option<Duration>,
        levels: &mut [u32],
    ) -> io::Result<bool> {
        let pollfd = |fd, events| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        self.fds.clear();
        self.fds
            .push(pollfd(self.eventfd.as_raw_fd(), libc::POLLIN));
        // Interest 0: a negative descriptor, which poll(2) skips entirely.
        let entry = |&(fd, interest): &(RawFd, u32)| match interest {
            0 => pollfd(-1, 0),
            _ => pollfd(fd, events(interest)),
        };
        self.fds.extend(watch.iter().map(entry));
        // Rounded up: a wait that ends before its deadline would be made
        // again at once.
        let ms = timeout.map_or(-1, |t| {
            t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32
        });
        // SAFETY: `fds` holds `fds.len()` initialised entries for the call.
        let n = unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        for (level, fd) in levels.iter_mut().zip(&self.fds[1..]) {
            *level = bits(fd.revents);
        }
        let woken = self.fds[0].revents != 0;
        if woken {
            // Reset the counter (non-blocking: nothing to read is fine).
            let mut buf = [0u8; 8];
            // SAFETY: the eventfd is open; `buf` is 8 writable bytes.
            unsafe { libc::read(self.eventfd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        }
        Ok(woken)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    use super::*;

    const R: u32 = AA_POLL_READABLE;
    const W: u32 = AA_POLL_WRITABLE;

    fn levels(poll: &mut Poll, watch: &[(RawFd, u32)]) -> (Vec<u32>, bool) {
        let mut levels = vec![0; watch.len()];
        let woken = poll
            .poll(watch, Some(Duration::ZERO), &mut levels)
            .expect("poll(2)");
        (levels, woken)
    }

    #[test]
    fn levels_are_what_is_ready_now_and_a_hang_up_reads() {
        let (mut poll, _waker) = Poll::new().unwrap();
        let (a, mut b) = UnixStream::pair().unwrap();
        let fd = a.as_raw_fd();
        assert_eq!(levels(&mut poll, &[(fd, R | W)]).0, [W]);
        b.write_all(b"x").unwrap();
        assert_eq!(levels(&mut poll, &[(fd, R | W)]).0, [R | W]);
        // Still there: a level, not an edge.
        assert_eq!(levels(&mut poll, &[(fd, R)]).0, [R]);
        drop(b);
        let (hung_up, _) = levels(&mut poll, &[(fd, R)]);
        assert_eq!(hung_up[0] & (AA_POLL_HUP | R), AA_POLL_HUP | R);
        // Interest 0 leaves it out, hang-up included.
        assert_eq!(levels(&mut poll, &[(fd, 0)]).0, [0]);
    }

    #[test]
    fn the_waker_ends_a_wait_once() {
        let (mut poll, waker) = Poll::new().unwrap();
        waker.wake().unwrap();
        waker.wake().unwrap();
        let mut none: [u32; 0] = [];
        // No timeout: only the pending wake-up can end this wait.
        assert!(poll.poll(&[], None, &mut none).unwrap());
        assert!(!levels(&mut poll, &[]).1, "the counter was reset");
    }
}
