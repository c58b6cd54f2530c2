//! Scheduler options: parsing `AaSchedulerConfig::options` into [`Options`].
//!
//! | key | values | default |
//! |---|---|---|
//! | `engine` | `context`, `corosensei` | `context` (see the README benchmark) |
//! | `stack_size` | bytes, 16384 to 1073741824 (16k to 1024m), rounded up to the page size; `k`/`m` suffixes | 262144 (or `cfg.stack_size`) |
//! | `stack_pool` | warm stacks kept for reuse: idle fibers, parked and taken with no system call (fiber.rs F-I4); `pool_max` is its older name | 256 |
//! | `stack_prefault` | `auto`, `on`, `off`: whether a burst's next slabs get their guard pages and first stack pages from a helper thread (stack/prefault.rs); `auto` starts it only if, when a size class starts its 8th slab, the process has fewer schedulers than CPUs the loop may use | `auto` |
//! | `policy` | `fifo`, `chaos` (a seeded random pick among equals, `chaos.rs`) | `fifo` |
//! | `seed` | the chaos seed: an unsigned 64-bit integer, or `random` (from the clock, logged at debug level); ignored under `fifo` | 0 |
//! | `poll_gap_us` | microseconds, 0 to 1000000: after a fairness poll that ran no callback, the next is skipped until this long has passed (`tick.rs`, "Fairness"); 0 polls every 61st busy tick regardless; always 0 under `chaos`, whose replays depend on no clock | 50 |
//!
//! A key may also be written with the `scheduler.` prefix. A key with another
//! plugin's prefix (`uring.sq_entries`) is ignored, as the ABI asks. Any other
//! unknown key, or a bad value, fails `create` with one line naming the option
//! and what was expected: these texts are part of the interface and tests
//! assert them.

use crate::chaos::{Seed, DEFAULT_SEED};
use crate::run_queue::Policy;
use crate::stack::prefault;
use crate::switch::EngineKind;

/// The smallest usable stack a coroutine may ask for.
pub(crate) const MIN_STACK_SIZE: usize = 16 * 1024;

/// The default usable stack size.
pub(crate) const DEFAULT_STACK_SIZE: usize = 256 * 1024;

/// The largest usable stack a coroutine may ask for (1 GiB).
pub(crate) const MAX_STACK_SIZE: usize = 1 << 30;

/// The default number of warm stacks (idle fibers) kept in the pool. With
/// the default stack size the pool pins at most 256 x 256 KiB = 64 MiB of
/// stack pages, and about 4 MiB when coroutines touch 16 KiB of their
/// stacks. It was 1024, which kept 54 MB resident after 5,000 connections
/// closed; 64 kept less but made a loop with 500 coroutines alive refault
/// half its stacks every round (README, "Stack pool", has the table).
pub(crate) const DEFAULT_STACK_POOL: usize = 256;

/// The engine used when none is configured: the winner of the floating-point
/// round trip in `benches/engines.rs` (README, "Tests and benchmarks").
pub(crate) const DEFAULT_ENGINE: EngineKind = EngineKind::Context;

/// Validated scheduler options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Options {
    /// The stack-switching engine.
    pub(crate) engine: EngineKind,
    /// Default usable stack size in bytes, page-aligned.
    pub(crate) stack_size: usize,
    /// Maximum number of idle fibers (warm stacks) kept for reuse.
    pub(crate) stack_pool: usize,
    /// Whether stacks are prepared on a helper thread during bursts.
    pub(crate) stack_prefault: prefault::Mode,
    /// How the run queue picks the next coroutine.
    pub(crate) policy: Policy,
    /// The chaos policy's seed (unused under FIFO).
    pub(crate) seed: Seed,
    /// The least time between two idle fairness polls, in microseconds.
    pub(crate) poll_gap_us: u32,
}

/// The default `poll_gap_us`.
pub(crate) const DEFAULT_POLL_GAP_US: u32 = 50;

/// The largest `poll_gap_us` (one second).
pub(crate) const MAX_POLL_GAP_US: u32 = 1_000_000;

impl Default for Options {
    fn default() -> Options {
        Options {
            engine: DEFAULT_ENGINE,
            stack_size: DEFAULT_STACK_SIZE,
            stack_pool: DEFAULT_STACK_POOL,
            stack_prefault: prefault::Mode::Auto,
            policy: Policy::Fifo,
            seed: Seed::Fixed(DEFAULT_SEED),
            poll_gap_us: DEFAULT_POLL_GAP_US,
        }
    }
}

/// One option as the host gave it: UTF-8 key and value, or the raw key bytes
/// of an entry that is not UTF-8.
pub(crate) type RawOption<'a> = Result<(&'a str, &'a str), &'a [u8]>;

impl Options {
    /// Parses the options of a config.
    ///
    /// `cfg_stack_size` is `AaSchedulerConfig::stack_size` (0: the default);
    /// a `stack_size` option overrides it.
    ///
    /// # Errors
    ///
    /// One lowercase line naming the option at fault and what was expected.
    pub(crate) fn parse<'a>(
        cfg_stack_size: usize,
        options: impl IntoIterator<Item = RawOption<'a>>,
        page: usize,
    ) -> Result<Options, String> {
        let mut out = Options::default();
        if cfg_stack_size != 0 {
            out.stack_size = stack_size(cfg_stack_size, page).map_err(|e| {
                format!("invalid scheduler config stack_size={cfg_stack_size}: {e}")
            })?;
        }
        for option in options {
            let (key, value) = match option {
                Ok(kv) => kv,
                Err(key) => {
                    return Err(format!(
                        "invalid scheduler option \"{}\": not UTF-8",
                        String::from_utf8_lossy(key)
                    ))
                }
            };
            let bare = key.strip_prefix("scheduler.").unwrap_or(key);
            match bare {
                "engine" => {
                    out.engine = match value {
                        "context" => EngineKind::Context,
                        "corosensei" => EngineKind::Corosensei,
                        _ => return Err(invalid(key, value, "context or corosensei")),
                    }
                }
                "stack_size" => {
                    out.stack_size = parse_size(value)
                        .and_then(|n| stack_size(n, page))
                        .map_err(|e| format!("invalid scheduler option {key}=\"{value}\": {e}"))?
                }
                // `pool_max` is the older name, kept for existing configs.
                "stack_pool" | "pool_max" => {
                    out.stack_pool = value.trim().parse::<usize>().map_err(|_| {
                        invalid(key, value, "a number of warm stacks to keep (0 or more)")
                    })?
                }
                "stack_prefault" => {
                    out.stack_prefault = match value {
                        "auto" => prefault::Mode::Auto,
                        "on" => prefault::Mode::On,
                        "off" => prefault::Mode::Off,
                        _ => return Err(invalid(key, value, "auto, on or off")),
                    }
                }
                "policy" => {
                    out.policy = match value {
                        "fifo" => Policy::Fifo,
                        "chaos" => Policy::Chaos,
                        _ => return Err(invalid(key, value, "fifo or chaos")),
                    }
                }
                "seed" => {
                    out.seed =
                        match value {
                            "random" => Seed::Random,
                            _ => Seed::Fixed(value.parse::<u64>().map_err(|_| {
                                invalid(key, value, "an unsigned integer or random")
                            })?),
                        }
                }
                "poll_gap_us" => {
                    out.poll_gap_us = value
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|us| *us <= MAX_POLL_GAP_US)
                        .ok_or_else(|| invalid(key, value, "microseconds from 0 to 1000000"))?
                }
                // Another plugin's option (`uring.sq_entries`): not ours.
                _ if key.contains('.') && !key.starts_with("scheduler.") => {}
                _ => return Err(format!("unknown scheduler option \"{key}\"")),
            }
        }
        Ok(out)
    }
}

fn invalid(key: &str, value: &str, expected: &str) -> String {
    format!("invalid scheduler option {key}=\"{value}\": expected {expected}")
}

/// Why a stack size was refused. Its `Display` is the end of the one-line
/// error: what is wrong with the value, then the allowed range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SizeError {
    /// Not a number with an optional `k`/`m` suffix.
    Malformed,
    /// Below [`MIN_STACK_SIZE`] (the value in bytes).
    TooSmall(usize),
    /// Above [`MAX_STACK_SIZE`] (the value in bytes; `None` when it does not
    /// even fit in a `usize`).
    TooLarge(Option<usize>),
}

impl std::fmt::Display for SizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SizeError::Malformed => {
                f.write_str("expected a size in bytes (k and m suffixes allowed)")
            }
            SizeError::TooSmall(n) => write!(f, "{n} bytes is too small"),
            SizeError::TooLarge(Some(n)) => write!(f, "{n} bytes is too large"),
            SizeError::TooLarge(None) => f.write_str("too large"),
        }?;
        write!(
            f,
            "; a stack holds {MIN_STACK_SIZE} to {MAX_STACK_SIZE} bytes (16k to 1024m)"
        )
    }
}

/// Parses `262144`, `256k`, `256KiB`, `1m`, `1MiB` (binary multiples).
fn parse_size(text: &str) -> Result<usize, SizeError> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(digits);
    let unit: usize = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        _ => return Err(SizeError::Malformed),
    };
    if number.is_empty() {
        return Err(SizeError::Malformed);
    }
    // Only digits are left, so a parse failure is an overflow.
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or(SizeError::TooLarge(None))
}

/// A requested usable stack size, checked against [`MIN_STACK_SIZE`] and
/// [`MAX_STACK_SIZE`] and rounded up to the page size.
pub(crate) fn stack_size(requested: usize, page: usize) -> Result<usize, SizeError> {
    if requested < MIN_STACK_SIZE {
        return Err(SizeError::TooSmall(requested));
    }
    if requested > MAX_STACK_SIZE {
        return Err(SizeError::TooLarge(Some(requested)));
    }
    Ok(requested.div_ceil(page) * page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(kvs: &[(&str, &str)]) -> Result<Options, String> {
        Options::parse(0, kvs.iter().map(|&kv| Ok(kv)), 4096)
    }

    #[test]
    fn defaults_apply_without_options() {
        assert_eq!(parse(&[]), Ok(Options::default()));
    }

    #[test]
    fn stack_size_rounds_up_to_the_page_and_accepts_suffixes() {
        assert_eq!(parse(&[("stack_size", "20000")]).unwrap().stack_size, 20480);
        assert_eq!(parse(&[("stack_size", "64k")]).unwrap().stack_size, 65536);
        assert_eq!(
            parse(&[("scheduler.stack_size", "1MiB")])
                .unwrap()
                .stack_size,
            1 << 20
        );
    }

    #[test]
    fn stack_size_errors_name_the_value_and_the_allowed_range() {
        assert_eq!(
            parse(&[("stack_size", "12")]).unwrap_err(),
            "invalid scheduler option stack_size=\"12\": 12 bytes is too small; a stack holds \
             16384 to 1073741824 bytes (16k to 1024m)"
        );
        assert_eq!(
            parse(&[("stack_size", "2048m")]).unwrap_err(),
            "invalid scheduler option stack_size=\"2048m\": 2147483648 bytes is too large; a \
             stack holds 16384 to 1073741824 bytes (16k to 1024m)"
        );
        assert_eq!(
            parse(&[("stack_size", "99999999999999999999k")]).unwrap_err(),
            "invalid scheduler option stack_size=\"99999999999999999999k\": too large; a stack \
             holds 16384 to 1073741824 bytes (16k to 1024m)"
        );
        assert_eq!(
            parse(&[("stack_size", "1g")]).unwrap_err(),
            "invalid scheduler option stack_size=\"1g\": expected a size in bytes (k and m \
             suffixes allowed); a stack holds 16384 to 1073741824 bytes (16k to 1024m)"
        );
        assert_eq!(
            Options::parse(100, std::iter::empty(), 4096).unwrap_err(),
            "invalid scheduler config stack_size=100: 100 bytes is too small; a stack holds 16384 \
             to 1073741824 bytes (16k to 1024m)"
        );
        assert_eq!(
            Options::parse(MAX_STACK_SIZE + 1, std::iter::empty(), 4096).unwrap_err(),
            "invalid scheduler config stack_size=1073741825: 1073741825 bytes is too large; a \
             stack holds 16384 to 1073741824 bytes (16k to 1024m)"
        );
        // The range's suffix form is the constants' (MIN/MAX changed: fix the text).
        assert_eq!((MIN_STACK_SIZE >> 10, MAX_STACK_SIZE >> 20), (16, 1024));
        assert_eq!(
            parse(&[("stack_size", "1024m")]).unwrap().stack_size,
            MAX_STACK_SIZE
        );
        assert_eq!(
            parse(&[("stack_size", "16k")]).unwrap().stack_size,
            MIN_STACK_SIZE
        );
    }

    #[test]
    fn bad_values_name_the_option_and_what_was_expected() {
        assert_eq!(
            parse(&[("stack_pool", "-1")]).unwrap_err(),
            "invalid scheduler option stack_pool=\"-1\": expected a number of warm stacks to \
             keep (0 or more)"
        );
        assert_eq!(
            parse(&[("pool_max", "x")]).unwrap_err(),
            "invalid scheduler option pool_max=\"x\": expected a number of warm stacks to keep \
             (0 or more)"
        );
        assert_eq!(
            parse(&[("policy", "lifo")]).unwrap_err(),
            "invalid scheduler option policy=\"lifo\": expected fifo or chaos"
        );
        assert_eq!(
            parse(&[("seed", "-3")]).unwrap_err(),
            "invalid scheduler option seed=\"-3\": expected an unsigned integer or random"
        );
    }

    #[test]
    fn stack_pool_and_its_older_name_set_the_bound() {
        assert_eq!(Options::default().stack_pool, 256);
        assert_eq!(parse(&[("stack_pool", "0")]).unwrap().stack_pool, 0);
        assert_eq!(
            parse(&[("scheduler.stack_pool", "9")]).unwrap().stack_pool,
            9
        );
        assert_eq!(parse(&[("pool_max", "1024")]).unwrap().stack_pool, 1024);
    }

    #[test]
    fn policy_and_seed_parse() {
        let o = parse(&[("policy", "chaos"), ("seed", "18446744073709551615")]).unwrap();
        assert_eq!((o.policy, o.seed), (Policy::Chaos, Seed::Fixed(u64::MAX)));
        let o = parse(&[("scheduler.seed", "random"), ("policy", "chaos")]).unwrap();
        assert_eq!((o.policy, o.seed), (Policy::Chaos, Seed::Random));
        let o = parse(&[("policy", "chaos")]).unwrap();
        assert_eq!(o.seed, Seed::Fixed(DEFAULT_SEED));
        // A seed without chaos is accepted (one environment for every cell).
        assert_eq!(parse(&[("seed", "5")]).unwrap().policy, Policy::Fifo);
    }

    #[test]
    fn poll_gap_parses_microseconds_up_to_a_second() {
        assert_eq!(Options::default().poll_gap_us, 50);
        assert_eq!(parse(&[("poll_gap_us", "0")]).unwrap().poll_gap_us, 0);
        assert_eq!(
            parse(&[("scheduler.poll_gap_us", "1000000")])
                .unwrap()
                .poll_gap_us,
            1_000_000
        );
        for bad in ["1000001", "-1", "5ms"] {
            assert_eq!(
                parse(&[("poll_gap_us", bad)]).unwrap_err(),
                format!(
                    "invalid scheduler option poll_gap_us=\"{bad}\": expected microseconds \
                     from 0 to 1000000"
                )
            );
        }
    }

    #[test]
    fn other_plugins_options_are_ignored() {
        assert_eq!(
            parse(&[("uring.sq_entries", "256")]),
            Ok(Options::default())
        );
        assert_eq!(
            parse(&[("scheduler.bogus", "1")]).unwrap_err(),
            "unknown scheduler option \"scheduler.bogus\""
        );
    }
}
