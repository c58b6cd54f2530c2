//! Tier: file requests (ABI 1.1, `AA_CAP_IO_FILE`, `AA_CAP_IO_FTRUNCATE`).
//! Each case works in a scratch directory and checks what the request did
//! against what std sees: `AA_IO_OPENAT` (create, exclusive, missing,
//! relative to a directory descriptor, close-on-exec), `AA_IO_STATX`
//! (every `AaStat` field against std's `Metadata`, symbolic links followed
//! or not, a descriptor's own metadata), `AA_IO_FSYNC`, `AA_IO_MKDIRAT`,
//! `AA_IO_RENAMEAT`, `AA_IO_UNLINKAT` with their errors, `AA_IO_FTRUNCATE`,
//! and cancellation and disposal of file requests (a disposed open leaks no
//! descriptor).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::{ensure, ensure_eq, ensure_ne, rule_failed};
use async_abi::*;

use super::harness::{Loop, Rec};
use super::os::TempDir;
use super::plugin::Reactor;
use super::requests::{path_bytes, skip_without_instance};

/// The cases of this tier, for a caller that checks which ran.
pub const CASES: &[&str] = &[
    "openat_creates_opens_and_reports_errno",
    "statx_matches_std_metadata_and_follows_links_unless_nofollow",
    "fsync_and_datasync_flush_a_file",
    "mkdirat_renameat_unlinkat_change_the_tree",
    "ftruncate_sets_the_length",
    "cancel_and_dispose_of_file_requests",
];

const REASON: AaStatus = -4747;

/// A loop for `case`, or `None` (printed as skipped) if its instance lacks
/// `caps`.
fn start(reactor: &Reactor, caps: u64, case: &str) -> Option<Loop> {
    let lp = Loop::new(reactor);
    if skip_without_instance(&lp, reactor, AA_CAP_IO | caps, case) {
        lp.finish();
        return None;
    }
    Some(lp)
}

fn neg(errno: i32) -> i64 {
    -i64::from(errno)
}

/// Whether `fd` has `FD_CLOEXEC`.
fn cloexec(fd: i32) -> bool {
    // SAFETY: plain syscall on a descriptor the case owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    ensure!(
        "R-IO-15",
        flags >= 0,
        "fcntl: {}",
        std::io::Error::last_os_error()
    );
    flags & libc::FD_CLOEXEC != 0
}

/// Opens `path` through the reactor; the loop closes it at the end.
#[track_caller]
fn open(lp: &Loop, path: &Path, flags: i32, mode: u32) -> i32 {
    let got = lp.open_at("open", AA_IO_CWD, &path_bytes(path), flags, mode);
    let fd = lp.result("open", got);
    ensure!("R-IO-15", fd >= 0, "open {}: {fd}", path.display());
    lp.track_fd(fd as i32)
}

/// Checks `AA_IO_OPENAT`: `O_CREAT | O_EXCL` makes the file with the mode
/// asked (less the umask, so 0600 survives any usual umask) and returns a
/// close-on-exec descriptor that reads and writes it; a second exclusive
/// create is `-EEXIST`; a missing file `-ENOENT`; a path relative to a
/// directory descriptor opens inside that directory.
pub fn openat_creates_opens_and_reports_errno(reactor: &Reactor) {
    let case = "openat_creates_opens_and_reports_errno";
    let Some(lp) = start(reactor, AA_CAP_IO_FILE, case) else {
        return;
    };
    let dir = TempDir::new("open");
    let file = dir.path().join("f");
    let fd = open(
        &lp,
        &file,
        libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
        0o600,
    );
    ensure!("R-IO-15", cloexec(fd), "the reactor adds O_CLOEXEC");
    let meta = std::fs::metadata(&file).expect("created");
    ensure!("R-IO-15", meta.is_file());
    ensure_eq!("R-IO-15", meta.permissions().mode() & 0o777, 0o600);
    let mut op = AaIoOp::new(AA_IO_WRITE, i64::from(fd));
    op.buf = b"hello".as_ptr().cast_mut();
    op.len = 5;
    op.offset = 0;
    let got = lp.submit("write", &mut op, 0);
    ensure_eq!("R-IO-15", lp.result("write", got), 5);
    ensure_eq!("R-IO-15", std::fs::read(&file).unwrap(), b"hello");
    let again = lp.open_at(
        "again",
        AA_IO_CWD,
        &path_bytes(&file),
        libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
        0o600,
    );
    ensure_eq!("R-IO-15", lp.result("again", again), neg(libc::EEXIST));
    let missing = lp.open_at(
        "missing",
        AA_IO_CWD,
        &path_bytes(&dir.path().join("no")),
        0,
        0,
    );
    ensure_eq!("R-IO-15", lp.result("missing", missing), neg(libc::ENOENT));
    let dirfd = open(&lp, dir.path(), libc::O_RDONLY | libc::O_DIRECTORY, 0);
    let inside = lp.open_at("inside", i64::from(dirfd), b"f", libc::O_RDONLY, 0);
    let inside = lp.result("inside", inside);
    ensure!("R-IO-15", inside >= 0, "relative open: {inside}");
    lp.track_fd(inside as i32);
    let mut buf = [0u8; 8];
    let mut op = AaIoOp::new(AA_IO_READ, inside);
    op.buf = buf.as_mut_ptr();
    op.len = buf.len();
    op.offset = 0;
    let got = lp.submit("read", &mut op, 0);
    ensure_eq!("R-IO-15", lp.result("read", got), 5);
    ensure_eq!("R-IO-15", &buf[..5], b"hello");
    ensure_eq!("R-IO-15", lp.log(), vec![]);
    lp.finish();
}

/// Checks `AA_IO_STATX` field by field against std's `Metadata` (type and
/// mode, size, links, owner, blocks, inode, device, times to the
/// nanosecond); a symbolic link is followed unless `AA_IO_NOFOLLOW`; an
/// empty path gives the descriptor's own metadata; a missing path is
/// `-ENOENT` and leaves the `AaStat` untouched.
pub fn statx_matches_std_metadata_and_follows_links_unless_nofollow(reactor: &Reactor) {
    let case = "statx_matches_std_metadata_and_follows_links_unless_nofollow";
    let Some(lp) = start(reactor, AA_CAP_IO_FILE, case) else {
        return;
    };
    let dir = TempDir::new("statx");
    let file = dir.path().join("f");
    std::fs::write(&file, b"12345").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("l");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let std_meta = std::fs::metadata(&file).unwrap();
    let mut st = AaStat::default();
    let got = lp.statx("stat", AA_IO_CWD, &path_bytes(&link), &mut st, 0);
    ensure_eq!("R-IO-15", lp.result("stat", got), 0);
    ensure_eq!("R-IO-15", st.mode, libc::S_IFREG | 0o640);
    ensure_eq!("R-IO-15", st.mode, std_meta.mode());
    ensure_eq!("R-IO-15", st.size, 5);
    ensure_eq!(
        "R-IO-15",
        (st.nlink, st.uid, st.gid, st.ino, st.dev, st.rdev),
        (
            std_meta.nlink(),
            std_meta.uid(),
            std_meta.gid(),
            std_meta.ino(),
            std_meta.dev(),
            std_meta.rdev()
        )
    );
    ensure_eq!(
        "R-IO-15",
        (st.blocks, st.blksize),
        (std_meta.blocks(), std_meta.blksize())
    );
    ensure_eq!(
        "R-IO-15",
        (st.mtime.sec, i64::from(st.mtime.nsec)),
        (std_meta.mtime(), std_meta.mtime_nsec())
    );
    ensure_eq!(
        "R-IO-15",
        (st.ctime.sec, i64::from(st.ctime.nsec)),
        (std_meta.ctime(), std_meta.ctime_nsec())
    );
    ensure_eq!(
        "R-IO-15",
        (st.atime.sec, i64::from(st.atime.nsec)),
        (std_meta.atime(), std_meta.atime_nsec())
    );
    match std_meta.created() {
        Ok(created) => {
            ensure_ne!(
                "R-IO-15",
                st.valid & AA_STAT_BTIME,
                0,
                "std sees a creation time"
            );
            let since = created.duration_since(std::time::UNIX_EPOCH).unwrap();
            ensure_eq!(
                "R-IO-15",
                (st.btime.sec, st.btime.nsec),
                (since.as_secs() as i64, since.subsec_nanos())
            );
        }
        Err(_) => ensure_eq!("R-IO-15", st.valid & AA_STAT_BTIME, 0),
    }
    let mut lst = AaStat::default();
    let got = lp.statx(
        "lstat",
        AA_IO_CWD,
        &path_bytes(&link),
        &mut lst,
        AA_IO_NOFOLLOW,
    );
    ensure_eq!("R-IO-15", lp.result("lstat", got), 0);
    ensure_eq!("R-IO-15", lst.mode & libc::S_IFMT, libc::S_IFLNK);
    ensure_eq!(
        "R-IO-15",
        lst.ino,
        std::fs::symlink_metadata(&link).unwrap().ino()
    );
    let fd = open(&lp, &file, libc::O_RDONLY, 0);
    let mut fst = AaStat::default();
    let got = lp.statx("fstat", i64::from(fd), b"", &mut fst, 0);
    ensure_eq!("R-IO-15", lp.result("fstat", got), 0);
    ensure_eq!("R-IO-15", fst, st, "the descriptor's own metadata");
    let mut untouched = AaStat::default();
    let got = lp.statx(
        "missing",
        AA_IO_CWD,
        &path_bytes(&dir.path().join("no")),
        &mut untouched,
        0,
    );
    ensure_eq!("R-IO-15", lp.result("missing", got), neg(libc::ENOENT));
    ensure_eq!("R-IO-15", untouched, AaStat::default());
    lp.finish();
}

/// Checks `AA_IO_FSYNC`, with and without `AA_IO_DATASYNC`, on a file the
/// reactor opened: both succeed, and the data is there; on a descriptor
/// that is not open, `-EBADF` (at submission or as the one result).
pub fn fsync_and_datasync_flush_a_file(reactor: &Reactor) {
    let case = "fsync_and_datasync_flush_a_file";
    let Some(lp) = start(reactor, AA_CAP_IO_FILE, case) else {
        return;
    };
    let dir = TempDir::new("fsync");
    let file = dir.path().join("f");
    let fd = open(&lp, &file, libc::O_CREAT | libc::O_WRONLY, 0o600);
    super::fds::put(fd, b"data");
    let got = lp.file_request("fsync", AA_IO_FSYNC, fd, 0, 0);
    ensure_eq!("R-IO-15", lp.result("fsync", got), 0);
    let got = lp.file_request("fdatasync", AA_IO_FSYNC, fd, AA_IO_DATASYNC, 0);
    ensure_eq!("R-IO-15", lp.result("fdatasync", got), 0);
    ensure_eq!("R-IO-15", std::fs::read(&file).unwrap(), b"data");
    let got = lp.file_request("bad", AA_IO_FSYNC, super::fds::BAD_FD, 0, 0);
    ensure_eq!("R-IO-15", lp.result("bad", got), neg(libc::EBADF));
    ensure_eq!("R-IO-15", lp.log(), vec![]);
    lp.finish();
}

/// Checks the tree requests against what std then sees: `AA_IO_MKDIRAT`
/// (mode, then `-EEXIST`), `AA_IO_RENAMEAT` across directories given by
/// descriptor and replacing a target, `AA_IO_UNLINKAT` of a file, of a
/// directory only with `AA_IO_REMOVEDIR` (`-EISDIR` without), of a missing
/// name (`-ENOENT`), and `-ENOTEMPTY` for a directory with entries.
pub fn mkdirat_renameat_unlinkat_change_the_tree(reactor: &Reactor) {
    let case = "mkdirat_renameat_unlinkat_change_the_tree";
    let Some(lp) = start(reactor, AA_CAP_IO_FILE, case) else {
        return;
    };
    let dir = TempDir::new("tree");
    let sub = dir.path().join("sub");
    let mkdir = |tag: &'static str, path: &Path| {
        let got = lp.path_request(tag, AA_IO_MKDIRAT, AA_IO_CWD, &path_bytes(path), 0, |op| {
            op.mode = 0o750;
        });
        lp.result(tag, got)
    };
    ensure_eq!("R-IO-15", mkdir("mkdir", &sub), 0);
    let meta = std::fs::metadata(&sub).unwrap();
    ensure!("R-IO-15", meta.is_dir());
    ensure_eq!("R-IO-15", meta.permissions().mode() & 0o777, 0o750);
    ensure_eq!("R-IO-15", mkdir("mkdir_again", &sub), neg(libc::EEXIST));
    std::fs::write(dir.path().join("a"), b"A").unwrap();
    std::fs::write(sub.join("b"), b"old").unwrap();
    let top = open(&lp, dir.path(), libc::O_RDONLY | libc::O_DIRECTORY, 0);
    let below = open(&lp, &sub, libc::O_RDONLY | libc::O_DIRECTORY, 0);
    let got = lp.rename_at("rename", i64::from(top), b"a", i64::from(below), b"b");
    ensure_eq!("R-IO-15", lp.result("rename", got), 0);
    ensure!("R-IO-15", !dir.path().join("a").exists());
    ensure_eq!(
        "R-IO-15",
        std::fs::read(sub.join("b")).unwrap(),
        b"A",
        "replaced"
    );
    let unlink = |tag: &'static str, path: &Path, flags: u32| {
        let got = lp.path_request(
            tag,
            AA_IO_UNLINKAT,
            AA_IO_CWD,
            &path_bytes(path),
            flags,
            |_| {},
        );
        lp.result(tag, got)
    };
    ensure_eq!(
        "R-IO-15",
        unlink("rmdir_full", &sub, AA_IO_REMOVEDIR),
        neg(libc::ENOTEMPTY)
    );
    ensure_eq!("R-IO-15", unlink("unlink", &sub.join("b"), 0), 0);
    ensure!("R-IO-15", !sub.join("b").exists());
    ensure_eq!(
        "R-IO-15",
        unlink("unlink_missing", &sub.join("b"), 0),
        neg(libc::ENOENT)
    );
    ensure_eq!("R-IO-15", unlink("unlink_dir", &sub, 0), neg(libc::EISDIR));
    ensure_eq!("R-IO-15", unlink("rmdir", &sub, AA_IO_REMOVEDIR), 0);
    ensure!("R-IO-15", !sub.exists());
    let got = lp.rename_at(
        "rename_missing",
        AA_IO_CWD,
        &path_bytes(&sub),
        AA_IO_CWD,
        b"x",
    );
    ensure_eq!(
        "R-IO-15",
        lp.result("rename_missing", got),
        neg(libc::ENOENT)
    );
    ensure_eq!("R-IO-15", lp.log(), vec![]);
    lp.finish();
}

/// Checks `AA_IO_FTRUNCATE`: it shortens a file, then extends it with
/// zeros; on a read-only descriptor it fails with `-EINVAL` (the kernel's
/// answer for a descriptor not open for writing).
pub fn ftruncate_sets_the_length(reactor: &Reactor) {
    let case = "ftruncate_sets_the_length";
    let Some(lp) = start(reactor, AA_CAP_IO_FTRUNCATE, case) else {
        return;
    };
    let dir = TempDir::new("trunc");
    let file = dir.path().join("f");
    std::fs::write(&file, b"0123456789").unwrap();
    let fd = open(&lp, &file, libc::O_WRONLY, 0);
    let got = lp.file_request("shorten", AA_IO_FTRUNCATE, fd, 0, 3);
    ensure_eq!("R-IO-15", lp.result("shorten", got), 0);
    ensure_eq!("R-IO-15", std::fs::read(&file).unwrap(), b"012");
    let got = lp.file_request("extend", AA_IO_FTRUNCATE, fd, 0, 6);
    ensure_eq!("R-IO-15", lp.result("extend", got), 0);
    ensure_eq!("R-IO-15", std::fs::read(&file).unwrap(), b"012\0\0\0");
    let ro = open(&lp, &file, libc::O_RDONLY, 0);
    let got = lp.file_request("read_only", AA_IO_FTRUNCATE, ro, 0, 1);
    ensure_eq!("R-IO-15", lp.result("read_only", got), neg(libc::EINVAL));
    lp.finish();
}

/// Checks cancel and dispose of file requests: one cancelled before the
/// loop ran never starts (its reason, the `AaStat` untouched); one cancelled
/// after reports the reason or its real result, exactly once, with the
/// `AaStat` filled only for the result; an open disposed after the loop ran
/// never calls back and leaves no descriptor open on the file.
pub fn cancel_and_dispose_of_file_requests(reactor: &Reactor) {
    let case = "cancel_and_dispose_of_file_requests";
    let Some(lp) = start(reactor, AA_CAP_IO_FILE, case) else {
        return;
    };
    let dir = TempDir::new("cancel");
    let file = dir.path().join("f");
    std::fs::write(&file, b"xyz").unwrap();
    let path = path_bytes(&file);
    let mut st = AaStat::default();
    let early = lp.statx("early", AA_IO_CWD, &path, &mut st, 0).pending();
    ensure_eq!("R-IO-15", lp.cancel(early, REASON), AA_OK);
    lp.run_until_tag("early");
    lp.run_once(0);
    ensure_eq!(
        "R-IO-15",
        lp.take_log(),
        vec![Rec::Io("early", i64::from(REASON))]
    );
    ensure_eq!("R-IO-15", st, AaStat::default(), "never started");
    let mut late = AaStat::default();
    let ev = lp.statx("late", AA_IO_CWD, &path, &mut late, 0).pending();
    lp.run_once(0);
    let _ = lp.cancel(ev, REASON);
    lp.run_until_tag("late");
    lp.run_once(0);
    match lp.take_log()[..] {
        [Rec::Io("late", 0)] => ensure_eq!("R-IO-15", late.size, 3),
        [Rec::Io("late", r)] if r == i64::from(REASON) => {
            ensure_eq!("R-IO-15", late, AaStat::default())
        }
        ref other => rule_failed!(
            "R-IO-15",
            "one callback, the result or the reason: {other:?}"
        ),
    }
    let opened = lp
        .open_at("opened", AA_IO_CWD, &path, libc::O_RDONLY, 0)
        .pending();
    lp.run_once(0);
    lp.dispose(opened);
    // The open may have completed inside that iteration (a cached lookup
    // completes at submission): then the case owns the descriptor it was
    // given. Otherwise the reactor closes it when the kernel is done.
    for rec in lp.take_tagged("opened") {
        if let Rec::Io(_, fd) = rec {
            ensure!("R-IO-15", fd >= 0, "open: {fd}");
            lp.track_fd(fd as i32);
        }
    }
    lp.finish_when_idle();
    ensure_eq!(
        "R-IO-15",
        open_descriptors_of(&file),
        0,
        "a disposed open leaked its fd"
    );
}

/// How many of this process's descriptors are open on `file`.
fn open_descriptors_of(file: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|target| target == file)
                .count()
        })
        .unwrap_or(0)
}
