//! The orphan reaper: children whose [`Child`](super::Child) was dropped
//! before they were reaped are reaped when they exit, so they do not stay
//! zombies (tokio reaps its orphans the same way, on `SIGCHLD`).
//!
//! Why a thread and not the reactor's watch the `Child` had: a watch is a
//! reactor event, and every event must be disposed before the reactor is
//! destroyed at the runtime's end, when an orphan may well still run; the
//! surfaces have no hook there. A thread outlives the runtime, which also
//! covers a child that runs longer than the program's loop.
//!
//! Rules:
//! - **OR1** An adopted pid is our child, not reaped, and nothing on the
//!   loop will signal or wait for it any more (its `Child` is gone and its
//!   watch disposed: PC3, PR3).
//! - **OR2** One thread per process, started on the first adoption,
//!   sleeps in `poll(2)` over the orphans' pidfds and a wake pipe, and
//!   reaps each orphan when it exits, through its pidfd
//!   (`waitid(P_PIDFD)`), which can never reap another child.
//! - **OR3** Without pidfds (Linux before 5.3), a small thread per orphan
//!   blocks in `waitpid` on that one pid.
//! - **OR4** If no thread can be started, the orphan stays a zombie until
//!   the program exits, as every child does with std; a warning says so.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock};

use crate::core::runtime::process::{self as sys, Ready};

/// What the loop threads share with the reaper thread (OR2).
struct Reaper {
    /// Pidfds adopted since the thread last looked.
    adopted: Arc<Mutex<Vec<OwnedFd>>>,
    /// Write end of the wake pipe (non-blocking: a full pipe already
    /// holds a wake-up).
    wake: OwnedFd,
}

/// Hands the unreaped child `pid` over (OR1): reaped at once if it has
/// exited, else when it exits.
pub(super) fn adopt(pid: u32) {
    // Already exited: reap it here (the loop thread; OR1 says nobody else
    // will).
    if !matches!(sys::try_reap(pid), Ok(None)) {
        return;
    }
    match sys::pidfd_open(pid) {
        Ok(pidfd) => match reaper() {
            Some(r) => {
                r.adopted
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(pidfd);
                let _ = sys::write(r.wake.as_fd(), &[1]);
            }
            None => warn(pid, "the reaper thread could not be started"),
        },
        Err(_) => {
            // OR3.
            let started = std::thread::Builder::new()
                .name(format!("async-reap-{pid}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    let _ = sys::reap_blocking(pid);
                });
            if started.is_err() {
                warn(pid, "no thread could be started to reap it");
            }
        }
    }
}

fn warn(pid: u32, why: &str) {
    tracing::warn!(
        target: "async_std_api::process",
        "process {pid} was dropped unwaited and will stay a zombie once it exits: {why}"
    );
}

fn reaper() -> Option<&'static Reaper> {
    static REAPER: OnceLock<Option<Reaper>> = OnceLock::new();
    REAPER
        .get_or_init(|| {
            let (rx, tx) = sys::pipe().ok()?;
            let adopted = Arc::new(Mutex::new(Vec::new()));
            let theirs = Arc::clone(&adopted);
            std::thread::Builder::new()
                .name("async-reaper".to_owned())
                .stack_size(64 * 1024)
                .spawn(move || run(File::from(rx), &theirs))
                .ok()?;
            Some(Reaper { adopted, wake: tx })
        })
        .as_ref()
}

/// The reaper thread (OR2).
fn run(wake: File, adopted: &Mutex<Vec<OwnedFd>>) {
    let mut orphans: Vec<OwnedFd> = Vec::new();
    loop {
        let mut fds = vec![(wake.as_fd(), Ready::Read)];
        fds.extend(orphans.iter().map(|fd| (fd.as_fd(), Ready::Read)));
        let Ok(ready) = sys::poll(&fds) else {
            // `poll` fails only for want of memory: try again.
            std::thread::yield_now();
            continue;
        };
        drop(fds);
        let mut i = 0;
        orphans.retain(|fd| {
            i += 1;
            !(ready[i] && sys::reap_pidfd(fd.as_fd()))
        });
        if ready[0] {
            let mut buf = [0u8; 64];
            // Non-blocking: drained once it reports `WouldBlock`.
            while matches!((&wake).read(&mut buf), Ok(n) if n > 0) {}
            orphans.append(&mut adopted.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }
}
