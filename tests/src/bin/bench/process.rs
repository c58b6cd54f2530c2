//! `process`: starting a child and waiting for its exit.
//!
//! - spawn + wait: `Command::new("true")`, spawned and waited for, one
//!   after another (ns per child): this runtime on the mio and io_uring
//!   reactors (std's spawn on the loop thread, the exit through the
//!   reactor's pidfd watch), std's `Command` blocking a thread, and
//!   `tokio::process` on a current-thread runtime;
//! - output: `Command::new("echo").arg("hi").output()` (two pipes read to
//!   their end, plus the wait), the same four ways.
//!
//! Most of the time is the kernel's: `posix_spawn`/`vfork`, `exec` of the
//! program and its exit; the differences are what each runtime adds around
//! them (pipes made non-blocking, the exit watch, the wake-up).
//!
//! Excluded: runtime start-up and teardown; a few warm-up children before
//! the timed loop. The median of several runs.

use std::time::Instant;

use async_std_api::process::Command;
use async_std_api::Builder;

use crate::report::{median, NsPerOp, Report};

const REPS: usize = 5;
const ITERS: u64 = 400;
const WARM_UP: u64 = 10;

/// What each child does.
#[derive(Clone, Copy)]
enum Job {
    /// `true`, spawned and waited for.
    Wait,
    /// `echo hi`, its output collected.
    Output,
}

fn ours_once(job: Job) {
    match job {
        Job::Wait => {
            let status = Command::new("true").spawn().unwrap().wait().unwrap();
            assert!(status.success());
        }
        Job::Output => {
            let out = Command::new("echo").arg("hi").output().unwrap();
            assert_eq!(out.stdout, b"hi\n");
        }
    }
}

fn ours(reactor: &'static str, job: Job) -> NsPerOp {
    median(REPS, ITERS, || {
        Builder::new()
            .reactor(reactor)
            .run(move || {
                for _ in 0..WARM_UP {
                    ours_once(job);
                }
                let start = Instant::now();
                for _ in 0..ITERS {
                    ours_once(job);
                }
                start.elapsed()
            })
            .expect("runtime")
    })
}

fn std_thread(job: Job) -> NsPerOp {
    let once = move || match job {
        Job::Wait => {
            let status = std::process::Command::new("true")
                .spawn()
                .unwrap()
                .wait()
                .unwrap();
            assert!(status.success());
        }
        Job::Output => {
            let out = std::process::Command::new("echo")
                .arg("hi")
                .output()
                .unwrap();
            assert_eq!(out.stdout, b"hi\n");
        }
    };
    median(REPS, ITERS, || {
        std::thread::spawn(move || {
            for _ in 0..WARM_UP {
                once();
            }
            let start = Instant::now();
            for _ in 0..ITERS {
                once();
            }
            start.elapsed()
        })
        .join()
        .expect("std thread")
    })
}

fn tokio_rt(job: Job) -> NsPerOp {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    async fn once(job: Job) {
        match job {
            Job::Wait => {
                let status = tokio::process::Command::new("true")
                    .spawn()
                    .unwrap()
                    .wait()
                    .await
                    .unwrap();
                assert!(status.success());
            }
            Job::Output => {
                let out = tokio::process::Command::new("echo")
                    .arg("hi")
                    .output()
                    .await
                    .unwrap();
                assert_eq!(out.stdout, b"hi\n");
            }
        }
    }
    median(REPS, ITERS, || {
        rt.block_on(async move {
            for _ in 0..WARM_UP {
                once(job).await;
            }
            let start = Instant::now();
            for _ in 0..ITERS {
                once(job).await;
            }
            start.elapsed()
        })
    })
}

/// Both measurements, this runtime's first (they run before any peer's,
/// as in `main.rs`).
pub(crate) fn all(report: &mut Report) {
    for (scenario, job) in [
        ("process spawn+wait", Job::Wait),
        ("process output", Job::Output),
    ] {
        report.baseline(scenario, "this runtime, mio reactor", ours("mio", job));
        report.add(
            scenario,
            "this runtime, io_uring reactor",
            ours("uring", job),
        );
        report.add(scenario, "std::process on a thread", std_thread(job));
        report.add(scenario, "tokio::process, current_thread", tokio_rt(job));
    }
}
