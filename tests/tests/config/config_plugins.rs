//! Plugin files for the built-in names: where they are looked for (only the
//! `ASYNC_PLUGIN_PATH` directories, in order, before the statically linked
//! copy; never next to the executable), the build id a file found by name
//! must share with the linked copy, and the one-line notice naming the
//! files loaded, with its off switches.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tests::support::{c_fixture, plugin_library, run_child, ChildOutput, PROBE_MARKER};

use crate::{scratch, PROBE};

/// How the notice ends.
const HIDE: &str = "; ASYNC_PLUGIN_NOTICE=0 hides this line";

/// A C fixture, compiled once per process (`c_fixture` names its temporary
/// file after the process, so two threads must not build the same one).
fn fixture(name: &'static str) -> PathBuf {
    static FOREIGN: OnceLock<PathBuf> = OnceLock::new();
    static NO_ENTRY: OnceLock<PathBuf> = OnceLock::new();
    let cell = match name {
        "foreign_build" => &FOREIGN,
        "no_entry" => &NO_ENTRY,
        _ => unreachable!("no fixture {name}"),
    };
    cell.get_or_init(|| c_fixture(name, Path::new(env!("CARGO_TARGET_TMPDIR"))))
        .clone()
}

/// Copies `from` to `dir/name` (under a temporary name first: a reader
/// must never see half a library).
fn install(from: &Path, dir: &Path, name: &str) {
    let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
    std::fs::copy(from, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// A scratch directory holding copies of this build's plugin libraries
/// `files` (whose build ids are the linked copies').
fn real_plugins(name: &str, files: &[&str]) -> PathBuf {
    let dir = scratch(name);
    for file in files {
        install(&plugin_library(file), &dir, file);
    }
    dir
}

/// A scratch directory whose `libreactor_mio.so` and
/// `libasync_scheduler.so` are built from other sources (their build id
/// says so; their entry symbols abort if called).
fn foreign_plugins(name: &str) -> PathBuf {
    let dir = scratch(name);
    for file in ["libreactor_mio.so", "libasync_scheduler.so"] {
        install(&fixture("foreign_build"), &dir, file);
    }
    dir
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

/// Asserts a clean run whose stderr is exactly `stderr` (one line each).
#[track_caller]
fn assert_ran(out: &ChildOutput, markers: usize, stderr: &[String]) {
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout.lines().filter(|l| *l == PROBE_MARKER).count(),
        markers,
        "{out:?}"
    );
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines, stderr, "stderr differs: {out:?}");
}

#[test]
fn a_library_found_by_name_built_from_other_sources_is_refused_naming_both_builds() {
    let dir = foreign_plugins("foreign");
    let d = show(&dir);
    let ours = reactor_mio::BUILD_ID.to_str().unwrap();
    run_child(
        PROBE,
        &[],
        &[("ASYNC_REACTOR", "mio"), ("ASYNC_PLUGIN_PATH", &d)],
    )
    .assert_config_error(&format!(
        "cannot load reactor \"mio\": {d}/libreactor_mio.so was built from reactor-mio 0.0.1 \
         release 0123456789abcdef, this program links {ours}; rebuild it from the same sources \
         and profile (cargo build -p reactor-mio-cdylib) or take {d} off ASYNC_PLUGIN_PATH"
    ));
    // `auto` does not hide it behind its fallback either: the file on the
    // plugin path is a mistake of the configuration, not a kernel without
    // io_uring.
    let out = run_child(
        PROBE,
        &[],
        &[("ASYNC_REACTOR", "auto"), ("ASYNC_PLUGIN_PATH", &d)],
    );
    let uring = run_child(PROBE, &[], &[("ASYNC_REACTOR", "uring")]);
    if uring.code == Some(0) {
        assert_ran(&out, 1, &[]);
    } else {
        out.assert_config_error(&format!(
            "cannot load reactor \"mio\": {d}/libreactor_mio.so was built from reactor-mio \
             0.0.1 release 0123456789abcdef, this program links {ours}; rebuild it from the \
             same sources and profile (cargo build -p reactor-mio-cdylib) or take {d} off \
             ASYNC_PLUGIN_PATH"
        ));
    }
}

#[test]
fn a_library_found_by_name_without_a_build_id_is_refused() {
    let dir = scratch("no-build-id");
    install(&fixture("no_entry"), &dir, "libasync_scheduler.so");
    let d = show(&dir);
    run_child(
        PROBE,
        &[],
        &[("ASYNC_SCHEDULER", "fifo"), ("ASYNC_PLUGIN_PATH", &d)],
    )
    .assert_config_error(&format!(
        "cannot load scheduler \"fifo\": {d}/libasync_scheduler.so has no build id, so it is not \
         one of this runtime's own plugin builds (load a third party's plugin by path); take {d} \
         off ASYNC_PLUGIN_PATH"
    ));
}

#[test]
fn a_built_in_name_runs_the_linked_copy_and_never_a_file_next_to_the_executable() {
    // A copy of the probe with foreign libraries beside it and in the
    // directory CARGO_TARGET_DIR names: neither is looked at (a stale
    // library next to the executable used to win over ASYNC_PLUGIN_PATH).
    let dir = foreign_plugins("beside");
    let exe = dir.join("runtime_probe");
    install(Path::new(PROBE), &dir, "runtime_probe");
    let (exe, d) = (show(&exe), show(&dir));
    for scheduler in ["fifo", "context", "corosensei", "chaos"] {
        let env = [
            ("ASYNC_SCHEDULER", scheduler),
            ("ASYNC_REACTOR", "mio"),
            ("CARGO_TARGET_DIR", d.as_str()),
        ];
        // Linked copies only: no notice.
        assert_ran(&run_child(&exe, &[], &env), 1, &[]);
    }
    // `uring` is linked too; a kernel without io_uring refuses to start it,
    // which is the only way it can fail.
    let out = run_child(&exe, &[], &[("ASYNC_REACTOR", "uring")]);
    if out.code == Some(0) {
        assert_ran(&out, 1, &[]);
    } else {
        assert!(
            out.stderr
                .starts_with("Error: cannot start reactor \"uring\": "),
            "{out:?}"
        );
    }
}

#[test]
fn the_plugin_path_is_searched_in_order_and_the_first_library_found_is_loaded() {
    let real = real_plugins("order-real", &["libreactor_mio.so"]);
    let foreign = foreign_plugins("order-foreign");
    let empty = scratch("order-empty");
    let (r, f, e) = (show(&real), show(&foreign), show(&empty));
    // A directory without the library is passed over; the first that has
    // it is loaded; the ones after it are never opened.
    let path = format!("{e}:{r}:{f}");
    let out = run_child(
        PROBE,
        &[],
        &[("ASYNC_REACTOR", "mio"), ("ASYNC_PLUGIN_PATH", &path)],
    );
    assert_ran(
        &out,
        1,
        &[format!(
            "async-std-api: scheduler \"embedded\" (linked in), reactor \"mio\" from \
             {r}/libreactor_mio.so{HIDE}"
        )],
    );
    // The first found is refused, not skipped for a later one.
    let path = format!("{f}:{r}");
    let out = run_child(
        PROBE,
        &[],
        &[("ASYNC_REACTOR", "mio"), ("ASYNC_PLUGIN_PATH", &path)],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .starts_with(&format!("Error: cannot load reactor \"mio\": {f}/libreactor_mio.so was built from reactor-mio 0.0.1")),
        "{out:?}"
    );
}

#[test]
fn a_path_beats_the_plugin_path_and_the_builder_beats_both() {
    let real = real_plugins("explicit-real", &["libreactor_mio.so"]);
    let foreign = foreign_plugins("explicit-foreign");
    let (r, f) = (show(&real), show(&foreign));
    let file = format!("{r}/libreactor_mio.so");
    let out = run_child(
        PROBE,
        &[],
        &[("ASYNC_REACTOR", &file), ("ASYNC_PLUGIN_PATH", &f)],
    );
    assert_ran(
        &out,
        1,
        &[format!(
            "async-std-api: scheduler \"embedded\" (linked in), reactor from {file}{HIDE}"
        )],
    );
    // The builder's `embedded` never looks at a file.
    let env = [
        ("ASYNC_SCHEDULER", "fifo"),
        ("ASYNC_REACTOR", "mio"),
        ("ASYNC_PLUGIN_PATH", f.as_str()),
    ];
    assert_ran(&run_child(PROBE, &["builder"], &env), 1, &[]);
}

#[test]
fn a_name_in_the_config_file_is_looked_for_on_the_plugin_path_too() {
    let real = real_plugins("config-real", &["libreactor_mio.so"]);
    let r = show(&real);
    let config = scratch("config-name").join("async.toml");
    std::fs::write(&config, "[reactor]\nname = \"mio\"\n").unwrap();
    let c = show(&config);
    let out = run_child(
        PROBE,
        &[],
        &[("ASYNC_CONFIG", &c), ("ASYNC_PLUGIN_PATH", &r)],
    );
    assert_ran(
        &out,
        1,
        &[format!(
            "async-std-api: scheduler \"embedded\" (linked in), reactor \"mio\" from \
             {r}/libreactor_mio.so{HIDE}"
        )],
    );
}

#[test]
fn the_notice_names_the_scheduler_the_reactor_and_their_files_once_per_process() {
    let real = real_plugins(
        "notice-real",
        &["libreactor_mio.so", "libasync_scheduler.so"],
    );
    let r = show(&real);
    let env = [
        ("ASYNC_SCHEDULER", "context"),
        ("ASYNC_REACTOR", "mio"),
        ("ASYNC_PLUGIN_PATH", r.as_str()),
    ];
    // Two loops start the same pair: one line.
    let out = run_child(PROBE, &["per_core"], &env);
    assert_ran(
        &out,
        2,
        &[format!(
            "async-std-api: scheduler \"context\" from {r}/libasync_scheduler.so, reactor \
             \"mio\" from {r}/libreactor_mio.so{HIDE}"
        )],
    );
}

#[test]
fn the_notice_is_off_with_the_variable_the_builder_or_the_config_file() {
    let real = real_plugins("quiet-real", &["libreactor_mio.so"]);
    let r = show(&real);
    let off = scratch("quiet-config").join("off.toml");
    std::fs::write(&off, "[runtime]\nplugin_notice = false\n").unwrap();
    let off = show(&off);
    let base = [("ASYNC_REACTOR", "mio"), ("ASYNC_PLUGIN_PATH", r.as_str())];
    let with = |extra: &[(&'static str, &str)]| -> Vec<(&str, String)> {
        base.iter()
            .chain(extra)
            .map(|(k, v)| (*k, (*v).to_owned()))
            .collect()
    };
    let run = |args: &[&str], env: Vec<(&str, String)>| {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run_child(PROBE, args, &env)
    };
    let notice = format!(
        "async-std-api: scheduler \"embedded\" (linked in), reactor \"mio\" from \
         {r}/libreactor_mio.so{HIDE}"
    );
    assert_ran(&run(&[], with(&[("ASYNC_PLUGIN_NOTICE", "0")])), 1, &[]);
    assert_ran(&run(&[], with(&[("ASYNC_CONFIG", &off)])), 1, &[]);
    // The builder beats the environment, which beats the file.
    assert_ran(
        &run(&["quiet"], with(&[("ASYNC_PLUGIN_NOTICE", "1")])),
        1,
        &[],
    );
    assert_ran(
        &run(
            &[],
            with(&[("ASYNC_CONFIG", &off), ("ASYNC_PLUGIN_NOTICE", "1")]),
        ),
        1,
        std::slice::from_ref(&notice),
    );
    run(&[], with(&[("ASYNC_PLUGIN_NOTICE", "quiet")]))
        .assert_config_error("invalid ASYNC_PLUGIN_NOTICE \"quiet\": expected 1 or 0");
}
