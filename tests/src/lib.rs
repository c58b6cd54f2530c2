//! The integration suite's support library and the reactor conformance kit.
//!
//! - [`conformance`]: cases every reactor must pass, driven through the C ABI
//!   alone, so a third party can run them against a reactor written in C.
//! - [`support`]: helpers for the suite's test binaries (event recorders,
//!   child-process runners).
//!
//! Test bodies never name a backend: `cargo xtask test-matrix` runs the same
//! binaries once per scheduler x reactor cell, selected by `ASYNC_SCHEDULER`
//! and `ASYNC_REACTOR`.

pub mod conformance;
pub mod support;
