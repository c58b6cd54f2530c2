//! [`Builder`]: explicit configuration, the highest-precedence source.

use std::path::PathBuf;
use std::time::Duration;

use super::config::Explicit;

/// The usable stack of a coroutine when nothing sets one: 2 MiB in a debug
/// build of the program, as a `std::thread` gets; 256 KiB in a release
/// build.
///
/// Debug code takes several times the stack of optimised code: measured
/// on a fresh stack with `mincore`, flate2's gzip round trip of 1 MB used
/// 316 KiB in debug and 76 KiB in release, `serde_json` at its nesting
/// limit 216 and 52 KiB, a regex compilation 180 and 44 KiB. A stack is
/// reserved, not committed, so the size costs only what is touched, plus
/// the page tables that map it: with 2 MiB stacks one page-table page (4
/// KiB) per live coroutine, against 512 bytes at 256 KiB, so a million
/// suspended coroutines need 3.9 GiB of page tables in debug against 0.5
/// GiB in release, with the same resident stack pages
/// (`async-scheduler/README.md`, "Stacks and guard pages", has the table).
///
/// [`Builder::stack_size`], `stack_size` in the config file's `[scheduler]`
/// table, or the scheduler option `stack_size`
/// (`ASYNC_SCHEDULER_OPTIONS=stack_size=1m`) set another size; an overflow
/// aborts with one line naming the coroutine, where it was spawned, and
/// how to raise the size.
pub const DEFAULT_STACK_SIZE: usize = if cfg!(debug_assertions) {
    2 << 20
} else {
    256 << 10
};

/// Configures and runs a runtime: the explicit, highest-precedence source of
/// configuration (builder, then environment, then config file, then the
/// embedded default).
///
/// The analogue of `std::thread::Builder` (or tokio's runtime builder):
/// set what differs from the defaults, then [`run`](Builder::run). A
/// `Builder` holds only settings; dropping it does nothing.
///
/// # Examples
///
/// ```
/// use async_std_api::{spawn, Builder};
///
/// let answer = Builder::new()
///     .scheduler("embedded")
///     .reactor("embedded")
///     .stack_size(256 * 1024)
///     .run(|| spawn(|| 6 * 7).join().unwrap())
///     .unwrap();
/// assert_eq!(answer, 42);
/// ```
#[derive(Debug, Default, Clone)]
pub struct Builder {
    /// Read by `run` (`structured::run`).
    pub(crate) explicit: Explicit,
    /// Read by `run_per_core` (`per_core`) only.
    pub(crate) per_core: PerCore,
}

/// The thread-per-core settings of a [`Builder`]: how many loops
/// `run_per_core` starts, whether each is pinned to its core, and whether
/// SIGINT/SIGTERM shut every loop down.
#[derive(Debug, Default, Clone)]
pub(crate) struct PerCore {
    /// `None`: one loop per available core.
    pub(crate) threads: Option<usize>,
    pub(crate) pin: bool,
    pub(crate) signals: bool,
}

impl Builder {
    /// A builder with nothing set: every setting falls through to the
    /// environment, the config file and the defaults.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// The scheduler: `embedded` (the default), `fifo`, `context`,
    /// `corosensei`, `chaos`, or a path to a shared library (anything
    /// containing `/` or ending in `.so`). Overrides `ASYNC_SCHEDULER`.
    ///
    /// A name runs the statically linked scheduler, unless an
    /// `ASYNC_PLUGIN_PATH` directory holds `libasync_scheduler.so` built
    /// from the same sources (README, "Choosing backends").
    pub fn scheduler(mut self, name_or_path: impl Into<String>) -> Builder {
        self.explicit.scheduler = Some(name_or_path.into());
        self
    }

    /// The reactor: `embedded` (the default), `mio`, `uring`, `auto`, or a
    /// path to a shared library. Overrides `ASYNC_REACTOR`.
    ///
    /// Every name runs a statically linked reactor (`mio` and `embedded`
    /// reactor-mio, `uring` reactor-uring), unless an `ASYNC_PLUGIN_PATH`
    /// directory holds its library built from the same sources (README,
    /// "Choosing backends").
    pub fn reactor(mut self, name_or_path: impl Into<String>) -> Builder {
        self.explicit.reactor = Some(name_or_path.into());
        self
    }

    /// One scheduler option (`"engine"`, `"context"`), passed to the plugin's
    /// `create`. Overrides the same key from `ASYNC_SCHEDULER_OPTIONS` and the
    /// config file.
    pub fn scheduler_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Builder {
        set(
            &mut self.explicit.scheduler_options,
            key.into(),
            value.into(),
        );
        self
    }

    /// One reactor option (`"uring.sq_entries"`, `"256"`). Overrides the same
    /// key from `ASYNC_REACTOR_OPTIONS` and the config file.
    pub fn reactor_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Builder {
        set(&mut self.explicit.reactor_options, key.into(), value.into());
        self
    }

    /// Reads this TOML config file instead of `ASYNC_CONFIG`'s.
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Builder {
        self.explicit.config_file = Some(path.into());
        self
    }

    /// The default usable stack size of each coroutine, in bytes (0: the
    /// default, [`DEFAULT_STACK_SIZE`]). Overrides `stack_size` in the
    /// config file and the scheduler option `stack_size`.
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.explicit.stack_size = Some(bytes);
        self
    }

    /// How long zombie coroutines may run once nothing else does, before
    /// they are cancelled (R-S10; the RFC's `async.zombie_coroutine_timeout`,
    /// 5 s by default). Overrides `ASYNC_ZOMBIE_COROUTINE_TIMEOUT` and the
    /// config file's `[runtime] zombie_coroutine_timeout` (both in ms).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use async_std_api::{delay, spawn_in, suspend, Builder, Scope};
    ///
    /// let started = Instant::now();
    /// Builder::new()
    ///     .zombie_timeout(Duration::from_millis(20))
    ///     .run(|| {
    ///         let scope = Scope::new();
    ///         spawn_in(&scope, || delay(60_000)).unwrap();
    ///         suspend().unwrap();
    ///         scope.dispose_safely(); // a zombie sleeping for a minute
    ///     })
    ///     .unwrap();
    /// // Cancelled 20 ms after main ended, not a minute later.
    /// assert!(started.elapsed() < Duration::from_secs(30));
    /// ```
    pub fn zombie_timeout(mut self, timeout: Duration) -> Builder {
        self.explicit.zombie_timeout = Some(timeout);
        self
    }

    /// Turns on the maximum-activity-interval watchdog (R-T1): a warning
    /// naming the coroutine and where it was spawned when one runs longer
    /// than `interval` without yielding. Off by default; `Duration::ZERO`
    /// turns it off. Overrides `ASYNC_MAX_ACTIVITY_INTERVAL` and the config
    /// file's `[runtime] max_activity_interval` (both in ms). It only warns:
    /// the coroutine is never interrupted.
    ///
    /// With it on, every switch does one relaxed atomic store, and each
    /// spawn and finish one `Mutex`-protected map operation (the spawn
    /// locations the watchdog thread names); off, a switch tests a null
    /// pointer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use async_std_api::{spawn, Builder};
    ///
    /// Builder::new()
    ///     .max_activity_interval(Duration::from_secs(3))
    ///     .run(|| spawn(|| 1 + 1).join().unwrap())
    ///     .unwrap();
    /// ```
    pub fn max_activity_interval(mut self, interval: Duration) -> Builder {
        self.explicit.max_activity_interval = Some(interval);
        self
    }

    /// In a debug build, turns the activity watchdog on with a 100 ms
    /// interval unless one is configured: a coroutine that holds the loop
    /// that long (a blocking call the hooks do not cover, a lock, a busy
    /// loop) gets one warning naming where it was spawned, the system call it
    /// is blocked in, if any (`nanosleep` for `std::thread::sleep`, `futex`
    /// for a lock, an unhooked `read`), and the code it was called from. No
    /// effect in a release build, where
    /// [`max_activity_interval`](Builder::max_activity_interval) turns the
    /// watchdog on.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::Builder;
    ///
    /// Builder::new().warn_blocking(true).run(|| ()).unwrap();
    /// ```
    pub fn warn_blocking(mut self, on: bool) -> Builder {
        self.explicit.warn_blocking = Some(on);
        self
    }

    /// How long a cancelled coroutine may go on before it is reported as
    /// stuck in its cancellation (D-1(c)): one
    /// [`Event::StuckInCancellation`](crate::events::Event::StuckInCancellation)
    /// naming it, where it was spawned, where it waits and for what. It is
    /// not interrupted (cleanup may legitimately block, R-C3). 10 s by
    /// default; `Duration::ZERO` turns it off. Overrides
    /// `ASYNC_CANCELLATION_TIMEOUT` and the config file's `[runtime]
    /// cancellation_timeout` (both in ms).
    ///
    /// It costs nothing until a coroutine is cancelled; then one hidden
    /// timer (it never keeps the loop alive) checks the cancelled ones.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use async_std_api::events::Event;
    /// use async_std_api::{delay, spawn, suspend, Builder};
    ///
    /// let stuck = Arc::new(Mutex::new(Vec::new()));
    /// let s = stuck.clone();
    /// Builder::new()
    ///     .cancellation_timeout(Duration::from_millis(20))
    ///     .on_event(move |e| {
    ///         if let Event::StuckInCancellation { coroutine, .. } = e {
    ///             s.lock().unwrap().push(coroutine.id);
    ///         }
    ///     })
    ///     .run(|| {
    ///         let h = spawn(|| {
    ///             if delay(60_000).is_err() {
    ///                 let _ = delay(200); // a slow cleanup, edge-triggered
    ///             }
    ///         });
    ///         suspend().unwrap();
    ///         h.cancel();
    ///         let id = h.id();
    ///         let _ = h.join();
    ///         id
    ///     })
    ///     .map(|id| assert_eq!(*stuck.lock().unwrap(), [id]))
    ///     .unwrap();
    /// ```
    pub fn cancellation_timeout(mut self, timeout: Duration) -> Builder {
        self.explicit.cancellation_timeout = Some(timeout);
        self
    }

    /// The most threads the blocking pool runs at once
    /// ([`spawn_blocking`](crate::spawn_blocking), file operations on a
    /// reactor without native file I/O, name resolution without the
    /// reactor's DNS). Threads start only when work is queued and exit after
    /// ten idle seconds. Defaults to four per core, at least 8; overrides
    /// `ASYNC_BLOCKING_THREADS` and the config file's `[runtime]
    /// blocking_threads`. Zero is refused when the runtime starts.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{spawn_blocking, Builder};
    ///
    /// let sum = Builder::new()
    ///     .blocking_threads(2)
    ///     .run(|| spawn_blocking(|| (1..=10).sum::<u32>()).join().unwrap())
    ///     .unwrap();
    /// assert_eq!(sum, 55);
    /// ```
    pub fn blocking_threads(mut self, threads: usize) -> Builder {
        self.explicit.blocking_threads = Some(threads);
        self
    }

    /// Captures each coroutine's stack when it suspends, for
    /// [`Coroutine::trace`](crate::Coroutine::trace) (the RFC's `getTrace`).
    /// Off by default: a capture costs microseconds per suspension.
    /// Overrides `ASYNC_TRACE` (`1`/`0`) and the config file's `[runtime]
    /// trace`.
    pub fn trace(mut self, on: bool) -> Builder {
        self.explicit.trace = Some(on);
        self
    }

    /// Whether a plugin loaded from a file is announced on standard error,
    /// in one line naming the scheduler, the reactor and the file (on by
    /// default; the statically linked plugins are never announced).
    /// Overrides `ASYNC_PLUGIN_NOTICE` (`1`/`0`) and the config file's
    /// `[runtime] plugin_notice`.
    ///
    /// A file is what can be stale or someone else's: the line says which
    /// one runs without asking for `RUST_LOG=info`. For example, with
    /// `ASYNC_PLUGIN_PATH=/opt/plugins ASYNC_REACTOR=uring`:
    ///
    /// ```text
    /// async-std-api: scheduler "embedded" (linked in), reactor "uring" from /opt/plugins/libreactor_uring.so; ASYNC_PLUGIN_NOTICE=0 hides this line
    /// ```
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::Builder;
    ///
    /// let n = Builder::new().plugin_notice(false).run(|| 1).unwrap();
    /// assert_eq!(n, 1);
    /// ```
    pub fn plugin_notice(mut self, on: bool) -> Builder {
        self.explicit.plugin_notice = Some(on);
        self
    }

    /// Makes blocking calls of the C library (`read`, `recv`, `connect`,
    /// `poll`, `nanosleep`, `getaddrinfo`, ...) suspend only the calling
    /// coroutine, so code written for threads (`std::net`,
    /// `std::thread::sleep`, database drivers, C libraries) runs unchanged
    /// without blocking the loop: see the `hooks` module
    /// (the crate's `hooks` feature). Overrides `ASYNC_HOOKS` (`1`/`0`) and
    /// the config file's `[runtime] hooks`.
    ///
    /// Without the `hooks` feature, `run` refuses `true` with one line
    /// saying how to turn the feature on.
    pub fn hooks(mut self, on: bool) -> Builder {
        self.explicit.hooks = Some(on);
        self
    }

    /// Installs a handler for the runtime's [`Event`](crate::events::Event)s
    /// (zombies, disposals, unhandled failures, deadlocks, stuck
    /// cancellations, the activity watchdog): see [`events`](crate::events).
    /// They still go to `tracing`; with a handler installed, none is
    /// printed to standard error. A panic in the handler is caught and
    /// dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use async_std_api::events::Event;
    /// use async_std_api::{spawn, Builder, ErrorKind};
    ///
    /// let failures = Arc::new(Mutex::new(Vec::new()));
    /// let f = failures.clone();
    /// let err = Builder::new()
    ///     .on_event(move |e| {
    ///         if let Event::UnhandledFailure { failure, .. } = e {
    ///             f.lock().unwrap().push(failure.panic_message().unwrap().to_owned());
    ///         }
    ///     })
    ///     .run(|| {
    ///         spawn(|| panic!("boom"));
    ///     })
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Failed);
    /// assert_eq!(*failures.lock().unwrap(), ["boom"]);
    /// ```
    pub fn on_event(
        mut self,
        handler: impl Fn(&crate::core::events::Event) + Send + Sync + 'static,
    ) -> Builder {
        self.explicit.events = Some(crate::core::events::Handler(std::sync::Arc::new(handler)));
        self
    }
}

/// The thread-per-core settings, read by
/// [`run_per_core`](Builder::run_per_core) (`per_core` module).
impl Builder {
    /// How many loops [`run_per_core`](Builder::run_per_core) runs, one
    /// per thread (each its own scheduler and reactor, built from this same
    /// configuration). Defaults to the number of available cores. Only
    /// `run_per_core` reads it: [`run`](Builder::run) with more than one
    /// thread set is refused with [`ErrorKind::Config`](super::ErrorKind::Config).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::Builder;
    ///
    /// let ids = Builder::new()
    ///     .threads(2)
    ///     .run_per_core(|id| id.index())
    ///     .unwrap();
    /// assert_eq!(ids, [0, 1]);
    /// ```
    pub fn threads(mut self, n: usize) -> Builder {
        self.per_core.threads = Some(n);
        self
    }

    /// Pins loop `i` of [`run_per_core`](Builder::run_per_core) to core
    /// `i` (modulo the number of cores). Off by default: the kernel places
    /// the threads. A pin the kernel refuses is logged and the loop runs
    /// unpinned.
    pub fn pin(mut self, on: bool) -> Builder {
        self.per_core.pin = on;
        self
    }

    /// Makes one SIGINT or SIGTERM shut every loop of
    /// [`run_per_core`](Builder::run_per_core) down gracefully (the same
    /// as [`Loops::shutdown`](crate::per_core::Loops::shutdown)). Off by
    /// default: the signals keep their usual effect.
    pub fn shutdown_on_signals(mut self, on: bool) -> Builder {
        self.per_core.signals = on;
        self
    }
}

impl super::Error {
    /// The same error, its message prefixed with the loop it came from
    /// (`loop 1: unhandled failure: ...`), for `run_per_core`.
    pub(crate) fn in_loop(mut self, index: usize) -> super::Error {
        self.message = format!("loop {index}: {}", self.message);
        self
    }
}

fn set(list: &mut Vec<(String, String)>, key: String, value: String) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => list.push((key, value)),
    }
}
