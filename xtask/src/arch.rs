//! `cargo xtask check-arch`: the architecture, enforced.
//!
//! 1. **Dependency rule** (ARCHITECTURE.md): `async-abi` depends on no crate
//!    of ours; the plugins (`async-scheduler`, `reactor-*`) depend on no crate
//!    of ours except `async-abi`, and the Rust reactors also on the reactor
//!    kit `reactor-sdk` (itself on `async-abi` only) (normal and build
//!    dependencies; a plugin's dev-dependencies are its own business); a
//!    `<plugin>-cdylib` package on `async-abi` and `<plugin>` only.
//!    And no package of ours depends, in any way, on a package that builds
//!    a cdylib: cargo names such a package's rlib without a hash, so a
//!    program depending on it and the runtime's own build would overwrite
//!    each other's copy in a shared target directory (E0308 in the
//!    program's next build); a cdylib is a leaf package of its own.
//! 2. **Unsafe inventory** (STYLE S13, S26): the list of source files that
//!    contain `unsafe` is committed in `xtask/unsafe-files.txt`; a new file
//!    with unsafe code (or a stale entry) fails until the list is reviewed and
//!    updated with `cargo xtask check-arch --bless`.
//! 3. **The host's layers** (`layers`): inside `async-std-api`, the core,
//!    the structured layer and the surfaces import only downwards.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::cmd::{cargo, root, run_capture};

const INVENTORY: &str = "xtask/unsafe-files.txt";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let bless = match args {
        [] => false,
        [flag] if flag == "--bless" => true,
        _ => return Err("usage: cargo xtask check-arch [--bless]".into()),
    };
    check(bless)?;
    eprintln!("xtask: architecture check passed");
    Ok(())
}

/// Runs both checks; with `bless`, rewrites the unsafe inventory instead of
/// comparing against it.
pub(crate) fn check(bless: bool) -> Result<(), String> {
    let meta = metadata()?;
    let mut problems = dependency_problems(&meta);
    problems.extend(unsafe_inventory_problems(&meta, bless)?);
    problems.extend(crate::layers::problems(&root())?);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn metadata() -> Result<Value, String> {
    let mut cmd = cargo();
    cmd.args(["metadata", "--format-version", "1", "--no-deps"]);
    let out = run_capture(cmd, "cargo metadata")?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cannot parse cargo metadata: {e}"))
}

fn packages(meta: &Value) -> impl Iterator<Item = &Value> {
    meta["packages"].as_array().into_iter().flatten()
}

/// Names of the integration-test targets (`tests/<name>/main.rs` or
/// `tests/<name>.rs`) of workspace package `package`, sorted.
pub(crate) fn test_targets(package: &str) -> Result<Vec<String>, String> {
    let meta = metadata()?;
    let mut names: Vec<String> = packages(&meta)
        .filter(|p| p["name"] == package)
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .filter(|t| {
            t["kind"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k == "test")
        })
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

/// Names of the workspace packages that build a cdylib (the plugins).
pub(crate) fn cdylib_packages() -> Result<Vec<String>, String> {
    let meta = metadata()?;
    Ok(packages(&meta)
        .filter(|p| builds_cdylib(p))
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect())
}

/// Whether package `p` (from `cargo metadata`) has a cdylib target.
fn builds_cdylib(p: &Value) -> bool {
    p["targets"].as_array().into_iter().flatten().any(|t| {
        t["crate_types"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|k| k == "cdylib")
    })
}

fn dependency_problems(meta: &Value) -> Vec<String> {
    let ours: BTreeSet<&str> = packages(meta).filter_map(|p| p["name"].as_str()).collect();
    let cdylibs: BTreeSet<&str> = packages(meta)
        .filter(|p| builds_cdylib(p))
        .filter_map(|p| p["name"].as_str())
        .collect();
    let mut problems = Vec::new();
    for p in packages(meta) {
        let name = p["name"].as_str().unwrap_or("");
        for dep in p["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or("");
            if cdylibs.contains(dep_name) {
                problems.push(format!(
                    "{name} must not depend on {dep_name}: it builds a cdylib, whose rlib cargo \
                     names without a hash (a dependent's build and the runtime's then overwrite \
                     each other's in a shared target directory); depend on the crate it wraps"
                ));
            }
        }
        let wrapped = name.strip_suffix("-cdylib");
        let allowed: &[&str] = match name {
            "async-abi" => &[],
            _ if wrapped.is_some() => &["async-abi"],
            n if n == "async-scheduler" || n == "reactor-sdk" => &["async-abi"],
            n if n.starts_with("reactor-") => &["async-abi", "reactor-sdk"],
            _ => continue,
        };
        for dep in p["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or("");
            let dev = dep["kind"].as_str() == Some("dev");
            let own = wrapped == Some(dep_name);
            if !dev && !own && ours.contains(dep_name) && !allowed.contains(&dep_name) {
                problems.push(format!(
                    "{name} must not depend on {dep_name}: plugins depend only on async-abi (reactors also on reactor-sdk, a -cdylib package also on the plugin it wraps), and async-abi on nothing of ours"
                ));
            }
        }
    }
    problems
}

/// Source files (under each package's `src/`) that contain the `unsafe`
/// keyword outside comments.
fn files_with_unsafe(meta: &Value) -> Result<BTreeSet<String>, String> {
    let root = root();
    let mut found = BTreeSet::new();
    // xtask itself only talks about unsafe code (in multi-line strings this
    // line-based scan cannot see through); it has none.
    for p in packages(meta).filter(|p| p["name"] != "xtask") {
        let manifest = p["manifest_path"].as_str().unwrap_or("");
        let Some(dir) = Path::new(manifest).parent() else {
            continue;
        };
        let src = dir.join("src");
        let mut stack = vec![src];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&path)
                        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
                    if contains_unsafe_code(&text) {
                        let rel = path.strip_prefix(&root).unwrap_or(&path);
                        found.insert(rel.to_string_lossy().replace('\\', "/"));
                    }
                }
            }
        }
    }
    Ok(found)
}

fn contains_unsafe_code(text: &str) -> bool {
    let code: String = text
        .lines()
        .map(|line| strip_strings(line.split("//").next().unwrap_or("")) + "\n")
        .collect();
    let tokens = tokenize(&code);
    tokens.iter().enumerate().any(|(i, t)| {
        if t != "unsafe" {
            return false;
        }
        // `unsafe { .. }`, `unsafe impl`, `unsafe trait`: unsafe code.
        // `unsafe fn name` / `unsafe extern fn name`: an unsafe function.
        // `unsafe extern "C" fn(..)` with no name is a function-pointer
        // *type*, which is not unsafe code.
        let next = |k: usize| tokens.get(i + k).map(String::as_str);
        match next(1) {
            Some("{" | "impl" | "trait") => true,
            Some("fn") => next(2) != Some("("),
            Some("extern") => next(2) == Some("fn") && next(3) != Some("("),
            _ => false,
        }
    })
}

/// Identifiers and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    for ch in code.chars() {
        if ch.is_alphanumeric() || ch == '_' {
            word.push(ch);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if !ch.is_whitespace() {
            tokens.push(ch.to_string());
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

/// The line with the contents of `"..."` literals removed (a line-local
/// approximation: good enough for an inventory that a human reviews).
fn strip_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_string = false;
    let mut escaped = false;
    for ch in line.chars() {
        if in_string {
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if ch == '"' {
            in_string = true;
        } else {
            out.push(ch);
        }
    }
    out
}

fn unsafe_inventory_problems(meta: &Value, bless: bool) -> Result<Vec<String>, String> {
    let found = files_with_unsafe(meta)?;
    let path = root().join(INVENTORY);
    if bless {
        let mut text = String::from(
            "# Files that contain `unsafe` code. Reviewed as a whole (STYLE S13);\n\
             # update with `cargo xtask check-arch --bless` after review.\n",
        );
        for f in &found {
            text.push_str(f);
            text.push('\n');
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {INVENTORY}: {e}"))?;
        return Ok(Vec::new());
    }
    let listed: BTreeSet<String> = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let mut problems = Vec::new();
    for f in found.difference(&listed) {
        problems.push(format!(
            "new file with unsafe code: {f} (review it, then `cargo xtask check-arch --bless`)"
        ));
    }
    for f in listed.difference(&found) {
        problems.push(format!(
            "{INVENTORY} lists {f}, which has no unsafe code (run `cargo xtask check-arch --bless`)"
        ));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::{contains_unsafe_code, dependency_problems};

    fn package(name: &str, crate_types: &[&str], deps: &[&str]) -> serde_json::Value {
        serde_json::json!({
            "name": name,
            "targets": [{ "crate_types": crate_types }],
            "dependencies": deps
                .iter()
                .map(|d| serde_json::json!({ "name": d, "kind": null }))
                .collect::<Vec<_>>(),
        })
    }

    #[test]
    fn a_package_of_ours_depending_on_a_cdylib_package_is_refused() {
        let meta = serde_json::json!({ "packages": [
            package("async-abi", &["lib"], &[]),
            package("reactor-mio", &["cdylib", "rlib"], &["async-abi"]),
            package("async-std-api", &["lib"], &["async-abi", "reactor-mio"]),
        ]});
        let problems = dependency_problems(&meta);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .starts_with("async-std-api must not depend on reactor-mio: it builds a cdylib"),
            "{problems:?}"
        );
        // The split shape: the cdylib is a leaf that wraps the rlib.
        let meta = serde_json::json!({ "packages": [
            package("async-abi", &["lib"], &[]),
            package("reactor-mio", &["lib"], &["async-abi"]),
            package("reactor-mio-cdylib", &["cdylib"], &["async-abi", "reactor-mio"]),
            package("async-std-api", &["lib"], &["async-abi", "reactor-mio"]),
        ]});
        assert_eq!(dependency_problems(&meta), Vec::<String>::new());
    }

    #[test]
    fn unsafe_in_comments_and_identifiers_does_not_count() {
        assert!(contains_unsafe_code("let x = unsafe { f() };"));
        assert!(contains_unsafe_code("pub unsafe fn f() {}"));
        assert!(!contains_unsafe_code("// unsafe here is prose"));
        assert!(!contains_unsafe_code("let unsafe_op_in_unsafe_fn = 1;"));
        assert!(!contains_unsafe_code("let s = \"unsafe-files.txt\";"));
        assert!(!contains_unsafe_code(
            "pub f: Option<unsafe extern \"C\" fn(x: i32)>,"
        ));
        assert!(contains_unsafe_code(
            "pub unsafe extern \"C\" fn entry() {}"
        ));
        assert!(contains_unsafe_code("unsafe impl Sync for T {}"));
    }
}
