//! `create` and `destroy`: option validation with exact messages, BUSY.

use async_abi::*;

use crate::any_order_tests;
use crate::host::{ok, try_create, with_scheduler};

#[track_caller]
fn rejected(options: &[(&str, &str)], message: &str) {
    match try_create(options, 0) {
        Ok(_) => panic!("{options:?} was accepted"),
        Err((status, msg)) => {
            assert_eq!(status, AA_E_INVALID);
            assert_eq!(msg, message);
        }
    }
}

#[test]
fn create_rejects_bad_options_with_one_line_naming_them() {
    rejected(&[("foo", "1")], "unknown scheduler option \"foo\"");
    rejected(
        &[("engine", "bogus")],
        "invalid scheduler option engine=\"bogus\": expected context or corosensei",
    );
    rejected(
        &[("stack_size", "12")],
        "invalid scheduler option stack_size=\"12\": 12 bytes is too small; a stack holds 16384 \
         to 1073741824 bytes (16k to 1024m)",
    );
    rejected(
        &[("stack_size", "2g")],
        "invalid scheduler option stack_size=\"2g\": expected a size in bytes (k and m suffixes \
         allowed); a stack holds 16384 to 1073741824 bytes (16k to 1024m)",
    );
    rejected(
        &[("stack_size", "4096m")],
        "invalid scheduler option stack_size=\"4096m\": 4294967296 bytes is too large; a stack \
         holds 16384 to 1073741824 bytes (16k to 1024m)",
    );
    rejected(
        &[("stack_pool", "lots")],
        "invalid scheduler option stack_pool=\"lots\": expected a number of warm stacks to keep \
         (0 or more)",
    );
    rejected(
        &[("stack_prefault", "maybe")],
        "invalid scheduler option stack_prefault=\"maybe\": expected auto, on or off",
    );
    rejected(
        &[("policy", "lifo")],
        "invalid scheduler option policy=\"lifo\": expected fifo or chaos",
    );
    rejected(
        &[("policy", "chaos"), ("seed", "x")],
        "invalid scheduler option seed=\"x\": expected an unsigned integer or random",
    );
}

#[test]
fn create_accepts_every_valid_option_and_ignores_other_plugins_options() {
    let options = [
        ("engine", "context"),
        ("stack_size", "65536"),
        ("stack_pool", "8"),
        ("stack_prefault", "off"),
        ("policy", "chaos"),
        ("seed", "12345"),
        ("uring.sq_entries", "256"),
    ];
    let h = try_create(&options, 0).expect("valid options");
    assert_eq!(h.stats().engine, "context");
    assert_eq!(h.stats().chaos_seed, Some(12345));
    crate::host::finish(h);
}

#[test]
fn create_defaults_to_the_benchmark_winner() {
    let h = try_create(&[], 0).expect("no options");
    assert_eq!(h.stats().engine, "context");
    crate::host::finish(h);
}

#[test]
fn create_rejects_a_small_config_stack_size() {
    match try_create(&[], 100) {
        Err((status, msg)) => {
            assert_eq!(status, AA_E_INVALID);
            assert_eq!(
                msg,
                "invalid scheduler config stack_size=100: 100 bytes is too small; a stack holds \
                 16384 to 1073741824 bytes (16k to 1024m)"
            );
        }
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn create_rejects_a_reactor_without_required_slots() {
    let vt = crate::host::vtable();
    let mut reactor = crate::host::FAKE_REACTOR;
    reactor.alive = None;
    let mut err = [0u8; 128];
    let cfg = AaSchedulerConfig {
        struct_size: std::mem::size_of::<AaSchedulerConfig>() as u32,
        flags: 0,
        reactor: &reactor,
        reactor_instance: std::ptr::NonNull::dangling().as_ptr(),
        stack_size: 0,
        options: std::ptr::null(),
        n_options: 0,
        err_buf: err.as_mut_ptr(),
        err_cap: err.len(),
    };
    let mut s = std::ptr::null_mut();
    // SAFETY: a valid config for the call.
    let rc = unsafe { vt.create.unwrap()(std::ptr::null_mut(), &cfg, &mut s) };
    assert_eq!(rc, AA_E_INVALID);
    let n = err.iter().position(|&b| b == 0).unwrap();
    assert_eq!(
        std::str::from_utf8(&err[..n]).unwrap(),
        "invalid scheduler config: reactor vtable has no alive"
    );
}

any_order_tests! {
    fn destroy_is_busy_while_coroutines_live(h) {
        h.spawn(|_| {});
        // SAFETY: a live scheduler.
        assert_eq!(unsafe { h.vt.destroy.unwrap()(h.s) }, AA_E_BUSY);
        ok(h.run());
    }
}

#[test]
fn stack_size_option_sets_the_default_stack() {
    with_scheduler("corosensei", &[("stack_size", "20000")], |h| {
        h.spawn(|_| {});
        ok(h.run());
        assert_eq!(h.stats().stacks_carved, 1);
    });
}
