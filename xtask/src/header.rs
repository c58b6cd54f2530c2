//! `cargo xtask gen-header [--check]`.
//!
//! The generator lives in `async-abi/tests/header.rs` (cbindgen as a
//! dev-dependency), so the same code writes the header and checks it.

use crate::cmd::{cargo, run_inherit};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask gen-header [--check]".into()),
    };
    let mut cmd = cargo();
    cmd.args(["test", "-q", "-p", "async-abi", "--test", "header"]);
    if !check {
        cmd.env("AA_BLESS", "1");
    }
    run_inherit(
        cmd,
        if check {
            "header check (async-abi/include/async_abi.h is stale: run `cargo xtask gen-header`)"
        } else {
            "header generation"
        },
    )?;
    if !check {
        eprintln!("xtask: wrote async-abi/include/async_abi.h");
    }
    Ok(())
}
