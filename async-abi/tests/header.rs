//! The committed C header is exactly what cbindgen generates from the crate.
//!
//! `AA_BLESS=1 cargo test -p async-abi --test header` (or `cargo xtask
//! gen-header`) rewrites it; otherwise any difference fails the test.

use std::path::PathBuf;

fn generate() -> String {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen failed to generate the header")
        .write(&mut out);
    String::from_utf8(out).expect("header is UTF-8")
}

#[test]
fn committed_header_matches_the_crate() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/async_abi.h");
    let fresh = generate();
    if std::env::var_os("AA_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write header");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/async_abi.h is stale: run `cargo xtask gen-header` and commit the result"
    );
}
