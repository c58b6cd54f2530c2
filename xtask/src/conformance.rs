//! The C reactor's build (`reactor-c/`, with the system C compiler), used by
//! `cargo xtask test-matrix` for its C reactor cell.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd::{cargo, root, run_capture};

/// The C sources of `reactor-c`, in the order its Makefile lists them.
const C_SOURCES: [&str; 4] = ["src/plugin.c", "src/loop.c", "src/io.c", "src/signal.c"];

/// The cargo target directory (`cargo metadata`'s `target_directory`).
pub(crate) fn target_dir() -> Result<PathBuf, String> {
    let mut cmd = cargo();
    cmd.args(["metadata", "--format-version", "1", "--no-deps"]);
    let out = run_capture(cmd, "cargo metadata")?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cannot parse cargo metadata: {e}"))?;
    meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata has no target_directory".to_owned())
}

/// Builds `reactor-c` into `<target>/debug/libreactor_c.so` with `$CC` (or
/// `cc`), warnings as errors, exactly as its Makefile does; returns the path.
pub(crate) fn build_c_reactor() -> Result<PathBuf, String> {
    let dir = target_dir()?.join("debug");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let out = dir.join("libreactor_c.so");
    // Built under a temporary name, then renamed: a test loading the old
    // library meanwhile never sees half a file.
    let tmp = dir.join(format!("libreactor_c.{}.tmp.so", std::process::id()));
    let src = root().join("reactor-c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(&cc);
    cmd.current_dir(&src)
        .args(["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"])
        .args(["-O2", "-g", "-fPIC", "-shared", "-fvisibility=hidden"])
        .arg("-I")
        .arg(root().join("async-abi/include"))
        .arg("-o")
        .arg(&tmp)
        .args(C_SOURCES)
        .arg("-lpthread");
    eprintln!("xtask: building reactor-c with {cc}");
    let built = run_capture(cmd, &format!("{cc} (reactor-c)"))?;
    if !built.status.success() {
        return Err(format!(
            "{cc} failed to build reactor-c:\n{}",
            String::from_utf8_lossy(&built.stderr)
        ));
    }
    rename(&tmp, &out)?;
    Ok(out)
}

fn rename(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::rename(from, to)
        .map_err(|e| format!("cannot move {} to {}: {e}", from.display(), to.display()))
}
