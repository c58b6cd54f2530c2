//! `create` options.
//!
//! | key | value | default |
//! |---|---|---|
//! | `uring.sq_entries` | submission queue entries, 1..=32768 (the kernel rounds up to a power of two; the completion queue is twice as large) | 256 |
//! | `uring.single_issuer` | `on`/`off`: `IORING_SETUP_SINGLE_ISSUER` (only the loop thread submits; dropped on a kernel that refuses it) | on |
//! | `uring.defer_taskrun` | `on`/`off`: `IORING_SETUP_DEFER_TASKRUN` (completions posted only when the loop enters the ring; needs `single_issuer`; dropped on a kernel that refuses it) | on |
//! | `uring.multishot_recv` | `on`/`off`: one multishot `RECV` per stream socket from a provided-buffer ring; received bytes wait in the reactor (at most 64 KiB per socket) for the next `AA_IO_READ` | off |
//! | `uring.multishot_accept` | `on`/`off`: one multishot `ACCEPT` per listener; connections accepted ahead wait in the reactor for the next `AA_IO_ACCEPT` | off |
//! | `uring.inline_streams` | `on`/`off`: a stream socket's read or write the host allows inline (`AA_IO_TRY_INLINE`) is first made as a non-blocking system call, and the instance has `AA_CAP_IO_INLINE`, so the host reads by readiness and writes directly (its D-42, D-43); off with `uring.multishot_recv`, whose queued bytes a direct read would skip | on |
//!
//! The key rules are the ABI's (docs/abi/reactor-guide.md, "Options"),
//! applied by the kit (`reactor_sdk::options`), the same in reactor-mio: a key is `uring.<option>`; an unknown `uring.` key
//! and a key without a prefix (no dot, or an empty prefix) fail `create`
//! with one line that names the key and lists the known ones; a key with
//! another plugin's prefix (`mio.events_capacity`) is ignored, so one list
//! of options serves `ASYNC_REACTOR=auto`, which tries this reactor and
//! then mio. An unprefixed key is refused rather than ignored because no
//! reactor would ever read it: accepting it silently hid mistakes such as
//! `sq_entries=1024`.
//!
//! The two setup flags are on by default: with one loop they are within 2%
//! of off, but with two loops deferred task running spares the cross-CPU
//! task work and cut server CPU per request by 5 to 17% (`bench echo2`).
//! Inline streams are on: a ping-pong stream then costs no ring operation
//! per read (echo: 4,785 to 949 user-space instructions per request, mio
//! 906). The two multishot paths are off: the receive costs more on echo, the
//! accept is not on its path, and both hold descriptors in the kernel and
//! data or connections in the reactor between requests, which a host that
//! also reads a socket directly (readiness reads, `peek`, `into_std`)
//! would not see. See reactor-uring/README.md, "Fast paths".

use crate::error::{Error, Result};

/// The prefix of this reactor's option keys, without its dot.
const PREFIX: &str = "uring";

/// Every key this reactor reads, for the message refusing an unknown one.
/// `from_options` matches the same names (a unit test checks both agree).
const KNOWN: &[&str] = &[
    "uring.sq_entries",
    "uring.single_issuer",
    "uring.defer_taskrun",
    "uring.multishot_accept",
    "uring.multishot_recv",
    "uring.inline_streams",
];

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
    /// Optional capabilities (`AA_CAP_IO_DGRAM`, `AA_CAP_IO_FILE`,
    /// `AA_CAP_IO_FTRUNCATE`) to leave out of the instance as if the kernel
    /// lacked their opcodes. No option sets it: the crate's own tests do, to
    /// check the refusal a host falls back on.
    pub(crate) without: u64,
    /// `uring.single_issuer`.
    pub(crate) single_issuer: bool,
    /// `uring.defer_taskrun` (only with `single_issuer`).
    pub(crate) defer_taskrun: bool,
    /// `uring.multishot_accept`.
    pub(crate) multishot_accept: bool,
    /// `uring.multishot_recv`.
    pub(crate) multishot_recv: bool,
    /// `uring.inline_streams`.
    pub(crate) inline_streams: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sq_entries: 256,
            old_kernel: false,
            without: 0,
            single_issuer: true,
            defer_taskrun: true,
            multishot_accept: false,
            multishot_recv: false,
            inline_streams: true,
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
            "sq_entries" => {
                config.sq_entries = match value.trim().parse::<u32>() {
                        Ok(n) if (1..=MAX_SQ_ENTRIES).contains(&n) => n,
                        _ => {
                            return Err(Error::invalid(format!(
                                "invalid value {value:?} for reactor option \"{key}\": expected an integer from 1 to {MAX_SQ_ENTRIES}"
                            )))
                        }
                    };
                Ok(true)
            }
            "single_issuer" => switch(key, value).map(|on| {
                config.single_issuer = on;
                true
            }),
            "defer_taskrun" => switch(key, value).map(|on| {
                config.defer_taskrun = on;
                true
            }),
            "multishot_accept" => switch(key, value).map(|on| {
                config.multishot_accept = on;
                true
            }),
            "multishot_recv" => switch(key, value).map(|on| {
                config.multishot_recv = on;
                true
            }),
            "inline_streams" => switch(key, value).map(|on| {
                config.inline_streams = on;
                true
            }),
            _ => Ok(false),
        })?;
        Ok(config)
    }
}

/// An `on`/`off` option's value.
fn switch(key: &str, value: &str) -> Result<bool> {
    match value.trim() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(Error::invalid(format!(
            "invalid value {value:?} for reactor option \"{key}\": expected on or off"
        ))),
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
        let config = parse(&[
            ("uring.sq_entries", "8"),
            ("mio.events_capacity", "64"),
            ("mio.x", "1"),
        ]);
        assert_eq!(
            config.map(|c| c.sq_entries),
            Ok(8),
            "and other prefixes are ignored"
        );
        assert_eq!(parse(&[]), Ok(Config::default()));
    }

    #[test]
    fn unknown_uring_key_is_refused_with_its_name_and_the_known_keys() {
        let err = parse(&[("uring.foo", "1")]).unwrap_err();
        assert_eq!(err.status, async_abi::AA_E_INVALID);
        assert_eq!(
            err.message,
            "unknown reactor option \"uring.foo\" (known: uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)"
        );
        let err = parse(&[("uring.", "1")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \"uring.\" (known: uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)"
        );
    }

    #[test]
    fn unprefixed_key_is_refused_with_how_to_write_it() {
        let err = parse(&[("foo", "1")]).unwrap_err();
        assert_eq!(err.status, async_abi::AA_E_INVALID);
        assert_eq!(
            err.message,
            "unknown reactor option \"foo\": reactor options are written uring.<option> (known: uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)"
        );
        // The usual mistake: the option's name without its prefix.
        let err = parse(&[("sq_entries", "1024")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \"sq_entries\": reactor options are written uring.<option> (known: uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)"
        );
    }

    #[test]
    fn empty_prefix_is_unprefixed_not_foreign() {
        // `.sq_entries` names no plugin, so no plugin would read it.
        let err = parse(&[(".sq_entries", "8")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \".sq_entries\": reactor options are written uring.<option> (known: uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)"
        );
    }

    #[test]
    fn a_key_is_shown_escaped_so_the_message_stays_one_line() {
        let err = parse(&[("a\nb", "1")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \"a\\nb\": reactor options are written uring.<option> (known: uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)"
        );
    }

    #[test]
    fn every_known_key_is_read() {
        for key in KNOWN {
            let value = if *key == "uring.sq_entries" {
                "1"
            } else {
                "on"
            };
            assert!(
                parse(&[(*key, value)]).is_ok(),
                "{key} is listed but refused"
            );
        }
    }

    #[test]
    fn switches_read_on_and_off_and_refuse_anything_else() {
        let config = parse(&[
            ("uring.single_issuer", "off"),
            ("uring.defer_taskrun", "off"),
            ("uring.multishot_accept", "off"),
        ])
        .unwrap();
        assert!(!config.single_issuer && !config.defer_taskrun && !config.multishot_accept);
        let config = parse(&[("uring.defer_taskrun", " on ")]).unwrap();
        assert!(config.defer_taskrun);
        let err = parse(&[("uring.multishot_accept", "yes")]).unwrap_err();
        assert_eq!(err.status, async_abi::AA_E_INVALID);
        assert_eq!(
            err.message,
            "invalid value \"yes\" for reactor option \"uring.multishot_accept\": expected on or off"
        );
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
