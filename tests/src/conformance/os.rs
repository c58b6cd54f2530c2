//! Plain libc helpers for the optional-kind tiers: signal dispositions and
//! deliveries, child processes, and scratch directories.
//!
//! The kit's cases run on parallel threads of one process, and signal
//! dispositions are process-wide: each signal case uses a signal of its own
//! ([`case_signal`]), so no case sees another's deliveries or disposition.

use std::ffi::CString;
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The signal reserved for signal case `n` of the kit: `SIGUSR1`,
/// `SIGUSR2`, then real-time signals from `SIGRTMIN`.
pub fn case_signal(n: i32) -> i32 {
    match n {
        0 => libc::SIGUSR1,
        1 => libc::SIGUSR2,
        n => libc::SIGRTMIN() + n - 2,
    }
}

/// The handler address of `signum`'s disposition (`SIG_DFL`, `SIG_IGN` or
/// a function).
#[track_caller]
pub fn disposition(signum: i32) -> libc::sighandler_t {
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a query; `old` is a local the kernel fills.
    let res = unsafe { libc::sigaction(signum, std::ptr::null(), old.as_mut_ptr()) };
    assert_eq!(res, 0, "sigaction({signum}) query");
    // SAFETY: `sigaction` returned 0 and filled `old`.
    unsafe { old.assume_init() }.sa_sigaction
}

/// Sets `signum`'s disposition to `handler` (`SIG_IGN`, `SIG_DFL`).
#[track_caller]
pub fn set_disposition(signum: i32, handler: libc::sighandler_t) {
    let mut act = MaybeUninit::<libc::sigaction>::zeroed();
    let ptr = act.as_mut_ptr();
    // SAFETY: `ptr` points to a zeroed local; only its fields are written.
    unsafe {
        (*ptr).sa_sigaction = handler;
        libc::sigemptyset(&mut (*ptr).sa_mask);
    }
    // SAFETY: `act` is initialised; the old action is not asked for.
    let res = unsafe { libc::sigaction(signum, act.as_ptr(), std::ptr::null_mut()) };
    assert_eq!(res, 0, "sigaction({signum})");
}

/// Sends `signum` to the calling thread; its handler has run when this
/// returns.
#[track_caller]
pub fn raise(signum: i32) {
    // SAFETY: plain call; the case watches (or ignores) `signum`.
    let res = unsafe { libc::raise(signum) };
    assert_eq!(res, 0, "raise({signum})");
}

/// Sends `signum` to this process (any thread that does not block it).
#[track_caller]
pub fn kill_self(signum: i32) {
    kill(std::process::id() as i32, signum);
}

/// Sends `signum` to process `pid`.
#[track_caller]
pub fn kill(pid: i32, signum: i32) {
    // SAFETY: plain call on a process of the case.
    let res = unsafe { libc::kill(pid, signum) };
    assert_eq!(res, 0, "kill({pid}, {signum})");
}

/// `waitpid(pid, WNOHANG)`: `Ok(true)` if a child was reaped, `Ok(false)`
/// if it still runs, `Err(errno)` (`ECHILD`: no such child, or reaped
/// already).
pub fn try_reap(pid: i32) -> Result<bool, i32> {
    let mut status = 0;
    // SAFETY: `status` is a local int.
    let res = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    match res {
        -1 => Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)),
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// Waits (blocking) until child `pid` has exited, leaving it a zombie to be
/// reaped by someone else (`waitid(WEXITED | WNOWAIT)`).
#[track_caller]
pub fn wait_exited_unreaped(pid: i32) {
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    loop {
        // SAFETY: `info` is a local the kernel fills.
        let res = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if res == 0 {
            return;
        }
        let err = std::io::Error::last_os_error();
        assert_eq!(err.kind(), std::io::ErrorKind::Interrupted, "waitid({pid})");
    }
}

/// A scratch directory, removed with its contents on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A new, empty directory named after the case.
    #[track_caller]
    pub fn new(case: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("aa-kit-{}-{}-{case}", std::process::id(), n));
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        TempDir { path }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its path as bytes, for `fs_watch_new`.
    pub fn bytes(&self) -> Vec<u8> {
        CString::new(self.path.as_os_str().as_encoded_bytes())
            .expect("no NUL in a temp path")
            .into_bytes()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
