//! Watches a directory and prints what happens in it, with `fs::watch`.
//!
//! ```text
//! cargo run -p async-std-api --example fs_watch -- <dir>   # until Ctrl-C
//! cargo run -p async-std-api --example fs_watch            # a demonstration
//! ```
//!
//! Without an argument it watches a temporary directory while another
//! coroutine creates, modifies, renames and removes a file in it, prints
//! the events, and exits.

use std::io::{self, Write};
use std::path::Path;

use async_std_api::fs::{self, WatchEvent};
use async_std_api::{run, signal, spawn, spawn_try, timeout};

fn main() {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "-h" || a == "--help")
    {
        println!("usage: fs_watch [DIR]\n  prints the changes in DIR until Ctrl-C; without DIR, a demonstration");
        std::process::exit(0);
    }
    let arg = std::env::args().nth(1);
    let watched = run(move || -> io::Result<()> {
        match arg {
            Some(dir) => watch_forever(Path::new(&dir)),
            None => demonstrate(),
        }
    });
    // One line for a failure, as the runtime's own errors are.
    match watched {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!("fs_watch: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("fs_watch: {e}");
            std::process::exit(2);
        }
    }
}

/// Prints every event until Ctrl-C.
fn watch_forever(dir: &Path) -> io::Result<()> {
    let mut watcher = fs::watch(dir)?;
    println!("watching {} (Ctrl-C to stop)", watcher.path().display());
    let stop = signal::signal(signal::SIGINT)?;
    spawn_try(move || -> io::Result<()> {
        stop.wait()?;
        std::process::exit(0);
    });
    for event in &mut watcher {
        println!("{:?}", event?);
    }
    println!("the watched directory is gone");
    Ok(())
}

/// Changes a temporary directory from one coroutine and watches it from
/// another.
fn demonstrate() -> io::Result<()> {
    let dir = std::env::temp_dir().join(format!("fs-watch-example-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    let watcher = fs::watch(&dir)?;
    println!("watching {}", watcher.path().display());
    let d = dir.clone();
    let changes = spawn(move || -> io::Result<()> {
        fs::write(d.join("notes.txt"), "first line\n")?;
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(d.join("notes.txt"))?;
        f.write_all(b"second line\n")?;
        drop(f);
        fs::rename(d.join("notes.txt"), d.join("notes.old"))?;
        fs::remove_file(d.join("notes.old"))
    });
    // Until the removal arrives; a generous bound instead of hanging if
    // something is lost.
    let bound = timeout(10_000);
    let mut seen = 0;
    loop {
        match watcher.next_until(&bound) {
            Some(Ok(event)) => {
                println!("{event:?}");
                seen += 1;
                if event == WatchEvent::Removed("notes.old".into()) {
                    break;
                }
            }
            Some(Err(e)) => return Err(e),
            None => break,
        }
    }
    changes.join().map_err(io::Error::other)??;
    fs::remove_dir_all(&dir)?;
    println!("{seen} events");
    Ok(())
}
