//! User-space instructions per echoed request, counted by callgrind: the
//! measure of the echo path's own cost that the kernel's loopback work and
//! the machine's load do not blur (server CPU time does both).
//!
//! Each server runs twice under `valgrind --tool=callgrind
//! --separate-threads=yes` (this binary's `--profile echo`), with `LOW` and
//! then `HIGH` requests; the server thread is the first one the profile
//! spawns (`echo::measure_window`), so its counts are in the `-02` file.
//! The difference in instructions over the difference in requests echoed
//! leaves out setup and teardown. Of three such pairs, the median is kept:
//! how many requests one loop iteration serves varies a little from run to
//! run under valgrind.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The two window sizes, in requests.
const LOW: u64 = 3_000;
const HIGH: u64 = 12_000;
/// Pairs of runs per server; the median is kept.
const PAIRS: usize = 3;

/// Whether `valgrind` can be run.
pub(crate) fn available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The median instructions per request of `server` (`bench --profile echo`
/// names: `embedded`, `mio`, `tokio`; the io_uring ones hang under
/// valgrind, which does not follow the ring).
pub(crate) fn per_request(server: &str) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?;
    let dir = std::env::temp_dir().join(format!("bench-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut samples = Vec::with_capacity(PAIRS);
    for pair in 0..PAIRS {
        let (low_instr, low_reqs) = one_run(&exe, &dir, server, LOW, pair)?;
        let (high_instr, high_reqs) = one_run(&exe, &dir, server, HIGH, pair)?;
        if high_reqs <= low_reqs {
            return Err(format!(
                "{server}: {high_reqs} requests echoed in the long run, {low_reqs} in the short"
            ));
        }
        samples.push((high_instr - low_instr) as f64 / (high_reqs - low_reqs) as f64);
    }
    let _ = std::fs::remove_dir_all(&dir);
    samples.sort_by(f64::total_cmp);
    eprintln!("bench: callgrind: {server}: {samples:.0?} instructions per request");
    Ok(samples[samples.len() / 2])
}

/// One profiled run: the server thread's instructions and the requests
/// echoed in all.
fn one_run(
    exe: &Path,
    dir: &Path,
    server: &str,
    requests: u64,
    pair: usize,
) -> Result<(i64, u64), String> {
    let stem = format!("{server}-{requests}-{pair}");
    // A run that hangs (a server valgrind cannot follow) ends in an error
    // after ten minutes, not never.
    let out = Command::new("timeout")
        .args(["600", "valgrind"])
        .arg("--tool=callgrind")
        .arg("--separate-threads=yes")
        .arg(format!("--callgrind-out-file={}/{stem}.%p", dir.display()))
        .arg(exe)
        .args(["--profile", "echo", server, &requests.to_string()])
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{server}: the profiled run failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    // "echo <server>: ... <n> echoed in all"
    let echoed = stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(3)
        .find(|w| w[1] == "echoed" && w[2] == "in")
        .and_then(|w| w[0].parse::<u64>().ok())
        .ok_or_else(|| format!("{server}: no request count in {stdout:?}"))?;
    let file = server_thread_file(dir, &stem)?;
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let instructions = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary: ")
                .or_else(|| l.strip_prefix("totals: "))
        })
        .and_then(|v| v.trim().parse::<i64>().ok())
        .ok_or_else(|| format!("{}: no instruction total", file.display()))?;
    Ok((instructions, echoed))
}

/// `<stem>.<pid>-02`: the profile of the second thread, the server's.
fn server_thread_file(dir: &Path, stem: &str) -> Result<PathBuf, String> {
    let prefix = format!("{stem}.");
    std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with("-02"))
        })
        .ok_or_else(|| format!("no server thread profile {prefix}*-02 in {}", dir.display()))
}
