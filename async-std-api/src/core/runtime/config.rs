//! Resolving the configuration: builder, then environment, then config file,
//! then the embedded default.
//!
//! Owns: parsing of `ASYNC_*` variables and of the TOML file, the name table
//! (ARCHITECTURE "Plugins, names and configuration") and the plugin file
//! search. Every error is one line naming the value and the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::loader::Role;

/// What the builder set explicitly.
#[derive(Debug, Default, Clone)]
pub(crate) struct Explicit {
    pub(crate) scheduler: Option<String>,
    pub(crate) reactor: Option<String>,
    pub(crate) scheduler_options: Vec<(String, String)>,
    pub(crate) reactor_options: Vec<(String, String)>,
    pub(crate) config_file: Option<PathBuf>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) zombie_timeout: Option<Duration>,
    /// `Some(ZERO)`: explicitly off.
    pub(crate) max_activity_interval: Option<Duration>,
    /// `Builder::warn_blocking`: the watchdog on by default in a debug build.
    pub(crate) warn_blocking: Option<bool>,
    /// `Some(ZERO)`: explicitly off.
    pub(crate) cancellation_timeout: Option<Duration>,
    /// The blocking pool's size.
    pub(crate) blocking_threads: Option<usize>,
    /// Capture stacks at suspensions (`Coroutine::trace`).
    pub(crate) trace: Option<bool>,
    /// Blocking C library calls suspend only their coroutine (`hooks`).
    pub(crate) hooks: Option<bool>,
    /// Where events go besides `tracing` (`core::events`).
    pub(crate) events: Option<crate::core::events::Handler>,
    /// The stderr notice for a plugin loaded from a file (`Some(false)`:
    /// off).
    pub(crate) plugin_notice: Option<bool>,
}

/// The activity interval `Builder::warn_blocking` turns on in a debug build.
pub(crate) const DEFAULT_WARN_BLOCKING_INTERVAL: Duration = Duration::from_millis(100);

/// The RFC's `async.zombie_coroutine_timeout` default (php.ini defaults).
pub(crate) const DEFAULT_ZOMBIE_TIMEOUT: Duration = Duration::from_secs(5);

/// D-1(c): how long a cancelled coroutine may run before it is reported,
/// unless configured.
pub(crate) const DEFAULT_CANCELLATION_TIMEOUT: Duration = Duration::from_secs(10);

/// One plugin to load, after name resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The statically linked plugin.
    Embedded,
    /// A built-in name (`fifo`, `context`, `corosensei`, `chaos`, `mio`,
    /// `uring`): its library from the first `ASYNC_PLUGIN_PATH` directory
    /// that holds one, else the statically linked copy.
    Named(String),
    /// A shared library given by path.
    Path(PathBuf),
    /// Reactor `auto`: `uring` if it loads and starts, else `mio`.
    Auto,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) scheduler: Choice,
    pub(crate) reactor: Choice,
    pub(crate) scheduler_options: Vec<(String, String)>,
    pub(crate) reactor_options: Vec<(String, String)>,
    pub(crate) stack_size: usize,
    /// The `ASYNC_PLUGIN_PATH` directories, in order: the only places a
    /// built-in name's library is looked for.
    pub(crate) search_dirs: Vec<PathBuf>,
    /// R-S10: how long zombies may run once nothing else does.
    pub(crate) zombie_timeout: Duration,
    /// R-T1: the maximum activity interval (`None`: no watchdog).
    pub(crate) max_activity_interval: Option<Duration>,
    /// D-1(c): the cancellation timeout (`None`: no report).
    pub(crate) cancellation_timeout: Option<Duration>,
    /// The blocking pool's size (`core::runtime::pool`).
    pub(crate) blocking_threads: usize,
    /// Capture stacks at suspensions (`Coroutine::trace`).
    pub(crate) trace: bool,
    /// Print the one-line notice when a plugin comes from a file.
    pub(crate) plugin_notice: bool,
    /// Blocking C library calls suspend only their coroutine (`hooks`).
    pub(crate) hooks: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    scheduler: Option<FileEntry>,
    reactor: Option<FileEntry>,
    runtime: Option<RuntimeTable>,
}

/// The `[runtime]` table: the host's own settings (times in milliseconds).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeTable {
    zombie_coroutine_timeout: Option<u64>,
    max_activity_interval: Option<u64>,
    cancellation_timeout: Option<u64>,
    blocking_threads: Option<usize>,
    trace: Option<bool>,
    plugin_notice: Option<bool>,
    hooks: Option<bool>,
}

/// `scheduler = "name-or-path"` or a `[scheduler]` table. Written by hand
/// (not `untagged`) so errors inside the table keep their message and line.
#[derive(Debug)]
enum FileEntry {
    Short(String),
    Table(FileTable),
}

impl<'de> Deserialize<'de> for FileEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FileEntry, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = FileEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a plugin name or path, or a table with name or path")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FileEntry, E> {
                Ok(FileEntry::Short(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<FileEntry, A::Error> {
                FileTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(FileEntry::Table)
            }
        }
        d.deserialize_any(Entry)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTable {
    name: Option<String>,
    path: Option<String>,
    stack_size: Option<usize>,
    #[serde(default)]
    options: BTreeMap<String, toml::Value>,
}

/// One source's settings for one role.
#[derive(Debug, Default, Clone)]
struct Layer {
    value: Option<String>,
    options: Vec<(String, String)>,
}

/// Reads the environment and the config file and applies the precedence.
pub(crate) fn resolve(
    explicit: &Explicit,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, String> {
    // Environment.
    let env_sched_opts = match env("ASYNC_SCHEDULER_OPTIONS") {
        Some(v) => parse_options("ASYNC_SCHEDULER_OPTIONS", &v)?,
        None => Vec::new(),
    };
    let env_reactor_opts = match env("ASYNC_REACTOR_OPTIONS") {
        Some(v) => parse_options("ASYNC_REACTOR_OPTIONS", &v)?,
        None => Vec::new(),
    };
    let env_sched = Layer {
        value: env("ASYNC_SCHEDULER").filter(|v| !v.is_empty()),
        options: env_sched_opts,
    };
    let env_reactor = Layer {
        value: env("ASYNC_REACTOR").filter(|v| !v.is_empty()),
        options: env_reactor_opts,
    };

    // Config file.
    let file = explicit.config_file.clone().or_else(|| {
        env("ASYNC_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let (file_sched, file_reactor, file_stack, file_runtime) = match &file {
        Some(path) => read_file(path)?,
        None => (
            Layer::default(),
            Layer::default(),
            None,
            RuntimeTable::default(),
        ),
    };
    let env_ms = |var: &str| -> Result<Option<Duration>, String> {
        match env(var).filter(|v| !v.trim().is_empty()) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map(|ms| Some(Duration::from_millis(ms)))
                .map_err(|_| format!("invalid {var} \"{v}\": expected milliseconds")),
        }
    };
    let zombie_timeout = explicit
        .zombie_timeout
        .or(env_ms("ASYNC_ZOMBIE_COROUTINE_TIMEOUT")?)
        .or(file_runtime
            .zombie_coroutine_timeout
            .map(Duration::from_millis))
        .unwrap_or(DEFAULT_ZOMBIE_TIMEOUT);
    let max_activity_interval = explicit
        .max_activity_interval
        .or(env_ms("ASYNC_MAX_ACTIVITY_INTERVAL")?)
        .or(file_runtime
            .max_activity_interval
            .map(Duration::from_millis))
        .or(
            // Builder::warn_blocking: a default interval in a debug build,
            // where nothing else set one (an explicit 0 stays off).
            (explicit.warn_blocking == Some(true) && cfg!(debug_assertions))
                .then_some(DEFAULT_WARN_BLOCKING_INTERVAL),
        )
        .filter(|d| !d.is_zero());
    let cancellation_timeout = Some(
        explicit
            .cancellation_timeout
            .or(env_ms("ASYNC_CANCELLATION_TIMEOUT")?)
            .or(file_runtime.cancellation_timeout.map(Duration::from_millis))
            .unwrap_or(DEFAULT_CANCELLATION_TIMEOUT),
    )
    .filter(|d| !d.is_zero());
    let env_threads = match env("ASYNC_BLOCKING_THREADS").filter(|v| !v.trim().is_empty()) {
        None => None,
        Some(v) => Some(v.trim().parse::<usize>().map_err(|_| {
            format!("invalid ASYNC_BLOCKING_THREADS \"{v}\": expected a number of threads")
        })?),
    };
    let blocking_threads = explicit
        .blocking_threads
        .or(env_threads)
        .or(file_runtime.blocking_threads)
        .unwrap_or_else(super::pool::default_threads);
    let env_trace = env_flag(env, "ASYNC_TRACE")?;
    let trace = explicit
        .trace
        .or(env_trace)
        .or(file_runtime.trace)
        .unwrap_or(false);
    let plugin_notice = explicit
        .plugin_notice
        .or(env_flag(env, "ASYNC_PLUGIN_NOTICE")?)
        .or(file_runtime.plugin_notice)
        .unwrap_or(true);
    let env_hooks = env_flag(env, "ASYNC_HOOKS")?;
    let hooks = explicit
        .hooks
        .or(env_hooks)
        .or(file_runtime.hooks)
        .unwrap_or(false);
    if hooks && !cfg!(feature = "hooks") {
        let source = if explicit.hooks.is_some() {
            "Builder::hooks(true)"
        } else if env_hooks.is_some() {
            "ASYNC_HOOKS"
        } else {
            "hooks = true in the config file"
        };
        return Err(format!(
            "{source} asks for hooks, but async-std-api was built without its `hooks` \
             feature: add features = [\"hooks\"] to its dependency"
        ));
    }
    if blocking_threads == 0 {
        return Err(
            "invalid blocking_threads 0: the blocking pool needs at least one thread".into(),
        );
    }

    let builder_sched = Layer {
        value: explicit.scheduler.clone(),
        options: explicit.scheduler_options.clone(),
    };
    let builder_reactor = Layer {
        value: explicit.reactor.clone(),
        options: explicit.reactor_options.clone(),
    };

    // Only the directories asked for: a file lying next to the executable
    // or in a target directory is never picked up by itself (a stale one
    // there used to win over everything but a path).
    let mut search_dirs = Vec::new();
    if let Some(p) = env("ASYNC_PLUGIN_PATH") {
        for dir in p.split(':').filter(|d| !d.is_empty()) {
            push_unique(&mut search_dirs, PathBuf::from(dir));
        }
    }

    let (scheduler, scheduler_options) =
        combine(Role::Scheduler, [&builder_sched, &env_sched, &file_sched])?;
    let (reactor, reactor_options) = combine(
        Role::Reactor,
        [&builder_reactor, &env_reactor, &file_reactor],
    )?;
    Ok(Resolved {
        scheduler,
        reactor,
        scheduler_options,
        reactor_options,
        stack_size: explicit.stack_size.or(file_stack).unwrap_or(0),
        search_dirs,
        zombie_timeout,
        max_activity_interval,
        cancellation_timeout,
        blocking_threads,
        trace,
        plugin_notice,
        hooks,
    })
}

/// A boolean variable: `1`/`true`/`on` or `0`/`false`/`off`; unset or blank
/// is `None`.
fn env_flag(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<bool>, String> {
    match env(name).filter(|v| !v.trim().is_empty()) {
        None => Ok(None),
        Some(v) => match v.trim() {
            "1" | "true" | "on" => Ok(Some(true)),
            "0" | "false" | "off" => Ok(Some(false)),
            _ => Err(format!("invalid {name} \"{v}\": expected 1 or 0")),
        },
    }
}

/// Applies precedence (first layer wins) to the choice and merges options
/// key by key; a scheduler name that implies an engine adds `engine=<name>`
/// at the precedence of the layer that named it.
fn combine(role: Role, layers: [&Layer; 3]) -> Result<(Choice, Vec<(String, String)>), String> {
    let mut choice = None;
    let mut layered: Vec<Vec<(String, String)>> = Vec::new();
    for layer in layers {
        let mut opts = layer.options.clone();
        if choice.is_none() {
            if let Some(value) = &layer.value {
                let (c, implied) = resolve_name(role, value)?;
                if let Some((k, v)) = implied {
                    if !opts.iter().any(|(key, _)| key == k) {
                        opts.insert(0, (k.to_owned(), v.to_owned()));
                    }
                }
                choice = Some(c);
            }
        }
        layered.push(opts);
    }
    // Lowest precedence first, so later inserts override.
    let mut merged: Vec<(String, String)> = Vec::new();
    for opts in layered.into_iter().rev() {
        for (k, v) in opts {
            match merged.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v,
                None => merged.push((k, v)),
            }
        }
    }
    let choice = choice.unwrap_or(Choice::Embedded);
    Ok((choice, merged))
}

/// The file name a plugin name stands for.
pub(crate) fn library_for(role: Role, name: &str) -> Option<&'static str> {
    match (role, name) {
        (Role::Scheduler, "fifo" | "context" | "corosensei" | "chaos") => {
            Some("libasync_scheduler.so")
        }
        (Role::Reactor, "mio") => Some("libreactor_mio.so"),
        (Role::Reactor, "uring") => Some("libreactor_uring.so"),
        _ => None,
    }
}

type Implied = Option<(&'static str, &'static str)>;

fn resolve_name(role: Role, value: &str) -> Result<(Choice, Implied), String> {
    if value.contains('/') || value.ends_with(".so") {
        return Ok((Choice::Path(PathBuf::from(value)), None));
    }
    let named = |implied: Implied| Ok((Choice::Named(value.to_owned()), implied));
    match (role, value) {
        (_, "embedded") => Ok((Choice::Embedded, None)),
        (Role::Scheduler, "fifo") => named(None),
        (Role::Scheduler, "context") => named(Some(("engine", "context"))),
        (Role::Scheduler, "corosensei") => named(Some(("engine", "corosensei"))),
        (Role::Scheduler, "chaos") => named(Some(("policy", "chaos"))),
        (Role::Reactor, "mio" | "uring") => named(None),
        (Role::Reactor, "auto") => Ok((Choice::Auto, None)),
        (Role::Scheduler, _) => Err(format!(
            "unknown scheduler \"{value}\": expected embedded, fifo, context, corosensei, chaos or a path to a shared library"
        )),
        (Role::Reactor, _) => Err(format!(
            "unknown reactor \"{value}\": expected embedded, mio, uring, auto or a path to a shared library"
        )),
    }
}

/// The library of a built-in name (`fifo`, `mio`, ...) in the first
/// search directory (`ASYNC_PLUGIN_PATH`) that holds it, if any; `None`
/// means the statically linked copy.
pub(crate) fn find_library(role: Role, name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    let file = library_for(role, name).expect("a named plugin has a library");
    dirs.iter().map(|dir| dir.join(file)).find(|p| p.is_file())
}

/// The workspace package that builds `file` (`libreactor_uring.so` is
/// `reactor-uring-cdylib`), for the fix in a refusal.
pub(crate) fn package_of(file: &str) -> String {
    let stem = file.trim_start_matches("lib").trim_end_matches(".so");
    format!("{}-cdylib", stem.replace('_', "-"))
}

fn push_unique(dirs: &mut Vec<PathBuf>, dir: PathBuf) {
    if !dirs.contains(&dir) {
        dirs.push(dir);
    }
}

/// One option of a config file's `[<role>.options]` table, as `key=value`
/// pairs: TOML reads an unquoted dotted key (`mio.events_capacity = 16`)
/// as a table (`mio = { events_capacity = 16 }`), which is joined back into
/// the dotted key the plugin expects.
fn flatten_option(key: String, value: toml::Value, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                flatten_option(format!("{key}.{k}"), v, out);
            }
        }
        toml::Value::String(s) => out.push((key, s)),
        other => out.push((key, other.to_string())),
    }
}

/// Parses `key=value,key=value`.
fn parse_options(var: &str, text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.push((k.trim().to_owned(), v.trim().to_owned()))
            }
            _ => return Err(format!("invalid {var} \"{item}\": expected key=value")),
        }
    }
    Ok(out)
}

fn read_file(path: &Path) -> Result<(Layer, Layer, Option<usize>, RuntimeTable), String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| {
        let reason = match e.kind() {
            std::io::ErrorKind::NotFound => "file not found".to_owned(),
            _ => e.to_string().to_lowercase(),
        };
        format!("invalid config file \"{shown}\": {reason}")
    })?;
    let parsed: FileConfig = toml::from_str(&text).map_err(|e| {
        let mut msg = e.message().trim().replace('\n', " ");
        if let Some(span) = e.span() {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            msg = format!("{msg} at line {line}");
        }
        format!("invalid config file \"{shown}\": {msg}")
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let layer = |entry: Option<FileEntry>, what: &str| -> Result<(Layer, Option<usize>), String> {
        let rel = |v: String| -> String {
            if v.contains('/') || v.ends_with(".so") {
                let p = Path::new(&v);
                if p.is_relative() {
                    return base.join(p).display().to_string();
                }
            }
            v
        };
        match entry {
            None => Ok((Layer::default(), None)),
            Some(FileEntry::Short(v)) => Ok((
                Layer {
                    value: Some(rel(v)),
                    options: Vec::new(),
                },
                None,
            )),
            Some(FileEntry::Table(t)) => {
                if t.name.is_some() && t.path.is_some() {
                    return Err(format!(
                        "invalid config file \"{shown}\": [{what}] has both name and path"
                    ));
                }
                let value = match (t.name, t.path) {
                    (Some(n), None) => Some(n),
                    (None, Some(p)) => {
                        let p = PathBuf::from(p);
                        Some(
                            if p.is_relative() { base.join(p) } else { p }
                                .display()
                                .to_string(),
                        )
                    }
                    _ => None,
                };
                let mut options = Vec::new();
                for (k, v) in t.options {
                    flatten_option(k, v, &mut options);
                }
                Ok((Layer { value, options }, t.stack_size))
            }
        }
    };
    let (s, stack) = layer(parsed.scheduler, "scheduler")?;
    let (r, _) = layer(parsed.reactor, "reactor")?;
    Ok((s, r, stack, parsed.runtime.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn builder_beats_environment_and_engine_is_implied() {
        let explicit = Explicit {
            scheduler: Some("corosensei".into()),
            ..Explicit::default()
        };
        let r = resolve(&explicit, &env_of(&[("ASYNC_SCHEDULER", "fifo")])).unwrap();
        assert_eq!(r.scheduler, Choice::Named("corosensei".into()));
        assert_eq!(
            r.scheduler_options,
            vec![("engine".to_owned(), "corosensei".to_owned())]
        );
    }

    #[test]
    fn options_must_be_key_value() {
        let e = resolve(
            &Explicit::default(),
            &env_of(&[("ASYNC_SCHEDULER_OPTIONS", "enginecontext")]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "invalid ASYNC_SCHEDULER_OPTIONS \"enginecontext\": expected key=value"
        );
    }

    #[test]
    fn unknown_names_list_the_choices() {
        let e = resolve(&Explicit::default(), &env_of(&[("ASYNC_REACTOR", "foo")])).unwrap_err();
        assert_eq!(
            e,
            "unknown reactor \"foo\": expected embedded, mio, uring, auto or a path to a shared library"
        );
    }

    #[test]
    fn r_s10_zombie_timeout_defaults_to_five_seconds_and_has_every_source() {
        let r = resolve(&Explicit::default(), &env_of(&[])).unwrap();
        assert_eq!(r.zombie_timeout, Duration::from_secs(5));
        assert_eq!(r.max_activity_interval, None);
        let r = resolve(
            &Explicit::default(),
            &env_of(&[
                ("ASYNC_ZOMBIE_COROUTINE_TIMEOUT", "250"),
                ("ASYNC_MAX_ACTIVITY_INTERVAL", "3000"),
            ]),
        )
        .unwrap();
        assert_eq!(r.zombie_timeout, Duration::from_millis(250));
        assert_eq!(r.max_activity_interval, Some(Duration::from_secs(3)));
        let explicit = Explicit {
            zombie_timeout: Some(Duration::from_millis(7)),
            max_activity_interval: Some(Duration::ZERO),
            ..Explicit::default()
        };
        let r = resolve(
            &explicit,
            &env_of(&[
                ("ASYNC_ZOMBIE_COROUTINE_TIMEOUT", "250"),
                ("ASYNC_MAX_ACTIVITY_INTERVAL", "3000"),
            ]),
        )
        .unwrap();
        assert_eq!(r.zombie_timeout, Duration::from_millis(7));
        assert_eq!(
            r.max_activity_interval, None,
            "zero switches the watchdog off"
        );
        let e = resolve(
            &Explicit::default(),
            &env_of(&[("ASYNC_ZOMBIE_COROUTINE_TIMEOUT", "soon")]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "invalid ASYNC_ZOMBIE_COROUTINE_TIMEOUT \"soon\": expected milliseconds"
        );
    }

    #[test]
    fn hooks_come_from_the_builder_the_environment_or_the_file_in_that_order() {
        let path = std::env::temp_dir().join(format!("aa-cfg-hooks-{}.toml", std::process::id()));
        std::fs::write(&path, "[runtime]\nhooks = true\n").unwrap();
        let file = path.to_str().unwrap().to_owned();
        let file_env = move |k: &str| (k == "ASYNC_CONFIG").then(|| file.clone());
        let with_env = |v: &'static str| {
            let file = path.to_str().unwrap().to_owned();
            move |k: &str| match k {
                "ASYNC_CONFIG" => Some(file.clone()),
                "ASYNC_HOOKS" => Some(v.to_owned()),
                _ => None,
            }
        };
        let off = Explicit {
            hooks: Some(false),
            ..Explicit::default()
        };
        let none = Explicit::default();
        let r = (
            resolve(&none, &env_of(&[])).map(|r| r.hooks),
            resolve(&none, &file_env).map(|r| r.hooks),
            resolve(&none, &with_env("0")).map(|r| r.hooks),
            resolve(&off, &with_env("1")).map(|r| r.hooks),
            resolve(&none, &with_env("maybe")).map(|r| r.hooks),
        );
        std::fs::remove_file(&path).unwrap();
        let bad = Err("invalid ASYNC_HOOKS \"maybe\": expected 1 or 0".to_owned());
        if cfg!(feature = "hooks") {
            assert_eq!(r, (Ok(false), Ok(true), Ok(false), Ok(false), bad));
        } else {
            // Asking without the feature built in is refused, naming the
            // source and the fix.
            let refused = |source: &str| {
                Err(format!(
                    "{source} asks for hooks, but async-std-api was built without its `hooks` \
                     feature: add features = [\"hooks\"] to its dependency"
                ))
            };
            assert_eq!(
                r,
                (
                    Ok(false),
                    refused("hooks = true in the config file"),
                    Ok(false),
                    Ok(false),
                    bad
                )
            );
            let on = Explicit {
                hooks: Some(true),
                ..Explicit::default()
            };
            assert_eq!(
                resolve(&on, &env_of(&[])).map(|r| r.hooks),
                refused("Builder::hooks(true)")
            );
            assert_eq!(
                resolve(&none, &env_of(&[("ASYNC_HOOKS", "1")])).map(|r| r.hooks),
                refused("ASYNC_HOOKS")
            );
        }
    }

    #[test]
    fn an_unquoted_dotted_option_key_in_a_config_file_is_the_dotted_key() {
        let path = std::env::temp_dir().join(format!("aa-cfg-dotted-{}.toml", std::process::id()));
        std::fs::write(
            &path,
            "[reactor]\nname = \"mio\"\n[reactor.options]\nmio.events_capacity = 16\n\
             \"uring.sq_entries\" = \"64\"\n",
        )
        .unwrap();
        let (_, reactor, _, _) = super::read_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let mut options = reactor.options;
        options.sort();
        assert_eq!(
            options,
            [
                ("mio.events_capacity".to_owned(), "16".to_owned()),
                ("uring.sq_entries".to_owned(), "64".to_owned())
            ]
        );
    }

    #[test]
    fn only_the_plugin_path_is_searched_in_its_order() {
        let r = resolve(
            &Explicit::default(),
            &env_of(&[
                ("ASYNC_PLUGIN_PATH", "/a::/b:/a"),
                ("CARGO_TARGET_DIR", "/t"),
            ]),
        )
        .unwrap();
        assert_eq!(r.search_dirs, [PathBuf::from("/a"), PathBuf::from("/b")]);
        let r = resolve(&Explicit::default(), &env_of(&[("CARGO_TARGET_DIR", "/t")])).unwrap();
        assert_eq!(r.search_dirs, Vec::<PathBuf>::new(), "not the target dir");
    }

    #[test]
    fn the_plugin_notice_is_on_by_default_and_has_every_source() {
        let r = resolve(&Explicit::default(), &env_of(&[])).unwrap();
        assert!(r.plugin_notice);
        let off = env_of(&[("ASYNC_PLUGIN_NOTICE", "0")]);
        assert!(!resolve(&Explicit::default(), &off).unwrap().plugin_notice);
        let explicit = Explicit {
            plugin_notice: Some(true),
            ..Explicit::default()
        };
        assert!(
            resolve(&explicit, &off).unwrap().plugin_notice,
            "the builder wins"
        );
        let e = resolve(
            &Explicit::default(),
            &env_of(&[("ASYNC_PLUGIN_NOTICE", "yes please")]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "invalid ASYNC_PLUGIN_NOTICE \"yes please\": expected 1 or 0"
        );
    }

    #[test]
    fn package_of_names_the_cdylib_package_of_a_library() {
        assert_eq!(package_of("libreactor_uring.so"), "reactor-uring-cdylib");
        assert_eq!(
            package_of("libasync_scheduler.so"),
            "async-scheduler-cdylib"
        );
    }

    #[test]
    fn options_merge_by_key_with_precedence() {
        let explicit = Explicit {
            scheduler_options: vec![("a".into(), "builder".into())],
            ..Explicit::default()
        };
        let r = resolve(
            &explicit,
            &env_of(&[("ASYNC_SCHEDULER_OPTIONS", "a=env, b=env")]),
        )
        .unwrap();
        assert_eq!(
            r.scheduler_options,
            vec![("a".into(), "builder".into()), ("b".into(), "env".into())]
        );
    }

    #[test]
    fn blocking_threads_has_every_source_and_refuses_zero() {
        let r = resolve(&Explicit::default(), &env_of(&[])).unwrap();
        assert_eq!(r.blocking_threads, super::super::pool::default_threads());
        let r = resolve(
            &Explicit::default(),
            &env_of(&[("ASYNC_BLOCKING_THREADS", "3")]),
        )
        .unwrap();
        assert_eq!(r.blocking_threads, 3);
        let explicit = Explicit {
            blocking_threads: Some(5),
            ..Explicit::default()
        };
        let r = resolve(&explicit, &env_of(&[("ASYNC_BLOCKING_THREADS", "3")])).unwrap();
        assert_eq!(r.blocking_threads, 5, "the builder wins");
        let e = resolve(
            &Explicit::default(),
            &env_of(&[("ASYNC_BLOCKING_THREADS", "many")]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "invalid ASYNC_BLOCKING_THREADS \"many\": expected a number of threads"
        );
        let e = resolve(
            &Explicit::default(),
            &env_of(&[("ASYNC_BLOCKING_THREADS", "0")]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "invalid blocking_threads 0: the blocking pool needs at least one thread"
        );
    }
}
