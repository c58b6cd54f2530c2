//! Child processes whose waits and pipes suspend the calling coroutine:
//! [`Command`], [`Child`], [`Stdio`], [`ChildStdin`], [`ChildStdout`],
//! [`ChildStderr`], the analogues of `std::process`'s, with the same
//! methods. [`ExitStatus`] and [`Output`] are std's own types.
//!
//! ```
//! use std::io::{Read, Write};
//! use async_std_api::process::{Command, Stdio};
//! use async_std_api::{run, spawn};
//!
//! run(|| {
//!     let mut child = Command::new("cat")
//!         .stdin(Stdio::piped())
//!         .stdout(Stdio::piped())
//!         .spawn()
//!         .unwrap();
//!     let mut stdin = child.stdin.take().unwrap();
//!     // A coroutine feeds the child while this one reads its output.
//!     let feeder = spawn(move || stdin.write_all(b"through cat").unwrap());
//!     let mut out = String::new();
//!     child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
//!     feeder.join().unwrap();
//!     assert!(child.wait().unwrap().success());
//!     assert_eq!(out, "through cat");
//! })
//! .unwrap();
//! ```
//!
//! # How it works
//!
//! - **Spawning** is std's `Command::spawn` (`posix_spawn`, or `fork` and
//!   `exec`), which returns as soon as the program was executed; it does
//!   not wait for anything the child does, so it runs on the loop thread.
//! - **The exit** is watched by the reactor (`process_new`,
//!   `AA_CAP_PROCESS`; both built-in reactors watch a pidfd, Linux 5.3+):
//!   the reactor reaps the child when it exits and reports the status, and
//!   a coroutine in [`Child::wait`] sleeps until then. Each `Child` has
//!   one watch from its spawn until it is reaped, so a cancelled `wait`
//!   leaves no zombie: the child is reaped when it exits and the next
//!   `wait` returns its status (D-32).
//! - **Pipes** ([`Stdio::piped`]) are std's; our ends are made
//!   non-blocking (the child's end is a separate open file description, so
//!   the child sees no change) and read and written through the reactor's
//!   requests, like sockets. A pipe end handed to another child
//!   ([`Stdio::from`]) goes as a blocking duplicate.
//! - **Dropping a `Child`** neither kills nor waits for the process, as
//!   std documents; unlike std, the child is then reaped in the background
//!   when it exits (by one reaper thread sleeping in `poll(2)` over the
//!   orphans' pidfds), instead of staying a zombie until the program ends.
//!
//! # Backend differences
//!
//! - A reactor without `AA_CAP_PROCESS` (or a kernel without pidfds, where
//!   the built-in reactors refuse the watch) falls back to the blocking
//!   pool: a pool thread waits for the exit (`waitid(WNOWAIT)`) and the
//!   loop thread reaps (so `kill` can never reach a recycled pid). A
//!   cancelled wait still leaves the child waitable, but an exited child
//!   whose wait was cancelled is reaped only by the next `wait`,
//!   `try_wait` or the drop, not in the background. Each such wait holds a
//!   pool thread while the child runs. A reactor with
//!   neither the process watch nor `AA_CAP_TRIGGER` makes a wait fail with
//!   [`Unsupported`](std::io::ErrorKind::Unsupported), naming the reactor.
//! - Pipes need the reactor's I/O requests (`AA_CAP_IO`), as sockets do.
//! - Through the reactor's watch an [`ExitStatus`] carries the exit code or
//!   the signal, but not the core-dump flag (the ABI reports only those):
//!   `ExitStatusExt::core_dumped` is false.

mod child;
mod command;
mod orphan;
mod pipes;

pub use child::Child;
pub use command::{Command, Stdio};
pub use pipes::{ChildStderr, ChildStdin, ChildStdout};
pub use std::process::{ExitStatus, Output};
