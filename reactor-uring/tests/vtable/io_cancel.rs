//! Cancel, close and dispose of requests the kernel owns: exactly one
//! callback (or none), and never a write into the buffer after it.

use std::time::Duration;

use async_abi::*;

use crate::support::*;

const LIMIT: Duration = Duration::from_secs(5);

#[test]
fn cancel_of_an_in_flight_read_calls_back_once_with_the_reason() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf = [0xAAu8; 16];
    let mut r = read_op(b, &mut buf);
    let ev = lp.submit("read", &mut r);
    // The read reaches the kernel and waits there.
    assert_eq!(lp.run_once(0), 0);
    assert_eq!(lp.cancel(ev, AA_E_CANCELLED), AA_OK);
    assert!(lp.log.borrow().is_empty(), "cancel never calls back inline");
    assert_eq!(
        lp.alive(),
        1,
        "the read is still pending until the kernel confirms"
    );
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Io("read", i64::from(AA_E_CANCELLED))]);
    assert_eq!(lp.alive(), 0);
    // A second cancel has nothing to end.
    assert_eq!(lp.cancel(ev, AA_E_CANCELLED), AA_E_INVALID);
    // Data that arrives now is not written into the buffer: the kernel gave
    // it back with the completion.
    send_now(a, b"late");
    for _ in 0..3 {
        lp.run_once(0);
    }
    assert_eq!(buf, [0xAA; 16]);
    assert!(lp.take_log().is_empty(), "exactly one callback");
    let mut rest = [0u8; 8];
    assert_eq!(recv_now(b, &mut rest), Some(4));
    lp.dispose(ev);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn cancel_after_the_data_arrived_reports_the_data() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf = [0u8; 16];
    let mut r = read_op(b, &mut buf);
    let ev = lp.submit("read", &mut r);
    send_now(a, b"early");
    // Submitted and completed by the kernel in this enter, then reaped.
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Io("read", 5)]);
    assert_eq!(lp.cancel(ev, AA_E_CANCELLED), AA_E_INVALID);
    lp.dispose(ev);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn cancel_before_the_kernel_saw_the_read_races_fairly() {
    // The cancel follows the read in the same submission: the kernel either
    // completes the read first (data was there) or cancels it; one callback.
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf = [0u8; 16];
    let mut r = read_op(b, &mut buf);
    let ev = lp.submit("read", &mut r);
    assert_eq!(lp.cancel(ev, -libc::ETIMEDOUT), AA_OK);
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(
        lp.take_log(),
        [Rec::Io("read", -i64::from(libc::ETIMEDOUT))]
    );
    lp.run_once(0);
    assert!(lp.take_log().is_empty());
    lp.dispose(ev);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn dispose_of_an_in_flight_read_never_calls_back_and_destroy_waits_for_the_kernel() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf = [0u8; 16];
    let mut r = read_op(b, &mut buf);
    let ev = lp.submit("read", &mut r);
    lp.run_once(0);
    lp.dispose(ev);
    assert_eq!(lp.alive(), 0, "a disposed event keeps nothing alive");
    // The kernel still owns the read (and the event's memory).
    assert_eq!(lp.destroy_status(), AA_E_BUSY);
    assert_eq!(
        lp.last_error(),
        "destroy: the kernel still holds 1 operations of disposed events"
    );
    // One iteration submits the cancel and reaps the read's completion.
    lp.run_once(-1);
    assert!(lp.log.borrow().is_empty(), "no callback after dispose");
    assert_eq!(lp.destroy_status(), AA_OK);
    close_fd(a);
    close_fd(b);
}

#[test]
fn close_of_an_in_flight_read_completes_it_then_calls_on_closed_later() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf = [0u8; 16];
    let mut r = read_op(b, &mut buf);
    let ev = lp.submit("read", &mut r);
    lp.run_once(0);
    assert_eq!(lp.close("read", ev), AA_OK);
    assert_eq!(lp.close("read", ev), AA_E_CLOSED);
    assert!(lp.log.borrow().is_empty());
    assert!(lp.alive() > 0, "a close in progress keeps the loop alive");
    lp.run_until(LIMIT, |log| log.contains(&Rec::Closed("read")));
    assert_eq!(
        lp.take_log(),
        [
            Rec::Io("read", -i64::from(libc::ECANCELED)),
            Rec::Closed("read")
        ]
    );
    assert_eq!(lp.alive(), 0);
    lp.dispose(ev);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn a_callback_may_cancel_and_dispose_another_request() {
    // Re-entrancy (R1): from inside a timer callback, cancel one read and
    // dispose another; the cancelled one is called back from a later
    // iteration, the disposed one never.
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf1 = [0u8; 8];
    let mut buf2 = [0u8; 8];
    let mut r1 = read_op(b, &mut buf1);
    let mut r2 = read_op(b, &mut buf2);
    let e1 = lp.submit("read1", &mut r1);
    let e2 = lp.submit("read2", &mut r2);
    let vt = lp.vt;
    let hook: Hook = Box::new(move |_| {
        // SAFETY: both events are live; called on the loop thread.
        unsafe {
            assert_eq!((vt.cancel.unwrap())(e1, AA_E_CANCELLED), AA_OK);
            (vt.dispose.unwrap())(e2);
        }
    });
    let t = lp.timer_with("t", 0, 0, 0, Some(hook));
    let n = lp.run_once(-1);
    assert_eq!(lp.take_log(), [Rec::Timer("t", 0)]);
    assert_eq!(n, 1);
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(lp.take_log(), [Rec::Io("read1", i64::from(AA_E_CANCELLED))]);
    lp.dispose(e1);
    lp.dispose(t);
    lp.finish();
    close_fd(a);
    close_fd(b);
}

#[test]
fn a_close_request_disposed_at_once_still_closes_the_descriptor() {
    // Fire and forget, as a host may do: the close is held behind a pending
    // read when the host drops it; the descriptor is closed all the same
    // (a dropped close would leak it and never send the peer its EOF).
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf = [0u8; 8];
    let mut r = read_op(b, &mut buf);
    let rev = lp.submit("read", &mut r);
    lp.run_once(0);
    let mut c = AaIoOp::new(AA_IO_CLOSE, i64::from(b));
    let cev = lp.submit("close", &mut c);
    lp.dispose(cev);
    lp.run_until(LIMIT, |log| !log.is_empty());
    assert_eq!(
        lp.take_log(),
        [Rec::Io("read", -i64::from(libc::ECANCELED))]
    );
    lp.dispose(rev);
    lp.finish();
    // The disposed close still ran: the peer sees end of stream.
    assert!(peer_sees_eof(a), "the disposed close still ran");
    close_fd(a);
}

#[test]
fn a_cancelled_close_request_still_closes_and_reports_its_result() {
    let mut lp = crate::uring_loop!();
    let (a, b) = socketpair();
    let mut buf = [0u8; 8];
    let mut r = read_op(b, &mut buf);
    let rev = lp.submit("read", &mut r);
    lp.run_once(0);
    let mut c = AaIoOp::new(AA_IO_CLOSE, i64::from(b));
    let cev = lp.submit("close", &mut c);
    assert_eq!(lp.cancel(cev, AA_E_CANCELLED), AA_OK);
    lp.run_until(LIMIT, |log| log.len() == 2);
    assert_eq!(
        lp.take_log(),
        [
            Rec::Io("read", -i64::from(libc::ECANCELED)),
            Rec::Io("close", 0)
        ]
    );
    assert!(peer_sees_eof(a), "the cancelled close still ran");
    lp.dispose(rev);
    lp.dispose(cev);
    lp.finish();
    close_fd(a);
}
