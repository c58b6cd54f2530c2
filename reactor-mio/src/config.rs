//! `create` options: keys prefixed `mio.`; other plugins' keys are ignored.
//!
//! | key | value | default |
//! |---|---|---|
//! | `mio.events_capacity` | readiness events fetched per `epoll_wait`, 1..=65536 | 1024 |

use crate::error::{Error, Result};

/// The prefix of this reactor's option keys.
pub(crate) const PREFIX: &str = "mio.";

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
                "events_capacity" => {
                    config.events_capacity = match value.trim().parse::<usize>() {
                        Ok(n) if (1..=65536).contains(&n) => n,
                        _ => {
                            return Err(Error::invalid(format!(
                                "invalid value {value:?} for reactor option \"{key}\": expected an integer from 1 to 65536"
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
    fn events_capacity_is_read_and_other_prefixes_are_ignored() {
        let config = parse(&[("mio.events_capacity", "64"), ("uring.sq_entries", "8")]);
        assert_eq!(
            config,
            Ok(Config {
                events_capacity: 64
            })
        );
    }

    #[test]
    fn unknown_mio_key_is_refused_with_its_name() {
        let err = parse(&[("mio.foo", "1")]).unwrap_err();
        assert_eq!(err.status, async_abi::AA_E_INVALID);
        assert_eq!(err.message, "unknown reactor option \"mio.foo\"");
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
