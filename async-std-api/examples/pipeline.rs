//! A process pipeline built from `Command` and pipes, fed and read by
//! coroutines: the shell's `printf ... | sort | uniq -c | sort -rn`, with
//! the words coming from a coroutine and the counts read by another.
//!
//! ```text
//! cargo run -p async-std-api --example pipeline
//! ASYNC_REACTOR=uring cargo run -p async-std-api --example pipeline
//! ```
//!
//! `sort` reads the words from an `io::pipe` a coroutine writes into;
//! each stage's stdout is the next one's stdin (`Stdio::from(ChildStdout)`);
//! the last stage's output is read by another coroutine. While the children
//! run, a ticker coroutine keeps ticking: nothing here blocks the loop.

use std::cell::Cell;
use std::io::{BufRead, BufReader, Write};
use std::rc::Rc;

use async_std_api::io;
use async_std_api::process::{Command, Stdio};
use async_std_api::{delay, run, spawn};

const TEXT: &str = "the quick brown fox jumps over the lazy dog \
    the dog sleeps and the fox runs over the hill";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(|| -> std::io::Result<()> {
        let (words_in, mut words_out) = io::pipe()?;
        let mut sort = Command::new("sort");
        sort.stdin(words_in).stdout(Stdio::piped());
        let mut sort = sort.spawn()?;
        // Each stage's output is the next one's input.
        let mut uniq = Command::new("uniq");
        uniq.arg("-c")
            .stdin(sort.stdout.take().expect("piped"))
            .stdout(Stdio::piped());
        let mut uniq = uniq.spawn()?;
        let mut rank = Command::new("sort");
        rank.arg("-rn")
            .stdin(uniq.stdout.take().expect("piped"))
            .stdout(Stdio::piped());
        let mut rank = rank.spawn()?;
        // The commands keep copies of the read ends they were given (as
        // std's do), which is harmless; the one write end we hold is the
        // feeder's, and dropping it ends the first stage's input.

        let done = Rc::new(Cell::new(false));
        let ticks = Rc::new(Cell::new(0u32));
        let ticker = {
            let (done, ticks) = (done.clone(), ticks.clone());
            spawn(move || {
                while !done.get() {
                    delay(1).unwrap();
                    ticks.set(ticks.get() + 1);
                }
            })
        };

        let feeder = spawn(move || -> std::io::Result<()> {
            for word in TEXT.split_whitespace() {
                writeln!(words_out, "{word}")?;
            }
            Ok(()) // dropping the writer ends sort's input
        });
        let out = rank.stdout.take().expect("piped");
        let reader = spawn(move || -> std::io::Result<Vec<(u32, String)>> {
            let mut counts = Vec::new();
            for line in BufReader::new(out).lines() {
                let line = line?;
                let mut parts = line.split_whitespace();
                if let (Some(n), Some(word)) = (parts.next(), parts.next()) {
                    counts.push((n.parse().unwrap_or(0), word.to_owned()));
                }
            }
            Ok(counts)
        });

        feeder.join().expect("feeder")?;
        let counts = reader.join().expect("reader")?;
        for (name, child) in [
            ("sort", &mut sort),
            ("uniq", &mut uniq),
            ("sort -rn", &mut rank),
        ] {
            let status = child.wait()?;
            assert!(status.success(), "{name} failed: {status}");
        }
        done.set(true);
        ticker.join().expect("ticker");

        println!("word counts, most frequent first:");
        for (n, word) in &counts {
            println!("{n:4} {word}");
        }
        println!(
            "(the ticker ticked {} times while the pipeline ran)",
            ticks.get()
        );
        assert_eq!(counts.first(), Some(&(5, "the".to_owned())));
        Ok(())
    })??;
    Ok(())
}
