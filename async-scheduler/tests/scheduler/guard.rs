//! Stacks: an overflow faults on the guard page, and floating-point control
//! bits per engine.

use std::process::Command;

use crate::host::{assert_events, ev, ok, with_scheduler};

// The point is to overflow the stack.
#[allow(unconditional_recursion)]
#[inline(never)]
fn recurse(n: u64) -> u64 {
    let buf = [n; 64];
    std::hint::black_box(&buf);
    recurse(n + 1) + buf[3]
}

/// Checks that a coroutine overflowing its 16 KiB stack dies with SIGSEGV on
/// the guard page instead of writing into the next stack. Runs the overflow
/// in a child process (this test binary, re-executed).
#[test]
fn overflowing_a_coroutine_stack_faults_on_the_guard_page() {
    const NAME: &str = "guard::overflowing_a_coroutine_stack_faults_on_the_guard_page";
    if let Ok(engine) = std::env::var("ASYNC_SCHEDULER_TEST_OVERFLOW") {
        with_scheduler(&engine, &[("stack_size", "16384")], |h| {
            h.spawn(|_| {
                recurse(0);
            });
            ok(h.run());
        });
        unreachable!("the overflow returned");
    }
    for engine in ["context", "corosensei"] {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([NAME, "--exact", "--test-threads=1", "--nocapture"])
            .env("ASYNC_SCHEDULER_TEST_OVERFLOW", engine)
            .output()
            .expect("run the child");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSEGV),
            "{engine}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
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
