//! A tiny test host: it negotiates with the scheduler through the real ABI
//! (`plugin_desc()` -> `init` -> `get_interface`), runs Rust closures as
//! coroutine entries, records events, captures the plugin's log, and drives
//! the scheduler with a fake reactor whose `alive()` and wake-ups the test
//! controls (virtual time: a blocking `run_once` jumps to the next wake-up).
//!
//! It frees what it allocates (the reactor and the switch handlers of a
//! scheduler in `finish`; the negotiation's host table and plugin context
//! stay referenced from a static), so `cargo xtask memcheck` can run this
//! suite under valgrind and demand zero leaks.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::OnceLock;

use async_abi::*;

// ---- the ABI, negotiated once per process ----------------------------------

/// The vtable, and the host table and plugin context the negotiation made:
/// kept here (referenced for the process's life, never freed) so that leak
/// checkers see them as reachable.
struct Api {
    vt: AaSchedulerVTable,
    _host: &'static AaHostApi,
    _ctx: *mut AaPluginCtx,
}

static API: OnceLock<Api> = OnceLock::new();

/// The scheduler vtable, fetched through the descriptor like a host does.
pub(crate) fn vtable() -> &'static AaSchedulerVTable {
    &API.get_or_init(|| {
        // SAFETY: the descriptor is static (AA-R7).
        let desc = unsafe { &*async_scheduler::plugin_desc() };
        assert_eq!(desc.abi_major, AA_ABI_MAJOR);
        assert_eq!(desc.role, AA_ROLE_SCHEDULER);
        let host = Box::leak(Box::new(AaHostApi {
            struct_size: std::mem::size_of::<AaHostApi>() as u32,
            abi_major: AA_ABI_MAJOR,
            abi_minor: AA_ABI_MINOR,
            host_ctx: ptr::null_mut(),
            host_name: c"test-host".as_ptr(),
            host_version: c"0".as_ptr(),
            log: Some(host_log),
            log_enabled: Some(host_log_enabled),
            get_extension: None,
        }));
        let mut ctx = ptr::null_mut();
        // SAFETY: `host` is leaked, so valid for the process.
        assert_eq!(unsafe { desc.init.unwrap()(host, &mut ctx) }, AA_OK);
        let id = &AA_IFACE_SCHEDULER_V1[..AA_IFACE_SCHEDULER_V1.len() - 1];
        // SAFETY: `ctx` came from init; the id is borrowed for the call.
        let hdr = unsafe {
            desc.get_interface.unwrap()(
                ctx,
                AaStr {
                    ptr: id.as_ptr(),
                    len: id.len(),
                },
            )
        };
        assert!(!hdr.is_null());
        // SAFETY: the interface is the static scheduler vtable.
        let vt = unsafe { *(hdr as *const AaSchedulerVTable) };
        assert_eq!(
            vt.hdr.struct_size as usize,
            std::mem::size_of::<AaSchedulerVTable>()
        );
        Api {
            vt,
            _host: host,
            _ctx: ctx,
        }
    })
    .vt
}

// SAFETY: the copied vtable holds only function pointers (static, AA-R7);
// the host table is immutable and the context pointer is never dereferenced
// here.
unsafe impl Sync for Api {}
// SAFETY: as above.
unsafe impl Send for Api {}

/// A switch handler's closure, boxed twice so a thin pointer carries it.
type Handler = Box<dyn FnMut(u32) -> bool>;

thread_local! {
    static LOG: RefCell<Vec<(u32, String)>> = const { RefCell::new(Vec::new()) };
    static EVENTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static PANICS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// Switch handlers registered on this thread, freed by `finish` (the
    /// scheduler forgets a handler that returned false without freeing its
    /// argument, which is the host's).
    static HANDLERS: RefCell<Vec<*mut Handler>> = const { RefCell::new(Vec::new()) };
}

unsafe extern "C" fn host_log(
    _ctx: *mut c_void,
    level: u32,
    _target: AaStr,
    msg: AaStr,
    _file: AaStr,
    _line: u32,
) {
    // SAFETY: borrowed for the call (AA-R2).
    let msg = String::from_utf8_lossy(unsafe { msg.as_bytes() }).into_owned();
    // Records logged on other threads (none in these tests) are dropped.
    let _ = LOG.try_with(|l| l.borrow_mut().push((level, msg)));
}

unsafe extern "C" fn host_log_enabled(_ctx: *mut c_void, _level: u32, _target: AaStr) -> bool {
    true
}

/// Log records at `level` or more severe, captured on this thread.
pub(crate) fn take_log(level: u32) -> Vec<String> {
    LOG.with(|l| {
        l.borrow_mut()
            .drain(..)
            .filter(|(lv, _)| *lv <= level)
            .map(|(_, m)| m)
            .collect()
    })
}

/// Records an event.
pub(crate) fn ev(e: impl Into<String>) {
    EVENTS.with(|v| v.borrow_mut().push(e.into()));
}

/// Takes the events recorded on this thread.
pub(crate) fn take_events() -> Vec<String> {
    EVENTS.with(|v| std::mem::take(&mut *v.borrow_mut()))
}

/// Asserts the recorded events, in order.
#[track_caller]
pub(crate) fn assert_events(expected: &[&str]) {
    assert_eq!(take_events(), expected);
}

// ---- the fake reactor -------------------------------------------------------

struct Wake {
    at_call: u64,
    coro: Co,
    status: AaStatus,
}

/// A reactor that completes nothing by itself: `alive()` is a counter the
/// test sets plus the pending wake-ups, and `run_once` resumes the
/// coroutines whose wake-up is due (a blocking call jumps to the next one).
#[derive(Default)]
pub(crate) struct FakeReactor {
    pub(crate) alive: Cell<u32>,
    pub(crate) calls: Cell<u64>,
    pub(crate) polls: Cell<u64>,
    pub(crate) blocks: Cell<u64>,
    wakes: RefCell<VecDeque<Wake>>,
    sched: Cell<Option<H>>,
}

unsafe extern "C" fn fake_run_once(r: *mut AaReactor, timeout_ns: i64) -> AaStatus {
    // SAFETY: the instance is the test's FakeReactor, alive for the test.
    let r = unsafe { &*(r as *const FakeReactor) };
    let call = r.calls.get() + 1;
    r.calls.set(call);
    if timeout_ns == 0 {
        r.polls.set(r.polls.get() + 1);
    } else {
        r.blocks.set(r.blocks.get() + 1);
    }
    let mut due = Vec::new();
    {
        let mut wakes = r.wakes.borrow_mut();
        let mut i = 0;
        while i < wakes.len() {
            if wakes[i].at_call <= call {
                due.push(wakes.remove(i).unwrap());
            } else {
                i += 1;
            }
        }
        if due.is_empty() && timeout_ns < 0 {
            if let Some(w) = wakes.pop_front() {
                due.push(w);
            }
        }
    }
    let h = r
        .sched
        .get()
        .expect("reactor used before the scheduler was made");
    for w in &due {
        assert_eq!(h.enqueue(w.coro, w.status), AA_OK);
    }
    due.len() as AaStatus
}

unsafe extern "C" fn fake_alive(r: *const AaReactor) -> u32 {
    // SAFETY: as in fake_run_once.
    let r = unsafe { &*(r as *const FakeReactor) };
    r.alive.get() + r.wakes.borrow().len() as u32
}

unsafe extern "C" fn fake_now(_r: *const AaReactor) -> u64 {
    0
}

/// The fake reactor's vtable: run_once, alive, now_ns.
pub(crate) static FAKE_REACTOR: AaReactorVTable = AaReactorVTable {
    hdr: AaIfaceHeader {
        struct_size: std::mem::size_of::<AaReactorVTable>() as u32,
        iface_minor: 0,
        _reserved: 0,
    },
    caps: 0,
    create: None,
    destroy: None,
    run_once: Some(fake_run_once),
    alive: Some(fake_alive),
    now_ns: Some(fake_now),
    wake: None,
    timer_new: None,
    timer_rearm: None,
    poll_new: None,
    poll_set_interest: None,
    trigger_new: None,
    trigger_fire: None,
    io_submit: None,
    set_ref: None,
    cancel: None,
    close: None,
    dispose: None,
    last_error_message: None,
    signal_new: None,
    process_new: None,
    fs_watch_new: None,
    dns_resolve: None,
    instance_caps: None,
};

// ---- the scheduler, from the host's side -----------------------------------

/// A coroutine handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Co(pub(crate) *mut AaCoroutine);

/// A handle to the scheduler under test, `Copy` so closures can capture it.
#[derive(Clone, Copy)]
pub(crate) struct H {
    pub(crate) vt: &'static AaSchedulerVTable,
    pub(crate) s: *mut AaScheduler,
    pub(crate) reactor: &'static FakeReactor,
}

type Body = Box<dyn FnOnce(AaStatus)>;

unsafe extern "C" fn entry(arg: *mut c_void, status: AaStatus) {
    // SAFETY: `arg` is the Box made by `spawn_with`, given back once (C1).
    let body: Box<Body> = unsafe { Box::from_raw(arg.cast()) };
    if let Err(p) = catch_unwind(AssertUnwindSafe(move || body(status))) {
        let msg = async_abi::sdk::panic_message(&*p).to_owned();
        PANICS.with(|v| v.borrow_mut().push(msg));
    }
}

/// What a coroutine is spawned with.
#[derive(Clone, Copy)]
pub(crate) struct Spawn {
    pub(crate) priority: u32,
    pub(crate) stack_size: usize,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
    pub(crate) column: u32,
}

impl Default for Spawn {
    fn default() -> Spawn {
        Spawn {
            priority: AA_PRIORITY_NORMAL,
            stack_size: 0,
            file: "",
            line: 0,
            column: 0,
        }
    }
}

/// Tests may not care about the status: shorthand for `let _ = ...`.
pub(crate) fn ok(status: AaStatus) {
    assert_eq!(status, AA_OK, "{}", status_name(status).unwrap_or("?"));
}

impl H {
    /// Creates a coroutine (CREATED, not enqueued).
    pub(crate) fn create(&self, opts: Spawn, f: impl FnOnce(AaStatus) + 'static) -> Co {
        let o = AaSpawnOptions {
            struct_size: std::mem::size_of::<AaSpawnOptions>() as u32,
            priority: opts.priority,
            stack_size: opts.stack_size,
            spawn_file: AaStr::from_str(opts.file),
            spawn_line: opts.line,
            spawn_column: opts.column,
        };
        let body: Box<Body> = Box::new(Box::new(f));
        let arg = Box::into_raw(body).cast::<c_void>();
        let mut out = ptr::null_mut();
        // SAFETY: a live scheduler; the options and out pointer are valid.
        let rc = unsafe { self.vt.coroutine_new.unwrap()(self.s, &o, Some(entry), arg, &mut out) };
        assert_eq!(rc, AA_OK);
        Co(out)
    }

    /// Creates and enqueues a coroutine with status 0.
    pub(crate) fn spawn(&self, f: impl FnOnce(AaStatus) + 'static) -> Co {
        self.spawn_with(Spawn::default(), f)
    }

    /// Creates and enqueues a coroutine with options.
    pub(crate) fn spawn_with(&self, opts: Spawn, f: impl FnOnce(AaStatus) + 'static) -> Co {
        let c = self.create(opts, f);
        ok(self.enqueue(c, 0));
        c
    }

    pub(crate) fn enqueue(&self, c: Co, status: AaStatus) -> AaStatus {
        // SAFETY: a live scheduler and coroutine.
        unsafe { self.vt.enqueue.unwrap()(self.s, c.0, status) }
    }

    pub(crate) fn suspend(&self) -> AaStatus {
        // SAFETY: a live scheduler.
        unsafe { self.vt.suspend.unwrap()(self.s, ptr::null()) }
    }

    pub(crate) fn suspend_at(&self, wait: &AaWaitInfo) -> AaStatus {
        // SAFETY: a live scheduler; `wait` outlives the call.
        unsafe { self.vt.suspend.unwrap()(self.s, wait) }
    }

    /// A yield: enqueue the current coroutine, then suspend.
    pub(crate) fn yield_now(&self) -> AaStatus {
        ok(self.enqueue(self.current(), 0));
        self.suspend()
    }

    /// A yield in one call: `suspend` with `AA_WAIT_YIELD`.
    pub(crate) fn yield_flag(&self) -> AaStatus {
        let wait = AaWaitInfo {
            struct_size: std::mem::size_of::<AaWaitInfo>() as u32,
            flags: AA_WAIT_YIELD,
            what: AaStr::from_str("yield"),
            file: AaStr::from_str(file!()),
            line: line!(),
            column: column!(),
        };
        self.suspend_at(&wait)
    }

    pub(crate) fn current(&self) -> Co {
        // SAFETY: a live scheduler.
        Co(unsafe { self.vt.current.unwrap()(self.s) })
    }

    pub(crate) fn id(&self, c: Co) -> u64 {
        // SAFETY: a live coroutine.
        unsafe { self.vt.coroutine_id.unwrap()(c.0) }
    }

    pub(crate) fn info(&self, c: Co) -> AaCoroutineInfo {
        // SAFETY: all-zero is a valid AaCoroutineInfo (integers, NULLs).
        let mut info: AaCoroutineInfo = unsafe { std::mem::zeroed() };
        info.struct_size = std::mem::size_of::<AaCoroutineInfo>() as u32;
        // SAFETY: a live scheduler and coroutine; `info` is writable.
        ok(unsafe { self.vt.coroutine_info.unwrap()(self.s, c.0, &mut info) });
        info
    }

    pub(crate) fn defer(&self, f: impl FnOnce() + 'static) {
        unsafe extern "C" fn run(arg: *mut c_void) {
            // SAFETY: the Box made below, given back once.
            let f: Box<Box<dyn FnOnce()>> = unsafe { Box::from_raw(arg.cast()) };
            f();
        }
        let f: Box<Box<dyn FnOnce()>> = Box::new(Box::new(f));
        // SAFETY: a live scheduler.
        ok(unsafe { self.vt.defer.unwrap()(self.s, Some(run), Box::into_raw(f).cast()) });
    }

    /// Adds a switch handler; `f(kind)` returns whether it stays.
    pub(crate) fn on_switch(
        &self,
        c: Option<Co>,
        f: impl FnMut(u32) -> bool + 'static,
    ) -> AaStatus {
        unsafe extern "C" fn call(_c: *mut AaCoroutine, kind: u32, arg: *mut c_void) -> bool {
            // SAFETY: the Box made below, freed by `finish` once the
            // scheduler is gone.
            let f = unsafe { &mut *(arg as *mut Handler) };
            f(kind)
        }
        let f: Box<Handler> = Box::new(Box::new(f));
        let f = Box::into_raw(f);
        HANDLERS.with(|h| h.borrow_mut().push(f));
        let coro = c.map_or(ptr::null_mut(), |c| c.0);
        // SAFETY: a live scheduler.
        unsafe { self.vt.add_switch_handler.unwrap()(self.s, coro, Some(call), f.cast()) }
    }

    pub(crate) fn shutdown(&self, reason: AaStatus) -> AaStatus {
        // SAFETY: a live scheduler.
        unsafe { self.vt.shutdown.unwrap()(self.s, reason) }
    }

    pub(crate) fn run(&self) -> AaStatus {
        // SAFETY: a live scheduler, on its thread.
        unsafe { self.vt.run.unwrap()(self.s) }
    }

    pub(crate) fn stats(&self) -> async_scheduler::SchedulerStats {
        // SAFETY: a live scheduler, on its thread.
        unsafe { async_scheduler::stats(self.s) }.unwrap()
    }

    /// Resumes `c` with `status` after `calls` more `run_once` calls.
    pub(crate) fn wake_after(&self, calls: u64, c: Co, status: AaStatus) {
        self.reactor.wakes.borrow_mut().push_back(Wake {
            at_call: self.reactor.calls.get() + calls,
            coro: c,
            status,
        });
    }

    pub(crate) fn last_error(&self) -> String {
        let mut buf = [0u8; 512];
        // SAFETY: a live scheduler; `buf` is writable.
        let n = unsafe { self.vt.last_error_message.unwrap()(self.s, buf.as_mut_ptr(), buf.len()) };
        String::from_utf8_lossy(&buf[..n.min(buf.len() - 1)]).into_owned()
    }
}

/// Creates a scheduler with `options` on a new fake reactor.
///
/// # Errors
///
/// The status and the one-line message `create` wrote.
pub(crate) fn try_create(
    options: &[(&str, &str)],
    stack_size: usize,
) -> Result<H, (AaStatus, String)> {
    let vt = vtable();
    let reactor: &'static FakeReactor = Box::leak(Box::default());
    let kvs: Vec<AaKv> = options
        .iter()
        .map(|(k, v)| AaKv {
            key: AaStr::from_str(k),
            value: AaStr::from_str(v),
        })
        .collect();
    let mut err = [0u8; 256];
    let cfg = AaSchedulerConfig {
        struct_size: std::mem::size_of::<AaSchedulerConfig>() as u32,
        flags: 0,
        reactor: &FAKE_REACTOR,
        reactor_instance: reactor as *const FakeReactor as *mut AaReactor,
        stack_size,
        options: kvs.as_ptr(),
        n_options: kvs.len(),
        err_buf: err.as_mut_ptr(),
        err_cap: err.len(),
    };
    let mut s = ptr::null_mut();
    // SAFETY: the config and its strings outlive the call.
    let rc = unsafe { vt.create.unwrap()(ptr::null_mut(), &cfg, &mut s) };
    if rc != AA_OK {
        // SAFETY: leaked just above and never handed to a scheduler.
        drop(unsafe { Box::from_raw(reactor as *const FakeReactor as *mut FakeReactor) });
        let n = err.iter().position(|&b| b == 0).unwrap_or(err.len());
        return Err((rc, String::from_utf8_lossy(&err[..n]).into_owned()));
    }
    let h = H { vt, s, reactor };
    reactor.sched.set(Some(h));
    Ok(h)
}

/// Runs `body` against a fresh scheduler with `engine` and `options`, then
/// checks the end is clean: no coroutine panicked, none is alive, and
/// `destroy` succeeds. The fake reactor's polls run no callback, so
/// `poll_gap_us` is 0 (every 61st busy tick polls, whatever the clock)
/// unless `options` say otherwise.
#[track_caller]
pub(crate) fn with_scheduler(engine: &str, options: &[(&str, &str)], body: impl FnOnce(H)) {
    let mut all = vec![("engine", engine), ("poll_gap_us", "0")];
    all.extend_from_slice(options);
    let h = try_create(&all, 0).expect("create failed");
    take_events();
    take_log(AA_LOG_TRACE);
    body(h);
    finish(h);
}

/// Fails if a coroutine panicked or is still alive; destroys the scheduler.
#[track_caller]
pub(crate) fn finish(h: H) {
    let panics = PANICS.with(|p| std::mem::take(&mut *p.borrow_mut()));
    assert!(panics.is_empty(), "coroutines panicked: {panics:?}");
    let stats = h.stats();
    assert_eq!(
        stats.live_coroutines, 0,
        "coroutines still alive at the end"
    );
    // SAFETY: a live scheduler, destroyed once.
    assert_eq!(unsafe { h.vt.destroy.unwrap()(h.s) }, AA_OK);
    // The scheduler is gone: nothing calls the handlers or the reactor.
    for f in HANDLERS.with(|h| std::mem::take(&mut *h.borrow_mut())) {
        // SAFETY: made by `on_switch` with Box::into_raw, freed once.
        drop(unsafe { Box::from_raw(f) });
    }
    // SAFETY: leaked by `try_create` for this scheduler only; no copy of `h`
    // is used after `finish`.
    drop(unsafe { Box::from_raw(h.reactor as *const FakeReactor as *mut FakeReactor) });
}

/// Declares each test once per engine under the FIFO policy:
/// `mod name { fn context(); fn corosensei(); }`. For tests that assert the
/// FIFO order itself (or rely on it to reach the state they check); the
/// others go in [`any_order_tests!`].
#[macro_export]
macro_rules! engine_tests {
    ($($(#[$m:meta])* fn $name:ident($h:ident) $body:block)*) => {
        $(
            $(#[$m])*
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                fn body($h: $crate::host::H) $body
                #[test]
                fn context() {
                    $crate::host::with_scheduler("context", &[], body)
                }
                #[test]
                fn corosensei() {
                    $crate::host::with_scheduler("corosensei", &[], body)
                }
            }
        )*
    };
}

/// Declares each test once per engine and per policy: the FIFO pair of
/// [`engine_tests!`], plus `chaos_context` and `chaos_corosensei`, which run
/// the body under `policy=chaos` once per seed of [`CHAOS_SEEDS`]. For tests
/// whose assertions hold in any order among equal priorities.
#[macro_export]
macro_rules! any_order_tests {
    ($($(#[$m:meta])* fn $name:ident($h:ident) $body:block)*) => {
        $(
            $(#[$m])*
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                fn body($h: $crate::host::H) $body
                #[test]
                fn context() {
                    $crate::host::with_scheduler("context", &[], body)
                }
                #[test]
                fn corosensei() {
                    $crate::host::with_scheduler("corosensei", &[], body)
                }
                #[test]
                fn chaos_context() {
                    $crate::host::with_chaos("context", body)
                }
                #[test]
                fn chaos_corosensei() {
                    $crate::host::with_chaos("corosensei", body)
                }
            }
        )*
    };
}

/// The seeds every [`any_order_tests!`] body runs under with `policy=chaos`.
pub(crate) const CHAOS_SEEDS: [u64; 3] = [1, 2, 3];

/// Runs `body` once per seed of [`CHAOS_SEEDS`] under `policy=chaos`; a
/// failure names the seed on stderr.
#[track_caller]
pub(crate) fn with_chaos(engine: &str, body: fn(H)) {
    for seed in CHAOS_SEEDS {
        let seed = seed.to_string();
        eprintln!("policy=chaos seed={seed}");
        with_scheduler(engine, &[("policy", "chaos"), ("seed", &seed)], body);
    }
}
