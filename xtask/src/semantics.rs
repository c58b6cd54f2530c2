//! `cargo xtask check-semantics`: the rule ids, kept honest.
//!
//! Code, tests and docs cite the project's semantic rules by id: `R-S6` (a
//! rule of the RFC), `D-16` (a decision on what the RFC leaves open), `P-08`
//! (a pitfall of another runtime), `REF-19` (what the reference
//! implementation does); and its style practices as `STYLE S13`. An id is
//! only worth citing if the reader can look it up, and a rule is only worth
//! having if a test holds the code to it. So:
//!
//! 1. **Defined.** Every id cited in a `.rs`, `.md` or `.toml` file of the
//!    workspace (git's tracked and untracked-but-not-ignored files, so
//!    `target/` is out; `docs/semantics.md` itself is out) is defined in
//!    `docs/semantics.md`. The families: `R-<letters><digits>`,
//!    `D-<digits>`, `P-<digits>`, `REF-<digits>`; a suffix such as `D-6(1)`
//!    cites `D-6`, and a range `R-AU1..R-AU4` (also `..` with spaces, `…`,
//!    `–`) cites every id in it. A **definition** is a line that starts a
//!    list entry with the id in bold: `- **R-S6** ...`.
//! 2. **Tested.** Every id defined in `docs/semantics.md` is cited by a
//!    test: it appears literally in test code, or a test code function's
//!    name contains its snake form (`r_s6`, `d16`, `p08`, `ref19`) between
//!    underscores or at either end (`r_s6_await_...`, `..._d7`). Test code
//!    is every `.rs` file under a crate's `tests` directory
//!    (`async-scheduler/tests/...`, `tests/tests/...`) and the
//!    `mod tests { ... }` block of any other `.rs` file (up to the line
//!    that closes it at the same indentation: the code is rustfmt'd). The
//!    suite crate, whose root directory is itself named `tests`, has its
//!    test directory at `tests/tests/`; its `tests/src/` (helpers, the
//!    conformance kit) is library code: a helper that cites a rule does not
//!    check it. Doc comments outside test code do not count either: a rule
//!    that no test exercises is a wish. [`PENDING_TESTS`] excuses ids whose
//!    tests are being written.
//! 3. **Style.** Every `STYLE S<n>` cited (also `STYLE S13, S26`) is
//!    defined in `docs/style.md`, in the same format (`- **S13** ...`).
//! 4. **Self-contained.** No tracked file names a path outside the
//!    repository ([`OUTSIDE`]): the specification travels with the
//!    repository, so nothing may send the reader to the machine it was
//!    written on. This file is exempt: it has to name the patterns. It is
//!    also left out of checks 1-3, whose examples and unit tests would
//!    otherwise cite (and "test") ids.
//! 5. **Named tests exist.** Every test `docs/semantics.md` names (a
//!    backticked snake-case name with at least three underscores, the
//!    shape of this project's test names) is a function somewhere in the
//!    workspace's `.rs` files, so a renamed test cannot leave the spec
//!    pointing at nothing.
//!
//! Every problem is one line, `file:line: reason`.

use crate::cmd::{root, run_capture};
use std::collections::{BTreeMap, BTreeSet};

/// The project's specification: the definitions of the rule ids.
const SEMANTICS: &str = "docs/semantics.md";

/// The project's style note: the definitions of the `STYLE S<n>` ids.
const STYLE: &str = "docs/style.md";

/// This file: it names every forbidden pattern and cites example ids.
const THIS_FILE: &str = "xtask/src/semantics.rs";

/// Ids defined in `docs/semantics.md` whose tests are being written right
/// now (or whose existing test does not cite them yet), each with what its
/// test must show. Temporary: this list must be emptied; `cargo xtask
/// check-semantics` names every entry whose id has a test by now.
const PENDING_TESTS: &[(&str, &str)] = &[];

/// Text that points outside the repository (case-sensitive: the project's
/// own `docs/semantics.md` and `docs/style.md` are lower case).
/// Besides these, the directory the checkout sits in, as an absolute path
/// ([`beside_checkout`]): whatever machine the check runs on.
const OUTSIDE: &[&str] = &[
    "../shared",
    "shared/SEMANTICS",
    "shared/STYLE",
    "shared/seeds",
    "SEMANTICS.md",
    "STYLE.md",
];

/// Ranges longer than this are taken for typos, not citations.
const MAX_RANGE: u32 = 40;

/// `cargo xtask check-semantics`: runs [`check`] and reports the ids that
/// [`PENDING_TESTS`] still excuses.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask check-semantics".into());
    }
    let survey = survey()?;
    if !survey.problems.is_empty() {
        return Err(survey.problems.join("\n"));
    }
    for (n, id) in &survey.stale {
        eprintln!(
            "xtask: note: {SEMANTICS}:{n}: {id} now has a test: remove it from PENDING_TESTS in {THIS_FILE}"
        );
    }
    let pending: Vec<&str> = pending_ids()
        .filter(|p| !survey.stale.iter().any(|(_, id)| id == p))
        .collect();
    if pending.is_empty() {
        eprintln!("xtask: semantics check passed");
    } else {
        eprintln!(
            "xtask: semantics check passed; PENDING_TESTS still excuses {} (tests to come)",
            pending.join(", ")
        );
    }
    Ok(())
}

/// The ids [`PENDING_TESTS`] excuses.
fn pending_ids() -> impl Iterator<Item = &'static str> {
    PENDING_TESTS.iter().map(|(id, _)| *id)
}

/// Runs the checks; `Err` lists every problem, one per line.
pub(crate) fn check() -> Result<(), String> {
    let survey = survey()?;
    if survey.problems.is_empty() {
        Ok(())
    } else {
        Err(survey.problems.join("\n"))
    }
}

/// What the checks found.
struct Survey {
    /// Problems: each fails the check.
    problems: Vec<String>,
    /// [`PENDING_TESTS`] entries whose id now has a test: a note, not a
    /// failure, since the test may land (untracked, then committed) before
    /// the list is edited; `cargo xtask check-semantics` prints them. Each
    /// is the line of the id's definition and the id.
    stale: Vec<(usize, String)>,
}

/// Runs checks 1-4 over the workspace.
fn survey() -> Result<Survey, String> {
    let root = root();
    let sources = read_files(&git_files(true)?)?;
    let tracked: BTreeSet<String> = git_files(false)?.into_iter().collect();
    let semantics = text_of(&sources, SEMANTICS)?;
    let style = text_of(&sources, STYLE)?;
    let defined = definitions(semantics, is_rule_id);
    let styles = definitions(style, is_style_id);

    let mut problems = duplicate_problems(SEMANTICS, &defined);
    problems.extend(duplicate_problems(STYLE, &styles));
    let defined_ids: BTreeSet<&str> = defined.iter().map(|(_, id)| id.as_str()).collect();
    let style_ids: BTreeSet<&str> = styles.iter().map(|(_, id)| id.as_str()).collect();
    let mut tested = BTreeSet::new();
    for f in sources.iter().filter(|f| f.path != THIS_FILE) {
        if is_cited_kind(&f.path) && f.path != SEMANTICS {
            problems.extend(undefined_problems(f, &defined_ids));
            problems.extend(style_problems(f, &style_ids));
        }
        if f.path.ends_with(".rs") {
            let whole_file =
                in_tests_dir(&f.path, |dir| root.join(dir).join("Cargo.toml").is_file());
            tested.extend(tested_ids(&f.text, whole_file, &defined_ids));
        }
    }
    problems.extend(untested_problems(&defined, &tested));
    let beside = beside_checkout();
    for f in sources
        .iter()
        .filter(|f| f.path != THIS_FILE && tracked.contains(&f.path))
    {
        problems.extend(outside_problems(f, beside.as_deref()));
    }
    problems.extend(named_test_problems(semantics, &sources));
    let stale = stale_pending(&defined, &tested);
    Ok(Survey { problems, stale })
}

// ---- the files ----

/// A workspace file: its path relative to the root, `/`-separated, and its
/// text.
struct File {
    /// Relative to the workspace root, `/`-separated (as git prints it).
    path: String,
    /// The contents (invalid UTF-8 replaced).
    text: String,
}

/// The workspace's files per git: tracked ones, and with `untracked` also
/// the untracked files `.gitignore` does not exclude (work in progress
/// counts for checks 1-3; check 4 is about what the repository carries).
fn git_files(untracked: bool) -> Result<Vec<String>, String> {
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(root()).args(["ls-files", "-z", "--cached"]);
    if untracked {
        cmd.args(["--others", "--exclude-standard"]);
    }
    let out = run_capture(cmd, "git ls-files")?;
    if !out.status.success() {
        return Err(format!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut paths: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Reads the text files among `paths`; paths deleted from the work tree,
/// directories (submodules) and binary files (a NUL byte) are skipped.
fn read_files(paths: &[String]) -> Result<Vec<File>, String> {
    let root = root();
    let mut files = Vec::new();
    for path in paths {
        let full = root.join(path);
        if !full.is_file() {
            continue;
        }
        let bytes = std::fs::read(&full).map_err(|e| format!("cannot read {path}: {e}"))?;
        if bytes.contains(&0) {
            continue;
        }
        files.push(File {
            path: path.clone(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    Ok(files)
}

/// The text of `path` among `files`, or a one-line error if it is missing.
fn text_of<'a>(files: &'a [File], path: &str) -> Result<&'a str, String> {
    files
        .iter()
        .find(|f| f.path == path)
        .map(|f| f.text.as_str())
        .ok_or_else(|| format!("{path} is missing: it defines the ids the workspace cites"))
}

/// Whether ids cited in this file must be defined (check 1).
fn is_cited_kind(path: &str) -> bool {
    [".rs", ".md", ".toml"]
        .iter()
        .any(|ext| path.ends_with(ext))
}

// ---- ids ----

/// Whether `s` is a whole rule id: `R-<letters><digits>`, `D-<digits>`,
/// `P-<digits>` or `REF-<digits>`.
fn is_rule_id(s: &str) -> bool {
    matches!(parse_id(s, 0), Some((_, end)) if end == s.len())
}

/// Whether `s` is a whole style id, `S<digits>`.
fn is_style_id(s: &str) -> bool {
    s.strip_prefix('S')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The rule id starting at byte `at` of `s`, and where it ends. The id
/// must not continue a word (`AA-R1`, `PID-1` are not ids); trailing
/// text such as `(1)` is not part of it.
fn parse_id(s: &str, at: usize) -> Option<(String, usize)> {
    let bytes = s.as_bytes();
    if at > 0 {
        let prev = bytes[at - 1];
        if prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'-' {
            return None;
        }
    }
    let rest = &s[at..];
    let (prefix_len, needs_letters) = if rest.starts_with("REF-") {
        (4, false)
    } else if rest.starts_with("R-") {
        (2, true)
    } else if rest.starts_with("D-") || rest.starts_with("P-") {
        (2, false)
    } else {
        return None;
    };
    let tail = &rest.as_bytes()[prefix_len..];
    let letters = tail.iter().take_while(|b| b.is_ascii_uppercase()).count();
    if needs_letters != (letters > 0) {
        return None;
    }
    let digits = tail[letters..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 {
        return None;
    }
    let end = at + prefix_len + letters + digits;
    Some((s[at..end].to_owned(), end))
}

/// An id split into its non-numeric prefix (`R-AU`) and its number text.
fn split_id(id: &str) -> (&str, &str) {
    let n = id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    id.split_at(n)
}

/// If `s[at..]` is a range continuation (`..R-AU4`, ` .. R-AU4`, `…`, `–`)
/// ending in an id of `first`'s prefix with a larger number, the ids
/// strictly between and the last one, and where the range ends.
fn range_after(s: &str, at: usize, first: &str) -> Option<(Vec<String>, usize)> {
    let rest = &s[at..];
    let trimmed = rest.trim_start();
    let after_sep = ["..", "…", "–"]
        .iter()
        .find_map(|sep| trimmed.strip_prefix(sep))?;
    let second_text = after_sep.trim_start();
    let second_at = s.len() - second_text.len();
    let (second, end) = parse_id(s, second_at)?;
    let (p1, n1) = split_id(first);
    let (p2, n2) = split_id(&second);
    let (a, b) = (n1.parse::<u32>().ok()?, n2.parse::<u32>().ok()?);
    if p1 != p2 || b <= a || b - a > MAX_RANGE {
        return None;
    }
    let width = if n1.starts_with('0') { n1.len() } else { 0 };
    let ids = (a + 1..=b).map(|n| format!("{p1}{n:0width$}")).collect();
    Some((ids, end))
}

/// The rule ids a line cites, ranges expanded, in order of appearance.
fn ids_in_line(line: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if !line.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let Some((id, end)) = parse_id(line, i) else {
            i += 1;
            continue;
        };
        i = end;
        if let Some((more, range_end)) = range_after(line, end, &id) {
            ids.push(id);
            ids.extend(more);
            i = range_end;
        } else {
            ids.push(id);
        }
    }
    ids
}

/// The style ids a line cites: `STYLE S1`, `STYLE S13, S26`,
/// `STYLE S5 and S20`.
fn style_ids_in_line(line: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for (pos, _) in line.match_indices("STYLE") {
        let mut rest = &line[pos + "STYLE".len()..];
        loop {
            rest = rest.trim_start_matches([' ', ',', '/']);
            rest = rest.strip_prefix("and ").unwrap_or(rest);
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if !is_style_id(&word) {
                break;
            }
            rest = &rest[word.len()..];
            ids.push(word);
        }
    }
    ids
}

/// The entries a definitions file defines: lines `- **ID** ...` whose bold
/// text passes `is_id`, with their 1-based line numbers.
fn definitions(text: &str, is_id: fn(&str) -> bool) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let bold = line.strip_prefix("- **")?;
            let id = &bold[..bold.find("**")?];
            is_id(id).then(|| (n + 1, id.to_owned()))
        })
        .collect()
}

/// The snake form a test name uses for an id: `R-S6` `r_s6`, `D-16` `d16`,
/// `P-08` `p08`, `REF-19` `ref19`.
fn snake(id: &str) -> String {
    match id.strip_prefix("R-") {
        Some(rest) => format!("r_{}", rest.to_ascii_lowercase()),
        None => id.replace('-', "").to_ascii_lowercase(),
    }
}

/// Whether the function name contains `snake` as a whole `_`-separated
/// part run (`r_s1` is in `fifo_r_s1_x` but not in `r_s10_x`).
fn name_has(name: &str, snake: &str) -> bool {
    name.match_indices(snake).any(|(i, _)| {
        let before = i == 0 || name.as_bytes()[i - 1] == b'_';
        let j = i + snake.len();
        let after = j == name.len() || name.as_bytes()[j] == b'_';
        before && after
    })
}

// ---- test code ----

/// Whether `path` lies in a crate's `tests` directory: some directory of
/// it is named `tests` and is not itself a crate root (`tests/tests/a.rs`
/// and `x/tests/a.rs` are; `tests/src/a.rs` and `tests/build.rs` of a
/// crate named by its directory `tests/` are not). `is_crate_root` tells
/// whether a directory (relative to the workspace root) holds a
/// `Cargo.toml`.
fn in_tests_dir(path: &str, is_crate_root: impl Fn(&str) -> bool) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let dirs = &parts[..parts.len().saturating_sub(1)];
    (0..dirs.len()).any(|i| dirs[i] == "tests" && !is_crate_root(&dirs[..=i].join("/")))
}

/// The test code of a `.rs` file, as (1-based line number, line): the
/// whole file if it is in a crate's `tests` directory (`whole_file`), else
/// its `mod tests { ... }` blocks.
fn test_lines(text: &str, whole_file: bool) -> Vec<(usize, &str)> {
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(n, l)| (n + 1, l)).collect();
    if whole_file {
        return lines;
    }
    let mut out = Vec::new();
    let mut close: Option<String> = None;
    for &(n, line) in &lines {
        match &close {
            Some(end) => {
                out.push((n, line));
                if line == end {
                    close = None;
                }
            }
            None => {
                let code = line.trim_start();
                if code.starts_with("mod tests") && code.trim_end().ends_with('{') {
                    let indent = &line[..line.len() - code.len()];
                    close = Some(format!("{indent}}}"));
                    out.push((n, line));
                }
            }
        }
    }
    out
}

/// The name of the function a line declares, if any (`fn name`, after any
/// `pub`, `async`, `unsafe` qualifiers).
fn fn_name(line: &str) -> Option<&str> {
    let code = line.trim_start();
    let at = code.find("fn ")?;
    let head = &code[..at];
    let qualifiers_only = head.split_whitespace().all(|w| {
        matches!(
            w,
            "pub" | "pub(crate)" | "pub(super)" | "async" | "unsafe" | "const"
        )
    });
    if !qualifiers_only {
        return None;
    }
    let rest = &code[at + 3..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The ids among `defined` that the test code of a file cites literally or
/// names in a function name (`whole_file`: see [`test_lines`]).
fn tested_ids(text: &str, whole_file: bool, defined: &BTreeSet<&str>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (_, line) in test_lines(text, whole_file) {
        found.extend(ids_in_line(line));
        if let Some(name) = fn_name(line) {
            for id in defined {
                if name_has(name, &snake(id)) {
                    found.insert((*id).to_owned());
                }
            }
        }
    }
    found
}

// ---- the problems ----

/// Ids defined more than once.
fn duplicate_problems(file: &str, defined: &[(usize, String)]) -> Vec<String> {
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for (n, id) in defined {
        if let Some(prev) = first.insert(id, *n) {
            problems.push(format!(
                "{file}:{n}: {id} is defined twice (also at line {prev})"
            ));
        }
    }
    problems
}

/// Check 1: ids cited in `f` but not defined.
fn undefined_problems(f: &File, defined: &BTreeSet<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    for (n, line) in f.text.lines().enumerate() {
        for id in ids_in_line(line) {
            if !defined.contains(id.as_str()) {
                problems.push(format!(
                    "{}:{}: {id} is cited but not defined in {SEMANTICS}",
                    f.path,
                    n + 1
                ));
            }
        }
    }
    problems
}

/// Check 2: defined ids no test cites (unless [`PENDING_TESTS`] excuses
/// them), and excuses for ids that are not defined.
fn untested_problems(defined: &[(usize, String)], tested: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for (n, id) in defined {
        if !tested.contains(id) && !pending_ids().any(|p| p == id) {
            problems.push(format!(
                "{SEMANTICS}:{n}: {id} is not checked by any test (cite it in test code or name a test {}_...)",
                snake(id)
            ));
        }
    }
    for id in pending_ids() {
        if !defined.iter().any(|(_, d)| d == id) {
            problems.push(format!(
                "{THIS_FILE}: PENDING_TESTS lists {id}, which {SEMANTICS} does not define"
            ));
        }
    }
    problems
}

/// [`PENDING_TESTS`] entries whose id a test now cites, with the line of
/// their definition.
fn stale_pending(defined: &[(usize, String)], tested: &BTreeSet<String>) -> Vec<(usize, String)> {
    defined
        .iter()
        .filter(|(_, id)| tested.contains(id) && pending_ids().any(|p| p == id))
        .cloned()
        .collect()
}

/// Check 3: `STYLE S<n>` citations of `f` that `docs/style.md` does not
/// define.
fn style_problems(f: &File, defined: &BTreeSet<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    if f.path == STYLE {
        return problems;
    }
    for (n, line) in f.text.lines().enumerate() {
        for id in style_ids_in_line(line) {
            if !defined.contains(id.as_str()) {
                problems.push(format!(
                    "{}:{}: STYLE {id} is cited but not defined in {STYLE}",
                    f.path,
                    n + 1
                ));
            }
        }
    }
    problems
}

/// Check 4: text in `f` that points outside the repository.
/// Check 5: the tests the spec names, each a function of the workspace.
fn named_test_problems(semantics: &str, sources: &[File]) -> Vec<String> {
    let mut fns = BTreeSet::new();
    for f in sources.iter().filter(|f| f.path.ends_with(".rs")) {
        for line in f.text.lines() {
            if let Some(name) = fn_name(line) {
                fns.insert(name.to_owned());
            }
        }
    }
    let mut problems = Vec::new();
    for (i, line) in semantics.lines().enumerate() {
        for name in test_names_in_line(line) {
            if !fns.contains(name) {
                problems.push(format!(
                    "{SEMANTICS}:{}: names the test `{name}`, which no .rs file defines (renamed?)",
                    i + 1
                ));
            }
        }
    }
    problems
}

/// The backticked names on a line that have a test name's shape: lower
/// snake case with at least three underscores.
fn test_names_in_line(line: &str) -> Vec<&str> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            w.matches('_').count() >= 3
                && w.starts_with(|c: char| c.is_ascii_lowercase())
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .collect()
}

/// The absolute path of the directory holding the checkout, with a
/// trailing `/` (`None` at the file system's root): a file naming it sends
/// the reader to the machine the repository was written on.
fn beside_checkout() -> Option<String> {
    let parent = root().parent()?.to_str()?.trim_end_matches('/').to_owned();
    (!parent.is_empty()).then(|| format!("{parent}/"))
}

fn outside_problems(f: &File, beside: Option<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    for (n, line) in f.text.lines().enumerate() {
        let found = OUTSIDE
            .iter()
            .copied()
            .chain(beside)
            .find(|p| line.contains(*p));
        if let Some(pattern) = found {
            problems.push(format!(
                "{}:{}: points outside the repository (`{pattern}`): cite the project's own docs/ instead",
                f.path,
                n + 1
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_with_their_families_and_word_boundaries() {
        assert_eq!(
            ids_in_line("see R-S6, (D-3, D-17), P-08 and REF-19."),
            ["R-S6", "D-3", "D-17", "P-08", "REF-19"]
        );
        assert_eq!(ids_in_line("D-6(1) and D-1(c)"), ["D-6", "D-1"]);
        assert_eq!(ids_in_line("**R-CO5**"), ["R-CO5"]);
        // Not ids: inside a word, another family, no digits, R without letters.
        assert!(ids_in_line("AA-R1 SR1 PID-1 x_D-2 UTF-8 D-Bus R-1 R-s6").is_empty());
    }

    #[test]
    fn ranges_cite_every_id_between() {
        assert_eq!(
            ids_in_line("(R-AU1..R-AU4)"),
            ["R-AU1", "R-AU2", "R-AU3", "R-AU4"]
        );
        assert_eq!(ids_in_line("R-TG1 .. R-TG3"), ["R-TG1", "R-TG2", "R-TG3"]);
        assert_eq!(ids_in_line("P-08 … P-10"), ["P-08", "P-09", "P-10"]);
        // Different prefixes or a descending pair are two plain citations.
        assert_eq!(ids_in_line("R-S1..R-C2"), ["R-S1", "R-C2"]);
        assert_eq!(ids_in_line("D-9..D-3"), ["D-9", "D-3"]);
    }

    #[test]
    fn style_citations_take_lists() {
        assert_eq!(style_ids_in_line("(STYLE S13, S26)"), ["S13", "S26"]);
        assert_eq!(style_ids_in_line("// STYLE S5: typed"), ["S5"]);
        assert_eq!(style_ids_in_line("STYLE S5 and S20"), ["S5", "S20"]);
        assert!(style_ids_in_line("the STYLE note, Section 2").is_empty());
    }

    #[test]
    fn definitions_are_bold_list_entries() {
        let doc = "# R-S1 in a heading\n- **R-S6** Waits.\n  - **D-1** nested\n- **Note** x\n- **REF-4** At once.\n";
        assert_eq!(
            definitions(doc, is_rule_id),
            [(2, "R-S6".to_owned()), (5, "REF-4".to_owned())]
        );
        let style = "- **S13** Confine unsafe.\n- **S1x** no\n";
        assert_eq!(definitions(style, is_style_id), [(1, "S13".to_owned())]);
    }

    #[test]
    fn snake_forms_match_whole_name_parts() {
        assert_eq!(snake("R-S6"), "r_s6");
        assert_eq!(snake("R-CO7"), "r_co7");
        assert_eq!(snake("D-16"), "d16");
        assert_eq!(snake("P-08"), "p08");
        assert_eq!(snake("REF-19"), "ref19");
        assert!(name_has("r_s6_await_completion", "r_s6"));
        assert!(name_has("fifo_r_s3_d8_cancel", "d8"));
        assert!(name_has("race_does_not_cancel_d7", "d7"));
        assert!(!name_has("r_s10_zombies", "r_s1"));
        assert!(!name_has("d11_self_cancel", "d1"));
        assert!(!name_has("add16_x", "d16"));
    }

    #[test]
    fn test_code_is_a_tests_directory_or_a_mod_tests_block() {
        let src = "fn f() {} // R-S1\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn r_s6_x() {}\n}\nfn g() {} // R-S2\n";
        let defined: BTreeSet<&str> = ["R-S1", "R-S2", "R-S6"].into();
        assert_eq!(tested_ids(src, false, &defined), ["R-S6".to_owned()].into());
        assert_eq!(tested_ids(src, true, &defined).len(), 3);
        // The workspace's crates: `tests/` is one (the suite), `x` another.
        let crates = |dir: &str| dir == "tests" || dir == "x";
        assert!(in_tests_dir("tests/tests/scope/x.rs", crates));
        assert!(in_tests_dir("x/tests/a/b.rs", crates));
        assert!(!in_tests_dir("tests/src/support/mod.rs", crates));
        assert!(!in_tests_dir("tests/build.rs", crates));
        assert!(!in_tests_dir("x/src/tests.rs", crates));
    }

    #[test]
    fn test_names_are_backticked_snake_case_with_three_underscores() {
        let line = "*Tests:* `d26_a_b_c`, `await_completion`, `ScopeRef::a_b_c_d`, `r_s6_x_y`.";
        assert_eq!(test_names_in_line(line), ["d26_a_b_c", "r_s6_x_y"]);
    }

    #[test]
    fn fn_names_skip_calls_and_comments() {
        assert_eq!(fn_name("    pub(crate) fn d16_x() {"), Some("d16_x"));
        assert_eq!(fn_name("fn r_s6_y()"), Some("r_s6_y"));
        assert_eq!(fn_name("    // the fn d16_x below"), None);
        assert_eq!(fn_name("    let f = |x| x; // fn"), None);
    }

    #[test]
    fn outside_paths_are_flagged_but_system_paths_and_own_docs_are_not() {
        let file = |text: &str| File {
            path: "README.md".into(),
            text: text.into(),
        };
        let beside = Some("/srv/checkouts/");
        let outside = [
            "see /srv/checkouts/shared/x",
            "../shared/a",
            "the SEMANTICS.md rules",
            "STYLE.md S1",
        ];
        for text in outside {
            assert_eq!(outside_problems(&file(text), beside).len(), 1, "{text}");
        }
        let fine = "/tmp/x /proc/self /dev/null /usr/lib docs/semantics.md docs/style.md";
        assert!(outside_problems(&file(fine), beside).is_empty());
    }
}
