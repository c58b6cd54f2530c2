//! `create`'s options under the ABI's key rules (docs/abi/reactor-guide.md,
//! "Options"): a key is `<prefix>.<option>`, the prefix being the plugin's
//! name without `reactor-`; an unknown own key, and a key without a prefix
//! (no dot, or an empty prefix), fail `create` with one line that names the
//! key and lists the known ones; a key with another plugin's prefix is
//! ignored, so one list of options serves `ASYNC_REACTOR=auto`.

use crate::error::{Error, Result};

/// One of `create`'s options as `async_abi::sdk::options` gives it:
/// `Err(key bytes)` is an entry that is not UTF-8.
pub type Entry<'a> = std::result::Result<(&'a str, &'a str), &'a [u8]>;

/// Calls `own(option, key, value)` for each option of this reactor's
/// (`prefix`, without its dot) and refuses what the rules refuse; `known`
/// lists the full keys, for the messages. `own` answers `Ok(false)` for an
/// option it does not know, which is refused too.
pub fn read<'a>(
    prefix: &str,
    known: &[&str],
    options: impl IntoIterator<Item = Entry<'a>>,
    mut own: impl FnMut(&str, &str, &'a str) -> Result<bool>,
) -> Result<()> {
    let known = if known.is_empty() {
        "none".to_owned()
    } else {
        known.join(", ")
    };
    for option in options {
        let (key, value) = option.map_err(|key| {
            Error::invalid(format!(
                "reactor option {:?} is not utf-8",
                String::from_utf8_lossy(key)
            ))
        })?;
        let name = match key.split_once('.') {
            Some((p, name)) if p == prefix => name,
            // Another plugin's option: one configuration serves every
            // reactor `auto` may pick.
            Some((p, _)) if !p.is_empty() => continue,
            _ => {
                return Err(Error::invalid(format!(
                    "unknown reactor option {key:?}: reactor options are written {prefix}.<option> (known: {known})"
                )))
            }
        };
        if !own(name, key, value)? {
            return Err(Error::invalid(format!(
                "unknown reactor option {key:?} (known: {known})"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pairs: &[(&'static str, &'static str)]) -> Result<Vec<String>> {
        let mut seen = Vec::new();
        read(
            "ex",
            &["ex.a"],
            pairs.iter().map(|&(k, v)| Ok((k, v))),
            |name, _, value| {
                seen.push(format!("{name}={value}"));
                Ok(name == "a")
            },
        )
        .map(|()| seen)
    }

    #[test]
    fn own_keys_are_read_and_other_prefixes_ignored() {
        assert_eq!(
            run(&[("ex.a", "1"), ("uring.x", "2")]),
            Ok(vec!["a=1".into()])
        );
    }

    #[test]
    fn unknown_and_unprefixed_keys_are_refused_with_the_rule() {
        let err = run(&[("ex.b", "1")]).unwrap_err();
        assert_eq!(err.message, "unknown reactor option \"ex.b\" (known: ex.a)");
        let err = run(&[("b", "1")]).unwrap_err();
        assert_eq!(
            err.message,
            "unknown reactor option \"b\": reactor options are written ex.<option> (known: ex.a)"
        );
    }
}
