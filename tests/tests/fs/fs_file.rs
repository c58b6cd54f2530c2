//! `fs::File` and `OpenOptions` against real files (D-31): reads and
//! writes at the cursor, EOF and short reads, seeking, positional I/O,
//! `set_len`, metadata and sync, the shared cursor of clones, append mode,
//! and the way back to std's file.

use std::cell::RefCell;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::rc::Rc;

use async_std_api::fs::{self, File, OpenOptions};
use async_std_api::{run, spawn};

use crate::scratch::Scratch;

fn digits(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'0' + (i % 10) as u8).collect()
}

#[test]
fn d31_reads_and_writes_move_the_cursor_and_eof_reads_zero() {
    let dir = Scratch::new("rw");
    let path = dir.join("f");
    run(move || -> io::Result<()> {
        let mut f = File::create(&path)?;
        assert_eq!(f.write(b"hello ")?, 6);
        f.write_all(b"world")?;
        assert_eq!(f.stream_position()?, 11);
        drop(f);

        let mut f = File::open(&path)?;
        let mut five = [0u8; 5];
        assert_eq!(f.read(&mut five)?, 5);
        assert_eq!(&five, b"hello");
        // A short read: fewer bytes left than asked for.
        let mut big = [0u8; 64];
        assert_eq!(f.read(&mut big)?, 6);
        assert_eq!(&big[..6], b" world");
        // End of file: zero, as often as asked.
        assert_eq!(f.read(&mut big)?, 0);
        assert_eq!(f.read(&mut big)?, 0);
        assert_eq!(f.stream_position()?, 11);
        // read_exact past the end is std's UnexpectedEof.
        f.rewind()?;
        let mut twelve = [0u8; 12];
        assert_eq!(
            f.read_exact(&mut twelve).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        f.rewind()?;
        let mut all = String::new();
        assert_eq!(f.read_to_string(&mut all)?, 11);
        assert_eq!(all, "hello world");
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_seek_from_start_current_and_end_and_the_errors_std_gives() {
    let dir = Scratch::new("seek");
    let path = dir.join("f");
    std::fs::write(&path, digits(100)).unwrap();
    let (ours, std_err) = run(move || -> io::Result<_> {
        let mut f = File::open(&path)?;
        assert_eq!(f.seek(SeekFrom::Start(10))?, 10);
        assert_eq!(f.seek(SeekFrom::Current(5))?, 15);
        let mut b = [0u8; 2];
        f.read_exact(&mut b)?;
        assert_eq!(&b, b"56");
        assert_eq!(f.seek(SeekFrom::Current(-7))?, 10);
        assert_eq!(f.seek(SeekFrom::End(-1))?, 99);
        f.read_exact(&mut b[..1])?;
        assert_eq!(b[0], b'9');
        // Past the end is allowed (a read there is EOF).
        assert_eq!(f.seek(SeekFrom::End(10))?, 110);
        assert_eq!(f.read(&mut b)?, 0);
        // Before the start is not, and the cursor stays.
        let err = f.seek(SeekFrom::Current(-200)).unwrap_err();
        assert_eq!(f.stream_position()?, 110);
        let mut s = std::fs::File::open(&path)?;
        let std_err = s.seek(SeekFrom::Current(-200)).unwrap_err();
        Ok((err, std_err))
    })
    .unwrap()
    .unwrap();
    assert_eq!(ours.kind(), std_err.kind());
    assert_eq!(ours.raw_os_error(), std_err.raw_os_error());
}

#[test]
fn d31_read_at_and_write_at_neither_use_nor_move_the_cursor() {
    let dir = Scratch::new("at");
    let path = dir.join("f");
    run(move || -> io::Result<()> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        assert_eq!(f.write_at(b"abcdef", 0)?, 6);
        // Beyond the end: the gap reads as zeros.
        f.write_all_at(b"XY", 10)?;
        assert_eq!(f.metadata()?.len(), 12);
        let mut buf = [0xffu8; 12];
        assert_eq!(f.read_at(&mut buf, 0)?, 12);
        assert_eq!(&buf, b"abcdef\0\0\0\0XY");
        let mut two = [0u8; 2];
        f.read_exact_at(&mut two, 2)?;
        assert_eq!(&two, b"cd");
        // At and past the end: zero bytes.
        assert_eq!(f.read_at(&mut two, 12)?, 0);
        assert_eq!(f.read_at(&mut two, 1 << 40)?, 0);
        // None of that moved the cursor.
        assert_eq!((&f).stream_position()?, 0);
        let mut head = [0u8; 3];
        (&f).read_exact(&mut head)?;
        assert_eq!(&head, b"abc");
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_set_len_truncates_and_extends_without_moving_the_cursor() {
    let dir = Scratch::new("setlen");
    let path = dir.join("f");
    std::fs::write(&path, digits(50)).unwrap();
    run(move || -> io::Result<()> {
        let mut f = OpenOptions::new().read(true).write(true).open(&path)?;
        f.seek(SeekFrom::Start(40))?;
        f.set_len(20)?;
        assert_eq!(f.metadata()?.len(), 20);
        assert_eq!(f.stream_position()?, 40);
        let mut b = [0u8; 4];
        assert_eq!(f.read(&mut b)?, 0, "the cursor is past the new end");
        f.set_len(30)?;
        f.seek(SeekFrom::Start(18))?;
        let mut tail = Vec::new();
        f.read_to_end(&mut tail)?;
        assert_eq!(tail, [b"89".as_slice(), &[0u8; 10]].concat());
        // A file open for reading only cannot change its length.
        let ro = File::open(&path)?;
        let ours = ro.set_len(1).unwrap_err();
        let theirs = std::fs::File::open(&path)?.set_len(1).unwrap_err();
        assert_eq!(ours.kind(), theirs.kind());
        assert_eq!(ours.raw_os_error(), theirs.raw_os_error());
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_metadata_sync_and_permissions_come_from_the_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("meta");
    let path = dir.join("f");
    run(move || -> io::Result<()> {
        let f = File::create(&path)?;
        (&f).write_all(&digits(1000))?;
        f.sync_data()?;
        f.sync_all()?;
        let m = f.metadata()?;
        assert!(m.is_file());
        assert_eq!(m.len(), 1000);
        f.set_permissions(std::fs::Permissions::from_mode(0o640))?;
        assert_eq!(fs::metadata(&path)?.permissions().mode() & 0o777, 0o640);
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        f.set_modified(t)?;
        assert_eq!(f.metadata()?.modified()?, t);
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_a_clone_shares_the_cursor_as_std_clones_share_the_kernels() {
    let dir = Scratch::new("clone");
    let path = dir.join("f");
    std::fs::write(&path, digits(20)).unwrap();
    run(move || -> io::Result<()> {
        let mut a = File::open(&path)?;
        let mut b = a.try_clone()?;
        let mut buf = [0u8; 3];
        a.read_exact(&mut buf)?;
        assert_eq!(&buf, b"012");
        b.read_exact(&mut buf)?;
        assert_eq!(
            &buf, b"345",
            "the clone continues where the original stopped"
        );
        b.seek(SeekFrom::Start(10))?;
        assert_eq!(a.stream_position()?, 10);
        drop(a);
        b.read_exact(&mut buf)?;
        assert_eq!(&buf, b"012");
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_append_mode_writes_at_the_end_and_leaves_the_cursor_there() {
    let dir = Scratch::new("append");
    let path = dir.join("f");
    std::fs::write(&path, b"head").unwrap();
    run(move || -> io::Result<()> {
        let mut f = OpenOptions::new().read(true).append(true).open(&path)?;
        assert_eq!(f.stream_position()?, 0);
        let mut two = [0u8; 2];
        f.read_exact(&mut two)?;
        assert_eq!(&two, b"he");
        f.write_all(b"-tail")?;
        assert_eq!(f.stream_position()?, 9);
        // Seeking back does not make a write overwrite: it appends.
        f.seek(SeekFrom::Start(0))?;
        f.write_all(b"!")?;
        assert_eq!(f.stream_position()?, 10);
        assert_eq!(fs::read(&path)?, b"head-tail!");
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_into_std_hands_back_the_cursor_and_from_std_adopts_it() {
    let dir = Scratch::new("std");
    let path = dir.join("f");
    std::fs::write(&path, digits(30)).unwrap();
    let mut back = run(move || -> io::Result<std::fs::File> {
        let mut s = std::fs::File::open(&path)?;
        s.seek(SeekFrom::Start(5))?;
        let mut f = File::from(s);
        let mut b = [0u8; 5];
        f.read_exact(&mut b)?;
        assert_eq!(&b, b"56789");
        Ok(f.into_std())
    })
    .unwrap()
    .unwrap();
    // Outside the runtime, std's file reads on from where ours stopped.
    assert_eq!(back.stream_position().unwrap(), 10);
    let mut b = [0u8; 3];
    back.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"012");
}

#[test]
fn d31_std_io_copy_and_bufreader_work_unchanged() {
    let dir = Scratch::new("copy");
    let (src, dst) = (dir.join("src"), dir.join("dst"));
    let text: String = (0..500).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&src, &text).unwrap();
    run(move || -> io::Result<()> {
        let mut from = File::open(&src)?;
        let mut to = File::create(&dst)?;
        assert_eq!(io::copy(&mut from, &mut to)?, text.len() as u64);
        drop(to);
        let lines: Vec<String> = BufReader::new(File::open(&dst)?)
            .lines()
            .collect::<io::Result<_>>()?;
        assert_eq!(lines.len(), 500);
        assert_eq!(lines[499], "line 499");
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_concurrent_readers_of_one_file_take_turns_and_see_disjoint_bytes() {
    let dir = Scratch::new("turns");
    let path = dir.join("f");
    // Each 4-byte word is its own index, so a chunk tells where it was.
    let data: Vec<u8> = (0..1000u32).flat_map(u32::to_le_bytes).collect();
    std::fs::write(&path, &data).unwrap();
    let chunks = run(move || -> io::Result<Vec<Vec<u8>>> {
        let f = Rc::new(File::open(&path)?);
        let chunks: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (f, chunks) = (f.clone(), chunks.clone());
                spawn(move || -> io::Result<()> {
                    loop {
                        let mut buf = vec![0u8; 100];
                        let n = (&*f).read(&mut buf)?;
                        if n == 0 {
                            return Ok(());
                        }
                        buf.truncate(n);
                        chunks.borrow_mut().push(buf);
                    }
                })
            })
            .collect();
        for r in readers {
            r.join().unwrap()?;
        }
        Ok(chunks.take())
    })
    .unwrap()
    .unwrap();
    // Every byte once, none twice: each read took its own turn.
    assert_eq!(chunks.len(), 40);
    let mut chunks = chunks;
    chunks.sort_by_key(|c| u32::from_le_bytes(c[..4].try_into().unwrap()));
    assert_eq!(chunks.concat(), data);
}

#[test]
fn d31_a_fifo_uses_the_kernels_position_and_cannot_seek() {
    let dir = Scratch::new("fifo");
    let path = dir.join("p");
    let made = std::process::Command::new("mkfifo").arg(&path).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    run(move || -> io::Result<()> {
        // Read and write on one descriptor: opening a FIFO that way does
        // not wait for a peer (Linux).
        let f = OpenOptions::new().read(true).write(true).open(&path)?;
        (&f).write_all(b"through the pipe")?;
        let mut buf = [0u8; 64];
        let n = (&f).read(&mut buf)?;
        assert_eq!(&buf[..n], b"through the pipe");
        let ours = (&f).seek(SeekFrom::Start(0)).unwrap_err();
        assert_eq!(ours.raw_os_error(), Some(libc::ESPIPE));
        assert_eq!(ours.kind(), io::ErrorKind::NotSeekable);
        Ok(())
    })
    .unwrap()
    .unwrap();
}
