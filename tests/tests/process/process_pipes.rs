//! A child's pipes: fed and read by coroutines, end of input, several MiB
//! both ways without deadlock, a pipeline of children, `EPIPE`.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;

use async_std_api::process::{Command, Stdio};
use async_std_api::{run, spawn};

use super::is_nonblocking;

/// `n` bytes that are not all alike (so a reordering or a lost chunk shows).
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

#[test]
fn cat_fed_by_one_coroutine_is_read_back_by_another() {
    run(|| {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        // Our ends are non-blocking (the child's are not: cat blocks).
        assert!(is_nonblocking(stdin.as_raw_fd()) && is_nonblocking(stdout.as_raw_fd()));
        let data = pattern(5 * 1024 * 1024);
        let sent = data.clone();
        let feeder = spawn(move || {
            // Far more than a pipe holds: the writer suspends while cat
            // and the reader catch up.
            stdin.write_all(&sent).unwrap();
            // Dropping stdin ends cat's input.
        });
        let mut got = Vec::new();
        stdout.read_to_end(&mut got).unwrap();
        feeder.join().unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(got.len(), data.len());
        assert!(got == data, "the bytes came back in order");
    })
    .unwrap();
}

#[test]
fn closing_stdin_is_the_end_of_the_childs_input() {
    run(|| {
        let mut child = Command::new("sh")
            .args([
                "-c",
                "n=0; while read l; do n=$((n+1)); done; echo \"$n lines\"",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"one\ntwo\nthree\n").unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.stdout, b"3 lines\n");
        assert!(out.status.success());
    })
    .unwrap();
}

#[test]
fn a_child_that_fills_stderr_before_writing_stdout_does_not_deadlock() {
    run(|| {
        // 3 MiB to stderr first: a parent that read stdout to its end
        // before touching stderr would wait forever (64 KiB pipes).
        let script = "head -c 3145728 /dev/zero >&2; head -c 4194304 /dev/zero; echo end >&2";
        let out = Command::new("sh").args(["-c", script]).output().unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout.len(), 4 * 1024 * 1024);
        assert_eq!(out.stderr.len(), 3 * 1024 * 1024 + 4);
        assert!(out.stderr.ends_with(b"end\n"));
    })
    .unwrap();
}

#[test]
fn a_pipeline_of_children_connects_one_stdout_to_the_next_stdin() {
    run(|| {
        let mut first = Command::new("sh")
            .args(["-c", "printf 'pear\\napple\\npear\\nfig\\n'"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = first.stdout.take().unwrap();
        let mut sort = Command::new("sort");
        sort.stdin(out).stdout(Stdio::piped());
        let mut sorted = sort.spawn().unwrap();
        // The command holds its copy of the pipe until dropped (as std's).
        drop(sort);
        let mut uniq = Command::new("uniq");
        uniq.arg("-c")
            .stdin(Stdio::from(sorted.stdout.take().unwrap()));
        let counted = uniq.output().unwrap();
        assert!(first.wait().unwrap().success());
        assert!(sorted.wait().unwrap().success());
        let text = String::from_utf8(counted.stdout).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(lines, ["1 apple", "1 fig", "2 pear"]);
    })
    .unwrap();
}

#[test]
fn writing_to_a_child_that_exited_is_a_broken_pipe() {
    run(|| {
        let mut child = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        assert!(child.wait().unwrap().success());
        let err = stdin.write_all(b"nobody reads this").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BrokenPipe);
        assert_eq!(err.raw_os_error(), Some(libc::EPIPE));
    })
    .unwrap();
}

#[test]
fn std_io_copy_runs_through_child_pipes() {
    run(|| {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let data = pattern(1024 * 1024);
        let sent = data.clone();
        let feeder = spawn(move || {
            let n = std::io::copy(&mut sent.as_slice(), &mut stdin).unwrap();
            assert_eq!(n, 1024 * 1024);
        });
        let mut got = Vec::new();
        let n = std::io::copy(&mut stdout, &mut got).unwrap();
        feeder.join().unwrap();
        assert_eq!(n, 1024 * 1024);
        assert!(got == data);
        child.wait().unwrap();
    })
    .unwrap();
}

#[test]
fn a_pipe_given_away_is_blocking_again() {
    run(|| {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        assert!(is_nonblocking(stdout.as_raw_fd()));
        let fd = std::os::fd::OwnedFd::from(stdout);
        assert!(!is_nonblocking(fd.as_raw_fd()), "handed out as std has it");
        drop(fd);
        child.wait().unwrap();
    })
    .unwrap();
}
