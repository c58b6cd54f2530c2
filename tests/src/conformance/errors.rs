//! Tier: errors. AA-R8: a call that returns a negative status creates
//! nothing and never calls its callback; NULL required arguments, bad
//! descriptors, short structs, unknown opcodes and flags are refused.

use std::ptr;

use async_abi::*;

use super::fds;
use super::harness::{Loop, Rec, Submit};
use super::plugin::Reactor;

unsafe extern "C" fn never_timer(_: *mut AaEvent, _: AaStatus, _: *mut std::ffi::c_void) {
    std::process::abort();
}

/// Runs two iterations and checks that no callback ran (AA-R8).
#[track_caller]
fn nothing_ran(lp: &Loop) {
    lp.run_once(0);
    lp.run_once(0);
    assert_eq!(lp.log(), vec![], "a failed call called back");
    assert_eq!(lp.alive(), 0, "a failed call left something alive");
}

/// Checks that `timer_new` without a callback fails.
pub fn timer_new_with_null_callback_fails_without_callback(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let f = lp.vt().timer_new.expect("required slot");
    let mut out = ptr::null_mut();
    // SAFETY: live reactor; a NULL callback is what is being tested.
    let status = unsafe { f(lp.raw(), 0, 0, 0, None, ptr::null_mut(), &mut out) };
    assert!(status < 0, "timer_new with a NULL callback gave {status}");
    nothing_ran(&lp);
    lp.finish();
}

/// Checks that a constructor without an `out` pointer fails and never calls
/// its callback (which would abort the process).
pub fn constructor_with_null_out_fails(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let f = lp.vt().timer_new.expect("required slot");
    // SAFETY: live reactor; a NULL `out` is what is being tested.
    let status = unsafe {
        f(
            lp.raw(),
            0,
            0,
            0,
            Some(never_timer),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert!(status < 0, "timer_new with a NULL out gave {status}");
    nothing_ran(&lp);
    lp.finish();
}

/// Checks that `poll_new` on a descriptor that is not open fails.
pub fn poll_new_on_a_bad_fd_fails(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_POLL, "poll_new_on_a_bad_fd_fails") {
        return;
    }
    let lp = Loop::new(reactor);
    let status = lp.try_poll("p", fds::BAD_FD, AA_POLL_READABLE, 0).err();
    assert!(
        status.is_some_and(|s| s < 0),
        "poll_new on a bad fd gave {status:?}"
    );
    nothing_ran(&lp);
    lp.finish();
}

/// Checks that requests on a descriptor that is not open fail, with and
/// without `AA_IO_TRY_INLINE`: either `io_submit` returns a negative status
/// (nothing created, AA-R8), or, for a reactor that cannot tell before the
/// kernel does (io_uring), the request completes exactly once with `-EBADF`.
pub fn io_submit_on_a_bad_fd_fails_with_and_without_inline(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_IO,
        "io_submit_on_a_bad_fd_fails_with_and_without_inline",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let mut buf = [0u8; 4];
    for flags in [0, AA_IO_TRY_INLINE] {
        let read = lp.read("r", fds::BAD_FD, &mut buf, flags);
        expect_bad_fd(&lp, "r", read);
        let write = lp.write("w", fds::BAD_FD, b"x", flags);
        expect_bad_fd(&lp, "w", write);
        let mut op = AaIoOp::new(AA_IO_CLOSE, i64::from(fds::BAD_FD));
        let close = lp.submit("c", &mut op, flags);
        expect_bad_fd(&lp, "c", close);
    }
    assert_eq!(buf, [0u8; 4], "a failed read wrote into its buffer");
    lp.finish();
}

/// A bad-descriptor request either failed at submission (and nothing may
/// ever call back for it) or completes once with `-EBADF`.
#[track_caller]
fn expect_bad_fd(lp: &Loop, tag: &'static str, submitted: Submit) {
    match submitted {
        Submit::Failed(s) => {
            assert!(s < 0, "{tag}: failed with a non-negative status {s}");
            nothing_ran(lp);
        }
        Submit::Pending(ev) => {
            lp.run_until_tag(tag);
            let results: Vec<i64> = lp
                .take_log()
                .into_iter()
                .filter_map(|r| match r {
                    Rec::Io(t, res) if t == tag => Some(res),
                    _ => None,
                })
                .collect();
            assert_eq!(
                results,
                vec![-i64::from(libc::EBADF)],
                "{tag}: a pending bad-fd request must complete once with -EBADF"
            );
            lp.dispose(ev);
        }
        Submit::Done(res) => panic!("{tag}: a bad-fd request completed inline with {res}"),
    }
}

/// Checks that an `AaIoOp` whose `struct_size` is too small is refused with
/// `AA_E_INVALID`.
pub fn io_submit_with_a_short_struct_size_is_invalid(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_IO,
        "io_submit_with_a_short_struct_size_is_invalid",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    let mut op = AaIoOp::new(AA_IO_WRITE, i64::from(a));
    op.buf = b"x".as_ptr().cast_mut();
    op.len = 1;
    op.struct_size = 8;
    assert_eq!(
        lp.submit("w", &mut op, AA_IO_TRY_INLINE),
        Submit::Failed(AA_E_INVALID)
    );
    nothing_ran(&lp);
    lp.finish();
}

/// Checks that an unknown opcode is refused with `AA_E_UNSUPPORTED` (ABI
/// 1.1: "an opcode this reactor does not run"; a 1.0 reactor may answer
/// `AA_E_INVALID`), and unknown `io_submit` flag bits and `op_flags` bits
/// with `AA_E_INVALID`, each with one line in `last_error_message` and
/// nothing created (AA-R8).
pub fn io_submit_with_unknown_opcode_is_unsupported_and_unknown_flags_invalid(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_IO,
        "io_submit_with_unknown_opcode_is_unsupported_and_unknown_flags_invalid",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    let mut op = AaIoOp::new(0x4000, i64::from(a));
    let status = match lp.submit("op", &mut op, 0) {
        Submit::Failed(s) => s,
        other => panic!("an unknown opcode gave {other:?}"),
    };
    if lp.vt().hdr.iface_minor >= 1 {
        assert_eq!(status, AA_E_UNSUPPORTED, "unknown opcode, ABI 1.1");
    } else {
        assert!(
            status == AA_E_UNSUPPORTED || status == AA_E_INVALID,
            "unknown opcode, ABI 1.0: {status}"
        );
    }
    let msg = lp.last_error();
    assert!(
        msg.contains("16384") && !msg.contains('\n'),
        "one line naming the opcode: {msg:?}"
    );
    assert_eq!(
        lp.write("w", a, b"x", 1 << 30),
        Submit::Failed(AA_E_INVALID)
    );
    let mut op = AaIoOp::new(AA_IO_WRITE, i64::from(a));
    op.buf = b"x".as_ptr().cast_mut();
    op.len = 1;
    op.op_flags = 1 << 30;
    assert_eq!(lp.submit("f", &mut op, 0), Submit::Failed(AA_E_INVALID));
    nothing_ran(&lp);
    lp.finish();
}

/// Checks that a read with a NULL buffer and a non-zero length is refused.
pub fn io_submit_read_with_null_buffer_is_invalid(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_IO,
        "io_submit_read_with_null_buffer_is_invalid",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    let mut op = AaIoOp::new(AA_IO_READ, i64::from(a));
    op.len = 16;
    assert_eq!(lp.submit("r", &mut op, 0), Submit::Failed(AA_E_INVALID));
    nothing_ran(&lp);
    lp.finish();
}

/// Checks that `io_submit` without an op fails.
pub fn io_submit_with_null_op_is_invalid(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_IO, "io_submit_with_null_op_is_invalid") {
        return;
    }
    let lp = Loop::new(reactor);
    let f = lp.vt().io_submit.expect("required slot");
    let mut out = ptr::null_mut();
    // SAFETY: live reactor; a NULL op is what is being tested.
    let status = unsafe {
        f(
            lp.raw(),
            ptr::null_mut(),
            0,
            None,
            ptr::null_mut(),
            &mut out,
        )
    };
    assert!(status < 0, "io_submit with a NULL op gave {status}");
    nothing_ran(&lp);
    lp.finish();
}

/// Checks that `cancel` refuses a non-negative reason (it would read as a
/// success) and an event with nothing pending, calling nothing.
pub fn cancel_with_a_non_negative_reason_or_nothing_pending_fails(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", 3_600_000_000_000, 0, 0);
    assert!(lp.cancel(t, 0) < 0, "cancel with reason 0 was accepted");
    assert!(lp.cancel(t, 5) < 0, "cancel with reason 5 was accepted");
    lp.dispose(t);
    let fired = lp.timer("fired", 0, 0, 0);
    lp.run_until_tag("fired");
    lp.take_log();
    assert_eq!(lp.cancel(fired, -1), AA_E_INVALID);
    nothing_ran(&lp);
    lp.finish();
}
