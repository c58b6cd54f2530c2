//! The runtime: configuration, plugin loading, wiring, and the pieces of
//! the run loop that know nothing of scopes.
//!
//! Owns: the thread's one [`Runtime`] (scheduler, reactor, settings, the
//! shutdown phase), the thread-local that coroutines reach it through, and
//! the start-up and teardown sequences. What the layer above keeps per
//! runtime (the global scope, the zombie set) hangs off [`Runtime::upper`];
//! `structured::run` builds a runtime, spawns the main coroutine into the
//! global scope and reads the result.
//!
//! Invariants:
//! - **R1** A thread runs at most one runtime; the thread-local is set
//!   after both plugins are created and cleared before `run` returns, on
//!   every path.
//! - **R2** Order of life: reactor created, then scheduler (holding the
//!   reactor); the scheduler is destroyed first, then the reactor, then the
//!   plugin contexts (`deinit`), each only if its instance was destroyed.
//! - **R3** Nothing from the user runs before both plugins were loaded and
//!   created: every configuration or load error is returned by
//!   [`Runtime::start`], before the main coroutine is spawned.
//! - **R4** A joined coroutine's state that nothing else refers to is kept
//!   for reuse (at most [`SPARE_STATES`]), emptied first, so everything it
//!   held is dropped exactly when it would have been; `spawn` rewrites a
//!   spare in place instead of allocating. Spares are dropped with the
//!   runtime.
//! - **R5** The layer above's record ([`Runtime::upper`]) is set once,
//!   right after `start`, and lives as long as the runtime; its timers are
//!   dropped before the reactor is destroyed (the layer above clears them
//!   before [`Runtime::teardown`]).
//! - **R6** Before the first loop of a process runs, its descriptor table
//!   has room for [`fd_table::SLOTS`] descriptors (or its limit), so
//!   opening many never stalls a loop in the kernel ([`fd_table`]).
//!
//! Shutdown order: main finishes, the other coroutines run to completion
//! (REF-3), `run` of the scheduler returns; or main panics, the scheduler is
//! shut down with `AA_E_SHUTDOWN` (the others unwind), and the panic is
//! resumed on the caller's thread after teardown.

mod blocked;
mod builder;
pub(crate) mod cancel_watch;
mod config;
mod fd_table;
mod ffi;
mod host_log;
pub(crate) mod lifecycle;
mod loader;
pub(crate) mod pool;
pub(crate) mod remote;
pub(crate) mod watchdog;

use std::any::Any;
use std::cell::{Cell, OnceCell, RefCell};
use std::fmt;
use std::panic::Location;
use std::rc::Rc;

use async_abi::{AaStatus, AA_E_SHUTDOWN};

pub use builder::{Builder, DEFAULT_STACK_SIZE};
pub(crate) use config::Explicit;
#[cfg(feature = "hooks")]
pub(crate) use ffi::current::hooked;
pub(crate) use ffi::current::{
    installed, running, take_budget, with_current, with_running, with_runtime, Quiet,
};
pub(crate) use ffi::fs_watch::FsWatchEvent;
pub(crate) use ffi::io;
pub(crate) use ffi::process;
pub(crate) use ffi::{new_state, PollEvent, Reactor, Scheduler, SignalEvent, TimerEvent, WakeRec};
pub(crate) use lifecycle::deadlock_seen;

/// The code that made a hooked call, from the stack of the coroutine that
/// waits in it (`sp`: the hook's frame): the nearest frame outside std,
/// the C library and this crate (`blocked`, BL2).
pub(crate) fn called_from(sp: usize) -> Option<String> {
    // Reads files and symbolises under the symboliser's lock: with the C
    // library's own calls (K5).
    let _quiet = Quiet::new();
    blocked::calling_code(sp as u64)
}

use super::events::{self, Handler};
use super::failure::Failure;
use super::state::{Body, CoroState, WATCHED};
use config::{Choice, Resolved};
use loader::Role;

/// What kind of failure a [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The configuration is invalid: an unknown name, a malformed option
    /// variable, an unreadable or invalid config file.
    Config,
    /// A plugin could not be found or loaded: missing file, not a shared
    /// library, no entry symbol, ABI mismatch, table too small.
    Load,
    /// A plugin refused to start (its `create` failed) or failed while
    /// running.
    Plugin,
    /// The scheduler found a deadlock: coroutines waited with nothing left
    /// to wake them.
    Deadlock,
    /// A runtime is already running on this thread.
    AlreadyRunning,
    /// A coroutine failed and nothing handled it: the failure reached the
    /// global scope and started graceful shutdown (R-GS1). The message
    /// names the failure (and how many more happened during the shutdown).
    Failed,
    /// The main coroutine ended cancelled, without a value (graceful
    /// shutdown, or its own cancellation undelivered when it returned).
    Cancelled,
}

/// Why [`run`](crate::run) failed.
///
/// An opaque error with a [`kind`](Error::kind) and a one-line message
/// naming the value at fault and the reason. `Debug` prints the same line
/// as `Display`, so `fn main() -> Result<(), async_std_api::Error>` ends
/// with `Error: <one line>` and exit status 1.
///
/// # Examples
///
/// ```
/// use async_std_api::{Builder, ErrorKind};
///
/// let err = Builder::new().reactor("foo").run(|| ()).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Config);
/// assert_eq!(
///     err.to_string(),
///     "unknown reactor \"foo\": expected embedded, mio, uring, auto or a path to a shared library"
/// );
/// ```
pub struct Error {
    kind: ErrorKind,
    message: String,
    failure: Option<Failure>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            failure: None,
        }
    }

    /// An [`ErrorKind::Failed`] error carrying the unhandled failure.
    pub(crate) fn failed(f: Failure) -> Error {
        Error {
            kind: ErrorKind::Failed,
            message: format!("unhandled failure: {f}"),
            failure: Some(f),
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The failure nothing handled, for [`ErrorKind::Failed`]: the first
    /// one, with those that happened during the shutdown
    /// [`attached`](Failure::attached) (the same object every handler and
    /// awaiter saw). `None` for the other kinds.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, spawn, ErrorKind};
    ///
    /// let err = run(|| {
    ///     spawn(|| panic!("boom"));
    /// })
    /// .unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Failed);
    /// assert_eq!(err.failure().unwrap().panic_message(), Some("boom"));
    /// ```
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.failure.as_ref().map(|f| f as _)
    }
}

/// A status code as text: the ABI name, or the OS error.
pub(crate) fn status_text(status: AaStatus) -> String {
    match async_abi::status_info(status) {
        Some(info) => format!("{} ({})", info.message, info.name),
        None if status < 0 => std::io::Error::from_raw_os_error(-status)
            .to_string()
            .to_lowercase(),
        None => format!("status {status}"),
    }
}

/// The thread's runtime.
pub(crate) struct Runtime {
    pub(crate) sched: Scheduler,
    pub(crate) reactor: Rc<Reactor>,
    pub(crate) stack_size: usize,
    /// Blocking C library calls suspend only their coroutine (`hooks`).
    pub(crate) hooks: bool,
    /// With the hooks on, other runtimes' thread-locals kept per coroutine
    /// (`core::foreign_tls`), if the program has any.
    #[cfg(feature = "hooks")]
    pub(crate) foreign_tls: Option<crate::core::foreign_tls::ForeignTls>,
    /// The zombie timeout, for the layer above (`structured::zombie`).
    pub(crate) zombie_timeout: std::time::Duration,
    /// The shutdown phase and what ended the run (`lifecycle`).
    pub(crate) lifecycle: lifecycle::Lifecycle,
    /// The maximum-activity-interval watchdog, if on (`watchdog`).
    pub(crate) watchdog: Option<watchdog::Watchdog>,
    /// The cancellation watchdog (D-1(c), `cancel_watch`).
    pub(crate) cancel_watch: cancel_watch::CancelWatch,
    /// Where events go besides `tracing` (`core::events`).
    pub(crate) events: Option<Handler>,
    /// The door for other threads (`remote`).
    pub(crate) remote: Rc<remote::Remote>,
    /// What keeps the loop alive while coroutines wait on hidden readiness
    /// watches (`core::readiness`, RD3).
    pub(crate) wait_hold: WaitHold,
    /// Readiness watches kept per descriptor number for the C library
    /// hooks (`core::fd_watches`).
    pub(crate) fd_watches: crate::core::fd_watches::FdWatches,
    /// The blocking pool (`pool`).
    pub(crate) pool: pool::Pool,
    /// The layer above's record (R5): the global scope and what hangs off
    /// it. Set once, right after `start`.
    upper: OnceCell<Box<dyn Any>>,
    /// The payload of a panic of the main coroutine, resumed after teardown.
    main_panic: RefCell<Option<Box<dyn Any + Send>>>,
    /// R4.
    spare_states: RefCell<Vec<Rc<CoroState>>>,
    /// The scheduler, quoted, with where it was loaded from when its label
    /// does not say (`named`): how messages name it.
    pub(crate) scheduler_label: String,
}

/// One referenced event for every coroutine waiting on a readiness watch:
/// the watches themselves are hidden (left armed between waits, they must
/// not keep the loop alive, or a deadlock would go unseen), and toggling a
/// reference on each watch at each wait costs two calls into the reactor
/// per read. This toggles one trigger: referenced when the first coroutine
/// starts waiting, unreferenced once none waits and a coroutine leaves the
/// CPU (so a reader that waits again at once toggles nothing).
#[derive(Default)]
pub(crate) struct WaitHold {
    waiting: Cell<u32>,
    /// The trigger is still referenced though nobody waits: the last
    /// waiter left, and the reference is dropped only when a coroutine
    /// leaves the CPU ([`settle`](WaitHold::settle)), the one time the
    /// loop can look at what keeps it alive. A reader that waits again
    /// before that (a ping-pong connection, every request) makes neither
    /// call, where it made two reactor calls per request.
    stale: Cell<bool>,
    /// Made on first need; `None` after that if the reactor has no
    /// triggers (then the watches stay visible and reference themselves).
    trigger: RefCell<Option<ffi::TriggerEvent>>,
    tried: Cell<bool>,
}

impl WaitHold {
    /// Whether the hold works on this reactor (makes its trigger, once).
    pub(crate) fn available(&self, reactor: &Rc<Reactor>) -> bool {
        if !self.tried.replace(true) {
            if let Ok(t) = reactor.trigger(Box::new(|_| {})) {
                t.set_ref(false);
                *self.trigger.borrow_mut() = Some(t);
            }
        }
        self.trigger.borrow().is_some()
    }

    /// One more waiter; the first references the trigger, unless the
    /// reference the last one left is still there.
    pub(crate) fn acquire(&self) {
        let n = self.waiting.get();
        if n == 0 && !self.stale.replace(false) {
            if let Some(t) = &*self.trigger.borrow() {
                t.set_ref(true);
            }
        }
        self.waiting.set(n + 1);
    }

    /// One waiter fewer; the last leaves the reference for
    /// [`settle`](WaitHold::settle).
    pub(crate) fn release(&self) {
        let n = self.waiting.get().saturating_sub(1);
        self.waiting.set(n);
        if n == 0 {
            self.stale.set(true);
        }
    }

    /// Drops a reference nobody waits behind any more: called as a
    /// coroutine leaves the CPU (it suspends or ends), before the
    /// scheduler can find the queue empty and ask whether anything keeps
    /// the loop alive (a stale reference would hide a deadlock, or keep a
    /// finished program's loop blocked).
    #[inline]
    pub(crate) fn settle(&self) {
        if self.stale.get() {
            self.unreference();
        }
    }

    #[cold]
    fn unreference(&self) {
        self.stale.set(false);
        if let Some(t) = &*self.trigger.borrow() {
            t.set_ref(false);
        }
    }

    /// Teardown: the trigger is disposed before the reactor is destroyed.
    fn close(&self) {
        drop(self.trigger.borrow_mut().take());
    }
}

/// How many joined coroutine states a runtime keeps for reuse (R4).
pub(crate) const SPARE_STATES: usize = 64;

impl Runtime {
    /// WD4: records a new coroutine's spawn location for the watchdog.
    #[inline]
    pub(crate) fn watch_spawn(&self, state: &CoroState) {
        if let Some(w) = &self.watchdog {
            w.register(state.id.get(), state.location);
            state.set_flag(WATCHED, true);
        }
    }

    /// The layer above's record, of its type `U` (R5).
    ///
    /// # Panics
    ///
    /// If none was set, or another type was: a bug of the layer above.
    pub(crate) fn upper<U: 'static>(&self) -> &U {
        self.upper
            .get()
            .and_then(|u| u.downcast_ref::<U>())
            .unwrap_or_else(|| panic!("R5: the runtime's upper record is set once, by run"))
    }

    /// Sets the layer above's record (R5); a second call is ignored.
    pub(crate) fn set_upper(&self, upper: Box<dyn Any>) {
        let _ = self.upper.set(upper);
    }

    /// The state of a new coroutine: a spare one rewritten in place (R4), or
    /// a new one.
    #[inline]
    pub(crate) fn new_state(
        &self,
        body: Body,
        location: &'static Location<'static>,
    ) -> Rc<CoroState> {
        let spare = self.spare_states.borrow_mut().pop();
        if let Some(mut state) = spare {
            if let Some(slot) = Rc::get_mut(&mut state) {
                slot.reuse(body, location);
                return state;
            }
        }
        new_state(body, location, false)
    }
}

/// Keeps a joined coroutine's state for reuse if nothing else refers to it
/// (R4); otherwise, or outside a runtime, just drops this reference.
#[inline]
pub(crate) fn recycle_state(mut state: Rc<CoroState>) {
    let Some(slot) = Rc::get_mut(&mut state) else {
        return;
    };
    slot.empty();
    with_runtime(move |rt| {
        let mut spare = rt.spare_states.borrow_mut();
        if spare.len() < SPARE_STATES {
            spare.push(state);
        }
    });
}

/// Enqueues a waiting coroutine with status 0 (a hint: it re-checks, P-22).
#[inline]
pub(crate) fn wake(state: &CoroState) {
    wake_raw(state.raw.get());
}

/// [`wake`] by the coroutine's handle (`CoroState::raw`, read by the
/// caller: null once it finished).
#[inline]
pub(crate) fn wake_raw(raw: *mut async_abi::AaCoroutine) {
    with_runtime(|rt| rt.sched.enqueue_raw(raw, async_abi::AA_OK));
}

impl Runtime {
    /// Called by the main coroutine's entry when its body panicked: keep the
    /// payload and shut the others down (they unwind).
    pub(crate) fn main_panicked(&self, payload: Box<dyn Any + Send>) {
        *self.main_panic.borrow_mut() = Some(payload);
        self.lifecycle.phase.set(lifecycle::Phase::Forced);
        lifecycle::force_all(self);
    }
}

/// Where a statically linked plugin comes from, as `load_image` reports it.
const LINKED: &str = "statically linked";

/// Finds and checks one plugin: `(label, image, origin)`, the origin being
/// [`LINKED`] or the file's path.
fn load_image(
    role: Role,
    choice: &Choice,
    dirs: &[std::path::PathBuf],
) -> Result<(String, loader::Image, String), Error> {
    let load = |m| Error::new(ErrorKind::Load, m);
    match choice {
        Choice::Embedded => {
            let image = loader::linked(role, "embedded").map_err(load)?;
            Ok(("embedded".to_owned(), image, LINKED.to_owned()))
        }
        // A built-in name: its library on ASYNC_PLUGIN_PATH (same build
        // only, L5), else the linked copy, so a program that depends on the
        // runtime runs every built-in name without building a plugin.
        Choice::Named(name) => match config::find_library(role, name, dirs) {
            Some(path) => {
                let image = loader::open_named(role, name, &path).map_err(load)?;
                Ok((name.clone(), image, path.display().to_string()))
            }
            None => {
                let image = loader::linked(role, name).map_err(load)?;
                Ok((name.clone(), image, LINKED.to_owned()))
            }
        },
        Choice::Path(path) => {
            let image = loader::open(role, path).map_err(|m| Error::new(ErrorKind::Load, m))?;
            Ok((
                path.display().to_string(),
                image,
                path.display().to_string(),
            ))
        }
        Choice::Auto => unreachable!("auto is resolved by the caller"),
    }
}

/// `"<label>"`, with where the plugin was loaded from when the label does
/// not say it (a plugin chosen by name): how a failure names its plugin.
pub(crate) fn named(label: &str, origin: &str) -> String {
    if label == origin || origin == LINKED {
        format!("\"{label}\"")
    } else {
        format!("\"{label}\" ({origin})")
    }
}

fn log_loaded(role: Role, label: &str, desc: &async_abi::AaPluginDesc, caps: u64, origin: &str) {
    let (name, version) = loader::describe(desc);
    let mut line = format!(
        "loaded {} \"{label}\": {name} {version} (ABI 1.{}, caps {caps:#x}) from {origin}",
        role.name(),
        desc.abi_minor,
    );
    if role == Role::Reactor {
        let missing = missing_caps(caps);
        if !missing.is_empty() {
            line.push_str("; without ");
            line.push_str(&missing.join("; without "));
        }
    }
    tracing::info!(target: "async_std_api::runtime", "{line}");
    events::info_fallback("async_std_api::runtime", &line);
}

/// What the host does without capability `bit` (`AA_CAP_X: <fallback>`),
/// for the line a user call's first fallback gives (F10).
pub(crate) fn fallback_text(bit: u64) -> Option<&'static str> {
    CAP_FALLBACKS
        .iter()
        .find(|(b, _)| *b == bit)
        .map(|(_, why)| *why)
}

/// Each optional capability and the host's fallback without it.
const CAP_FALLBACKS: [(u64, &str); 10] = {
    use async_abi::*;
    [
        (
            AA_CAP_POLL,
            "AA_CAP_POLL: readiness waits (io::Async, read/write timeouts) are unsupported",
        ),
        (AA_CAP_IO, "AA_CAP_IO: sockets and pipes are unsupported"),
        (
            AA_CAP_TRIGGER,
            "AA_CAP_TRIGGER: spawn_blocking and every pool fallback are unsupported",
        ),
        (
            AA_CAP_SIGNAL,
            "AA_CAP_SIGNAL: the signal module is unsupported",
        ),
        (
            AA_CAP_PROCESS,
            "AA_CAP_PROCESS: child exits are watched on the blocking pool",
        ),
        (AA_CAP_FS_WATCH, "AA_CAP_FS_WATCH: fs::watch is unsupported"),
        (
            AA_CAP_DNS,
            "AA_CAP_DNS: names are resolved on the blocking pool",
        ),
        (
            AA_CAP_IO_NATIVE,
            "AA_CAP_IO_NATIVE: file reads and writes run on the blocking pool",
        ),
        (
            AA_CAP_IO_DGRAM,
            "AA_CAP_IO_DGRAM: datagram sockets wait for readiness",
        ),
        (
            AA_CAP_IO_FILE,
            "AA_CAP_IO_FILE: opening, stat, sync and directory calls run on the blocking pool",
        ),
    ]
};

/// The host's fallback for each optional reactor capability that `caps`
/// lacks, for the line that reports a loaded reactor (the header documents
/// each bit).
fn missing_caps(caps: u64) -> Vec<&'static str> {
    CAP_FALLBACKS
        .iter()
        .filter(|(bit, _)| caps & bit == 0)
        .map(|(_, why)| *why)
        .collect()
}

/// The one line on stderr that says which plugins came from files, printed
/// when either did (once per process for each distinct line: `run_per_core`
/// starts the same pair on every loop). Files are what can be stale or
/// foreign; the linked copies are the program itself.
fn notice_files(s_label: &str, s_origin: &str, r_label: &str, r_origin: &str) {
    if s_origin == LINKED && r_origin == LINKED {
        return;
    }
    let one = |role: &str, label: &str, origin: &str| {
        if origin == LINKED {
            format!("{role} \"{label}\" (linked in)")
        } else if label == origin {
            format!("{role} from {origin}")
        } else {
            format!("{role} \"{label}\" from {origin}")
        }
    };
    let line = format!(
        "async-std-api: {}, {}; ASYNC_PLUGIN_NOTICE=0 hides this line",
        one("scheduler", s_label, s_origin),
        one("reactor", r_label, r_origin)
    );
    static PRINTED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut printed = PRINTED.lock().unwrap_or_else(|e| e.into_inner());
    if !printed.contains(&line) {
        eprintln!("{line}");
        printed.push(line);
    }
}

fn start_reactor(
    label: &str,
    image: &loader::Image,
    origin: &str,
    options: &[(String, String)],
) -> Result<Reactor, Error> {
    let loaded = loader::reactor(label, image).map_err(|m| Error::new(ErrorKind::Load, m))?;
    let desc = loaded.desc;
    let reactor =
        Reactor::create(loaded, label, origin, options).map_err(|(loaded, msg, status)| {
            loaded.deinit();
            // A refused option is a configuration error: `auto` must not hide
            // it by falling back to another reactor.
            let kind = if status == async_abi::AA_E_INVALID {
                ErrorKind::Config
            } else {
                ErrorKind::Plugin
            };
            Error::new(kind, format!("cannot start reactor \"{label}\": {msg}"))
        })?;
    if reactor.caps() & async_abi::AA_CAP_TIMER == 0 {
        reactor.destroy(64);
        return Err(Error::new(
            ErrorKind::Plugin,
            format!(
                "cannot start reactor \"{label}\" ({origin}): it lacks AA_CAP_TIMER, which the \
                 host needs for every timed wait (delay, timeouts, shutdown)"
            ),
        ));
    }
    log_loaded(Role::Reactor, label, &desc, reactor.caps(), origin);
    Ok(reactor)
}

fn create_reactor(cfg: &Resolved) -> Result<Reactor, Error> {
    if cfg.reactor != Choice::Auto {
        let (label, image, origin) = load_image(Role::Reactor, &cfg.reactor, &cfg.search_dirs)?;
        return start_reactor(&label, &image, &origin, &cfg.reactor_options);
    }
    let uring = Choice::Named("uring".to_owned());
    let (label, image, origin) = load_image(Role::Reactor, &uring, &cfg.search_dirs)?;
    match start_reactor(&label, &image, &origin, &cfg.reactor_options) {
        Ok(r) => Ok(r),
        // Only a kernel without io_uring (or one that refuses the ring) is
        // a reason to fall back: a refused option, or a library on
        // ASYNC_PLUGIN_PATH that does not load, is the configuration's
        // mistake and is reported.
        Err(e) if e.kind() != ErrorKind::Plugin => Err(e),
        Err(e) => {
            let line = format!("reactor auto: uring unavailable ({e}); using mio");
            tracing::info!(target: "async_std_api::runtime", "{line}");
            events::info_fallback("async_std_api::runtime", &line);
            let mio = Choice::Named("mio".to_owned());
            let (label, image, origin) = load_image(Role::Reactor, &mio, &cfg.search_dirs)?;
            start_reactor(&label, &image, &origin, &cfg.reactor_options)
        }
    }
}

impl Runtime {
    /// Resolves the configuration, loads both plugins and creates a reactor
    /// and a scheduler (R2, R3). Every error is one line, returned before
    /// any user code runs.
    pub(crate) fn start(explicit: &Explicit) -> Result<Runtime, Error> {
        if ffi::current::is_installed() {
            return Err(Error::new(
                ErrorKind::AlreadyRunning,
                "a runtime is already running on this thread",
            ));
        }
        let cfg = config::resolve(explicit, &|k| std::env::var(k).ok())
            .map_err(|m| Error::new(ErrorKind::Config, m))?;
        super::panic_hook::install();
        fd_table::grow_once();

        // Load both images first, so a bad scheduler is reported before any
        // reactor is created (R3).
        let (s_label, s_image, s_origin) =
            load_image(Role::Scheduler, &cfg.scheduler, &cfg.search_dirs)?;
        let s_loaded =
            loader::scheduler(&s_label, &s_image).map_err(|m| Error::new(ErrorKind::Load, m))?;
        let reactor = match create_reactor(&cfg) {
            Ok(r) => Rc::new(r),
            Err(e) => {
                s_loaded.deinit();
                return Err(e);
            }
        };
        let s_desc = s_loaded.desc;
        let watched = cfg.max_activity_interval.is_some();
        let sched = match Scheduler::create(
            s_loaded,
            &reactor,
            watched,
            // Unset, the scheduler gets the host's per-build default as its
            // own, which the scheduler option `stack_size` still overrides;
            // coroutines then spawn with size 0 (the scheduler's default).
            if cfg.stack_size == 0 {
                builder::DEFAULT_STACK_SIZE
            } else {
                cfg.stack_size
            },
            &cfg.scheduler_options,
        ) {
            Ok(s) => s,
            Err((loaded, msg)) => {
                loaded.deinit();
                reactor.destroy(64);
                return Err(Error::new(
                    ErrorKind::Plugin,
                    format!("cannot start scheduler \"{s_label}\": {msg}"),
                ));
            }
        };
        log_loaded(Role::Scheduler, &s_label, &s_desc, sched.caps(), &s_origin);
        if cfg.plugin_notice {
            notice_files(&s_label, &s_origin, reactor.label(), reactor.origin());
        }
        sched.trace.set(cfg.trace);
        let remote = remote::Remote::new(reactor.clone());
        Ok(Runtime {
            sched,
            reactor,
            stack_size: cfg.stack_size,
            hooks: cfg.hooks,
            #[cfg(feature = "hooks")]
            foreign_tls: if cfg.hooks {
                crate::core::foreign_tls::ForeignTls::for_this_thread()
            } else {
                None
            },
            zombie_timeout: cfg.zombie_timeout,
            lifecycle: lifecycle::Lifecycle::new(),
            watchdog: cfg
                .max_activity_interval
                .map(|i| watchdog::Watchdog::start(i, explicit.events.clone())),
            cancel_watch: cancel_watch::CancelWatch::new(cfg.cancellation_timeout),
            events: explicit.events.clone(),
            remote,
            wait_hold: WaitHold::default(),
            fd_watches: Default::default(),
            pool: pool::Pool::new(cfg.blocking_threads),
            upper: OnceCell::new(),
            main_panic: RefCell::new(None),
            spare_states: RefCell::new(Vec::new()),
            scheduler_label: named(&s_label, &s_origin),
        })
    }

    /// Spawns the main coroutine (`is_main`: its panic shuts the runtime
    /// down) and returns its state; the caller places it in a scope.
    pub(crate) fn spawn_main(
        &self,
        body: Body,
        location: &'static Location<'static>,
    ) -> Result<Rc<CoroState>, Error> {
        let main = new_state(body, location, true);
        match self.sched.spawn(
            &main,
            self.stack_size,
            main.location,
            async_abi::AA_PRIORITY_NORMAL,
        ) {
            Ok(()) => {
                self.watch_spawn(&main);
                Ok(main)
            }
            Err(status) => Err(Error::new(
                ErrorKind::Plugin,
                format!(
                    "scheduler {} cannot start the main coroutine: {}",
                    self.scheduler_label,
                    status_text(status)
                ),
            )),
        }
    }

    /// One line for a run the scheduler ended with `status`, blaming the
    /// right plugin: a failed `run_once` is the reactor's failure, told
    /// with its own message first and the status it returned (the
    /// scheduler only stopped the run); anything else is the scheduler's,
    /// with its message.
    pub(crate) fn plugin_failure(&self, status: AaStatus) -> String {
        let sched = self
            .sched
            .last_error()
            .unwrap_or_else(|| status_text(status));
        if let Some(returned) = sched.strip_prefix("reactor run_once failed with ") {
            let reactor = self
                .reactor
                .last_error()
                .unwrap_or_else(|| "it gave no message".to_owned());
            return format!(
                "reactor {} failed: {reactor} (its run_once returned {returned}; scheduler {} ended the run)",
                self.reactor.named(),
                self.scheduler_label
            );
        }
        format!("scheduler {} failed: {sched}", self.scheduler_label)
    }

    /// Destroys the scheduler, then the reactor (R2). A scheduler that still
    /// holds coroutines (it should not, after `run`) is shut down and run
    /// once more so they unwind. Called inside [`installed`], after the
    /// layer above dropped its timers (R5).
    pub(crate) fn teardown(&self) {
        self.cancel_watch.clear();
        self.pool.close();
        self.remote.close();
        self.fd_watches.clear();
        self.wait_hold.close();
        let mut destroyed = self.sched.destroy();
        if destroyed == async_abi::AA_E_BUSY {
            let _ = self.sched.shutdown(AA_E_SHUTDOWN);
            let _ = self.sched.run();
            destroyed = self.sched.destroy();
        }
        if destroyed < 0 {
            tracing::warn!(
                target: "async_std_api::runtime",
                "scheduler destroy failed ({}): leaking it and the reactor",
                status_text(destroyed)
            );
        } else if !self.reactor.destroy(64) {
            tracing::warn!(
                target: "async_std_api::runtime",
                "reactor still busy after draining: leaking it"
            );
        }
    }

    /// After the run: stops the watchdog and resumes a panic of the main
    /// coroutine on the caller's thread.
    pub(crate) fn finish(&mut self) {
        if let Some(w) = self.watchdog.as_mut() {
            w.stop();
        }
        if let Some(payload) = self.main_panic.borrow_mut().take() {
            std::panic::resume_unwind(payload);
        }
    }
}

#[cfg(test)]
mod named_tests {
    #[test]
    fn d40_a_failure_names_a_plugin_by_its_label_and_where_it_came_from() {
        assert_eq!(
            super::named("mio", "/opt/lib/libreactor_mio.so"),
            "\"mio\" (/opt/lib/libreactor_mio.so)"
        );
        assert_eq!(super::named("/x/liby.so", "/x/liby.so"), "\"/x/liby.so\"");
        assert_eq!(
            super::named("embedded", "statically linked"),
            "\"embedded\""
        );
    }
}
