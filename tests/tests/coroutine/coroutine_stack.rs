//! The default stack fits ordinary thread code (issue: a gzip encoder in a
//! debug build overflowed 256 KiB and aborted the process). These run in
//! the test profile, a debug build, on the default stack, under every
//! matrix cell: the host hands every scheduler its per-build default.

use std::io::{Read, Write};

use async_std_api::{run, spawn, Builder, DEFAULT_STACK_SIZE};

#[test]
fn the_default_stack_is_stds_in_a_debug_build() {
    // Tests build with debug assertions: the default a std thread gets.
    assert_eq!(DEFAULT_STACK_SIZE, 2 << 20);
    assert_eq!(async_std_api::fiber::DEFAULT_STACK_SIZE, DEFAULT_STACK_SIZE);
}

#[test]
fn flate2_gzip_round_trip_runs_on_the_default_stack() {
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let expected = data.clone();
    let back = run(move || {
        spawn(move || {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&data).expect("compress");
            let packed = enc.finish().expect("finish");
            assert!(packed.len() < data.len() / 10, "{} bytes", packed.len());
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&packed[..])
                .read_to_end(&mut back)
                .expect("decompress");
            back
        })
        .join()
        .expect("gzip coroutine")
    })
    .expect("runtime");
    assert!(back == expected, "the round trip changed the bytes");
}

#[test]
fn serde_json_at_its_nesting_limit_runs_on_the_default_stack() {
    // serde_json refuses deeper input than 128 levels; 127 is the deepest
    // document it parses, and the deepest recursion it makes.
    let depth = 127;
    let text = "[".repeat(depth) + &"]".repeat(depth);
    let expected = text.clone();
    let back = run(move || {
        spawn(move || {
            let value: serde_json::Value = serde_json::from_str(&text).expect("parse");
            serde_json::to_string(&value).expect("print")
        })
        .join()
        .expect("json coroutine")
    })
    .expect("runtime");
    assert_eq!(back, expected);
}

#[test]
fn regex_compilation_and_a_tracing_subscriber_run_on_the_default_stack() {
    let (matched, lines) = run(|| {
        spawn(|| {
            let re = regex::Regex::new(
                r"^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*)@(?:(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)$",
            )
            .expect("compile");
            let matched = [
                re.is_match("user@example.org"),
                re.is_match("not an address"),
            ];
            let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let sink = out.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter("info")
                .with_ansi(false)
                .with_writer(move || Sink(sink.clone()))
                .finish();
            tracing::subscriber::with_default(subscriber, || {
                let _span = tracing::info_span!("request", id = 7).entered();
                tracing::info!(bytes = 512, "served");
            });
            let text = String::from_utf8(out.lock().expect("sink").clone()).expect("utf-8");
            (matched, text)
        })
        .join()
        .expect("regex coroutine")
    })
    .expect("runtime");
    assert_eq!(matched, [true, false]);
    assert!(
        lines.contains("request{id=7}") && lines.contains("served bytes=512"),
        "{lines}"
    );
}

#[test]
fn an_explicit_stack_size_still_wins_over_the_default() {
    // 64 KiB holds a small body; the explicit setting reaches the spawn.
    let v = Builder::new()
        .stack_size(64 * 1024)
        .run(|| spawn(|| 6 * 7).join().expect("small stack"))
        .expect("runtime");
    assert_eq!(v, 42);
}

/// A `MakeWriter` into a shared buffer.
struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("sink").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
