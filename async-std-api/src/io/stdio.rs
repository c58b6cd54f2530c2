//! Standard input, output and error whose reads and writes suspend the
//! calling coroutine: [`stdin`], [`stdout`], [`stderr`].
//!
//! # Why the blocking pool, and not the reactor
//!
//! Descriptors 0, 1 and 2 are almost never ours alone: a shell, the parent
//! process and every child we start without redirecting them share their
//! *open file description*, and `O_NONBLOCK` lives there, not on the
//! descriptor. Setting it so the reactor could wait for readiness would
//! change those other processes' streams under them: a child given our
//! stdin (the default for [`Command`](crate::process::Command)) would see
//! `EAGAIN` where it expects to block (`cat: -: Resource temporarily
//! unavailable`), and a shell may be left with a non-blocking terminal
//! after we exit. A redirected stream may also be a regular file, which
//! `epoll` refuses. So, as tokio does, every read and write runs std's
//! blocking call on the runtime's blocking pool (`core::offload`) while
//! the coroutine suspends; the descriptors are never changed.
//!
//! Rules:
//! - **SI1** Descriptors 0, 1 and 2 are never modified. A descriptor that
//!   someone else made non-blocking is waited for with `poll(2)` on the
//!   pool thread (std's call then returns `WouldBlock`), never on the loop.
//! - **SI2** Nothing read is lost. The bytes, end of stream or error that
//!   a pool read produced go to one process-wide queue, and a reader takes
//!   them from there; a pool read starts only when the queue is empty. So
//!   a read whose waiter was cancelled (its pool thread cannot be
//!   interrupted) leaves what it read for the next read.
//! - **SI3** Writes reach the descriptor in the order they were issued, one
//!   whole `write` call after another, also when a waiter was cancelled
//!   while its write was queued: each write takes a ticket on the loop
//!   thread and runs only at its turn; a ticket dropped unrun (the runtime
//!   ended first) passes its turn on.
//! - **SI4** The loop thread never takes std's stdin or stdout lock, nor
//!   one of ours for longer than a copy: only pool threads block.
//!
//! Standard input is read through std's `io::stdin()` (its buffer
//! included, so mixing the two loses nothing; but the pool thread holds
//! std's lock while it waits for input, so std's own `stdin()` used on the
//! loop thread meanwhile blocks the loop); standard output and error
//! are written after std's own buffer was flushed, under std's lock, so
//! `println!` and these writes do not interleave within a line.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::panic::resume_unwind;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use crate::core::offload::offload;
use crate::core::runtime::process::{self as sys, Ready};
use crate::core::wait::{checkpoint, with_me};

/// The most one pool read or write moves (a longer write is short, as
/// `write` may be).
const CHUNK: usize = 64 * 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics under these locks but a copy; recover rather than
    // poison standard input for good.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// W1 for a call that may not suspend (data already queued).
#[track_caller]
fn cancellation_point(what: &str) -> io::Result<()> {
    with_me(what, |_, me| checkpoint(me)).map_err(io::Error::from)
}

// ---- standard input ----

/// What pool reads produced and no reader took yet (SI2): bytes, then the
/// end (`Ok`: end of stream, `Err`: the error).
#[derive(Default)]
struct Queued {
    data: VecDeque<u8>,
    end: Option<io::Result<()>>,
}

impl Queued {
    fn is_empty(&self) -> bool {
        self.data.is_empty() && self.end.is_none()
    }

    /// Takes into `out`: `None` if nothing is queued.
    fn take(&mut self, out: &mut [u8]) -> Option<io::Result<usize>> {
        if !self.data.is_empty() {
            let n = out.len().min(self.data.len());
            for (o, b) in out.iter_mut().zip(self.data.drain(..n)) {
                *o = b;
            }
            return Some(Ok(n));
        }
        self.end.take().map(|end| end.map(|()| 0))
    }
}

struct InShared {
    /// Held by the pool read in progress (SI2: one at a time).
    reading: Mutex<()>,
    queued: Mutex<Queued>,
}

impl InShared {
    /// A pool read (SI1, SI2): runs on a pool thread.
    fn fill(&self, len: usize) {
        let _turn = lock(&self.reading);
        if !lock(&self.queued).is_empty() {
            return; // an earlier read, whose waiter gave up, brought some
        }
        let mut buf = vec![0; len];
        let stdin = io::stdin();
        let got = loop {
            match stdin.lock().read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Err(e) = sys::poll(&[(stdin.as_fd(), Ready::Read)]) {
                        break Err(e);
                    }
                }
                r => break r,
            }
        };
        let mut q = lock(&self.queued);
        match got {
            Ok(0) => q.end = Some(Ok(())),
            Ok(n) => q.data.extend(&buf[..n]),
            Err(e) => q.end = Some(Err(e)),
        }
    }
}

fn in_shared() -> &'static Arc<InShared> {
    static SHARED: OnceLock<Arc<InShared>> = OnceLock::new();
    SHARED.get_or_init(|| {
        Arc::new(InShared {
            reading: Mutex::new(()),
            queued: Mutex::new(Queued::default()),
        })
    })
}

/// Runs one pool read of at most `len` bytes and waits for it.
#[track_caller]
fn fill(shared: &Arc<InShared>, len: usize) -> io::Result<()> {
    let shared = Arc::clone(shared);
    match offload("read stdin", move || shared.fill(len)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(panic)) => resume_unwind(panic),
        Err(e) => Err(e.into()),
    }
}

/// A handle to the process's standard input whose reads suspend the
/// calling coroutine: the analogue of [`std::io::Stdin`].
///
/// Each read runs std's blocking read on the runtime's blocking pool while
/// the coroutine suspends (the module doc says why not the reactor); the
/// descriptor itself is never changed. All handles share one queue of what
/// was read, so a read returns bytes an earlier, cancelled read brought in
/// before it reads more. Dropping the handle does nothing.
///
/// `!Send` like every handle of this crate.
///
/// # Cancellation
///
/// A read is a cancellation point; cancelled while the pool thread reads,
/// it returns an error of kind `Other` carrying the
/// [`Cancelled`](crate::Cancelled) at once, and whatever that read brings
/// in (bytes, the end of the stream) is kept for the next read: nothing is
/// lost. The pool thread stays in its read until input arrives.
///
/// # Examples
///
/// ```no_run
/// use std::io::Read;
/// use async_std_api::{io, run};
///
/// run(|| {
///     let mut input = String::new();
///     io::stdin().read_to_string(&mut input).unwrap();
///     println!("{} bytes", input.len());
/// })
/// .unwrap();
/// ```
pub struct Stdin {
    std: io::Stdin,
    shared: Arc<InShared>,
    _not_send: PhantomData<Rc<()>>,
}

/// A handle to standard input; see [`Stdin`].
pub fn stdin() -> Stdin {
    Stdin {
        std: io::stdin(),
        shared: Arc::clone(in_shared()),
        _not_send: PhantomData,
    }
}

impl Stdin {
    #[track_caller]
    fn read_at(&self, buf: &mut [u8]) -> io::Result<usize> {
        cancellation_point("read stdin")?;
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(r) = lock(&self.shared.queued).take(buf) {
                return r;
            }
            fill(&self.shared, buf.len().min(CHUNK))?;
        }
    }

    /// Reads a line into `buf`, the newline included, as
    /// [`std::io::Stdin::read_line`]: the number of bytes read, 0 at the
    /// end of the stream.
    ///
    /// # Errors
    ///
    /// [`InvalidData`](io::ErrorKind::InvalidData) if the line is not
    /// UTF-8 (the line is consumed, `buf` unchanged); the read's error, or
    /// `Other` carrying the [`Cancelled`](crate::Cancelled). As std's, a
    /// line cut short by an error is appended to `buf` before the error is
    /// returned: nothing read is lost.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point; see [`Stdin`].
    #[track_caller]
    pub fn read_line(&self, buf: &mut String) -> io::Result<usize> {
        cancellation_point("read stdin")?;
        let mut line = Vec::new();
        let end = loop {
            {
                let mut q = lock(&self.shared.queued);
                if let Some(i) = q.data.iter().position(|&b| b == b'\n') {
                    line.extend(q.data.drain(..=i));
                    break Ok(());
                }
                if !q.data.is_empty() {
                    line.extend(q.data.drain(..));
                } else if let Some(end) = q.end.take() {
                    break end;
                }
            }
            if let Err(e) = fill(&self.shared, CHUNK) {
                break Err(e);
            }
        };
        match String::from_utf8(line) {
            Ok(s) => {
                buf.push_str(&s);
                end.map(|()| s.len())
            }
            Err(_) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "read stdin: the line is not valid UTF-8",
            )),
        }
    }

    /// The lines of standard input, without their `\n` (or `\r\n`), as
    /// [`std::io::Stdin::lines`].
    pub fn lines(self) -> Lines {
        Lines { stdin: self }
    }
}

/// The iterator of [`Stdin::lines`]: each item is a line without its line
/// ending, or the error of [`Stdin::read_line`]. It suspends the calling
/// coroutine like every read.
pub struct Lines {
    stdin: Stdin,
}

impl Iterator for Lines {
    type Item = io::Result<String>;

    #[track_caller]
    fn next(&mut self) -> Option<io::Result<String>> {
        let mut line = String::new();
        match self.stdin.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => {
                if line.ends_with('\n') {
                    line.pop();
                    if line.ends_with('\r') {
                        line.pop();
                    }
                }
                Some(Ok(line))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

impl fmt::Debug for Lines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lines").finish_non_exhaustive()
    }
}

impl Read for Stdin {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_at(buf)
    }
}

impl Read for &Stdin {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_at(buf)
    }
}

impl AsFd for Stdin {
    /// Descriptor 0, lent for inspection (SI1: changing its flags changes
    /// them for every process that shares it).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.std.as_fd()
    }
}

impl AsRawFd for Stdin {
    fn as_raw_fd(&self) -> RawFd {
        self.std.as_raw_fd()
    }
}

impl fmt::Debug for Stdin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stdin").finish_non_exhaustive()
    }
}

// ---- standard output and error ----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Out,
    Err,
}

/// The write order of one stream (SI3).
struct OutShared {
    /// The next ticket to hand out (taken on the loop thread, in call
    /// order).
    next: AtomicU64,
    /// The ticket whose turn it is, and the later ones already finished.
    turns: Mutex<(u64, std::collections::BTreeSet<u64>)>,
    turn: Condvar,
}

fn out_shared(stream: Stream) -> &'static Arc<OutShared> {
    static OUT: OnceLock<Arc<OutShared>> = OnceLock::new();
    static ERR: OnceLock<Arc<OutShared>> = OnceLock::new();
    let cell = match stream {
        Stream::Out => &OUT,
        Stream::Err => &ERR,
    };
    cell.get_or_init(|| {
        Arc::new(OutShared {
            next: AtomicU64::new(0),
            turns: Mutex::new((0, Default::default())),
            turn: Condvar::new(),
        })
    })
}

/// One write's place in its stream's order (SI3); dropping it, run or
/// not, passes the turn on.
struct Ticket {
    shared: Arc<OutShared>,
    n: u64,
}

impl Ticket {
    fn take(shared: &Arc<OutShared>) -> Ticket {
        Ticket {
            shared: Arc::clone(shared),
            n: shared.next.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Waits for the turn, then writes all of `data` (on a pool thread).
    fn write(&self, stream: Stream, data: &[u8]) -> io::Result<()> {
        {
            let mut turns = lock(&self.shared.turns);
            while turns.0 != self.n {
                turns = self
                    .shared
                    .turn
                    .wait(turns)
                    .unwrap_or_else(|p| p.into_inner());
            }
        }
        match stream {
            Stream::Out => write_all(io::stdout().lock(), data),
            Stream::Err => write_all(io::stderr().lock(), data),
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut turns = lock(&self.shared.turns);
        let (serving, finished) = &mut *turns;
        finished.insert(self.n);
        while finished.remove(serving) {
            *serving += 1;
        }
        drop(turns);
        self.shared.turn.notify_all();
    }
}

/// Flushes std's buffer, then writes `data` to the descriptor, under std's
/// lock (on a pool thread: SI1, SI4).
fn write_all(mut out: impl Write + AsFd, data: &[u8]) -> io::Result<()> {
    loop {
        match out.flush() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                sys::poll(&[(out.as_fd(), Ready::Write)])?;
            }
            r => {
                r?;
                break;
            }
        }
    }
    let mut rest = data;
    while !rest.is_empty() {
        match sys::write(out.as_fd(), rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                sys::poll(&[(out.as_fd(), Ready::Write)])?;
            }
            // std treats a closed standard stream as a sink.
            Err(e) if e.raw_os_error() == Some(libc::EBADF) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes one chunk of `buf` to `stream` on the pool and waits for it.
#[track_caller]
fn write_stream(stream: Stream, buf: &[u8]) -> io::Result<usize> {
    let what = match stream {
        Stream::Out => "write stdout",
        Stream::Err => "write stderr",
    };
    cancellation_point(what)?;
    if buf.is_empty() {
        return Ok(0);
    }
    let n = buf.len().min(CHUNK);
    let data = buf[..n].to_vec();
    let ticket = Ticket::take(out_shared(stream));
    match offload(what, move || ticket.write(stream, &data)) {
        Ok(Ok(Ok(()))) => Ok(n),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(panic)) => resume_unwind(panic),
        Err(e) => Err(e.into()),
    }
}

macro_rules! out_handle {
    ($t:ident, $f:ident, $std:ident, $stream:expr, $name:literal, $fd:literal) => {
        #[doc = concat!("A handle to the process's standard ", $name, " whose writes suspend the")]
        #[doc = concat!("calling coroutine: the analogue of [`std::io::", stringify!($t), "`].")]
        ///
        /// Each write runs on the runtime's blocking pool while the
        /// coroutine suspends (the module doc says why not the reactor);
        /// the descriptor itself is never changed. A write returns once its
        /// bytes were handed to the descriptor (std's own buffer is flushed
        /// first, so `print!` output written before comes first): nothing
        /// is buffered here, and [`flush`](Write::flush) has nothing to do.
        /// Writes from every handle reach the descriptor in call order, one
        /// whole call after another. A write of more than 64 KiB writes the
        /// first 64 KiB (`write_all` loops). Dropping the handle does
        /// nothing.
        ///
        /// `!Send` like every handle of this crate.
        ///
        /// # Cancellation
        ///
        /// A write is a cancellation point. Cancelled while its pool write
        /// is queued or running, it returns an error of kind `Other`
        /// carrying the [`Cancelled`](crate::Cancelled) at once; the pool
        /// write cannot be interrupted and still happens, in its turn, so
        /// its bytes may reach the descriptor although the call reported
        /// the cancellation.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::io::Write;
        /// use async_std_api::{io, run};
        ///
        /// run(|| {
        #[doc = concat!("    io::", stringify!($f), "().write_all(b\"written from a coroutine\\n\").unwrap();")]
        /// })
        /// .unwrap();
        /// ```
        pub struct $t {
            std: io::$t,
            _not_send: PhantomData<Rc<()>>,
        }

        #[doc = concat!("A handle to standard ", $name, "; see [`", stringify!($t), "`].")]
        pub fn $f() -> $t {
            $t {
                std: io::$f(),
                _not_send: PhantomData,
            }
        }

        impl Write for $t {
            #[track_caller]
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                write_stream($stream, buf)
            }

            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }

        impl Write for &$t {
            #[track_caller]
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                write_stream($stream, buf)
            }

            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }

        impl AsFd for $t {
            #[doc = concat!("Descriptor ", $fd, ", lent for inspection (SI1: changing its flags")]
            /// changes them for every process that shares it).
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.std.as_fd()
            }
        }

        impl AsRawFd for $t {
            fn as_raw_fd(&self) -> RawFd {
                self.std.as_raw_fd()
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t)).finish_non_exhaustive()
            }
        }
    };
}

out_handle!(Stdout, stdout, Stdout, Stream::Out, "output", "1");
out_handle!(Stderr, stderr, Stderr, Stream::Err, "error", "2");
