//! The benchmark report in `docs/bench/`: `cargo xtask bench` runs the
//! harness with `--json`, merges what it measured into
//! `docs/bench/results.json` (a scenario measured now replaces its old
//! entry; the others keep theirs), and writes from that file a Markdown
//! page (`docs/bench/README.md`: per scenario its table, ratios against
//! this runtime's baseline line, the machine, the date and the command) and
//! one bar chart per scenario (`docs/bench/<scenario>.svg`).

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde_json::{json, Value};

use crate::cmd::root;

/// Where the report lives.
pub(crate) fn dir() -> PathBuf {
    root().join("docs/bench")
}

/// The machine the numbers come from, in one line.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / (1024.0 * 1024.0));
    let rustc = std::process::Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {mem_gib:.0} GiB, Linux {kernel}, {rustc}")
}

/// Today's date (UTC), from `date`.
fn today() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Merges this run's `fresh` results (the harness's JSON) into the report
/// and rewrites it. `command` is how they were made.
pub(crate) fn update(fresh: &Path, command: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(fresh)
        .map_err(|e| format!("cannot read {}: {e}", fresh.display()))?;
    let run: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", fresh.display()))?;
    let dir = dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let store = dir.join("results.json");
    let mut all: Vec<Value> = std::fs::read_to_string(&store)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["scenarios"].as_array().cloned())
        .unwrap_or_default();
    let (machine, date) = (machine(), today());
    for mut s in run["scenarios"].as_array().cloned().unwrap_or_default() {
        s["machine"] = json!(machine);
        s["date"] = json!(date);
        s["command"] = json!(command);
        match all.iter_mut().find(|o| o["name"] == s["name"]) {
            Some(old) => *old = s,
            None => all.push(s),
        }
    }
    let doc = json!({ "scenarios": all });
    let pretty = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    std::fs::write(&store, pretty + "\n")
        .map_err(|e| format!("cannot write {}: {e}", store.display()))?;
    write_markdown(&dir, &all)?;
    for s in &all {
        chart(&dir, s)?;
    }
    eprintln!(
        "xtask: report written to {}",
        dir.join("README.md").display()
    );
    Ok(())
}

/// A file name for a scenario: lower case, words joined by `-`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

fn values(line: &Value) -> Vec<Option<f64>> {
    line["values"]
        .as_array()
        .map(|v| v.iter().map(Value::as_f64).collect())
        .unwrap_or_default()
}

fn write_markdown(dir: &Path, all: &[Value]) -> Result<(), String> {
    let mut md = String::from(
        "# Benchmarks\n\n\
         Made by `cargo xtask bench` (release build, peers compiled with the `tests` crate's \
         `peers` feature): every scenario measured in one run of the harness \
         (`tests/src/bin/bench/`), side by side with its peers, written here with the machine, \
         the date and the command. Run `cargo xtask bench -- <scenario>...` to measure some \
         again; the others keep their last numbers. Each table's last column is the first \
         column's ratio to this runtime's baseline line: above 1.00 is slower (or bigger) than \
         this runtime. The development machine is a shared 2-core VM, so single numbers are \
         noisy; the ratios within one run are what to read.\n\n",
    );
    md.push_str("Scenarios:\n\n");
    for s in all {
        let name = s["name"].as_str().unwrap_or("?");
        md.push_str(&format!("- [{name}](#{})\n", slug(name)));
    }
    for s in all {
        let name = s["name"].as_str().unwrap_or("?");
        md.push_str(&format!("\n## {name}\n\n"));
        md.push_str(&format!(
            "Measured {} on {}, with `{}`.\n\n",
            s["date"].as_str().unwrap_or("?"),
            s["machine"].as_str().unwrap_or("?"),
            s["command"].as_str().unwrap_or("?")
        ));
        md.push_str(&format!("![{name}]({}.svg)\n\n", slug(name)));
        let columns: Vec<&str> = s["columns"]
            .as_array()
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let lines = s["lines"].as_array().cloned().unwrap_or_default();
        let base = lines
            .iter()
            .find(|l| l["baseline"] == true)
            .and_then(|l| values(l).first().copied().flatten());
        md.push_str("| implementation |");
        for c in &columns {
            md.push_str(&format!(" {c} |"));
        }
        md.push_str(" vs this runtime |\n|---|");
        for _ in &columns {
            md.push_str("---:|");
        }
        md.push_str("---:|\n");
        for l in &lines {
            let vals = values(l);
            let bold = l["baseline"] == true;
            let label = l["name"].as_str().unwrap_or("?");
            if bold {
                md.push_str(&format!("| **{label}** |"));
            } else {
                md.push_str(&format!("| {label} |"));
            }
            for v in &vals {
                match v {
                    Some(v) => md.push_str(&format!(" {} |", fmt_value(*v))),
                    None => md.push_str(" - |"),
                }
            }
            let ratio = match (base, vals.first().copied().flatten()) {
                (Some(b), Some(v)) if b > 0.0 => format!("{:.2}x", v / b),
                _ => "-".into(),
            };
            md.push_str(&format!(" {ratio} |\n"));
        }
        if let Some(note) = s["note"].as_str().filter(|n| !n.is_empty()) {
            md.push_str(&format!("\n{note}\n"));
        }
    }
    let path = dir.join("README.md");
    std::fs::write(&path, md).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A value with as many decimals as its size deserves.
fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// One horizontal bar per line, its first column; this runtime's baseline
/// in blue, the others in grey.
fn chart(dir: &Path, s: &Value) -> Result<(), String> {
    let name = s["name"].as_str().unwrap_or("?").to_owned();
    let path = dir.join(format!("{}.svg", slug(&name)));
    let lines = s["lines"].as_array().cloned().unwrap_or_default();
    let bars: Vec<(String, f64, bool)> = lines
        .iter()
        .filter_map(|l| {
            let v = values(l).first().copied().flatten()?;
            Some((
                l["name"].as_str().unwrap_or("?").to_owned(),
                v,
                l["baseline"] == true,
            ))
        })
        .collect();
    if bars.is_empty() {
        return Ok(());
    }
    let unit = s["columns"][0].as_str().unwrap_or("").to_owned();
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-9);
    let n = bars.len();
    let height = 70 + 28 * n as u32;
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let root = SVGBackend::new(&path, (860, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut c = ChartBuilder::on(&root)
        .caption(&name, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(330)
        .build_cartesian_2d(0.0..max * 1.12, (0..n).into_segmented())
        .map_err(|e| err(&e))?;
    let labels: Vec<String> = bars.iter().rev().map(|b| b.0.clone()).collect();
    c.configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(unit)
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(|e| err(&e))?;
    let blue = RGBColor(47, 110, 186);
    let grey = RGBColor(150, 150, 150);
    // The first line on top: segment 0 is the bottom one.
    c.draw_series(bars.iter().enumerate().map(|(k, (_, v, base))| {
        let i = n - 1 - k;
        let colour = if *base { blue } else { grey };
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (*v, SegmentValue::Exact(i + 1)),
            ],
            colour.filled(),
        );
        bar.set_margin(4, 4, 0, 0);
        bar
    }))
    .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
