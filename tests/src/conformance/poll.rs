//! Tier: readiness watches. Readable and writable reports, re-evaluation by
//! `poll_set_interest`, interest 0, cancel, hang-up, sharing a descriptor
//! with requests, and `AA_EVF_OWNS_FD`.

use crate::{ensure, ensure_eq, ensure_ne};
use async_abi::*;

use super::fds;
use super::harness::{Loop, Rec};
use super::plugin::Reactor;

const REASON: AaStatus = -4343;

fn polls_of(log: &[Rec], tag: &str) -> Vec<(AaStatus, u32)> {
    log.iter()
        .filter_map(|r| match r {
            Rec::Poll(t, s, ready) if *t == tag => Some((*s, *ready)),
            _ => None,
        })
        .collect()
}

/// Checks that a pipe's read end is reported readable once data is written,
/// and not before.
pub fn pipe_read_end_reports_readable(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_POLL, "pipe_read_end_reports_readable") {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.track_fd(w);
    lp.poll("r", r, AA_POLL_READABLE, 0);
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-POLL-1", lp.log(), vec![], "readable before any data");
    ensure_eq!("R-POLL-1", fds::raw_write(w, b"x"), 1);
    lp.run_until_tag("r");
    let polls = polls_of(&lp.log(), "r");
    ensure_eq!("R-POLL-1", polls.len(), 1);
    ensure_eq!("R-POLL-1", polls[0].0, 0);
    ensure_ne!(
        "R-POLL-1",
        polls[0].1 & AA_POLL_READABLE,
        0,
        "ready bits {:#x}",
        polls[0].1
    );
    lp.finish();
}

/// Checks that a fresh socket is reported writable.
pub fn socketpair_reports_writable(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_POLL, "socketpair_reports_writable") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    lp.poll("w", a, AA_POLL_WRITABLE, 0);
    lp.run_until_tag("w");
    let polls = polls_of(&lp.log(), "w");
    ensure_eq!("R-POLL-1", polls.len(), 1);
    ensure_eq!("R-POLL-1", polls[0].0, 0);
    ensure_ne!("R-POLL-1", polls[0].1 & AA_POLL_WRITABLE, 0);
    ensure_eq!(
        "R-POLL-1",
        polls[0].1 & AA_POLL_READABLE,
        0,
        "readable reported without interest"
    );
    lp.finish();
}

/// Checks that `poll_set_interest` re-evaluates readiness: a descriptor
/// still readable (not drained) is reported again.
pub fn set_interest_reports_current_readiness_again(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_POLL,
        "set_interest_reports_current_readiness_again",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    ensure_eq!("R-POLL-2", fds::raw_write(b, b"data"), 4);
    let p = lp.poll("p", a, AA_POLL_READABLE, 0);
    lp.run_until_tag("p");
    ensure_eq!("R-POLL-2", lp.set_interest(p, AA_POLL_READABLE), AA_OK);
    lp.run_until("a second report", |log| log.len() == 2);
    let polls = polls_of(&lp.log(), "p");
    ensure!(
        "R-POLL-2",
        polls
            .iter()
            .all(|(s, ready)| *s == 0 && ready & AA_POLL_READABLE != 0)
    );
    lp.finish();
}

/// Checks that interest 0 disarms a poll (no report, not alive) and that a
/// new interest re-arms it.
pub fn interest_zero_disarms_the_poll(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_POLL, "interest_zero_disarms_the_poll") {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.track_fd(w);
    let p = lp.poll("p", r, AA_POLL_READABLE, 0);
    ensure_eq!("R-POLL-2", lp.alive(), 1);
    ensure_eq!("R-POLL-2", lp.set_interest(p, 0), AA_OK);
    ensure_eq!("R-POLL-2", lp.alive(), 0);
    ensure_eq!("R-POLL-2", fds::raw_write(w, b"x"), 1);
    lp.run_once(0);
    lp.run_once(10_000_000);
    ensure_eq!("R-POLL-2", lp.log(), vec![], "a disarmed poll reported");
    ensure_eq!("R-POLL-2", lp.set_interest(p, AA_POLL_READABLE), AA_OK);
    ensure_eq!("R-POLL-2", lp.alive(), 1);
    lp.run_until_tag("p");
    lp.finish();
}

/// Checks that cancelling an armed poll calls it once with the reason, from
/// a later `run_once`, and never again for readiness.
pub fn cancel_of_a_poll_delivers_the_reason_once(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_POLL,
        "cancel_of_a_poll_delivers_the_reason_once",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.track_fd(w);
    let p = lp.poll("p", r, AA_POLL_READABLE, 0);
    ensure_eq!("R-EV-1", lp.cancel(p, REASON), AA_OK);
    ensure_eq!("R-EV-1", lp.log(), vec![]);
    ensure_eq!("R-EV-1", fds::raw_write(w, b"x"), 1);
    lp.run_until_tag("p");
    lp.run_once(10_000_000);
    ensure_eq!("R-EV-1", lp.log(), vec![Rec::Poll("p", REASON, 0)]);
    lp.finish();
}

/// Checks that the peer's hang-up is reported (as `AA_POLL_HUP` or as
/// readable, where a read returns end of stream).
pub fn hang_up_is_reported(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_POLL, "hang_up_is_reported") {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.poll("p", r, AA_POLL_READABLE, 0);
    fds::raw_close(w);
    lp.run_until_tag("p");
    let polls = polls_of(&lp.log(), "p");
    ensure_eq!("R-POLL-5", polls[0].0, 0);
    ensure_ne!(
        "R-POLL-5",
        polls[0].1 & (AA_POLL_HUP | AA_POLL_READABLE),
        0,
        "ready {:#x}",
        polls[0].1
    );
    lp.finish();
}

/// Checks that a poll and a pending read on the same descriptor both see the
/// data: one registration serves both.
pub fn poll_and_request_on_one_fd_both_see_data(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_POLL | AA_CAP_IO,
        "poll_and_request_on_one_fd_both_see_data",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    lp.poll("p", a, AA_POLL_READABLE, 0);
    let mut buf = [0u8; 8];
    lp.read("read", a, &mut buf, 0).pending();
    lp.run_once(0);
    ensure_eq!("R-POLL-6", fds::raw_write(b, b"hi"), 2);
    lp.run_until("the read and the poll", |log| {
        log.contains(&Rec::Io("read", 2)) && log.iter().any(|r| r.tag() == "p")
    });
    ensure_eq!("R-POLL-6", &buf[..2], b"hi");
    lp.finish();
}

/// Checks that closing a poll created with `AA_EVF_OWNS_FD` closes its
/// descriptor: the pipe's write end then sees no reader (`EPIPE`).
pub fn close_of_a_poll_owning_its_fd_closes_it(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_POLL,
        "close_of_a_poll_owning_its_fd_closes_it",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    lp.track_fd(w);
    let p = lp.poll("p", r, AA_POLL_READABLE, AA_EVF_OWNS_FD);
    ensure_eq!("R-POLL-7", lp.close(p), AA_OK);
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("p")));
    ensure_eq!("R-POLL-7", lp.log(), vec![Rec::Closed("p")]);
    ensure_eq!(
        "R-POLL-7",
        fds::raw_write(w, b"x"),
        -(libc::EPIPE as isize),
        "the read end is still open"
    );
    lp.finish();
}

/// Checks that closing an armed poll (with readiness pending) gives exactly
/// one `on_closed`, from a later `run_once`, and no poll callback.
pub fn close_of_an_armed_poll_gives_only_on_closed(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_POLL,
        "close_of_an_armed_poll_gives_only_on_closed",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.track_fd(w);
    let p = lp.poll("p", r, AA_POLL_READABLE, 0);
    ensure_eq!("R-EV-2", fds::raw_write(w, b"x"), 1);
    ensure_eq!("R-EV-2", lp.close(p), AA_OK);
    ensure_eq!("R-EV-2", lp.log(), vec![], "a callback inside close");
    lp.run_until_tag("p");
    lp.run_once(10_000_000);
    ensure_eq!("R-EV-2", lp.log(), vec![Rec::Closed("p")]);
    lp.finish();
}

/// Checks that a cancelled poll is re-armed by `poll_set_interest`: after
/// its reason was delivered, a new interest reports the current readiness.
pub fn cancelled_poll_is_rearmed_by_set_interest(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_POLL,
        "cancelled_poll_is_rearmed_by_set_interest",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.track_fd(w);
    let p = lp.poll("p", r, AA_POLL_READABLE, 0);
    ensure_eq!("R-POLL-4", lp.cancel(p, REASON), AA_OK);
    lp.run_until_tag("p");
    ensure_eq!("R-POLL-4", lp.take_log(), vec![Rec::Poll("p", REASON, 0)]);
    ensure_eq!("R-POLL-4", fds::raw_write(w, b"x"), 1);
    ensure_eq!("R-POLL-4", lp.set_interest(p, AA_POLL_READABLE), AA_OK);
    lp.run_until_tag("p");
    let polls = polls_of(&lp.log(), "p");
    ensure_eq!("R-POLL-4", polls.len(), 1, "{polls:?}");
    ensure_eq!("R-POLL-4", polls[0].0, 0);
    ensure_ne!(
        "R-POLL-4",
        polls[0].1 & AA_POLL_READABLE,
        0,
        "ready {:#x}",
        polls[0].1
    );
    lp.finish();
}

/// Checks that readiness reported once is not reported again while it was
/// not consumed (no read until `EAGAIN`) and the interest did not change:
/// several iterations with the data still unread run no callback.
pub fn readiness_is_not_reported_again_until_consumed(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_POLL,
        "readiness_is_not_reported_again_until_consumed",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.track_fd(w);
    lp.poll("p", r, AA_POLL_READABLE, 0);
    ensure_eq!("R-POLL-3", fds::raw_write(w, b"x"), 1);
    lp.run_until_tag("p");
    for _ in 0..5 {
        lp.run_once(1_000_000);
    }
    ensure_eq!(
        "R-POLL-3",
        polls_of(&lp.log(), "p").len(),
        1,
        "{:?}",
        lp.log()
    );
    lp.finish();
}
