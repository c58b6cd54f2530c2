//! [`Evented`]: a socket the host owns, with a readiness watch made on
//! first need and std's read and write timeouts.

use std::cell::{Cell, OnceCell};
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::panic::Location;
use std::time::Duration;

use std::rc::Rc;

use async_abi::{AA_CAP_IO_INLINE, AA_CAP_POLL};

use super::sock::Sock;
use super::{settle, submit};
use crate::core::budget;
use crate::core::readiness::{Direction, Readiness};
use crate::core::runtime::io::{self as rio, FdWait, IoOutcome, IoReq, WaitText};
use crate::core::runtime::Runtime;
use crate::core::state::CoroState;
use crate::core::wait::{checkpoint, with_me};

/// D-43: a stream read waits by readiness, then reads here, on a reactor
/// that completes requests inline (a readiness reactor) and has polls.
const READ_BY_READINESS: u64 = AA_CAP_IO_INLINE | AA_CAP_POLL;

/// A socket and what waits on it. Field order is drop order: the watch
/// goes before the descriptor is closed.
pub(crate) struct Evented<T: Into<OwnedFd> + AsFd> {
    ready: OnceCell<Readiness>,
    sock: Sock<T>,
    /// `sock`'s number, read once: std's `as_fd` is a call into another
    /// crate, and a request used to make four of them.
    fd: RawFd,
    read_timeout: Cell<Option<Duration>>,
    write_timeout: Cell<Option<Duration>>,
    reads: Lane,
    writes: Lane,
}

/// One direction of a stream (D-42): whether its last request completed
/// without waiting, and how many of its requests wait in the reactor.
///
/// A ready lane, with none of its requests waiting, runs the next one as a
/// system call in the host when the reactor completes requests inline
/// (`AA_CAP_IO_INLINE`): the reactor would make the same non-blocking call
/// at once, and going through it costs several hundred instructions more
/// per request. `EAGAIN` marks the lane not ready and hands the request to
/// the reactor, which waits for readiness; a lane becomes ready again when
/// a request completes without waiting. With a request of the lane
/// waiting in the reactor the next one queues behind it, so requests of
/// one direction still complete in submission order.
#[derive(Debug)]
struct Lane {
    ready: Cell<bool>,
    waiting: Cell<u32>,
    /// What a waiting request of the lane is described as, written once.
    what: OnceCell<WaitText>,
}

impl Lane {
    fn new(ready: bool) -> Lane {
        Lane {
            ready: Cell::new(ready),
            waiting: Cell::new(0),
            what: OnceCell::new(),
        }
    }
}

impl<T: Into<OwnedFd> + AsFd> Evented<T> {
    pub(crate) fn new(sock: T) -> Evented<T> {
        let fd = sock.as_fd().as_raw_fd();
        Evented {
            ready: OnceCell::new(),
            sock: Sock::new(sock),
            fd,
            read_timeout: Cell::new(None),
            write_timeout: Cell::new(None),
            // A new stream has room to write and, most often, nothing to
            // read yet.
            reads: Lane::new(false),
            writes: Lane::new(true),
        }
    }

    pub(crate) fn get(&self) -> &T {
        self.sock.get()
    }

    /// Gives the socket back without closing it (the watch is dropped
    /// first).
    pub(crate) fn into_inner(self) -> T {
        let Evented { ready, sock, .. } = self;
        drop(ready);
        sock.into_inner()
    }

    /// Runs `op` until it does not fail with `WouldBlock`, waiting for
    /// readability (bounded by the read timeout) in between.
    #[track_caller]
    pub(crate) fn read_op<R>(
        &self,
        what: &str,
        at: &'static Location<'static>,
        op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        self.op(Direction::Read, self.read_timeout.get(), what, at, op)
    }

    /// As [`read_op`](Evented::read_op), for writability and the write
    /// timeout.
    #[track_caller]
    pub(crate) fn write_op<R>(
        &self,
        what: &str,
        at: &'static Location<'static>,
        op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        self.op(Direction::Write, self.write_timeout.get(), what, at, op)
    }

    /// A stream read: on a readiness reactor, the stream's readiness watch
    /// and a `recv` in the host (D-43; `short_drains`: a short read means
    /// nothing more is queued, true of TCP, not of Unix streams); elsewhere
    /// the reactor's request
    /// (native on a completion reactor), through the read lane (D-42); with
    /// a read timeout, by readiness and a timer.
    #[track_caller]
    pub(crate) fn stream_read(
        &self,
        buf: &mut [u8],
        short_drains: bool,
        at: &'static Location<'static>,
    ) -> io::Result<usize>
    where
        for<'a> &'a T: Read,
    {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.read_timeout.get().is_some() {
            return self.read_op("read", at, |mut s| s.read(buf));
        }
        let fd = self.as_raw_fd();
        with_me("blocking I/O", |rt, me| {
            let what = self
                .reads
                .what
                .get_or_init(|| WaitText::new(FdWait("read", fd)));
            if rt.reactor.caps() & READ_BY_READINESS == READ_BY_READINESS {
                // D-43: a persistent readiness watch and a `recv` here.
                let sock = self.as_fd();
                let want = buf.len();
                return self.watch_in(rt)?.stream_in(
                    rt,
                    me,
                    Direction::Read,
                    want,
                    short_drains,
                    what,
                    at,
                    || rio::recv(sock, buf),
                );
            }
            let read = |mut s: &T, req: &mut IoReq<'_>| match req {
                IoReq::Read(buf) => s.read(buf),
                _ => unreachable!("a read lane request"),
            };
            self.lane_request_in(rt, me, &self.reads, IoReq::Read(buf), read, what, at)
        })
    }

    /// A read request through the reactor (`recv` on a socket).
    #[track_caller]
    pub(crate) fn request_read(
        &self,
        buf: &mut [u8],
        at: &'static Location<'static>,
    ) -> io::Result<usize> {
        let n = submit(self, IoReq::Read(buf), FdWait("read", self.as_raw_fd()), at)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// A stream write; see [`stream_read`](Evented::stream_read).
    #[track_caller]
    pub(crate) fn stream_write(
        &self,
        buf: &[u8],
        at: &'static Location<'static>,
    ) -> io::Result<usize>
    where
        for<'a> &'a T: Write,
    {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.write_timeout.get().is_some() {
            return self.write_op("write", at, |mut s| s.write(buf));
        }
        let fd = self.as_raw_fd();
        let sock = self.as_fd();
        let write = |_: &T, req: &mut IoReq<'_>| match req {
            IoReq::Write(buf) => rio::send(sock, buf),
            _ => unreachable!("a write lane request"),
        };
        with_me("blocking I/O", |rt, me| {
            let what = self
                .writes
                .what
                .get_or_init(|| WaitText::new(FdWait("write", fd)));
            self.lane_request_in(rt, me, &self.writes, IoReq::Write(buf), write, what, at)
        })
    }

    /// A stream request on `lane` (D-42): `direct` in the host when the
    /// lane is ready, else (or on `EAGAIN`) the reactor's request.
    /// `direct` is `req` as the system call.
    #[allow(clippy::too_many_arguments)]
    fn lane_request_in<'b>(
        &self,
        rt: &Runtime,
        me: &Rc<CoroState>,
        lane: &Lane,
        mut req: IoReq<'b>,
        direct: impl FnOnce(&T, &mut IoReq<'b>) -> io::Result<usize>,
        what: &WaitText,
        at: &'static Location<'static>,
    ) -> io::Result<usize> {
        {
            checkpoint(me).map_err(io::Error::from)?;
            let mut spent = false;
            if lane.ready.get()
                && lane.waiting.get() == 0
                && rt.reactor.caps() & AA_CAP_IO_INLINE != 0
            {
                spent = true;
                if let Err(interrupt) = budget::spend(rt, me, at) {
                    let out = IoOutcome {
                        result: -i64::from(libc::ECANCELED),
                        interrupt: Some(interrupt),
                        waited: false,
                        failure: None,
                    };
                    return settle(me, out).map(|n| n as usize);
                }
                match direct(self.get(), &mut req) {
                    Err(e)
                        if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) =>
                    {
                        lane.ready.set(false);
                    }
                    done => return done,
                }
            }
            lane.waiting.set(lane.waiting.get() + 1);
            let out = rio::perform(rt, me, self.as_raw_fd(), req, what, at, spent);
            lane.waiting.set(lane.waiting.get() - 1);
            if out.interrupt.is_none() && out.result >= 0 {
                lane.ready.set(!out.waited);
            }
            settle(me, out).map(|n| usize::try_from(n).unwrap_or(0))
        }
    }

    /// True if datagram requests go to the reactor (`AA_CAP_IO_DGRAM`, and
    /// no timeout in that direction, which readiness and a timer serve).
    pub(crate) fn dgram_native(&self, write: bool) -> bool {
        let timeout = if write {
            self.write_timeout.get()
        } else {
            self.read_timeout.get()
        };
        timeout.is_none()
            && crate::core::runtime::with_runtime(|rt| {
                rt.reactor.has_or_falls_back(async_abi::AA_CAP_IO_DGRAM)
            })
            .unwrap_or(false)
    }

    /// Waits until writable, for at most `timeout` (`TimedOut` after).
    #[track_caller]
    pub(crate) fn wait_writable(
        &self,
        timeout: Option<Duration>,
        what: &str,
        at: &'static Location<'static>,
    ) -> io::Result<()> {
        let r = self.watch()?;
        r.wait_timeout(Direction::Write, timeout, || what.to_owned(), at)
    }

    #[track_caller]
    fn op<R>(
        &self,
        dir: Direction,
        timeout: Option<Duration>,
        what: &str,
        at: &'static Location<'static>,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let r = self.watch()?;
        let sock = self.sock.get();
        let fd = sock.as_fd().as_raw_fd();
        r.io_timeout(dir, timeout, &|| format!("{what} fd {fd}"), at, || op(sock))
    }

    #[track_caller]
    fn watch(&self) -> io::Result<&Readiness> {
        if let Some(r) = self.ready.get() {
            return Ok(r);
        }
        with_me("a socket wait", |rt, _| self.watch_in(rt))
    }

    /// The readiness watch, made on first need.
    fn watch_in(&self, rt: &Runtime) -> io::Result<&Readiness> {
        if let Some(r) = self.ready.get() {
            return Ok(r);
        }
        let r = Readiness::new(rt, self.fd)?;
        Ok(self.ready.get_or_init(|| r))
    }

    /// std's `set_read_timeout`: `Some(ZERO)` is refused as std does.
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        check_timeout(t)?;
        self.read_timeout.set(t);
        Ok(())
    }

    /// std's `set_write_timeout`.
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        check_timeout(t)?;
        self.write_timeout.set(t);
        Ok(())
    }

    pub(crate) fn read_timeout(&self) -> Option<Duration> {
        self.read_timeout.get()
    }

    pub(crate) fn write_timeout(&self) -> Option<Duration> {
        self.write_timeout.get()
    }
}

fn check_timeout(t: Option<Duration>) -> io::Result<()> {
    if t == Some(Duration::ZERO) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cannot set a 0 duration timeout",
        ));
    }
    Ok(())
}

impl<T: Into<OwnedFd> + AsFd> AsRawFd for Evented<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

impl<T: Into<OwnedFd> + AsFd> AsFd for Evented<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // The one `unsafe` of this file: a `BorrowedFd` of the number kept.
        // SAFETY: `fd` is `sock`'s descriptor, which `self` owns and keeps
        // open for as long as it lives (it is closed only in `Sock`'s drop
        // or given away by `into_inner`, which consumes `self`).
        #[allow(unsafe_code)]
        unsafe {
            BorrowedFd::borrow_raw(self.fd)
        }
    }
}
