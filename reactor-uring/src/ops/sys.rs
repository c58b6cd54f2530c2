//! The few plain system calls the reactor makes outside the ring: making
//! and writing eventfds, telling sockets from other descriptors, closing a
//! descriptor nobody will ever see. The signal handler and its table
//! (`async_abi::sdk::signal`), `getaddrinfo` (`reactor_sdk::dns`), pidfds
//! (`reactor_sdk::process`) and inotify (`reactor_sdk::inotify`) are shared
//! with the other reactor; each states its own obligations.
//!
//! # Safety
//!
//! Each call goes through `syscall!`, which turns `-1` into
//! [`io::Error::last_os_error`]. The obligations are:
//!
//! - **Y1 Descriptors.** A raw descriptor is only a number to the kernel: a
//!   wrong one gives `EBADF` (or acts on another descriptor of this process,
//!   which is the host's contract to prevent, AA-R6), never undefined
//!   behaviour in Rust.
//! - **Y2 Local memory.** Every pointer handed to the kernel points to a
//!   local (or a field of an owned value) of the size given in the call.
//! - **Y3 Ownership.** A descriptor wrapped in an [`OwnedFd`] was just
//!   returned by the kernel and is owned by nobody else.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Runs a libc call and turns `-1` into the thread's last OS error.
macro_rules! syscall {
    ($fn:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: the caller of the macro states the obligation of this
        // particular call (Y1-Y3) in its own SAFETY comment.
        let res = unsafe { libc::$fn($($arg),*) };
        if res == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(res)
        }
    }};
}

/// A new eventfd: counter 0, non-blocking, close-on-exec.
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: no pointer arguments.
    let fd = syscall!(eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC))?;
    // SAFETY: Y3: `fd` was just returned by `eventfd` and is ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds 1 to an eventfd's counter. Never blocks: a counter at its maximum
/// (`EAGAIN`) already wakes every reader, so that is success too.
pub(crate) fn eventfd_write(fd: RawFd) -> io::Result<()> {
    let one: u64 = 1;
    loop {
        // SAFETY: Y1; Y2: `one` is a local u64, and 8 bytes are written.
        match syscall!(write(fd, (&one as *const u64).cast(), 8)) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// The file type of `fd` (`st_mode & S_IFMT` of `fstat`: `S_IFSOCK`,
/// `S_IFREG`, ...), or `EBADF`.
pub(crate) fn file_type(fd: RawFd) -> io::Result<libc::mode_t> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: Y1 for `fd`; Y2: `st` is a local `struct stat`.
    syscall!(fstat(fd, st.as_mut_ptr()))?;
    // SAFETY: `fstat` returned 0, so it initialised `st`.
    let st = unsafe { st.assume_init() };
    Ok(st.st_mode & libc::S_IFMT)
}

/// Whether the socket `fd` is a stream socket (`SO_TYPE`); false if the
/// kernel cannot say.
pub(crate) fn is_stream(fd: RawFd) -> bool {
    let mut ty: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: Y1 for `fd`; Y2: `ty` and `len` are locals of the sizes given.
    let r = syscall!(getsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TYPE,
        (&mut ty as *mut libc::c_int).cast(),
        &mut len
    ));
    r.is_ok() && ty == libc::SOCK_STREAM
}

/// Closes a descriptor that no one else knows: one a disposed accept
/// produced after its event was gone. `EINTR` counts as closed (Linux
/// releases the descriptor before it reports the interruption).
pub(crate) fn close_orphan(fd: RawFd) {
    // SAFETY: Y1; the descriptor came from a completed accept whose event
    // was disposed, so the host never saw it and nothing else uses it.
    let _ = syscall!(close(fd));
}
