//! The panic message of a coroutine names the coroutine: std's hook prints
//! `thread 'main' panicked at ...`, which is true and of little use when a
//! thousand coroutines share the thread. While a coroutine runs, the hook
//! first prints which one, then lets the previous hook print as usual:
//!
//! ```text
//! coroutine 7 (spawned at src/main.rs:10:5) panicked:
//! thread 'main' panicked at src/main.rs:12:9:
//! boom
//! ```
//!
//! Rules:
//! - **PH1** Installed once per process, the first time a runtime starts,
//!   chaining to the hook that was there (a program's own hook, a test
//!   harness's, std's), which always runs after the extra line; never
//!   removed (another runtime may run on another thread). A hook the
//!   program installs later replaces it, as std documents.
//! - **PH2** It only reads the thread's running coroutine and writes one
//!   line; it cannot panic (a panic inside a panic hook aborts).
//! - **PH3** It and the hook it chains to run quiet (K5): std's hook
//!   holds its own locks (the backtrace lock while it symbolises, opening
//!   the program's files), and a hooked call that suspended there would let
//!   a second coroutine panic into them.

use std::io::Write;
use std::panic;
use std::sync::Once;

use super::runtime;

static INSTALL: Once = Once::new();

/// PH1: installs the hook, once per process.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let _quiet = runtime::Quiet::new(); // PH3
            if let Some(who) = runtime::with_running(|_, me| me.event_ref()) {
                // PH2: a failed write is ignored, never a panic.
                let _ = writeln!(std::io::stderr().lock(), "{who} panicked:");
            }
            previous(info);
        }));
    });
}
