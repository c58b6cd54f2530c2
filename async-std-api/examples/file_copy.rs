//! Copies a file with `fs::File`, `std::io::copy` and nothing else: the
//! reads and writes suspend the coroutine (ring operations on io_uring,
//! the blocking pool elsewhere), while a second coroutine reports
//! progress.
//!
//! ```text
//! cargo run -p async-std-api --example file_copy -- <from> <to>
//! cargo run -p async-std-api --example file_copy        # a temporary file
//! ASYNC_REACTOR=uring cargo run -p async-std-api --example file_copy
//! ```

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::rc::Rc;

use async_std_api::fs::{self, File};
use async_std_api::{delay, run, spawn};

/// Counts the bytes that pass through it.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

fn main() {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "-h" || a == "--help")
    {
        println!("usage: file_copy [FROM TO]\n  copies FROM to TO through the runtime; without arguments, copies a temporary file");
        std::process::exit(0);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(move || copy(&args)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!("file_copy: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("file_copy: {e}");
            std::process::exit(2);
        }
    }
}

/// `e`, its message naming `path`: a user sees which file failed.
fn named(path: &std::path::Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn copy(args: &[String]) -> io::Result<()> {
    let (from, to, temporary) = match args {
        [from, to] => (PathBuf::from(from), PathBuf::from(to), None),
        [] => {
            // No arguments: copy 8 MiB of a temporary file, then tidy up.
            let dir =
                std::env::temp_dir().join(format!("file-copy-example-{}", std::process::id()));
            fs::create_dir_all(&dir)?;
            let from = dir.join("source");
            let mut f = File::create(&from)?;
            let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
            for _ in 0..8 {
                f.write_all(&chunk)?;
            }
            f.sync_all()?;
            (from, dir.join("copy"), Some(dir))
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "usage: file_copy [<from> <to>]",
            ))
        }
    };
    let count = Rc::new(Cell::new(0u64));
    let mut reader = Counting {
        inner: File::open(&from).map_err(|e| named(&from, e))?,
        count: count.clone(),
    };
    let mut writer = File::create(&to).map_err(|e| named(&to, e))?;
    // Progress every 100 ms, while the copy suspends in its reads and
    // writes.
    let progress = spawn(move || {
        while delay(100).is_ok() {
            eprintln!("... {} bytes", count.get());
        }
    });
    let copied = io::copy(&mut reader, &mut writer).and_then(|n| {
        writer.sync_all()?;
        Ok(n)
    });
    progress.cancel();
    let _ = progress.join();
    let copied = copied?;
    println!(
        "copied {copied} bytes from {} to {}",
        from.display(),
        to.display()
    );
    if let Some(dir) = temporary {
        assert_eq!(copied, 8 << 20);
        assert_eq!(fs::read(&from)?, fs::read(&to)?);
        fs::remove_dir_all(dir)?;
    }
    Ok(())
}
