//! The RFC's examples, in Rust: suspension, cancellation, timers and
//! `await ... until`.
//!
//! ```text
//! cargo run -p async-std-api --example demo
//! ```

use std::time::Instant;

use async_std_api::{delay, run, spawn, suspend, timeout};

fn example(name: &str) {
    println!("Hello, {name}!");
    suspend().unwrap();
    println!("Goodbye, {name}!");
}

fn main() -> Result<(), async_std_api::Error> {
    run(|| {
        println!("-- suspension");
        let w = spawn(|| example("World"));
        let u = spawn(|| example("Universe"));
        w.join().unwrap();
        u.join().unwrap();

        println!("-- suspend in the main flow");
        spawn(|| example("World"));
        suspend().unwrap();
        println!("Back to the main flow");
        delay(1).unwrap();

        println!("-- cancellation");
        let c = spawn(|| {
            println!("Hello, World!");
            if let Err(e) = suspend() {
                println!("Caught exception: {e}");
            }
            println!("Goodbye, World!");
        });
        suspend().unwrap(); // pass control to the coroutine
        c.cancel();
        // It caught its cancellation and returned: it still ends cancelled.
        let e = c.join().unwrap_err();
        println!("join: {}", e.cancelled().expect("ended cancelled"));

        println!("-- timers");
        let started = Instant::now();
        let sleepers: Vec<_> = [300, 150, 50]
            .into_iter()
            .map(|ms| {
                spawn(move || {
                    delay(ms).unwrap();
                    println!("slept {ms} ms");
                })
            })
            .collect();
        for s in sleepers {
            s.join().unwrap();
        }
        println!("all three in {} ms", started.elapsed().as_millis());

        println!("-- await until timeout");
        let fetch = spawn(|| delay(500).map(|()| "data"));
        match fetch.wait_until(&timeout(100)) {
            Err(e) if e.is_await_cancelled() => println!("Operation was cancelled by timeout"),
            other => println!("unexpected: {other:?}"),
        }
        println!("still running: {}", !fetch.is_finished());
        let fast = spawn(|| {
            delay(10).unwrap();
            "fast data"
        });
        println!("got {}", fast.join_until(&timeout(1000)).unwrap());
        fetch.cancel();
        match fetch.join() {
            Err(e) if e.is_cancelled() => println!("fetch ended: {e}"),
            other => println!("unexpected: {other:?}"),
        }
    })
}
