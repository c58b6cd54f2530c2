//! The Rust plugin SDK (feature `plugin`): what every Rust plugin's `ffi.rs`
//! needs and should not write again.
//!
//! - [`guard`] and [`guard_or`]: the panic fence every `extern "C"` function
//!   wraps its body in (a panic becomes [`AA_E_PANIC`] and a log line, never
//!   an abort or unwinding into C);
//! - [`set_host`] and the `plugin_log!` family: logging through the host's
//!   callback, so the application's one subscriber sees plugin records with
//!   their own target, file and line;
//! - [`options`] and [`copy_message`]: reading `AaKv` options and answering
//!   `last_error_message`;
//! - [`request`]: reading an `AaIoOp` under the compatibility rule (a 1.0
//!   host's shorter struct included) and checking it per opcode.
//!
//! A plugin statically linked into the host uses the same code: the host API
//! it is given logs into the same subscriber, so nothing changes.

pub mod dns;
pub mod request;
pub mod signal;

use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::RwLock;

use crate::{AaHostApi, AaKv, AaStatus, AaStr, AA_E_PANIC, AA_LOG_ERROR};

/// The host API this plugin image logs through. One per loaded image: a
/// dynamically loaded plugin has its own copy of this static.
static HOST: RwLock<Option<HostApi>> = RwLock::new(None);

#[derive(Clone, Copy)]
struct HostApi(AaHostApi);

/// Records the host API given to `init`, for logging. Call it from `init`;
/// the table is copied, so the pointer need not outlive the call.
///
/// # Safety
///
/// `host` must be NULL or point to a valid [`AaHostApi`] whose `host_ctx`
/// and functions stay valid until [`clear_host`] or the end of the process.
pub unsafe fn set_host(host: *const AaHostApi) {
    let value = if host.is_null() {
        None
    } else {
        // SAFETY: the caller guarantees `host` points to a valid table; we read
        // only the prefix both sides know, bounded by its `struct_size`.
        let theirs = unsafe { (*host).struct_size } as usize;
        let mut copy = AaHostApi {
            struct_size: 0,
            abi_major: 0,
            abi_minor: 0,
            host_ctx: std::ptr::null_mut(),
            host_name: std::ptr::null(),
            host_version: std::ptr::null(),
            log: None,
            log_enabled: None,
            get_extension: None,
        };
        let n = theirs.min(std::mem::size_of::<AaHostApi>());
        // SAFETY: both regions are valid for `n` bytes (ours is a local of the
        // full size, theirs is `struct_size` bytes by contract), they do not
        // overlap, and every bit pattern copied is a valid prefix of the
        // table (function-pointer slots are `Option`s, NULL is `None`).
        unsafe {
            std::ptr::copy_nonoverlapping(
                host.cast::<u8>(),
                (&mut copy as *mut AaHostApi).cast::<u8>(),
                n,
            )
        };
        Some(HostApi(copy))
    };
    *HOST.write().unwrap_or_else(|e| e.into_inner()) = value;
}

/// Forgets the host API (call from `deinit`).
pub fn clear_host() {
    *HOST.write().unwrap_or_else(|e| e.into_inner()) = None;
}

/// The ABI minor of the host recorded by [`set_host`] (its table's
/// `abi_minor`), or `None` when no host table was given. A plugin relies on
/// what a later minor asks of hosts only when the host is of that minor:
/// for example, a reactor that sets `AA_CAP_POLL_LEVEL` (1.2) is re-armed
/// by hosts of minor 2 or later, and must look for consumed readiness
/// itself under an older host.
pub fn host_minor() -> Option<u16> {
    host().map(|HostApi(api)| api.abi_minor)
}

fn host() -> Option<HostApi> {
    *HOST.read().unwrap_or_else(|e| e.into_inner())
}

// SAFETY: the copied table holds `[any]`-thread functions and an opaque
// context the host promises may be used from any thread (ABI `log` rules).
unsafe impl Send for HostApi {}
// SAFETY: as above; the copy is never mutated after construction.
unsafe impl Sync for HostApi {}

/// Whether a record at `level` for `target` would be emitted.
pub fn log_enabled(level: u32, target: &str) -> bool {
    match host() {
        Some(HostApi(api)) => match api.log_enabled {
            // SAFETY: the host guarantees its callback is valid while set
            // (`set_host` contract) and callable from any thread.
            Some(f) => unsafe { f(api.host_ctx, level, AaStr::from_str(target)) },
            None => api.log.is_some(),
        },
        None => level <= AA_LOG_ERROR,
    }
}

/// Emits one record through the host. Without a host, errors go to stderr so
/// that nothing is lost silently.
pub fn log(level: u32, target: &str, args: fmt::Arguments<'_>, file: &str, line: u32) {
    if !log_enabled(level, target) {
        return;
    }
    let msg = match args.as_str() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(args.to_string()),
    };
    match host() {
        Some(HostApi(api)) if api.log.is_some() => {
            let f = api.log.expect("checked above");
            // SAFETY: the host's callback is valid while set (`set_host`
            // contract); every string is borrowed for the call only (AA-R2).
            unsafe {
                f(
                    api.host_ctx,
                    level,
                    AaStr::from_str(target),
                    AaStr::from_str(&msg),
                    AaStr::from_str(file),
                    line,
                )
            }
        }
        _ => eprintln!("{target}: {msg}"),
    }
}

/// Logs through the host at an explicit level: `plugin_log!(AA_LOG_WARN, "...")`.
#[macro_export]
macro_rules! plugin_log {
    ($level:expr, $($arg:tt)+) => {
        $crate::sdk::log($level, module_path!(), format_args!($($arg)+), file!(), line!())
    };
}

/// Logs an error through the host.
#[macro_export]
macro_rules! plugin_error {
    ($($arg:tt)+) => { $crate::plugin_log!($crate::AA_LOG_ERROR, $($arg)+) };
}

/// Logs a warning through the host.
#[macro_export]
macro_rules! plugin_warn {
    ($($arg:tt)+) => { $crate::plugin_log!($crate::AA_LOG_WARN, $($arg)+) };
}

/// Logs an informational record through the host.
#[macro_export]
macro_rules! plugin_info {
    ($($arg:tt)+) => { $crate::plugin_log!($crate::AA_LOG_INFO, $($arg)+) };
}

/// Logs a debug record through the host.
#[macro_export]
macro_rules! plugin_debug {
    ($($arg:tt)+) => { $crate::plugin_log!($crate::AA_LOG_DEBUG, $($arg)+) };
}

/// Logs a trace record through the host.
#[macro_export]
macro_rules! plugin_trace {
    ($($arg:tt)+) => { $crate::plugin_log!($crate::AA_LOG_TRACE, $($arg)+) };
}

/// The message of a panic payload, or `"non-string panic payload"`.
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "non-string panic payload"
    }
}

/// Runs the body of an `extern "C"` function that returns a status: a panic
/// is logged (naming `what`) and becomes [`AA_E_PANIC`].
pub fn guard<F: FnOnce() -> AaStatus>(what: &str, f: F) -> AaStatus {
    guard_or(what, AA_E_PANIC, f)
}

/// Runs the body of an `extern "C"` function: a panic is logged (naming
/// `what`) and `fallback` is returned instead.
pub fn guard_or<T, F: FnOnce() -> T>(what: &str, fallback: T, f: F) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => {
            log(
                AA_LOG_ERROR,
                "async_abi::panic",
                format_args!("panic in {what}: {}", panic_message(&*payload)),
                file!(),
                line!(),
            );
            fallback
        }
    }
}

/// Iterates over `AaKv` options as UTF-8 pairs; entries that are not UTF-8
/// come out as `Err(key bytes)` so the plugin can reject them.
///
/// # Safety
///
/// `ptr` must point to `n` valid [`AaKv`] whose strings are valid for `'a`,
/// or `n` must be 0.
pub unsafe fn options<'a>(
    ptr: *const AaKv,
    n: usize,
) -> impl Iterator<Item = Result<(&'a str, &'a str), &'a [u8]>> + 'a {
    let slice: &'a [AaKv] = if n == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: the caller guarantees `ptr..ptr+n` holds valid entries.
        unsafe { std::slice::from_raw_parts(ptr, n) }
    };
    slice.iter().map(|kv| {
        // SAFETY: the caller guarantees the strings are valid for 'a.
        let (key, value) = unsafe { (kv.key.as_bytes(), kv.value.as_bytes()) };
        match (std::str::from_utf8(key), std::str::from_utf8(value)) {
            (Ok(k), Ok(v)) => Ok((k, v)),
            _ => Err(key),
        }
    })
}

/// Copies `msg` into `buf` the way `last_error_message` does: truncated to
/// `cap - 1` bytes and NUL-terminated if `cap > 0`; returns `msg.len()`.
///
/// # Safety
///
/// `buf` must be valid for `cap` bytes of writes, or `cap` must be 0.
pub unsafe fn copy_message(msg: &str, buf: *mut u8, cap: usize) -> usize {
    if cap > 0 && !buf.is_null() {
        let n = msg.len().min(cap - 1);
        // SAFETY: `buf` is writable for `cap > n` bytes (caller contract) and
        // cannot overlap `msg`, which the plugin owns.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), buf, n);
            *buf.add(n) = 0;
        }
    }
    msg.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_turns_a_panic_into_aa_e_panic() {
        let status = guard("test", || panic!("boom"));
        assert_eq!(status, AA_E_PANIC);
        assert_eq!(guard("test", || 7), 7);
    }

    #[test]
    fn copy_message_truncates_and_terminates() {
        let mut buf = [0xffu8; 4];
        // SAFETY: `buf` is a local array of 4 writable bytes.
        let n = unsafe { copy_message("hello", buf.as_mut_ptr(), buf.len()) };
        assert_eq!(n, 5);
        assert_eq!(&buf, b"hel\0");
    }
}
