//! `Command`: output and status, exit codes and signals, arguments,
//! environment and working directory, and std's error kinds.

use std::error::Error as _;
use std::io::ErrorKind;
use std::os::unix::process::ExitStatusExt;

use async_std_api::process::{Command, Stdio};
use async_std_api::run;

#[test]
fn output_collects_stdout_stderr_and_the_exit_code() {
    run(|| {
        let out = Command::new("sh")
            .args(["-c", "echo out; echo err >&2; exit 3"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert!(!out.status.success());
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    })
    .unwrap();
}

#[test]
fn status_reports_success_and_failure_exit_codes() {
    run(|| {
        let t = Command::new("true").status().unwrap();
        let f = Command::new("false").status().unwrap();
        let seven = Command::new("sh").args(["-c", "exit 7"]).status().unwrap();
        assert_eq!(
            [t.code(), f.code(), seven.code()],
            [Some(0), Some(1), Some(7)]
        );
        assert!(t.success() && !f.success());
        assert_eq!([t.signal(), f.signal()], [None, None]);
    })
    .unwrap();
}

#[test]
fn a_child_killed_by_a_signal_reports_the_signal_and_no_code() {
    run(|| {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        assert_eq!(child.try_wait().unwrap(), None);
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!((status.signal(), status.code()), (Some(9), None));
        // Killing a reaped child signals nothing and succeeds, as std's.
        child.kill().unwrap();

        let term = Command::new("sh")
            .args(["-c", "kill -TERM $$"])
            .status()
            .unwrap();
        assert_eq!((term.signal(), term.code()), (Some(15), None));
    })
    .unwrap();
}

#[test]
fn a_missing_program_is_not_found_naming_the_program() {
    run(|| {
        let err = Command::new("definitely-not-a-program-9f2c")
            .spawn()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(
            err.to_string(),
            "cannot spawn \"definitely-not-a-program-9f2c\": no such file or directory (os error 2)"
        );
        let os = err
            .source()
            .and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(os.and_then(|e| e.raw_os_error()), Some(libc::ENOENT));
        // output and status report the same error.
        let err = Command::new("/nonexistent/dir/prog").output().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
    })
    .unwrap();
}

#[test]
fn a_file_without_execute_permission_is_permission_denied() {
    run(|| {
        let path = std::env::temp_dir().join(format!("async-proc-noexec-{}", std::process::id()));
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        let err = Command::new(&path).status().unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    })
    .unwrap();
}

#[test]
fn arguments_environment_and_working_directory_reach_the_child() {
    run(|| {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo \"$0|$1|$FOO|${HOME-unset}|$(pwd)\"",
            "zero",
            "one",
        ])
        .env("FOO", "bar")
        .env_remove("HOME")
        .current_dir(&dir);
        assert_eq!(cmd.get_program(), "sh");
        assert_eq!(cmd.get_args().count(), 4);
        assert_eq!(cmd.get_current_dir(), Some(dir.as_path()));
        let out = cmd.output().unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!("zero|one|bar|unset|{}\n", dir.display())
        );
    })
    .unwrap();
}

#[test]
fn env_clear_leaves_only_the_variables_set_after() {
    run(|| {
        let out = Command::new("/usr/bin/env")
            .env_clear()
            .env("ONLY", "1")
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"ONLY=1\n");
    })
    .unwrap();
}

#[test]
fn output_gives_the_child_an_empty_stdin_and_spawn_inherits_unless_configured() {
    run(|| {
        // `output` defaults: stdin is /dev/null, so `cat` ends at once.
        let out = Command::new("cat").output().unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"");
        // A stream set on the command is kept by `output`.
        let out = Command::new("sh")
            .args(["-c", "echo gone; echo kept >&2"])
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert_eq!((out.stdout, out.stderr), (Vec::new(), b"kept\n".to_vec()));
        // `spawn` after `output` on the same command: its defaults again
        // (inherit), so no pipes.
        let mut cmd = Command::new("true");
        cmd.output().unwrap();
        let child = cmd.spawn().unwrap();
        assert!(child.stdin.is_none() && child.stdout.is_none() && child.stderr.is_none());
        child.wait_with_output().unwrap();
    })
    .unwrap();
}

#[test]
fn a_std_command_converts_and_keeps_its_configuration() {
    run(|| {
        let mut std_cmd = std::process::Command::new("sh");
        std_cmd.args(["-c", "echo $X"]).env("X", "from std");
        let out = Command::from(std_cmd).output().unwrap();
        assert_eq!(out.stdout, b"from std\n");
        let mut cmd = Command::new("sh");
        cmd.as_std_mut().args(["-c", "exit 4"]);
        assert_eq!(cmd.status().unwrap().code(), Some(4));
    })
    .unwrap();
}

#[test]
fn spawning_outside_a_runtime_panics_before_starting_anything() {
    let err = std::panic::catch_unwind(|| Command::new("true").spawn()).unwrap_err();
    let msg = err
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| err.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert_eq!(
        msg,
        "Command::spawn called outside a coroutine runtime: run the program inside async_std_api::run"
    );
}
