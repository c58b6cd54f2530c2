//! Sets `cfg(asan)` when the crate is built with AddressSanitizer
//! (`RUSTFLAGS=-Zsanitizer=address` on nightly), so the `context` engine
//! tells ASan about its stack switches (`switch/context.rs`), and makes the
//! build id (`BUILD_ID`, `build-support/build_id.rs`).
//!
//! Why not `#[cfg(sanitize = "address")]` in the source: that cfg is
//! unstable, and naming it is an error on a stable compiler (E0658), even
//! where it would be false. Cargo hands the target's cfgs to build scripts,
//! so `CARGO_CFG_SANITIZE` says the same thing on every toolchain.

include!("../build-support/build_id.rs");

fn main() {
    println!("cargo::rustc-check-cfg=cfg(asan)");
    println!("cargo::rerun-if-changed=build.rs");
    let sanitizers = std::env::var("CARGO_CFG_SANITIZE").unwrap_or_default();
    if sanitizers.split(',').any(|s| s == "address") {
        println!("cargo::rustc-cfg=asan");
    }
    emit_build_id(&[
        "build.rs",
        "Cargo.toml",
        "src",
        "../async-abi/Cargo.toml",
        "../async-abi/src",
        "../build-support",
    ]);
}
