//! The benchmark harness: this runtime side by side with its peers, in one
//! run, reported as ratios. Run it with `cargo xtask bench` (release build,
//! feature `peers`); `cargo xtask bench -- --list` names the scenarios and
//! `cargo xtask bench -- switch spawn` runs a subset.
//!
//! Scenarios (each defined where it is measured):
//! - `switch`: a suspend/resume round trip between two coroutines, also with
//!   one coroutine that has done floating-point work (its MXCSR sticky flags
//!   then differ from the other's, which costs the `context` engine an
//!   `ldmxcsr` stall on every switch);
//! - `spawn`: spawning an empty coroutine and joining it;
//! - `echo`: a TCP echo server over loopback under load from 100
//!   connections with small messages (requests per second; see `echo.rs`);
//! - `echo2`: the same echo against servers on several threads: this
//!   runtime with 1 and 2 loops (`run_per_core`), tokio's multi-thread
//!   runtime with 2 workers, monoio with 2 threads (see `echo_multi.rs`);
//! - `timers`: the lateness of 10,000 coroutines each sleeping 200 ms, per
//!   reactor (see `timers.rs`);
//! - `fairness`: a 2-byte echo every 20 ms on one connection while another
//!   streams at full speed: the small echo's round trip (see `fairness.rs`);
//! - `sync`: channel ping-pong and throughput, an uncontended and a
//!   contended mutex, a oneshot round trip (see `sync.rs`);
//! - `udp`: a 64-byte UDP ping-pong between two coroutines, per reactor
//!   (see `udp.rs`);
//! - `blocking`: a `spawn_blocking` round trip, per reactor (see `udp.rs`);
//! - `fiber`: a fiber resume/suspend round trip against a raw `corosensei`
//!   switch (see `fiber.rs`);
//! - `process`: spawning a child and waiting for it, and collecting a
//!   child's output, against std and tokio::process (see `process.rs`);
//! - `fs`: a 1 GiB file read in 64 KiB reads, and 4 KiB random `read_at`s,
//!   against std on a thread and tokio (see `fs.rs`);
//! - `http`: HTTP/1.1 plaintext from 100 keep-alive connections, one
//!   request in flight each and 16 pipelined: the `http_hello` example on
//!   1 and 2 loops, mio and io_uring, against may_minihttp and hyper on
//!   tokio (see `http.rs`);
//! - `million`: a million coroutines suspended in `delay(3000)` at once
//!   (time and peak RSS), and spawn+join and switch costs with 0 to 1M
//!   coroutines alive (see `million.rs`).
//!
//! `--json <file>` also writes the results as JSON, from which `cargo xtask
//! bench` makes the report in `docs/bench/`.
//!
//! What is excluded: runtime start-up and teardown, stack allocation before
//! the timed loop (the first iterations warm the stack pool), and printing.
//! Each measurement is the median of several repetitions.

mod callgrind;
mod echo;
mod echo_multi;
mod fairness;
mod fiber;
mod fs;
mod http;
mod million;
mod ours;
mod peers;
mod process;
mod report;
mod sync;
mod timers;
mod udp;

use report::{Report, Unit};

const SCENARIOS: &[(&str, &str)] = &[
    (
        "switch",
        "suspend/resume round trip between two coroutines (ns per round trip)",
    ),
    (
        "spawn",
        "spawn an empty coroutine and join it (ns per spawn+join)",
    ),
    (
        "echo",
        "TCP echo over loopback, 100 connections, 64-byte messages (server CPU per request, requests per second)",
    ),
    (
        "instructions",
        "TCP echo's user-space instructions per request in the server process, under callgrind (needs valgrind; about ten seconds per server)",
    ),
    (
        "hooks",
        "the C library hooks: echo through std::net in coroutines against this crate's TcpStream (instructions per request, callgrind), and a hooked call passed through outside a coroutine against the bare call",
    ),
    (
        "echo2",
        "TCP echo, 1 and 2 loops against tokio multi-thread (2 workers) and monoio (2 threads), nothing pinned (server and client CPU per request, requests per second)",
    ),
    (
        "timers",
        "lateness of 10,000 coroutines each sleeping 200 ms (µs: median, p99, max)",
    ),
    (
        "sync",
        "channels, mutexes and a oneshot against tokio::sync, may and crossbeam (ns per operation)",
    ),
    (
        "fairness",
        "2-byte echo every 20 ms beside a connection streaming at full speed (µs: median, p99, max)",
    ),
    (
        "udp",
        "64-byte UDP ping-pong between two coroutines over loopback (ns per round trip)",
    ),
    (
        "blocking",
        "spawn_blocking(|| 1) and wait for it, one at a time (ns per round trip)",
    ),
    (
        "fiber",
        "Fiber resume + Fiber::suspend round trip against raw corosensei (ns per round trip)",
    ),
    (
        "process",
        "spawn `true` and wait for it; `echo hi` with its output collected (ns per child; see `process.rs`)",
    ),
    (
        "fs",
        "1 GiB file in 64 KiB reads, 4 KiB random read_at, warm cache, against std and tokio::fs (ns per read)",
    ),
    (
        "million",
        "1M coroutines in delay(3000) at once (s, peak RSS); spawn+join and switch with 0..1M alive (ns)",
    ),
    (
        "http",
        "HTTP/1.1 plaintext, 100 keep-alive connections, 1 and 16 pipelined requests in flight each, against may_minihttp and hyper (CPU per request, requests per second)",
    ),
];

/// How to read some scenarios' numbers: shown under their tables in the
/// report (`docs/bench/`).
const NOTES: &[(&str, &str)] = &[
    (
        "switch",
        "This runtime's default and context-engine rows and may's take turns at the end of the \
         run (five rounds of a million round trips, each round starting with the next row; \
         each row is its median round). The other rows are measured alone: this runtime's \
         at the start of the run, the peers' at the end. Measured at opposite ends of a run, \
         the compared rows had moved apart by up to 40% between runs.",
    ),
    (
        "echo2",
        "Nothing is pinned and the load generator shares the two cores with every server thread, \
         so requests per second are bounded by the machine, not by the loop count; server CPU \
         per request sums every server thread's schedstat, and 1e9 / that figure is what the \
         servers would sustain per core with the client's time set aside. Reports before \
         2026-11-29 09:00 ran these rows on one CPU: the bench's main thread stayed pinned \
         after the echo rows and every server and client thread inherited its mask.",
    ),
    (
        "http plaintext",
        "Server CPU per request sums every thread of the process but the load generator's \
         (schedstat), so a server's timer, I/O and worker threads all count; nothing is pinned, \
         and the two cores bound requests per second. Each connection has one request in \
         flight. The servers take turns: three rounds of one 2 s window each on new \
         connections (each round starting with the next server), and each row is its \
         server's window with the median server CPU per request; until 2026-11-29 12:00 each \
         server's three windows ran back to back, one server after another. This runtime's \
         rows run the `http_hello` example's own code \
         (async-std-api/examples/http_hello.rs). Reports before 2026-11-29 09:00 ran these \
         rows on one CPU (the bench's main thread stayed pinned after the echo rows, and \
         every thread inherited its mask).",
    ),
    (
        "http plaintext, 16 pipelined",
        "As above, with 16 requests in flight per connection (TechEmpower's plaintext \
         pipelining): the requests a read completes are sent again in one write, and every \
         server answers what one read brought in one write (hyper with pipeline_flush). \
         Against may_minihttp this runtime is level within the noise: in turns, across seven \
         runs on 2026-11-29, may_minihttp's server CPU per request was 0.90x to 1.29x ours \
         unpipelined and 0.99x to 1.28x with 16 pipelined. The kernel's loopback work is \
         83% of both servers' samples (perf); this runtime's loop makes one recvfrom and one \
         sendto per request where may_minihttp's makes two recvfrom (the second EAGAIN), but \
         it waits in epoll_wait a little more often (0.26 against 0.19 waits per sendto), \
         each wait finding fewer ready connections.",
    ),
    (
        "echo",
        "Requests per second are bounded by the kernel's loopback work and the load generator, \
         which share the two cores with the server: the server thread's CPU time per request \
         (schedstat) is the fairer comparison. The servers take turns, one 3 s window each on \
         new connections, for seven rounds (each starting with the next server), and each row \
         is its server's window with the \
         median server CPU per request: one window moves by 15% from run to run on the \
         development VM and the machine drifts over minutes, so in turns a slow spell falls \
         on every row alike (five rounds until 2026-11-29 12:00: the io_uring row's ratio to \
         mio's moved from 0.85x to 1.07x between runs). Both reactors make the same system \
         calls per request here (a recvfrom and a sendto; the wait, epoll_wait or \
         io_uring_enter, once per many requests), and the kernel's loopback work is about \
         nine tenths of each row.",
    ),
    (
        "echo instructions",
        "Counted by callgrind in all the threads of the server's process, each server in a \
         process of its own (`bench --profile serve`) driven from the bench process, between a \
         1,000- and a 4,000-request run (the median of three pairs), so setup and the kernel's \
         work are left out. One connection, and the client sends each request 500 µs after the \
         last echo came: every server is back in its wait by then, so each makes its whole path \
         per request (wake-up, read, write, wait again), the same every run. With 100 \
         connections and a client that replies at once, a server whose read tries the socket \
         first (may, tokio) finds the next request already there more or less often as \
         valgrind's pace goes: may's count moved from 887 to 400 between two runs. The first \
         two rows are the same reactor statically linked and loaded as a plugin: their ratio is \
         what dynamic loading costs. On the mio reactor a stream read waits on the socket's \
         readiness and reads in the host (D-43); so does the io_uring reactor by default \
         (`uring.inline_streams`). may's server is the same blocking-style echo on `may::net` \
         with one worker.",
    ),
    (
        "hooks: echo instructions",
        "Counted by callgrind as in the echo instructions scenario (one connection, each \
         request sent when the server is back in its wait). The std server is `async-std-api`'s \
         `std_echo` example (std::net::TcpListener and TcpStream, read and write_all, a \
         coroutine per connection) with hooks on; the baselines are the bench's own echo server \
         on this crate's net::TcpStream. The first wait on a socket learns that it is a blocking \
         TCP socket and makes a readiness watch kept per descriptor (core::fd_watches); from \
         then on a transfer is the non-blocking call and, on EAGAIN, a wait on that watch \
         (IO6). The difference: every read tries the socket before it waits (the C library's \
         call would not block if data came, HK6, while this crate's stream waits for the edge \
         after a short read), the hooks' own checks, and the reactor's epoll_wait passing \
         through the hooked one.",
    ),
    (
        "hooks: a call passed through",
        "read(-1, buf, 1) fails at once with EBADF: the system call's cost with the least work \
         in it. The hooked row calls the program's own read (the hook, outside any coroutine, \
         so it passes the call on); the bare row calls the C library's read found with \
         dlsym(RTLD_NEXT). Times are the best of five alternated rounds of 2,000,000 calls; \
         instructions are callgrind's, user space only.",
    ),
    (
        "timers",
        "Every coroutine arms its timer as it starts, so their deadlines spread over the start \
         burst; the tail is how far the wake-up burst (timer callback, switch, finish, join) \
         falls behind that spread.",
    ),
    (
        "fs sequential read",
        "On mio, a read first takes what the page cache holds on the loop thread (preadv2 with \
         RWF_NOWAIT, up to 256 KiB) and goes to the blocking pool, with its two cross-thread \
         wake-ups, only when it would wait for the disk (tokio::fs always pays them); io_uring \
         reads the file in the ring. The file stays cached (mapped by the bench, see fs random \
         read_at): every mio read is a page-cache hit. \
         The rows take turns, one run each (the whole file) for five rounds, each starting with \
         the next row, and each row is its median run, so a slow spell of the VM falls on \
         every row alike.",
    ),
    (
        "fs random read_at",
        "4 KiB read_at at pseudo-random 4 KiB-aligned offsets of the same warm file. On both \
         reactors a page-cache hit is a preadv2 with RWF_NOWAIT on the loop thread; a miss goes \
         to the blocking pool on mio and to the ring on io_uring. tokio::fs has no read_at, so \
         its rows are spawn_blocking of std's and a seek plus read_exact on tokio::fs::File. \
         The rows take turns, one run of 100,000 reads each for five rounds, each starting \
         with the next row, and each row is its median run. The bench keeps the file mapped \
         (MAP_SHARED | MAP_POPULATE) while it runs: this VM runs DAMON with a pageout scheme \
         that drops cold page cache that no process maps, GBs free or not, and until \
         2026-11-29 12:00 the file was only read once to warm it, so some reads missed (0.2% \
         under strace in one session; ours 1.43x std's in a session whose page cache held \
         under 200 MB): each miss a pool round trip on mio where std's pread waits for the \
         disk inline.",
    ),
    (
        "spawn_blocking",
        "A cross-thread wake-up costs about 20 µs on this VM when the woken vCPU is idle, and a \
         few µs while another thread keeps it busy (as lingering peer threads do late in a full \
         run): these rows come from `cargo xtask bench -- blocking fs`, run alone.",
    ),
    (
        "udp ping-pong",
        "Each round trip is four system calls and two loopback deliveries: the kernel \
         dominates.",
    ),
    (
        "process spawn+wait",
        "fork/exec and the child's own start dominate; the runtimes differ only in how the \
         exit is watched.",
    ),
    (
        "1M coroutines suspended in delay(3000)",
        "Targets: peak RSS under 4.6 GiB (the stackful floor is one touched 4 KiB page per \
         coroutine plus its records) and the whole run under 8 s, of which 3 s is the delay. \
         \"first runs done\" is when the last sleeper began its delay: the whole run is that, \
         the 3 s delay, and the teardown. Most of the first runs' time is the kernel's: each \
         stack's guard page and the fault of its top page, where the fiber record and the \
         first frames go (perf, one loop without help: the fault path 63%, guard installs \
         19%), and that cost moves with the host: the machine's row is that floor measured \
         in the same run, one thread touching a million stacks' top pages and nothing else \
         (2.1 to 4.8 s in different sessions on the development VM, whose host backs fresh \
         guest memory on first touch and takes it back when it is freed). The first run after \
         the machine has been idle or busy with other work pays the most: after 45 s idle, \
         the machine's floor took 17.6 s as the first run and 7.6 s as the second; this \
         runtime's mio row, 15.3 s first and 10.7 s second (2026-11-29). So the slowest \
         column, often the first run of a round, is mostly the host. Since 2026-11-29 13:00 \
         the scenario starts with one unmeasured run of the floor (its time is in the \
         bench's log): before, that first-run cost always fell on round 0's first row, this \
         runtime's mio row (13.7, 13.8, 10.9 and 15.3 s in four whole runs that day, every \
         later run of any row 5.8-10.5 s). \
         On one loop a helper thread installs the next slabs' guards and populates their top \
         pages on the other core while the loop runs coroutines (async-scheduler's \
         stack_prefault=auto, the default, which starts it only if the process has fewer loops \
         than CPUs; alternated in one session: 6.1-8.2 s with it, 8.2-8.7 s without). \
         Two loops (thread-per-core, each spawning and joining 500k, pinned) fault on both \
         cores and start no helper. Earlier fixes: regions that double instead of an mmap \
         per 64 stacks (each mmap write-locks the memory map and stalls the other loop's \
         faults), no merge with a malloc heap (MAP_STACK), no heap record per fiber. Before \
         this run the bench's main thread stayed pinned to one CPU after the echo rows, and \
         this child inherited it: earlier reports' two-loop rows ran both loops on one core. \
         Each row is the median of three runs (by whole run), each a child process, so its \
         peak RSS is its own; the fastest and slowest whole runs are beside it. The rows take \
         turns, one run each per round (since 2026-11-29 12:00; before, each row's three \
         runs came back to back).",
    ),
    (
        "spawn+join and switch with N coroutines alive",
        "The N coroutines wait on a channel while the operations are measured: a flat row \
         means the cost does not grow with the number alive.",
    ),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--profile") {
        profile(&args[1..]);
        return;
    }
    if args.iter().any(|a| a == "--list") {
        for (name, what) in SCENARIOS {
            println!("{name:8} {what}");
        }
        return;
    }
    let mut args = args;
    let json = args.iter().position(|a| a == "--json").map(|i| {
        let path = args.get(i + 1).cloned().expect("--json <file>");
        args.drain(i..i + 2);
        path
    });
    let wanted = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    let mut report = Report::new();
    if wanted("switch") {
        switch_ours(&mut report);
    }
    if wanted("spawn") {
        spawn_ours(&mut report);
    }
    if wanted("sync") {
        sync_ours(&mut report);
    }
    // The I/O scenarios pin their threads and run before may and tokio's
    // other measurements leave threads behind.
    if wanted("echo") {
        echo_all(&mut report);
    }
    if wanted("instructions") {
        instructions_all(&mut report);
    }
    if wanted("hooks") {
        hooks_all(&mut report);
    }
    if wanted("echo2") {
        echo_multi_all(&mut report);
    }
    if wanted("timers") {
        timers_all(&mut report);
    }
    if wanted("fairness") {
        fairness_all(&mut report);
    }
    if wanted("udp") {
        udp_all(&mut report);
    }
    if wanted("blocking") {
        blocking_all(&mut report);
    }
    if wanted("fiber") {
        report.baseline(
            "fiber round trip",
            "this runtime, fiber::Fiber",
            fiber::ours(FIBER_ITERS),
        );
        report.add(
            "fiber round trip",
            "raw corosensei resume + suspend",
            fiber::raw_corosensei(FIBER_ITERS),
        );
    }
    if wanted("process") {
        process::all(&mut report);
    }
    if wanted("fs") {
        fs_all(&mut report);
    }
    if wanted("million") {
        million_all(&mut report);
    }
    // may_minihttp and tokio leave their threads behind: after this
    // runtime's other measurements.
    if wanted("http") {
        http_all(&mut report);
    }
    if wanted("switch") {
        switch_peers(&mut report);
    }
    if wanted("spawn") {
        spawn_peers(&mut report);
    }
    if wanted("sync") {
        sync_peers(&mut report);
    }
    report.print();
    for (scenario, text) in NOTES {
        report.note(scenario, text);
    }
    if let Some(path) = json {
        report
            .write_json(std::path::Path::new(&path))
            .unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
}

/// The `million` scenario: each measurement in a child process.
fn million_all(report: &mut Report) {
    let s = "1M coroutines suspended in delay(3000)";
    report.scenario(
        s,
        Unit::Seconds,
        &[
            "whole run s",
            "peak RSS MiB",
            "spawning s",
            "first runs done s",
            "teardown s",
            "fastest whole run s",
            "slowest whole run s",
        ],
    );
    // `None`: the machine's floor, no runtime (million.rs, *touch*).
    let configs = [
        Some(("mio", 1)),
        Some(("uring", 1)),
        Some(("mio", 2)),
        Some(("uring", 2)),
        None,
    ];
    // Runs vary with the host's paging: three rounds in turns, each config
    // once a round (each round starting with the next), so a slow spell
    // falls on every row alike; each row is its median run, and the spread
    // beside it.
    // One unmeasured run of the floor first: the first process to take
    // 4 GiB after the machine was idle or busy with other work pays the
    // host for backing fresh guest memory, up to twice a later run (see
    // the note), and without this it was always round 0's first row.
    let warm = million::touched(1_000_000, 0);
    eprintln!(
        "bench: million warm-up (not measured): the floor touched 1M pages in {:.2} s",
        warm.started_s
    );
    let runs = report::take_turns(3, configs.len(), |i| match configs[i] {
        Some((reactor, loops)) => million::suspended(1_000_000, 3000, reactor, loops),
        None => million::touched(1_000_000, 3000),
    });
    for (config, mut runs) in configs.into_iter().zip(runs) {
        runs.sort_by(|a, b| a.total_s.total_cmp(&b.total_s));
        let (fastest, slowest) = (runs[0].total_s, runs[2].total_s);
        let r = runs.swap_remove(1);
        let name = match config {
            Some((reactor, 1)) => format!("this runtime, {reactor}"),
            Some((reactor, loops)) => {
                format!("this runtime, {reactor}, {loops} loops (thread-per-core, 500k each)")
            }
            None => "the machine: one thread touches 1M fresh pages 260 KiB apart, \
                     sleeps 3 s (no runtime)"
                .to_owned(),
        };
        report.add_values(
            s,
            &name,
            vec![
                r.total_s,
                r.peak_rss_mib,
                r.spawn_s,
                r.started_s,
                r.total_s - r.joined_s,
                fastest,
                slowest,
            ],
            config == Some(("mio", 1)),
        );
    }
    let s = "spawn+join and switch with N coroutines alive";
    report.scenario(s, Unit::NsPerOp, &["spawn+join ns", "switch ns"]);
    for live in [0u64, 1_000, 100_000, 1_000_000] {
        let (spawn, switch) = million::flat(live);
        report.add_values(s, &format!("{live} alive"), vec![spawn, switch], live == 0);
    }
}

/// `--profile <switch|switch-fp|spawn> <default|context|corosensei> <iters>`: one run
/// of one of this runtime's scenarios and nothing else, for instruction
/// counts (`valgrind --tool=callgrind`): run it with two iteration counts and
/// divide the difference in instructions by the difference in iterations.
fn profile(args: &[String]) {
    if args.first().is_some_and(|a| a == "echo") {
        return profile_echo(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "wait") {
        return profile_wait(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "load") {
        return profile_load(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "serve") {
        return profile_serve(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "million") {
        return million::profile(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "serve-http") {
        return profile_serve_http(&args[1..]);
    }
    let usage =
        "usage: bench --profile <switch|switch-fp|spawn> <default|context|corosensei> <iters>";
    let [scenario, engine, iters] = args else {
        panic!("{usage}");
    };
    let engine = (engine != "default").then_some(engine.as_str());
    let iters: u64 = iters.parse().expect(usage);
    let ns = match scenario.as_str() {
        "switch" => ours::switch_once(engine, false, iters),
        "switch-fp" => ours::switch_once(engine, true, iters),
        "spawn" => ours::spawn_join_once(engine, iters),
        _ => panic!("{usage}"),
    };
    println!(
        "{scenario} {iters}: {:.1} ns/op",
        ns.as_nanos() as f64 / iters as f64
    );
}

const SWITCH_ITERS: u64 = 1_000_000;

/// Rounds of the switch rows that take turns ([`switch_peers`]).
const SWITCH_REPS: usize = 5;
const SPAWN_ITERS: u64 = 200_000;

// Every measurement of this runtime runs before any peer's: may keeps its
// worker threads (and tokio its blocking pool) alive after its measurement,
// and on a small machine they would steal time from whatever runs next.

/// This runtime's switch rows that no target compares, measured alone at
/// the start of the run; the compared ones take turns with may's at the
/// end ([`switch_peers`]).
fn switch_ours(report: &mut Report) {
    let s = "switch";
    report.add(
        s,
        "this runtime, context engine, one coroutine did FP work",
        ours::switch_round_trip(Some("context"), true, SWITCH_ITERS),
    );
    report.add(
        s,
        "this runtime, corosensei engine",
        ours::switch_round_trip(Some("corosensei"), false, SWITCH_ITERS),
    );
    report.add(
        s,
        "this runtime, corosensei engine, one coroutine did FP work",
        ours::switch_round_trip(Some("corosensei"), true, SWITCH_ITERS),
    );
}

fn switch_peers(report: &mut Report) {
    let s = "switch";
    // The rows the targets compare take turns (report::in_turns): measured
    // at opposite ends of a run, this runtime's first and may's last, one
    // row moved 45-63 ns between runs while the other held.
    peers::may_setup();
    let rows: [(&str, report::Run<'_>); 3] = [
        (
            "this runtime, default engine",
            Box::new(|| ours::switch_once(None, false, SWITCH_ITERS)),
        ),
        (
            "this runtime, context engine",
            Box::new(|| ours::switch_once(Some("context"), false, SWITCH_ITERS)),
        ),
        (
            "may (1 worker), two coroutines yield_now",
            Box::new(|| peers::may_yield_once(SWITCH_ITERS)),
        ),
    ];
    let measured = report::in_turns(SWITCH_REPS, SWITCH_ITERS, rows.into());
    for (i, (name, ns)) in measured.into_iter().enumerate() {
        report.add_values(s, name, vec![ns.0], i == 0);
    }
    report.add(
        s,
        "raw context (jump_fcontext) round trip",
        peers::context_round_trip(false, SWITCH_ITERS),
    );
    report.add(
        s,
        "raw context, coroutine did FP work",
        peers::context_round_trip(true, SWITCH_ITERS),
    );
    report.add(
        s,
        "raw corosensei round trip",
        peers::corosensei_round_trip(false, SWITCH_ITERS),
    );
    report.add(
        s,
        "raw corosensei, coroutine did FP work",
        peers::corosensei_round_trip(true, SWITCH_ITERS),
    );
    report.add(
        s,
        "tokio current_thread with its drivers (enable_all), two tasks yield_now",
        peers::tokio_yield_round_trip(SWITCH_ITERS, true),
    );
    report.add(
        s,
        "tokio current_thread without drivers, two tasks yield_now",
        peers::tokio_yield_round_trip(SWITCH_ITERS, false),
    );
}

fn spawn_ours(report: &mut Report) {
    let s = "spawn";
    report.baseline(
        s,
        "this runtime, default engine",
        ours::spawn_join(None, SPAWN_ITERS),
    );
    for engine in ["context", "corosensei"] {
        report.add(
            s,
            &format!("this runtime, {engine} engine"),
            ours::spawn_join(Some(engine), SPAWN_ITERS),
        );
    }
}

fn spawn_peers(report: &mut Report) {
    let s = "spawn";
    report.add(
        s,
        "tokio current_thread with its drivers (enable_all), spawn + await",
        peers::tokio_spawn_join(SPAWN_ITERS, true),
    );
    report.add(
        s,
        "tokio current_thread without drivers, spawn + await",
        peers::tokio_spawn_join(SPAWN_ITERS, false),
    );
    report.add(
        s,
        "may (1 worker), go! + join",
        peers::may_spawn_join(SPAWN_ITERS),
    );
}

fn echo_all(report: &mut Report) {
    let s = "echo";
    report.scenario(s, Unit::NsPerOp, &["server CPU ns/req", "requests/s"]);
    let servers: [(&str, echo::Server, bool); 4] = [
        (
            "this runtime, mio reactor (a coroutine per connection)",
            Box::new(echo::ours("mio")),
            true,
        ),
        (
            "this runtime, io_uring reactor",
            Box::new(echo::ours("uring")),
            false,
        ),
        (
            "tokio current_thread, enable_all (a task per connection)",
            Box::new(echo::tokio_server),
            false,
        ),
        (
            "monoio, io_uring driver (a task per connection)",
            Box::new(echo::monoio_server),
            false,
        ),
    ];
    let (rows, serves): (Vec<_>, Vec<_>) = servers
        .into_iter()
        .map(|(name, serve, baseline)| ((name, baseline), serve))
        .unzip();
    for ((name, baseline), r) in rows.into_iter().zip(echo::measure_in_turns(serves)) {
        report.add_values(s, name, vec![r.server_ns_per_req, r.rps], baseline);
    }
}

fn instructions_all(report: &mut Report) {
    let s = "echo instructions";
    if !callgrind::available() {
        eprintln!("bench: {s}: skipped: valgrind is not installed");
        return;
    }
    report.scenario(s, Unit::Seconds, &["instructions/request"]);
    let servers = [
        (
            "this runtime, mio reactor statically linked (the default)",
            "embedded",
            true,
        ),
        ("this runtime, mio reactor loaded as a plugin", "mio", false),
        ("this runtime, io_uring reactor", "uring", false),
        ("tokio current_thread, enable_all", "tokio", false),
        ("monoio (io_uring)", "monoio", false),
        ("may (1 worker), a coroutine per connection", "may", false),
    ];
    for (name, server, baseline) in servers {
        match callgrind::per_request(server) {
            Ok(n) => report.add_values(s, name, vec![n], baseline),
            Err(e) => eprintln!("bench: {s}: {name}: skipped: {e}"),
        }
    }
}

/// The `hooks` scenario: `async-std-api`'s `std_echo` example (built with
/// the hooks by `cargo xtask bench`) next to this binary.
fn hooks_all(report: &mut Report) {
    let exe = std::env::current_exe().expect("this binary's path");
    let std_echo = exe.with_file_name("examples").join("std_echo");
    if !std_echo.exists() {
        eprintln!(
            "bench: hooks: skipped: {} is missing (cargo xtask bench builds it)",
            std_echo.display()
        );
        return;
    }
    let s = "hooks: a call passed through";
    report.scenario(s, Unit::NsPerOp, &["ns/call", "instructions/call"]);
    let out = std::process::Command::new(&std_echo)
        .args(["--calls", "2000000"])
        .output()
        .expect("run std_echo --calls");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| -> f64 {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    let instr = |mode: &str| {
        if callgrind::available() {
            callgrind::per_call(&std_echo, &["--calls-only", mode], 100_000).unwrap_or(f64::NAN)
        } else {
            f64::NAN
        }
    };
    report.add_values(
        s,
        "read(-1) through the hook, outside a coroutine",
        vec![field("hooked_ns="), instr("hooked")],
        false,
    );
    report.add_values(
        s,
        "read(-1), the C library's own",
        vec![field("bare_ns="), instr("bare")],
        true,
    );
    let s = "hooks: echo instructions";
    if !callgrind::available() {
        eprintln!("bench: {s}: skipped: valgrind is not installed");
        return;
    }
    report.scenario(s, Unit::Seconds, &["instructions/request"]);
    // One connection: every read of either server waits for its request
    // (see the note), so the two do the same work per request.
    let exe = std::env::current_exe().expect("this binary's path");
    for (name, reactor, baseline) in [
        (
            "this crate's net::TcpStream, mio (the default)",
            "embedded",
            true,
        ),
        ("this crate's net::TcpStream, io_uring", "uring", false),
    ] {
        match callgrind::per_request_of(name, &exe, &["--profile", "serve", reactor], &[]) {
            Ok(n) => report.add_values(s, name, vec![n], baseline),
            Err(e) => eprintln!("bench: {s}: {name}: skipped: {e}"),
        }
    }
    for (name, reactor) in [
        ("std::net::TcpStream through the hooks, mio", "embedded"),
        ("std::net::TcpStream through the hooks, io_uring", "uring"),
    ] {
        match callgrind::per_request_of(name, &std_echo, &[], &[("ASYNC_REACTOR", reactor)]) {
            Ok(n) => report.add_values(s, name, vec![n], false),
            Err(e) => eprintln!("bench: {s}: {name}: skipped: {e}"),
        }
    }
}

fn echo_multi_all(report: &mut Report) {
    let s = "echo2";
    let columns = ["server CPU ns/req", "client CPU ns/req", "requests/s"];
    report.scenario(s, Unit::NsPerOp, &columns);
    let servers: [(&str, echo_multi::Server, usize, usize); 6] = [
        (
            "this runtime, mio, 1 loop",
            echo_multi::ours("mio", 1),
            1,
            1,
        ),
        (
            "this runtime, mio, 2 loops",
            echo_multi::ours("mio", 2),
            2,
            2,
        ),
        (
            "this runtime, io_uring, 1 loop",
            echo_multi::ours("uring", 1),
            1,
            1,
        ),
        (
            "this runtime, io_uring, 2 loops",
            echo_multi::ours("uring", 2),
            2,
            2,
        ),
        (
            "tokio multi-thread, 2 workers, enable_all",
            echo_multi::tokio_multi(2),
            2,
            1,
        ),
        (
            "monoio io_uring, 2 threads",
            echo_multi::monoio_multi(2),
            2,
            2,
        ),
    ];
    for (i, (name, serve, threads, listeners)) in servers.into_iter().enumerate() {
        let r = echo_multi::measure(serve, threads, listeners);
        let values = vec![r.server_ns_per_req, r.client_ns_per_req, r.rps];
        report.add_values(s, name, values, i == 1);
    }
}

fn http_all(report: &mut Report) {
    let depths = [1, 16];
    let scenarios = ["http plaintext", "http plaintext, 16 pipelined"];
    let columns = ["server CPU ns/req", "client CPU ns/req", "requests/s"];
    for s in scenarios {
        report.scenario(s, Unit::NsPerOp, &columns);
    }
    let servers: [(&str, http::Server, usize); 7] = [
        (
            "this runtime (http_hello), mio, 1 loop",
            http::ours("mio", 1),
            1,
        ),
        (
            "this runtime (http_hello), mio, 2 loops",
            http::ours("mio", 2),
            2,
        ),
        (
            "this runtime (http_hello), io_uring, 1 loop",
            http::ours("uring", 1),
            1,
        ),
        (
            "this runtime (http_hello), io_uring, 2 loops",
            http::ours("uring", 2),
            2,
        ),
        ("may_minihttp, may 1 worker", http::may_minihttp(), 1),
        (
            "hyper 1 (pipeline_flush), tokio current_thread, enable_all",
            http::hyper(0),
            1,
        ),
        (
            "hyper 1 (pipeline_flush), tokio multi-thread 2 workers, enable_all",
            http::hyper(2),
            1,
        ),
    ];
    let (names, servers): (Vec<&str>, Vec<(http::Server, usize)>) = servers
        .into_iter()
        .map(|(name, serve, listeners)| (name, (serve, listeners)))
        .unzip();
    let measured = http::measure_in_turns(servers, &depths);
    for (i, (name, at_depths)) in names.into_iter().zip(measured).enumerate() {
        for (s, r) in scenarios.iter().zip(at_depths) {
            eprintln!(
                "{s}: {name}: {:.0} ns/req server, {:.0} req/s",
                r.server_ns_per_req, r.rps
            );
            let values = vec![r.server_ns_per_req, r.client_ns_per_req, r.rps];
            report.add_values(s, name, values, i == 0);
        }
    }
}

const PINGPONG_ITERS: u64 = 200_000;
const THROUGHPUT_ITERS: u64 = 1_000_000;
const MUTEX_ITERS: u64 = 1_000_000;
const CONTENDED_ITERS: u64 = 200_000;
const ONESHOT_ITERS: u64 = 200_000;

fn sync_ours(report: &mut Report) {
    report.baseline(
        "channel ping-pong",
        "this runtime, sync::channel(1) x2",
        sync::ours_pingpong(PINGPONG_ITERS),
    );
    report.baseline(
        "channel throughput",
        "this runtime, sync::channel(1024), 1M messages",
        sync::ours_throughput(THROUGHPUT_ITERS),
    );
    report.baseline(
        "mutex uncontended",
        "this runtime, sync::Mutex",
        sync::ours_mutex_uncontended(MUTEX_ITERS),
    );
    report.baseline(
        "mutex contended",
        "this runtime, sync::Mutex, 4 coroutines",
        sync::ours_mutex_contended(CONTENDED_ITERS),
    );
    report.baseline(
        "oneshot",
        "this runtime, sync::Deferred",
        sync::ours_oneshot(ONESHOT_ITERS),
    );
}

fn sync_peers(report: &mut Report) {
    report.add(
        "channel ping-pong",
        "tokio current_thread (enable_all), mpsc::channel(1) x2",
        sync::tokio_pingpong(PINGPONG_ITERS),
    );
    report.add(
        "channel ping-pong",
        "may (1 worker), sync::mpsc x2",
        sync::may_pingpong(PINGPONG_ITERS),
    );
    report.add(
        "channel ping-pong",
        "crossbeam bounded(1) x2 between two threads (ceiling)",
        sync::crossbeam_pingpong(PINGPONG_ITERS),
    );
    report.add(
        "channel throughput",
        "tokio current_thread (enable_all), mpsc::channel(1024)",
        sync::tokio_throughput(THROUGHPUT_ITERS),
    );
    report.add(
        "channel throughput",
        "crossbeam bounded(1024) between two threads (ceiling)",
        sync::crossbeam_throughput(THROUGHPUT_ITERS),
    );
    report.add(
        "mutex uncontended",
        "tokio current_thread (enable_all), sync::Mutex",
        sync::tokio_mutex_uncontended(MUTEX_ITERS),
    );
    report.add(
        "mutex contended",
        "tokio current_thread (enable_all), sync::Mutex, 4 tasks",
        sync::tokio_mutex_contended(CONTENDED_ITERS),
    );
    report.add(
        "oneshot",
        "tokio current_thread (enable_all), oneshot",
        sync::tokio_oneshot(ONESHOT_ITERS),
    );
}

fn fairness_all(report: &mut Report) {
    let s = "fairness";
    report.scenario(s, Unit::Micros, &["median µs", "p99 µs", "max µs"]);
    for (name, server, baseline) in [
        (
            "this runtime, mio reactor",
            Box::new(echo::ours("mio")) as echo::Server,
            true,
        ),
        (
            "this runtime, io_uring reactor",
            Box::new(echo::ours("uring")),
            false,
        ),
        (
            "tokio current_thread, enable_all",
            Box::new(echo::tokio_server),
            false,
        ),
    ] {
        let l = fairness::measure(server);
        eprintln!("fairness: {name}: {} probes", l.probes);
        report.add_values(s, name, vec![l.median_us, l.p99_us, l.max_us], baseline);
    }
}

fn fs_all(report: &mut Report) {
    let file = fs::timed("made and read a 1 GiB file", fs::BenchFile::make);
    let path = file.path();
    let ours_mio = "this runtime, mio reactor (page cache at once, else the pool)";
    let ours_uring = "this runtime, io_uring reactor (page cache at once, else ring reads)";

    let s = "fs sequential read";
    report.scenario(s, Unit::NsPerOp, &["ns/read", "MiB/s"]);
    let rows: [(&str, fs::Run<'_>); 4] = [
        (ours_mio, fs::ours_seq("mio", path)),
        (ours_uring, fs::ours_seq("uring", path)),
        ("std::fs on a thread", fs::std_seq(path)),
        (
            "tokio current_thread (enable_all), tokio::fs::File",
            fs::tokio_seq(path),
        ),
    ];
    let measured = report::in_turns(fs::REPS, fs::seq_reads(), rows.into());
    for (i, (name, ns)) in measured.into_iter().enumerate() {
        report.add_values(s, name, fs::seq_values(ns), i == 0);
    }

    let r = "fs random read_at";
    let rows: [(&str, fs::Run<'_>); 5] = [
        (ours_mio, fs::ours_random("mio", path)),
        (ours_uring, fs::ours_random("uring", path)),
        ("std pread on a thread", fs::std_random(path)),
        (
            "tokio current_thread (enable_all), spawn_blocking(read_at)",
            fs::tokio_random(path),
        ),
        (
            "tokio current_thread (enable_all), tokio::fs::File seek + read_exact",
            fs::tokio_seek_read(path),
        ),
    ];
    let measured = report::in_turns(fs::REPS, fs::RANDOM_READS, rows.into());
    for (i, (name, ns)) in measured.into_iter().enumerate() {
        if i == 0 {
            report.baseline(r, name, ns);
        } else {
            report.add(r, name, ns);
        }
    }
}

fn timers_all(report: &mut Report) {
    let s = "timers";
    report.scenario(s, Unit::Micros, &["median µs", "p99 µs", "max µs"]);
    for (name, reactor, baseline) in [
        ("this runtime, mio reactor", "mio", true),
        ("this runtime, io_uring reactor", "uring", false),
    ] {
        let l = timers::ours(reactor);
        report.add_values(s, name, vec![l.median_us, l.p99_us, l.max_us], baseline);
    }
    let l = timers::tokio_sleep();
    report.add_values(
        s,
        "tokio current_thread (enable_all), tokio::time::sleep",
        vec![l.median_us, l.p99_us, l.max_us],
        false,
    );
}

/// `--profile echo <mio|embedded|uring|tokio|monoio> [requests]`: one echo server
/// alone under the load generator, for `strace -c -f`, `perf` or callgrind
/// (the client's own system calls are the same whatever the server, so
/// differences are the server's). Without `requests` it prints the median
/// of seven `echo::WINDOW` windows, as the report's rows; with `requests`
/// one window closes after that many requests: run it twice under callgrind
/// and divide (see `echo.rs`, "Instructions per request").
fn profile_echo(args: &[String]) {
    let usage = "usage: bench --profile echo <mio|embedded|uring|tokio|monoio> [requests]";
    let (server, window) = match args {
        [server] => (server, echo::Window::Time(echo::WINDOW)),
        [server, n] => (
            server,
            echo::Window::Requests(n.parse().unwrap_or_else(|_| panic!("{usage}"))),
        ),
        _ => panic!("{usage}"),
    };
    let result = match server.as_str() {
        "mio" => echo::measure_window(echo::ours("mio"), window),
        // The statically linked default: against "mio" (the same reactor as
        // a plugin), the dynamic-plugin cost.
        "embedded" => echo::measure_window(echo::ours("embedded"), window),
        "uring" => echo::measure_window(echo::ours("uring"), window),
        "tokio" => echo::measure_window(echo::tokio_server, window),
        "monoio" => echo::measure_window(echo::monoio_server, window),
        _ => panic!("{usage}"),
    };
    println!(
        "echo {server}: {:.0} requests/s, {:.0} ns of server CPU per request, \
         {} requests in the window, {} echoed in all",
        result.rps, result.server_ns_per_req, result.requests, result.total
    );
}

/// `--profile load <address> <requests>`: the echo load generator alone,
/// against a server in another process (an `echo_server` example run under
/// callgrind, say, where an in-process client could not run: valgrind
/// holds its lock while an io_uring server blocks in the kernel).
fn profile_load(args: &[String]) {
    let usage = "usage: bench --profile load <address> <requests>";
    let [addr, n] = args else {
        panic!("{usage}");
    };
    let addr: std::net::SocketAddr = addr.parse().unwrap_or_else(|_| panic!("{usage}"));
    let n: u64 = n.parse().unwrap_or_else(|_| panic!("{usage}"));
    let result = echo::drive_external(addr, n);
    println!(
        "load {addr}: {:.0} requests/s, {} requests in the window, {} echoed in all",
        result.rps, result.requests, result.total
    );
}

/// `--profile serve <mio|embedded|uring|tokio|monoio|may>`: one echo server on
/// this (the main) thread until the process is killed, its address printed
/// as `listening <address>`: for `--profile load` or `callgrind.rs` from
/// another process.
fn profile_serve(args: &[String]) {
    let usage = "usage: bench --profile serve <mio|embedded|uring|tokio|monoio|may>";
    let [server] = args else {
        panic!("{usage}");
    };
    // Printed by the server's own thread before it serves: under valgrind
    // no other thread may run once an io_uring server blocks in the kernel.
    let announce = |addr: std::net::SocketAddr| {
        use std::io::Write;
        println!("listening {addr}");
        let _ = std::io::stdout().flush();
    };
    match server.as_str() {
        "mio" => echo::ours_announcing("mio", announce),
        "embedded" => echo::ours_announcing("embedded", announce),
        "uring" => echo::ours_announcing("uring", announce),
        "tokio" => echo::tokio_announcing(announce),
        "monoio" => echo::monoio_announcing(announce),
        "may" => echo::may_announcing(announce),
        _ => panic!("{usage}"),
    }
}

/// `--profile serve-http <mio|uring|may|hyper>`: one of the `http`
/// scenario's servers (this runtime on one loop, may_minihttp, hyper on
/// tokio's current-thread runtime) until the process is killed, its address
/// printed as `listening <address>`, for callgrind or perf from outside.
fn profile_serve_http(args: &[String]) {
    let usage = "usage: bench --profile serve-http <mio|uring|may|hyper>";
    let server = match args {
        [s] if s == "mio" => http::ours("mio", 1),
        [s] if s == "uring" => http::ours("uring", 1),
        [s] if s == "may" => http::may_minihttp(),
        [s] if s == "hyper" => http::hyper(0),
        _ => panic!("{usage}"),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || server(tx));
    let addr = rx.recv().expect("the server's address");
    println!("listening {addr}");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    loop {
        std::thread::park();
    }
}

const UDP_ITERS: u64 = 50_000;
const BLOCKING_ITERS: u64 = 20_000;

fn udp_all(report: &mut Report) {
    report.baseline(
        "udp ping-pong",
        "this runtime, mio",
        udp::ours_udp("mio", UDP_ITERS),
    );
    report.add(
        "udp ping-pong",
        "this runtime, uring",
        udp::ours_udp("uring", UDP_ITERS),
    );
    report.add(
        "udp ping-pong",
        "tokio current_thread (enable_all), net::UdpSocket",
        udp::tokio_udp(UDP_ITERS),
    );
}

fn blocking_all(report: &mut Report) {
    report.baseline(
        "spawn_blocking",
        "this runtime, mio",
        udp::ours_blocking("mio", BLOCKING_ITERS),
    );
    report.add(
        "spawn_blocking",
        "this runtime, uring",
        udp::ours_blocking("uring", BLOCKING_ITERS),
    );
    report.add(
        "spawn_blocking",
        "tokio current_thread (enable_all), task::spawn_blocking",
        udp::tokio_blocking(BLOCKING_ITERS),
    );
}

const FIBER_ITERS: u64 = 1_000_000;

/// `--profile wait <fresh|persistent> <iters> [period_us]`: `iters` waits
/// of `period_us` (20) µs each, on a fresh timer per wait (`sleep`) or on one persistent timer
/// (`time::interval`), for instruction counts per wait under callgrind
/// (two iteration counts, difference over difference; the sleeping itself
/// costs no instructions).
fn profile_wait(args: &[String]) {
    let usage = "usage: bench --profile wait <fresh|persistent> <iters> [period_us]";
    let (kind, iters, period_us) = match args {
        [k, n] => (k, n, "20"),
        [k, n, p] => (k, n, p.as_str()),
        _ => panic!("{usage}"),
    };
    let iters: u64 = iters.parse().expect(usage);
    let period = std::time::Duration::from_micros(period_us.parse().expect(usage));
    let kind = kind.clone();
    // The backends from the environment (embedded by default).
    async_std_api::Builder::new()
        .run(move || match kind.as_str() {
            "fresh" => {
                for _ in 0..iters {
                    async_std_api::sleep(period).expect("sleep");
                }
            }
            "persistent" => {
                let mut every = async_std_api::time::interval(period);
                for _ in 0..iters {
                    every.tick().expect("tick");
                }
            }
            _ => panic!("{usage}"),
        })
        .expect("runtime");
    println!("wait {iters} done");
}
