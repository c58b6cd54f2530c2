// Shared by the build scripts of the plugin crates that the host links
// statically (async-scheduler, reactor-mio, reactor-uring), through
// `include!`: the build id that the host compares with a plugin file's
// before loading it by name (ARCHITECTURE "Plugins, names and
// configuration").
//
// The id is `<package> <version> <debug|release> <digest>`, the digest an
// FNV-1a hash of every file under the given roots (the crate's own sources
// and those of the workspace crates it compiles in). The version alone
// would not do: every build of the workspace is 0.1.0, and a stale
// `libreactor_mio.so` from last week's sources is what the check is for.
// The profile is part of it because a debug plugin in a release program
// (or the reverse) was never meant to be loaded by name.

/// Prints `cargo::rustc-env=RUNTIME_BUILD_ID=<id>` and a
/// `cargo::rerun-if-changed` line per root (a directory is scanned whole).
/// `roots` are relative to the package directory.
fn emit_build_id(roots: &[&str]) {
    use std::path::{Path, PathBuf};

    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        if dir.is_file() {
            out.push(dir.to_path_buf());
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            files(&entry.path(), out);
        }
    }

    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo"));
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for root in roots {
        println!("cargo::rerun-if-changed={root}");
        let mut found = Vec::new();
        files(&manifest.join(root), &mut found);
        // Sorted, and hashed with the path relative to the package, so the
        // digest is the same wherever the sources are checked out.
        found.sort();
        for file in found {
            let rel = file.strip_prefix(&manifest).unwrap_or(&file);
            eat(rel.to_string_lossy().as_bytes());
            eat(&[0]);
            eat(&std::fs::read(&file).unwrap_or_default());
            eat(&[0]);
        }
    }
    let profile = if std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some() {
        "debug"
    } else {
        "release"
    };
    println!(
        "cargo::rustc-env=RUNTIME_BUILD_ID={} {} {profile} {hash:016x}",
        std::env::var("CARGO_PKG_NAME").expect("run by cargo"),
        std::env::var("CARGO_PKG_VERSION").expect("run by cargo"),
    );
}
