//! The host's layers (ARCHITECTURE.md, "The host's layers"), enforced by
//! `cargo xtask check-arch`.
//!
//! `async-std-api/src` is three layers, bottom up, and a root:
//!
//! | layer | modules | may import from |
//! |---|---|---|
//! | core | `core::*` | the core |
//! | structured | `structured::*` | the core, the structured layer |
//! | surfaces | every other top-level module (`time`, `signal`, `net`, `io`, ...) | the core, the structured layer, the surfaces |
//! | root | `lib.rs` | anything (it only re-exports) |
//!
//! What counts as an import: every `crate::...` path and every `super::...`
//! path (resolved against the file's module) in code, outside comments and
//! string literals, so doc links may point anywhere. A path through the
//! crate root's re-exports (`crate::Cancelled`) is refused outside
//! `lib.rs`: code names the module that defines what it uses, so the layer
//! of every import is visible.

use std::path::{Path, PathBuf};

/// Where the host's sources are, relative to the workspace root.
pub(crate) const HOST_SRC: &str = "async-std-api/src";

/// The top-level modules that are layers; the others are surfaces.
const CORE: &str = "core";
const STRUCTURED: &str = "structured";

/// A layer, ordered bottom up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    Core,
    Structured,
    Surface,
    Root,
}

impl Layer {
    fn name(self) -> &'static str {
        match self {
            Layer::Core => "the core",
            Layer::Structured => "the structured layer",
            Layer::Surface => "a surface",
            Layer::Root => "the crate root",
        }
    }
}

/// The layer of a module path (its segments below the crate root).
fn layer_of(module: &[String]) -> Layer {
    match module.first().map(String::as_str) {
        None => Layer::Root,
        Some(CORE) => Layer::Core,
        Some(STRUCTURED) => Layer::Structured,
        Some(_) => Layer::Surface,
    }
}

/// Every layer problem in the host's sources, one line each.
pub(crate) fn problems(root: &Path) -> Result<Vec<String>, String> {
    let src = root.join(HOST_SRC);
    let files = rust_files(&src)?;
    let top_modules = top_level_modules(&src, &files);
    let mut out = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let rel = file.strip_prefix(root).unwrap_or(file);
        let module = module_of(&src, file);
        for (line, target) in imports(&text, &module) {
            if let Some(p) = check(&module, &target, &top_modules) {
                out.push(format!("{}:{line}: {p}", rel.display()));
            }
        }
    }
    Ok(out)
}

/// Why importing `target` from `module` breaks the layer rule, if it does.
fn check(module: &[String], target: &[String], top_modules: &[String]) -> Option<String> {
    let from = layer_of(module);
    if from == Layer::Root {
        return None;
    }
    let Some(first) = target.first() else {
        return Some("imports the crate root itself".into());
    };
    if !top_modules.contains(first) {
        return Some(format!(
            "imports `crate::{}` through the crate root's re-export: name the module that defines it",
            target.join("::")
        ));
    }
    let to = layer_of(target);
    let allowed = match from {
        Layer::Core => to == Layer::Core,
        Layer::Structured => to <= Layer::Structured,
        Layer::Surface => to <= Layer::Surface,
        Layer::Root => true,
    };
    (!allowed).then(|| {
        format!(
            "{} imports `crate::{}` from {}: a layer imports only from those below it",
            from.name(),
            target.join("::"),
            to.name()
        )
    })
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|e| format!("cannot read {}: {e}", d.display()))?;
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The crate's top-level modules (what `crate::<name>` may start with).
fn top_level_modules(src: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = files
        .iter()
        .filter_map(|f| module_of(src, f).into_iter().next())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The module path of a source file: `core/state.rs` is `core::state`,
/// `net/mod.rs` is `net`, `lib.rs` is the root.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_owned());
        }
    }
    parts
}

/// Every import of a file: (line number, target module path), with
/// `super::` resolved against the module it appears in (the file's module,
/// plus any inline `mod name { .. }` it is nested in).
fn imports(text: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let code = strip_comments_and_strings(text);
    let mut out = Vec::new();
    // Inline modules open at the current line: (name, brace depth inside).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    for (i, line) in code.lines().enumerate() {
        let line_no = i + 1;
        let mut here: Vec<String> = module.to_vec();
        here.extend(inline.iter().map(|(n, _)| n.clone()));
        for path in crate_paths(line) {
            out.push((line_no, path));
        }
        for (ups, rest) in super_paths(line) {
            if ups > here.len() {
                continue;
            }
            let mut target: Vec<String> = here[..here.len() - ups].to_vec();
            target.extend(rest);
            out.push((line_no, target));
        }
        let opens = inline_mod_name(line);
        for c in line.chars() {
            match c {
                '{' => {
                    depth += 1;
                    if let Some(name) = &opens {
                        if inline.last().is_none_or(|(_, d)| *d < depth) {
                            inline.push((name.clone(), depth));
                        }
                    }
                }
                '}' => {
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
        }
    }
    out
}

/// The name of an inline module opened on this line (`mod tests {`).
fn inline_mod_name(line: &str) -> Option<String> {
    let at = find_word(line, "mod ")?;
    let rest = line[at + 4..].trim_start();
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let after = rest[name.len()..].trim_start();
    (!name.is_empty() && after.starts_with('{')).then_some(name)
}

/// The `crate::...` paths on a line, each as its segments (a
/// `crate::{a::b, c}` group gives one path per member).
fn crate_paths(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = find_word(rest, "crate::") {
        let after = &rest[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let end = matching_brace(group).unwrap_or(group.len());
            for member in split_top_level(&group[..end]) {
                let segs = segments(&member);
                if !segs.is_empty() {
                    out.push(segs);
                }
            }
            rest = &group[end.min(group.len())..];
        } else {
            out.push(segments(after));
            rest = after;
        }
    }
    out
}

/// The `super::...` paths on a line: how many `super`s, then the rest.
fn super_paths(line: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = find_word(rest, "super::") {
        let mut after = &rest[at..];
        let mut ups = 0;
        while let Some(r) = after.strip_prefix("super::") {
            ups += 1;
            after = r;
        }
        if let Some(group) = after.strip_prefix('{') {
            let end = matching_brace(group).unwrap_or(group.len());
            for member in split_top_level(&group[..end]) {
                out.push((ups, segments(&member)));
            }
            rest = &group[end.min(group.len())..];
        } else {
            out.push((ups, segments(after)));
            rest = after;
        }
    }
    out
}

/// The position of `word` in `s` where it is not the tail of an identifier
/// (`mycrate::` is not `crate::`).
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(word) {
        let at = from + i;
        let before = s[..at].chars().next_back();
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The module segments at the start of a path (`a::b::Item` gives `a`,
/// `b`, `Item`; a following group or glob ends it).
fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for seg in path.split("::") {
        let ident: String = seg
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() || ident == "self" {
            break;
        }
        let complete = seg.trim_start().len() == ident.len();
        out.push(ident);
        if !complete {
            break;
        }
    }
    out
}

/// The index of the `}` closing a group whose `{` was just consumed.
fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The members of a `{a, b::{c, d}}` group, split at top-level commas.
fn split_top_level(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The text with comments (line, doc and block) and the contents of
/// string and character literals blanked out, keeping the line structure
/// (so line numbers stay true). Raw strings are treated as plain strings:
/// the host has none that matter here.
fn strip_comments_and_strings(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut block_depth = 0usize;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if block_depth > 0 {
            if c == '*' && next == Some('/') {
                block_depth -= 1;
                i += 2;
            } else if c == '/' && next == Some('*') {
                block_depth += 1;
                i += 2;
            } else {
                if c == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            continue;
        }
        match (c, next) {
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                block_depth = 1;
                i += 2;
            }
            ('"', _) => {
                out.push('"');
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    } else if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
                out.push('"');
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(path: &str) -> Vec<String> {
        if path.is_empty() {
            Vec::new()
        } else {
            path.split("::").map(str::to_owned).collect()
        }
    }

    fn tops() -> Vec<String> {
        ["core", "structured", "net", "time"]
            .map(str::to_owned)
            .to_vec()
    }

    #[test]
    fn paths_in_code_are_found_and_comments_and_strings_are_not() {
        let text = "use crate::core::state::CoroState;\n\
                    use crate::{core::wait::checkpoint, structured::scope::Scope};\n\
                    /// [`x`](crate::structured::run)\n\
                    // crate::time::delay\n\
                    let s = \"crate::net::TcpStream\";\n\
                    /* crate::net\n more */ let y = super::super::time::delay(1);\n";
        let got = imports(text, &m("core::state"));
        assert_eq!(
            got,
            vec![
                (1, m("core::state::CoroState")),
                (2, m("core::wait::checkpoint")),
                (2, m("structured::scope::Scope")),
                (7, m("time::delay")),
            ]
        );
    }

    #[test]
    fn a_lower_layer_importing_a_higher_one_is_refused() {
        let t = tops();
        assert!(check(&m("core::state"), &m("core::wait"), &t).is_none());
        assert!(check(&m("structured::scope"), &m("core::state"), &t).is_none());
        assert!(check(&m("time"), &m("structured::combinators"), &t).is_none());
        assert!(check(&m("net::tcp"), &m("time"), &t).is_none());
        assert!(check(&m(""), &m("structured::run"), &t).is_none());
        let up = check(&m("core::state"), &m("structured::scope::state"), &t).unwrap();
        assert_eq!(
            up,
            "the core imports `crate::structured::scope::state` from the structured layer: a \
             layer imports only from those below it"
        );
        assert!(check(&m("structured::combinators"), &m("time::Timeout"), &t).is_some());
        let root = check(&m("core::cancel"), &m("Cancelled"), &t).unwrap();
        assert!(root.contains("re-export"), "{root}");
    }

    #[test]
    fn super_in_an_inline_module_resolves_from_it() {
        let text =
            "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::f;\n}\nuse super::g;\n";
        let got = imports(text, &m("time"));
        assert_eq!(got, vec![(4, m("time::f")), (6, m("g"))]);
    }

    #[test]
    fn module_paths_follow_the_file_tree() {
        let src = Path::new("/x/src");
        assert_eq!(module_of(src, Path::new("/x/src/lib.rs")), m(""));
        assert_eq!(module_of(src, Path::new("/x/src/net/mod.rs")), m("net"));
        assert_eq!(
            module_of(src, Path::new("/x/src/structured/scope/state.rs")),
            m("structured::scope::state")
        );
    }
}
