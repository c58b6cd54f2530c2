//! Stacks: an overflow on the guard page is reported in one line and
//! aborts (stack/overflow.rs), faults that are not overflows still die as
//! before, and floating-point control bits per engine.
//!
//! Each fault runs in a child process: this test binary, re-executed with
//! `ASYNC_SCHEDULER_TEST_CHILD` naming what the child does.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

use crate::host::{assert_events, ev, ok, with_scheduler, Spawn};

// The point is to overflow the stack.
#[allow(unconditional_recursion)]
#[inline(never)]
fn recurse(n: u64) -> u64 {
    let buf = [n; 64];
    std::hint::black_box(&buf);
    recurse(n + 1) + buf[3]
}

/// The spawn line of the overflowing coroutine in [`child`].
const SPAWN_LINE: u32 = 1234;

/// What a child does, by the value of `ASYNC_SCHEDULER_TEST_CHILD`:
/// `overflow <engine> <std|own>` (on std's alternate stack, or with it
/// disabled so the scheduler maps its own), `wild <engine>` (a coroutine
/// reads a PROT_NONE page that is no guard), `outside` (the thread reads one
/// outside any coroutine, after a scheduler was made), `thread` (a std
/// thread overflows its own stack after a scheduler was made).
fn child(what: &str) -> ! {
    let words: Vec<&str> = what.split(' ').collect();
    match words[..] {
        ["overflow", engine, alt] => {
            if alt == "own" {
                disable_alt_stack();
            }
            with_scheduler(engine, &[("stack_size", "16384")], |h| {
                h.spawn(|_| ev("first"));
                let at = Spawn {
                    file: "tests/scheduler/guard.rs",
                    line: SPAWN_LINE,
                    column: 9,
                    ..Spawn::default()
                };
                h.spawn_with(at, |_| {
                    recurse(0);
                });
                ok(h.run());
            });
        }
        ["wild", engine] => {
            let page = no_access_page();
            with_scheduler(engine, &[], |h| {
                h.spawn(move |_| {
                    // SAFETY: none needed: the read faults (what the parent
                    // checks); the page is mapped, so it is not UB to form.
                    let v = unsafe { std::ptr::read_volatile(page as *const u8) };
                    ev(format!("read {v}"));
                });
                ok(h.run());
            });
        }
        ["outside"] => {
            let page = no_access_page();
            with_scheduler("context", &[], |h| {
                h.spawn(|_| {});
                ok(h.run());
            });
            // SAFETY: as in `wild`.
            let v = unsafe { std::ptr::read_volatile(page as *const u8) };
            ev(format!("read {v}"));
        }
        ["thread"] => {
            with_scheduler("context", &[], |h| {
                h.spawn(|_| {});
                ok(h.run());
            });
            let t = std::thread::Builder::new()
                .name("small".into())
                .stack_size(64 * 1024)
                .spawn(|| recurse(0))
                .unwrap();
            let _ = t.join();
        }
        _ => panic!("unknown child {what:?}"),
    }
    unreachable!("the child {what:?} returned");
}

/// A mapped page that faults on any access (not a coroutine's guard).
fn no_access_page() -> usize {
    // SAFETY: a fresh anonymous mapping; never unmapped (the child dies).
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p as usize
}

/// Turns off the thread's alternate signal stack (std's).
fn disable_alt_stack() {
    let off = libc::stack_t {
        ss_sp: std::ptr::null_mut(),
        ss_flags: libc::SS_DISABLE,
        ss_size: 0,
    };
    // SAFETY: disabling needs no stack; nothing runs on it now.
    assert_eq!(unsafe { libc::sigaltstack(&off, std::ptr::null_mut()) }, 0);
}

/// Whether a child died of a fault that is not a coroutine overflow, the way
/// it would have without the scheduler's handler: SIGSEGV, or, in an
/// AddressSanitizer build (`cfg(asan)`, build.rs), ASan's own report, since
/// ASan's handler is the one installed before ours.
fn died_of_a_plain_fault(out: &Output) -> bool {
    if cfg!(asan) {
        String::from_utf8_lossy(&out.stderr).contains("ERROR: AddressSanitizer: SEGV")
    } else {
        out.status.signal() == Some(libc::SIGSEGV)
    }
}

/// Runs `what` in a child (this test, re-executed).
fn run_child(test: &str, what: &str) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env("ASYNC_SCHEDULER_TEST_CHILD", what)
        .output()
        .expect("run the child")
}

/// Checks that a coroutine overflowing its 16 KiB stack is reported in one
/// line naming it, its spawn location and its stack size, with how to raise
/// it, and aborts; under both engines, on std's alternate signal stack and
/// on one the scheduler maps.
#[test]
fn a_stack_overflow_is_reported_in_one_line_and_aborts() {
    if let Ok(what) = std::env::var("ASYNC_SCHEDULER_TEST_CHILD") {
        child(&what);
    }
    let expected = format!(
        "async-scheduler: stack overflow in coroutine 2 (spawned at tests/scheduler/guard.rs:\
         {SPAWN_LINE}): its stack is 16384 bytes; give coroutines more with \
         Builder::stack_size(32768) or stack_size = 32768 in the config file's [scheduler] \
         table, or, when neither is set, with the scheduler option stack_size \
         (ASYNC_SCHEDULER_OPTIONS=stack_size=32k); aborting\n"
    );
    for engine in ["context", "corosensei"] {
        for alt in ["std", "own"] {
            let out = run_child(
                "guard::a_stack_overflow_is_reported_in_one_line_and_aborts",
                &format!("overflow {engine} {alt}"),
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.signal(),
                Some(libc::SIGABRT),
                "{engine}, {alt} alternate stack: {:?}\n{stderr}",
                out.status
            );
            assert_eq!(stderr, expected, "{engine}, {alt} alternate stack");
        }
    }
}

/// Checks that faults that are not a coroutine overflow die as they did
/// before the handler existed: SIGSEGV and no report, inside a coroutine
/// and outside; and that std still reports an overflow of a thread's own
/// stack.
#[test]
fn other_faults_die_as_before() {
    if let Ok(what) = std::env::var("ASYNC_SCHEDULER_TEST_CHILD") {
        child(&what);
    }
    const NAME: &str = "guard::other_faults_die_as_before";
    for what in ["wild context", "wild corosensei", "outside"] {
        let out = run_child(NAME, what);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            died_of_a_plain_fault(&out),
            "{what}: {:?}\n{stderr}",
            out.status
        );
        assert!(
            !stderr.contains("async-scheduler: stack overflow"),
            "{what}: {stderr}"
        );
    }
    let out = run_child(NAME, "thread");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if cfg!(asan) {
        // ASan's handler came first, so std installed none: ASan reports.
        assert!(
            stderr.contains("ERROR: AddressSanitizer: stack-overflow"),
            "thread: {stderr}"
        );
    } else {
        assert_eq!(out.status.signal(), Some(libc::SIGABRT), "thread: {stderr}");
        assert!(
            stderr.contains("thread 'small'") && stderr.contains("has overflowed its stack"),
            "thread: {stderr}"
        );
    }
    assert!(
        !stderr.contains("async-scheduler: stack overflow"),
        "thread: {stderr}"
    );
}

#[cfg(target_arch = "x86_64")]
fn mxcsr() -> u32 {
    let mut csr: u32 = 0;
    // SAFETY: stmxcsr stores MXCSR into a local.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr) };
    csr
}

#[cfg(target_arch = "x86_64")]
fn set_mxcsr(csr: u32) {
    // SAFETY: ldmxcsr of a value with only RC bits changed from a valid one.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr) };
}

/// MXCSR rounding-control bits.
#[cfg(target_arch = "x86_64")]
const RC: u32 = 0b11 << 13;

/// Checks that a coroutine that changes its rounding mode finds it again
/// after a switch, under both engines (the context engine's sticky-flag
/// equalization leaves the control bits alone). What *another* coroutine
/// sees meanwhile is unspecified (README, "Floating-point state").
#[cfg(target_arch = "x86_64")]
#[test]
fn a_coroutine_keeps_its_rounding_mode_across_a_switch() {
    for engine in ["context", "corosensei"] {
        with_scheduler(engine, &[], |h| {
            h.spawn(move |_| {
                let before = mxcsr();
                set_mxcsr(before | RC);
                ok(h.yield_now());
                ev(format!("a keeps {:#x}", (mxcsr() & RC) >> 13));
                set_mxcsr(before);
            });
            h.spawn(|_| ev("b"));
            ok(h.run());
            assert_events(&["b", "a keeps 0x3"]);
        });
    }
}
