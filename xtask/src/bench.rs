//! `cargo xtask bench`: the benchmark harness, side by side with peers.
//!
//! Builds the plugins in release mode (so the dynamic cells measure optimized
//! code) and runs the `bench` binary of the `tests` crate with the `peers`
//! feature, which is the only place tokio, may, monoio and the raw switching
//! crates are compiled: they never slow the test matrix.

use crate::cmd::{cargo, run_inherit};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let plugins = crate::arch::cdylib_packages()?;
    let mut build = cargo();
    build.args(["build", "--release"]);
    for p in &plugins {
        build.args(["-p", p]);
    }
    run_inherit(build, "cargo build --release (plugins)")?;
    let mut cmd = cargo();
    cmd.args([
        "run",
        "--release",
        "-p",
        "tests",
        "--features",
        "peers",
        "--bin",
        "bench",
        "--",
    ]);
    cmd.args(args);
    run_inherit(cmd, "the benchmark harness")
}
