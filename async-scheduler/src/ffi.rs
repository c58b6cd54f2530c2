//! The C ABI: the plugin descriptor, the `"aa.scheduler.v1"` vtable, and
//! every call into host or reactor code. The only file with `extern "C"`
//! shims.
//!
//! Each shim does five things, in order (STYLE S15):
//! 1. catch panics (`sdk::guard` / `guard_or`: a panic becomes
//!    `AA_E_PANIC` and a log line);
//! 2. check NULL pointers and `struct_size`;
//! 3. turn raw pointers into typed references (`&Scheduler`, `CoroPtr`)
//!    that do not escape the call;
//! 4. call safe Rust;
//! 5. map the result to an `AaStatus`.
//!
//! # Safety
//!
//! The shims trust what the ABI promises the caller does: a scheduler
//! pointer came from `create` and was not destroyed; a coroutine handle came
//! from `coroutine_new` and has not finished (C2); borrowed structs are
//! valid for the call (AA-R2); `[loop]` functions are called on the loop
//! thread. Calls out (entries, handlers, microtasks, the reactor) trust the
//! host's and the reactor's functions to honour their own contracts: they
//! do not unwind (C3) and are valid for the life of the scheduler (AA-R7).

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr};
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicUsize, Ordering};

use async_abi::sdk::{copy_message, guard, guard_or};
use async_abi::{
    AaCoroutine, AaCoroutineInfo, AaCoroutineVisitFn, AaHostApi, AaIfaceHeader, AaMicrotaskFn,
    AaPluginCtx, AaPluginDesc, AaReactor, AaReactorVTable, AaScheduler, AaSchedulerConfig,
    AaSchedulerVTable, AaSpawnOptions, AaStatus, AaStr, AaSwitchHandlerFn, AaWaitInfo,
    AA_ABI_MAJOR, AA_ABI_MINOR, AA_E_BUSY, AA_E_INVALID, AA_E_PANIC, AA_E_VERSION, AA_OK,
    AA_PRIORITY_HIGH, AA_PRIORITY_NORMAL, AA_ROLE_SCHEDULER, AA_SCHED_CAP_WAIT_YIELD,
    AA_WAIT_YIELD,
};

use crate::coroutine::{CoroPtr, EntryFn, HandlerFn, SpawnSite, State};
use crate::microtask::TaskFn;
use crate::options::{self, Options};
use crate::scheduler::Scheduler;
use crate::stack::{guard as stack_guard, page_size};
use crate::{shutdown, tick};

const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

static DESC: AaPluginDesc = AaPluginDesc {
    struct_size: size_of::<AaPluginDesc>() as u32,
    abi_major: AA_ABI_MAJOR,
    abi_minor: AA_ABI_MINOR,
    role: AA_ROLE_SCHEDULER,
    _reserved: 0,
    name: c"async-scheduler".as_ptr(),
    version: VERSION.as_ptr() as *const c_char,
    vendor: c"async-scheduler authors".as_ptr(),
    init: Some(init),
    deinit: Some(deinit),
    get_interface: Some(get_interface),
};

/// The plugin descriptor, for a host that links this crate statically, and
/// for the entry symbol of `libasync_scheduler.so` (the `cdylib/` package).
///
/// A statically linked scheduler goes through the same negotiation as a
/// loaded one. The pointer is valid for the life of the process (AA-R7).
///
/// # Examples
///
/// ```
/// let desc = unsafe { &*async_scheduler::plugin_desc() };
/// assert_eq!(desc.role, async_abi::AA_ROLE_SCHEDULER);
/// ```
pub fn plugin_desc() -> *const AaPluginDesc {
    &DESC
}

/// Which build of the scheduler this is: `async-scheduler <version>
/// <debug|release> <source digest>` (made by `build.rs`).
///
/// `libasync_scheduler.so` exports it as `async_runtime_build_id`; a host
/// that links this crate and finds that library by name loads it only if
/// the two ids are equal, so a plugin file built from other sources or with
/// another profile is refused instead of run.
///
/// # Examples
///
/// ```
/// let id = async_scheduler::BUILD_ID.to_str().unwrap();
/// assert!(id.starts_with(concat!("async-scheduler ", env!("CARGO_PKG_VERSION"), " ")));
/// ```
pub const BUILD_ID: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("RUNTIME_BUILD_ID"), "\0").as_bytes()) {
        Ok(id) => id,
        Err(_) => panic!("the build id contains a NUL byte"),
    };

/// Live plugin contexts: the host API is forgotten when the last goes.
static CONTEXTS: AtomicUsize = AtomicUsize::new(0);

/// What `init` returns; the scheduler needs no per-context state, the
/// allocation only gives each context its own address.
struct PluginCtx {
    _unused: u8,
}

unsafe extern "C" fn init(host: *const AaHostApi, out: *mut *mut AaPluginCtx) -> AaStatus {
    guard("scheduler init", || {
        if out.is_null() {
            return AA_E_INVALID;
        }
        // SAFETY: the host's table is valid until `deinit` (init contract).
        unsafe { async_abi::sdk::set_host(host) };
        CONTEXTS.fetch_add(1, Ordering::Relaxed);
        let ctx = Box::into_raw(Box::new(PluginCtx { _unused: 0 }));
        // SAFETY: `out` is non-NULL and writable (init contract).
        unsafe { *out = ctx.cast() };
        AA_OK
    })
}

unsafe extern "C" fn deinit(ctx: *mut AaPluginCtx) {
    guard_or("scheduler deinit", (), || {
        if ctx.is_null() {
            return;
        }
        // SAFETY: `ctx` came from `init` (Box::into_raw) and is freed once.
        drop(unsafe { Box::from_raw(ctx.cast::<PluginCtx>()) });
        if CONTEXTS.fetch_sub(1, Ordering::Relaxed) == 1 {
            async_abi::sdk::clear_host();
        }
    })
}

unsafe extern "C" fn get_interface(_ctx: *mut AaPluginCtx, id: AaStr) -> *const AaIfaceHeader {
    guard_or("scheduler get_interface", std::ptr::null(), || {
        // SAFETY: `id` is borrowed for the call (AA-R2).
        let id = unsafe { id.as_bytes() };
        let want = &async_abi::AA_IFACE_SCHEDULER_V1[..async_abi::AA_IFACE_SCHEDULER_V1.len() - 1];
        if id == want {
            &VTABLE.hdr
        } else {
            std::ptr::null()
        }
    })
}

static VTABLE: AaSchedulerVTable = AaSchedulerVTable {
    hdr: AaIfaceHeader {
        struct_size: size_of::<AaSchedulerVTable>() as u32,
        iface_minor: 0,
        _reserved: 0,
    },
    caps: AA_SCHED_CAP_WAIT_YIELD,
    create: Some(create),
    destroy: Some(destroy),
    run: Some(run),
    coroutine_new: Some(coroutine_new),
    enqueue: Some(enqueue),
    suspend: Some(suspend),
    current: Some(current),
    coroutine_arg: Some(coroutine_arg),
    coroutine_id: Some(coroutine_id),
    coroutine_info: Some(coroutine_info),
    iterate: Some(iterate),
    defer: Some(defer),
    add_switch_handler: Some(add_switch_handler),
    shutdown: Some(shutdown),
    last_error_message: Some(last_error_message),
};

/// `sdk::guard_or` for the hot shims (step 1 of the module doc): the body
/// is inlined into the shim and only the panic path is out of line, where
/// `guard_or` itself reports the panic (the same log record) and returns
/// `fallback`.
#[inline(always)]
fn fence<T>(what: &'static str, fallback: T, f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => caught(what, fallback, payload),
    }
}

#[cold]
#[inline(never)]
fn caught<T>(what: &'static str, fallback: T, payload: Box<dyn std::any::Any + Send>) -> T {
    guard_or(what, fallback, || std::panic::resume_unwind(payload))
}

/// The scheduler behind a handle.
///
/// # Safety
///
/// `s` is NULL or came from `create` and was not destroyed.
unsafe fn sched<'a>(s: *const AaScheduler) -> Option<&'a Scheduler> {
    // SAFETY: forwarded to the caller.
    unsafe { s.cast::<Scheduler>().as_ref() }
}

/// Copies the first `min(theirs, ours)` bytes of a host struct that begins
/// with its `struct_size` into a copy of `default`.
///
/// # Safety
///
/// `p` is non-NULL and valid for its own `struct_size` bytes; `T` is a
/// `repr(C)` ABI struct of plain data whose first field is a `u32` size.
#[inline]
unsafe fn read_sized<T: Copy>(p: *const T, default: T) -> (T, usize) {
    // SAFETY: every ABI struct starts with its u32 `struct_size`.
    let theirs = unsafe { *(p as *const u32) } as usize;
    if theirs >= size_of::<T>() {
        // SAFETY: `p` is readable for `theirs >= size_of::<T>()` bytes, and
        // any bytes are a valid `T` (as below).
        return (unsafe { p.read_unaligned() }, theirs);
    }
    let mut out = default;
    let n = theirs.min(size_of::<T>());
    // SAFETY: `p` is readable for `theirs >= n` bytes and `out` for
    // `size_of::<T>() >= n`; they do not overlap; any bytes are a valid
    // prefix (integers, pointers, `Option<fn>` where NULL is `None`).
    unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), (&mut out as *mut T).cast(), n) };
    (out, theirs)
}

/// Whether the host's spawn options at `p` are a whole, aligned
/// [`AaSpawnOptions`], which [`read_spawn_options`] can read in place.
///
/// # Safety
///
/// `p` is non-NULL and valid for its own `struct_size` bytes.
#[inline(always)]
unsafe fn full_size(p: *const AaSpawnOptions) -> bool {
    // SAFETY: every ABI struct starts with its u32 `struct_size`; `p` is
    // aligned for it (checked first).
    p.is_aligned() && unsafe { (*p).struct_size } as usize >= size_of::<AaSpawnOptions>()
}

/// The spawn options at `p`, read one field at a time, each load the width
/// of the field, so every load takes its value straight from the recent
/// store of it (the host's, or `read_sized`'s copy). A block copy, or loads
/// the compiler merges, read 16 or 8 bytes that span two of the host's
/// narrower stores: such a load cannot be forwarded from the store buffer
/// and waits for both stores to retire (about 5% of a spawn+join). The
/// loads are volatile so that they stay apart.
///
/// # Safety
///
/// `p` is aligned and valid for a whole `AaSpawnOptions`.
#[inline(always)]
unsafe fn read_spawn_options(p: *const AaSpawnOptions) -> AaSpawnOptions {
    // SAFETY: forwarded to the caller; each field is plain data.
    unsafe {
        AaSpawnOptions {
            struct_size: size_of::<AaSpawnOptions>() as u32,
            priority: std::ptr::addr_of!((*p).priority).read_volatile(),
            stack_size: std::ptr::addr_of!((*p).stack_size).read_volatile(),
            spawn_file: AaStr {
                ptr: std::ptr::addr_of!((*p).spawn_file.ptr).read_volatile(),
                len: std::ptr::addr_of!((*p).spawn_file.len).read_volatile(),
            },
            spawn_line: std::ptr::addr_of!((*p).spawn_line).read_volatile(),
            spawn_column: std::ptr::addr_of!((*p).spawn_column).read_volatile(),
        }
    }
}

unsafe extern "C" fn create(
    _ctx: *mut AaPluginCtx,
    cfg: *const AaSchedulerConfig,
    out: *mut *mut AaScheduler,
) -> AaStatus {
    guard("scheduler create", || {
        if cfg.is_null() || out.is_null() {
            return AA_E_INVALID;
        }
        let empty = AaSchedulerConfig {
            struct_size: 0,
            flags: 0,
            reactor: std::ptr::null(),
            reactor_instance: std::ptr::null_mut(),
            stack_size: 0,
            options: std::ptr::null(),
            n_options: 0,
            err_buf: std::ptr::null_mut(),
            err_cap: 0,
        };
        // SAFETY: the host passes a config valid for the call (AA-R2).
        let (c, theirs) = unsafe { read_sized(cfg, empty) };
        // SAFETY: `err_buf` is writable for `err_cap` bytes (config
        // contract); a smaller config left both zero.
        let fail = |status, msg: String| unsafe {
            copy_message(&msg, c.err_buf, c.err_cap);
            status
        };
        let required = offset_of!(AaSchedulerConfig, err_buf);
        if theirs < required {
            let msg = format!("scheduler config struct_size {theirs} is smaller than {required}");
            return fail(AA_E_VERSION, msg);
        }
        let reactor = match validate_reactor(&c) {
            Ok(r) => r,
            Err(msg) => return fail(AA_E_INVALID, msg),
        };
        // SAFETY: the options are borrowed for the call (AA-R2).
        let kvs = unsafe { async_abi::sdk::options(c.options, c.n_options) };
        let opts = match Options::parse(c.stack_size, kvs, page_size()) {
            Ok(o) => o,
            Err(msg) => return fail(AA_E_INVALID, msg),
        };
        // A coroutine of this scheduler that overflows its stack is
        // reported (stack/overflow.rs): handler and alternate stack.
        crate::stack::overflow::arm_this_thread();
        let s = Box::into_raw(Box::new(Scheduler::new(reactor, opts)));
        // SAFETY: `out` is non-NULL and writable (create contract).
        unsafe { *out = s.cast() };
        AA_OK
    })
}

fn validate_reactor(c: &AaSchedulerConfig) -> Result<Reactor, String> {
    if c.reactor.is_null() {
        return Err("invalid scheduler config: reactor vtable is null".to_owned());
    }
    if c.reactor_instance.is_null() {
        return Err("invalid scheduler config: reactor instance is null".to_owned());
    }
    // SAFETY: a non-NULL vtable is static (AA-R7); its header is always
    // present.
    let size = unsafe { (*c.reactor).hdr.struct_size } as usize;
    let needed = offset_of!(AaReactorVTable, alive) + size_of::<usize>();
    if size < needed {
        return Err(format!(
            "invalid scheduler config: reactor vtable struct_size {size} is smaller than \
             {needed} (run_once and alive are required)"
        ));
    }
    // SAFETY: the table is at least `needed` bytes, which covers both slots.
    let (run_once, alive) = unsafe { ((*c.reactor).run_once, (*c.reactor).alive) };
    match (run_once, alive) {
        (Some(run_once), Some(alive)) => Ok(Reactor {
            run_once,
            alive,
            instance: c.reactor_instance,
        }),
        (None, _) => Err("invalid scheduler config: reactor vtable has no run_once".to_owned()),
        (_, None) => Err("invalid scheduler config: reactor vtable has no alive".to_owned()),
    }
}

unsafe extern "C" fn destroy(s: *mut AaScheduler) -> AaStatus {
    guard("scheduler destroy", || {
        // SAFETY: shim contract (module Safety).
        let Some(sch) = (unsafe { sched(s) }) else {
            return AA_E_INVALID;
        };
        if sch.in_run.get() || sch.live.len() > 0 {
            let msg = format!(
                "cannot destroy the scheduler: {} coroutines are alive (shut it down and run it \
                 first)",
                sch.live.len()
            );
            *sch.last_error.borrow_mut() = msg;
            return AA_E_BUSY;
        }
        sch.fibers.clear();
        // SAFETY: made by `create` (Box::into_raw); no coroutine, fiber or
        // `run` refers to it any more (checked above), and the host does not
        // use the handle after `destroy`.
        drop(unsafe { Box::from_raw(s.cast::<Scheduler>()) });
        AA_OK
    })
}

unsafe extern "C" fn run(s: *mut AaScheduler) -> AaStatus {
    guard("scheduler run", || {
        // SAFETY: shim contract (module Safety).
        match unsafe { sched(s) } {
            Some(sch) => sch.run(),
            None => AA_E_INVALID,
        }
    })
}

unsafe extern "C" fn coroutine_new(
    s: *mut AaScheduler,
    opts: *const AaSpawnOptions,
    entry: async_abi::AaCoroutineEntry,
    arg: *mut c_void,
    out: *mut *mut AaCoroutine,
) -> AaStatus {
    fence("scheduler coroutine_new", AA_E_PANIC, || {
        // SAFETY: shim contract (module Safety).
        let (Some(sch), Some(entry)) = (unsafe { sched(s) }, entry) else {
            return AA_E_INVALID;
        };
        if out.is_null() {
            return AA_E_INVALID;
        }
        let defaults = AaSpawnOptions {
            struct_size: 0,
            priority: AA_PRIORITY_NORMAL,
            stack_size: 0,
            spawn_file: AaStr::EMPTY,
            spawn_line: 0,
            spawn_column: 0,
        };
        // A full-size, aligned host struct is read in place; anything else
        // (NULL, an older host's shorter struct) is first completed into a
        // local copy, so both read the fields the same way.
        let mut completed = defaults;
        // SAFETY: a non-NULL `opts` is valid for its `struct_size` bytes
        // for the call (AA-R2), and starts with that u32.
        let p = if !opts.is_null() && unsafe { full_size(opts) } {
            opts
        } else {
            if !opts.is_null() {
                // SAFETY: as above.
                completed = unsafe { read_sized(opts, defaults) }.0;
            }
            &raw const completed
        };
        // SAFETY: `p` is a full-size, aligned struct: the host's (checked)
        // or the local copy.
        let o = unsafe { read_spawn_options(p) };
        if o.priority != AA_PRIORITY_NORMAL && o.priority != AA_PRIORITY_HIGH {
            let msg = format!(
                "invalid coroutine priority {}: expected 0 or 255",
                o.priority
            );
            return sch.fail(AA_E_INVALID, msg);
        }
        let stack_size = match o.stack_size {
            0 => sch.opts.stack_size,
            // The usual request (a host passing its configured size): the
            // default is already validated and rounded.
            n if n == sch.opts.stack_size => n,
            n => match options::stack_size(n, page_size()) {
                Ok(n) => n,
                Err(e) => {
                    let msg = format!("invalid coroutine stack size {n}: {e}");
                    return sch.fail(AA_E_INVALID, msg);
                }
            },
        };
        let site = SpawnSite {
            file: o.spawn_file,
            line: o.spawn_line,
            column: o.spawn_column,
        };
        let entry: EntryFn = entry;
        let c = sch.spawn(entry, arg, o.priority, stack_size, site);
        // SAFETY: `out` is non-NULL and writable for the call.
        unsafe { *out = c.as_abi() };
        AA_OK
    })
}

unsafe extern "C" fn enqueue(
    s: *mut AaScheduler,
    coro: *mut AaCoroutine,
    status: AaStatus,
) -> AaStatus {
    fence("scheduler enqueue", AA_E_PANIC, || {
        // SAFETY: shim contract (module Safety).
        match unsafe { (sched(s), CoroPtr::from_abi(coro)) } {
            (Some(sch), Some(c)) => sch.enqueue(c, status),
            _ => AA_E_INVALID,
        }
    })
}

unsafe extern "C" fn suspend(s: *mut AaScheduler, wait: *const AaWaitInfo) -> AaStatus {
    fence("scheduler suspend", AA_E_PANIC, || {
        // SAFETY: shim contract (module Safety).
        let Some(sch) = (unsafe { sched(s) }) else {
            return AA_E_INVALID;
        };
        // SAFETY: a non-NULL `wait` is valid for the call (AA-R2) and at
        // least its `struct_size` long; `flags` is read only if it is there.
        let yield_first = !wait.is_null()
            && unsafe { (*wait).struct_size } as usize >= offset_of!(AaWaitInfo, flags) + 4
            && unsafe { (*wait).flags } & AA_WAIT_YIELD != 0;
        tick::suspend(sch, wait, yield_first)
    })
}

unsafe extern "C" fn current(s: *const AaScheduler) -> *mut AaCoroutine {
    fence("scheduler current", std::ptr::null_mut(), || {
        // SAFETY: shim contract (module Safety).
        match unsafe { sched(s) }.and_then(|sch| sch.current.get()) {
            Some(c) => c.as_abi(),
            None => std::ptr::null_mut(),
        }
    })
}

unsafe extern "C" fn coroutine_arg(coro: *const AaCoroutine) -> *mut c_void {
    fence("scheduler coroutine_arg", std::ptr::null_mut(), || {
        // SAFETY: shim contract (module Safety).
        match unsafe { CoroPtr::from_abi(coro) } {
            Some(c) => c.get().arg,
            None => std::ptr::null_mut(),
        }
    })
}

unsafe extern "C" fn coroutine_id(coro: *const AaCoroutine) -> u64 {
    fence("scheduler coroutine_id", 0, || {
        // SAFETY: shim contract (module Safety).
        unsafe { CoroPtr::from_abi(coro) }.map_or(0, |c| c.get().id)
    })
}

unsafe extern "C" fn coroutine_info(
    s: *const AaScheduler,
    coro: *const AaCoroutine,
    out: *mut AaCoroutineInfo,
) -> AaStatus {
    guard("scheduler coroutine_info", || {
        // SAFETY: shim contract (module Safety).
        let (Some(_), Some(c)) = (unsafe { sched(s) }, unsafe { CoroPtr::from_abi(coro) }) else {
            return AA_E_INVALID;
        };
        if out.is_null() {
            return AA_E_INVALID;
        }
        // SAFETY: the caller set `out->struct_size` (coroutine_info contract).
        let theirs = unsafe { (*out).struct_size } as usize;
        if theirs < size_of::<u32>() {
            return AA_E_INVALID;
        }
        let co = c.get();
        let wait = co.wait.get();
        let (wait_line, wait_file, wait_what) = if wait.is_null() {
            (0, AaStr::EMPTY, AaStr::EMPTY)
        } else {
            // SAFETY: coroutine C-I3: non-NULL only while the coroutine is
            // inside `suspend`, when the host keeps the struct alive; the
            // strings are handed back as they were given.
            let (w, size) = unsafe { read_sized(wait, empty_wait()) };
            if size < size_of::<AaWaitInfo>() {
                (0, AaStr::EMPTY, AaStr::EMPTY)
            } else {
                (w.line, w.file, w.what)
            }
        };
        let info = AaCoroutineInfo {
            struct_size: theirs as u32,
            state: co.state.get().abi(),
            id: co.id,
            arg: co.arg,
            priority: co.priority,
            spawn_line: co.spawn.line,
            spawn_file: co.spawn.file,
            spawn_column: co.spawn.column,
            wait_line,
            wait_file,
            wait_what,
            switches: co.switches.get(),
        };
        let n = theirs.min(size_of::<AaCoroutineInfo>());
        // SAFETY: `out` is writable for its `struct_size >= n` bytes; `info`
        // is a local of the full size.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&info as *const AaCoroutineInfo).cast::<u8>(),
                out.cast::<u8>(),
                n,
            )
        };
        AA_OK
    })
}

fn empty_wait() -> AaWaitInfo {
    AaWaitInfo {
        struct_size: 0,
        flags: 0,
        what: AaStr::EMPTY,
        file: AaStr::EMPTY,
        line: 0,
        column: 0,
    }
}

unsafe extern "C" fn iterate(
    s: *const AaScheduler,
    visit: AaCoroutineVisitFn,
    ud: *mut c_void,
) -> AaStatus {
    guard("scheduler iterate", || {
        // SAFETY: shim contract (module Safety).
        let (Some(sch), Some(visit)) = (unsafe { sched(s) }, visit) else {
            return AA_E_INVALID;
        };
        // The visitor may not suspend (SR3), so no coroutine finishes and
        // every record stays live while we walk (C-I1).
        sch.forbid_suspend(|| {
            let mut at = sch.live.first();
            while let Some(c) = at {
                // SAFETY: the visitor is the host's, valid for the call, and
                // gets a live handle (C-I1) and its own `ud`.
                if !unsafe { visit(c.as_abi(), ud) } {
                    break;
                }
                at = sch.live.next(c);
            }
        });
        AA_OK
    })
}

unsafe extern "C" fn defer(s: *mut AaScheduler, task: AaMicrotaskFn, arg: *mut c_void) -> AaStatus {
    guard("scheduler defer", || {
        // SAFETY: shim contract (module Safety).
        match (unsafe { sched(s) }, task) {
            (Some(sch), Some(task)) => {
                let task: TaskFn = task;
                sch.microtasks.push(task, arg);
                AA_OK
            }
            _ => AA_E_INVALID,
        }
    })
}

unsafe extern "C" fn add_switch_handler(
    s: *mut AaScheduler,
    coro: *mut AaCoroutine,
    handler: AaSwitchHandlerFn,
    arg: *mut c_void,
) -> AaStatus {
    guard("scheduler add_switch_handler", || {
        // SAFETY: shim contract (module Safety).
        let (Some(sch), Some(handler)) = (unsafe { sched(s) }, handler) else {
            return AA_E_INVALID;
        };
        // SAFETY: shim contract (module Safety).
        let target = match unsafe { CoroPtr::from_abi(coro) } {
            Some(c) => c,
            None => match sch.current.get() {
                Some(c) => c,
                None => return AA_E_INVALID,
            },
        };
        if target.get().state.get() == State::Finished {
            return AA_E_INVALID;
        }
        let handler: HandlerFn = handler;
        target.get().add_handler(handler, arg);
        AA_OK
    })
}

unsafe extern "C" fn shutdown(s: *mut AaScheduler, reason: AaStatus) -> AaStatus {
    guard("scheduler shutdown", || {
        // SAFETY: shim contract (module Safety).
        match unsafe { sched(s) } {
            Some(sch) => shutdown::start(sch, reason),
            None => AA_E_INVALID,
        }
    })
}

unsafe extern "C" fn last_error_message(s: *const AaScheduler, buf: *mut u8, cap: usize) -> usize {
    guard_or("scheduler last_error_message", 0, || {
        // SAFETY: shim contract (module Safety).
        let Some(sch) = (unsafe { sched(s) }) else {
            return 0;
        };
        let msg = sch.last_error.borrow();
        // SAFETY: `buf` is writable for `cap` bytes (slot contract).
        unsafe { copy_message(&msg, buf, cap) }
    })
}

// ---- calls out -------------------------------------------------------------

/// The reactor slots the scheduler uses, with the instance.
#[derive(Debug)]
pub(crate) struct Reactor {
    run_once: unsafe extern "C" fn(r: *mut AaReactor, timeout_ns: i64) -> AaStatus,
    alive: unsafe extern "C" fn(r: *const AaReactor) -> u32,
    instance: *mut AaReactor,
}

impl Reactor {
    /// One loop iteration: -1 blocks, 0 polls. Callbacks run inside and
    /// re-enter the scheduler (scheduler SR1).
    #[inline]
    pub(crate) fn run_once(&self, timeout_ns: i64) -> AaStatus {
        // SAFETY: the vtable is static and the instance outlives the
        // scheduler (config contract); we are on the loop thread.
        unsafe { (self.run_once)(self.instance, timeout_ns) }
    }

    /// The number of visible active events.
    #[inline]
    pub(crate) fn alive(&self) -> u32 {
        // SAFETY: as in `run_once`.
        unsafe { (self.alive)(self.instance) }
    }
}

/// Calls a coroutine entry (C1: once, on the coroutine's stack).
#[inline]
pub(crate) fn call_entry(entry: EntryFn, arg: *mut c_void, status: AaStatus) {
    // SAFETY: the host gave this entry and argument to `coroutine_new`; the
    // entry does not unwind (C3).
    unsafe { entry(arg, status) }
}

/// Calls a switch handler; returns whether it stays registered.
#[inline]
pub(crate) fn call_handler(
    f: HandlerFn,
    coro: *mut AaCoroutine,
    kind: u32,
    arg: *mut c_void,
) -> bool {
    // SAFETY: the host registered `f` with `arg` for this coroutine; it does
    // not unwind or suspend (AaSwitchHandlerFn contract).
    unsafe { f(coro, kind, arg) }
}

/// Calls a microtask.
#[inline]
pub(crate) fn call_microtask(task: TaskFn, arg: *mut c_void) {
    // SAFETY: the host deferred `task` with `arg`; it does not unwind or
    // suspend (AaMicrotaskFn contract).
    unsafe { task(arg) }
}

// ---- introspection for tests and benchmarks ---------------------------------

/// Counters of one scheduler, for tests and benchmarks.
///
/// Not part of the C ABI: a host that links this crate statically (or a
/// test) may read them; the numbers are diagnostics, and their meaning may
/// change between versions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchedulerStats {
    /// `"context"` or `"corosensei"`.
    pub engine: &'static str,
    /// Live coroutines.
    pub live_coroutines: usize,
    /// Coroutines in the run queue.
    pub queued: usize,
    /// Context switches made (a direct switch counts once per engine).
    pub switches: u64,
    /// Coroutines started on a finished coroutine's fiber with no switch.
    pub inline_starts: u64,
    /// Non-blocking reactor polls made by busy ticks.
    pub tick_polls: u64,
    /// Coroutines finished.
    pub finished: u64,
    /// Fibers alive (running, parked with a coroutine, or idle).
    pub fibers: usize,
    /// Idle fibers in the pool.
    pub idle_fibers: usize,
    /// Fibers ever made.
    pub fibers_created: u64,
    /// Stack slabs mapped.
    pub slabs: usize,
    /// Stacks ever carved from slabs.
    pub stacks_carved: usize,
    /// Stacks in use by fibers.
    pub stacks_in_use: usize,
    /// Stacks given back to the kernel (`madvise`) after the idle pool
    /// evicted their fibers, or their fibers retired.
    pub stacks_given_back: u64,
    /// `madvise` calls that gave them back: stacks evicted together and
    /// adjacent in memory share one.
    pub stack_give_back_calls: u64,
    /// Slabs whose guard pages and first stack pages the prefault helper
    /// prepared before the loop carved them (`stack_prefault`).
    pub stack_slabs_prepared: u64,
    /// The id of the fiber the current coroutine runs on (0 outside one).
    pub current_fiber: u64,
    /// `"madvise"` or `"mprotect"` once a guard page was installed in this
    /// process, `""` before.
    pub guard_mode: &'static str,
    /// The seed of the `chaos` policy (the one drawn for `seed=random`);
    /// `None` under `fifo`.
    pub chaos_seed: Option<u64>,
}

/// Reads a scheduler's counters; `None` for NULL.
///
/// # Safety
///
/// `s` is NULL or a scheduler returned by this crate's `create` that was not
/// destroyed, and the call is made on its loop thread.
pub unsafe fn stats(s: *const AaScheduler) -> Option<SchedulerStats> {
    // SAFETY: forwarded to the caller.
    let sch = unsafe { sched(s) }?;
    let (fibers, idle, created, stacks) = sch.fibers.stats();
    let c = &sch.counters;
    Some(SchedulerStats {
        engine: match sch.opts.engine {
            crate::switch::EngineKind::Context => "context",
            crate::switch::EngineKind::Corosensei => "corosensei",
        },
        live_coroutines: sch.live.len(),
        queued: sch.queue.len(),
        switches: c.switches.get(),
        inline_starts: c.inline_starts.get(),
        tick_polls: c.tick_polls.get(),
        finished: c.finished.get(),
        fibers,
        idle_fibers: idle,
        fibers_created: created,
        slabs: stacks.slabs,
        stacks_carved: stacks.carved,
        stacks_in_use: stacks.in_use,
        stacks_given_back: stacks.given_back,
        stack_give_back_calls: stacks.give_back_calls,
        stack_slabs_prepared: stacks.prepared,
        current_fiber: sch
            .current
            .get()
            .and_then(|c| c.get().fiber.get())
            .map_or(0, |f| f.get().id),
        guard_mode: match stack_guard::mode() {
            Some(stack_guard::GuardMode::Madvise) => "madvise",
            Some(stack_guard::GuardMode::Mprotect) => "mprotect",
            None => "",
        },
        chaos_seed: sch.queue.chaos_seed(),
    })
}
