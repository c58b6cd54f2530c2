//! Compile-time contracts (STYLE S22): process and pipe handles are bound
//! to the loop that drives them (`!Send`); `ExitStatus` and `Output` are
//! std's own types.

use async_std_api::io::{PipeReader, PipeWriter, Stderr, Stdin, Stdout};
use async_std_api::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// Resolves only if `T` is not `Send` (two candidate impls otherwise).
trait AmbiguousIfSend<A> {
    fn check() {}
}
impl<T: ?Sized> AmbiguousIfSend<()> for T {}
impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}

#[test]
fn process_and_pipe_handles_are_not_send() {
    <Child as AmbiguousIfSend<_>>::check();
    <ChildStdin as AmbiguousIfSend<_>>::check();
    <ChildStdout as AmbiguousIfSend<_>>::check();
    <ChildStderr as AmbiguousIfSend<_>>::check();
    <PipeReader as AmbiguousIfSend<_>>::check();
    <PipeWriter as AmbiguousIfSend<_>>::check();
    <Stdin as AmbiguousIfSend<_>>::check();
    <Stdout as AmbiguousIfSend<_>>::check();
    <Stderr as AmbiguousIfSend<_>>::check();
}

#[test]
fn exit_status_and_output_are_stds_types() {
    fn std_status(s: std::process::ExitStatus) -> async_std_api::process::ExitStatus {
        s
    }
    fn std_output(o: std::process::Output) -> async_std_api::process::Output {
        o
    }
    let _ = (std_status, std_output);
    // Command is a plain builder: usable (not spawnable) outside a runtime.
    let mut cmd = Command::new("true");
    cmd.arg("x");
    assert_eq!(format!("{cmd:?}"), "\"true\" \"x\"");
}
