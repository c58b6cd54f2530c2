//! The C reactor's build (`reactor-c/`, with the system C compiler), used by
//! `cargo xtask test-matrix` for its C reactor cell, and `cargo xtask
//! conformance [LIBRARY.so] [KIT OPTIONS]`: builds the standalone kit
//! (`reactor_kit`, from `tests/src/bin/`) and runs it on the library given,
//! or, with none, on every reactor of the workspace as the matrix builds
//! them (the cdylib plugins that are reactors, and `reactor-c`, built as
//! the ABI 1.1 plugin it is against the frozen 1.1 header, and as an ABI
//! 1.0 plugin against the frozen 1.0 header). Options
//! other than a library (`--jobs 2`, `--filter timers`) go to the kit.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd::{cargo, root, run_capture, run_inherit};

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

/// The frozen copy of the last ABI 1.0 header (commit a77ff1a, the last
/// whose `AA_ABI_MINOR` was 0), against which the 1.0 build of `reactor-c`
/// compiles.
const FROZEN_1_0_INCLUDE: &str = "async-abi/include/frozen/1.0";

/// The frozen copy of the last ABI 1.1 header (commit 5c01df1, the last
/// whose `AA_ABI_MINOR` was 1), against which `reactor-c`, a 1.1 plugin,
/// compiles.
const FROZEN_1_1_INCLUDE: &str = "async-abi/include/frozen/1.1";

/// Builds `reactor-c` into `<target>/debug/libreactor_c.so` with `$CC` (or
/// `cc`), warnings as errors, as its Makefile does (`make
/// ABI_INCLUDE=../async-abi/include/frozen/1.1`); returns the path. It
/// implements ABI 1.1 and is built against the frozen 1.1 header: the real
/// 1.1 binary the matrix keeps, which must pass every later 1.x kit and
/// the suite.
pub(crate) fn build_c_reactor() -> Result<PathBuf, String> {
    build_c("libreactor_c.so", FROZEN_1_1_INCLUDE, None)
}

/// Builds `reactor-c` as an ABI 1.0 plugin into
/// `<target>/debug/libreactor_c_abi1_0.so`: against the frozen 1.0 header,
/// with its minor pinned at 0 (`-DAA_IMPLEMENTS_MINOR=0`, as `make MINOR=0
/// ABI_INCLUDE=../async-abi/include/frozen/1.0` does). A real 1.0 binary
/// (1.0 vtable and op sizes, minor 0 in its descriptor and vtable) kept in
/// the matrix: it must pass every later 1.x kit and the suite.
pub(crate) fn build_c_reactor_1_0() -> Result<PathBuf, String> {
    build_c("libreactor_c_abi1_0.so", FROZEN_1_0_INCLUDE, Some(0))
}

fn build_c(name: &str, include: &str, minor: Option<u16>) -> Result<PathBuf, String> {
    let dir = target_dir()?.join("debug");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let out = dir.join(name);
    // Built under a temporary name, then renamed: a test loading the old
    // library meanwhile never sees half a file.
    let tmp = dir.join(format!("{name}.{}.tmp.so", std::process::id()));
    let src = root().join("reactor-c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(&cc);
    cmd.current_dir(&src)
        .args(["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"])
        .args(["-O2", "-g", "-fPIC", "-shared", "-fvisibility=hidden"]);
    if let Some(minor) = minor {
        cmd.arg(format!("-DAA_IMPLEMENTS_MINOR={minor}"));
    }
    cmd.arg("-I")
        .arg(root().join(include))
        .arg("-o")
        .arg(&tmp)
        .args(C_SOURCES)
        .arg("-lpthread");
    eprintln!("xtask: building reactor-c ({name}, header {include}) with {cc}");
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

/// `cargo xtask conformance [LIBRARY.so] [KIT OPTIONS]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut libraries = Vec::new();
    let mut kit_args = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg.starts_with('-') {
            kit_args.push(arg.clone());
            // The kit's options that take a value.
            if matches!(
                arg.as_str(),
                "--filter" | "--jobs" | "-j" | "--timeout" | "--case"
            ) {
                kit_args.push(it.next().ok_or(format!("{arg} needs a value"))?.clone());
            }
        } else {
            libraries.push(PathBuf::from(arg));
        }
    }
    let mut build = cargo();
    build.args(["build", "-p", "tests", "--bin", "reactor_kit"]);
    // Help, a listing or a bad option: the kit answers once, with no reactor.
    let no_run = ["--help", "-h", "--list"];
    if kit_args.iter().any(|a| no_run.contains(&a.as_str()))
        || kit_args.iter().any(|a| {
            a.starts_with('-')
                && !matches!(
                    a.as_str(),
                    "--filter" | "--jobs" | "-j" | "--timeout" | "--case" | "--verbose" | "-v"
                )
        })
    {
        run_inherit(build, "cargo build (the kit)")?;
        let kit = target_dir()?.join("debug").join("reactor_kit");
        let mut cmd = Command::new(&kit);
        cmd.args(&kit_args);
        return run_inherit(cmd, "the kit");
    }
    if libraries.is_empty() {
        // The workspace's reactors, built as test-matrix builds them.
        let reactors: Vec<String> = crate::arch::cdylib_packages()?
            .into_iter()
            .filter(|p| p.starts_with("reactor-"))
            .collect();
        run_inherit(build, "cargo build (the kit)")?;
        // Their own command: `--bin reactor_kit` above would select only
        // that binary in every package given, and no library would be built.
        let mut build = cargo();
        build.arg("build");
        for p in &reactors {
            build.args(["-p", p]);
        }
        run_inherit(build, "cargo build (the reactors)")?;
        let dir = target_dir()?.join("debug");
        for p in &reactors {
            // `reactor-mio-cdylib` builds `libreactor_mio.so` (its lib name
            // is the plugin crate's); `reactor-example` and `reactor-poll` are
            // their own cdylibs.
            let stem = p.trim_end_matches("-cdylib").replace('-', "_");
            libraries.push(dir.join(format!("lib{stem}.so")));
        }
        libraries.push(build_c_reactor()?);
        libraries.push(build_c_reactor_1_0()?);
    } else {
        run_inherit(build, "cargo build (the kit)")?;
    }
    let kit = target_dir()?.join("debug").join("reactor_kit");
    let mut failing = Vec::new();
    for lib in &libraries {
        eprintln!("xtask: {} {}", kit.display(), lib.display());
        let mut cmd = Command::new(&kit);
        cmd.args(&kit_args).arg(lib);
        if let Err(e) = run_inherit(cmd, &format!("the kit on {}", lib.display())) {
            failing.push(e);
        }
    }
    eprintln!(
        "xtask: the kit is {}: it needs only the C library, so it can be copied and run alone \
         (reactor_kit --help)",
        kit.display()
    );
    if failing.is_empty() {
        Ok(())
    } else {
        Err(failing.join("; "))
    }
}
