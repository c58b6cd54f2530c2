//! What the runtime tells a program about itself: warnings and errors as
//! structured [`Event`]s, for tests, tools and servers that want them as
//! data rather than log lines.
//!
//! Every event goes, in this order, to:
//! 1. the handler installed with [`Builder::on_event`](crate::Builder::on_event),
//!    if any (called on the loop thread, except
//!    [`Event::ActivityExceeded`], which the watchdog thread reports; a
//!    panic in it is caught and dropped);
//! 2. `tracing`, as one record at the event's [`level`](Event::level)
//!    whose message is the event's `Display` line (targets
//!    `async_std_api::scope`, `::runtime`, `::watchdog`, `::cancel`,
//!    `::context`);
//! 3. standard error, as `WARN <target>: <line>` (or `ERROR`), only when
//!    neither a handler nor a `tracing` subscriber is installed, so a
//!    program that set nothing up still sees what went wrong (the plugins'
//!    warnings and errors take the same fallback).
//!
//! Events are plain data (ids, locations, text, the shared [`Failure`]):
//! they hold no coroutine or scope alive and can be sent to another thread.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::sync::Arc;
use std::time::Duration;

use super::failure::Failure;
use super::id::{CoroutineId, ScopeId};

/// A coroutine named in an event: its id and where it was spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoroutineRef {
    /// Its id.
    pub id: CoroutineId,
    /// Where it was spawned.
    pub spawned_at: &'static Location<'static>,
}

impl fmt::Display for CoroutineRef {
    /// `coroutine 7 (spawned at src/main.rs:10:5)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "coroutine {} (spawned at {})", self.id, self.spawned_at)
    }
}

/// How loud an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Something the program should look at; the runtime goes on.
    Warn,
    /// A failure nothing handled, a deadlock: the run will end in error.
    Error,
}

/// Something the runtime reports about a run: a closed set that may grow.
///
/// Its `Display` is the one line the runtime logs for it.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use async_std_api::events::Event;
/// use async_std_api::{delay, spawn_in, suspend, Builder, Scope};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = seen.clone();
/// Builder::new()
///     .on_event(move |e| s.lock().unwrap().push(e.clone()))
///     .run(|| {
///         let scope = Scope::new();
///         spawn_in(&scope, || delay(60_000)).unwrap();
///         suspend().unwrap();
///         scope.dispose();
///     })
///     .unwrap();
/// let seen = seen.lock().unwrap();
/// assert!(matches!(&seen[0], Event::ScopeDisposed { cancelled, .. } if cancelled.len() == 1));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Event {
    /// A scope was disposed ([`dispose`](crate::ScopeRef::dispose)), or its
    /// last owning handle dropped (D-9), while coroutines still ran in it
    /// or its descendants: they are cancelled.
    ScopeDisposed {
        /// The scope.
        scope: ScopeId,
        /// Where it was created.
        created_at: &'static Location<'static>,
        /// Where `dispose` was called; `None` when the last handle dropped.
        disposed_at: Option<&'static Location<'static>>,
        /// The coroutines cancelled by it (not already cancelled, not a
        /// task group's own tasks, R-TG5).
        cancelled: Vec<CoroutineRef>,
    },
    /// A coroutine became a zombie: its scope was disposed safely while it
    /// ran (R-S9); it keeps running and no longer counts as active.
    Zombie {
        /// The coroutine.
        coroutine: CoroutineRef,
        /// The scope that was disposed.
        scope: ScopeId,
        /// Where `dispose_safely` (or `dispose_after_timeout`) was called.
        disposed_at: Option<&'static Location<'static>>,
    },
    /// Nothing but zombies ran for the zombie timeout: they are cancelled
    /// (R-S10).
    ZombiesCancelled {
        /// The zombies cancelled.
        zombies: Vec<CoroutineRef>,
        /// The zombie timeout.
        timeout: Duration,
    },
    /// Zombies still ran a zombie timeout after their cancellation: the
    /// shutdown is forced (their stacks are unwound).
    ZombiesForced {
        /// How many zombies were left.
        count: usize,
    },
    /// `cancel_with` on a scope already cancelled: ignored (R-S5).
    CancelIgnored {
        /// The scope.
        scope: ScopeId,
    },
    /// A failure nothing handled reached the global scope (R-GS1).
    UnhandledFailure {
        /// The failure (the same object every handler and awaiter saw).
        failure: Failure,
        /// What it did: `true` if it started graceful shutdown (the first
        /// one), `false` if the shutdown was already under way (a second
        /// one forces it, and is attached to the first).
        started_shutdown: bool,
        /// The shutdown is forced by it: every coroutine's stack unwinds.
        forced_shutdown: bool,
    },
    /// The scheduler found a deadlock: this coroutine waited with nothing
    /// left to wake it, and is resumed with a cancellation (R-DL1).
    Deadlock {
        /// The coroutine.
        coroutine: CoroutineRef,
        /// Where it waited, if known.
        waited_at: Option<&'static Location<'static>>,
        /// For a wait inside a C library hook (`hooks`), the code that
        /// made the call, read from the coroutine's stack
        /// (`my_app::query at src/db.rs:40`).
        called_from: Option<String>,
    },
    /// A cancelled coroutine has not finished within the cancellation
    /// timeout ([`Builder::cancellation_timeout`](crate::Builder::cancellation_timeout),
    /// D-1(c)); reported once per coroutine, and it is not interrupted.
    StuckInCancellation {
        /// The coroutine.
        coroutine: CoroutineRef,
        /// Where it is suspended now, if it is.
        suspended_at: Option<&'static Location<'static>>,
        /// What it waits for, if the scheduler says.
        waiting_for: Option<String>,
        /// How long ago its cancellation was requested.
        since: Duration,
    },
    /// A coroutine ran longer than the maximum activity interval without
    /// yielding ([`Builder::max_activity_interval`](crate::Builder::max_activity_interval),
    /// R-T1); it is not interrupted. Reported by the watchdog thread.
    ActivityExceeded {
        /// The coroutine's id.
        coroutine: CoroutineId,
        /// Where it was spawned, if the watchdog still knew it.
        spawned_at: Option<&'static Location<'static>>,
        /// Where the loop thread was when the watchdog looked: the system
        /// call it was blocked in (with what usually makes it, e.g.
        /// `nanosleep (std::thread::sleep, sleep, usleep)`), or that it was
        /// running, and the nearest code outside std and this crate on its
        /// stack (`in my_app::handler at src/main.rs:12`). `None` where
        /// the thread cannot be looked at.
        blocked_in: Option<String>,
        /// How long it had run.
        ran: Duration,
        /// The interval.
        interval: Duration,
    },
    /// A context value's destructor panicked while the runtime dropped it
    /// (a coroutine's context at its finish, a scope's with its record),
    /// where no one could receive the panic: it is dropped (the other
    /// values are still dropped).
    ContextDropPanicked {
        /// The panic's message.
        message: String,
    },
    /// A plugin broke the ABI's contract in a way the host could survive
    /// (a one-shot callback called a second time): the host kept the first
    /// call and goes on, but the plugin has a bug. Reported once per runtime
    /// and kind of fault.
    PluginFault {
        /// The plugin: its role, the name the configuration chose it by,
        /// and the name and version it reports.
        plugin: String,
        /// What it did.
        fault: String,
    },
    /// A user call took the host's fallback (the blocking pool, readiness)
    /// because the reactor lacks a capability; reported once per runtime
    /// and capability, for a reactor that is not one of the runtime's own
    /// (whose fallbacks are their design).
    PluginFallback {
        /// The reactor: the name the configuration chose it by, the name,
        /// version and ABI minor it reports.
        plugin: String,
        /// The capability and what the host does without it, e.g.
        /// `AA_CAP_IO_DGRAM: datagram sockets wait for readiness`.
        missing: String,
    },
}

impl Event {
    /// How loud it is.
    pub fn level(&self) -> Level {
        match self {
            Event::UnhandledFailure { .. }
            | Event::Deadlock { .. }
            | Event::ZombiesForced { .. }
            | Event::PluginFault { .. } => Level::Error,
            _ => Level::Warn,
        }
    }

    /// The `tracing` target it is logged under.
    fn target(&self) -> &'static str {
        match self {
            Event::ActivityExceeded { .. } => "async_std_api::watchdog",
            Event::UnhandledFailure { .. }
            | Event::Deadlock { .. }
            | Event::PluginFault { .. }
            | Event::PluginFallback { .. } => "async_std_api::runtime",
            Event::StuckInCancellation { .. } => "async_std_api::cancel",
            Event::ContextDropPanicked { .. } => "async_std_api::context",
            _ => "async_std_api::scope",
        }
    }
}

fn list(coroutines: &[CoroutineRef]) -> String {
    coroutines
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn at(l: Option<&'static Location<'static>>) -> String {
    l.map_or_else(String::new, |l| format!(" at {l}"))
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::ScopeDisposed {
                scope,
                created_at,
                disposed_at: None,
                cancelled,
            } => write!(
                f,
                "scope {scope} (created at {created_at}) dropped while {} still ran: cancelling {}",
                if cancelled.len() == 1 {
                    "1 coroutine".to_owned()
                } else {
                    format!("{} coroutines", cancelled.len())
                },
                list(cancelled)
            ),
            Event::ScopeDisposed {
                scope,
                disposed_at,
                cancelled,
                ..
            } => write!(
                f,
                "scope {scope} disposed{}: cancelling {}",
                at(*disposed_at),
                list(cancelled)
            ),
            Event::Zombie {
                coroutine,
                scope,
                disposed_at,
            } => write!(
                f,
                "{coroutine} is a zombie: scope {scope} disposed{}",
                at(*disposed_at)
            ),
            Event::ZombiesCancelled { zombies, timeout } => write!(
                f,
                "zombie timeout ({} ms): cancelling {} zombie coroutine(s): {}",
                timeout.as_millis(),
                zombies.len(),
                list(zombies)
            ),
            Event::ZombiesForced { count } => write!(
                f,
                "{count} zombie coroutine(s) still run after their cancellation: forcing the \
                 shutdown"
            ),
            Event::CancelIgnored { scope } => {
                write!(f, "scope {scope} is already cancelled: cancel_with ignored")
            }
            Event::UnhandledFailure {
                failure,
                started_shutdown: true,
                ..
            } => write!(f, "unhandled failure: {failure}: graceful shutdown"),
            Event::UnhandledFailure {
                failure,
                forced_shutdown: true,
                ..
            } => write!(
                f,
                "unhandled failure during graceful shutdown: {failure}: forcing the shutdown"
            ),
            Event::UnhandledFailure { failure, .. } => write!(f, "unhandled failure: {failure}"),
            Event::Deadlock {
                coroutine,
                waited_at,
                called_from,
            } => write!(
                f,
                "deadlock: {coroutine} waited{}{} with nothing left to wake it: cancelled",
                at(*waited_at),
                called_from
                    .as_ref()
                    .map_or_else(String::new, |c| format!(" (a hooked call made by {c})"))
            ),
            Event::StuckInCancellation {
                coroutine,
                suspended_at,
                waiting_for,
                since,
            } => {
                write!(
                    f,
                    "{coroutine} was cancelled {} ms ago and has not finished",
                    since.as_millis()
                )?;
                match (suspended_at, waiting_for) {
                    (Some(l), Some(w)) => write!(f, "; it waits at {l} for {w}"),
                    (Some(l), None) => write!(f, "; it waits at {l}"),
                    (None, Some(w)) => write!(f, "; it waits for {w}"),
                    (None, None) => write!(f, "; it is running"),
                }?;
                f.write_str(" (it is not interrupted)")
            }
            Event::ActivityExceeded {
                coroutine,
                spawned_at,
                blocked_in,
                ran,
                interval,
            } => {
                write!(
                    f,
                    "coroutine {coroutine} (spawned at {}) has run for {} ms without yielding \
                     (maximum activity interval {} ms)",
                    spawned_at.map_or_else(|| "an unknown place".to_owned(), |l| l.to_string()),
                    ran.as_millis(),
                    interval.as_millis()
                )?;
                if let Some(b) = blocked_in {
                    write!(f, ": {b}")?;
                }
                f.write_str("; it is not interrupted")
            }
            Event::ContextDropPanicked { message } => {
                write!(f, "a context value panicked in its destructor: {message}")
            }
            Event::PluginFault { plugin, fault } => write!(f, "{plugin} {fault}"),
            Event::PluginFallback { plugin, missing } => {
                write!(f, "{plugin} lacks {missing} (said once)")
            }
        }
    }
}

/// The installed handler ([`Builder::on_event`](crate::Builder::on_event)).
#[derive(Clone)]
pub(crate) struct Handler(pub(crate) Arc<dyn Fn(&Event) + Send + Sync>);

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Handler(..)")
    }
}

/// Sends `event` to the handler, `tracing`, and, if neither listens,
/// standard error (see the module doc).
pub(crate) fn report(handler: Option<&Handler>, event: Event) {
    // The log's descriptors are the program's, maybe blocking: written with
    // the C library's own calls, never a hooked wait inside the runtime (K5).
    let _quiet = super::runtime::Quiet::new();
    if let Some(h) = handler {
        let _ = catch_unwind(AssertUnwindSafe(|| (h.0)(&event)));
    }
    // `tracing` wants a literal target: one arm per target and level.
    macro_rules! record {
        ($($t:literal),*) => {
            match (event.level(), event.target()) {
                $((Level::Warn, $t) => tracing::warn!(target: $t, "{event}"),
                  (Level::Error, $t) => tracing::error!(target: $t, "{event}"),)*
                (Level::Warn, _) => tracing::warn!(target: "async_std_api", "{event}"),
                (Level::Error, _) => tracing::error!(target: "async_std_api", "{event}"),
            }
        };
    }
    record!(
        "async_std_api::scope",
        "async_std_api::runtime",
        "async_std_api::watchdog",
        "async_std_api::cancel",
        "async_std_api::context"
    );
    if handler.is_none() && !subscribed() {
        // The plugins' records take the same fallback (`host_log`).
        let level = match event.level() {
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        };
        eprintln!("{level} {}: {event}", event.target());
    }
}

/// Reports `event` from the loop thread, with the runtime's handler.
pub(crate) fn emit(event: Event) {
    let handler = super::runtime::with_runtime(|rt| rt.events.clone()).flatten();
    report(handler.as_ref(), event);
}

/// True if a `tracing` subscriber (global or scoped) would see records.
pub(crate) fn subscribed() -> bool {
    tracing::dispatcher::get_default(|d| !d.is::<tracing::subscriber::NoSubscriber>())
}

/// An informational line (which backends were loaded, `auto`'s choice) for
/// a program without a `tracing` subscriber: printed to stderr as `INFO
/// <target>: <line>` only if `RUST_LOG` asks for info (or more) globally or
/// for `async_std_api`, the variable such programs are run with to see more.
pub(crate) fn info_fallback(target: &str, line: &str) {
    let _quiet = super::runtime::Quiet::new();
    if !subscribed() && info_wanted(std::env::var("RUST_LOG").ok().as_deref()) {
        eprintln!("INFO {target}: {line}");
    }
}

/// Whether a `RUST_LOG` value enables info for this crate: a bare level
/// (`info`, `debug`, `trace`) or an `async_std_api...=<level>` directive.
fn info_wanted(rust_log: Option<&str>) -> bool {
    let verbose = |level: &str| {
        matches!(
            level.trim().to_ascii_lowercase().as_str(),
            "info" | "debug" | "trace"
        )
    };
    rust_log.is_some_and(|v| {
        v.split(',').any(|d| match d.split_once('=') {
            Some((target, level)) => target.trim().starts_with("async_std_api") && verbose(level),
            None => verbose(d),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::info_wanted;

    #[test]
    fn rust_log_enables_the_info_fallback_globally_or_for_this_crate() {
        assert!(info_wanted(Some("info")));
        assert!(info_wanted(Some("warn,async_std_api=debug")));
        assert!(info_wanted(Some("async_std_api::runtime=info")));
        assert!(!info_wanted(Some("warn")));
        assert!(!info_wanted(Some("tokio=trace")));
        assert!(!info_wanted(None));
    }
}
