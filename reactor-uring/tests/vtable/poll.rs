//! Readiness watches: edge-style and persistent, re-evaluated by
//! `poll_set_interest`, ended by cancel, close and the descriptor's close.

use std::time::Duration;

use async_abi::*;

use crate::support::*;

const LIMIT: Duration = Duration::from_secs(5);

fn set_interest(lp: &Loop, ev: *mut AaEvent, interest: u32) -> AaStatus {
    // SAFETY: `ev` is a live poll of this loop.
    unsafe { (lp.vt.poll_set_interest.unwrap())(ev, interest) }
}

#[test]
fn readable_is_reported_when_data_arrives_and_not_again_until_reevaluated() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let ev = lp.poll("p", b, AA_POLL_READABLE, 0);
    assert_eq!(lp.alive(), 1);
    lp.run_once(0);
    assert!(lp.take_log().is_empty(), "nothing to read yet");
    send_now(a, b"x");
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Poll("p", 0, AA_POLL_READABLE)]);
    // Edge-style: the same readiness is not reported again...
    for _ in 0..3 {
        lp.run_once(0);
    }
    assert!(lp.take_log().is_empty());
    // ...until the interest is set again, which re-evaluates it.
    assert_eq!(set_interest(&lp, ev, AA_POLL_READABLE), AA_OK);
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Poll("p", 0, AA_POLL_READABLE)]);
    // Interest 0 disarms without freeing.
    assert_eq!(set_interest(&lp, ev, 0), AA_OK);
    assert_eq!(lp.alive(), 0);
    send_now(a, b"y");
    lp.run_once(0);
    lp.run_once(0);
    assert!(lp.take_log().is_empty());
    lp.dispose(ev);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn writable_is_reported_at_once_and_hangup_with_it() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let ev = lp.poll("p", a, AA_POLL_WRITABLE, 0);
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Poll("p", 0, AA_POLL_WRITABLE)]);
    close_fd(b);
    lp.run_until(LIMIT, |log| !log.is_empty());
    let log = lp.take_log();
    let Rec::Poll("p", 0, bits) = log[0] else {
        panic!("{log:?}")
    };
    assert_ne!(bits & AA_POLL_HUP, 0, "{log:?}");
    lp.dispose(ev);
    lp.finish();
    close_fd(a);
}

#[test]
fn cancel_ends_an_armed_watch_with_the_reason() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let ev = lp.poll("p", b, AA_POLL_READABLE, 0);
    lp.run_once(0);
    assert_eq!(lp.cancel(ev, AA_E_CANCELLED), AA_OK);
    assert_eq!(lp.alive(), 1, "active until its cancelled callback ran");
    lp.run_once(0);
    assert_eq!(lp.take_log(), [Rec::Poll("p", AA_E_CANCELLED, 0)]);
    assert_eq!(lp.alive(), 0);
    send_now(a, b"x");
    lp.run_once(0);
    lp.run_once(0);
    assert!(lp.take_log().is_empty(), "the watch is off");
    lp.dispose(ev);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn close_of_a_poll_that_owns_its_descriptor_closes_it_before_on_closed() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let ev = lp.poll("p", b, AA_POLL_READABLE, AA_EVF_OWNS_FD);
    lp.run_once(0);
    assert_eq!(lp.close("p", ev), AA_OK);
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Closed("p")]);
    assert!(peer_sees_eof(a), "the owned descriptor was closed");
    lp.dispose(ev);
    lp.finish();
    close_fd(a);
}

#[test]
fn a_close_request_ends_armed_watches_on_its_descriptor() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let ev = lp.poll("p", b, AA_POLL_READABLE, 0);
    lp.run_once(0);
    let mut c = AaIoOp::new(AA_IO_CLOSE, i64::from(b));
    let cev = lp.submit("close", &mut c);
    lp.run_until(LIMIT, |log| log.len() == 2);
    let log = lp.take_log();
    assert!(
        log.contains(&Rec::Poll("p", -libc::ECANCELED, 0)),
        "{log:?}"
    );
    assert!(log.contains(&Rec::Io("close", 0)), "{log:?}");
    assert_eq!(set_interest(&lp, ev, AA_POLL_READABLE), AA_E_CLOSED);
    lp.dispose(ev);
    lp.dispose(cev);
    lp.finish();
    close_fd(a);
}

#[test]
fn poll_new_refuses_a_bad_descriptor_and_unknown_bits() {
    let mut lp = crate::uring_loop!();
    let (a, c) = socketpair();
    // A number no descriptor can have (every fd is below the soft limit):
    // a closed socket's number could be reused meanwhile by a test running
    // on another thread of this process.
    let b = no_such_fd();
    let mut ev = std::ptr::null_mut();
    // SAFETY: valid pointers; the callback is never called (AA-R8).
    let s = unsafe {
        (lp.vt.poll_new.unwrap())(
            lp.r,
            i64::from(b),
            AA_POLL_READABLE,
            0,
            None,
            std::ptr::null_mut(),
            &mut ev,
        )
    };
    assert_eq!(s, AA_E_INVALID, "a NULL callback");
    let _ = &mut lp;
    // SAFETY: as above.
    let s = unsafe {
        extern "C" fn never(_: *mut AaEvent, _: AaStatus, _: u32, _: *mut std::ffi::c_void) {
            panic!("called back after a refusal");
        }
        (lp.vt.poll_new.unwrap())(
            lp.r,
            i64::from(b),
            AA_POLL_READABLE,
            0,
            Some(never),
            std::ptr::null_mut(),
            &mut ev,
        )
    };
    assert_eq!(s, -libc::EBADF);
    assert_eq!(
        lp.last_error(),
        format!("poll_new: fd {b}: bad file descriptor")
    );
    assert!(ev.is_null());
    lp.finish();
    close_fd(a);
    close_fd(c);
}

fn no_such_fd() -> i32 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    i32::try_from(lim.rlim_cur).unwrap_or(i32::MAX)
}
