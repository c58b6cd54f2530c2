//! Names, options and the config file; precedence between sources.

use tests::support::{run_child, PROBE_MARKER};

use crate::{scratch, PROBE};

#[test]
fn the_default_configuration_runs_the_main_coroutine() {
    let out = run_child(PROBE, &[], &[]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), PROBE_MARKER);
}

#[test]
fn an_unknown_reactor_name_lists_the_choices() {
    run_child(PROBE, &[], &[("ASYNC_REACTOR", "foo")]).assert_config_error(
        "unknown reactor \"foo\": expected embedded, mio, uring, auto or a path to a shared library",
    );
}

#[test]
fn an_unknown_scheduler_name_lists_the_choices() {
    run_child(PROBE, &[], &[("ASYNC_SCHEDULER", "lifo")]).assert_config_error(
        "unknown scheduler \"lifo\": expected embedded, fifo, context, corosensei, chaos or a path to a shared library",
    );
}

#[test]
fn options_without_an_equals_sign_are_rejected() {
    run_child(PROBE, &[], &[("ASYNC_SCHEDULER_OPTIONS", "enginecontext")]).assert_config_error(
        "invalid ASYNC_SCHEDULER_OPTIONS \"enginecontext\": expected key=value",
    );
    run_child(PROBE, &[], &[("ASYNC_REACTOR_OPTIONS", "a=1,b")])
        .assert_config_error("invalid ASYNC_REACTOR_OPTIONS \"b\": expected key=value");
}

#[test]
fn an_invalid_config_file_is_reported_on_one_line() {
    let path = scratch("invalid").join("async.toml");
    std::fs::write(
        &path,
        "[scheduler]\nname = \"fifo\"\nstack_size = \"big\"\n",
    )
    .unwrap();
    let p = path.display().to_string();
    let out = run_child(PROBE, &[], &[("ASYNC_CONFIG", &p)]);
    out.assert_config_error(&format!(
        "invalid config file \"{p}\": invalid type: string \"big\", expected usize at line 3"
    ));
}

#[test]
fn a_missing_config_file_is_reported() {
    let p = scratch("missing").join("nope.toml").display().to_string();
    run_child(PROBE, &[], &[("ASYNC_CONFIG", &p)])
        .assert_config_error(&format!("invalid config file \"{p}\": file not found"));
}

#[test]
fn the_config_file_is_read_and_the_environment_overrides_it() {
    let path = scratch("precedence").join("async.toml");
    std::fs::write(
        &path,
        "scheduler = \"embedded\"\n[reactor]\nname = \"bogus\"\n[reactor.options]\n\"uring.sq_entries\" = 256\n",
    )
    .unwrap();
    let p = path.display().to_string();
    // The file alone: its reactor name is read (and refused).
    run_child(PROBE, &[], &[("ASYNC_CONFIG", &p)]).assert_config_error(
        "unknown reactor \"bogus\": expected embedded, mio, uring, auto or a path to a shared library",
    );
    // The environment beats the file.
    let out = run_child(
        PROBE,
        &[],
        &[("ASYNC_CONFIG", &p), ("ASYNC_REACTOR", "embedded")],
    );
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), PROBE_MARKER);
}

#[test]
fn a_config_path_is_relative_to_the_config_file() {
    let dir = scratch("relative");
    let path = dir.join("async.toml");
    std::fs::write(&path, "[reactor]\npath = \"plugins/libnothere.so\"\n").unwrap();
    let expected = dir.join("plugins/libnothere.so").display().to_string();
    run_child(PROBE, &[], &[("ASYNC_CONFIG", &path.display().to_string())]).assert_config_error(
        &format!("cannot load reactor \"{expected}\": file not found"),
    );
}

#[test]
fn a_plugin_refusing_an_option_is_reported_with_its_message() {
    run_child(PROBE, &[], &[("ASYNC_SCHEDULER_OPTIONS", "engine=bogus")]).assert_config_error(
        "cannot start scheduler \"embedded\": invalid scheduler option engine=\"bogus\": expected context or corosensei",
    );
    // `fifo` is the linked scheduler too (no plugin file is looked for
    // without ASYNC_PLUGIN_PATH), named by its name.
    run_child(
        PROBE,
        &[],
        &[("ASYNC_SCHEDULER", "fifo"), ("ASYNC_SCHEDULER_OPTIONS", "engine=bogus")],
    )
    .assert_config_error(
        "cannot start scheduler \"fifo\": invalid scheduler option engine=\"bogus\": expected context or corosensei",
    );
}

#[test]
fn reactor_auto_falls_back_to_a_reactor_that_starts() {
    let out = run_child(PROBE, &[], &[("ASYNC_REACTOR", "auto")]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), PROBE_MARKER);
}

#[test]
fn the_builder_beats_the_environment() {
    let env = [("ASYNC_SCHEDULER", "nope"), ("ASYNC_REACTOR", "nope")];
    let out = run_child(PROBE, &["builder"], &env);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), PROBE_MARKER);
    // Without the builder the same environment is refused.
    run_child(PROBE, &[], &env).assert_config_error(
        "unknown scheduler \"nope\": expected embedded, fifo, context, corosensei, chaos or a path to a shared library",
    );
}

#[test]
fn auto_does_not_hide_a_refused_option_behind_its_fallback() {
    // `auto` falls back to mio when io_uring is unavailable; an option the
    // uring reactor refuses is a mistake in the configuration, not an
    // unavailable kernel feature: it is reported, not skipped over.
    let uring = run_child(PROBE, &[], &[("ASYNC_REACTOR", "uring")]);
    if uring.code != Some(0) {
        eprintln!(
            "skipped: io_uring is unavailable here ({})",
            uring.stderr.trim()
        );
        return;
    }
    let env = [
        ("ASYNC_REACTOR", "auto"),
        ("ASYNC_REACTOR_OPTIONS", "uring.bogus=1"),
    ];
    run_child(PROBE, &[], &env).assert_config_error(
        "cannot start reactor \"uring\": unknown reactor option \"uring.bogus\" (known: \
         uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)",
    );
    // Another reactor's option is still ignored by uring (one configuration
    // serves auto's both choices).
    let env = [
        ("ASYNC_REACTOR", "auto"),
        ("ASYNC_REACTOR_OPTIONS", "mio.events_capacity=64"),
    ];
    let out = run_child(PROBE, &[], &env);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
}
