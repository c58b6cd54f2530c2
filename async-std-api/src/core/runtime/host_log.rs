//! The host services table plugins get in `init`, and the log bridge behind
//! it.
//!
//! A plugin logs through `AaHostApi::log`; each record is re-emitted into
//! `tracing` (through a `log::Record` and `tracing_log::format_trace`) with
//! the plugin's own target, file and line, so one subscriber sees the host's
//! and every plugin's records. Without a subscriber, warnings and errors
//! are printed to stderr as `WARN <target>: <message>`, as the host's own
//! events are (`core::events`). Both callbacks are `[any]`-thread and
//! never unwind: a panic inside is caught and the record dropped.
//!
//! # Safety
//!
//! The callbacks are `extern "C"` functions called by plugins with strings
//! borrowed for the call (AA-R2); each string is read only within its
//! `ptr..ptr+len` range during the call.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use async_abi::{
    AaHostApi, AaStr, AA_ABI_MAJOR, AA_ABI_MINOR, AA_LOG_DEBUG, AA_LOG_ERROR, AA_LOG_INFO,
    AA_LOG_WARN,
};
use tracing::level_filters::LevelFilter;

/// The host services table: static, so it outlives every plugin context.
pub(crate) static HOST_API: AaHostApi = AaHostApi {
    struct_size: std::mem::size_of::<AaHostApi>() as u32,
    abi_major: AA_ABI_MAJOR,
    abi_minor: AA_ABI_MINOR,
    host_ctx: ptr::null_mut(),
    host_name: c"async-std-api".as_ptr(),
    host_version: c"0.1.0".as_ptr(),
    log: Some(host_log),
    log_enabled: Some(host_log_enabled),
    get_extension: Some(host_get_extension),
};

fn level(level: u32) -> log::Level {
    match level {
        AA_LOG_ERROR => log::Level::Error,
        AA_LOG_WARN => log::Level::Warn,
        AA_LOG_INFO => log::Level::Info,
        AA_LOG_DEBUG => log::Level::Debug,
        _ => log::Level::Trace,
    }
}

fn tracing_level(level: log::Level) -> tracing::Level {
    match level {
        log::Level::Error => tracing::Level::ERROR,
        log::Level::Warn => tracing::Level::WARN,
        log::Level::Info => tracing::Level::INFO,
        log::Level::Debug => tracing::Level::DEBUG,
        log::Level::Trace => tracing::Level::TRACE,
    }
}

/// True if the application installed no `tracing` subscriber: plugin
/// warnings and errors (a deadlock report) then go to stderr, so they are
/// never lost silently.
fn no_subscriber() -> bool {
    !crate::core::events::subscribed()
}

/// True if a record at this level could be emitted by the current
/// subscriber (its max-level hint), the `log` facade, or the stderr
/// fallback.
fn enabled(lvl: log::Level) -> bool {
    tracing_level(lvl) <= LevelFilter::current()
        || lvl <= log::max_level()
        || (no_subscriber() && lvl <= log::Level::Warn)
}

/// # Safety
///
/// `s` must be valid for its length for the call (AA-R2).
unsafe fn text(s: AaStr) -> String {
    // SAFETY: forwarded to the caller (AA-R2: valid for the call).
    String::from_utf8_lossy(unsafe { s.as_bytes() }).into_owned()
}

unsafe extern "C" fn host_log(
    _ctx: *mut c_void,
    lvl: u32,
    target: AaStr,
    msg: AaStr,
    file: AaStr,
    line: u32,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let lvl = level(lvl);
        if !enabled(lvl) {
            return;
        }
        // A plugin's record is written with the C library's own calls
        // (K5): a plugin logs from inside the runtime.
        let _quiet = super::Quiet::new();
        // SAFETY: the plugin passes strings borrowed for this call (AA-R2),
        // and they are copied before it returns.
        let (target, msg, file) = unsafe { (text(target), text(msg), text(file)) };
        if no_subscriber() {
            eprintln!("{} {target}: {msg}", lvl.as_str());
            return;
        }
        let _ = tracing_log::format_trace(
            &log::Record::builder()
                .level(lvl)
                .target(&target)
                .args(format_args!("{msg}"))
                .file(Some(&file))
                .line(Some(line))
                .module_path(Some(&target))
                .build(),
        );
    }));
}

unsafe extern "C" fn host_log_enabled(_ctx: *mut c_void, lvl: u32, _target: AaStr) -> bool {
    catch_unwind(|| enabled(level(lvl))).unwrap_or(false)
}

unsafe extern "C" fn host_get_extension(_ctx: *mut c_void, _id: AaStr) -> *const c_void {
    ptr::null()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};
    use tracing_log::NormalizeEvent;

    use super::*;

    /// `(level, target, file, line, message)` of one event.
    type Seen = (tracing::Level, String, String, u32, String);

    /// Collects every event.
    struct Collect(Mutex<Vec<Seen>>);

    struct Message(String);
    impl tracing::field::Visit for Message {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }

    impl Subscriber for &'static Collect {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn max_level_hint(&self) -> Option<LevelFilter> {
            Some(LevelFilter::TRACE)
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let meta = event.normalized_metadata();
            let meta = meta.as_ref().unwrap_or_else(|| event.metadata());
            let mut msg = Message(String::new());
            event.record(&mut msg);
            self.0.lock().unwrap().push((
                *meta.level(),
                meta.target().to_owned(),
                meta.file().unwrap_or("").to_owned(),
                meta.line().unwrap_or(0),
                msg.0,
            ));
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn plugin_records_keep_their_target_file_and_line() {
        let collect: &'static Collect = Box::leak(Box::new(Collect(Mutex::new(Vec::new()))));
        tracing::subscriber::with_default(collect, || {
            let log = HOST_API.log.unwrap();
            let enabled = HOST_API.log_enabled.unwrap();
            // SAFETY: the strings are valid for the calls (AA-R2).
            unsafe {
                assert!(enabled(ptr::null_mut(), AA_LOG_DEBUG, AaStr::from_str("x")));
                log(
                    ptr::null_mut(),
                    AA_LOG_WARN,
                    AaStr::from_str("reactor_mio::ffi"),
                    AaStr::from_str("unknown reactor option \"x\""),
                    AaStr::from_str("reactor-mio/src/ffi.rs"),
                    42,
                );
            }
        });
        let got = collect.0.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![(
                tracing::Level::WARN,
                "reactor_mio::ffi".to_owned(),
                "reactor-mio/src/ffi.rs".to_owned(),
                42,
                "unknown reactor option \"x\"".to_owned()
            )]
        );
    }
}
