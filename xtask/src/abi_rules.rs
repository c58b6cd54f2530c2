//! `cargo xtask check-abi-rules`: the rules of `docs/abi/*.md` and the
//! conformance cases cite each other.
//!
//! A rule is defined in a page as a list item or paragraph that starts with
//! its anchor and bold id, `<a id="r-timer-2"></a>**R-TIMER-2**` (the kit's
//! failures link to `docs/abi/timer.md#r-timer-2`), says the ABI minor that
//! introduced it after `*Since:*` (`*Since:* 1.0.`, or `*Since:* 1.0;
//! tightened in 1.1 (what 1.0 required).`), and names the cases that check
//! it after `*Cases:*` (case function names in backticks). A case cites its
//! rules in the kit's case list (`tests/src/conformance/mod.rs`,
//! `case_name ["R-TIMER-2", ...]`). The check fails, listing every
//! problem, unless:
//!
//! - every case cites at least one rule, and every id it cites is defined;
//! - every rule is defined once, with its anchor and its `*Since:*`, and
//!   cited by at least one case;
//! - a rule's `*Cases:*` are exactly the cases that cite it;
//! - every rule id written anywhere in `docs/abi/` or in the kit's sources
//!   is defined;
//! - the kit's copy of the rules (`tests/src/conformance/rules.rs`, between
//!   its `BEGIN RULES` and `END RULES` lines: page, minors, text, which the
//!   kit quotes in a failure and uses to pick the rules of a plugin's
//!   minor) is what the pages say; `cargo xtask check-abi-rules --bless`
//!   rewrites it;
//! - every assertion of the kit's tiers is a rule assertion
//!   (`ensure!`, `ensure_eq!`, `ensure_ne!`, `rule_failed!`, `violated(...)`) whose first
//!   argument is the id of a defined rule, and no tier file asserts with
//!   a bare `assert!`, `assert_eq!`, `assert_ne!` (a failure that names no
//!   rule says nothing about what to fix), nor with `panic!`: what the
//!   reactor did wrong is a `rule_failed!`, and a failure of the kit's own
//!   setup (a system call the case makes for itself) is a `setup_failed!`,
//!   which says "could not set up the case" and judges no rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::cmd::root;

const CASE_LIST: &str = "tests/src/conformance/mod.rs";

/// The kit's copy of the rules.
const RULE_TABLE: &str = "tests/src/conformance/rules.rs";
const TABLE_BEGIN: &str = "// BEGIN RULES (cargo xtask check-abi-rules --bless)\n";
const TABLE_END: &str = "// END RULES\n";

/// The kit's files that are not tiers: they may assert with `assert!` and
/// `panic!` (their checks are the harness's own, H1-H4, the runner's, or
/// that a system call the case made for itself worked).
const NOT_TIERS: [&str; 8] = [
    "harness.rs",
    "requests.rs",
    "kit.rs",
    "mod.rs",
    "plugin.rs",
    "rules.rs",
    "fds.rs",
    "os.rs",
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        None => {}
        Some("--bless") if args.len() == 1 => {
            bless()?;
            println!("xtask: check-abi-rules: wrote the rule table of {RULE_TABLE}");
        }
        Some(a) => return Err(format!("unknown check-abi-rules argument \"{a}\"")),
    }
    let (rules, cases) = check()?;
    println!(
        "xtask: check-abi-rules: {rules} rules in docs/abi, {cases} cases, all cited both ways"
    );
    Ok(())
}

/// One rule's definition.
struct Rule {
    page: String,
    cases: BTreeSet<String>,
    /// The minor that introduced it.
    since: Option<u16>,
    /// The minor that tightened it, and what the earlier minor required.
    tightened: Option<(u16, String)>,
    /// The rule's text, up to `*Since:*`, on one line.
    text: String,
}

/// Every rule of `docs/abi/*.md`, by id (a duplicate is a problem).
fn rules_of_docs(problems: &mut Vec<String>) -> Result<BTreeMap<String, Rule>, String> {
    let docs = root().join("docs/abi");
    let mut pages: Vec<_> = std::fs::read_dir(&docs)
        .map_err(|e| format!("cannot read {}: {e}", docs.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    let mut rules = BTreeMap::new();
    for page in &pages {
        let text = read(page)?;
        let name = format!("docs/abi/{}", page.file_name().unwrap().to_string_lossy());
        for (id, anchor, body) in definitions(&text) {
            let cases = cases_after_marker(&body);
            if cases.is_empty() {
                problems.push(format!("{name}: {id} names no case after *Cases:*"));
            }
            if anchor.as_deref() != Some(id.to_ascii_lowercase().as_str()) {
                problems.push(format!(
                    "{name}: {id} does not start with its anchor <a id=\"{}\"></a>",
                    id.to_ascii_lowercase()
                ));
            }
            let (since, tightened, text) = since_of(&body);
            if since.is_none() {
                problems.push(format!(
                    "{name}: {id} does not say the minor that introduced it (*Since:* 1.N.)"
                ));
            }
            let rule = Rule {
                page: name.clone(),
                cases,
                since,
                tightened,
                text,
            };
            if let Some(old) = rules.insert(id.clone(), rule) {
                problems.push(format!("{id} is defined twice ({} and {name})", old.page));
            }
        }
    }
    Ok(rules)
}

/// `(since, tightened, text)` of a rule's body: the minor after
/// `*Since:* 1.`, the minor after `tightened in 1.` with the parenthesis
/// after it (what the earlier minor required), and the text before
/// `*Since:*` on one line.
fn since_of(body: &str) -> (Option<u16>, Option<(u16, String)>, String) {
    let flat = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = flat.find("**").map_or(0, |i| i);
    let flat = &flat[start..];
    let Some((before, after)) = flat.split_once("*Since:*") else {
        return (None, None, flat.to_owned());
    };
    let text = before
        .trim_start_matches("**")
        .split_once("**")
        .map_or(before, |(_, t)| t)
        .trim()
        .to_owned();
    let minor = |s: &str| -> Option<u16> {
        let digits: String = s
            .trim_start()
            .strip_prefix("1.")?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let since = minor(after);
    let tightened = after.split_once("tightened in ").and_then(|(_, t)| {
        let m = minor(t)?;
        let earlier = t.split_once('(').map_or("", |(_, e)| e);
        // The parenthesis closes where the nesting returns to zero.
        let mut depth = 1;
        let mut end = earlier.len();
        for (i, c) in earlier.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        Some((m, earlier[..end].trim().to_owned()))
    });
    (since, tightened, text)
}

/// The kit's rule table as `docs/abi` defines it (Rust source).
fn table_source(rules: &BTreeMap<String, Rule>) -> String {
    let mut out = String::from(TABLE_BEGIN);
    out.push_str("/// Every rule of `docs/abi/`, by id (generated: see the module doc).\n");
    out.push_str("pub const RULES: &[RuleDoc] = &[\n");
    for (id, rule) in rules {
        let (tightened, earlier) = match &rule.tightened {
            Some((m, e)) => (format!("Some({m})"), e.as_str()),
            None => ("None".to_owned(), ""),
        };
        out.push_str(&format!(
            "    RuleDoc {{\n        id: {id:?},\n        page: {:?},\n        since: {},\n        \
             tightened: {tightened},\n        text: {:?},\n        earlier: {earlier:?},\n    }},\n",
            rule.page.trim_start_matches("docs/abi/"),
            rule.since.unwrap_or(0),
            rule.text,
        ));
    }
    out.push_str("];\n");
    out.push_str(TABLE_END);
    out
}

/// The table block of `rules.rs`: `(before, block, after)`.
fn table_block(text: &str) -> Result<(&str, &str, &str), String> {
    let b = text
        .find(TABLE_BEGIN)
        .ok_or_else(|| format!("{RULE_TABLE}: no line {:?}", TABLE_BEGIN.trim_end()))?;
    let e = text[b..]
        .find(TABLE_END)
        .map(|e| b + e + TABLE_END.len())
        .ok_or_else(|| format!("{RULE_TABLE}: no line {:?}", TABLE_END.trim_end()))?;
    Ok((&text[..b], &text[b..e], &text[e..]))
}

/// `--bless`: rewrites the kit's rule table from the pages.
fn bless() -> Result<(), String> {
    let mut problems = Vec::new();
    let rules = rules_of_docs(&mut problems)?;
    let path = root().join(RULE_TABLE);
    let text = read(&path)?;
    let (before, _, after) = table_block(&text)?;
    let fresh = format!("{before}{}{after}", table_source(&rules));
    std::fs::write(&path, fresh).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A bare assertion or panic: its line and the macro (`assert_eq!`).
type Bare = (usize, &'static str);

/// The rule assertions of a tier's source and the bare assertions left:
/// `(line, rule id or "")` for each `ensure!(`, `ensure_eq!(`,
/// `ensure_ne!(`, `rule_failed!(`, `violated(`; and the lines of `assert!(`, `assert_eq!(`,
/// `assert_ne!(`, `panic!(` with the macro's name (comments skipped).
fn assertions(text: &str) -> (Vec<(usize, String)>, Vec<Bare>) {
    // Comments blanked, lines kept: a call's first argument may be on the
    // next line (rustfmt puts it there).
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let line_of = |i: usize| code[..i].matches('\n').count() + 1;
    let starts_call = |i: usize| {
        !code[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let mut rule_calls = Vec::new();
    let mut bare = Vec::new();
    for call in [
        "ensure!(",
        "ensure_eq!(",
        "ensure_ne!(",
        "rule_failed!(",
        "violated(",
    ] {
        for (i, _) in code.match_indices(call) {
            // `fn violated(` is the definition, not a call.
            if !starts_call(i) || code[..i].trim_end().ends_with("fn") {
                continue;
            }
            let arg = code[i + call.len()..].trim_start();
            let id = arg
                .strip_prefix('"')
                .and_then(|a| a.split_once('"'))
                .map(|(id, _)| id.to_owned())
                .unwrap_or_default();
            rule_calls.push((line_of(i), id));
        }
    }
    for bad in ["assert!(", "assert_eq!(", "assert_ne!(", "panic!("] {
        for (i, _) in code.match_indices(bad) {
            if starts_call(i) {
                bare.push((line_of(i), bad.trim_end_matches('(')));
            }
        }
    }
    rule_calls.sort();
    bare.sort_unstable();
    (rule_calls, bare)
}

/// The function whose body holds `line` (1-based): the nearest `fn name(`
/// at or above it.
fn enclosing_fn(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line)
        .collect::<Vec<_>>()
        .iter()
        .rev()
        .find_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix("pub fn ")
                .or_else(|| l.strip_prefix("fn "))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
}

/// Runs the check; returns the number of rules and of cases.
pub(crate) fn check() -> Result<(usize, usize), String> {
    let root = root();
    let mut problems = Vec::new();
    let rules = rules_of_docs(&mut problems)?;
    let mut mentions: Vec<(String, String)> = Vec::new();
    let docs = root.join("docs/abi");
    let mut pages: Vec<_> = std::fs::read_dir(&docs)
        .map_err(|e| format!("cannot read {}: {e}", docs.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    for page in &pages {
        let text = read(page)?;
        let name = format!("docs/abi/{}", page.file_name().unwrap().to_string_lossy());
        for id in rule_ids(&text) {
            mentions.push((name.clone(), id));
        }
    }
    let table = read(&root.join(RULE_TABLE))?;
    match table_block(&table) {
        Ok((_, block, _)) if block == table_source(&rules) => {}
        Ok(_) => problems.push(format!(
            "{RULE_TABLE}: the rule table differs from docs/abi (run `cargo xtask check-abi-rules \
             --bless` and commit it)"
        )),
        Err(e) => problems.push(e),
    }

    let list = read(&root.join(CASE_LIST))?;
    let cases = case_list(&list)?;
    let kit = root.join("tests/src/conformance");
    for entry in
        std::fs::read_dir(&kit).map_err(|e| format!("cannot read {}: {e}", kit.display()))?
    {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|x| x == "rs") {
            let text = read(&path)?;
            let shown = format!(
                "tests/src/conformance/{}",
                path.file_name().unwrap().to_string_lossy()
            );
            for id in rule_ids(&text) {
                mentions.push((shown.clone(), id));
            }
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            if !NOT_TIERS.contains(&file.as_str()) {
                let (calls, bare) = assertions(&text);
                for (line, id) in &calls {
                    // An assertion in a case's own body checks a rule the
                    // case cites, so the rule's page lists the case too.
                    let Some(f) = enclosing_fn(&text, *line) else {
                        continue;
                    };
                    let case = f;
                    if let Some(cited) = cases.get(&case) {
                        if !id.is_empty() && !cited.contains(id) {
                            problems.push(format!(
                                "{shown}:{line}: case {case} asserts {id} but does not cite it \
                                 (add it to the case's rules in {CASE_LIST} and the case to \
                                 {id}'s cases in docs/abi)"
                            ));
                        }
                    }
                }
                for (line, id) in calls {
                    if id.is_empty() {
                        problems.push(format!(
                            "{shown}:{line}: a rule assertion whose first argument is not a rule id \
                             in quotes"
                        ));
                    } else if !rules.contains_key(&id) {
                        problems.push(format!(
                            "{shown}:{line}: asserts {id}, which docs/abi does not define"
                        ));
                    }
                }
                for (line, bad) in bare {
                    problems.push(if bad == "panic!" {
                        format!(
                            "{shown}:{line}: a bare panic!: use rule_failed! with the rule the \
                             reactor broke, or setup_failed! if the kit's own setup failed"
                        )
                    } else {
                        format!(
                            "{shown}:{line}: a bare {bad}: use ensure!/ensure_eq!/ensure_ne! \
                             with the rule it checks"
                        )
                    });
                }
            }
        }
    }

    let mut cited_by: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (case, ids) in &cases {
        if ids.is_empty() {
            problems.push(format!("{CASE_LIST}: case {case} cites no rule"));
        }
        for id in ids {
            if !rules.contains_key(id) {
                problems.push(format!(
                    "{CASE_LIST}: case {case} cites {id}, which docs/abi does not define"
                ));
            }
            cited_by.entry(id).or_default().insert(case);
        }
    }
    for (id, rule) in &rules {
        let citing: BTreeSet<&str> = cited_by.get(id.as_str()).cloned().unwrap_or_default();
        if citing.is_empty() {
            problems.push(format!(
                "{}: {id} is cited by no case in {CASE_LIST}",
                rule.page
            ));
        }
        for case in &rule.cases {
            if !cases.contains_key(case) {
                problems.push(format!(
                    "{}: {id} names {case}, which is not a case",
                    rule.page
                ));
            } else if !citing.contains(case.as_str()) {
                problems.push(format!(
                    "{}: {id} names {case}, which does not cite it in {CASE_LIST}",
                    rule.page
                ));
            }
        }
        for case in citing {
            if !rule.cases.contains(case) {
                problems.push(format!(
                    "{}: {id} does not name {case}, which cites it",
                    rule.page
                ));
            }
        }
    }
    for (file, id) in mentions {
        if !rules.contains_key(&id) {
            problems.push(format!(
                "{file}: mentions {id}, which docs/abi does not define"
            ));
        }
    }
    if problems.is_empty() {
        Ok((rules.len(), cases.len()))
    } else {
        problems.sort();
        problems.dedup();
        Err(format!(
            "{} problem(s) between docs/abi and the conformance cases:\n  {}",
            problems.len(),
            problems.join("\n  ")
        ))
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Whether `s` starts with a rule id (`R-` then upper-case letters or
/// digits, `-`, digits); returns its length.
fn id_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("R-")?;
    let area = rest
        .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit()))
        .unwrap_or(rest.len());
    if area == 0 || !rest[..area].starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    let rest = rest[area..].strip_prefix('-')?;
    let num = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    if num == 0 {
        return None;
    }
    let after = rest[num..].chars().next();
    if after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(2 + area + 1 + num)
}

/// Every rule id written in `text`.
fn rule_ids(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("R-") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            continue;
        }
        if let Some(n) = id_len(&text[i..]) {
            out.push(text[i..i + n].to_owned());
        }
    }
    out
}

/// The rules a page defines: `**R-X-N**` at the start of a list item or a
/// paragraph (after its anchor `<a id="r-x-n"></a>`, returned too), with
/// the text up to the next item, blank line or heading.
fn definitions(text: &str) -> Vec<(String, Option<String>, String)> {
    let mut out: Vec<(String, Option<String>, String)> = Vec::new();
    let mut current: Option<(String, Option<String>, String)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let item = t.strip_prefix("- ").unwrap_or(t);
        let (anchor, item) = match item
            .strip_prefix("<a id=\"")
            .and_then(|r| r.split_once("\"></a>"))
        {
            Some((anchor, rest)) => (Some(anchor.to_owned()), rest),
            None => (None, item),
        };
        let starts = item
            .strip_prefix("**")
            .and_then(|rest| id_len(rest).map(|n| (rest, n)))
            .filter(|(rest, n)| rest[*n..].starts_with("**"));
        if let Some((rest, n)) = starts {
            out.extend(current.take());
            current = Some((rest[..n].to_owned(), anchor, line.to_owned()));
        } else if t.is_empty() || t.starts_with('#') || t.starts_with("- ") {
            out.extend(current.take());
        } else if let Some((_, _, body)) = current.as_mut() {
            body.push('\n');
            body.push_str(line);
        }
    }
    out.extend(current);
    out
}

/// The backticked names after `*Cases:*` in a rule's text.
fn cases_after_marker(body: &str) -> BTreeSet<String> {
    let Some((_, tail)) = body.split_once("*Cases:*") else {
        return BTreeSet::new();
    };
    tail.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// `case -> cited ids` from the kit's case list.
fn case_list(text: &str) -> Result<BTreeMap<String, Vec<String>>, String> {
    let start = text
        .find("macro_rules! __conformance_case_list")
        .ok_or_else(|| format!("{CASE_LIST}: no __conformance_case_list macro"))?;
    let end = text[start..]
        .find("\n}\n")
        .map(|e| start + e)
        .ok_or_else(|| format!("{CASE_LIST}: the case list macro does not end"))?;
    let mut out = BTreeMap::new();
    for line in text[start..end].lines() {
        let t = line.trim();
        let Some((name, rest)) = t.split_once(" [") else {
            continue;
        };
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            continue;
        }
        let ids = rest
            .trim_end_matches(',')
            .trim_end_matches(']')
            .split(',')
            .map(|s| s.trim().trim_matches('"').to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        if out.insert(name.to_owned(), ids).is_some() {
            return Err(format!("{CASE_LIST}: case {name} is listed twice"));
        }
    }
    if out.is_empty() {
        return Err(format!("{CASE_LIST}: no case found in the case list"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_definitions_ids_and_cases() {
        let page = "# T\n\n- <a id=\"r-timer-1\"></a>**R-TIMER-1** Due timers fire in order.\n  *Since:* 1.0; tightened in 1.1 (1.0 required (some) order). *Cases:* `a_case`,\n  `b_case`.\n- **R-TIMER-2** Ties. *Since:* 1.1. *Cases:* `c`.\n\nSee R-TIMER-1 and AA-R8, not XR-A-1.\n";
        let defs = definitions(page);
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0].0, "R-TIMER-1");
        assert_eq!(defs[0].1.as_deref(), Some("r-timer-1"));
        assert_eq!(defs[1].1, None);
        let (since, tightened, text) = since_of(&defs[0].2);
        assert_eq!(since, Some(0));
        assert_eq!(tightened, Some((1, "1.0 required (some) order".to_owned())));
        assert_eq!(text, "Due timers fire in order.");
        assert_eq!(since_of(&defs[1].2).0, Some(1));
        let cases: Vec<_> = cases_after_marker(&defs[0].2).into_iter().collect();
        assert_eq!(cases, ["a_case", "b_case"]);
        let src = "ensure!(\"R-IO-1\", x);\n// assert!(no)\nassert_eq!(a, b);\nfn violated(\nensure_eq!(rule, a, b);\npanic!(\"x\");\nsetup_failed!(\"mmap\");\nstd::panic!(\"y\");\n";
        let (calls, bare) = assertions(src);
        assert_eq!(calls, [(1, "R-IO-1".to_owned()), (5, String::new())]);
        assert_eq!(bare, [(3, "assert_eq!"), (6, "panic!"), (8, "panic!")]);
        assert_eq!(rule_ids(page), ["R-TIMER-1", "R-TIMER-2", "R-TIMER-1"]);
        let list = "macro_rules! __conformance_case_list {\n    timers {\n        a_case [\"R-TIMER-1\", \"R-IO-3\"],\n        b_case [],\n    }\n}\n";
        let cases = case_list(list).unwrap();
        assert_eq!(cases["a_case"], ["R-TIMER-1", "R-IO-3"]);
        assert!(cases["b_case"].is_empty());
    }

    #[test]
    fn an_assertion_belongs_to_the_function_around_it() {
        let src = "pub fn case_a(r: &R) {\n    ensure!(\"R-IO-1\", x);\n}\n\nfn helper() {\n    ensure!(\"R-IO-2\", y);\n}\n";
        assert_eq!(enclosing_fn(src, 2).as_deref(), Some("case_a"));
        assert_eq!(enclosing_fn(src, 6).as_deref(), Some("helper"));
        assert_eq!(enclosing_fn("ensure!(x);", 1), None);
    }
}
