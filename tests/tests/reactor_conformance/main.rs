//! The reactor conformance kit, run against the reactor `ASYNC_REACTOR`
//! names: unset or `embedded` is `reactor-mio` linked statically; `mio` or
//! `uring` is `libreactor_<name>.so` from the target directory this binary
//! was built into; a value containing `/` or ending in `.so` is that file.
//!
//! `abi10`: an ABI 1.0 reactor (a C fixture) under this 1.1 kit and host.
//! `skew`: a reactor of the next minor and one of major 2 (C fixtures), and
//! the standalone kit (`reactor_kit`) on a reactor that aborts and hangs.

use std::path::{Path, PathBuf};

use tests::conformance::Reactor;

mod abi10;
mod skew;

/// The directory a plugin built alongside this test binary lands in:
/// `target/<profile>/` for a binary in `target/<profile>/deps/`.
pub(crate) fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("the binary has a directory");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().expect("deps has a parent").to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

fn reactor() -> Reactor {
    let value = std::env::var("ASYNC_REACTOR").unwrap_or_default();
    let loaded = match value.as_str() {
        // SAFETY: `plugin_desc` returns the plugin's static descriptor
        // (AA-R7).
        "" | "embedded" => unsafe { Reactor::from_desc(reactor_mio::plugin_desc()) },
        path if path.contains('/') || path.ends_with(".so") => Reactor::load(Path::new(path)),
        name @ ("mio" | "uring") => {
            let file = target_dir().join(format!("libreactor_{name}.so"));
            if !file.exists() {
                panic!(
                    "reactor \"{name}\": {} not found; build it with `cargo build -p reactor-{name}`",
                    file.display()
                );
            }
            Reactor::load(&file)
        }
        other => panic!(
            "ASYNC_REACTOR={other:?}: expected embedded, mio, uring or the path of a shared library"
        ),
    };
    loaded.unwrap_or_else(|e| panic!("{e}"))
}

tests::reactor_conformance_tests!(reactor());
