//! Running cargo and other commands from the workspace root.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The workspace root (the parent of this crate's directory).
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// The cargo that runs us, so toolchain overrides carry through.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// Runs a command with inherited output; fails with a line naming it.
pub(crate) fn run_inherit(mut cmd: Command, what: &str) -> Result<(), String> {
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Runs a command and captures its output, whatever its exit status.
pub(crate) fn run_capture(mut cmd: Command, what: &str) -> Result<Output, String> {
    cmd.stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))
}

/// Whether `cargo nextest` is installed.
pub(crate) fn have_nextest() -> bool {
    let mut cmd = cargo();
    cmd.args(["nextest", "--version"]);
    matches!(run_capture(cmd, "cargo nextest --version"), Ok(out) if out.status.success())
}
