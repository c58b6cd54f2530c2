//! `fs`: file read throughput, one reader, from the page cache (so the
//! runtime's overhead is measured, not the disk).
//!
//! - sequential: a 1 GiB file read front to back in 64 KiB reads through
//!   `Read::read` (ns per read, and MiB/s);
//! - random: 4 KiB `read_at`s at pseudo-random 4 KiB-aligned offsets of
//!   the same file (ns per read).
//!
//! Side by side: this runtime on mio (reads are blocking-pool work) and on
//! io_uring (ring operations), std on a plain thread (the ceiling: no
//! runtime at all), and tokio's current-thread runtime (`tokio::fs::File`
//! for sequential reads, which is pool work too; for `read_at`, which
//! `tokio::fs` lacks, `spawn_blocking` of std's `read_at`, the usual way).
//!
//! Excluded: making the file and mapping it whole (so it stays cached, see
//! [`BenchFile`]);
//! runtime start-up and teardown; opening the file. The rows take turns,
//! one run each for five rounds, and each keeps its median run
//! ([`crate::report::in_turns`]): a run takes 0.1 s (tokio's, up to 3 s),
//! and this VM's slow spells would otherwise fall on whichever row ran
//! during them.

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::report::NsPerOp;
pub(crate) use crate::report::Run;

/// The file's size.
pub(crate) const FILE_SIZE: u64 = 1 << 30;
/// One sequential read.
pub(crate) const SEQ_CHUNK: usize = 64 << 10;
/// One random read.
pub(crate) const RANDOM_CHUNK: usize = 4 << 10;
/// Random reads per run.
pub(crate) const RANDOM_READS: u64 = 100_000;

/// Runs of each row, the rows taking turns (see [`in_turns`]).
pub(crate) const REPS: usize = 5;

/// The benchmark's file, made once and held in the page cache while the
/// scenario runs; removed when dropped.
pub(crate) struct BenchFile {
    path: PathBuf,
    /// The whole file mapped shared and populated: a page some process
    /// maps stays cached under the development VM's DAMON pageout scheme,
    /// which takes only unmapped page cache (its `unmapped` filter). Read
    /// once instead, "warm" was not all cached: a cold page was dropped
    /// within a minute, GBs free or not, and a read of it measured the disk.
    map: *mut libc::c_void,
}

impl BenchFile {
    pub(crate) fn make() -> BenchFile {
        let path = std::env::temp_dir().join(format!("async-bench-fs-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).expect("create the bench file");
        let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        for _ in 0..FILE_SIZE >> 20 {
            std::io::Write::write_all(&mut f, &chunk).expect("write the bench file");
        }
        drop(f);
        let file = std::fs::File::open(&path).expect("open");
        // SAFETY: a fresh shared read-only mapping of the whole file, which
        // nothing truncates while it lives (`Drop` unmaps it first); no
        // Rust reference is ever made into it.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                FILE_SIZE as usize,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert!(
            map != libc::MAP_FAILED,
            "map the bench file: {}",
            std::io::Error::last_os_error()
        );
        BenchFile { path, map }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for BenchFile {
    fn drop(&mut self) {
        // SAFETY: `map` is the mapping `make` made, of `FILE_SIZE` bytes,
        // unmapped once, here.
        unsafe { libc::munmap(self.map, FILE_SIZE as usize) };
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The offsets of the random reads: the same for everyone (an LCG).
fn offsets() -> Vec<u64> {
    let slots = FILE_SIZE / RANDOM_CHUNK as u64;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..RANDOM_READS)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 33) % slots) * RANDOM_CHUNK as u64
        })
        .collect()
}

pub(crate) fn seq_reads() -> u64 {
    FILE_SIZE / SEQ_CHUNK as u64
}

/// ns per read and MiB/s for one sequential measurement.
pub(crate) fn seq_values(ns: NsPerOp) -> Vec<f64> {
    let mib_s = SEQ_CHUNK as f64 / (1 << 20) as f64 / (ns.0 / 1e9);
    vec![ns.0, mib_s]
}

fn ours<T: 'static>(reactor: &str, f: impl FnOnce() -> T + 'static) -> T {
    async_std_api::Builder::new()
        .scheduler("embedded")
        .reactor(reactor)
        .run(f)
        .expect("runtime")
}

/// This runtime: `Read::read` of 64 KiB to the end.
pub(crate) fn ours_seq(reactor: &'static str, path: &Path) -> Run<'static> {
    let path = path.to_owned();
    Box::new(move || {
        let path = path.clone();
        ours(reactor, move || {
            let mut f = async_std_api::fs::File::open(&path).expect("open");
            let mut buf = vec![0u8; SEQ_CHUNK];
            let start = Instant::now();
            let mut total = 0u64;
            loop {
                let n = f.read(&mut buf).expect("read");
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            let elapsed = start.elapsed();
            assert_eq!(total, FILE_SIZE);
            elapsed
        })
    })
}

/// This runtime: 4 KiB `read_at`s.
pub(crate) fn ours_random(reactor: &'static str, path: &Path) -> Run<'static> {
    let path = path.to_owned();
    let offsets = offsets();
    Box::new(move || {
        let (path, offsets) = (path.clone(), offsets.clone());
        ours(reactor, move || {
            let f = async_std_api::fs::File::open(&path).expect("open");
            let mut buf = vec![0u8; RANDOM_CHUNK];
            let start = Instant::now();
            for &o in &offsets {
                f.read_exact_at(&mut buf, o).expect("read_at");
            }
            start.elapsed()
        })
    })
}

/// std on a thread of its own.
pub(crate) fn std_seq(path: &Path) -> Run<'static> {
    let path = path.to_owned();
    Box::new(move || {
        let path = path.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(&path).expect("open");
            let mut buf = vec![0u8; SEQ_CHUNK];
            let start = Instant::now();
            while f.read(&mut buf).expect("read") > 0 {}
            start.elapsed()
        })
        .join()
        .expect("std reader")
    })
}

/// std's `pread` on a thread of its own.
pub(crate) fn std_random(path: &Path) -> Run<'static> {
    let path = path.to_owned();
    let offsets = offsets();
    Box::new(move || {
        let (path, offsets) = (path.clone(), offsets.clone());
        std::thread::spawn(move || {
            let f = std::fs::File::open(&path).expect("open");
            let mut buf = vec![0u8; RANDOM_CHUNK];
            let start = Instant::now();
            for &o in &offsets {
                f.read_exact_at(&mut buf, o).expect("read_at");
            }
            start.elapsed()
        })
        .join()
        .expect("std reader")
    })
}

/// tokio as its users build it: current-thread with its drivers.
fn tokio_rt() -> tokio::runtime::Runtime {
    crate::peers::tokio_current(true)
}

/// `tokio::fs::File` with `AsyncReadExt::read`.
pub(crate) fn tokio_seq(path: &Path) -> Run<'_> {
    use tokio::io::AsyncReadExt;
    let rt = tokio_rt();
    Box::new(move || {
        rt.block_on(async {
            let mut f = tokio::fs::File::open(path).await.expect("open");
            let mut buf = vec![0u8; SEQ_CHUNK];
            let start = Instant::now();
            let mut total = 0u64;
            loop {
                let n = f.read(&mut buf).await.expect("read");
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            let elapsed = start.elapsed();
            assert_eq!(total, FILE_SIZE);
            elapsed
        })
    })
}

/// tokio: `spawn_blocking` of std's `read_at` (what `tokio::fs` would do;
/// it has no `read_at`).
pub(crate) fn tokio_random(path: &Path) -> Run<'_> {
    let rt = tokio_rt();
    let offsets = offsets();
    Box::new(move || {
        rt.block_on(async {
            let f = Arc::new(std::fs::File::open(path).expect("open"));
            let start = Instant::now();
            for &o in &offsets {
                let f = f.clone();
                let buf = tokio::task::spawn_blocking(move || {
                    let mut buf = vec![0u8; RANDOM_CHUNK];
                    f.read_exact_at(&mut buf, o).map(|()| buf)
                })
                .await
                .expect("join")
                .expect("read_at");
                std::hint::black_box(buf);
            }
            start.elapsed()
        })
    })
}

/// tokio: `tokio::fs::File` seek + `read_exact` (two trips to its pool).
pub(crate) fn tokio_seek_read(path: &Path) -> Run<'_> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let rt = tokio_rt();
    let offsets = offsets();
    Box::new(move || {
        rt.block_on(async {
            let mut f = tokio::fs::File::open(path).await.expect("open");
            let mut buf = vec![0u8; RANDOM_CHUNK];
            let start = Instant::now();
            for &o in &offsets {
                f.seek(std::io::SeekFrom::Start(o)).await.expect("seek");
                f.read_exact(&mut buf).await.expect("read");
            }
            start.elapsed()
        })
    })
}

/// How long the scenario's set-up took, for the log.
pub(crate) fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let r = f();
    eprintln!("bench: fs: {what} in {:.1?}", start.elapsed());
    r
}
