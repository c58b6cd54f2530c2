//! `cargo xtask check-abi-rules`: the rules of `docs/abi/*.md` and the
//! conformance cases cite each other.
//!
//! A rule is defined in a page as a list item or paragraph that starts with
//! its bold id, `**R-TIMER-2**`, and names the cases that check it after
//! `*Cases:*` (case function names in backticks). A case cites its rules in
//! the kit's case list (`tests/src/conformance/mod.rs`,
//! `case_name ["R-TIMER-2", ...]`). The check fails, listing every
//! problem, unless:
//!
//! - every case cites at least one rule, and every id it cites is defined;
//! - every rule is defined once and cited by at least one case;
//! - a rule's `*Cases:*` are exactly the cases that cite it;
//! - every rule id written anywhere in `docs/abi/` or in the kit's sources
//!   is defined.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::cmd::root;

const CASE_LIST: &str = "tests/src/conformance/mod.rs";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("unknown check-abi-rules argument \"{a}\""));
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
}

/// Runs the check; returns the number of rules and of cases.
pub(crate) fn check() -> Result<(usize, usize), String> {
    let root = root();
    let mut problems = Vec::new();
    let mut rules: BTreeMap<String, Rule> = BTreeMap::new();
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
        for (id, body) in definitions(&text) {
            let cases = cases_after_marker(&body);
            if cases.is_empty() {
                problems.push(format!("{name}: {id} names no case after *Cases:*"));
            }
            if let Some(old) = rules.insert(
                id.clone(),
                Rule {
                    page: name.clone(),
                    cases,
                },
            ) {
                problems.push(format!("{id} is defined twice ({} and {name})", old.page));
            }
        }
        for id in rule_ids(&text) {
            mentions.push((name.clone(), id));
        }
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
/// paragraph, with the text up to the next item, blank line or heading.
fn definitions(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let item = t.strip_prefix("- ").unwrap_or(t);
        let starts = item
            .strip_prefix("**")
            .and_then(|rest| id_len(rest).map(|n| (rest, n)))
            .filter(|(rest, n)| rest[*n..].starts_with("**"));
        if let Some((rest, n)) = starts {
            out.extend(current.take());
            current = Some((rest[..n].to_owned(), line.to_owned()));
        } else if t.is_empty() || t.starts_with('#') || t.starts_with("- ") {
            out.extend(current.take());
        } else if let Some((_, body)) = current.as_mut() {
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
        let page = "# T\n\n- **R-TIMER-1** Due timers fire in order.\n  *Cases:* `a_case`,\n  `b_case`.\n- **R-TIMER-2** Ties. *Cases:* `c`.\n\nSee R-TIMER-1 and AA-R8, not XR-A-1.\n";
        let defs = definitions(page);
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0].0, "R-TIMER-1");
        let cases: Vec<_> = cases_after_marker(&defs[0].1).into_iter().collect();
        assert_eq!(cases, ["a_case", "b_case"]);
        assert_eq!(rule_ids(page), ["R-TIMER-1", "R-TIMER-2", "R-TIMER-1"]);
        let list = "macro_rules! __conformance_case_list {\n    timers {\n        a_case [\"R-TIMER-1\", \"R-IO-3\"],\n        b_case [],\n    }\n}\n";
        let cases = case_list(list).unwrap();
        assert_eq!(cases["a_case"], ["R-TIMER-1", "R-IO-3"]);
        assert!(cases["b_case"].is_empty());
    }
}
