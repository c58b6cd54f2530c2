//! `create` options: keys prefixed `uring.`; other plugins' keys are
//! ignored.
//!
//! | key | value | default |
//! |---|---|---|
//! | `uring.sq_entries` | submission queue entries, 1..=32768 (the kernel rounds up to a power of two; the completion queue is twice as large) | 256 |

use crate::error::{Error, Result};

/// The prefix of this reactor's option keys.
pub(crate) const PREFIX: &str = "uring.";

/// The largest submission queue the kernel accepts (`IORING_MAX_ENTRIES`).
const MAX_SQ_ENTRIES: u32 = 32768;

/// Resolved options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    /// Submission queue entries asked of `io_uring_setup`.
    pub(crate) sq_entries: u32,
    /// Behave as on an older kernel (no option sets it: the crate's own
    /// tests do, to run the fallbacks on a kernel that has everything): no
    /// cancel by descriptor, no multishot watches, and reads and writes
    /// that cannot wait inside the kernel (`RWF_NOWAIT`, `MSG_DONTWAIT`), so
    /// they answer `EAGAIN` as `O_NONBLOCK` files did before `FMODE_NOWAIT`.
    pub(crate) old_kernel: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sq_entries: 256,
            old_kernel: false,
        }
    }
}

impl Config {
    /// Reads `(key, value)` pairs; `Err(key bytes)` is an entry that is not
    /// UTF-8.
    pub(crate) fn from_options<'a>(
        options: impl IntoIterator<Item = std::result::Result<(&'a str, &'a str), &'a [u8]>>,
    ) -> Result<Config> {
        let mut config = Config::default();
        for option in options {
            let (key, value) = match option {
                Ok(pair) => pair,
                Err(key) => {
                    return Err(Error::invalid(format!(
                        "reactor option {:?} is not utf-8",
                        String::from_utf8_lossy(key)
                    )))
                }
            };
            let Some(name) = key.strip_prefix(PREFIX) else {
                continue;
            };
            match name {
                "sq_entries" => {
                    config.sq_entries = match value.trim().parse::<u32>() {
                        Ok(n) if (1..=MAX_SQ_ENTRIES).contains(&n) => n,
                        _ => {
                            return Err(Error::invalid(format!(
                                "invalid value {value:?} for reactor option \"{key}\": expected an integer from 1 to {MAX_SQ_ENTRIES}"
                            )))
                        }
                    }
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "unknown reactor option \"{key}\""
                    )))
                }
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&'static str, &'static str)]) -> Result<Config> {
        Config::from_options(pairs.iter().map(|&(k, v)| Ok((k, v))))
    }

    #[test]
    fn sq_entries_is_read_and_other_prefixes_are_ignored() {
        let config = parse(&[("uring.sq_entries", "8"), ("mio.events_capacity", "64")]);
        assert_eq!(
            config.map(|c| c.sq_entries),
            Ok(8),
            "and other prefixes are ignored"
        );
        assert_eq!(parse(&[]), Ok(Config::default()));
    }

    #[test]
    fn unknown_uring_key_is_refused_with_its_name() {
        let err = parse(&[("uring.foo", "1")]).unwrap_err();
        assert_eq!(err.status, async_abi::AA_E_INVALID);
        assert_eq!(err.message, "unknown reactor option \"uring.foo\"");
    }

    #[test]
    fn bad_sq_entries_is_refused_with_the_value() {
        for bad in ["0", "32769", "many", "-1"] {
            let err = parse(&[("uring.sq_entries", bad)]).unwrap_err();
            assert_eq!(
                err.message,
                format!(
                    "invalid value {bad:?} for reactor option \"uring.sq_entries\": expected an integer from 1 to 32768"
                )
            );
        }
    }
}
