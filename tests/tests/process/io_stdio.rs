//! `io::stdin`/`stdout`/`stderr` with real pipes as descriptors 0, 1 and 2:
//! each test runs this test binary again as a child (`stdio_child`, in the
//! mode named by `ASYNC_PROCESS_STDIO_CHILD`) and talks to it through its
//! standard streams.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;

use async_std_api::process::{Child, Command, Stdio};
use async_std_api::{delay, io, run, spawn};
use tests::support::yield_until;

use super::is_nonblocking;

const MODE: &str = "ASYNC_PROCESS_STDIO_CHILD";

/// The payload a child writes between these markers (libtest prints its own
/// lines around the test).
fn between(s: &str) -> &str {
    let start = s.find("<<<").map_or(0, |i| i + 3);
    let end = s[start..].find(">>>").map_or(s.len(), |i| start + i);
    &s[start..end]
}

/// Starts this binary running only `stdio_child` in `mode`, with its three
/// standard streams piped to us (the backend variables are inherited, so
/// it runs on the same matrix cell).
fn child(mode: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "io_stdio::stdio_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE, mode)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The child's side; does nothing in the ordinary run of the suite.
#[test]
fn stdio_child() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    run(move || match mode.as_str() {
        "copy" => child_copy(),
        "lines" => child_lines(),
        "cancel" => child_cancel(),
        "nonblocking" => child_nonblocking(),
        other => panic!("unknown mode {other}"),
    })
    .unwrap();
}

fn child_copy() {
    let mut out = io::stdout();
    out.write_all(b"<<<").unwrap();
    let n = std::io::copy(&mut io::stdin(), &mut out).unwrap();
    out.write_all(b">>>").unwrap();
    // SI1: the shared descriptors were never made non-blocking.
    let flags_ok = !is_nonblocking(0) && !is_nonblocking(1) && !is_nonblocking(2);
    writeln!(
        io::stderr(),
        "<<<copied {n}, descriptors unchanged: {flags_ok}>>>"
    )
    .unwrap();
}

fn child_lines() {
    let mut count = 0;
    for line in io::stdin().lines() {
        let line = line.unwrap();
        writeln!(io::stderr(), "{}", line.to_uppercase()).unwrap();
        count += 1;
    }
    write!(io::stdout(), "<<<{count} lines>>>").unwrap();
}

fn child_cancel() {
    // A read blocks on the pool while other coroutines run; then it is
    // cancelled before any input exists.
    let reader = spawn(|| {
        let mut buf = [0u8; 64];
        io::stdin().read(&mut buf)
    });
    yield_until(|| reader.coroutine().is_suspended());
    for _ in 0..3 {
        delay(1).unwrap(); // the loop runs while stdin blocks a pool thread
    }
    reader.cancel();
    let cancelled = match reader.join() {
        Err(e) => e.is_cancelled(),
        Ok(Err(e)) => io::cancelled(&e).is_some(),
        Ok(Ok(_)) => false,
    };
    writeln!(io::stdout(), "ready {cancelled}").unwrap();
    // What the cancelled read brought in is the first thing read now.
    let mut got = String::new();
    io::stdin().read_to_string(&mut got).unwrap();
    write!(io::stdout(), "<<<{got}>>>").unwrap();
}

fn child_nonblocking() {
    // Someone else made stdin non-blocking: the pool thread waits with
    // poll(2) instead of failing with WouldBlock.
    let fd = io::stdin().as_raw_fd();
    // SAFETY: fcntl on our own descriptor 0.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    let reader = spawn(|| {
        let mut got = String::new();
        io::stdin().read_to_string(&mut got).map(|_| got)
    });
    yield_until(|| reader.coroutine().is_suspended());
    writeln!(io::stdout(), "ready").unwrap();
    let got = reader.join().unwrap().unwrap();
    write!(io::stdout(), "<<<{got}>>>").unwrap();
}

/// Feeds `input` to the child's stdin from a coroutine, then collects its
/// output.
fn feed_and_collect(mut c: Child, input: Vec<u8>) -> std::process::Output {
    let mut stdin = c.stdin.take().unwrap();
    let feeder = spawn(move || stdin.write_all(&input).unwrap());
    let out = c.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

/// Reads the child's stdout until a line containing `needle` is complete.
fn read_until(c: &mut Child, needle: &str) -> String {
    let out = c.stdout.as_mut().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    let done = |s: &[u8]| {
        let s = String::from_utf8_lossy(s);
        s.find(needle).is_some_and(|i| s[i..].contains('\n'))
    };
    while !done(&seen) {
        let n = out.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the child ended before {needle:?}: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(seen).unwrap()
}

#[test]
fn std_io_copy_from_stdin_to_stdout_moves_several_mib_through_pipes() {
    run(|| {
        let data: Vec<u8> = (0..3 * 1024 * 1024)
            .map(|i| b"abcdefghijklmnopqrstuvwxyz\n"[i % 27])
            .collect();
        let out = feed_and_collect(child("copy"), data.clone());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {stderr}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            between(&stdout).as_bytes() == data,
            "stdin came back on stdout"
        );
        assert_eq!(
            between(&stderr),
            format!("copied {}, descriptors unchanged: true", data.len())
        );
    })
    .unwrap();
}

#[test]
fn stdin_lines_end_at_the_end_of_input_and_stderr_carries_the_writes() {
    run(|| {
        let out = feed_and_collect(child("lines"), b"one\r\ntwo\nthree".to_vec());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {stderr}");
        assert_eq!(between(&String::from_utf8_lossy(&out.stdout)), "3 lines");
        assert!(stderr.contains("ONE\nTWO\nTHREE\n"), "{stderr}");
    })
    .unwrap();
}

#[test]
fn a_cancelled_stdin_read_loses_nothing_and_other_coroutines_ran_meanwhile() {
    run(|| {
        let mut c = child("cancel");
        let seen = read_until(&mut c, "ready");
        assert!(
            seen.contains("ready true"),
            "the read was cancelled: {seen}"
        );
        let mut stdin = c.stdin.take().unwrap();
        stdin.write_all(b"abc\n").unwrap();
        drop(stdin);
        let out = c.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {stderr}");
        assert_eq!(between(&String::from_utf8_lossy(&out.stdout)), "abc\n");
    })
    .unwrap();
}

#[test]
fn a_stdin_someone_made_non_blocking_is_still_read_to_its_end() {
    run(|| {
        let mut c = child("nonblocking");
        read_until(&mut c, "ready");
        let mut stdin = c.stdin.take().unwrap();
        stdin.write_all(b"late input").unwrap();
        drop(stdin);
        let out = c.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed: {stderr}");
        assert_eq!(between(&String::from_utf8_lossy(&out.stdout)), "late input");
    })
    .unwrap();
}
