//! `million`: scale. Each measurement runs in a child process (this binary
//! again, `--profile million ...`), so its peak RSS is its own.
//!
//! - *suspended*: N coroutines spawned at once, each in `delay(3000)`, then
//!   all joined: the time to spawn them, when the last one began its delay
//!   (its first run, which touches its stack's first page), the teardown
//!   after the last join, the whole run's time, and the process's peak RSS
//!   (`ru_maxrss`), on default settings (mio).
//! - *touch*: the machine's floor for *suspended*, no runtime: one thread
//!   touches N fresh pages laid out as this runtime's default stacks are
//!   (a page every [`STACK_STRIDE`] bytes, each slot's top), sleeps the same
//!   delay and unmaps them, with the same phases. A stackful coroutine's
//!   first run must fault in at least its stack's top page, so this is the
//!   part of a run the runtime cannot remove; on a VM it moves with the
//!   host's paging, which sets what fresh memory costs.
//! - *flat*: with L coroutines parked (each waiting on a channel that never
//!   sends), the cost of spawn+join and of a switch round trip, for L = 0,
//!   1k, 100k and 1M: a stackful runtime's per-operation cost must not grow
//!   with the number of coroutines alive.

use std::process::Command;
use std::time::{Duration, Instant};

use async_std_api::sync::channel;
use async_std_api::{delay, spawn, suspend, Builder};

/// The result of one child run, as it prints it: `key=value` words.
fn child(args: &[&str]) -> Vec<(String, f64)> {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .arg("--profile")
        .arg("million")
        .args(args)
        .output()
        .expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    // Every run's phases in the log, so a slow one shows where it was slow
    // (the report keeps only the median, fastest and slowest).
    eprintln!("bench: million {}: {}", args.join(" "), text.trim());
    assert!(
        out.status.success(),
        "million {args:?} failed: {}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    text.split_whitespace()
        .filter_map(|w| {
            let (k, v) = w.split_once('=')?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect()
}

fn get(r: &[(String, f64)], key: &str) -> f64 {
    r.iter()
        .find(|(k, _)| k == key)
        .map_or(f64::NAN, |(_, v)| *v)
}

/// What the suspended run measured.
pub(crate) struct Suspended {
    pub(crate) spawn_s: f64,
    /// When the last sleeper began its delay: spawning plus every first
    /// run (each touches its stack's first page).
    pub(crate) started_s: f64,
    /// When the last join returned, before the runtime's teardown.
    pub(crate) joined_s: f64,
    pub(crate) total_s: f64,
    pub(crate) peak_rss_mib: f64,
}

/// The distance between two stacks' top pages under the default options:
/// a 256 KiB stack and its guard page.
const STACK_STRIDE: usize = (256 + 4) * 1024;

/// What a *suspended* child printed.
fn suspended_of(r: &[(String, f64)]) -> Suspended {
    Suspended {
        spawn_s: get(r, "spawn_s"),
        started_s: get(r, "started_s"),
        joined_s: get(r, "joined_s"),
        total_s: get(r, "total_s"),
        peak_rss_mib: get(r, "peak_rss_kib") / 1024.0,
    }
}

/// The floor under [`suspended`]: `n` fresh pages touched by one thread,
/// [`STACK_STRIDE`] apart, then `delay_ms` asleep (see the module doc).
pub(crate) fn touched(n: u64, delay_ms: u64) -> Suspended {
    suspended_of(&child(&["touch", &n.to_string(), &delay_ms.to_string()]))
}

/// N coroutines in `delay(delay_ms)` at once, on `reactor`, shared out over
/// `loops` thread-per-core loops.
pub(crate) fn suspended(n: u64, delay_ms: u64, reactor: &str, loops: usize) -> Suspended {
    let r = child(&[
        "suspended",
        &n.to_string(),
        &delay_ms.to_string(),
        reactor,
        &loops.to_string(),
    ]);
    suspended_of(&r)
}

/// Nanoseconds per spawn+join and per switch round trip with `live`
/// coroutines parked.
pub(crate) fn flat(live: u64) -> (f64, f64) {
    let r = child(&["flat", &live.to_string()]);
    (get(&r, "spawn_ns"), get(&r, "switch_ns"))
}

/// One loop's part of *suspended*: `n` sleepers spawned at once, then
/// joined; when spawning ended, when the last sleeper began its delay, and
/// when the last join returned, each since `start`.
fn sleepers(n: u64, delay_ms: u64, start: Instant) -> (Duration, Duration, Duration) {
    // When the last sleeper began its delay: the end of the phase that
    // touches each stack's first page.
    let last_start = std::rc::Rc::new(std::cell::Cell::new(start));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let last_start = last_start.clone();
            spawn(move || {
                last_start.set(Instant::now());
                delay(delay_ms).expect("not cancelled")
            })
        })
        .collect();
    let spawned = start.elapsed();
    for h in handles {
        h.join().expect("sleeper");
    }
    (spawned, last_start.get() - start, start.elapsed())
}

/// The child's side of [`touched`]: `n` pages, `delay_ms`.
fn touch(n: usize, delay_ms: u64) {
    let start = Instant::now();
    let len = n * STACK_STRIDE;
    // SAFETY: a fresh private anonymous mapping; nothing else refers to
    // its range. MAP_NORESERVE: like the runtime's slabs, address space
    // only until touched.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    assert!(
        base != libc::MAP_FAILED,
        "mmap of {len} bytes: {}",
        std::io::Error::last_os_error()
    );
    let base = base.cast::<u8>();
    for i in 0..n {
        // SAFETY: `(i + 1) * STACK_STRIDE - 64` is below `len`, so the byte
        // is inside the mapping, which is readable and writable.
        unsafe { base.add((i + 1) * STACK_STRIDE - 64).write_volatile(1) };
    }
    let started = start.elapsed();
    std::thread::sleep(Duration::from_millis(delay_ms));
    let joined = start.elapsed();
    // SAFETY: `base`/`len` is the mapping made above, unmapped once; nothing
    // refers into it any more.
    unsafe { libc::munmap(base.cast(), len) };
    println!(
        "spawn_s=0 started_s={:.3} joined_s={:.3} total_s={:.3} peak_rss_kib={}",
        started.as_secs_f64(),
        joined.as_secs_f64(),
        start.elapsed().as_secs_f64(),
        peak_rss_kib()
    );
}

/// The child's side: `suspended <n> <delay_ms> <reactor> [loops]`,
/// `touch <n> <delay_ms>` or `flat <live>`.
pub(crate) fn profile(args: &[String]) {
    let usage = "usage: bench --profile million <suspended <n> <delay_ms> <reactor> [loops] \
                 | touch <n> <delay_ms> | flat <live>>";
    match args {
        [mode, n, delay_ms] if mode == "touch" => {
            touch(n.parse().expect(usage), delay_ms.parse().expect(usage));
        }
        [mode, n, delay_ms, reactor, rest @ ..] if mode == "suspended" && rest.len() <= 1 => {
            let n: u64 = n.parse().expect(usage);
            let delay_ms: u64 = delay_ms.parse().expect(usage);
            let loops: usize = rest.first().map_or(1, |l| l.parse().expect(usage));
            let start = Instant::now();
            let builder = Builder::new().reactor(reactor);
            let runs = if loops == 1 {
                vec![builder
                    .run(move || sleepers(n, delay_ms, start))
                    .expect("runtime")]
            } else {
                // Thread-per-core: each loop spawns and joins its share,
                // the first `n % loops` loops one more.
                let loops_n = loops as u64;
                builder
                    .threads(loops)
                    .run_per_core(move |id| {
                        let share = n / loops_n + u64::from((id.index() as u64) < n % loops_n);
                        sleepers(share, delay_ms, start)
                    })
                    .expect("runtime")
            };
            let total = start.elapsed();
            let latest = |f: fn(&(Duration, Duration, Duration)) -> Duration| {
                runs.iter().map(f).max().expect("one loop at least")
            };
            println!(
                "spawn_s={:.3} started_s={:.3} joined_s={:.3} total_s={:.3} peak_rss_kib={}",
                latest(|r| r.0).as_secs_f64(),
                latest(|r| r.1).as_secs_f64(),
                latest(|r| r.2).as_secs_f64(),
                total.as_secs_f64(),
                peak_rss_kib()
            );
        }
        [mode, live] if mode == "flat" => {
            let live: u64 = live.parse().expect(usage);
            let (spawn_ns, switch_ns) = Builder::new()
                .run(move || {
                    let (tx, rx) = channel::<()>(1);
                    let rx = std::rc::Rc::new(rx);
                    let parked: Vec<_> = (0..live)
                        .map(|_| {
                            let rx = rx.clone();
                            spawn(move || {
                                let _ = rx.recv();
                            })
                        })
                        .collect();
                    // Let every parked coroutine reach its wait.
                    suspend().expect("not cancelled");
                    let spawn_ns = per_op(200_000, || {
                        spawn(|| ()).join().expect("empty coroutine");
                    });
                    let iters = 1_000_000;
                    let other = spawn(move || {
                        for _ in 0..iters + 1 {
                            suspend().expect("not cancelled");
                        }
                    });
                    suspend().expect("not cancelled");
                    let switch_ns = per_op(iters, || suspend().expect("not cancelled"));
                    other.join().expect("yielder");
                    drop(tx);
                    for h in parked {
                        h.join().expect("parked");
                    }
                    (spawn_ns, switch_ns)
                })
                .expect("runtime");
            println!("spawn_ns={spawn_ns:.1} switch_ns={switch_ns:.1}");
        }
        _ => panic!("{usage}"),
    }
}

fn per_op(iters: u64, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    let d: Duration = start.elapsed();
    d.as_nanos() as f64 / iters as f64
}

/// The process's peak resident set, KiB (`getrusage`).
fn peak_rss_kib() -> i64 {
    // SAFETY: `getrusage` writes only into the zeroed struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_maxrss
}
