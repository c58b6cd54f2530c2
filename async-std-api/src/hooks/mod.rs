//! Unmodified blocking code cooperates: hooks at the C library boundary.
//!
//! With the crate's `hooks` feature built in and hooks turned on at run
//! time, a blocking call of the C library made inside a coroutine (a
//! `read` on a socket with nothing to read, a `connect`, a `poll`, a
//! `nanosleep`, a `getaddrinfo`, a large file read) suspends only that
//! coroutine instead of the thread, so code written for threads runs
//! unchanged: `std::net`, `std::thread::sleep`, `std::fs`,
//! `std::process::Command`, synchronous database drivers and HTTP
//! clients, C libraries reached through FFI (libpq, libcurl).
//!
//! # Turning them on
//!
//! One line in `Cargo.toml`, one switch at run time:
//!
//! ```toml
//! async-std-api = { version = "0.1", features = ["hooks"] }
//! ```
//!
//! then `ASYNC_HOOKS=1 ./my-server` (no code change), or
//! [`Builder::hooks(true)`](crate::Builder::hooks), or `hooks = true` in
//! the config file's `[runtime]` table (the usual precedence: builder,
//! environment, file). Without the feature, asking for hooks is refused
//! with one line saying how to turn the feature on.
//!
//! ```
//! # #[cfg(feature = "hooks")] {
//! use std::io::{Read, Write};
//! use async_std_api::{spawn, Builder};
//!
//! Builder::new().hooks(true).run(|| {
//!     // Plain std: the listener, the streams and the sleep suspend only
//!     // their coroutine.
//!     let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let server = spawn(move || {
//!         let (mut conn, _) = listener.accept().unwrap();
//!         std::thread::sleep(std::time::Duration::from_millis(20));
//!         conn.write_all(b"hello").unwrap();
//!     });
//!     let mut client = std::net::TcpStream::connect(addr).unwrap();
//!     let mut reply = String::new();
//!     client.read_to_string(&mut reply).unwrap();
//!     server.join().unwrap();
//!     assert_eq!(reply, "hello");
//! })
//! .unwrap();
//! # }
//! ```
//!
//! A database driver works the same way, unchanged (the `postgres` crate
//! here; `tests-real` runs it against a server it starts):
//!
//! ```ignore
//! async_std_api::Builder::new().hooks(true).run(|| {
//!     let mut db = postgres::Client::connect("host=127.0.0.1 user=postgres", postgres::NoTls)?;
//!     // Other coroutines run while the query waits on the network.
//!     let row = db.query_one("select pg_sleep(0.1)::text, 42", &[])?;
//!     Ok::<i32, postgres::Error>(row.get(1))
//! })
//! ```
//!
//! The `postgres` crate enters a tokio runtime of its own on every call, and
//! tokio keeps "this thread is inside a runtime" in a thread-local: a
//! hundred coroutines of one loop may be inside their queries at once
//! because each keeps its own copy of that thread-local while it is
//! suspended (`core::foreign_tls`, rules FT1-FT4: found by name in the
//! executable's symbol table; a stripped executable has one coroutine per
//! loop inside a tokio runtime at a time, as tokio itself allows). Each
//! coroutine needs a runtime of its own: one runtime shared by two
//! coroutines of a thread blocks the thread (the second `block_on` waits
//! for the runtime's core on a condition variable, which no hook sees).
//!
//! # What is hooked, and how
//!
//! | calls | inside a coroutine, with hooks on |
//! |---|---|
//! | `read`, `readv`, `write`, `writev` on sockets, pipes, FIFOs, eventfds | tried without blocking (`RWF_NOWAIT`); when it would block, the coroutine waits for readiness and tries again |
//! | `recv`, `recvfrom`, `recvmsg`, `send`, `sendto`, `sendmsg` | the same, with `MSG_DONTWAIT` |
//! | `accept`, `accept4`, `connect` | the same; `connect` waits for the handshake and reports `SO_ERROR` |
//! | `poll`, `ppoll`, `select`, `pselect`, `epoll_wait`, `epoll_pwait` | the coroutine waits on the reactor for any of the descriptors, then the real call reports them |
//! | `sleep`, `usleep`, `nanosleep`, `clock_nanosleep` | a reactor timer |
//! | `getaddrinfo`, `gethostbyname`, `gethostbyname2` | run on the blocking pool |
//! | `getpwnam`, `getpwuid` (and `_r`), `getgrnam`, `getgrgid`, `getnameinfo` | the C library's call with the hooks quiet inside: its name-service modules may open sockets while it holds a lock of its own |
//! | `read`, `pread`, `readv`, `preadv` on regular files | up to 256 KiB from the page cache at once (`RWF_NOWAIT`), the rest as the reactor's requests on io_uring (`AA_CAP_IO_NATIVE`), else on the blocking pool |
//! | `write`, `pwrite`, `writev`, `pwritev` on regular files | up to 64 KiB at once, more as the reactor's requests on io_uring, else on the blocking pool |
//! | `open`, `openat`, `fsync`, `fdatasync` | the reactor's requests on io_uring (`AA_CAP_IO_FILE`), else on the blocking pool |
//! | `waitpid`, `wait4`, `wait`, `waitid` | a child's pidfd on the reactor (a specific child), else polled with a growing pause |
//! | `close`, `dup`, `dup2`, `dup3`, `socket`, `socketpair`, `fcntl`, `ioctl`, `setsockopt` | the C library's call, and the hints kept per descriptor number forgotten (any thread, hooks on or off); `close` of a regular file written through the hooks runs on the blocking pool (ext4 and NFS flush on close) |
//!
//! Everything else is the C library's own call, and so is every hooked
//! call made outside a coroutine (other threads, the blocking pool, the
//! scheduler's and the reactor's own calls) or in a runtime with hooks
//! off: a hook that passes through costs a thread-local check and an
//! indirect call (`cargo xtask bench`, "hooks").
//!
//! # What a descriptor looks like
//!
//! The hooks never change a descriptor: they pass `RWF_NOWAIT` or
//! `MSG_DONTWAIT` per call instead of setting `O_NONBLOCK`, so
//! `fcntl(F_GETFL)` shows what the user set, a descriptor shared with
//! another process (a duplicate, one inherited across `fork`) keeps its
//! mode there, and nothing has to be undone when it is closed. A
//! descriptor the user made non-blocking returns `EAGAIN` as before; a
//! socket's `SO_RCVTIMEO`/`SO_SNDTIMEO` end a wait with `EAGAIN`
//! (`EINPROGRESS` for `connect`, as Linux's blocking connect) at the same
//! time the kernel would; results, partial transfers, errors and end of
//! stream are the real call's. A blocking `write`/`send` writes
//! everything, as the kernel's does. A loop keeps one readiness watch per
//! number it waited on, on a duplicate of the descriptor, valid only
//! under the number's generation: a close (or `dup2` over it) on the loop
//! thread disposes it before the descriptor goes, so the user's close is
//! still the last and the peer sees the end; a close on another thread is
//! noticed at the loop's next hooked wait, and until then the duplicate
//! keeps the file open. A descriptor closed by any path and its number
//! reused never inherits anything. Per number the hooks keep two hints:
//! whether it is a regular file, and whether it is blocking with no
//! socket timeouts; `close`, `dup2`, `dup3`, `fcntl(F_SETFL)`,
//! `ioctl(FIONBIO)` and `setsockopt` (hooked for this, on any thread)
//! forget them. A mode changed behind the hooks' back (a raw system call,
//! another process sharing the descriptor) is seen once the number is
//! forgotten. `connect` and `accept` on a blocking
//! socket turn `O_NONBLOCK` on for the duration of the one call (Linux has
//! no per-call flag for them), which another process sharing that
//! listening socket could observe in that instant.
//!
//! # Cancellation
//!
//! A hooked wait is a cancellation point that does not consume the
//! cancellation: a coroutine cancelled while it waits in a hooked call, or
//! already cancelled when it makes one, yields once and the call fails as
//! if the operation had failed, with `-1` and `errno` set to `ECANCELED`
//! (`getaddrinfo` returns `EAI_SYSTEM` with `errno` `ECANCELED`,
//! `gethostbyname` returns null with `h_errno` `TRY_AGAIN`). The
//! cancellation itself is raised at the coroutine's next suspension point
//! in the runtime's API, as usual. Two families differ because their
//! callers treat anything else as a bug: the sleeps end early and report
//! an interruption with nothing left to sleep (`EINTR`, `*rem` zero;
//! `sleep` returns 0), since std's `thread::sleep` asserts `EINTR`; and
//! `epoll_wait`/`epoll_pwait` return `EINTR`, which an embedded event
//! loop (tokio, inside a synchronous client) retries. A shutdown of the
//! runtime is delivered the same way and unwinds the coroutine at its next
//! suspension point in the runtime's API. Memory a pool thread or the
//! kernel writes into (a file read into the caller's buffer) is never given
//! back early: such a wait lasts until the pool thread is done, or until
//! the cancelled ring request completed, and a cancellation that came
//! meanwhile stays pending.
//!
//! # What the hooks cannot do
//!
//! - Locks: std's `Mutex`, `Condvar`, `RwLock`, channels and thread joins
//!   wait on futexes, which are not C library calls the hooks see. A lock
//!   held across a hooked call that suspends, and then taken by another
//!   coroutine of the same thread, deadlocks the thread; so does any
//!   thread-local state that assumes one call at a time per thread, except
//!   tokio's runtime context, which each coroutine keeps its own copy of
//!   (FT1).
//! - Busy loops, and long computations, hold the loop as before
//!   ([`spawn_blocking`](crate::spawn_blocking)).
//! - Calls the C library makes to itself (`fopen`/`fread` through `FILE`,
//!   `system`, `getaddrinfo`'s own sockets), raw `syscall()`, statically
//!   linked C libraries that carry their own C library, and programs built
//!   for musl (the hooks are built for glibc on Linux only).
//! - Descriptors closed by raw system calls while a coroutine waits on
//!   them wait on: the hooks' watch is on a duplicate.
//! - Signals: a hooked wait is not interrupted by a signal (a blocking
//!   call would fail with `EINTR` for a handler installed without
//!   `SA_RESTART`), and the signal masks of `ppoll`, `pselect` and
//!   `epoll_pwait` apply to the real calls only, not to the time the
//!   coroutine waits. A signal handler that calls a hooked function while
//!   a coroutine runs gets the hook: keep such handlers to
//!   async-signal-safe system calls (`syscall(SYS_write, ..)`), or use the
//!   runtime's `signal` module.
//! - Timeouts: `SO_RCVTIMEO` and `SO_SNDTIMEO` bound each wait of a call;
//!   a `recv` with `MSG_WAITALL` or a blocking write that waits several
//!   times can take longer than one timeout in all (the kernel bounds the
//!   whole call).

// The hooks are system calls and C ABI entry points: unsafe throughout,
// each block with its argument.
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::time::Duration;

mod dns;
mod fds;
mod file;
mod io;
mod net;
mod poll;
mod process;
mod real;
mod sleep;
mod wait;

/// Whether the C library hooks are on for the running coroutine: the
/// `hooks` feature is built in, the runtime turned them on, and a
/// coroutine runs.
///
/// # Examples
///
/// ```
/// use async_std_api::{hooks, run};
///
/// assert!(!hooks::active()); // outside a runtime
/// run(|| assert!(!hooks::active())).unwrap(); // hooks off by default
/// ```
pub fn active() -> bool {
    wait::active()
}

/// Runs `f` with the hooks passing every call through on this thread:
/// for code that holds a lock across C library calls and must not be
/// suspended inside it (a panic hook of the program's own, a logger that
/// writes under a mutex). A call in `f` that would block then blocks the
/// loop, as it would without the hooks. The runtime's own such code (its
/// panic hook, its log, trace captures) runs this way already.
///
/// # Examples
///
/// ```
/// use async_std_api::{hooks, run};
///
/// run(|| {
///     let n = hooks::quiet(|| {
///         assert!(!hooks::active());
///         6 * 7
///     });
///     assert_eq!(n, 42);
/// })
/// .unwrap();
/// ```
pub fn quiet<R>(f: impl FnOnce() -> R) -> R {
    let _quiet = crate::core::runtime::Quiet::new();
    f()
}

/// The calling thread's `errno`.
fn errno() -> c_int {
    // SAFETY: `__errno_location` returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Sets the calling thread's `errno`.
fn set_errno(e: c_int) {
    // SAFETY: as `errno`.
    unsafe { *libc::__errno_location() = e }
}

/// `-1` with `errno` set to `e`: how a hooked call fails.
fn fail<T: From<i8>>(e: c_int) -> T {
    set_errno(e);
    T::from(-1)
}

/// Whether the user made `fd` non-blocking (`O_NONBLOCK` in its file
/// status flags): such a descriptor's calls are passed through, `EAGAIN`
/// included. An error reading the flags counts as non-blocking, so the
/// real call reports it.
fn user_nonblocking(fd: c_int) -> bool {
    // SAFETY: F_GETFL takes no argument and touches no memory.
    let flags = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
    flags < 0 || flags & libc::O_NONBLOCK != 0
}

/// Whether `fd` is a regular file (or a block device): always "ready", so
/// its waits go to the blocking pool, not the reactor.
fn is_file(fd: c_int) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is a valid out pointer for one `stat`.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstat succeeded, so it filled `st`.
    let mode = unsafe { st.assume_init() }.st_mode & libc::S_IFMT;
    mode == libc::S_IFREG || mode == libc::S_IFBLK
}

/// Which way a transfer goes: which socket timeout bounds its wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    In,
    Out,
}

impl Way {
    fn other(self) -> Way {
        match self {
            Way::In => Way::Out,
            Way::Out => Way::In,
        }
    }

    fn interest(self) -> u32 {
        match self {
            Way::In => async_abi::AA_POLL_READABLE,
            Way::Out => async_abi::AA_POLL_WRITABLE,
        }
    }
}

/// The socket's `SO_RCVTIMEO` or `SO_SNDTIMEO` (none for a zero timeout
/// or a descriptor that is not a socket).
fn sock_timeout(fd: c_int, way: Way) -> Option<Duration> {
    let opt = match way {
        Way::In => libc::SO_RCVTIMEO,
        Way::Out => libc::SO_SNDTIMEO,
    };
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut len = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: `tv` and `len` are valid out pointers of the sizes given.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, opt, (&raw mut tv).cast(), &mut len) };
    if r != 0 || (tv.tv_sec == 0 && tv.tv_usec == 0) {
        return None;
    }
    Some(Duration::new(
        tv.tv_sec as u64,
        (tv.tv_usec as u32).saturating_mul(1000),
    ))
}

/// Text naming a hooked wait (`"hooked read fd 7"`), for deadlock
/// reports and `Coroutine::awaiting_info`: written on the stack (a wait on
/// a hot path allocates nothing for it).
struct What {
    buf: [u8; 64],
    len: usize,
}

impl What {
    fn push(&mut self, b: &[u8]) {
        let n = b.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
    }
}

impl std::ops::Deref for What {
    type Target = str;

    fn deref(&self) -> &str {
        // Pushed from `&str`s and ASCII digits, cut at a char boundary
        // only if a call name were longer than the buffer (they are short).
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("hooked call")
    }
}

fn what(call: &str, fd: c_int) -> What {
    let mut w = What {
        buf: [0; 64],
        len: 0,
    };
    w.push(call.as_bytes());
    w.push(b" fd ");
    let mut digits = [0u8; 11];
    let mut i = digits.len();
    let mut n = i64::from(fd).unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if fd < 0 {
        i -= 1;
        digits[i] = b'-';
    }
    w.push(&digits[i..]);
    w
}
