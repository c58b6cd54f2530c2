//! Makes the build id (`BUILD_ID`, `build-support/build_id.rs`) the host
//! compares with a plugin file's before loading it by name.

include!("../build-support/build_id.rs");

fn main() {
    emit_build_id(&[
        "build.rs",
        "Cargo.toml",
        "src",
        "../reactor-sdk/Cargo.toml",
        "../reactor-sdk/src",
        "../async-abi/Cargo.toml",
        "../async-abi/src",
        "../build-support",
    ]);
}
