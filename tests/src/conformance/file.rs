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

use crate::{ensure, ensure_eq, ensure_ne, rule_failed, setup_failed};
use async_abi::*;

use super::harness::{Loop, Rec};
use super::os::TempDir;
use super::plugin::Reactor;
use super::requests::{path_bytes, skip_without_instance};
use super::rules;

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
    if flags < 0 {
        setup_failed!(
            "fcntl(F_GETFD) of fd {fd}, opened by the reactor: {}",
            std::io::Error::last_os_error()
        );
    }
    flags & libc::FD_CLOEXEC != 0
}

/// Opens `path` through the reactor; the loop closes it at the end.
#[track_caller]
fn open(lp: &Loop, path: &Path, flags: i32, mode: u32) -> i32 {
    let got = lp.open_at("open", AA_IO_CWD, &path_bytes(path), flags, mode);
    let fd = lp.result("open", got);
    ensure!("R-IO-15", fd >= 0;
        did: format!(
            "io_submit(AA_IO_OPENAT of {}, flags {flags:#o}, mode {mode:#o}, fd AA_IO_CWD)",
            path.display()
        ),
        wants: "a descriptor (>= 0)",
        got: format!("the result {}", rules::result(fd)));
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
    let did = "io_submit(AA_IO_OPENAT of a new file, O_CREAT|O_EXCL|O_RDWR (no O_CLOEXEC), mode \
               0600, fd AA_IO_CWD)";
    ensure!("R-IO-15", cloexec(fd);
        did: did,
        wants: "a descriptor with FD_CLOEXEC (the reactor adds O_CLOEXEC)",
        got: format!("fd {fd} without FD_CLOEXEC"));
    let meta = std::fs::metadata(&file);
    ensure!("R-IO-15", meta.as_ref().is_ok_and(|m| m.is_file());
        did: did,
        wants: "a regular file created at the path",
        got: format!("std::fs::metadata of the path gave {meta:?}"));
    let Ok(meta) = meta else {
        unreachable!("checked above")
    };
    ensure_eq!(
        "R-IO-15",
        meta.permissions().mode() & 0o777,
        0o600,
        "io_submit(AA_IO_OPENAT of a new file, O_CREAT|O_EXCL|O_RDWR, mode 0600, fd AA_IO_CWD): \
         the file's permission bits",
    );
    let mut op = AaIoOp::new(AA_IO_WRITE, i64::from(fd));
    op.buf = b"hello".as_ptr().cast_mut();
    op.len = 5;
    op.offset = 0;
    let got = lp.submit("write", &mut op, 0);
    ensure_eq!(
        "R-IO-15",
        lp.result("write", got),
        5,
        "a file opened with AA_IO_OPENAT, io_submit(AA_IO_WRITE of \"hello\" at offset 0, flags \
         0): its result",
    );
    ensure_eq!(
        "R-IO-15",
        std::fs::read(&file).unwrap_or_default(),
        b"hello",
        "a file opened with AA_IO_OPENAT, \"hello\" written at offset 0 by AA_IO_WRITE: the \
         file's content (std::fs::read)",
    );
    let again = lp.open_at(
        "again",
        AA_IO_CWD,
        &path_bytes(&file),
        libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
        0o600,
    );
    ensure_eq!(
        "R-IO-15",
        lp.result("again", again),
        neg(libc::EEXIST),
        "io_submit(AA_IO_OPENAT of an existing file, O_CREAT|O_EXCL|O_RDWR, mode 0600): its result",
    );
    let missing = lp.open_at(
        "missing",
        AA_IO_CWD,
        &path_bytes(&dir.path().join("no")),
        0,
        0,
    );
    ensure_eq!(
        "R-IO-15",
        lp.result("missing", missing),
        neg(libc::ENOENT),
        "io_submit(AA_IO_OPENAT of a path that does not exist, flags 0): its result",
    );
    let dirfd = open(&lp, dir.path(), libc::O_RDONLY | libc::O_DIRECTORY, 0);
    let inside = lp.open_at("inside", i64::from(dirfd), b"f", libc::O_RDONLY, 0);
    let inside = lp.result("inside", inside);
    ensure!("R-IO-15", inside >= 0;
        did: "io_submit(AA_IO_OPENAT of \"f\" relative to a directory descriptor, O_RDONLY)",
        wants: "a descriptor (>= 0)",
        got: format!("the result {}", rules::result(inside)));
    lp.track_fd(inside as i32);
    let mut buf = [0u8; 8];
    let mut op = AaIoOp::new(AA_IO_READ, inside);
    op.buf = buf.as_mut_ptr();
    op.len = buf.len();
    op.offset = 0;
    let got = lp.submit("read", &mut op, 0);
    ensure_eq!(
        "R-IO-15",
        lp.result("read", got),
        5,
        "AA_IO_OPENAT of \"f\" relative to a directory descriptor (O_RDONLY), \
         io_submit(AA_IO_READ of 8 bytes at offset 0, flags 0): its result",
    );
    ensure_eq!(
        "R-IO-15",
        &buf[..5],
        b"hello",
        "AA_IO_OPENAT of \"f\" relative to a directory descriptor, an AA_IO_READ of 8 bytes at \
         offset 0: the data read",
    );
    ensure_eq!(
        "R-IO-15",
        lp.log(),
        vec![],
        "the file requests of the case (each run to its callback): callbacks left in the log",
    );
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
    std::fs::write(&file, b"12345")
        .unwrap_or_else(|e| setup_failed!("write of a 5-byte file: {e}"));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640))
        .unwrap_or_else(|e| setup_failed!("chmod 0640 of the file: {e}"));
    let link = dir.path().join("l");
    std::os::unix::fs::symlink(&file, &link)
        .unwrap_or_else(|e| setup_failed!("symlink to the file: {e}"));
    let std_meta = std::fs::metadata(&file)
        .unwrap_or_else(|e| setup_failed!("std::fs::metadata of the file: {e}"));
    let mut st = AaStat::default();
    let got = lp.statx("stat", AA_IO_CWD, &path_bytes(&link), &mut st, 0);
    ensure_eq!(
        "R-IO-15",
        lp.result("stat", got),
        0,
        "io_submit(AA_IO_STATX of a symlink to a 5-byte file of mode 0640, AA_IO_CWD, flags 0): \
         its result",
    );
    ensure_eq!(
        "R-IO-15",
        st.mode,
        libc::S_IFREG | 0o640,
        "AA_IO_STATX through a symlink to a 5-byte file chmod 0640: st.mode (S_IFREG|0640 \
         expected)",
    );
    ensure_eq!(
        "R-IO-15",
        st.mode,
        std_meta.mode(),
        "AA_IO_STATX through a symlink to a file: st.mode against std's metadata",
    );
    ensure_eq!(
        "R-IO-15",
        st.size,
        5,
        "AA_IO_STATX through a symlink to a 5-byte file: st.size"
    );
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
        ),
        "AA_IO_STATX through a symlink to a file: (nlink, uid, gid, ino, dev, rdev) against \
         std's metadata"
    );
    ensure_eq!(
        "R-IO-15",
        (st.blocks, st.blksize),
        (std_meta.blocks(), std_meta.blksize()),
        "AA_IO_STATX through a symlink to a file: (blocks, blksize) against std's metadata",
    );
    ensure_eq!(
        "R-IO-15",
        (st.mtime.sec, i64::from(st.mtime.nsec)),
        (std_meta.mtime(), std_meta.mtime_nsec()),
        "AA_IO_STATX through a symlink to a file: (mtime sec, nsec) against std's metadata",
    );
    ensure_eq!(
        "R-IO-15",
        (st.ctime.sec, i64::from(st.ctime.nsec)),
        (std_meta.ctime(), std_meta.ctime_nsec()),
        "AA_IO_STATX through a symlink to a file: (ctime sec, nsec) against std's metadata",
    );
    ensure_eq!(
        "R-IO-15",
        (st.atime.sec, i64::from(st.atime.nsec)),
        (std_meta.atime(), std_meta.atime_nsec()),
        "AA_IO_STATX through a symlink to a file: (atime sec, nsec) against std's metadata",
    );
    match std_meta.created() {
        Ok(created) => {
            ensure_ne!(
                "R-IO-15",
                st.valid & AA_STAT_BTIME,
                0,
                "AA_IO_STATX of a file whose creation time std sees: st.valid & AA_STAT_BTIME",
            );
            let since = created
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_else(|e| setup_failed!("a creation time before 1970: {e}"));
            ensure_eq!(
                "R-IO-15",
                (st.btime.sec, st.btime.nsec),
                (since.as_secs() as i64, since.subsec_nanos()),
                "AA_IO_STATX of a file whose creation time std sees: (btime sec, nsec) against \
                 std's",
            );
        }
        Err(_) => ensure_eq!(
            "R-IO-15",
            st.valid & AA_STAT_BTIME,
            0,
            "AA_IO_STATX of a file whose creation time std does not see: st.valid & AA_STAT_BTIME",
        ),
    }
    let mut lst = AaStat::default();
    let got = lp.statx(
        "lstat",
        AA_IO_CWD,
        &path_bytes(&link),
        &mut lst,
        AA_IO_NOFOLLOW,
    );
    ensure_eq!(
        "R-IO-15",
        lp.result("lstat", got),
        0,
        "io_submit(AA_IO_STATX of a symlink, op_flags AA_IO_NOFOLLOW): its result",
    );
    ensure_eq!(
        "R-IO-15",
        lst.mode & libc::S_IFMT,
        libc::S_IFLNK,
        "AA_IO_STATX of a symlink with AA_IO_NOFOLLOW: st.mode & S_IFMT (S_IFLNK expected)",
    );
    ensure_eq!(
        "R-IO-15",
        lst.ino,
        std::fs::symlink_metadata(&link)
            .unwrap_or_else(|e| setup_failed!("std::fs::symlink_metadata of the link: {e}"))
            .ino(),
        "AA_IO_STATX of a symlink with AA_IO_NOFOLLOW: st.ino against the link's \
         (std::fs::symlink_metadata)",
    );
    let fd = open(&lp, &file, libc::O_RDONLY, 0);
    let mut fst = AaStat::default();
    let got = lp.statx("fstat", i64::from(fd), b"", &mut fst, 0);
    ensure_eq!(
        "R-IO-15",
        lp.result("fstat", got),
        0,
        "io_submit(AA_IO_STATX of an open descriptor of the file, empty path): its result",
    );
    ensure_eq!(
        "R-IO-15",
        fst,
        st,
        "AA_IO_STATX of an open descriptor of the file, empty path: its AaStat against the one \
         through the symlink",
    );
    let mut untouched = AaStat::default();
    let got = lp.statx(
        "missing",
        AA_IO_CWD,
        &path_bytes(&dir.path().join("no")),
        &mut untouched,
        0,
    );
    ensure_eq!(
        "R-IO-15",
        lp.result("missing", got),
        neg(libc::ENOENT),
        "io_submit(AA_IO_STATX of a path that does not exist): its result",
    );
    ensure_eq!(
        "R-IO-15",
        untouched,
        AaStat::default(),
        "an AA_IO_STATX of a path that does not exist: its AaStat (untouched expected)",
    );
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
    ensure_eq!(
        "R-IO-15",
        lp.result("fsync", got),
        0,
        "\"data\" written to a file, io_submit(AA_IO_FSYNC of it, op_flags 0): its result",
    );
    let got = lp.file_request("fdatasync", AA_IO_FSYNC, fd, AA_IO_DATASYNC, 0);
    ensure_eq!(
        "R-IO-15",
        lp.result("fdatasync", got),
        0,
        "\"data\" written to a file, io_submit(AA_IO_FSYNC of it, op_flags AA_IO_DATASYNC): its \
         result",
    );
    ensure_eq!(
        "R-IO-15",
        std::fs::read(&file).unwrap_or_default(),
        b"data",
        "\"data\" written to a file and synced by AA_IO_FSYNC: the file's content",
    );
    let got = lp.file_request("bad", AA_IO_FSYNC, super::fds::BAD_FD, 0, 0);
    ensure_eq!(
        "R-IO-15",
        lp.result("bad", got),
        neg(libc::EBADF),
        "io_submit(AA_IO_FSYNC of a descriptor that is not open): its result",
    );
    ensure_eq!(
        "R-IO-15",
        lp.log(),
        vec![],
        "the AA_IO_FSYNC requests of the case: callbacks left in the log",
    );
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
    ensure_eq!(
        "R-IO-15",
        mkdir("mkdir", &sub),
        0,
        "io_submit(AA_IO_MKDIRAT of a new directory, mode 0750, fd AA_IO_CWD): its result",
    );
    let meta = std::fs::metadata(&sub);
    ensure!("R-IO-15", meta.as_ref().is_ok_and(|m| m.is_dir());
        did: "io_submit(AA_IO_MKDIRAT of a new directory, mode 0750, fd AA_IO_CWD) gave 0",
        wants: "a directory at the path",
        got: format!("std::fs::metadata of the path gave {meta:?}"));
    let Ok(meta) = meta else {
        unreachable!("checked above")
    };
    ensure_eq!(
        "R-IO-15",
        meta.permissions().mode() & 0o777,
        0o750,
        "a directory made by AA_IO_MKDIRAT with mode 0750: its permission bits",
    );
    ensure_eq!(
        "R-IO-15",
        mkdir("mkdir_again", &sub),
        neg(libc::EEXIST),
        "io_submit(AA_IO_MKDIRAT of an existing directory): its result",
    );
    std::fs::write(dir.path().join("a"), b"A")
        .unwrap_or_else(|e| setup_failed!("write of the file a: {e}"));
    std::fs::write(sub.join("b"), b"old")
        .unwrap_or_else(|e| setup_failed!("write of the file b: {e}"));
    let top = open(&lp, dir.path(), libc::O_RDONLY | libc::O_DIRECTORY, 0);
    let below = open(&lp, &sub, libc::O_RDONLY | libc::O_DIRECTORY, 0);
    let got = lp.rename_at("rename", i64::from(top), b"a", i64::from(below), b"b");
    ensure_eq!(
        "R-IO-15",
        lp.result("rename", got),
        0,
        "io_submit(AA_IO_RENAMEAT of \"a\" in one directory descriptor to \"b\" in another, \
         where \"b\" exists): its result",
    );
    ensure!("R-IO-15", !dir.path().join("a").exists();
        did: "io_submit(AA_IO_RENAMEAT of \"a\" in one directory descriptor to \"b\" in another)",
        wants: "no \"a\" left",
        got: "\"a\" still there");
    ensure_eq!(
        "R-IO-15",
        std::fs::read(sub.join("b")).unwrap_or_default(),
        b"A",
        "AA_IO_RENAMEAT of a file holding \"A\" over \"b\" holding \"old\": \"b\"'s content",
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
        neg(libc::ENOTEMPTY),
        "io_submit(AA_IO_UNLINKAT of a directory that is not empty, op_flags AA_IO_REMOVEDIR): \
         its result",
    );
    ensure_eq!(
        "R-IO-15",
        unlink("unlink", &sub.join("b"), 0),
        0,
        "io_submit(AA_IO_UNLINKAT of a file, op_flags 0): its result",
    );
    ensure!("R-IO-15", !sub.join("b").exists();
        did: "io_submit(AA_IO_UNLINKAT of a file, op_flags 0) gave 0",
        wants: "the file gone",
        got: "the file still there");
    ensure_eq!(
        "R-IO-15",
        unlink("unlink_missing", &sub.join("b"), 0),
        neg(libc::ENOENT),
        "io_submit(AA_IO_UNLINKAT of a file already unlinked, op_flags 0): its result",
    );
    ensure_eq!(
        "R-IO-15",
        unlink("unlink_dir", &sub, 0),
        neg(libc::EISDIR),
        "io_submit(AA_IO_UNLINKAT of a directory, op_flags 0 (no AA_IO_REMOVEDIR)): its result",
    );
    ensure_eq!(
        "R-IO-15",
        unlink("rmdir", &sub, AA_IO_REMOVEDIR),
        0,
        "io_submit(AA_IO_UNLINKAT of an empty directory, op_flags AA_IO_REMOVEDIR): its result",
    );
    ensure!("R-IO-15", !sub.exists();
        did: "io_submit(AA_IO_UNLINKAT of an empty directory, op_flags AA_IO_REMOVEDIR) gave 0",
        wants: "the directory gone",
        got: "the directory still there");
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
        neg(libc::ENOENT),
        "io_submit(AA_IO_RENAMEAT of a directory that no longer exists): its result",
    );
    ensure_eq!(
        "R-IO-15",
        lp.log(),
        vec![],
        "the tree requests of the case: callbacks left in the log",
    );
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
    std::fs::write(&file, b"0123456789")
        .unwrap_or_else(|e| setup_failed!("write of a 10-byte file: {e}"));
    let fd = open(&lp, &file, libc::O_WRONLY, 0);
    let got = lp.file_request("shorten", AA_IO_FTRUNCATE, fd, 0, 3);
    ensure_eq!(
        "R-IO-15",
        lp.result("shorten", got),
        0,
        "a 10-byte file opened O_WRONLY, io_submit(AA_IO_FTRUNCATE to 3 bytes): its result",
    );
    ensure_eq!(
        "R-IO-15",
        std::fs::read(&file).unwrap_or_default(),
        b"012",
        "a 10-byte file cut by AA_IO_FTRUNCATE to 3 bytes: its content",
    );
    let got = lp.file_request("extend", AA_IO_FTRUNCATE, fd, 0, 6);
    ensure_eq!(
        "R-IO-15",
        lp.result("extend", got),
        0,
        "a 3-byte file, io_submit(AA_IO_FTRUNCATE to 6 bytes): its result",
    );
    ensure_eq!(
        "R-IO-15",
        std::fs::read(&file).unwrap_or_default(),
        b"012\0\0\0",
        "a file cut to 3 bytes then extended to 6 by AA_IO_FTRUNCATE: its content (zeros added)",
    );
    let ro = open(&lp, &file, libc::O_RDONLY, 0);
    let got = lp.file_request("read_only", AA_IO_FTRUNCATE, ro, 0, 1);
    ensure_eq!(
        "R-IO-15",
        lp.result("read_only", got),
        neg(libc::EINVAL),
        "io_submit(AA_IO_FTRUNCATE to 1 byte of a descriptor opened O_RDONLY): its result",
    );
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
    std::fs::write(&file, b"xyz").unwrap_or_else(|e| setup_failed!("write of a 3-byte file: {e}"));
    let path = path_bytes(&file);
    let mut st = AaStat::default();
    let early = lp.statx("early", AA_IO_CWD, &path, &mut st, 0).pending();
    ensure_eq!(
        "R-IO-15",
        lp.cancel(early, REASON),
        AA_OK,
        "io_submit(AA_IO_STATX of a file, flags 0), pending, cancel(the request, reason -4242) \
         before any run_once: its status",
    );
    lp.run_until_tag("early");
    lp.run_once(0);
    ensure_eq!(
        "R-IO-15",
        lp.take_log(),
        vec![Rec::Io("early", i64::from(REASON))],
        "an AA_IO_STATX cancelled before any run_once, run_once until its callback, run_once(0): \
         the callbacks",
    );
    ensure_eq!(
        "R-IO-15",
        st,
        AaStat::default(),
        "an AA_IO_STATX cancelled before any run_once, its reason delivered: its AaStat (never \
         started: untouched)",
    );
    let mut late = AaStat::default();
    let ev = lp.statx("late", AA_IO_CWD, &path, &mut late, 0).pending();
    lp.run_once(0);
    let _ = lp.cancel(ev, REASON);
    lp.run_until_tag("late");
    lp.run_once(0);
    match lp.take_log()[..] {
        [Rec::Io("late", 0)] => ensure_eq!(
            "R-IO-15",
            late.size,
            3,
            "an AA_IO_STATX of a 3-byte file, run_once(0), cancel(reason -4242), one callback \
             with 0 (the stat won): st.size",
        ),
        [Rec::Io("late", r)] if r == i64::from(REASON) => {
            ensure_eq!(
                "R-IO-15",
                late,
                AaStat::default(),
                "an AA_IO_STATX, run_once(0), cancel(reason -4242), one callback with the \
                 reason: its AaStat (untouched)"
            )
        }
        ref other => rule_failed!(
            "R-IO-15",
            "the callbacks {other:?} after io_submit(AA_IO_STATX of a 3-byte file), run_once(0), \
             cancel(reason -4242), run_once until a callback, run_once(0) (one callback, with 0 \
             or the reason, expected)"
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
            ensure!("R-IO-15", fd >= 0;
                did: "io_submit(AA_IO_OPENAT of a file, O_RDONLY), pending, run_once(0), then \
                      dispose(the request)",
                wants: "no callback, or one with a descriptor (>= 0) if it completed in that \
                        run_once",
                got: format!("a callback with {}", rules::result(fd)));
            lp.track_fd(fd as i32);
        }
    }
    lp.finish_when_idle();
    ensure_eq!(
        "R-IO-15",
        open_descriptors_of(&file),
        0,
        "an AA_IO_OPENAT of a file, pending, run_once(0), dispose(the request), the loop \
         destroyed: descriptors of the file open in this process (/proc/self/fd)",
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
