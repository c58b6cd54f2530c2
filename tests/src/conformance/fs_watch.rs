//! Tier: filesystem watches (`AA_CAP_FS_WATCH`). Creating an entry in a
//! watched directory reports `AA_FS_RENAME` with its name, writing it
//! `AA_FS_CHANGE`; a watched file reports its own changes with an empty
//! name; a missing path fails with `-ENOENT`; two watches of one path are
//! both told; cancel delivers the reason once; dispose stops the reports.
//!
//! Filesystem notifications are queued by the system call that makes the
//! change, so once it returned a `run_once` sees them: cases that check
//! that nothing is reported run the loop without waiting.

use std::fs::{File, OpenOptions};
use std::io::Write;

use crate::{ensure, ensure_eq};
use async_abi::*;

use super::harness::{Loop, Rec};
use super::os::TempDir;
use super::plugin::Reactor;

const REASON: AaStatus = -4444;

/// The records of watch `tag`: (status, bits, name).
fn changes(log: &[Rec], tag: &str) -> Vec<(AaStatus, u32, String)> {
    log.iter()
        .filter_map(|r| match r {
            Rec::FsWatch(t, status, bits, name) if *t == tag => {
                Some((*status, *bits, name.clone()))
            }
            _ => None,
        })
        .collect()
}

fn has(log: &[Rec], tag: &str, bit: u32, name: &str) -> bool {
    changes(log, tag)
        .iter()
        .any(|(s, b, n)| *s == 0 && b & bit != 0 && n == name)
}

#[track_caller]
fn append(path: &std::path::Path, data: &[u8]) {
    let mut f = OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open for append");
    f.write_all(data).expect("write");
}

/// Checks that creating a file in a watched directory reports a rename with
/// its name, and writing it a change with its name.
pub fn creating_then_writing_a_file_reports_rename_then_change(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_FS_WATCH,
        "creating_then_writing_a_file_reports_rename_then_change",
    ) {
        return;
    }
    let dir = TempDir::new("fs-create");
    let lp = Loop::new(reactor);
    lp.fs_watch("w", &dir.bytes(), 0);
    ensure_eq!("R-FS-1", lp.alive(), 1, "a watch keeps the loop alive");
    let file = dir.path().join("a.txt");
    File::create(&file).expect("create");
    ensure_eq!("R-FS-1", lp.log(), vec![], "called back outside run_once");
    lp.run_until("the creation", |log| has(log, "w", AA_FS_RENAME, "a.txt"));
    let created = changes(&lp.take_log(), "w");
    ensure_eq!("R-FS-1", created[0], (0, AA_FS_RENAME, "a.txt".to_string()));
    ensure!(
        "R-FS-1",
        created[1..]
            .iter()
            .all(|c| *c == (0, AA_FS_CHANGE, "a.txt".to_string())),
        "{created:?}"
    );
    append(&file, b"hello");
    lp.run_until("the write", |log| has(log, "w", AA_FS_CHANGE, "a.txt"));
    lp.run_once(0);
    ensure!(
        "R-FS-1",
        changes(&lp.log(), "w")
            .iter()
            .all(|c| *c == (0, AA_FS_CHANGE, "a.txt".to_string())),
        "{:?}",
        lp.log()
    );
    lp.finish();
}

/// Checks that a watch of a file reports its changes with an empty name.
pub fn watched_file_reports_its_changes_with_an_empty_name(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_FS_WATCH,
        "watched_file_reports_its_changes_with_an_empty_name",
    ) {
        return;
    }
    let dir = TempDir::new("fs-file");
    let file = dir.path().join("f");
    File::create(&file).expect("create");
    let lp = Loop::new(reactor);
    let path = file.as_os_str().as_encoded_bytes();
    lp.fs_watch("w", path, 0);
    append(&file, b"x");
    lp.run_until("the write", |log| has(log, "w", AA_FS_CHANGE, ""));
    lp.run_once(0);
    ensure!(
        "R-FS-1",
        changes(&lp.log(), "w")
            .iter()
            .all(|c| *c == (0, AA_FS_CHANGE, String::new())),
        "{:?}",
        lp.log()
    );
    lp.finish();
}

/// Checks that a path that does not exist fails with `-ENOENT` and no
/// callback (AA-R8), and an empty path with `AA_E_INVALID`.
pub fn missing_path_fails_with_enoent(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_FS_WATCH, "missing_path_fails_with_enoent") {
        return;
    }
    let dir = TempDir::new("fs-missing");
    let lp = Loop::new(reactor);
    let missing = dir.path().join("missing");
    ensure_eq!(
        "R-FS-2",
        lp.try_fs_watch("w", missing.as_os_str().as_encoded_bytes(), 0)
            .err(),
        Some(-libc::ENOENT)
    );
    ensure!("R-FS-2", !lp.last_error().is_empty());
    ensure_eq!(
        "R-FS-2",
        lp.try_fs_watch("w", b"", 0).err(),
        Some(AA_E_INVALID)
    );
    ensure_eq!("R-FS-2", lp.alive(), 0);
    lp.run_once(0);
    ensure_eq!("R-FS-2", lp.log(), vec![]);
    lp.finish();
}

/// Checks that two watches of one directory are both told, and that a
/// disposed watch is told nothing more while the other still is.
pub fn two_watches_of_one_path_and_dispose_stops_reports(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_FS_WATCH,
        "two_watches_of_one_path_and_dispose_stops_reports",
    ) {
        return;
    }
    let dir = TempDir::new("fs-two");
    let lp = Loop::new(reactor);
    let a = lp.fs_watch("a", &dir.bytes(), 0);
    let b = lp.fs_watch("b", &dir.bytes(), 0);
    File::create(dir.path().join("x")).expect("create");
    lp.run_until("both watches", |log| {
        has(log, "a", AA_FS_RENAME, "x") && has(log, "b", AA_FS_RENAME, "x")
    });
    lp.dispose(a);
    lp.take_log();
    File::create(dir.path().join("y")).expect("create");
    lp.run_until("the other watch", |log| has(log, "b", AA_FS_RENAME, "y"));
    lp.run_once(0);
    ensure!(
        "R-EV-3",
        changes(&lp.log(), "a").is_empty(),
        "{:?}",
        lp.log()
    );
    lp.dispose(b);
    lp.take_log();
    File::create(dir.path().join("z")).expect("create");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-EV-3", lp.log(), vec![], "a disposed watch reported");
    ensure_eq!("R-EV-3", lp.alive(), 0);
    lp.finish();
}

/// Checks that cancelling a watch calls it once with the reason and that
/// changes after it are not reported.
pub fn cancel_of_a_fs_watch_delivers_the_reason_once(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_FS_WATCH,
        "cancel_of_a_fs_watch_delivers_the_reason_once",
    ) {
        return;
    }
    let dir = TempDir::new("fs-cancel");
    let lp = Loop::new(reactor);
    let w = lp.fs_watch("w", &dir.bytes(), 0);
    ensure_eq!("R-EV-1", lp.cancel(w, REASON), AA_OK);
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        1,
        "the cancellation callback is still to come"
    );
    File::create(dir.path().join("x")).expect("create");
    lp.run_until_tag("w");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![Rec::FsWatch("w", REASON, 0, String::new())]
    );
    ensure_eq!("R-EV-1", lp.alive(), 0);
    lp.finish();
}

/// Checks that deleting the watched directory reports a rename of itself
/// (empty name), then ends the watch with one `-ENOENT`.
pub fn deleting_the_watched_directory_ends_the_watch_with_enoent(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_FS_WATCH,
        "deleting_the_watched_directory_ends_the_watch_with_enoent",
    ) {
        return;
    }
    let dir = TempDir::new("fs-delete");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let lp = Loop::new(reactor);
    lp.fs_watch("w", sub.as_os_str().as_encoded_bytes(), 0);
    std::fs::remove_dir(&sub).expect("rmdir");
    lp.run_until("the end of the watch", |log| {
        log.contains(&Rec::FsWatch("w", -libc::ENOENT, 0, String::new()))
    });
    lp.run_once(0);
    let seen = changes(&lp.log(), "w");
    ensure_eq!(
        "R-FS-3",
        seen.last(),
        Some(&(-libc::ENOENT, 0, String::new())),
        "{seen:?}"
    );
    ensure!(
        "R-FS-3",
        seen.contains(&(0, AA_FS_RENAME, String::new())),
        "{seen:?}"
    );
    ensure_eq!(
        "R-FS-3",
        seen.iter().filter(|c| c.0 != 0).count(),
        1,
        "one end: {seen:?}"
    );
    ensure_eq!("R-FS-3", lp.alive(), 0, "the watch has ended");
    lp.finish();
}
