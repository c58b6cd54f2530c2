//! [`Reactor`]: a reactor plugin negotiated through its descriptor, from a
//! statically linked `*const AaPluginDesc` or from a shared library.
//!
//! Negotiation follows `async_abi::plugin` step by step: check the
//! descriptor's major version, size and role; `init` with a small host API
//! (logs go to stderr, which the test harness captures, and to
//! [`capture_log`] while a case listens); fetch
//! `"aa.reactor.v1"`, check its size and copy it into a zeroed table (a
//! missing trailing slot reads as `None`); require the slots up to
//! `dispose`. A library is opened with `RTLD_NOW | RTLD_LOCAL |
//! RTLD_NODELETE` and never closed (AA-R7).

use std::cell::RefCell;
use std::ffi::{c_void, CStr};
use std::mem::{size_of, MaybeUninit};
use std::path::Path;
use std::ptr;

use async_abi::*;

/// A reactor plugin ready to create loops: its descriptor, its vtable and
/// the context `init` returned. Dropping it calls `deinit`.
#[derive(Debug)]
pub struct Reactor {
    name: String,
    desc: AaPluginDesc,
    vt: AaReactorVTable,
    ctx: *mut AaPluginCtx,
}

/// One record a plugin logged through the kit's host API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// `AA_LOG_*`.
    pub level: u32,
    /// The plugin's target (its module path).
    pub target: String,
    /// The message.
    pub message: String,
}

thread_local! {
    /// The records of this thread while [`capture_log`] runs. Per thread,
    /// because the kit's host API is one static shared by every case, and
    /// cases run in parallel; a `[loop]` call logs on its caller's thread.
    static CAPTURED: RefCell<Option<Vec<LogRecord>>> = const { RefCell::new(None) };
}

/// Runs `f` and returns, with its result, every record the plugin logged
/// through the host on this thread meanwhile (they still go to stderr too).
/// A record logged from another thread (a resolver thread) is not seen.
pub fn capture_log<R>(f: impl FnOnce() -> R) -> (R, Vec<LogRecord>) {
    /// Restores the outer capture, also when `f` panics.
    struct Restore(Option<Vec<LogRecord>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            CAPTURED.with(|c| *c.borrow_mut() = outer);
        }
    }
    let restore = Restore(CAPTURED.with(|c| c.borrow_mut().replace(Vec::new())));
    let result = f();
    let records = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    (result, records)
}

unsafe extern "C" fn host_log(
    _ctx: *mut c_void,
    level: u32,
    target: AaStr,
    msg: AaStr,
    _file: AaStr,
    _line: u32,
) {
    // SAFETY: AA-R2: the strings are borrowed for the call.
    let (target, msg) = unsafe { (target.as_bytes(), msg.as_bytes()) };
    let target = String::from_utf8_lossy(target).into_owned();
    let message = String::from_utf8_lossy(msg).into_owned();
    // A panic must not unwind into the plugin (a closed stderr makes
    // `eprintln!` panic); the record is then dropped.
    let _ = std::panic::catch_unwind(move || {
        eprintln!("[plugin log {level}] {target}: {message}");
        CAPTURED.with(|c| {
            // `try_borrow_mut`: a record logged while the capture is being
            // swapped is only printed.
            if let Ok(mut captured) = c.try_borrow_mut() {
                if let Some(records) = captured.as_mut() {
                    records.push(LogRecord {
                        level,
                        target,
                        message,
                    });
                }
            }
        });
    });
}

unsafe extern "C" fn host_log_enabled(_ctx: *mut c_void, level: u32, _target: AaStr) -> bool {
    level <= AA_LOG_DEBUG
}

static HOST: AaHostApi = AaHostApi {
    struct_size: size_of::<AaHostApi>() as u32,
    abi_major: AA_ABI_MAJOR,
    abi_minor: AA_ABI_MINOR,
    host_ctx: ptr::null_mut(),
    host_name: c"reactor-conformance".as_ptr(),
    host_version: c"0.1.0".as_ptr(),
    log: Some(host_log),
    log_enabled: Some(host_log_enabled),
    get_extension: None,
};

/// Copies `min(theirs, ours)` bytes of a versioned struct into a zeroed one.
///
/// # Safety
///
/// `src` must be valid for `theirs` bytes, and every all-zero bit pattern
/// and every prefix the plugin wrote must be a valid `T` (true for the ABI's
/// tables: integers, raw pointers and `Option` function pointers).
unsafe fn copy_prefix<T>(src: *const T, theirs: usize) -> T {
    let mut out = MaybeUninit::<T>::zeroed();
    let n = theirs.min(size_of::<T>());
    // SAFETY: `src` is readable for `theirs >= n` bytes (caller), `out` is a
    // local of `size_of::<T>() >= n` bytes, and they do not overlap.
    unsafe { ptr::copy_nonoverlapping(src.cast::<u8>(), out.as_mut_ptr().cast::<u8>(), n) };
    // SAFETY: zero bytes plus a prefix written by the plugin form a valid `T`
    // (caller's contract).
    unsafe { out.assume_init() }
}

impl Reactor {
    /// Negotiates with a statically linked plugin's descriptor.
    ///
    /// # Errors
    ///
    /// One line naming the reason: NULL descriptor, ABI major mismatch,
    /// struct too small, wrong role, `init` failure, missing interface or
    /// required slot.
    ///
    /// # Safety
    ///
    /// `desc` must be NULL or what a reactor's entry symbol (or its
    /// `plugin_desc()`) returned: a descriptor valid for its `struct_size`
    /// bytes for the life of the process (AA-R7).
    pub unsafe fn from_desc(desc: *const AaPluginDesc) -> Result<Reactor, String> {
        if desc.is_null() {
            return Err("plugin descriptor is NULL".into());
        }
        // SAFETY: a non-NULL descriptor is static (AA-R7); its first fields
        // exist in every version.
        let (theirs, major) = unsafe { ((*desc).struct_size as usize, (*desc).abi_major) };
        if major != AA_ABI_MAJOR {
            return Err(format!(
                "ABI major {major}, conformance kit supports {AA_ABI_MAJOR}"
            ));
        }
        if theirs < size_of::<AaPluginDesc>() {
            return Err(format!(
                "descriptor struct_size {theirs} is smaller than {}",
                size_of::<AaPluginDesc>()
            ));
        }
        // SAFETY: the descriptor is valid for `theirs` bytes (its
        // struct_size) and is made of integers, pointers and `Option` fns.
        let desc: AaPluginDesc = unsafe { copy_prefix(desc, theirs) };
        if desc.role != AA_ROLE_REACTOR {
            return Err(format!("role {} is not a reactor", desc.role));
        }
        let name = if desc.name.is_null() {
            "<unnamed>".to_string()
        } else {
            // SAFETY: AA-R7: a static NUL-terminated string.
            unsafe { CStr::from_ptr(desc.name) }
                .to_string_lossy()
                .into_owned()
        };
        let (Some(init), Some(_), Some(get_interface)) =
            (desc.init, desc.deinit, desc.get_interface)
        else {
            return Err(format!(
                "reactor {name:?}: init, deinit or get_interface is NULL"
            ));
        };
        let mut ctx = ptr::null_mut();
        // SAFETY: `HOST` is static and `ctx` a local slot ([init]: the kit
        // serializes nothing else against this call).
        let status = unsafe { init(&HOST, &mut ctx) };
        if status != AA_OK {
            return Err(format!(
                "reactor {name:?}: init failed with status {status}"
            ));
        }
        let id = AaStr {
            ptr: AA_IFACE_REACTOR_V1.as_ptr(),
            len: AA_IFACE_REACTOR_V1.len() - 1,
        };
        // SAFETY: `ctx` came from `init`; `id` is borrowed for the call.
        let hdr = unsafe { get_interface(ctx, id) };
        let mut reactor = Reactor {
            name: name.clone(),
            desc,
            // SAFETY: an all-zero vtable is valid (every slot `None`).
            vt: unsafe { MaybeUninit::<AaReactorVTable>::zeroed().assume_init() },
            ctx,
        };
        if hdr.is_null() {
            return Err(format!("reactor {name:?}: no interface \"aa.reactor.v1\""));
        }
        // SAFETY: the interface is static (AA-R7) and starts with its header.
        let theirs = unsafe { (*hdr).struct_size } as usize;
        let minimum = std::mem::offset_of!(AaReactorVTable, last_error_message);
        if theirs < minimum {
            return Err(format!(
                "reactor {name:?}: vtable struct_size {theirs} is smaller than {minimum}"
            ));
        }
        // SAFETY: the vtable is valid for its `struct_size` bytes and is made
        // of integers and `Option` fns.
        reactor.vt = unsafe { copy_prefix(hdr.cast::<AaReactorVTable>(), theirs) };
        let vt = &reactor.vt;
        let required = [
            vt.create.is_some(),
            vt.destroy.is_some(),
            vt.run_once.is_some(),
            vt.alive.is_some(),
            vt.now_ns.is_some(),
            vt.wake.is_some(),
            vt.timer_new.is_some(),
            vt.timer_rearm.is_some(),
            vt.poll_new.is_some(),
            vt.poll_set_interest.is_some(),
            vt.trigger_new.is_some(),
            vt.trigger_fire.is_some(),
            vt.io_submit.is_some(),
            vt.set_ref.is_some(),
            vt.cancel.is_some(),
            vt.close.is_some(),
            vt.dispose.is_some(),
        ];
        if let Some(slot) = required.iter().position(|present| !present) {
            return Err(format!(
                "reactor {name:?}: required vtable slot {slot} (counting from create) is NULL"
            ));
        }
        Ok(reactor)
    }

    /// Loads a reactor from a shared library (`RTLD_NOW | RTLD_LOCAL |
    /// RTLD_NODELETE`, never closed) and negotiates with it.
    ///
    /// # Errors
    ///
    /// One line naming the file and the reason (not a shared library, no
    /// entry symbol, or any [`Reactor::from_desc`] error).
    pub fn load(path: &Path) -> Result<Reactor, String> {
        use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
        let shown = path.display();
        // SAFETY: loading runs the library's initialisers; a reactor plugin
        // has none with side effects beyond its own statics (ABI: the entry
        // symbol has no side effects), and the kit loads only what it is
        // told to test.
        let lib = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL | libc::RTLD_NODELETE) }
            .map_err(|e| format!("cannot load reactor \"{shown}\": {e}"))?;
        // SAFETY: the symbol's type is fixed by the ABI (`AaPluginEntryFn`).
        let entry = match unsafe { lib.get::<AaPluginEntryFn>(AA_REACTOR_ENTRY_SYMBOL) } {
            Ok(entry) => entry,
            Err(e) => {
                // A later major renames the entry symbol: say which major.
                for major in (AA_ABI_MAJOR + 1)..=(AA_ABI_MAJOR + 8) {
                    let symbol = format!("aa_reactor_entry_v{major}\0");
                    // SAFETY: only the symbol's presence is checked.
                    if unsafe { lib.get::<*const ()>(symbol.as_bytes()) }.is_ok() {
                        return Err(format!(
                            "cannot load reactor \"{shown}\": ABI major {major}, conformance kit supports {AA_ABI_MAJOR}"
                        ));
                    }
                }
                return Err(format!("cannot load reactor \"{shown}\": {e}"));
            }
        };
        // SAFETY: the entry symbol has no side effects and returns a static
        // descriptor ([init]).
        let desc = unsafe { entry() };
        // AA-R7: the library is never unloaded.
        std::mem::forget(lib);
        // SAFETY: the entry symbol's result, static for the life of the
        // process since the library is never unloaded.
        unsafe { Reactor::from_desc(desc) }
            .map_err(|e| format!("cannot load reactor \"{shown}\": {e}"))
    }

    /// The plugin's name, from its descriptor.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The descriptor, as copied at negotiation.
    pub fn desc(&self) -> &AaPluginDesc {
        &self.desc
    }

    /// The vtable, zero-extended to this kit's size.
    pub fn vtable(&self) -> &AaReactorVTable {
        &self.vt
    }

    /// The plugin context from `init`.
    pub fn ctx(&self) -> *mut AaPluginCtx {
        self.ctx
    }

    /// Whether the reactor advertises every bit of `caps`.
    pub fn has_caps(&self, caps: u64) -> bool {
        self.vt.caps & caps == caps
    }

    /// The prefix of the reactor's own option keys: its name without a
    /// leading `reactor-`, then a dot (`"reactor-mio"` gives `"mio."`).
    pub fn option_prefix(&self) -> String {
        let short = self.name.strip_prefix("reactor-").unwrap_or(&self.name);
        format!("{short}.")
    }
}

// SAFETY: after negotiation every field is immutable; the context is only
// handed to `create`, which the ABI lets any thread call (the caller becomes
// the new loop's thread), and `deinit` runs on drop, which needs exclusive
// ownership. So cases may create loops on several threads from one `&Reactor`
// (the signal tier does, to check that every loop is told).
unsafe impl Sync for Reactor {}

impl Drop for Reactor {
    fn drop(&mut self) {
        if let Some(deinit) = self.desc.deinit {
            // SAFETY: `ctx` came from `init` and is deinitialised once.
            unsafe { deinit(self.ctx) };
        }
    }
}
