//! `io::pipe`: the end of the stream, partial reads, a cancelled read, a
//! broken pipe, `std::io::copy`, and an end handed to a child.

use std::cell::{Cell, RefCell};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::rc::Rc;

use async_std_api::process::{Command, Stdio};
use async_std_api::{current, io, run, spawn, suspend};
use tests::support::{join_cancelled, yield_until, Recorder};

use super::is_nonblocking;

#[test]
fn a_read_returns_the_end_of_the_stream_once_every_writer_is_dropped() {
    run(|| {
        let (mut reader, writer) = io::pipe().unwrap();
        let clone = writer.try_clone().unwrap();
        (&writer).write_all(b"a").unwrap();
        drop(writer);
        (&clone).write_all(b"b").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(reader.read(&mut buf).unwrap(), 2);
        assert_eq!(&buf[..2], b"ab");
        drop(clone); // the last writer
        assert_eq!(reader.read(&mut buf).unwrap(), 0);
        assert_eq!(reader.read(&mut buf).unwrap(), 0, "and stays at the end");
    })
    .unwrap();
}

#[test]
fn reads_return_what_is_there_in_pieces_no_larger_than_the_buffer() {
    run(|| {
        let (reader, mut writer) = io::pipe().unwrap();
        writer.write_all(b"0123456789").unwrap();
        let mut small = [0u8; 4];
        let mut got = Vec::new();
        for _ in 0..3 {
            let n = (&reader).read(&mut small).unwrap();
            got.push(String::from_utf8(small[..n].to_vec()).unwrap());
        }
        assert_eq!(got, ["0123", "4567", "89"]);
        // A short read: what is there, not a full buffer.
        writer.write_all(b"xy").unwrap();
        let mut big = [0u8; 64];
        assert_eq!((&reader).read(&mut big).unwrap(), 2);
    })
    .unwrap();
}

#[test]
fn a_cancelled_read_consumes_nothing_and_the_pipe_stays_usable() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let (reader, mut writer) = io::pipe().unwrap();
        let r1 = r.clone();
        // The reader hands the pipe back through shared state: it ends
        // cancelled, so a returned value would be dropped (D-25).
        let slot: Rc<RefCell<Option<io::PipeReader>>> = Rc::default();
        let s = slot.clone();
        let blocked = spawn(move || {
            let mut buf = [0u8; 16];
            let err = (&reader).read(&mut buf).unwrap_err();
            let c = io::cancelled(&err).expect("the error carries the cancellation");
            r1.push(format!(
                "read cancelled: kind={:?} own={}",
                err.kind(),
                c.id() == current().id()
            ));
            *s.borrow_mut() = Some(reader);
        });
        yield_until(|| blocked.coroutine().is_suspended());
        blocked.cancel();
        join_cancelled(blocked);
        let reader = slot.borrow_mut().take().expect("the reader kept the pipe");
        r.push("written after");
        writer.write_all(b"later").unwrap();
        drop(writer);
        let mut got = String::new();
        (&reader).read_to_string(&mut got).unwrap();
        r.push(format!("then read {got:?}"));
    })
    .unwrap();
    rec.assert_events(&[
        "read cancelled: kind=Other own=true",
        "written after",
        "then read \"later\"",
    ]);
}

#[test]
fn a_write_blocked_on_a_full_pipe_is_cancelled_writing_nothing_and_the_pipe_stays_usable() {
    run(|| {
        let (mut reader, writer) = io::pipe().unwrap();
        // SAFETY: fcntl(F_GETPIPE_SZ) on a descriptor we hold.
        let capacity = unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_GETPIPE_SZ) };
        assert!(capacity > 0);
        let capacity = capacity as usize;
        (&writer).write_all(&vec![7u8; capacity]).unwrap(); // full now
        let writer = Rc::new(writer);
        let w = writer.clone();
        let wrote = Rc::new(Cell::new(None));
        let out = wrote.clone();
        let blocked = spawn(move || {
            out.set(Some(
                (&*w).write(b"x").map_err(|e| io::cancelled(&e).is_some()),
            ));
        });
        yield_until(|| blocked.coroutine().is_suspended());
        blocked.cancel();
        join_cancelled(blocked);
        assert_eq!(wrote.get(), Some(Err(true)), "cancelled, nothing written");
        let mut drained = vec![0u8; capacity];
        reader.read_exact(&mut drained).unwrap();
        assert!(drained.iter().all(|&b| b == 7));
        (&*writer).write_all(b"!").unwrap();
        drop(writer);
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"!", "the cancelled write left nothing behind");
    })
    .unwrap();
}

#[test]
fn writing_after_every_reader_is_dropped_is_a_broken_pipe() {
    run(|| {
        let (reader, mut writer) = io::pipe().unwrap();
        drop(reader);
        // The close goes through the reactor: at once on mio, with the
        // loop's next submission on io_uring. Until then a write may still
        // land in the pipe; after it, every write is a broken pipe.
        let mut err = None;
        for _ in 0..10_000 {
            match writer.write(b"x") {
                Ok(n) => {
                    assert_eq!(n, 1);
                    suspend().unwrap();
                }
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let err = err.expect("the close took effect");
        assert_eq!(err.kind(), ErrorKind::BrokenPipe);
        assert_eq!(
            writer.write(b"x").unwrap_err().kind(),
            ErrorKind::BrokenPipe
        );
    })
    .unwrap();
}

#[test]
fn std_io_copy_moves_several_mib_between_two_pipes() {
    run(|| {
        let (mut r1, mut w1) = io::pipe().unwrap();
        let (mut r2, mut w2) = io::pipe().unwrap();
        let data: Vec<u8> = (0..4 * 1024 * 1024).map(|i| (i % 253) as u8).collect();
        let sent = data.clone();
        let producer = spawn(move || w1.write_all(&sent).unwrap());
        let relay = spawn(move || std::io::copy(&mut r1, &mut w2).unwrap());
        let mut got = Vec::new();
        r2.read_to_end(&mut got).unwrap();
        producer.join().unwrap();
        assert_eq!(relay.join().unwrap(), data.len() as u64);
        assert!(got == data);
    })
    .unwrap();
}

#[test]
fn a_pipe_end_given_to_a_child_is_blocking_for_the_child_and_the_parent_reads_its_output() {
    run(|| {
        let (mut reader, writer) = io::pipe().unwrap();
        assert!(is_nonblocking(reader.as_raw_fd()) && is_nonblocking(writer.as_raw_fd()));
        // The child prints its own stdout's flags: blocking, as programs
        // expect of their standard streams.
        let mut cmd = Command::new("cat");
        cmd.arg("/proc/self/fdinfo/1").stdout(Stdio::from(writer));
        let mut child = cmd.spawn().unwrap();
        drop(cmd); // the command's copy of the write end
        let mut got = String::new();
        reader.read_to_string(&mut got).unwrap();
        assert!(child.wait().unwrap().success());
        let flags = got
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
            .expect("fdinfo has a flags line");
        assert_eq!(
            flags & libc::O_NONBLOCK as u32,
            0,
            "the child's stdout blocks"
        );

        let (reader, _writer) = io::pipe().unwrap();
        let raw = reader.into_raw_fd();
        assert!(!is_nonblocking(raw), "given up blocking, as std's");
        // Back into a reader (std's trait): non-blocking again.
        // SAFETY: `raw` was just given up by `into_raw_fd`; nothing else owns it.
        let back = unsafe { <io::PipeReader as FromRawFd>::from_raw_fd(raw) };
        assert!(is_nonblocking(back.as_raw_fd()));
    })
    .unwrap();
}
