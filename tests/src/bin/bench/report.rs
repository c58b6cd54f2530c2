//! Collecting measurements and printing them as ratios against a baseline.

use std::time::Duration;

/// Nanoseconds per operation, the median of several repetitions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NsPerOp(pub(crate) f64);

/// Runs `f` (which performs `iters` operations and returns the time they
/// took) `reps` times and keeps the median.
pub(crate) fn median(reps: usize, iters: u64, mut f: impl FnMut() -> Duration) -> NsPerOp {
    let mut samples: Vec<f64> = (0..reps)
        .map(|_| f().as_nanos() as f64 / iters as f64)
        .collect();
    samples.sort_by(f64::total_cmp);
    NsPerOp(samples[samples.len() / 2])
}

struct Line {
    scenario: String,
    name: String,
    value: NsPerOp,
    baseline: bool,
}

/// The results of one run.
pub(crate) struct Report {
    lines: Vec<Line>,
}

impl Report {
    pub(crate) fn new() -> Report {
        Report { lines: Vec::new() }
    }

    /// Records the measurement every other line of `scenario` is compared to.
    pub(crate) fn baseline(&mut self, scenario: &str, name: &str, value: NsPerOp) {
        eprintln!("bench: {scenario}: {name}: {:.1} ns", value.0);
        self.lines.push(Line {
            scenario: scenario.into(),
            name: name.into(),
            value,
            baseline: true,
        });
    }

    /// Records one measurement.
    pub(crate) fn add(&mut self, scenario: &str, name: &str, value: NsPerOp) {
        eprintln!("bench: {scenario}: {name}: {:.1} ns", value.0);
        self.lines.push(Line {
            scenario: scenario.into(),
            name: name.into(),
            value,
            baseline: false,
        });
    }

    /// Prints one table per scenario: ns/op and the ratio to the baseline
    /// (above 1.00 means slower than this runtime).
    pub(crate) fn print(&self) {
        let width = self.lines.iter().map(|l| l.name.len()).max().unwrap_or(10);
        let mut scenarios: Vec<&str> = Vec::new();
        for l in &self.lines {
            if !scenarios.contains(&l.scenario.as_str()) {
                scenarios.push(&l.scenario);
            }
        }
        for s in scenarios {
            let base = self
                .lines
                .iter()
                .find(|l| l.scenario == s && l.baseline)
                .map(|l| l.value.0);
            println!("\n## {s}\n");
            println!(
                "| {:<width$} | {:>10} | {:>14} |",
                "implementation", "ns/op", "vs this runtime"
            );
            println!(
                "|{}|{}|{}|",
                "-".repeat(width + 2),
                "-".repeat(12),
                "-".repeat(16)
            );
            for l in self.lines.iter().filter(|l| l.scenario == s) {
                let ratio = base.map_or("-".to_string(), |b| format!("{:.2}x", l.value.0 / b));
                println!(
                    "| {:<width$} | {:>10.1} | {:>14} |",
                    l.name, l.value.0, ratio
                );
            }
        }
        println!();
    }
}
