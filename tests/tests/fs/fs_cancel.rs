//! Cancellation and fairness of file I/O (D-31): a cancelled read or write
//! keeps the buffer rules (AA-R5) and the cursor, and the file stays
//! usable; a big read does not stop the other coroutines.

use std::cell::{Cell, RefCell};
use std::io::{Read, Seek, Write};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use async_std_api::fs::{self, File};
use async_std_api::{io as aio, run, spawn, spawn_blocking, suspend, Builder};
use tests::support::{join_cancelled, yield_until, yield_until_waiting};

use crate::scratch::Scratch;

/// Makes `path`'s pages leave the page cache (written back, then dropped),
/// so a read of it has to wait for the disk: it goes to the blocking pool
/// on a reactor without native reads (FI5 in `fs/rw.rs`).
fn drop_from_page_cache(path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: an open descriptor; advice touches no memory.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0, "posix_fadvise");
    // Checked with mincore on a mapping, which loads nothing (a probing
    // read would start the readahead that brings the pages back).
    let len = f.metadata().unwrap().len() as usize;
    // SAFETY: a fresh read-only shared mapping of the open file, unmapped
    // below; mincore writes one byte per page into `pages`.
    let resident = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "mmap");
        let mut pages = vec![0u8; len.div_ceil(4096)];
        let r = libc::mincore(p, len, pages.as_mut_ptr());
        libc::munmap(p, len);
        assert_eq!(r, 0, "mincore");
        pages.iter().filter(|&&b| b & 1 != 0).count()
    };
    assert_eq!(
        resident,
        0,
        "{} stayed in the page cache (a memory file system?): the read would not reach the pool",
        path.display()
    );
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// Runs `f` with a pool of one thread that a blocker holds until the
/// sender `f` gets is used or dropped: pool work queued meanwhile is still
/// waiting when a cancellation reaches its coroutine (mio's reads and
/// writes are pool work; io_uring's are ring operations and do not wait
/// for the pool). Files are opened with std's `open` here, which needs no
/// pool.
fn with_blocked_pool<T: 'static>(f: impl FnOnce(mpsc::Sender<()>) -> T + 'static) -> T {
    Builder::new()
        .blocking_threads(1)
        .run(move || {
            let started = Arc::new(AtomicBool::new(false));
            let (release, released) = mpsc::channel::<()>();
            let s = started.clone();
            let blocker = spawn_blocking(move || {
                s.store(true, Ordering::SeqCst);
                let _ = released.recv();
            });
            yield_until(|| started.load(Ordering::SeqCst));
            let r = f(release);
            blocker.join().unwrap();
            r
        })
        .unwrap()
}

/// What a cancelled reader saw, handed out through shared state: it ends
/// cancelled, so a returned value would be dropped (D-25).
#[derive(Debug, Default)]
struct Seen {
    outcome: Option<Result<usize, String>>,
    buf: Vec<u8>,
}

#[test]
fn d31_a_read_cancelled_in_flight_keeps_the_buffer_rules_and_the_cursor() {
    let dir = Scratch::new("cancel-read");
    let path = dir.join("f");
    let data = pattern(8192);
    std::fs::write(&path, &data).unwrap();
    // A read the page cache can answer returns at once, without the pool
    // (FI5): the file leaves the cache, so this read goes to the pool.
    drop_from_page_cache(&path);
    let expected = data.clone();
    with_blocked_pool(move |release| {
        let f = Rc::new(File::from(std::fs::File::open(&path).unwrap()));
        let seen: Rc<RefCell<Seen>> = Rc::default();
        let (rf, s) = (f.clone(), seen.clone());
        let reader = spawn(move || {
            let mut buf = vec![0xAAu8; 4096];
            let r = (&*rf).read(&mut buf);
            let mut s = s.borrow_mut();
            s.outcome = Some(r.map_err(|e| {
                assert!(aio::cancelled(&e).is_some(), "not a cancellation: {e}");
                e.to_string()
            }));
            s.buf = buf;
        });
        let c = reader.coroutine();
        yield_until(|| c.is_suspended() || c.is_finished());
        if c.is_finished() {
            // The kernel can bring the pages back while it refuses the
            // non-waiting read (its readahead may finish at once): then the
            // read was answered from the page cache without the pool (FI5),
            // and there was nothing in flight to cancel.
            reader.join().unwrap();
            let seen = seen.take();
            let n = seen.outcome.expect("the reader returned").expect("a read");
            assert_eq!(&seen.buf[..n], &expected[..n]);
            assert_eq!((&*f).stream_position().unwrap(), n as u64);
            drop(release);
            return;
        }
        reader.cancel();
        join_cancelled(reader);
        // The pool may run the detached read now: its bytes go nowhere.
        drop(release);
        let seen = seen.take();
        let at = match seen.outcome.expect("the reader returned") {
            // Cancelled before the read: the buffer was never written and
            // the cursor did not move.
            Err(_) => {
                assert!(
                    seen.buf.iter().all(|&b| b == 0xAA),
                    "the buffer was written"
                );
                0
            }
            // The read completed first (P-08): the data is the file's, and
            // the cursor moved by exactly that.
            Ok(n) => {
                assert_eq!(&seen.buf[..n], &expected[..n]);
                assert!(seen.buf[n..].iter().all(|&b| b == 0xAA));
                n
            }
        };
        // The file is usable, and reads on from the cursor.
        assert_eq!((&*f).stream_position().unwrap(), at as u64);
        let mut rest = Vec::new();
        (&*f).read_to_end(&mut rest).unwrap();
        assert_eq!(rest, &expected[at..]);
    });
}

#[test]
fn d31_a_write_cancelled_in_flight_leaves_the_cursor_and_a_retry_lands_in_place() {
    let dir = Scratch::new("cancel-write");
    let path = dir.join("f");
    let p = path.clone();
    with_blocked_pool(move |release| {
        let f = Rc::new(File::from(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&p)
                .unwrap(),
        ));
        let outcome: Rc<Cell<Option<Result<usize, ()>>>> = Rc::default();
        let (wf, o) = (f.clone(), outcome.clone());
        let writer = spawn(move || {
            let r = (&*wf).write(b"ABCD");
            o.set(Some(
                r.map_err(|e| assert!(aio::cancelled(&e).is_some(), "{e}")),
            ));
        });
        yield_until_waiting(&[&writer.coroutine()]);
        writer.cancel();
        join_cancelled(writer);
        drop(release);
        // Cancelled: nothing reported written. Completed first: all of it.
        let moved = outcome
            .take()
            .expect("the writer returned")
            .unwrap_or_default();
        assert_eq!((&*f).stream_position().unwrap(), moved as u64);
        // A retry of what was not reported written lands where it belongs,
        // whatever the detached write did meanwhile.
        (&*f).write_all(&b"ABCD"[moved..]).unwrap();
    });
    assert_eq!(std::fs::read(&path).unwrap(), b"ABCD");
}

#[test]
fn d31_a_cancelled_whole_file_read_returns_the_cancellation() {
    let dir = Scratch::new("cancel-pool");
    let path = dir.join("f");
    std::fs::write(&path, b"x").unwrap();
    with_blocked_pool(move |release| {
        let h = spawn(move || fs::read(&path));
        yield_until_waiting(&[&h.coroutine()]);
        h.cancel();
        let c = join_cancelled(h);
        assert_eq!(c.cause(), async_std_api::CancelCause::Explicit);
        drop(release);
    });
}

#[test]
fn d31_a_big_file_read_does_not_stop_the_other_coroutines() {
    const SIZE: usize = 64 << 20;
    let dir = Scratch::new("big");
    let path = dir.join("big");
    {
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = pattern(1 << 20);
        for _ in 0..SIZE >> 20 {
            f.write_all(&chunk).unwrap();
        }
    }
    run(move || {
        let ticks = Rc::new(Cell::new(0u64));
        let done = Rc::new(Cell::new(false));
        let (t, d) = (ticks.clone(), done.clone());
        // Runs whenever the reader waits.
        let ticker = spawn(move || {
            while !d.get() {
                t.set(t.get() + 1);
                suspend().unwrap();
            }
        });
        let mut f = File::open(&path).unwrap();
        let mut buf = vec![0u8; SIZE];
        let before = ticks.get();
        f.read_exact(&mut buf).unwrap();
        let during_file = ticks.get() - before;
        let before = ticks.get();
        let whole = fs::read(&path).unwrap();
        let during_fs_read = ticks.get() - before;
        done.set(true);
        ticker.join().unwrap();
        assert!(
            during_file > 0,
            "the ticker never ran during File::read_exact"
        );
        assert!(during_fs_read > 0, "the ticker never ran during fs::read");
        assert_eq!(whole.len(), SIZE);
        assert!(buf == whole, "the two reads differ");
        assert_eq!(&buf[..1 << 20], &pattern(1 << 20)[..]);
    })
    .unwrap();
}
