//! A helper binary for the suite's child-process tests: runs a runtime and
//! prints what happened, so a test can check exit status and stderr.
//!
//! - `runtime_probe` (or `hello`): prints the marker from inside the main
//!   coroutine; a configuration error therefore shows *no* marker.
//! - `runtime_probe deadlock`: main and a child wait for each other; prints
//!   each coroutine's id, spawn and wait location, then `run` fails with a
//!   deadlock.
//! - `runtime_probe builder`: like `hello`, with both plugins chosen by the
//!   builder (`embedded`), which must win over the environment.
//! - `runtime_probe zombie [handler]`: safely disposes a scope whose
//!   coroutine sleeps, with a 20 ms zombie timeout and no `tracing`
//!   subscriber: the runtime's warnings go to stderr; with `handler`, an
//!   event handler is installed and they do not.
//!
//! `main` returns `Result<(), async_std_api::Error>`, so an error ends the
//! process with `Error: <one line>` and exit status 1.

use std::panic::Location;

use std::time::Duration;

use async_std_api::{current, delay, run, spawn, spawn_in, suspend, Builder, Scope};
use tests::support::PROBE_MARKER;

fn main() -> Result<(), async_std_api::Error> {
    let mode = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "hello".to_owned());
    match mode.as_str() {
        "deadlock" => run(deadlock),
        // The builder's choice beats ASYNC_REACTOR / ASYNC_SCHEDULER.
        "builder" => Builder::new()
            .scheduler("embedded")
            .reactor("embedded")
            .run(|| println!("{PROBE_MARKER}")),
        "zombie" => zombie(std::env::args().nth(2).as_deref() == Some("handler")),
        _ => run(|| println!("{PROBE_MARKER}")),
    }
}

fn deadlock() {
    let main = current();
    println!("main {} spawned at {}", main.id(), main.spawn_location());
    let child = spawn(move || {
        let at = Location::caller();
        println!("child waits at {}:{}", at.file(), at.line() + 2);
        main.wait()
    });
    println!(
        "child {} spawned at {}",
        child.id(),
        child.coroutine().spawn_location()
    );
    let at = Location::caller();
    println!("main waits at {}:{}", at.file(), at.line() + 2);
    let r = child.join();
    println!(
        "main woke: {}",
        r.map(|_| "joined".to_owned())
            .unwrap_or_else(|e| e.to_string())
    );
}

fn zombie(with_handler: bool) -> Result<(), async_std_api::Error> {
    let mut b = Builder::new().zombie_timeout(Duration::from_millis(20));
    if with_handler {
        b = b.on_event(|e| println!("event: {e}"));
    }
    b.run(|| {
        let scope = Scope::new();
        spawn_in(&scope, || delay(60_000)).unwrap();
        suspend().unwrap();
        scope.dispose_safely();
    })
}
