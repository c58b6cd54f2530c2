//! The reactor conformance kit, run against the reactor `ASYNC_REACTOR`
//! names, resolved as the host resolves it: unset or `embedded` is
//! `reactor-mio` linked statically; `mio` or `uring` is
//! `libreactor_<name>.so` from the first `ASYNC_PLUGIN_PATH` directory that
//! holds it, else the reactor linked statically; a value containing `/` or
//! ending in `.so` is that file.
//!
//! `abi10`: an ABI 1.0 reactor (a C fixture) under this 1.2 kit and host.
//! `messages`: the kit's failure text on a reactor that breaks three rules
//! (a C fixture).
//! `skew`: a reactor of the next minor and one of major 2 (C fixtures), and
//! the standalone kit (`reactor_kit`) on a reactor that aborts and hangs.

use std::path::Path;

use tests::conformance::Reactor;

mod abi10;
mod messages;
mod skew;

fn reactor() -> Reactor {
    let value = std::env::var("ASYNC_REACTOR").unwrap_or_default();
    let loaded = match value.as_str() {
        // SAFETY: `plugin_desc` returns the plugin's static descriptor
        // (AA-R7).
        "" | "embedded" => unsafe { Reactor::from_desc(reactor_mio::plugin_desc()) },
        path if path.contains('/') || path.ends_with(".so") => Reactor::load(Path::new(path)),
        name @ ("mio" | "uring") => {
            let file = format!("libreactor_{name}.so");
            let on_path = std::env::var("ASYNC_PLUGIN_PATH").ok().and_then(|p| {
                p.split(':')
                    .filter(|d| !d.is_empty())
                    .map(|d| Path::new(d).join(&file))
                    .find(|f| f.is_file())
            });
            match on_path {
                Some(file) => Reactor::load(&file),
                // SAFETY: `plugin_desc` returns the plugin's static
                // descriptor (AA-R7).
                None if name == "mio" => unsafe { Reactor::from_desc(reactor_mio::plugin_desc()) },
                // SAFETY: as above.
                None => unsafe { Reactor::from_desc(reactor_uring::plugin_desc()) },
            }
        }
        other => panic!(
            "ASYNC_REACTOR={other:?}: expected embedded, mio, uring or the path of a shared library"
        ),
    };
    loaded.unwrap_or_else(|e| panic!("{e}"))
}

tests::reactor_conformance_tests!(reactor());
