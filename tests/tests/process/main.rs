//! Child processes and pipes: `process::Command`/`Child` against real
//! children (`sh`, `cat`, `true`, `false`, `sleep`), `io::pipe`, and
//! `io::stdin`/`stdout`/`stderr` through a child process of this binary
//! whose standard streams are pipes (D-32 and the surfaces' contracts).

mod io_pipe;
mod io_stdio;
mod process_pipes;
mod process_spawn;
mod process_types;
mod process_wait;

use std::time::{Duration, Instant};

/// Whether the child `pid` is gone: reaped by someone (so no zombie is
/// left). Asks without reaping it (`waitid(WNOWAIT)`): `ECHILD` means it is
/// no longer a child of ours.
pub(crate) fn is_reaped(pid: u32) -> bool {
    let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: `info` is a local `siginfo_t` the kernel fills.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            info.as_mut_ptr(),
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD)
}

/// The process's state letter in `/proc/<pid>/stat` (`Z` for a zombie),
/// `None` once it is gone.
pub(crate) fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ...`: the state follows the last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Waits (in 1 ms delays, from a coroutine) until `pid` is reaped; fails
/// after 10 s.
#[track_caller]
pub(crate) fn wait_until_reaped(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_reaped(pid) {
        assert!(
            Instant::now() < deadline,
            "process {pid} was not reaped within 10 s (state {:?})",
            proc_state(pid)
        );
        async_std_api::delay(1).unwrap();
    }
}

/// Whether `fd` has `O_NONBLOCK` set.
pub(crate) fn is_nonblocking(fd: std::os::fd::RawFd) -> bool {
    // SAFETY: `fcntl(F_GETFL)` on a descriptor the caller keeps open.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    assert!(
        flags >= 0,
        "fcntl({fd}): {}",
        std::io::Error::last_os_error()
    );
    flags & libc::O_NONBLOCK != 0
}
