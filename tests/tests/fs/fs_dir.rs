//! The free functions and directories (D-31): each is std's call on the
//! blocking pool, with std's results.

use std::io;
use std::os::unix::fs::{DirEntryExt, MetadataExt, PermissionsExt};

use async_std_api::fs;
use async_std_api::run;

use crate::scratch::Scratch;

#[test]
fn d31_whole_file_functions_read_write_and_copy() {
    let dir = Scratch::new("whole");
    let (a, b) = (dir.join("a"), dir.join("b"));
    run(move || -> io::Result<()> {
        fs::write(&a, "first")?;
        assert_eq!(fs::read_to_string(&a)?, "first");
        fs::write(&a, [0xff, 0xfe])?; // truncates
        assert_eq!(fs::read(&a)?, [0xff, 0xfe]);
        let e = fs::read_to_string(&a).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        fs::set_permissions(&a, std::fs::Permissions::from_mode(0o604))?;
        assert_eq!(fs::copy(&a, &b)?, 2);
        assert_eq!(fs::read(&b)?, [0xff, 0xfe]);
        // copy carries the permissions, as std's.
        assert_eq!(fs::metadata(&b)?.permissions().mode() & 0o777, 0o604);
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_read_dir_lists_every_entry_with_its_type() {
    let dir = Scratch::new("list");
    let root = dir.path().to_owned();
    run(move || -> io::Result<()> {
        fs::create_dir_all(root.join("sub/deeper"))?;
        fs::write(root.join("one"), "1")?;
        fs::write(root.join("two"), "22")?;
        std::os::unix::fs::symlink("one", root.join("link"))?;
        let mut seen = Vec::new();
        for entry in fs::read_dir(&root)? {
            let entry = entry?;
            let name = entry.file_name().into_string().unwrap();
            assert_eq!(entry.path(), root.join(&name));
            let t = entry.file_type()?;
            let m = entry.metadata()?;
            assert_eq!(m.ino(), entry.ino());
            let kind = if t.is_dir() {
                "dir"
            } else if t.is_symlink() {
                assert!(
                    m.file_type().is_symlink(),
                    "metadata does not follow the link"
                );
                "link"
            } else {
                "file"
            };
            seen.push(format!(
                "{name}:{kind}:{}",
                if t.is_file() { m.len() } else { 0 }
            ));
        }
        seen.sort();
        assert_eq!(
            seen,
            ["link:link:0", "one:file:1", "sub:dir:0", "two:file:2"]
        );
        assert_eq!(fs::read_dir(root.join("sub"))?.count(), 1);
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_rename_links_and_canonical_paths() {
    let dir = Scratch::new("names");
    let root = dir.path().to_owned();
    run(move || -> io::Result<()> {
        let (a, b, c) = (root.join("a"), root.join("b"), root.join("c"));
        fs::write(&a, "x")?;
        fs::rename(&a, &b)?;
        assert!(!fs::exists(&a)?);
        assert!(fs::exists(&b)?);
        fs::hard_link(&b, &c)?;
        assert_eq!(fs::metadata(&b)?.nlink(), 2);
        std::os::unix::fs::symlink("b", root.join("s"))?;
        assert_eq!(fs::read_link(root.join("s"))?, std::path::Path::new("b"));
        assert!(fs::symlink_metadata(root.join("s"))?
            .file_type()
            .is_symlink());
        assert!(fs::metadata(root.join("s"))?.is_file());
        fs::create_dir(root.join("sub"))?;
        let canon = fs::canonicalize(root.join("sub/../s"))?;
        assert_eq!(canon, std::fs::canonicalize(&b)?);
        assert!(canon.is_absolute() && canon.ends_with("b"));
        fs::remove_file(&b)?;
        assert_eq!(fs::metadata(&c)?.nlink(), 1);
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_create_dir_all_and_remove_dir_all_handle_trees() {
    let dir = Scratch::new("tree");
    let root = dir.path().to_owned();
    run(move || -> io::Result<()> {
        let deep = root.join("t/a/b/c");
        fs::create_dir_all(&deep)?;
        for i in 0..20 {
            fs::write(deep.join(format!("f{i}")), "x")?;
        }
        fs::create_dir(root.join("t/empty"))?;
        fs::remove_dir(root.join("t/empty"))?;
        fs::remove_dir_all(root.join("t"))?;
        assert!(!fs::exists(root.join("t"))?);
        assert_eq!(fs::read_dir(&root)?.count(), 0);
        Ok(())
    })
    .unwrap()
    .unwrap();
}
