//! The requests of ABI 1.1 run in the ring: a child drives
//! `libreactor_uring.so` through its vtable under `strace -f` and, between
//! two markers, sends and receives a datagram and opens, stats, writes,
//! truncates, syncs, renames and removes files and a directory. None of the
//! system calls a blocking implementation would make on the loop thread
//! (`openat`, `statx`, `fsync`, `sendmsg`, ...) appears there; the work is
//! done by the kernel behind `io_uring_enter`.
//!
//! (The reactor's one `fstat` of a descriptor it meets for the first time
//! is not an I/O wait and is not counted.)

use std::path::Path;
use std::process::Command;

use async_abi::*;
use tests::conformance::os::TempDir;
use tests::conformance::requests::{addr_bytes, path_bytes, udp_socket};
use tests::conformance::{Loop, Reactor};

use crate::{library, mark, strace_works, uring_available, Phases, MARK};

/// Set in the child: the path of the library to drive.
const CHILD_ENV: &str = "URING_NATIVE_CHILD";

/// What a thread-pool or readiness implementation of these requests would
/// call on the loop thread; none may appear between the markers.
const BLOCKING: &[&str] = &[
    "open",
    "openat",
    "openat2",
    "statx",
    "fsync",
    "fdatasync",
    "ftruncate",
    "mkdir",
    "mkdirat",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "rmdir",
    "recvfrom",
    "recvmsg",
    "sendto",
    "sendmsg",
    "pwrite64",
    "epoll_wait",
    "epoll_pwait",
];

/// The workload, between the `native-begin` and `native-end` markers.
fn child(library: &Path) {
    let reactor = Reactor::load(library).unwrap_or_else(|e| panic!("{e}"));
    let lp = Loop::new(&reactor);
    let caps = lp.instance_caps();
    assert_ne!(
        caps & AA_CAP_IO_DGRAM,
        0,
        "this kernel's ring has datagrams"
    );
    assert_ne!(
        caps & AA_CAP_IO_FILE,
        0,
        "this kernel's ring has file requests"
    );
    let dir = TempDir::new("native");
    let (file, sub, moved) = (
        path_bytes(&dir.path().join("f")),
        path_bytes(&dir.path().join("sub")),
        path_bytes(&dir.path().join("sub/g")),
    );
    let ((a, a_addr), (b, mut b_addr)) = (udp_socket(), udp_socket());
    lp.track_fd(a);
    lp.track_fd(b);
    let mut buf = [0u8; 8];
    let mut from = AaSockAddr::EMPTY;
    let mut stat = AaStat::default();
    mark("begin");
    mark("native-begin");
    let sent = lp.send_to("send", a, b"dg", Some(&mut b_addr), 0);
    assert_eq!(lp.result("send", sent), 2);
    let got = lp.recv_from("recv", b, &mut buf, Some(&mut from), 0, 0);
    assert_eq!(lp.result("recv", got), 2);
    assert_eq!(addr_bytes(&from), addr_bytes(&a_addr));
    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_RDWR;
    let opened = lp.open_at("open", AA_IO_CWD, &file, flags, 0o600);
    let fd = lp.result("open", opened);
    assert!(fd >= 0, "open: {fd}");
    lp.track_fd(fd as i32);
    let mut write = AaIoOp::new(AA_IO_WRITE, fd);
    write.buf = b"0123456789".as_ptr().cast_mut();
    write.len = 10;
    write.offset = 0;
    let wrote = lp.submit("write", &mut write, 0);
    assert_eq!(lp.result("write", wrote), 10);
    if caps & AA_CAP_IO_FTRUNCATE != 0 {
        let cut = lp.file_request("truncate", AA_IO_FTRUNCATE, fd as i32, 0, 4);
        assert_eq!(lp.result("truncate", cut), 0);
    }
    let synced = lp.file_request("fsync", AA_IO_FSYNC, fd as i32, AA_IO_DATASYNC, 0);
    assert_eq!(lp.result("fsync", synced), 0);
    let got = lp.statx("stat", AA_IO_CWD, &file, &mut stat, 0);
    assert_eq!(lp.result("stat", got), 0);
    let made = lp.path_request("mkdir", AA_IO_MKDIRAT, AA_IO_CWD, &sub, 0, |op| {
        op.mode = 0o700
    });
    assert_eq!(lp.result("mkdir", made), 0);
    let renamed = lp.rename_at("rename", AA_IO_CWD, &file, AA_IO_CWD, &moved);
    assert_eq!(lp.result("rename", renamed), 0);
    let gone = lp.path_request("unlink", AA_IO_UNLINKAT, AA_IO_CWD, &moved, 0, |_| {});
    assert_eq!(lp.result("unlink", gone), 0);
    let removed = lp.path_request(
        "rmdir",
        AA_IO_UNLINKAT,
        AA_IO_CWD,
        &sub,
        AA_IO_REMOVEDIR,
        |_| {},
    );
    assert_eq!(lp.result("rmdir", removed), 0);
    mark("native-end");
    let expected = if caps & AA_CAP_IO_FTRUNCATE != 0 {
        4
    } else {
        10
    };
    assert_eq!(stat.size, expected);
    assert!(!dir.path().join("sub").exists());
    lp.finish();
    mark("end");
    println!("{MARK} native done");
}

#[test]
fn io_uring_reactor_runs_datagram_and_file_requests_in_the_ring() {
    let case = "io_uring_reactor_runs_datagram_and_file_requests_in_the_ring";
    if let Ok(library) = std::env::var(CHILD_ENV) {
        child(Path::new(&library));
        return;
    }
    if let Err(why) = strace_works() {
        eprintln!("SKIPPED {case}: {why}");
        return;
    }
    let library = library();
    if let Err(why) = uring_available(&library) {
        eprintln!("SKIPPED {case}: {why}");
        return;
    }
    let log = std::env::temp_dir().join(format!("uring-native-{}.strace", std::process::id()));
    let out = Command::new("strace")
        .arg("-f")
        .arg("-qq")
        .arg("-o")
        .arg(&log)
        .arg("-e")
        .arg(format!("trace=io_uring_enter,write,{}", BLOCKING.join(",")))
        .arg(std::env::current_exe().expect("current_exe"))
        .args([
            "--exact",
            &format!("uring_native::{case}"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &library)
        .env_remove("ASYNC_REACTOR")
        .env_remove("ASYNC_SCHEDULER")
        .output()
        .expect("run the child under strace");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("{MARK} native done")), "{stdout}");
    let trace = std::fs::read_to_string(&log).expect("strace log");
    let _ = std::fs::remove_file(&log);
    let phases = Phases::parse(&trace);
    let made: Vec<String> = BLOCKING
        .iter()
        .filter(|c| phases.count("native", c) > 0)
        .map(|c| format!("{c} x{}", phases.count("native", c)))
        .collect();
    let enters = phases.count("native", "io_uring_enter");
    println!(
        "uring native proof: datagram and file requests -> {enters} io_uring_enter, \
         blocking calls on the loop thread: {}",
        if made.is_empty() {
            "none".to_owned()
        } else {
            made.join(", ")
        }
    );
    assert!(enters >= 1, "the requests never reached the ring");
    assert!(made.is_empty(), "system calls outside the ring: {made:?}");
}
