//! [`Child`]: a running or exited child process, its exit watch and its
//! pipes.
//!
//! Rules (the module doc of `process` states them for users):
//! - **PC1** Each `Child` owns one exit watch from its spawn until the
//!   child is reaped: the reactor's (`process_new`), or, without it, the
//!   blocking pool (started by the first wait, then kept). A wait only
//!   subscribes to the watch, so a cancelled wait changes nothing: the
//!   child is reaped when it exits and the next wait returns its status
//!   (D-32).
//! - **PC2** The child is reaped exactly once: by the reactor before its
//!   callback (PR2 in `ffi::process`), or by `try_wait` or the pool path
//!   on the loop thread (`waitpid(WNOHANG)`, when the pool thread, which
//!   only waits for the exit with `WNOWAIT`, reports it), or, once the `Child` is dropped, by the orphan
//!   reaper. Whoever reaps records the status first, so `kill` and the
//!   waits never touch a pid that may have been recycled.
//! - **PC3** A `Child` dropped before its child was reaped disposes its
//!   watch (which then reaps nothing, PR3) and hands the pid to the orphan
//!   reaper (`orphan`); it neither kills nor waits, as std's.

use std::cell::Cell;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::panic::Location;
use std::process::{ExitStatus, Output};
use std::rc::Rc;

use async_abi::{AaExitStatus, AaStatus, AA_E_UNSUPPORTED};

use super::orphan;
use super::pipes::{ChildStderr, ChildStdin, ChildStdout};
use crate::core::runtime::process::{self as sys, ProcessEvent};
use crate::core::runtime::{self, status_text};
use crate::core::wait::{checkpoint, suspend_once, with_me};
use crate::core::waiters::{Completion, Subscription};
use crate::io::PipeFd;
use crate::structured::scope::current_scope;
use crate::structured::spawn::spawn_in;

/// `SIGKILL` on Linux.
const SIGKILL: i32 = 9;
/// `ECHILD` on Linux.
const ECHILD: i32 = 10;

/// How the child ended, once known (PC2).
struct ExitSlot {
    status: Cell<Option<ExitStatus>>,
    /// The watch ended without a status: the errno (`ECHILD`: something
    /// else reaped the child).
    lost: Cell<Option<i32>>,
    /// Completed by the reactor watch's callback.
    done: Completion,
}

impl ExitSlot {
    fn record(&self, report: Result<AaExitStatus, AaStatus>) {
        match report {
            Ok(exit) => self.status.set(Some(exit_status(exit))),
            Err(status) => self.lost.set(Some(status.saturating_neg())),
        }
        self.done.complete();
    }
}

/// The std status for the reactor's report (which has no core-dump bit).
fn exit_status(exit: AaExitStatus) -> ExitStatus {
    if exit.signal > 0 {
        ExitStatus::from_raw(exit.signal & 0x7f)
    } else {
        ExitStatus::from_raw((exit.code & 0xff) << 8)
    }
}

/// Who waits for the exit (PC1).
enum Watch {
    /// The reactor's watch.
    Reactor(ProcessEvent),
    /// The blocking pool: the reactor has no usable process watch.
    Pool(PoolWatch),
    /// The child was reaped; nothing to watch.
    Done,
}

/// The pool's watch (PC1): a pool thread waits for the exit, and its
/// report, delivered on the loop thread through the runtime's door, reaps
/// the child there (PC2).
struct PoolWatch {
    /// Why the reactor's watch is not used, for the error if the pool cannot
    /// help either.
    why: AaStatus,
    /// The door's callback id once the watch started: forgotten when the
    /// `Child` is dropped first (RM3), so the report reaps nothing then.
    started: Option<u64>,
}

/// A child process: the analogue of [`std::process::Child`], whose
/// [`wait`](Child::wait) and pipes suspend the calling coroutine instead of
/// the thread.
///
/// Made by [`Command::spawn`](super::Command::spawn). The pipes configured
/// with [`Stdio::piped`](super::Stdio::piped) are the public fields, as in
/// std; take them out to read and write from other coroutines.
///
/// `!Send`: its exit watch and pipes belong to the runtime of the thread
/// that spawned it.
///
/// # Dropping
///
/// Like std's, dropping a `Child` neither kills the process nor waits for
/// it: it runs on. Unlike std's, it does not become a zombie once it exits:
/// it is reaped in the background (the [module](super) doc says how). To
/// stop it, [`kill`](Child::kill) it, then [`wait`](Child::wait).
///
/// Wait for a child or drop it before its runtime ends: a `Child` that
/// outlives its runtime (returned out of [`run`](crate::run)) still holds
/// its exit watch when the reactor is destroyed, which then leaks the
/// reactor with a warning.
pub struct Child {
    /// Our end of the child's standard input, if piped.
    pub stdin: Option<ChildStdin>,
    /// Our end of the child's standard output, if piped.
    pub stdout: Option<ChildStdout>,
    /// Our end of the child's standard error, if piped.
    pub stderr: Option<ChildStderr>,
    pid: u32,
    exit: Rc<ExitSlot>,
    watch: Watch,
}

impl Child {
    /// Takes over a child std just spawned: its pipes become ours
    /// (non-blocking, PP1), and its exit watch starts (PC1).
    pub(super) fn from_std(mut child: std::process::Child) -> Child {
        let pid = child.id();
        let pipe = |fd: Option<OwnedFd>| fd.map(PipeFd::new);
        let stdin = pipe(child.stdin.take().map(OwnedFd::from)).map(ChildStdin);
        let stdout = pipe(child.stdout.take().map(OwnedFd::from)).map(ChildStdout);
        let stderr = pipe(child.stderr.take().map(OwnedFd::from)).map(ChildStderr);
        // std's `Child` neither waits nor kills on drop.
        drop(child);
        let exit = Rc::new(ExitSlot {
            status: Cell::new(None),
            lost: Cell::new(None),
            done: Completion::new(),
        });
        let on_exit = {
            let exit = exit.clone();
            Box::new(move |report| exit.record(report))
        };
        let watch = runtime::with_runtime(|rt| rt.reactor.process(pid, on_exit))
            .unwrap_or(Err(async_abi::AA_E_CLOSED));
        #[cfg(test)]
        let watch = if tests::FORCE_POOL.get() {
            Err(async_abi::AA_E_UNSUPPORTED)
        } else {
            watch
        };
        let watch = match watch {
            Ok(ev) => Watch::Reactor(ev),
            Err(status) => {
                tracing::debug!(
                    "process {pid}: no reactor watch ({}); waiting on the blocking pool",
                    status_text(status)
                );
                Watch::Pool(PoolWatch {
                    why: status,
                    started: None,
                })
            }
        };
        Child {
            stdin,
            stdout,
            stderr,
            pid,
            exit,
            watch,
        }
    }

    /// The child's process id, as [`std::process::Child::id`].
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Sends `SIGKILL` to the child, as [`std::process::Child::kill`]; does
    /// not wait for it to die ([`wait`](Child::wait) does).
    ///
    /// # Errors
    ///
    /// The operating system's error. A child already known to have exited
    /// is not signalled (its pid may be another process's by now), and
    /// `Ok(())` is returned, as std does.
    pub fn kill(&mut self) -> io::Result<()> {
        if self.outcome().is_some() {
            return Ok(());
        }
        // PC2: not reaped, so the pid is still our child's.
        sys::kill(self.pid, SIGKILL)
    }

    /// Returns the exit status if the child has exited (reaping it), else
    /// `None`, without suspending: the analogue of
    /// [`std::process::Child::try_wait`].
    ///
    /// # Errors
    ///
    /// The operating system's error (`ECHILD` if something else, such as a
    /// `waitpid(-1)` elsewhere in the program, reaped the child).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::process::Command;
    /// use async_std_api::run;
    ///
    /// run(|| {
    ///     let mut child = Command::new("sleep").arg("10").spawn().unwrap();
    ///     assert!(child.try_wait().unwrap().is_none());
    ///     child.kill().unwrap();
    ///     let status = child.wait().unwrap();
    ///     assert_eq!(child.try_wait().unwrap(), Some(status));
    /// })
    /// .unwrap();
    /// ```
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(r) = self.outcome() {
            return r.map(Some);
        }
        // PC2: reaped here, on the loop thread, before its watch reported;
        // the watch is disposed at once (PR3: it reaps nothing after).
        match sys::try_reap(self.pid)? {
            Some(raw) => {
                let status = ExitStatus::from_raw(raw);
                self.exit.status.set(Some(status));
                self.dispose_watch();
                Ok(Some(status))
            }
            None => Ok(None),
        }
    }

    /// Waits for the child to exit and returns its status: the analogue of
    /// [`std::process::Child::wait`]. Closes the child's standard input
    /// first (drops [`stdin`](Child::stdin)), as std does, so a child
    /// reading it sees the end of its input. Returns at once if the child
    /// already exited, and may be called again: the status is kept.
    ///
    /// # Errors
    ///
    /// `Other` carrying the [`Cancelled`](crate::Cancelled) if the caller
    /// is cancelled; `ECHILD` if something else reaped the child; without
    /// the reactor's process watch and without a blocking pool, an
    /// [`Unsupported`](io::ErrorKind::Unsupported) error naming the reactor
    /// and the capabilities.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point. A cancelled wait leaves the child as it was:
    /// it is still watched, reaped when it exits (no zombie), and a later
    /// `wait` returns its status (D-32). An exit that arrived before the
    /// cancellation was seen is returned, and the cancellation stays
    /// pending for the next suspension point.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::unix::process::ExitStatusExt;
    /// use async_std_api::process::Command;
    /// use async_std_api::run;
    ///
    /// run(|| {
    ///     let mut child = Command::new("sleep").arg("10").spawn().unwrap();
    ///     child.kill().unwrap();
    ///     assert_eq!(child.wait().unwrap().signal(), Some(9));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.wait_at(Location::caller())
    }

    #[track_caller]
    pub(super) fn wait_at(&mut self, at: &'static Location<'static>) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        with_me("process wait", |_, me| checkpoint(me)).map_err(io::Error::from)?;
        loop {
            if let Some(r) = self.outcome() {
                self.dispose_watch();
                return r;
            }
            match &self.watch {
                Watch::Reactor(ev) => {
                    // PR4: referenced while someone waits, so the wait is
                    // not taken for a deadlock.
                    wait_exit(&self.exit, self.pid, at, |waiting| ev.set_ref(waiting))?
                }
                Watch::Pool(w) => {
                    if w.started.is_none() {
                        let id = self.start_pool_watch(w.why)?;
                        if let Watch::Pool(w) = &mut self.watch {
                            w.started = id;
                        }
                    }
                    // RM2: the door is referenced while the watch runs.
                    wait_exit(&self.exit, self.pid, at, |_| ())?
                }
                Watch::Done => unreachable!("PC2: a reaped child has an outcome"),
            }
        }
    }

    /// Ends the watch (PC3, PR3, RM3): once the child was reaped here, or
    /// handed on, nothing may reap its pid again, which may be another
    /// child's by then.
    fn dispose_watch(&mut self) {
        if let Watch::Pool(PoolWatch {
            started: Some(id), ..
        }) = self.watch
        {
            runtime::with_runtime(|rt| rt.remote.forget(id));
        }
        self.watch = Watch::Done;
    }

    /// The status, or the error, once the child was reaped.
    fn outcome(&self) -> Option<io::Result<ExitStatus>> {
        if let Some(s) = self.exit.status.get() {
            return Some(Ok(s));
        }
        let errno = self.exit.lost.get()?;
        let e = io::Error::from_raw_os_error(errno);
        Some(Err(io::Error::new(
            e.kind(),
            format!(
                "cannot wait for process {}: {}",
                self.pid,
                status_text(-errno)
            ),
        )))
    }

    /// Starts the pool's watch (PC1): reaps at once if the child has
    /// exited, else a pool thread waits for the exit without reaping it and
    /// the loop thread reaps when it reports (PC2). Returns the door's
    /// callback id, or `None` if the child was reaped at once.
    fn start_pool_watch(&self, why: AaStatus) -> io::Result<Option<u64>> {
        let exit = self.exit.clone();
        let pid = self.pid;
        let reap = move |exit: &ExitSlot, waited: Option<io::Result<()>>| {
            let waited = waited
                .unwrap_or_else(|| Err(io::Error::other("the pool dropped the process wait")));
            let reaped = waited.and_then(|()| sys::try_reap(pid));
            match reaped {
                Ok(Some(raw)) => exit.status.set(Some(ExitStatus::from_raw(raw))),
                // Exited (WNOWAIT said so) yet not reapable: taken by
                // someone else meanwhile.
                Ok(None) => exit.lost.set(Some(ECHILD)),
                Err(e) => exit.lost.set(Some(e.raw_os_error().unwrap_or(ECHILD))),
            }
            exit.done.complete();
        };
        if let Ok(Some(raw)) = sys::try_reap(pid) {
            exit.status.set(Some(ExitStatus::from_raw(raw)));
            exit.done.complete();
            return Ok(None);
        }
        runtime::with_runtime(|rt| {
            let (id, promise) = rt
                .remote
                .register(move |waited: Option<io::Result<()>>| reap(&exit, waited))
                .map_err(|status| {
                    if status == AA_E_UNSUPPORTED {
                        io::Error::new(
                            io::ErrorKind::Unsupported,
                            format!(
                                "cannot wait for process {pid}: reactor \"{}\" has no process watch ({}) and lacks AA_CAP_TRIGGER for the blocking pool",
                                rt.reactor.label(),
                                status_text(why)
                            ),
                        )
                    } else {
                        io::Error::other(format!(
                            "cannot wait for process {pid}: {}",
                            status_text(status)
                        ))
                    }
                })?;
            rt.pool
                .submit(Box::new(move || promise.keep(sys::wait_exited(pid))))
                .map_err(|m| {
                    rt.remote.forget(id);
                    io::Error::other(format!("cannot wait for process {pid}: {m}"))
                })?;
            Ok(Some(id))
        })
        .unwrap_or_else(|| Err(io::Error::other("process wait outside a runtime")))
    }

    /// Waits for the child and collects its standard output and error:
    /// the analogue of [`std::process::Child::wait_with_output`]. Closes
    /// standard input first; reads both pipes concurrently (standard error
    /// in a helper coroutine of the current scope), so a child that fills
    /// one while the other is read does not block. A stream that was not
    /// piped comes back empty.
    ///
    /// # Errors
    ///
    /// A read's error, or [`wait`](Child::wait)'s.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point: the helper is cancelled, the output read so
    /// far is dropped, and the child is left running (then reaped in the
    /// background when it exits, as for a dropped `Child`).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::process::{Command, Stdio};
    /// use async_std_api::run;
    ///
    /// run(|| {
    ///     let child = Command::new("sh")
    ///         .args(["-c", "echo out; echo err >&2"])
    ///         .stdout(Stdio::piped())
    ///         .stderr(Stdio::piped())
    ///         .spawn()
    ///         .unwrap();
    ///     let out = child.wait_with_output().unwrap();
    ///     assert_eq!((out.stdout, out.stderr), (b"out\n".to_vec(), b"err\n".to_vec()));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn wait_with_output(self) -> io::Result<Output> {
        self.wait_with_output_at(Location::caller())
    }

    #[track_caller]
    pub(super) fn wait_with_output_at(
        mut self,
        at: &'static Location<'static>,
    ) -> io::Result<Output> {
        drop(self.stdin.take());
        let (stdout, stderr) = match (self.stdout.take(), self.stderr.take()) {
            (None, None) => (Vec::new(), Vec::new()),
            (Some(out), None) => (read_all(out)?, Vec::new()),
            (None, Some(err)) => (Vec::new(), read_all(err)?),
            (Some(out), Some(err)) => both(out, err)?,
        };
        let status = self.wait_at(at)?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }
}

/// Waits until the child's watch reported (PC1); `referenced(true)` while
/// the caller waits, `false` however the wait ends.
#[track_caller]
fn wait_exit(
    exit: &ExitSlot,
    pid: u32,
    at: &'static Location<'static>,
    referenced: impl Fn(bool),
) -> io::Result<()> {
    with_me("process wait", |rt, me| {
        if exit.done.is_done() {
            return Ok(());
        }
        let _sub = Subscription::new(&exit.done, me);
        referenced(true);
        struct Unref<F: Fn(bool)>(F);
        impl<F: Fn(bool)> Drop for Unref<F> {
            fn drop(&mut self) {
                (self.0)(false);
            }
        }
        let _unref = Unref(referenced);
        let what = format!("wait for process {pid}");
        while !exit.done.is_done() {
            if let Err(c) = suspend_once(rt, me, what.as_bytes(), at) {
                if exit.done.is_done() {
                    // The exit arrived first: it wins, the cancellation
                    // stays pending (as OF2 and D-29).
                    me.repend_cancel();
                    break;
                }
                return Err(c.into());
            }
        }
        Ok(())
    })
}

fn read_all(mut r: impl Read) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    r.read_to_end(&mut v)?;
    Ok(v)
}

/// Reads both pipes concurrently: standard error in a helper coroutine.
#[track_caller]
fn both(out: ChildStdout, err: ChildStderr) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let helper = spawn_in(&current_scope(), move || read_all(err))
        .map_err(|e| io::Error::other(format!("cannot read the child's stderr: {e}")))?;
    let co = helper.coroutine();
    let stdout = match read_all(out) {
        Ok(v) => v,
        Err(e) => {
            co.cancel();
            let _ = helper.join();
            return Err(e);
        }
    };
    match helper.join() {
        Ok(stderr) => Ok((stdout, stderr?)),
        Err(e) => {
            co.cancel();
            if let Some(c) = e.interrupted_by().or(e.cancelled()) {
                return Err(c.clone().into());
            }
            Err(io::Error::other(format!(
                "reading the child's stderr failed: {e}"
            )))
        }
    }
}

impl std::fmt::Debug for Child {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Child")
            .field("pid", &self.pid)
            .field("stdin", &self.stdin)
            .field("stdout", &self.stdout)
            .field("stderr", &self.stderr)
            .field("status", &self.exit.status.get())
            .finish()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.outcome().is_some() {
            return;
        }
        // PC3: dispose first (PR3, RM3: the watch reaps nothing after),
        // then hand the child on.
        self.dispose_watch();
        orphan::adopt(self.pid);
    }
}

#[cfg(test)]
mod tests {
    //! The blocking-pool fallback (a reactor without a process watch),
    //! which the built-in reactors never need: forced here.

    use std::cell::Cell;
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::rc::Rc;

    use crate::core::task::suspend;
    use crate::process::{Command, Stdio};
    use crate::structured::run::run;
    use crate::structured::spawn::spawn;

    thread_local! {
        pub(super) static FORCE_POOL: Cell<bool> = const { Cell::new(false) };
    }

    fn pool<T: 'static>(f: impl FnOnce() -> T + 'static) -> T {
        FORCE_POOL.set(true);
        let r = run(f);
        FORCE_POOL.set(false);
        r.unwrap()
    }

    /// Gone from `/proc`: reaped (not a zombie), without reaping it here.
    fn is_reaped(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn d32_the_pool_fallback_waits_reports_codes_and_signals() {
        pool(|| {
            let status = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
            assert_eq!(status.code(), Some(3));
            let mut child = Command::new("sleep").arg("30").spawn().unwrap();
            assert!(matches!(child.watch, super::Watch::Pool(_)));
            assert_eq!(child.try_wait().unwrap(), None);
            child.kill().unwrap();
            assert_eq!(child.wait().unwrap().signal(), Some(9));
            assert!(is_reaped(child.id()));
        });
    }

    #[test]
    fn d32_a_cancelled_pool_wait_leaves_the_child_for_the_next_wait() {
        pool(|| {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let pid = child.id();
            let slot = Rc::new(Cell::new(None));
            let s = slot.clone();
            let waiter = spawn(move || {
                let err = child.wait().unwrap_err();
                assert!(crate::io::cancelled(&err).is_some());
                s.set(Some(child));
            });
            while !waiter.coroutine().is_suspended() {
                suspend().unwrap();
            }
            waiter.cancel();
            assert!(waiter.join().unwrap_err().is_cancelled());
            let mut child = slot.take().unwrap();
            stdin.write_all(b"x").unwrap();
            drop(stdin);
            assert!(child.wait().unwrap().success());
            assert!(is_reaped(pid));
        });
    }

    #[test]
    fn d32_a_child_that_exits_after_its_pool_wait_was_cancelled_is_reaped_without_a_new_wait() {
        pool(|| {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let stdin = child.stdin.take().unwrap();
            let pid = child.id();
            let slot = Rc::new(Cell::new(None));
            let s = slot.clone();
            let waiter = spawn(move || {
                let _ = child.wait();
                s.set(Some(child));
            });
            while !waiter.coroutine().is_suspended() {
                suspend().unwrap();
            }
            waiter.cancel();
            assert!(waiter.join().unwrap_err().is_cancelled());
            let mut child = slot.take().unwrap();
            drop(stdin);
            // Nobody waits, yet the pool's watch reaps it: the loop runs
            // (yielding) until it is gone from /proc.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !is_reaped(pid) {
                assert!(std::time::Instant::now() < deadline, "still a zombie");
                suspend().unwrap();
            }
            assert_eq!(child.try_wait().unwrap().map(|s| s.code()), Some(Some(0)));
            assert_eq!(child.wait().unwrap().code(), Some(0));
        });
    }

    #[test]
    fn d32_a_dropped_child_is_reaped_in_the_background_with_the_pool_fallback() {
        let pid = pool(|| {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let stdin = child.stdin.take().unwrap();
            let pid = child.id();
            drop(child);
            assert!(!is_reaped(pid));
            drop(stdin);
            pid
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !is_reaped(pid) {
            assert!(std::time::Instant::now() < deadline, "not reaped");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
