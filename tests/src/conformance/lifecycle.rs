//! Tier: lifecycle. The descriptor and interface negotiation, `create` and
//! its options, `destroy` while events are alive (`AA_E_BUSY`), and
//! `last_error_message`.

use std::ffi::CStr;

use async_abi::*;

use super::fds;
use super::harness::{create_raw, Loop, Rec};
use super::plugin::{capture_log, Reactor};

/// Checks that the descriptor names a reactor of this ABI major with a
/// name and version, and that `aa.reactor.v1` has a sized header.
pub fn descriptor_names_a_reactor_of_this_abi(reactor: &Reactor) {
    let desc = reactor.desc();
    assert_eq!(desc.abi_major, AA_ABI_MAJOR);
    assert_eq!(desc.role, AA_ROLE_REACTOR);
    assert!(!desc.name.is_null() && !desc.version.is_null());
    // SAFETY: AA-R7: static NUL-terminated strings.
    let version = unsafe { CStr::from_ptr(desc.version) };
    assert!(!version.to_bytes().is_empty(), "empty plugin version");
    assert!(!reactor.name().is_empty());
    let hdr = reactor.vtable().hdr;
    assert!(hdr.struct_size as usize >= std::mem::offset_of!(AaReactorVTable, last_error_message));
}

/// Checks that `get_interface` answers NULL for an interface it does not
/// have.
pub fn unknown_interface_id_gives_null(reactor: &Reactor) {
    let get_interface = reactor.desc().get_interface.expect("checked at load");
    // SAFETY: `ctx` came from `init`; the id is borrowed for the call.
    let hdr = unsafe { get_interface(reactor.ctx(), AaStr::from_str("aa.no-such-interface.v9")) };
    assert!(hdr.is_null());
}

/// Checks that a loop with nothing in it is destroyed with `AA_OK`.
pub fn create_then_destroy_returns_ok(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    assert_eq!(lp.destroy(), AA_OK);
}

/// Checks that `destroy` refuses with `AA_E_BUSY` while an event is not
/// disposed, and succeeds once it is.
pub fn destroy_with_a_live_event_returns_busy(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let t = lp.timer("t", 10_000_000_000, 0, 0);
    assert_eq!(lp.destroy(), AA_E_BUSY);
    assert!(!lp.last_error().is_empty(), "AA_E_BUSY without a message");
    lp.dispose(t);
    lp.finish();
}

/// Checks that `run_once(0)` on an empty loop runs nothing and returns 0.
pub fn run_once_on_an_empty_loop_returns_zero(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    assert_eq!(lp.run_once(0), 0);
    assert_eq!(lp.log(), vec![]);
    lp.finish();
}

/// Checks that keys with another plugin's prefix are ignored, the other
/// built-in reactor's included, so one list of options serves
/// `ASYNC_REACTOR=auto` (docs/abi/reactor-guide.md, "Options").
pub fn options_of_other_plugins_are_ignored(reactor: &Reactor) {
    let other = if reactor.option_prefix() == "mio." {
        "uring.x"
    } else {
        "mio.x"
    };
    let lp = Loop::with_options(reactor, &[("conformance-other.key", "1"), (other, "1")])
        .unwrap_or_else(|(s, m)| panic!("create refused a foreign option: {s}: {m}"));
    lp.finish();
}

/// Creates a loop with `key = "1"`, which must fail with `AA_E_INVALID`
/// and one non-empty line in `err_buf` naming the key, and nothing logged
/// at warn or error: the host prints `err_buf` once, so a log record of
/// the same failure would print it twice. Returns the line.
#[track_caller]
fn refused_in_one_line(reactor: &Reactor, key: &str) -> String {
    let (created, logged) = capture_log(|| Loop::with_options(reactor, &[(key, "1")]));
    let msg = match created {
        Ok(lp) => {
            lp.finish();
            panic!("create accepted the option {key:?}");
        }
        Err((status, msg)) => {
            assert_eq!(status, AA_E_INVALID, "status of the refusal of {key:?}");
            msg
        }
    };
    assert!(!msg.is_empty(), "refused {key:?} with an empty err_buf");
    assert!(msg.contains(key), "message {msg:?} does not name {key:?}");
    assert!(!msg.contains('\n'), "message {msg:?} is not one line");
    let loud: Vec<_> = logged.iter().filter(|r| r.level <= AA_LOG_WARN).collect();
    assert!(
        loud.is_empty(),
        "a failing create wrote err_buf and also logged {loud:?}: the host would print the error twice"
    );
    msg
}

/// Checks that an unknown key in the reactor's own prefix fails `create`
/// with `AA_E_INVALID`, one line in `err_buf` naming it, and no warning
/// or error in the log.
pub fn unknown_option_in_own_prefix_is_refused_with_its_name(reactor: &Reactor) {
    let key = format!("{}conformance-no-such-option", reactor.option_prefix());
    refused_in_one_line(reactor, &key);
}

/// Checks that a key without a prefix fails `create` with `AA_E_INVALID`,
/// one line in `err_buf` naming it and saying how options are written (it
/// names the reactor's own prefix), and no warning or error in the log: no
/// reactor reads such a key, so ignoring it would hide the mistake.
pub fn unprefixed_option_is_refused_with_how_to_write_it(reactor: &Reactor) {
    let key = "conformance_no_prefix";
    let msg = refused_in_one_line(reactor, key);
    let prefix = reactor.option_prefix();
    assert!(
        msg.contains(&prefix),
        "message {msg:?} does not say options are written {prefix}<option>"
    );
}

/// Checks that a config whose `struct_size` is too small is refused.
pub fn config_struct_size_too_small_is_invalid(reactor: &Reactor) {
    let cfg = AaReactorConfig {
        struct_size: 4,
        flags: 0,
        options: std::ptr::null(),
        n_options: 0,
        err_buf: std::ptr::null_mut(),
        err_cap: 0,
    };
    assert_eq!(create_raw(reactor, &cfg).err(), Some(AA_E_INVALID));
}

/// Checks that a failing call leaves a one-line message, that the full
/// length is returned and that a short buffer gets a truncated,
/// NUL-terminated copy.
pub fn last_error_message_describes_the_last_failure(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    // Flag bits no ABI version defines: AA_E_INVALID from every reactor.
    let mut op = AaIoOp::new(AA_IO_WRITE, 0);
    op.op_flags = 1 << 31;
    assert!(matches!(
        lp.submit("bad", &mut op, 0),
        super::Submit::Failed(AA_E_INVALID)
    ));
    let msg = lp.last_error();
    assert!(!msg.is_empty(), "no message after a failure");
    assert!(!msg.contains('\n'), "message {msg:?} is not one line");
    let f = lp.vt().last_error_message.expect("checked at load");
    let mut small = [0xffu8; 4];
    // SAFETY: live reactor; `small` is a local of 4 bytes.
    let n = unsafe { f(lp.raw(), small.as_mut_ptr(), small.len()) };
    assert_eq!(n, msg.len());
    assert_eq!(&small[..3], &msg.as_bytes()[..3]);
    assert_eq!(small[3], 0);
    lp.finish();
}

/// Checks that the cached clock moves forward across iterations.
pub fn now_ns_advances_with_the_loop(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    lp.run_once(0);
    let before = lp.now_ns();
    lp.timer("t", 2_000_000, 0, 0);
    lp.run_until_tag("t");
    assert_eq!(lp.log(), vec![Rec::Timer("t", 0)]);
    assert!(
        lp.now_ns() >= before + 2_000_000,
        "clock did not advance by the timer's 2 ms"
    );
    lp.finish();
}

/// Checks that every failing call leaves its own one-line
/// `last_error_message`: `destroy` with a live event (`AA_E_BUSY`), an
/// unknown opcode, a refused signal, a cancel with a non-negative reason,
/// a bad `run_once` timeout, a poll of a closed descriptor and a timer
/// without a callback. Each message must differ from the one the failure
/// before it left, so a stale message does not pass.
pub fn every_failure_sets_last_error_message(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let mut previous = String::new();
    let mut check = |what: &str, status: AaStatus, lp: &Loop| {
        assert!(status < 0, "{what}: expected a failure, got {status}");
        let msg = lp.last_error();
        assert!(!msg.is_empty(), "{what} failed ({status}) with no message");
        assert!(
            !msg.contains('\n'),
            "{what}: message {msg:?} is not one line"
        );
        assert_ne!(
            msg, previous,
            "{what}: the message is the previous failure's"
        );
        previous = msg;
    };
    let t = lp.timer("t", 10_000_000_000, 0, 0);
    check("destroy with a live event", lp.destroy(), &lp);
    let vt = *lp.vt();
    if reactor.has_caps(AA_CAP_IO) {
        let mut op = AaIoOp::new(0xff, 0);
        let status = match lp.submit("op", &mut op, 0) {
            super::Submit::Failed(s) => s,
            other => panic!("unknown opcode 0xff: {other:?}"),
        };
        check("io_submit of opcode 0xff", status, &lp);
    }
    if reactor.has_caps(AA_CAP_SIGNAL) {
        let status = lp
            .try_signal("kill", libc::SIGKILL, 0)
            .map_or_else(|s| s, |_| 0);
        check("signal_new(SIGKILL)", status, &lp);
    }
    check("cancel with reason 1", lp.cancel(t, 1), &lp);
    let run_once = vt.run_once.expect("required slot");
    // SAFETY: a live reactor on its loop thread.
    check("run_once(-2)", unsafe { run_once(lp.raw(), -2) }, &lp);
    if reactor.has_caps(AA_CAP_POLL) {
        let (r, w) = fds::pipe();
        fds::raw_close(r);
        fds::raw_close(w);
        let poll_new = vt.poll_new.expect("required slot");
        let mut out = std::ptr::null_mut();
        // SAFETY: a live reactor; `r` is closed, which the call must refuse.
        let status = unsafe {
            poll_new(
                lp.raw(),
                i64::from(r),
                AA_POLL_READABLE,
                0,
                None,
                std::ptr::null_mut(),
                &mut out,
            )
        };
        check("poll_new on a closed descriptor", status, &lp);
    }
    let timer_new = vt.timer_new.expect("required slot");
    let mut out = std::ptr::null_mut();
    // SAFETY: a live reactor; a NULL callback, which the call must refuse.
    let status = unsafe { timer_new(lp.raw(), 1, 0, 0, None, std::ptr::null_mut(), &mut out) };
    check("timer_new without a callback", status, &lp);
    lp.dispose(t);
    lp.finish();
}
