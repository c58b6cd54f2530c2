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
            (back == data, start.elapsed(), ticker.stop())
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
