//! Configuration and loading errors, each in a child process: the exact one
//! line on stderr (`Error: <line>`), exit status 1, no panic text, and no
//! user code run before the error; where the built-in names' plugin files
//! are looked for, and the notice that names them.

mod config_load;
mod config_plugin_faults;
mod config_plugins;
mod config_sources;

pub(crate) const PROBE: &str = env!("CARGO_BIN_EXE_runtime_probe");

/// A scratch directory for this test binary's files.
pub(crate) fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("config-tests")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
