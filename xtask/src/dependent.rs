//! `cargo xtask check-dependent`: a program that depends on the runtime,
//! built beside the runtime's own plugin builds, runs every built-in name.
//!
//! What a newcomer does, scripted: a scratch crate (`run` and a `spawn`)
//! depending on `async-std-api` by path, and the runtime's plugin
//! libraries (`cargo build -p <plugin>-cdylib` in this workspace), both
//! into one target directory, in both orders:
//!
//! 1. build the program;
//! 2. build the plugins in the workspace, into the same directory;
//! 3. build the program again, from `async-std-api` up (`cargo clean -p
//!    async-std-api` first): when the plugin crates were `cdylib` + `rlib`,
//!    step 2 overwrote the program's unhashed `libreactor_mio.rlib` and this
//!    failed with E0308 ("multiple different versions of crate
//!    `async_abi`");
//! 4. rebuild the plugins from their crates up (`cargo clean -p` of each),
//!    now that the program's copies are there, and the program once more;
//! 5. run the program with each built-in scheduler and reactor name and
//!    nothing else set: the linked copies, no notice, `answer 42`;
//! 6. run it with `ASYNC_PLUGIN_PATH` at the plugins built in step 4: both
//!    plugins load from those files (the notice names them), which proves
//!    their build ids match the program's linked copies although another
//!    workspace built them.
//!
//! The scratch crate and its target directory live in
//! `<target>/check-dependent/`, kept between runs so a second run builds
//! only what changed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd::{cargo, root, run_capture, run_inherit};

const MAIN_RS: &str = r#"fn main() -> Result<(), async_std_api::Error> {
    async_std_api::run(|| {
        let worker = async_std_api::spawn(|| 6 * 7);
        println!("answer {}", worker.join().unwrap());
    })
}
"#;

/// The plugin packages whose libraries step 2 builds.
const PLUGINS: [&str; 3] = [
    "async-scheduler-cdylib",
    "reactor-mio-cdylib",
    "reactor-uring-cdylib",
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask check-dependent".into());
    }
    let base = crate::conformance::target_dir()?.join("check-dependent");
    let app = base.join("app");
    let target = base.join("target");
    write_app(&app)?;

    step("1. the program");
    build_app(&app, &target, false)?;
    step("2. the plugins, in the runtime's workspace, into the same target directory");
    build_plugins(&target, false)?;
    step("3. the program again, from async-std-api up");
    build_app(&app, &target, true)?;
    step("4. the plugins from their crates up, then the program once more");
    build_plugins(&target, true)?;
    build_app(&app, &target, true)?;

    let exe = target.join("debug").join("dependent-app");
    step("5. every built-in name, linked copies");
    for (var, values) in [
        (
            "ASYNC_SCHEDULER",
            &["fifo", "context", "corosensei", "chaos"][..],
        ),
        ("ASYNC_REACTOR", &["embedded", "mio", "uring", "auto"][..]),
    ] {
        for value in values {
            expect_run(&exe, &[(var, value)], None)?;
        }
    }
    step("6. the plugin files, through ASYNC_PLUGIN_PATH");
    let dir = target.join("debug");
    let notice = format!(
        "async-std-api: scheduler \"context\" from {d}/libasync_scheduler.so, reactor \"uring\" \
         from {d}/libreactor_uring.so; ASYNC_PLUGIN_NOTICE=0 hides this line",
        d = dir.display()
    );
    let d = dir.display().to_string();
    expect_run(
        &exe,
        &[
            ("ASYNC_SCHEDULER", "context"),
            ("ASYNC_REACTOR", "uring"),
            ("ASYNC_PLUGIN_PATH", d.as_str()),
        ],
        Some(&notice),
    )?;
    eprintln!("xtask: check-dependent passed");
    Ok(())
}

fn step(what: &str) {
    eprintln!("xtask: check-dependent: {what}");
}

/// The scratch crate: its own workspace (it lives under the runtime's
/// target directory, inside the runtime's workspace directory).
fn write_app(app: &Path) -> Result<(), String> {
    let api = root().join("async-std-api");
    let manifest = format!(
        "[package]\nname = \"dependent-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         publish = false\n\n[dependencies]\nasync-std-api = {{ path = {:?} }}\n\n[workspace]\n",
        api.display().to_string()
    );
    let src = app.join("src");
    std::fs::create_dir_all(&src).map_err(|e| format!("cannot create {}: {e}", src.display()))?;
    for (path, text) in [
        (app.join("Cargo.toml"), manifest.as_str()),
        (src.join("main.rs"), MAIN_RS),
    ] {
        // Rewritten only when different, so a second run is incremental.
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn build_app(app: &Path, target: &Path, from_api: bool) -> Result<(), String> {
    if from_api {
        let mut clean = in_dir(app, target);
        clean.args(["clean", "-q", "-p", "async-std-api"]);
        run_inherit(clean, "cargo clean -p async-std-api (the program)")?;
    }
    let mut build = in_dir(app, target);
    build.arg("build");
    run_inherit(build, "cargo build (the program)")
}

fn build_plugins(target: &Path, from_crates: bool) -> Result<(), String> {
    if from_crates {
        let mut clean = cargo();
        clean.env("CARGO_TARGET_DIR", target);
        clean.args(["clean", "-q"]);
        for p in ["async-scheduler", "reactor-mio", "reactor-uring"] {
            clean.args(["-p", p]);
        }
        run_inherit(clean, "cargo clean (the plugin crates)")?;
    }
    let mut build = cargo();
    build.env("CARGO_TARGET_DIR", target).arg("build");
    for p in PLUGINS {
        build.args(["-p", p]);
    }
    run_inherit(build, "cargo build (the plugins)")
}

/// A cargo command run in `dir` with target directory `target`.
fn in_dir(dir: &Path, target: &Path) -> Command {
    let mut cmd = cargo();
    cmd.current_dir(dir).env("CARGO_TARGET_DIR", target);
    cmd
}

/// Runs the program with only `env` of the runtime's variables set: it
/// must print `answer 42` and, on stderr, exactly `notice` (or nothing).
/// `uring` on a kernel without io_uring may only fail to start.
fn expect_run(exe: &PathBuf, env: &[(&str, &str)], notice: Option<&str>) -> Result<(), String> {
    let mut cmd = Command::new(exe);
    for var in [
        "ASYNC_SCHEDULER",
        "ASYNC_REACTOR",
        "ASYNC_SCHEDULER_OPTIONS",
        "ASYNC_REACTOR_OPTIONS",
        "ASYNC_CONFIG",
        "ASYNC_PLUGIN_PATH",
        "ASYNC_PLUGIN_NOTICE",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    let out = run_capture(cmd, "the program")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let shown = shown.join(" ");
    let uring = env.iter().any(|(_, v)| *v == "uring");
    if uring && !out.status.success() && stderr.starts_with("Error: cannot start reactor \"uring\"")
    {
        eprintln!(
            "xtask:   {shown}: io_uring unavailable here ({})",
            stderr.trim()
        );
        return Ok(());
    }
    let stderr_ok = match notice {
        Some(line) => stderr.trim_end() == line,
        None => stderr.is_empty(),
    };
    if out.status.success() && stdout.trim() == "answer 42" && stderr_ok {
        eprintln!("xtask:   {shown}: ok");
        Ok(())
    } else {
        Err(format!(
            "{shown}: {} (stdout {:?}, stderr {:?})",
            out.status,
            stdout.trim(),
            stderr.trim()
        ))
    }
}
