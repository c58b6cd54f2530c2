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

use crate::{ensure, ensure_eq, setup_failed};
use async_abi::*;

use super::harness::{Alive, Loop, Rec};
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

/// Creates the file `path`, as the case's own setup.
#[track_caller]
fn make_file(path: &std::path::Path) {
    if let Err(e) = File::create(path) {
        setup_failed!("create {}: {e}", path.display());
    }
}

/// Appends `data` to `path`, as the case's own setup.
#[track_caller]
fn append(path: &std::path::Path, data: &[u8]) {
    let written = OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(data));
    if let Err(e) = written {
        setup_failed!("append to {}: {e}", path.display());
    }
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
    ensure_eq!(
        "R-FS-1",
        lp.alive(),
        Alive(1),
        "fs_watch_new(a directory, flags 0): alive()"
    );
    let file = dir.path().join("a.txt");
    make_file(&file);
    ensure_eq!(
        "R-FS-1",
        lp.log(),
        vec![],
        "fs_watch_new(a directory, flags 0), a.txt created in it, before any run_once: the \
         callbacks",
    );
    lp.run_until("the creation", |log| has(log, "w", AA_FS_RENAME, "a.txt"));
    let created = changes(&lp.take_log(), "w");
    ensure_eq!(
        "R-FS-1",
        created[0],
        (0, AA_FS_RENAME, "a.txt".to_string()),
        "fs_watch_new(a directory, flags 0), a.txt created in it, run_once until a report of it: \
         the first report (status, AA_FS_RENAME=1, name)",
    );
    ensure!("R-FS-1",
        created[1..].iter().all(|c| *c == (0, AA_FS_CHANGE, "a.txt".to_string()));
        did: "fs_watch_new(a directory, flags 0), a.txt created in it, run_once until a report",
        wants: "AA_FS_RENAME for a.txt first, then only AA_FS_CHANGE for a.txt",
        got: format!("the reports (status, bits, name) {created:?}"));
    append(&file, b"hello");
    lp.run_until("the write", |log| has(log, "w", AA_FS_CHANGE, "a.txt"));
    lp.run_once(0);
    let log = lp.log();
    ensure!("R-FS-1",
        changes(&log, "w").iter().all(|c| *c == (0, AA_FS_CHANGE, "a.txt".to_string()));
        did: "fs_watch_new(a directory), a.txt created and reported, then 5 bytes appended \
              to it, run_once until a report, run_once(0)",
        wants: "only AA_FS_CHANGE reports for a.txt",
        got: format!("the callbacks {log:?}"));
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
    make_file(&file);
    let lp = Loop::new(reactor);
    let path = file.as_os_str().as_encoded_bytes();
    lp.fs_watch("w", path, 0);
    append(&file, b"x");
    lp.run_until("the write", |log| has(log, "w", AA_FS_CHANGE, ""));
    lp.run_once(0);
    let log = lp.log();
    ensure!("R-FS-1",
        changes(&log, "w").iter().all(|c| *c == (0, AA_FS_CHANGE, String::new()));
        did: "fs_watch_new(a file, flags 0), 1 byte appended to it, run_once until a report, \
              run_once(0)",
        wants: "only AA_FS_CHANGE reports with an empty name",
        got: format!("the callbacks {log:?}"));
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
        Some(-libc::ENOENT),
        "fs_watch_new(a path that does not exist, flags 0): its status (None: created)"
    );
    ensure!("R-FS-2", !lp.last_error().is_empty();
        did: "fs_watch_new(a path that does not exist, flags 0), refused",
        wants: "a last_error_message describing the failure",
        got: "an empty last_error_message");
    ensure_eq!(
        "R-FS-2",
        lp.try_fs_watch("w", b"", 0).err(),
        Some(AA_E_INVALID),
        "fs_watch_new(an empty path, flags 0): its status (None: created)"
    );
    ensure_eq!(
        "R-FS-2",
        lp.alive(),
        Alive(0),
        "the refused fs_watch_new calls: alive()"
    );
    lp.run_once(0);
    ensure_eq!(
        "R-FS-2",
        lp.log(),
        vec![],
        "the refused fs_watch_new calls, run_once(0): the callbacks"
    );
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
    make_file(&dir.path().join("x"));
    lp.run_until("both watches", |log| {
        has(log, "a", AA_FS_RENAME, "x") && has(log, "b", AA_FS_RENAME, "x")
    });
    lp.dispose(a);
    lp.take_log();
    make_file(&dir.path().join("y"));
    lp.run_until("the other watch", |log| has(log, "b", AA_FS_RENAME, "y"));
    lp.run_once(0);
    let log = lp.log();
    ensure!("R-EV-3", changes(&log, "a").is_empty();
        did: "two watches a and b of one directory, x created and reported to both, \
              dispose(a), y created, run_once until b reported it, run_once(0)",
        wants: "no report to the disposed watch a",
        got: format!("the callbacks {log:?}"));
    lp.dispose(b);
    lp.take_log();
    make_file(&dir.path().join("z"));
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-EV-3",
        lp.log(),
        vec![],
        "two watches a and b of one directory, dispose(a), dispose(b), z created in it, \
         run_once(0) twice: the callbacks",
    );
    ensure_eq!(
        "R-EV-3",
        lp.alive(),
        Alive(0),
        "two watches of one directory, both disposed: alive()"
    );
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
    ensure_eq!(
        "R-EV-1",
        lp.cancel(w, REASON),
        AA_OK,
        "fs_watch_new(a directory, flags 0), cancel(the watch, reason -4444): its status"
    );
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(1),
        "fs_watch_new(a directory, flags 0), cancel(the watch, reason -4444): alive() (the \
         reason's callback is still to come)",
    );
    make_file(&dir.path().join("x"));
    lp.run_until_tag("w");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![Rec::FsWatch("w", REASON, 0, String::new())],
        "fs_watch_new(a directory, flags 0), cancel(the watch, reason -4444), x created in it, \
         run_once until a callback, run_once(0) twice: the callbacks (status, bits, name)",
    );
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(0),
        "fs_watch_new(a directory), cancel(reason -4444), the reason delivered: alive()"
    );
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
    if let Err(e) = std::fs::create_dir(&sub) {
        setup_failed!("mkdir {}: {e}", sub.display());
    }
    let lp = Loop::new(reactor);
    lp.fs_watch("w", sub.as_os_str().as_encoded_bytes(), 0);
    if let Err(e) = std::fs::remove_dir(&sub) {
        setup_failed!("rmdir {}: {e}", sub.display());
    }
    lp.run_until("the end of the watch", |log| {
        log.contains(&Rec::FsWatch("w", -libc::ENOENT, 0, String::new()))
    });
    lp.run_once(0);
    let seen = changes(&lp.log(), "w");
    ensure_eq!(
        "R-FS-3",
        seen.last(),
        Some(&(-libc::ENOENT, 0, String::new())),
        "fs_watch_new(a directory, flags 0), the directory removed, run_once until a callback \
         with -ENOENT, run_once(0): the last report of {seen:?}",
    );
    ensure!("R-FS-3", seen.contains(&(0, AA_FS_RENAME, String::new()));
        did: "fs_watch_new(a directory, flags 0), the directory removed, run_once until a \
              callback with -ENOENT, run_once(0)",
        wants: "an AA_FS_RENAME report with an empty name before the end",
        got: format!("the reports (status, bits, name) {seen:?}"));
    ensure_eq!(
        "R-FS-3",
        seen.iter().filter(|c| c.0 != 0).count(),
        1,
        "fs_watch_new(a directory, flags 0), the directory removed, run_once until a callback \
         with -ENOENT, run_once(0): the reports with a status other than AA_OK in {seen:?}",
    );
    ensure_eq!(
        "R-FS-3",
        lp.alive(),
        Alive(0),
        "fs_watch_new(a directory, flags 0), the directory removed, the watch ended with \
         -ENOENT: alive()",
    );
    lp.finish();
}
