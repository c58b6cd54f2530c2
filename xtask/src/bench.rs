//! `cargo xtask bench`: the benchmark harness, side by side with peers.
//!
//! Builds the plugins in release mode (so the dynamic cells measure optimized
//! code) and runs the `bench` binary of the `tests` crate with the `peers`
//! feature, which is the only place tokio, may, monoio and the raw switching
//! crates are compiled: they never slow the test matrix. The harness is
//! built without the C library hooks; the `hooks` scenario runs
//! `async-std-api`'s `std_echo` example, built with them, as a server
//! process of its own.

use crate::cmd::{cargo, run_inherit};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    // `--no-report`: measure and print, leave docs/bench/ as it is.
    let report = !args.iter().any(|a| a == "--no-report");
    let args: Vec<String> = args
        .iter()
        .filter(|a| *a != "--no-report" && *a != "--")
        .cloned()
        .collect();
    let listing = args.iter().any(|a| a == "--list" || a == "--profile");
    let plugins = crate::arch::cdylib_packages()?;
    let mut build = cargo();
    build.args(["build", "--release"]);
    for p in &plugins {
        build.args(["-p", p]);
    }
    run_inherit(build, "cargo build --release (plugins)")?;
    // The std echo server through the hooks (the `hooks` scenario), built
    // apart: the harness itself is built without hooks, so no peer's system
    // calls pass through one.
    let mut hooked = cargo();
    hooked.args([
        "build",
        "--release",
        "-p",
        "async-std-api",
        "--features",
        "hooks",
        "--example",
        "std_echo",
    ]);
    run_inherit(hooked, "cargo build --release (the hooks' std echo server)")?;
    let mut cmd = cargo();
    cmd.args([
        "run",
        "--release",
        "-p",
        "tests",
        "--no-default-features",
        "--features",
        "peers",
        "--bin",
        "bench",
        "--",
    ]);
    cmd.args(&args);
    // The rows that say "loaded as a plugin" measure the release plugin
    // files just built: a built-in name runs the statically linked copy
    // unless its library is on ASYNC_PLUGIN_PATH.
    cmd.env(
        "ASYNC_PLUGIN_PATH",
        crate::conformance::target_dir()?.join("release"),
    );
    if !report || listing {
        return run_inherit(cmd, "the benchmark harness");
    }
    let fresh = crate::conformance::target_dir()?.join("bench-results.json");
    let _ = std::fs::remove_file(&fresh);
    cmd.arg("--json").arg(&fresh);
    run_inherit(cmd, "the benchmark harness")?;
    let mut command = String::from("cargo xtask bench");
    if !args.is_empty() {
        command.push_str(" -- ");
        command.push_str(&args.join(" "));
    }
    crate::bench_report::update(&fresh, &command)
}
