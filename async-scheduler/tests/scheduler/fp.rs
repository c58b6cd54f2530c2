//! Floating-point state across switches (x86_64): the `context` engine
//! keeps MXCSR per context, the `corosensei` engine leaves it thread-wide.

#![cfg(target_arch = "x86_64")]

use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;

use crate::host::{ok, with_scheduler};

/// MXCSR's six sticky exception flags.
const FLAGS: u32 = 0x3f;
/// The inexact flag, which `1.0 / 3.0` raises.
const INEXACT: u32 = 0x20;
/// The rounding-control bits, and "round toward zero".
const ROUNDING: u32 = 0x6000;
const TOWARD_ZERO: u32 = 0x6000;

#[allow(deprecated)] // _mm_getcsr is the stable way to read MXCSR.
fn mxcsr() -> u32 {
    // SAFETY: reading MXCSR has no preconditions.
    unsafe { std::arch::x86_64::_mm_getcsr() }
}

#[allow(deprecated)] // _mm_setcsr is the stable way to write MXCSR.
fn set_mxcsr(value: u32) {
    // SAFETY: `value` is a valid MXCSR (the default control bits, possibly
    // with round-toward-zero and sticky flags); no exception is unmasked.
    unsafe { std::arch::x86_64::_mm_setcsr(value) }
}

/// Raises the inexact flag the way ordinary arithmetic does.
fn divide() {
    black_box(black_box(1.0f64) / black_box(3.0f64));
}

// A fresh fiber starts with the MXCSR of the context that made it (as with
// Boost.Context), so each test starts the observing coroutine first, before
// the other one changes anything.

#[test]
fn context_keeps_sticky_flags_per_context_and_the_thread_s_after_run() {
    set_mxcsr(0x1f80);
    with_scheduler("context", &[], |h| {
        let seen = Rc::new(Cell::new(0));
        let s = seen.clone();
        let observer = h.spawn(move |_| {
            ok(h.suspend());
            // Another context does not see the first one's flag.
            assert_eq!(mxcsr() & FLAGS, 0, "a flag leaked into another coroutine");
        });
        h.spawn(move |_| {
            divide();
            ok(h.enqueue(observer, 0));
            ok(h.yield_now());
            // Its own flag survived the switches.
            s.set(mxcsr());
        });
        ok(h.run());
        assert_eq!(
            seen.get() & INEXACT,
            INEXACT,
            "a coroutine lost its own flag"
        );
    });
    // The thread's flags are its own again after `run` (the root's context).
    assert_eq!(
        mxcsr() & FLAGS,
        0,
        "run left sticky flags set on the thread"
    );
    set_mxcsr(0x1f80);
}

#[test]
fn context_keeps_the_rounding_mode_per_context() {
    set_mxcsr(0x1f80);
    with_scheduler("context", &[], |h| {
        let observer = h.spawn(move |_| {
            ok(h.suspend());
            assert_eq!(
                mxcsr() & ROUNDING,
                0,
                "another coroutine's rounding mode leaked"
            );
        });
        h.spawn(move |_| {
            set_mxcsr((mxcsr() & !ROUNDING) | TOWARD_ZERO);
            ok(h.enqueue(observer, 0));
            ok(h.yield_now());
            assert_eq!(mxcsr() & ROUNDING, TOWARD_ZERO, "its rounding mode changed");
            set_mxcsr(mxcsr() & !ROUNDING); // restore before it finishes
        });
        ok(h.run());
    });
    assert_eq!(mxcsr() & ROUNDING, 0);
    set_mxcsr(0x1f80);
}

#[test]
fn corosensei_leaves_mxcsr_thread_wide() {
    set_mxcsr(0x1f80);
    with_scheduler("corosensei", &[], |h| {
        h.spawn(|_| divide());
        ok(h.run());
    });
    assert_eq!(mxcsr() & INEXACT, INEXACT, "corosensei does not save MXCSR");
    set_mxcsr(0x1f80);
}
