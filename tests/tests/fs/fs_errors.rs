//! Errors surface as std's (D-31): the same `io::ErrorKind` and the same
//! `raw_os_error` std gives for the same call.

use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;

use async_std_api::fs::{self, File, OpenOptions};
use async_std_api::run;

use crate::scratch::Scratch;

#[track_caller]
fn same_as_std(ours: io::Error, theirs: io::Error) {
    assert_eq!(ours.kind(), theirs.kind(), "ours: {ours}; std: {theirs}");
    assert_eq!(ours.raw_os_error(), theirs.raw_os_error());
}

#[test]
fn d31_a_missing_path_is_not_found_everywhere() {
    let dir = Scratch::new("enoent");
    let missing = dir.join("missing");
    run(move || {
        let m = &missing;
        let errors = [
            File::open(m).unwrap_err(),
            fs::read(m).unwrap_err(),
            fs::read_to_string(m).unwrap_err(),
            fs::metadata(m).unwrap_err(),
            fs::symlink_metadata(m).unwrap_err(),
            fs::remove_file(m).unwrap_err(),
            fs::remove_dir(m).unwrap_err(),
            fs::read_dir(m).unwrap_err(),
            fs::canonicalize(m).unwrap_err(),
            fs::read_link(m).unwrap_err(),
            fs::rename(m, m.with_extension("x")).unwrap_err(),
            fs::copy(m, m.with_extension("x")).unwrap_err(),
            fs::write(m.join("below"), b"x").unwrap_err(),
        ];
        for e in errors {
            assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
            assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
        }
        assert!(!fs::exists(m).unwrap());
        same_as_std(
            File::open(m).unwrap_err(),
            std::fs::File::open(m).unwrap_err(),
        );
    })
    .unwrap();
}

#[test]
fn d31_an_unreadable_file_is_permission_denied_as_std_says() {
    let dir = Scratch::new("eacces");
    let path = dir.join("secret");
    std::fs::write(&path, b"x").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    run(move || {
        let ours = File::open(&path);
        match std::fs::File::open(&path) {
            // Root (or CAP_DAC_OVERRIDE) reads a 0o000 file: EACCES cannot
            // be provoked here, so only "the same as std" is checked.
            Ok(_) => {
                eprintln!("note: running privileged, EACCES cannot be provoked");
                assert!(ours.is_ok());
            }
            Err(theirs) => {
                assert_eq!(theirs.kind(), io::ErrorKind::PermissionDenied);
                let ours = ours.unwrap_err();
                assert_eq!(ours.raw_os_error(), Some(libc::EACCES));
                same_as_std(ours, theirs);
                same_as_std(
                    fs::read(&path).unwrap_err(),
                    std::fs::read(&path).unwrap_err(),
                );
            }
        }
    })
    .unwrap();
}

#[test]
fn d31_create_new_on_an_existing_path_is_already_exists() {
    let dir = Scratch::new("eexist");
    let (path, sub) = (dir.join("f"), dir.join("d"));
    std::fs::write(&path, b"x").unwrap();
    std::fs::create_dir(&sub).unwrap();
    run(move || {
        let e = File::create_new(&path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        let e = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        let e = fs::create_dir(&sub).unwrap_err();
        same_as_std(e, std::fs::create_dir(&sub).unwrap_err());
        // create_dir_all is fine with what exists.
        fs::create_dir_all(&sub).unwrap();
        // The file was left alone.
        assert_eq!(fs::read(&path).unwrap(), b"x");
    })
    .unwrap();
}

#[test]
fn d31_reading_a_directory_writing_a_read_only_file_and_bad_options_fail_as_std() {
    let dir = Scratch::new("misc");
    let path = dir.join("f");
    std::fs::write(&path, b"x").unwrap();
    let d = dir.path().to_owned();
    run(move || {
        // A directory opens, but reading it is EISDIR.
        let mut ours = File::open(&d).unwrap();
        let mut theirs = std::fs::File::open(&d).unwrap();
        let mut buf = [0u8; 8];
        same_as_std(
            ours.read(&mut buf).unwrap_err(),
            theirs.read(&mut buf).unwrap_err(),
        );
        // Writing through a read-only descriptor is EBADF.
        let mut ro = File::open(&path).unwrap();
        let mut std_ro = std::fs::File::open(&path).unwrap();
        same_as_std(ro.write(b"y").unwrap_err(), std_ro.write(b"y").unwrap_err());
        // Combinations std refuses before any system call, refused with
        // std's own error wherever the open runs.
        // (read, write, append, truncate, create)
        let refused = [
            ("no access", (false, false, false, false, false)),
            ("truncate without write", (true, false, false, true, false)),
            ("create without write", (true, false, false, false, true)),
            ("append and truncate", (false, false, true, true, false)),
        ];
        for (what, (r, w, a, t, c)) in refused {
            let mut theirs = std::fs::OpenOptions::new();
            theirs.read(r).write(w).append(a).truncate(t).create(c);
            let mut ours = OpenOptions::new();
            ours.read(r).write(w).append(a).truncate(t).create(c);
            let (o, t) = (
                ours.open(&path).unwrap_err(),
                theirs.open(&path).unwrap_err(),
            );
            assert_eq!(o.kind(), io::ErrorKind::InvalidInput, "{what}");
            assert_eq!(o.to_string(), t.to_string(), "{what}");
            same_as_std(o, t);
        }
        // A directory that is not empty.
        std::fs::write(d.join("inner"), b"").unwrap();
        same_as_std(
            fs::remove_dir(&d).unwrap_err(),
            std::fs::remove_dir(&d).unwrap_err(),
        );
    })
    .unwrap();
}
