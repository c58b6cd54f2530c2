//! [`Command`] and [`Stdio`]: std's builder, whose `spawn` gives a
//! [`Child`] that suspends, and whose `output` and `status` suspend.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::panic::Location;
use std::path::Path;
use std::process::{CommandArgs, CommandEnvs, ExitStatus, Output};

use super::child::Child;
use crate::core::runtime;
use crate::io::{PipeReader, PipeWriter};

/// How a child's standard stream is connected: the analogue of
/// [`std::process::Stdio`], for [`Command::stdin`], [`Command::stdout`]
/// and [`Command::stderr`].
///
/// Made by [`piped`](Stdio::piped), [`inherit`](Stdio::inherit),
/// [`null`](Stdio::null), or converted from a [`File`], an [`OwnedFd`], a
/// std `Stdio`, another child's [`ChildStdout`](super::ChildStdout) (a
/// pipeline), or an end of an [`io::pipe`](crate::io::pipe). A converted
/// pipe end is handed to the child as a blocking duplicate (a program
/// expects blocking standard streams). As with std, the [`Command`] keeps
/// what it was given until it is dropped or reconfigured: drop it after
/// spawning when the child's reader must see the end of a pipe.
pub struct Stdio(pub(super) std::process::Stdio);

impl Stdio {
    /// A new pipe between parent and child; the parent's end becomes the
    /// [`Child`]'s `stdin`, `stdout` or `stderr` handle, which suspends.
    pub fn piped() -> Stdio {
        Stdio(std::process::Stdio::piped())
    }

    /// The child gets the parent's stream (the default of
    /// [`Command::spawn`] and [`Command::status`]).
    pub fn inherit() -> Stdio {
        Stdio(std::process::Stdio::inherit())
    }

    /// The child's stream is `/dev/null`.
    pub fn null() -> Stdio {
        Stdio(std::process::Stdio::null())
    }
}

impl From<std::process::Stdio> for Stdio {
    fn from(s: std::process::Stdio) -> Stdio {
        Stdio(s)
    }
}

impl From<File> for Stdio {
    fn from(f: File) -> Stdio {
        Stdio(f.into())
    }
}

/// The descriptor is given to the child as it is (its flags included).
impl From<OwnedFd> for Stdio {
    fn from(fd: OwnedFd) -> Stdio {
        Stdio(fd.into())
    }
}

/// A blocking duplicate of the read end goes to the child.
impl From<PipeReader> for Stdio {
    fn from(p: PipeReader) -> Stdio {
        Stdio::from(OwnedFd::from(p))
    }
}

/// A blocking duplicate of the write end goes to the child.
impl From<PipeWriter> for Stdio {
    fn from(p: PipeWriter) -> Stdio {
        Stdio::from(OwnedFd::from(p))
    }
}

impl fmt::Debug for Stdio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A process builder: the analogue of [`std::process::Command`], with the
/// same methods, whose [`spawn`](Command::spawn) returns a [`Child`] that
/// suspends the calling coroutine instead of the thread, and whose
/// [`output`](Command::output) and [`status`](Command::status) suspend.
///
/// Spawning itself is std's (`posix_spawn` or `fork`/`exec`: quick, it
/// does not wait for the program to run); waiting for the exit and the
/// child's pipes go through the reactor (see the [module](super) doc).
/// For what std offers through `std::os::unix::process::CommandExt` (user,
/// group, process group, `pre_exec`), configure the std command
/// ([`as_std_mut`](Command::as_std_mut)) or convert one (`From`).
///
/// # Examples
///
/// ```
/// use async_std_api::process::Command;
/// use async_std_api::run;
///
/// run(|| {
///     let out = Command::new("sh").args(["-c", "echo hello"]).output().unwrap();
///     assert!(out.status.success());
///     assert_eq!(out.stdout, b"hello\n");
/// })
/// .unwrap();
/// ```
pub struct Command {
    inner: std::process::Command,
    /// Which streams were configured here (`output` pipes the others and
    /// nulls standard input, as std's does).
    set: [bool; 3],
}

impl Command {
    /// A command for `program`, as [`std::process::Command::new`]: no
    /// arguments, the parent's environment and working directory, and
    /// (for `spawn` and `status`) the parent's standard streams.
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command::from(std::process::Command::new(program))
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.inner.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.inner.args(args);
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(&mut self, key: impl AsRef<OsStr>, val: impl AsRef<OsStr>) -> &mut Command {
        self.inner.env(key, val);
        self
    }

    /// Sets environment variables for the child.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.inner.envs(vars);
        self
    }

    /// Removes an environment variable from the child's environment.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Command {
        self.inner.env_remove(key);
        self
    }

    /// Starts the child with an empty environment (plus what
    /// [`env`](Command::env) adds afterwards).
    pub fn env_clear(&mut self) -> &mut Command {
        self.inner.env_clear();
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Command {
        self.inner.current_dir(dir);
        self
    }

    /// Connects the child's standard input.
    pub fn stdin(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.inner.stdin(cfg.into().0);
        self.set[0] = true;
        self
    }

    /// Connects the child's standard output.
    pub fn stdout(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.inner.stdout(cfg.into().0);
        self.set[1] = true;
        self
    }

    /// Connects the child's standard error.
    pub fn stderr(&mut self, cfg: impl Into<Stdio>) -> &mut Command {
        self.inner.stderr(cfg.into().0);
        self.set[2] = true;
        self
    }

    /// The program, as given to [`new`](Command::new).
    pub fn get_program(&self) -> &OsStr {
        self.inner.get_program()
    }

    /// The arguments, without the program.
    pub fn get_args(&self) -> CommandArgs<'_> {
        self.inner.get_args()
    }

    /// The environment changes ([`env`](Command::env) and
    /// [`env_remove`](Command::env_remove), as `None`).
    pub fn get_envs(&self) -> CommandEnvs<'_> {
        self.inner.get_envs()
    }

    /// The working directory, if set.
    pub fn get_current_dir(&self) -> Option<&Path> {
        self.inner.get_current_dir()
    }

    /// The std command inside.
    pub fn as_std(&self) -> &std::process::Command {
        &self.inner
    }

    /// The std command inside, for what std offers through
    /// `std::os::unix::process::CommandExt`. Standard streams set here are
    /// kept by `spawn` and `status`; `output` replaces those not set
    /// through this `Command` by its defaults.
    pub fn as_std_mut(&mut self) -> &mut std::process::Command {
        &mut self.inner
    }

    /// Starts the program and returns its [`Child`] at once (the analogue
    /// of [`std::process::Command::spawn`]); the standard streams are the
    /// parent's unless configured.
    ///
    /// Spawning does not suspend: std starts the process (`posix_spawn`, or
    /// `fork` and `exec`), which is quick, and reports a failure to
    /// execute the program before it returns.
    ///
    /// # Errors
    ///
    /// std's error kind, with one line naming the program: a missing
    /// program is [`NotFound`](io::ErrorKind::NotFound) (`cannot spawn
    /// "nope": no such file or directory (os error 2)`), one that may not
    /// be executed [`PermissionDenied`](io::ErrorKind::PermissionDenied).
    /// The OS error is the [`source`](std::error::Error::source).
    ///
    /// # Panics
    ///
    /// Outside a runtime (before anything is started).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::process::Command;
    /// use async_std_api::run;
    ///
    /// run(|| {
    ///     let mut child = Command::new("true").spawn().unwrap();
    ///     assert!(child.wait().unwrap().success());
    ///     let err = Command::new("/nonexistent/program").spawn().unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn spawn(&mut self) -> io::Result<Child> {
        self.spawn_with(false)
    }

    /// Runs the program to its end and collects its output: the analogue
    /// of [`std::process::Command::output`]. Unless configured, standard
    /// output and error are piped (and read concurrently, so a child that
    /// fills one does not block on it) and standard input is `/dev/null`.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Command::spawn), then as
    /// [`Child::wait_with_output`].
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point while the child runs: the cancellation is
    /// returned, the output read so far is dropped, and the child is left
    /// running (not killed, as std's `Child` is never killed on drop) and
    /// reaped in the background when it exits.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::process::Command;
    /// use async_std_api::run;
    ///
    /// run(|| {
    ///     let out = Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]).output().unwrap();
    ///     assert_eq!(out.status.code(), Some(3));
    ///     assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"out\n"[..], &b"err\n"[..]));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn output(&mut self) -> io::Result<Output> {
        let at = Location::caller();
        self.spawn_with(true)?.wait_with_output_at(at)
    }

    /// Runs the program to its end and returns how it ended: the analogue
    /// of [`std::process::Command::status`]. The standard streams are the
    /// parent's unless configured.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Command::spawn), then as [`Child::wait`].
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point while the child runs: the cancellation is
    /// returned and the child is left running, then reaped in the
    /// background when it exits.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::process::Command;
    /// use async_std_api::run;
    ///
    /// run(|| {
    ///     assert_eq!(Command::new("false").status().unwrap().code(), Some(1));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn status(&mut self) -> io::Result<ExitStatus> {
        let at = Location::caller();
        self.spawn_with(false)?.wait_at(at)
    }

    #[track_caller]
    fn spawn_with(&mut self, output: bool) -> io::Result<Child> {
        if runtime::with_runtime(|_| ()).is_none() {
            panic!("Command::spawn called outside a coroutine runtime: run the program inside async_std_api::run");
        }
        if output {
            // std's defaults for `output`, for this call only.
            if !self.set[0] {
                self.inner.stdin(std::process::Stdio::null());
            }
            if !self.set[1] {
                self.inner.stdout(std::process::Stdio::piped());
            }
            if !self.set[2] {
                self.inner.stderr(std::process::Stdio::piped());
            }
        }
        let spawned = self.inner.spawn();
        if output {
            for (i, set) in self.set.into_iter().enumerate() {
                if !set {
                    let inherit = std::process::Stdio::inherit();
                    match i {
                        0 => self.inner.stdin(inherit),
                        1 => self.inner.stdout(inherit),
                        _ => self.inner.stderr(inherit),
                    };
                }
            }
        }
        let child = spawned.map_err(|e| spawn_error(self.inner.get_program(), e))?;
        Ok(Child::from_std(child))
    }
}

/// `cannot spawn "<program>": <os error>`, of the OS error's kind, with it
/// as the source.
fn spawn_error(program: &OsStr, e: io::Error) -> io::Error {
    #[derive(Debug)]
    struct SpawnError {
        line: String,
        source: io::Error,
    }
    impl fmt::Display for SpawnError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.line)
        }
    }
    impl std::error::Error for SpawnError {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }
    let reason = e.to_string();
    let mut chars = reason.chars();
    let reason = match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => reason,
    };
    let line = format!("cannot spawn {program:?}: {reason}");
    io::Error::new(e.kind(), SpawnError { line, source: e })
}

/// Keeps the std command's configuration; its standard streams count as
/// not configured here (see [`Command::as_std_mut`]).
impl From<std::process::Command> for Command {
    fn from(inner: std::process::Command) -> Command {
        Command {
            inner,
            set: [false; 3],
        }
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}
