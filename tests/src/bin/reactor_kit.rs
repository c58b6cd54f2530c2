//! `reactor_kit`: the reactor conformance kit as one program, for anyone
//! writing a reactor in any language.
//!
//! ```text
//! reactor_kit [--list] [--filter TEXT] [--jobs N] [--timeout SECS] path/to/libmyreactor.so
//! ```
//!
//! Each case runs in its own process (this program again, with `--case`),
//! so a reactor that aborts or crashes fails that case only and the run
//! still prints its summary: executed, passed, skipped (by the capability
//! that caused each skip) and failed (each with its reason). The built
//! binary (`target/debug/reactor_kit`, or `cargo xtask conformance`)
//! needs only the C library: copy it anywhere and run it, no Rust
//! toolchain needed. See `tests/README.md` and `tests::conformance::kit`.

fn main() -> std::process::ExitCode {
    tests::conformance::kit::main()
}
