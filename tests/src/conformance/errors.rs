//! Tier: errors. AA-R8: a call that returns a negative status creates
//! nothing and never calls its callback; NULL required arguments, bad
//! descriptors, short structs, unknown opcodes and flags are refused.

use std::ptr;

use async_abi::*;

use super::fds;
use super::harness::{Alive, Loop, Rec, Submit};
use super::plugin::Reactor;
use super::rules::{self, status, submitted, violated};
use crate::{ensure, ensure_eq};

unsafe extern "C" fn never_timer(_: *mut AaEvent, _: AaStatus, _: *mut std::ffi::c_void) {
    std::process::abort();
}

/// Runs two iterations and checks that no callback ran and nothing is
/// alive after the failed call `what` (AA-R8).
#[track_caller]
fn nothing_ran(lp: &Loop, what: &str) {
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-ERR-1",
        lp.log(),
        vec![],
        "{what}, then run_once(0) twice: callbacks (log)"
    );
    ensure_eq!(
        "R-ERR-1",
        lp.alive(),
        Alive(0),
        "{what}, then run_once(0) twice: alive()"
    );
}

/// Checks that `timer_new` without a callback fails.
pub fn timer_new_with_null_callback_fails_without_callback(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let f = lp.vt().timer_new.expect("required slot");
    let mut out = ptr::null_mut();
    // SAFETY: live reactor; a NULL callback is what is being tested.
    let status = unsafe { f(lp.raw(), 0, 0, 0, None, ptr::null_mut(), &mut out) };
    let what = "timer_new(timeout 0, repeat 0, flags 0, callback NULL)";
    ensure!("R-ERR-1", status < 0;
        did: what, wants: "a negative status", got: rules::status(status));
    nothing_ran(&lp, what);
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
    let what = "timer_new(timeout 0, repeat 0, flags 0, a callback, out NULL)";
    ensure!("R-ERR-1", status < 0;
        did: what, wants: "a negative status", got: rules::status(status));
    nothing_ran(&lp, what);
    lp.finish();
}

/// Checks that `poll_new` on a descriptor that is not open fails.
pub fn poll_new_on_a_bad_fd_fails(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_POLL, "poll_new_on_a_bad_fd_fails") {
        return;
    }
    let lp = Loop::new(reactor);
    let status = lp.try_poll("p", fds::BAD_FD, AA_POLL_READABLE, 0).err();
    let what = format!(
        "poll_new(fd {} (not open), AA_POLL_READABLE, flags 0)",
        fds::BAD_FD
    );
    ensure!("R-ERR-1", status.is_some_and(|s| s < 0);
        did: what,
        wants: "a negative status",
        got: status.map_or("AA_OK (a poll was created)".to_owned(), rules::status));
    nothing_ran(&lp, &what);
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
        let did = |op: &str| {
            format!(
                "io_submit({op} on fd {} (not open), flags {})",
                fds::BAD_FD,
                if flags == 0 { "0" } else { "AA_IO_TRY_INLINE" }
            )
        };
        let read = lp.read("r", fds::BAD_FD, &mut buf, flags);
        expect_bad_fd(&lp, "r", read, &did("AA_IO_READ of 4 bytes"));
        let write = lp.write("w", fds::BAD_FD, b"x", flags);
        expect_bad_fd(&lp, "w", write, &did("AA_IO_WRITE of 1 byte"));
        let mut op = AaIoOp::new(AA_IO_CLOSE, i64::from(fds::BAD_FD));
        let close = lp.submit("c", &mut op, flags);
        expect_bad_fd(&lp, "c", close, &did("AA_IO_CLOSE"));
    }
    ensure_eq!(
        "R-ERR-1",
        buf,
        [0u8; 4],
        "a read of a descriptor that is not open failed: its buffer"
    );
    lp.finish();
}

/// A bad-descriptor request either failed at submission (and nothing may
/// ever call back for it) or completes once with `-EBADF`.
#[track_caller]
fn expect_bad_fd(lp: &Loop, tag: &'static str, submitted: Submit, did: &str) {
    let wants = "a negative status, or AA_OK and one completion with -EBADF";
    match submitted {
        Submit::Failed(_) => nothing_ran(lp, did),
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
            ensure!("R-IO-12", results == vec![-i64::from(libc::EBADF)];
                did: format!("{did}, pending, then run_once until it completed"),
                wants: wants,
                got: format!("completions with {results:?}"));
            lp.dispose(ev);
        }
        Submit::Done(res) => violated(
            "R-IO-12",
            &did,
            &wants,
            &format!("AA_DONE with result {res}"),
        ),
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
    let got = lp.submit("w", &mut op, AA_IO_TRY_INLINE);
    let what = "io_submit(AA_IO_WRITE of 1 byte, op->struct_size 8, flags AA_IO_TRY_INLINE)";
    ensure!("R-IO-12", got == Submit::Failed(AA_E_INVALID);
        did: what, wants: "AA_E_INVALID (a struct_size below the 1.0 size)", got: submitted(&got));
    nothing_ran(&lp, what);
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
    let tightened = rules::tightened_for("R-IO-12", rules::implements(reactor));
    let mut op = AaIoOp::new(0x4000, i64::from(a));
    let got = lp.submit("op", &mut op, 0);
    let what = "io_submit(opcode 0x4000 (16384, no minor defines it) on a socket, flags 0)";
    if tightened {
        ensure!("R-IO-12", got == Submit::Failed(AA_E_UNSUPPORTED);
            did: what, wants: "AA_E_UNSUPPORTED (an opcode the reactor does not know)",
            got: submitted(&got));
        let msg = lp.last_error();
        ensure!("R-IO-12", msg.contains("16384") && !msg.contains('\n');
            did: what,
            wants: "a last_error_message of one line containing the opcode in decimal, 16384",
            got: format!("{}, last_error_message {msg:?}", submitted(&got)));
    } else {
        ensure!("R-IO-12",
            got == Submit::Failed(AA_E_UNSUPPORTED) || got == Submit::Failed(AA_E_INVALID);
            did: what, wants: "AA_E_UNSUPPORTED or AA_E_INVALID (ABI 1.0)", got: submitted(&got));
    }
    let got = lp.write("w", a, b"x", 1 << 30);
    let what = "io_submit(AA_IO_WRITE of 1 byte on a socket, flags 1 << 30 (0x40000000))";
    ensure!("R-IO-12", got == Submit::Failed(AA_E_INVALID);
        did: what, wants: "AA_E_INVALID (io_submit flag bits no minor defines)",
        got: submitted(&got));
    if tightened {
        let mut op = AaIoOp::new(AA_IO_WRITE, i64::from(a));
        op.buf = b"x".as_ptr().cast_mut();
        op.len = 1;
        op.op_flags = 1 << 30;
        let got = lp.submit("f", &mut op, 0);
        let what = "io_submit(AA_IO_WRITE of 1 byte on a socket, op_flags 1 << 30 (0x40000000), \
                    flags 0)";
        ensure!("R-IO-12", got == Submit::Failed(AA_E_INVALID);
            did: what, wants: "AA_E_INVALID (op_flags bits no minor defines)",
            got: submitted(&got));
    }
    nothing_ran(&lp, "the refused requests");
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
    let got = lp.submit("r", &mut op, 0);
    let what = "io_submit(AA_IO_READ on a socket, buf NULL, len 16, flags 0)";
    ensure!("R-IO-12", got == Submit::Failed(AA_E_INVALID);
        did: what, wants: "AA_E_INVALID (a NULL buffer with a length)", got: submitted(&got));
    nothing_ran(&lp, what);
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
    let what = "io_submit(op NULL, flags 0, callback NULL)";
    ensure!("R-IO-12", status < 0;
        did: what, wants: "a negative status (a NULL op)", got: rules::status(status));
    nothing_ran(&lp, what);
    lp.finish();
}

/// Checks that `cancel` refuses a non-negative reason (it would read as a
/// success) and an event with nothing pending, calling nothing.
pub fn cancel_with_a_non_negative_reason_or_nothing_pending_fails(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", 3_600_000_000_000, 0, 0);
    for reason in [0, 5] {
        let got = lp.cancel(t, reason);
        ensure!("R-ERR-3", got < 0;
            did: format!("cancel(an armed one-hour timer, reason {reason})"),
            wants: "a negative status (a reason that is not negative)",
            got: status(got));
    }
    lp.dispose(t);
    let fired = lp.timer("fired", 0, 0, 0);
    lp.run_until_tag("fired");
    lp.take_log();
    let got = lp.cancel(fired, -1);
    let what = "cancel(a one-shot timer that fired, reason -1)";
    ensure!("R-ERR-3", got == AA_E_INVALID;
        did: what, wants: "AA_E_INVALID (nothing pending)", got: status(got));
    nothing_ran(&lp, what);
    lp.finish();
}
