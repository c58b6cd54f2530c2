//! std::fs and std::process with hooks on: big transfers and children
//! never hold the loop.

use std::time::Duration;

use crate::{hooked, Ticker};

/// A scratch file path, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(std::env::temp_dir().join(format!("hooks-{}-{name}", std::process::id())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn d45_writing_and_reading_200_mib_with_std_fs_keeps_the_ticker_going() {
    let file = Scratch::new("big");
    let path = file.0.clone();
    let (same, took, (ticks, worst)) = hooked()
        .run(move || {
            let block: Vec<u8> = (0..1u32 << 20).map(|i| (i % 253) as u8).collect();
            let data = block.repeat(200);
            let ticker = Ticker::start();
            let start = std::time::Instant::now();
            std::fs::write(&path, &data).expect("write");
            let back = std::fs::read(&path).expect("read");
            let (took, ticks) = (start.elapsed(), ticker.stop());
            // Compared after the ticker stopped: 400 MiB of memcmp holds the
            // loop for tens of milliseconds, which is this test's, not the
            // hooks'.
            (back == data, took, ticks)
        })
        .expect("runtime");
    eprintln!(
        "std::fs write+read of 200 MiB: {took:?}; ticker {ticks} ticks, longest gap {worst:?}"
    );
    assert!(same, "the file read back differs");
    // On the loop thread each transfer would hold it for its whole length
    // (about half of `took`); the ticker's longest gap is a fraction of
    // that, whatever the machine's load (the 20 ms on an idle
    // machine: the closing note has the numbers).
    assert!(ticks >= 5, "{ticks} ticks in {took:?}");
    assert!(worst < took / 3, "longest gap {worst:?} of {took:?}");
}

/// IO4/HK7: reads and writes larger than the page-cache fast path (the
/// ring on io_uring, the pool elsewhere) keep `read(2)`'s and `write(2)`'s
/// cursor semantics: a plain read or write uses and moves the file
/// position, a positioned one leaves it.
#[test]
fn big_transfers_keep_the_file_position_semantics() {
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::unix::fs::FileExt;
    let file = Scratch::new("cursor");
    let path = file.0.clone();
    let (head, at_cursor, positioned, cursor_after, tail) = hooked()
        .run(move || {
            let data: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
            let mut f = std::fs::File::options()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(&path)
                .expect("open");
            f.write_all(&data).expect("write 3 MiB"); // at the cursor
            let written_to = f.stream_position().expect("position");
            f.seek(SeekFrom::Start(1000)).expect("seek");
            let mut big = vec![0u8; 1 << 20];
            f.read_exact(&mut big).expect("read 1 MiB at the cursor");
            let at_cursor = big == data[1000..1000 + (1 << 20)];
            let mut other = vec![0u8; 1 << 20];
            f.read_exact_at(&mut other, 2 << 20)
                .expect("read 1 MiB at 2 MiB");
            let positioned = other == data[2 << 20..];
            let cursor_after = f.stream_position().expect("position");
            f.write_all_at(&vec![7u8; 512 << 10], 0)
                .expect("write 512 KiB at 0");
            let mut head = vec![0u8; 4];
            f.read_exact_at(&mut head, (512 << 10) - 2)
                .expect("read across");
            let mut rest = Vec::new();
            f.seek(SeekFrom::End(-(300 << 10))).expect("seek");
            f.read_to_end(&mut rest).expect("read to the end");
            let tail = rest == data[data.len() - (300 << 10)..];
            (
                (written_to, head),
                at_cursor,
                positioned,
                cursor_after,
                tail,
            )
        })
        .expect("runtime");
    assert_eq!(
        head,
        (
            3 << 20,
            vec![7, 7, data_at((512 << 10) as u32), data_at((512 << 10) + 1)]
        )
    );
    assert!(at_cursor, "1 MiB at the cursor differs");
    assert!(positioned, "1 MiB at 2 MiB differs");
    assert_eq!(
        cursor_after,
        1000 + (1 << 20),
        "a positioned read moved the cursor"
    );
    assert!(tail, "the last 300 KiB differ");
}

fn data_at(i: u32) -> u8 {
    (i % 251) as u8
}

/// HK7 (reactor-uring's G7): a file read through the reactor's ring and
/// closed by the C library's `close` leaves nothing of it on the number: a
/// UDP socket put on the same number is a socket to the reactor (a peek,
/// `AA_IO_PEEK` on io_uring, which the reactor refuses on what it thinks is
/// not a socket, sees the datagram). On other reactors the same holds
/// trivially.
#[test]
fn a_file_number_read_and_closed_through_the_hooks_is_fresh_for_a_socket() {
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd};
    let file = Scratch::new("reuse");
    let path = file.0.clone();
    let peeked = hooked()
        .run(move || {
            std::fs::write(&path, vec![1u8; 1 << 20]).expect("write");
            let f = std::fs::File::open(&path).expect("open");
            // A number far above what other tests of this process use, so
            // the dup2 below replaces nothing of theirs.
            // SAFETY: plain fcntl on a descriptor we own.
            let high = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 900) };
            assert!(high >= 900, "F_DUPFD: {}", std::io::Error::last_os_error());
            drop(f);
            // SAFETY: `high` was just made, owned by nobody else.
            let mut f = unsafe { std::fs::File::from_raw_fd(high) };
            let mut buf = vec![0u8; 1 << 20];
            f.read_exact(&mut buf).expect("read 1 MiB"); // the ring on io_uring
            assert!(buf.iter().all(|&b| b == 1));
            drop(f); // close(2), through the hooks
            let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
            // SAFETY: dup2 onto the number just closed, which this test
            // made far above the others.
            let rc = unsafe { libc::dup2(sock.as_raw_fd(), high) };
            assert_eq!(rc, high, "dup2: {}", std::io::Error::last_os_error());
            drop(sock);
            // SAFETY: `high` is now the socket, owned here alone.
            let sock = unsafe { std::net::UdpSocket::from_raw_fd(high) };
            let addr = sock.local_addr().expect("addr");
            let sock = async_std_api::net::UdpSocket::from_std(sock).expect("adopt");
            let peer = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
            peer.send_to(b"datagram", addr).expect("send");
            let mut one = [0u8; 16];
            let n = sock.peek(&mut one).expect("peek on the reused number");
            one[..n].to_vec()
        })
        .expect("runtime");
    assert_eq!(peeked, b"datagram");
}

/// A hooked `open` (the reactor's request on io_uring, which opens with
/// `O_CLOEXEC`; the pool elsewhere) gives the descriptor the flags the
/// caller asked for, close-on-exec or not, and `fsync` and `fdatasync`
/// succeed on it and fail with `EBADF` on a closed number.
#[test]
fn a_hooked_open_keeps_the_callers_close_on_exec_choice_and_syncs_work() {
    let file = Scratch::new("cloexec");
    let path = file.0.clone();
    let (plain, cloexec, synced, bad) = hooked()
        .run(move || {
            std::fs::write(&path, b"x").expect("write");
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            let flags_of = |fd: i32| {
                assert!(fd >= 0, "open: {}", std::io::Error::last_os_error());
                // SAFETY: a descriptor this test opened.
                let f = unsafe { libc::fcntl(fd, libc::F_GETFD) };
                f & libc::FD_CLOEXEC
            };
            // SAFETY: a valid C path; the descriptors are closed below.
            let (a, b) = unsafe {
                (
                    libc::open(c.as_ptr(), libc::O_RDWR),
                    libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC),
                )
            };
            let (plain, cloexec) = (flags_of(a), flags_of(b));
            // SAFETY: `a` is open; `b` is closed and then synced (EBADF).
            let (synced, bad) = unsafe {
                let synced = (libc::fsync(a), libc::fdatasync(a));
                libc::close(a);
                libc::close(b);
                let bad = libc::fsync(b);
                (
                    synced,
                    (bad, std::io::Error::last_os_error().raw_os_error()),
                )
            };
            (plain, cloexec, synced, bad)
        })
        .expect("runtime");
    assert_eq!((plain, cloexec), (0, libc::FD_CLOEXEC));
    assert_eq!(synced, (0, 0));
    assert_eq!(bad, (-1, Some(libc::EBADF)));
}

#[test]
fn small_std_fs_calls_keep_their_results() {
    let file = Scratch::new("small");
    let path = file.0.clone();
    let text = hooked()
        .run(move || {
            use std::io::{Read, Seek, SeekFrom, Write};
            let mut f = std::fs::File::create(&path).expect("create");
            f.write_all(b"hello, ").expect("write");
            f.write_all(b"world").expect("write");
            f.sync_all().expect("fsync");
            let mut f = std::fs::File::open(&path).expect("open");
            f.seek(SeekFrom::Start(7)).expect("seek");
            let mut tail = String::new();
            f.read_to_string(&mut tail).expect("read");
            let missing = std::fs::File::open(path.with_extension("missing"))
                .map(|_| ())
                .unwrap_err();
            (
                std::fs::read_to_string(&path).expect("read"),
                tail,
                missing.kind(),
            )
        })
        .expect("runtime");
    assert_eq!(
        text,
        (
            "hello, world".into(),
            "world".into(),
            std::io::ErrorKind::NotFound
        )
    );
}

#[test]
fn a_child_process_output_keeps_the_ticker_going() {
    let (out, (ticks, worst)) = hooked()
        .run(|| {
            let ticker = Ticker::start();
            let out = std::process::Command::new("sh")
                .args(["-c", "sleep 0.3; echo done; echo oops >&2; exit 3"])
                .output()
                .expect("output");
            (out, ticker.stop())
        })
        .expect("runtime");
    eprintln!("Command::output of a 300 ms child: ticker {ticks} ticks, longest gap {worst:?}");
    assert_eq!(out.stdout, b"done\n");
    assert_eq!(out.stderr, b"oops\n");
    assert_eq!(out.status.code(), Some(3));
    // Blocking, the 300 ms would be one gap.
    assert!(ticks >= 10, "{ticks} ticks in 300 ms");
    assert!(worst < Duration::from_millis(150), "longest gap {worst:?}");
}

#[test]
fn a_forked_child_runs_with_the_hooks_off() {
    use std::os::unix::process::CommandExt;
    let status = hooked()
        .run(|| {
            let ticker = Ticker::start();
            let mut cmd = std::process::Command::new("true");
            // SAFETY: the closure only sleeps (a system call) between fork
            // and exec; with the hooks on in the child it would drive a
            // copy of the parent's loop instead.
            unsafe {
                cmd.pre_exec(|| {
                    std::thread::sleep(Duration::from_millis(20));
                    Ok(())
                })
            };
            let status = cmd.status().expect("status");
            ticker.stop();
            status
        })
        .expect("runtime");
    assert!(status.success());
}
