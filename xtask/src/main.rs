//! Workspace automation, run as `cargo xtask <command>`.
//!
//! - `test-matrix`: builds the plugin cdylibs, runs every crate's own tests
//!   once, then runs the `tests` suite once per scheduler x reactor cell and
//!   prints a table; exits non-zero if anything failed.
//! - `gen-header [--check]`: regenerates (or checks) `async-abi/include/async_abi.h`.
//! - `check-arch [--bless]`: the dependency rule (plugins depend only on
//!   `async-abi`), the inventory of files containing `unsafe`, and the
//!   host's layers (the core, the structured layer and the surfaces import
//!   only downwards).
//! - `bench`: the benchmark harness, side by side with peers.
//! - `chaos --seeds N [--start S]`: the suite under the chaos scheduler once
//!   per seed, and a table of failing seeds with the command that reproduces
//!   each failure.
//! - `conformance [LIBRARY.so] [KIT OPTIONS]`: builds the standalone
//!   reactor conformance kit and runs it on a library, or on every reactor
//!   of the workspace.
//! - `check-abi-rules [--bless]`: every rule id of `docs/abi/` is checked
//!   by a conformance case that cites it, and every id a case cites is
//!   defined; every rule has its anchor and minor, the kit's copy of the
//!   rules matches (`--bless` rewrites it), and every assertion of a tier
//!   names a defined rule.
//! - `check-semantics`: rule ids cited are defined in `docs/semantics.md` and
//!   checked by tests; no path points outside the repository.
//! - `memcheck`: a representative part of the suite under valgrind.
//! - `soak --secs N`: the echo server under steady load: requests/s,
//!   errors, the RSS trend, then a graceful stop on SIGINT.
//! - `check-dependent`: a scratch program depending on the runtime, built
//!   into one target directory with the runtime's plugin libraries (in both
//!   orders), runs every built-in name.

use std::process::ExitCode;

mod abi_rules;
mod arch;
mod bench;
mod bench_report;
mod chaos;
mod cmd;
mod conformance;
mod dependent;
mod header;
mod layers;
mod matrix;
mod memcheck;
mod semantics;
mod soak;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  test-matrix [--cell TEXT] [--no-unit]   run the suite once per scheduler x reactor cell
  gen-header [--check]                    regenerate or check async-abi/include/async_abi.h
  check-arch [--bless]                    dependency rule, unsafe-code inventory, host layers
  bench [ARGS...]                         benchmarks side by side with peers (release build)
  chaos --seeds N [--start S]             the suite under the chaos scheduler, seeds S..S+N (S = 1)
  conformance [LIB.so] [KIT OPTIONS]      build the reactor kit, run it on LIB (or every reactor)
  check-abi-rules [--bless]               docs/abi rules (anchors, minors) and kit cases and assertions cite each other
  check-semantics                         rule ids defined in docs/semantics.md and tested
  memcheck                                part of the suite under valgrind: 0 errors, 0 leaks
  soak --secs N [--reactor R] [--conns C] the echo server under load: requests/s, errors, RSS
  check-dependent                         a program depending on the runtime, beside its plugins
";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest: Vec<String> = args.collect();
    if let Err(message) = cmd::find_root() {
        eprintln!("xtask: {message}");
        return ExitCode::FAILURE;
    }
    let result = match command.as_str() {
        "test-matrix" => matrix::run(&rest),
        "gen-header" => header::run(&rest),
        "check-arch" => arch::run(&rest),
        "bench" => bench::run(&rest),
        "chaos" => chaos::run(&rest),
        "check-semantics" => semantics::run(&rest),
        "conformance" => conformance::run(&rest),
        "check-abi-rules" => abi_rules::run(&rest),
        "memcheck" => memcheck::run(&rest),
        "soak" => soak::run(&rest),
        "check-dependent" => dependent::run(&rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(format!("unknown command \"{other}\"\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
