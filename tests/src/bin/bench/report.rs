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

/// One run of a row: the time its operations took.
pub(crate) type Run<'a> = Box<dyn FnMut() -> Duration + 'a>;

/// Calls `run(i)` for each of `rows` rows, `rounds` times, the rows taking
/// turns (each round starting one row later, so no row always follows the
/// same one), and returns each row's results in the order they came. In
/// turns, a slow spell of the machine falls on every row alike instead of
/// on whichever row ran during it.
pub(crate) fn take_turns<T>(
    rounds: usize,
    rows: usize,
    mut run: impl FnMut(usize) -> T,
) -> Vec<Vec<T>> {
    let mut results: Vec<Vec<T>> = (0..rows).map(|_| Vec::with_capacity(rounds)).collect();
    for round in 0..rounds {
        for i in (0..rows).map(|k| (k + round) % rows) {
            results[i].push(run(i));
        }
    }
    results
}

/// Runs every row's `run` (each performs `iters` operations and returns
/// the time they took) `reps` times, the rows taking turns
/// ([`take_turns`]), and keeps each row's median. The runs
/// (and whatever they hold, a runtime say) are dropped before it returns
/// each row's name with its median.
pub(crate) fn in_turns<'n>(
    reps: usize,
    iters: u64,
    rows: Vec<(&'n str, Run<'_>)>,
) -> Vec<(&'n str, NsPerOp)> {
    let (names, mut runs): (Vec<_>, Vec<_>) = rows.into_iter().unzip();
    let samples = take_turns(reps, runs.len(), |i| {
        runs[i]().as_nanos() as f64 / iters as f64
    });
    drop(runs);
    names
        .into_iter()
        .zip(samples)
        .map(|(name, mut row)| {
            row.sort_by(f64::total_cmp);
            (name, NsPerOp(row[row.len() / 2]))
        })
        .collect()
}

/// What a scenario measures, and which direction is better.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Unit {
    /// Nanoseconds per operation: lower is better.
    NsPerOp,
    /// Microseconds of lateness: lower is better.
    Micros,
    /// Seconds, and other quantities where lower is better (the columns
    /// name them).
    Seconds,
}

impl Unit {
    fn header(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns/op",
            Unit::Micros => "µs",
            Unit::Seconds => "s",
        }
    }

    /// How many times worse than `base` `value` is (above 1.00: worse than
    /// this runtime; both units are lower-is-better).
    fn ratio(self, value: f64, base: f64) -> f64 {
        value / base
    }
}

struct Line {
    scenario: String,
    name: String,
    values: Vec<f64>,
    baseline: bool,
}

struct Scenario {
    name: String,
    unit: Unit,
    columns: Vec<&'static str>,
}

/// The results of one run.
pub(crate) struct Report {
    scenarios: Vec<Scenario>,
    lines: Vec<Line>,
    /// What a reader needs to know to read a scenario's numbers, by name.
    notes: Vec<(&'static str, &'static str)>,
}

impl Report {
    pub(crate) fn new() -> Report {
        Report {
            scenarios: Vec::new(),
            lines: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Declares a scenario whose lines carry several values (one per
    /// column); ratios are computed on the first column.
    pub(crate) fn scenario(&mut self, name: &str, unit: Unit, columns: &[&'static str]) {
        if !self.scenarios.iter().any(|s| s.name == name) {
            self.scenarios.push(Scenario {
                name: name.into(),
                unit,
                columns: columns.to_vec(),
            });
        }
    }

    fn push(&mut self, scenario: &str, name: &str, values: Vec<f64>, baseline: bool) {
        self.scenario(scenario, Unit::NsPerOp, &[]);
        eprintln!("bench: {scenario}: {name}: {values:.1?}");
        self.lines.push(Line {
            scenario: scenario.into(),
            name: name.into(),
            values,
            baseline,
        });
    }

    /// Attaches a note to `scenario` (in the JSON, for the report).
    pub(crate) fn note(&mut self, scenario: &'static str, text: &'static str) {
        self.notes.push((scenario, text));
    }

    /// Records the ns/op measurement every other line of `scenario` is
    /// compared to.
    pub(crate) fn baseline(&mut self, scenario: &str, name: &str, value: NsPerOp) {
        self.push(scenario, name, vec![value.0], true);
    }

    /// Records one ns/op measurement.
    pub(crate) fn add(&mut self, scenario: &str, name: &str, value: NsPerOp) {
        self.push(scenario, name, vec![value.0], false);
    }

    /// Records a measurement in the scenario's declared unit and columns.
    pub(crate) fn add_values(
        &mut self,
        scenario: &str,
        name: &str,
        values: Vec<f64>,
        baseline: bool,
    ) {
        self.push(scenario, name, values, baseline);
    }

    /// Prints one table per scenario: the values and the ratio to the
    /// baseline on the first column (above 1.00 means worse than this
    /// runtime).
    pub(crate) fn print(&self) {
        let width = self.lines.iter().map(|l| l.name.len()).max().unwrap_or(10);
        for s in &self.scenarios {
            let lines: Vec<&Line> = self.lines.iter().filter(|l| l.scenario == s.name).collect();
            if lines.is_empty() {
                continue;
            }
            let base = lines.iter().find(|l| l.baseline).map(|l| l.values[0]);
            let columns: Vec<&str> = if s.columns.is_empty() {
                vec![s.unit.header()]
            } else {
                s.columns.clone()
            };
            println!("\n## {}\n", s.name);
            print!("| {:<width$} |", "implementation");
            for c in &columns {
                print!(" {c:>12} |");
            }
            println!(" {:>15} |", "vs this runtime");
            print!("|{}|", "-".repeat(width + 2));
            for _ in &columns {
                print!("{}:|", "-".repeat(13));
            }
            println!("{}:|", "-".repeat(16));
            for l in lines {
                print!("| {:<width$} |", l.name);
                for v in &l.values {
                    print!(" {v:>12.1} |");
                }
                let ratio = base.map_or("-".to_string(), |b| {
                    format!("{:.2}x", s.unit.ratio(l.values[0], b))
                });
                println!(" {ratio:>15} |");
            }
        }
        println!();
    }

    /// Writes every scenario measured in this run as JSON (for `cargo xtask
    /// bench`, which keeps the report in `docs/bench/`): scenario name,
    /// unit, columns, and each line's name, values and whether it is the
    /// baseline.
    pub(crate) fn write_json(&self, path: &std::path::Path) -> std::io::Result<()> {
        let mut out = String::from("{\"scenarios\":[");
        let mut first = true;
        for s in &self.scenarios {
            let lines: Vec<&Line> = self.lines.iter().filter(|l| l.scenario == s.name).collect();
            if lines.is_empty() {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            let columns: Vec<String> = if s.columns.is_empty() {
                vec![json_str(s.unit.header())]
            } else {
                s.columns.iter().map(|c| json_str(c)).collect()
            };
            let note = self
                .notes
                .iter()
                .filter(|(n, _)| *n == s.name)
                .map(|(_, t)| *t)
                .collect::<Vec<_>>()
                .join(" ");
            out.push_str(&format!(
                "{{\"name\":{},\"unit\":{},\"columns\":[{}],\"note\":{},\"lines\":[",
                json_str(&s.name),
                json_str(s.unit.header()),
                columns.join(","),
                json_str(&note)
            ));
            for (i, l) in lines.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let values: Vec<String> = l
                    .values
                    .iter()
                    .map(|v| {
                        if v.is_finite() {
                            format!("{v}")
                        } else {
                            "null".into()
                        }
                    })
                    .collect();
                out.push_str(&format!(
                    "{{\"name\":{},\"values\":[{}],\"baseline\":{}}}",
                    json_str(&l.name),
                    values.join(","),
                    l.baseline
                ));
            }
            out.push_str("]}");
        }
        out.push_str("]}\n");
        std::fs::write(path, out)
    }
}

/// `s` as a JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
