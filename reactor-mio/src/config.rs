//! `create` options.
//!
//! | key | value | default |
//! |---|---|---|
//! | `mio.events_capacity` | readiness events fetched per `epoll_wait`, 1..=65536 | 1024 |
//!
//! The key rules are the ABI's (docs/abi/reactor-guide.md, "Options"),
//! applied by the kit (`reactor_sdk::options`), the same in reactor-uring: a key is `mio.<option>`; an unknown `mio.` key and
//! a key without a prefix (no dot, or an empty prefix) fail `create` with
//! one line that names the key and lists the known ones; a key with another
//! plugin's prefix (`uring.sq_entries`) is ignored, so one list of options
//! serves `ASYNC_REACTOR=auto`, which tries uring and then this reactor. An
//! unprefixed key is refused rather than ignored because no reactor would
//! ever read it: accepting it silently hid mistakes such as
//! `events_capacity=64`.

use crate::error::{Error, Result};

/// The prefix of this reactor's option keys, without its dot.
const PREFIX: &str = "mio";

/// Every key this reactor reads, for the message refusing an unknown one.
/// `from_options` matches the same names (a unit test checks both agree).
const KNOWN: &[&str] = &["mio.events_capacity"];

/// Resolved options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    /// Capacity of the `mio::Events` buffer.
    pub(crate) events_capacity: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            events_capacity: 1024,
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
        reactor_sdk::options::read(PREFIX, KNOWN, options, |name, key, value| match name {
            "events_capacity" => {
                config.events_capacity = match value.trim().parse::<usize>() {
                        Ok(n) if (1..=65536).contains(&n) => n,
                        _ => {
                            return Err(Error::invalid(format!(
                                "invalid value {value:?} for reactor option \"{key}\": expected an integer from 1 to 65536"
                            )))
                        }
                    };
                Ok(true)
            }
            _ => Ok(false),
        })?;
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
    fn events_capacity_is_read_and_other_prefixes_are_ignored() {
        let config = parse(&[
            ("mio.events_capacity", "64"),
            ("uring.sq_entries", "8"),
            ("uring.x", "1"),
        ]);
        assert_eq!(
            config,
            Ok(Config {
                events_capacity: 64
            })
        );
        assert_eq!(parse(&[]), Ok(Config::default()));
    }

    #[test]
    fn unknown_mio_key_is_refused_with_its_name_and_the_known_keys() {
        let err = parse(&[("mio.foo", "1")]).unwrap_err();
        assert_eq!(err.status, async_abi::AA_E_INVALID);
        assert_eq!(
            err.message,
            "unknown reactor option \"mio.foo\" (known: mio.events_capacity)"
        );
        let err = parse(&[("mio.", "1")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \"mio.\" (known: mio.events_capacity)"
        );
    }

    #[test]
    fn unprefixed_key_is_refused_with_how_to_write_it() {
        let err = parse(&[("foo", "1")]).unwrap_err();
        assert_eq!(err.status, async_abi::AA_E_INVALID);
        assert_eq!(
            err.message,
            "unknown reactor option \"foo\": reactor options are written mio.<option> (known: mio.events_capacity)"
        );
        // The usual mistake: the option's name without its prefix.
        let err = parse(&[("events_capacity", "64")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \"events_capacity\": reactor options are written mio.<option> (known: mio.events_capacity)"
        );
    }

    #[test]
    fn empty_prefix_is_unprefixed_not_foreign() {
        // `.events_capacity` names no plugin, so no plugin would read it.
        let err = parse(&[(".events_capacity", "64")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \".events_capacity\": reactor options are written mio.<option> (known: mio.events_capacity)"
        );
    }

    #[test]
    fn a_key_is_shown_escaped_so_the_message_stays_one_line() {
        let err = parse(&[("a\nb", "1")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \"a\\nb\": reactor options are written mio.<option> (known: mio.events_capacity)"
        );
    }

    #[test]
    fn every_known_key_is_read() {
        for key in KNOWN {
            assert!(parse(&[(*key, "1")]).is_ok(), "{key} is listed but refused");
        }
    }

    #[test]
    fn bad_events_capacity_is_refused_with_the_value() {
        let err = parse(&[("mio.events_capacity", "0")]).unwrap_err();
        assert_eq!(
            err.message,
            "invalid value \"0\" for reactor option \"mio.events_capacity\": expected an integer from 1 to 65536"
        );
    }
}
