//! Hooks off, or outside a coroutine: the C library's own calls.

use std::time::{Duration, Instant};

use async_std_api::{hooks, spawn, spawn_blocking, Builder};

use crate::{hooked, Ticker};

#[test]
fn with_hooks_off_a_std_sleep_blocks_the_loop_as_before() {
    let (ticks, worst) = Builder::new()
        .hooks(false)
        .run(|| {
            assert!(!hooks::active());
            let ticker = Ticker::start();
            async_std_api::delay(1).expect("delay");
            std::thread::sleep(Duration::from_millis(150));
            ticker.stop()
        })
        .expect("runtime");
    assert!(
        worst >= Duration::from_millis(140),
        "longest gap {worst:?}: the sleep did not block"
    );
    assert!(ticks <= 3, "{ticks} ticks");
}

#[test]
fn outside_a_coroutine_hooked_calls_are_the_real_calls() {
    assert!(!hooks::active());
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(20));
    assert!(start.elapsed() >= Duration::from_millis(20));
    // On the blocking pool of a hooked runtime: a thread, so a real sleep.
    let took = hooked()
        .run(|| {
            spawn_blocking(|| {
                assert!(!hooks::active());
                let start = Instant::now();
                std::thread::sleep(Duration::from_millis(20));
                start.elapsed()
            })
            .join()
            .expect("blocking")
        })
        .expect("runtime");
    assert!(took >= Duration::from_millis(20));
}

#[test]
fn hooks_are_on_only_where_asked() {
    let seen = hooked()
        .run(|| {
            let inner = spawn(hooks::active).join().expect("child");
            (hooks::active(), inner)
        })
        .expect("runtime");
    assert_eq!(seen, (true, true));
    assert!(!Builder::new().run(hooks::active).expect("runtime"));
}

#[test]
fn asking_for_hooks_by_environment_turns_them_on() {
    // A child process, so the variable is set before anything reads it.
    let exe = std::env::current_exe().expect("own path");
    if std::env::var_os("HOOKS_CHILD").is_some() {
        assert!(Builder::new().run(hooks::active).expect("runtime"));
        return;
    }
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "hooks_off::asking_for_hooks_by_environment_turns_them_on",
            "--nocapture",
        ])
        .env("HOOKS_CHILD", "1")
        .env("ASYNC_HOOKS", "1")
        .output()
        .expect("child");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = std::process::Command::new(std::env::current_exe().expect("own path"))
        .args([
            "--exact",
            "hooks_off::asking_for_hooks_by_environment_turns_them_on",
            "--nocapture",
        ])
        .env("HOOKS_CHILD", "1")
        .env("ASYNC_HOOKS", "maybe")
        .output()
        .expect("child");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stdout)
            .contains("invalid ASYNC_HOOKS \"maybe\": expected 1 or 0")
            || String::from_utf8_lossy(&bad.stderr)
                .contains("invalid ASYNC_HOOKS \"maybe\": expected 1 or 0"),
        "{}{}",
        String::from_utf8_lossy(&bad.stdout),
        String::from_utf8_lossy(&bad.stderr)
    );
}
