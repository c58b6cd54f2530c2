//! Running cargo and other commands from the workspace root.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The workspace root, found when xtask starts ([`find_root`]).
static ROOT: OnceLock<PathBuf> = OnceLock::new();

/// The workspace root. [`find_root`] has run first (`main` calls it), so
/// this never fails; the fallback only serves unit tests.
pub(crate) fn root() -> PathBuf {
    ROOT.get_or_init(|| {
        find_root().unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
    })
    .clone()
}

/// Finds the workspace at run time, never from the path compiled in: two
/// checkouts sharing one target directory run one xtask binary, and the
/// path compiled into it may name the other checkout, or a deleted one.
///
/// `cargo xtask` (`cargo run -p xtask`) sets `CARGO_MANIFEST_DIR` to this
/// crate's directory in the checkout it runs from; its parent is the
/// workspace. Run directly (`target/debug/xtask`), the workspace is the one
/// `cargo locate-project --workspace` finds from the current directory.
pub(crate) fn find_root() -> Result<PathBuf, String> {
    if let Some(root) = ROOT.get() {
        return Ok(root.clone());
    }
    let root = match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(dir) => root_from_manifest_dir(Path::new(&dir))?,
        None => locate_workspace()?,
    };
    Ok(ROOT.get_or_init(|| root).clone())
}

/// The workspace root given xtask's own manifest directory.
fn root_from_manifest_dir(dir: &Path) -> Result<PathBuf, String> {
    let root = dir.parent().ok_or_else(|| {
        format!(
            "cannot find the workspace: CARGO_MANIFEST_DIR \"{}\" has no parent",
            dir.display()
        )
    })?;
    if root.join("Cargo.toml").is_file() && root.join("xtask").is_dir() {
        Ok(root.to_path_buf())
    } else {
        Err(format!(
            "cannot find the workspace: CARGO_MANIFEST_DIR is \"{}\", whose parent has no Cargo.toml and xtask/ (run it as `cargo xtask` from inside the checkout)",
            dir.display()
        ))
    }
}

/// `cargo locate-project --workspace` from the current directory.
fn locate_workspace() -> Result<PathBuf, String> {
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot find the workspace: cannot run cargo locate-project: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cannot find the workspace from {}: {} (run it as `cargo xtask` from inside the checkout)",
            std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let root = manifest
        .parent()
        .ok_or("cannot find the workspace: cargo locate-project printed no path")?;
    root_from_manifest_dir(&root.join("xtask"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_parent_of_the_manifest_dir_given_at_run_time() {
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let root = root_from_manifest_dir(&here).unwrap();
        assert_eq!(root, here.parent().unwrap());
    }

    #[test]
    fn a_manifest_dir_outside_a_workspace_is_refused_in_one_line() {
        let dir = std::env::temp_dir().join("xtask-no-workspace/xtask");
        let err = root_from_manifest_dir(&dir).unwrap_err();
        assert!(
            err.starts_with("cannot find the workspace: CARGO_MANIFEST_DIR is"),
            "{err}"
        );
        assert!(err.contains("xtask-no-workspace"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}
