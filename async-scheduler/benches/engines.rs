//! Engine benchmark: picks the scheduler's default engine.
//!
//! Run: `cargo bench -p async-scheduler --bench engines`.
//!
//! What is timed (each figure is the best of several runs, in ns per
//! operation; stack allocation and scheduler creation are excluded):
//! - **raw round trip**: a bare engine coroutine resumed and suspending back,
//!   `context` (`Context::resume` both ways) and `corosensei`
//!   (`resume` + `Yielder::suspend`);
//! - **raw round trip, FP coroutine**: the same, but the coroutine divided
//!   `1.0 / 3.0` once before the loop, so its MXCSR sticky flags differ from
//!   the caller's;
//! - **scheduler ping-pong**: two coroutines, each `enqueue(other, 0)` then
//!   `suspend`, through the C ABI vtable; one round trip is two suspends and
//!   two direct switches. "FP" makes one of the two divide once first;
//! - **spawn + finish**: `coroutine_new` + `enqueue` of an empty coroutine,
//!   its run and its end (batches of 1,000, started inline on one fiber).
//!
//! Not in the table, run alone: `cargo bench -p async-scheduler --bench
//! engines -- burst` spawns 1,000,000 coroutines in rounds of 5,000 alive
//! at once (`ENGINES_ITERS`, `ENGINES_ALIVE`); each writes 12 KiB of its
//! stack (a connection's buffers), suspends once and is resumed by the
//! round's last coroutine. More coroutines than the stack pool holds finish
//! together, so this is the loop that gives stacks back (README, "Stack
//! pool"): run it under `strace -c -f` or `perf stat`, with scheduler
//! options in `ENGINES_OPTIONS` (`stack_pool=8192`). It prints the time per
//! coroutine and the RSS before, with the first round alive, and after.

use std::ffi::c_void;
use std::hint::black_box;
use std::ptr;
use std::time::Instant;

use async_abi::*;

const RUNS: usize = 7;

/// Clears MXCSR's sticky exception flags on this thread (keeps the control
/// bits), so the caller starts each measurement with clean flags.
fn clear_fp_flags() {
    #[cfg(target_arch = "x86_64")]
    {
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr/ldmxcsr on a local; clearing status flags raises
        // nothing.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr);
            csr &= !0x3f;
            std::arch::asm!("ldmxcsr [{}]", in(reg) &csr);
        }
    }
}

fn fp_work() {
    black_box(black_box(1.0f64) / black_box(3.0f64));
}

/// Best of `RUNS` runs of `f(iters)`, in ns per iteration.
fn best(iters: u64, mut f: impl FnMut(u64)) -> f64 {
    (0..RUNS)
        .map(|_| {
            clear_fp_flags();
            let start = Instant::now();
            f(iters);
            start.elapsed().as_nanos() as f64 / iters as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn raw_context(fp: bool, iters: u64) -> f64 {
    use context::stack::ProtectedFixedSizeStack;
    use context::{Context, Transfer};

    extern "C" fn plain(mut t: Transfer) -> ! {
        loop {
            // SAFETY: `t.context` is the caller's context, resumed once.
            t = unsafe { t.context.resume(0) };
        }
    }
    extern "C" fn with_fp(mut t: Transfer) -> ! {
        fp_work();
        loop {
            // SAFETY: as above.
            t = unsafe { t.context.resume(0) };
        }
    }
    let stack = ProtectedFixedSizeStack::new(256 * 1024).expect("stack");
    let f = if fp { with_fp } else { plain };
    // SAFETY: the stack outlives the context (both dropped at the end; the
    // context is never resumed after).
    let mut ctx = Some(unsafe { Context::new(&stack, f) });
    let mut round = |n: u64| {
        for _ in 0..n {
            // SAFETY: resumes the coroutine's latest context once.
            let t = unsafe { ctx.take().unwrap().resume(0) };
            ctx = Some(t.context);
        }
    };
    round(1); // start it (and do its FP work) outside the timing
    best(iters, round)
}

fn raw_corosensei(fp: bool, iters: u64) -> f64 {
    use corosensei::Coroutine;
    let mut co = Coroutine::new(move |y, ()| {
        if fp {
            fp_work();
        }
        loop {
            y.suspend(());
        }
    });
    co.resume(());
    let r = best(iters, |n| {
        for _ in 0..n {
            black_box(co.resume(()));
        }
    });
    // SAFETY: the coroutine holds nothing that needs dropping on its stack.
    unsafe { co.force_reset() };
    r
}

// ---- through the scheduler's C ABI -----------------------------------------

fn vtable() -> &'static AaSchedulerVTable {
    // SAFETY: the static descriptor (AA-R7).
    let desc = unsafe { &*async_scheduler::plugin_desc() };
    let mut ctx = ptr::null_mut();
    // SAFETY: no host API (NULL): the plugin logs errors to stderr.
    assert_eq!(unsafe { desc.init.unwrap()(ptr::null(), &mut ctx) }, AA_OK);
    let id = &AA_IFACE_SCHEDULER_V1[..AA_IFACE_SCHEDULER_V1.len() - 1];
    // SAFETY: a context from init; the id is borrowed for the call.
    let hdr = unsafe {
        desc.get_interface.unwrap()(
            ctx,
            AaStr {
                ptr: id.as_ptr(),
                len: id.len(),
            },
        )
    };
    // SAFETY: the static scheduler vtable.
    unsafe { &*(hdr as *const AaSchedulerVTable) }
}

unsafe extern "C" fn idle_run_once(_r: *mut AaReactor, _t: i64) -> AaStatus {
    0
}

unsafe extern "C" fn idle_alive(_r: *const AaReactor) -> u32 {
    0
}

static IDLE_REACTOR: AaReactorVTable = AaReactorVTable {
    hdr: AaIfaceHeader {
        struct_size: std::mem::size_of::<AaReactorVTable>() as u32,
        iface_minor: 0,
        _reserved: 0,
    },
    caps: 0,
    create: None,
    destroy: None,
    run_once: Some(idle_run_once),
    alive: Some(idle_alive),
    now_ns: None,
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

struct Sched {
    vt: &'static AaSchedulerVTable,
    s: *mut AaScheduler,
}

impl Sched {
    fn new(vt: &'static AaSchedulerVTable, engine: &str) -> Sched {
        Sched::with_options(vt, engine, &[])
    }

    fn with_options(vt: &'static AaSchedulerVTable, engine: &str, extra: &[(&str, &str)]) -> Sched {
        let mut kv = vec![AaKv {
            key: AaStr::from_str("engine"),
            value: AaStr::from_str(engine),
        }];
        kv.extend(extra.iter().map(|(k, v)| AaKv {
            key: AaStr::from_str(k),
            value: AaStr::from_str(v),
        }));
        let cfg = AaSchedulerConfig {
            struct_size: std::mem::size_of::<AaSchedulerConfig>() as u32,
            flags: 0,
            reactor: &IDLE_REACTOR,
            reactor_instance: ptr::NonNull::dangling().as_ptr(),
            stack_size: 0,
            options: kv.as_ptr(),
            n_options: kv.len(),
            err_buf: ptr::null_mut(),
            err_cap: 0,
        };
        let mut s = ptr::null_mut();
        // SAFETY: a valid config for the call.
        let rc = unsafe { vt.create.unwrap()(ptr::null_mut(), &cfg, &mut s) };
        assert_eq!(rc, AA_OK);
        Sched { vt, s }
    }
}

impl Drop for Sched {
    fn drop(&mut self) {
        // SAFETY: a live scheduler with no coroutine left.
        assert_eq!(unsafe { self.vt.destroy.unwrap()(self.s) }, AA_OK);
    }
}

/// One ping-pong player: `other` is filled in once both exist.
struct Player {
    vt: &'static AaSchedulerVTable,
    s: *mut AaScheduler,
    other: *mut AaCoroutine,
    rounds: u64,
    fp: bool,
}

unsafe extern "C" fn player(arg: *mut c_void, _status: AaStatus) {
    // SAFETY: `arg` is a Player the benchmark keeps alive during `run`.
    let p = unsafe { &*(arg as *const Player) };
    if p.fp {
        fp_work();
    }
    for _ in 0..p.rounds {
        // SAFETY: a live scheduler and coroutine, inside a coroutine.
        unsafe {
            (p.vt.enqueue.unwrap())(p.s, p.other, 0);
            (p.vt.suspend.unwrap())(p.s, ptr::null());
        }
    }
    // SAFETY: as above; wake the other one for its last round.
    unsafe { (p.vt.enqueue.unwrap())(p.s, p.other, 0) };
}

fn spawn(sch: &Sched, entry: AaCoroutineEntry, arg: *mut c_void) -> *mut AaCoroutine {
    let mut c = ptr::null_mut();
    // SAFETY: a live scheduler; NULL options are the defaults.
    unsafe {
        assert_eq!(
            (sch.vt.coroutine_new.unwrap())(sch.s, ptr::null(), entry, arg, &mut c),
            AA_OK
        );
        assert_eq!((sch.vt.enqueue.unwrap())(sch.s, c, 0), AA_OK);
    }
    c
}

fn ping_pong(vt: &'static AaSchedulerVTable, engine: &str, fp: bool, iters: u64) -> f64 {
    let sch = Sched::new(vt, engine);
    best(iters, |n| {
        let a = Box::into_raw(Box::new(Player {
            vt,
            s: sch.s,
            other: ptr::null_mut(),
            rounds: n,
            fp,
        }));
        let b = Box::into_raw(Box::new(Player {
            vt,
            s: sch.s,
            other: ptr::null_mut(),
            rounds: n,
            fp: false,
        }));
        let ca = spawn(&sch, Some(player), a.cast());
        let cb = spawn(&sch, Some(player), b.cast());
        // SAFETY: both boxes are live; the coroutines have not run yet.
        unsafe {
            (*a).other = cb;
            (*b).other = ca;
        }
        // SAFETY: a live scheduler, outside any coroutine.
        assert_eq!(unsafe { (vt.run.unwrap())(sch.s) }, AA_OK);
        // SAFETY: both coroutines finished; the boxes are freed once.
        unsafe { drop((Box::from_raw(a), Box::from_raw(b))) };
    })
}

unsafe extern "C" fn empty(_arg: *mut c_void, _status: AaStatus) {}

fn spawn_finish(vt: &'static AaSchedulerVTable, engine: &str, iters: u64) -> f64 {
    let sch = Sched::new(vt, engine);
    best(iters, |n| {
        let mut left = n;
        while left > 0 {
            let batch = left.min(1000);
            for _ in 0..batch {
                spawn(&sch, Some(empty), ptr::null_mut());
            }
            // SAFETY: a live scheduler, outside any coroutine.
            assert_eq!(unsafe { (vt.run.unwrap())(sch.s) }, AA_OK);
            left -= batch;
        }
    })
}

/// A round of [`burst`]: the waiters, resumed by the round's last coroutine.
struct Round {
    vt: &'static AaSchedulerVTable,
    s: *mut AaScheduler,
    waiters: Vec<*mut AaCoroutine>,
    /// RSS with every waiter suspended, if this round measures it.
    rss_alive: Option<std::cell::Cell<u64>>,
}

unsafe extern "C" fn burst_waiter(arg: *mut c_void, _status: AaStatus) {
    // SAFETY: `arg` is the round, alive during `run`.
    let r = unsafe { &*(arg as *const Round) };
    let mut buffers = [0u8; 12 * 1024];
    // Writes every page, as a coroutine filling its buffers would.
    for i in (0..buffers.len()).step_by(512) {
        buffers[i] = i as u8;
    }
    black_box(&mut buffers);
    // SAFETY: a live scheduler, inside a coroutine.
    unsafe { (r.vt.suspend.unwrap())(r.s, ptr::null()) };
    black_box(&buffers);
}

unsafe extern "C" fn burst_resumer(arg: *mut c_void, _status: AaStatus) {
    // SAFETY: `arg` is the round, alive during `run`.
    let r = unsafe { &*(arg as *const Round) };
    if let Some(rss) = &r.rss_alive {
        rss.set(rss_kib());
    }
    for &c in &r.waiters {
        // SAFETY: a live scheduler; the waiters are suspended, not finished.
        unsafe { (r.vt.enqueue.unwrap())(r.s, c, 0) };
    }
}

/// The resident set from a page-table walk: `/proc/self/statm` lags behind
/// `madvise` by tens of MB on Linux 6.18 (per-CPU counters), the walk does
/// not.
fn rss_kib() -> u64 {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("Rss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `total` coroutines in rounds of `alive` (module doc); ns per coroutine.
fn burst(vt: &'static AaSchedulerVTable, total: u64, alive: u64, options: &[(&str, &str)]) {
    let engine = options
        .iter()
        .find(|(k, _)| *k == "engine")
        .map_or("context", |(_, v)| v);
    let extra: Vec<_> = options
        .iter()
        .copied()
        .filter(|(k, _)| *k != "engine")
        .collect();
    let sch = Sched::with_options(vt, engine, &extra);
    let before = rss_kib();
    let mut peak = 0;
    let start = Instant::now();
    for round in 0..total / alive {
        let round = Box::into_raw(Box::new(Round {
            vt,
            s: sch.s,
            waiters: Vec::with_capacity(alive as usize),
            // Once: every round is alike, and the walk costs milliseconds.
            rss_alive: (round == 0).then(|| std::cell::Cell::new(0)),
        }));
        for _ in 0..alive {
            let c = spawn(&sch, Some(burst_waiter), round.cast());
            // SAFETY: the round is live and no coroutine runs yet.
            unsafe { (*round).waiters.push(c) };
        }
        spawn(&sch, Some(burst_resumer), round.cast());
        // SAFETY: a live scheduler, outside any coroutine.
        assert_eq!(unsafe { (vt.run.unwrap())(sch.s) }, AA_OK);
        // SAFETY: every coroutine of the round finished; freed once.
        let round = unsafe { Box::from_raw(round) };
        if let Some(rss) = &round.rss_alive {
            peak = rss.get();
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / total as f64;
    println!(
        "burst: {ns:.1} ns per coroutine ({total} in rounds of {alive}, options {options:?}); \
         RSS {before} KiB before, {peak} KiB with a round alive, {} KiB after",
        rss_kib()
    );
}

fn main() {
    let vt = vtable();
    let raw = 2_000_000;
    let sched = 1_000_000;
    // `cargo bench --bench engines -- pingpong-corosensei` runs one case (for
    // profiling); the table needs them all.
    if let Some(only) = std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        if only == "burst" {
            let env_n = |var: &str, default: u64| {
                std::env::var(var).map_or(default, |v| v.parse().expect("a number"))
            };
            let options = std::env::var("ENGINES_OPTIONS").unwrap_or_default();
            let options: Vec<(&str, &str)> = options
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .collect();
            let alive = env_n("ENGINES_ALIVE", 5_000);
            burst(vt, env_n("ENGINES_ITERS", 1_000_000), alive, &options);
            return;
        }
        let n = std::env::var("ENGINES_ITERS").map_or(sched * 5, |v| v.parse().unwrap());
        let ns = match only.as_str() {
            "pingpong-context" => ping_pong(vt, "context", true, n),
            "pingpong-corosensei" => ping_pong(vt, "corosensei", true, n),
            "spawn-corosensei" => spawn_finish(vt, "corosensei", n),
            other => panic!("unknown case {other}"),
        };
        println!("{only}: {ns:.1} ns/op");
        return;
    }
    let rows: Vec<(&str, f64)> = vec![
        ("raw context round trip", raw_context(false, raw)),
        (
            "raw context round trip, FP coroutine",
            raw_context(true, raw),
        ),
        ("raw corosensei round trip", raw_corosensei(false, raw)),
        (
            "raw corosensei round trip, FP coroutine",
            raw_corosensei(true, raw),
        ),
        (
            "scheduler ping-pong round trip, context",
            ping_pong(vt, "context", false, sched),
        ),
        (
            "scheduler ping-pong round trip, context, FP",
            ping_pong(vt, "context", true, sched),
        ),
        (
            "scheduler ping-pong round trip, corosensei",
            ping_pong(vt, "corosensei", false, sched),
        ),
        (
            "scheduler ping-pong round trip, corosensei, FP",
            ping_pong(vt, "corosensei", true, sched),
        ),
        (
            "spawn + finish, context",
            spawn_finish(vt, "context", sched),
        ),
        (
            "spawn + finish, corosensei",
            spawn_finish(vt, "corosensei", sched),
        ),
    ];
    let base = rows[2].1;
    println!("| case | ns/op | vs raw corosensei |");
    println!("|---|---:|---:|");
    for (name, ns) in &rows {
        println!("| {name} | {ns:.1} | {:.2}x |", ns / base);
    }
    let (ctx_fp, coro_fp) = (rows[5].1, rows[7].1);
    let winner = if coro_fp <= ctx_fp {
        "corosensei"
    } else {
        "context"
    };
    println!();
    println!(
        "FP ping-pong: context {ctx_fp:.1} ns, corosensei {coro_fp:.1} ns ({:.2}x): default engine \
         should be {winner}",
        ctx_fp.max(coro_fp) / ctx_fp.min(coro_fp)
    );
}
