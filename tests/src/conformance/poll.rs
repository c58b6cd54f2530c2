//! Tier: readiness watches. Readable and writable reports, re-evaluation by
//! `poll_set_interest`, interest 0, cancel, hang-up, sharing a descriptor
//! with requests, and `AA_EVF_OWNS_FD`.

use crate::{ensure, ensure_eq};
use async_abi::*;

use super::fds;
use super::harness::{self, Alive, Loop, Rec};
use super::plugin::Reactor;

const REASON: AaStatus = -4343;

/// Whether `log` holds exactly one callback of poll `tag`, with `AA_OK`
/// and the bit `want` among its ready bits.
fn one_report(log: &[Rec], tag: &str, want: u32) -> bool {
    let polls = polls_of(log, tag);
    polls.len() == 1 && polls[0].0 == AA_OK && polls[0].1 & want != 0
}

/// What [`one_report`] checks, in words.
fn one_wanted(want: u32) -> String {
    format!("one callback with AA_OK and {}", harness::poll_bits(want))
}

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
    let did = "poll_new(a pipe's read end, AA_POLL_READABLE, flags 0), run_once(0) twice";
    ensure_eq!(
        "R-POLL-1",
        lp.log(),
        vec![],
        "{did} with no data in the pipe: the callbacks"
    );
    fds::put(w, b"x");
    lp.run_until_tag("r");
    let log = lp.log();
    ensure!("R-POLL-1", one_report(&log, "r", AA_POLL_READABLE);
        did: format!("{did}, 1 byte written to the pipe, run_once until a callback"),
        wants: one_wanted(AA_POLL_READABLE),
        got: format!("the callbacks {log:?}"));
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
    let did = "poll_new(a fresh socket of a pair, AA_POLL_WRITABLE, flags 0), run_once until a \
               callback";
    let log = lp.log();
    ensure!("R-POLL-1", one_report(&log, "w", AA_POLL_WRITABLE);
        did: did,
        wants: one_wanted(AA_POLL_WRITABLE),
        got: format!("the callbacks {log:?}"));
    let polls = polls_of(&lp.log(), "w");
    ensure_eq!(
        "R-POLL-1",
        harness::poll_bits(polls[0].1 & AA_POLL_READABLE),
        "0",
        "{did} (no data, no interest in reading): AA_POLL_READABLE in the ready bits"
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
    fds::put(b, b"data");
    let p = lp.poll("p", a, AA_POLL_READABLE, 0);
    lp.run_until_tag("p");
    let did = "4 bytes written to a socket, poll_new(it, AA_POLL_READABLE, flags 0), run_once \
               until a callback, poll_set_interest(AA_POLL_READABLE) with the data unread";
    ensure_eq!(
        "R-POLL-2",
        lp.set_interest(p, AA_POLL_READABLE),
        AA_OK,
        "{did}: its status"
    );
    lp.run_until("a second report", |log| log.len() == 2);
    let log = lp.log();
    ensure!("R-POLL-2",
        polls_of(&log, "p").iter().all(|(s, ready)| *s == 0 && ready & AA_POLL_READABLE != 0);
        did: format!("{did}, run_once until a second callback"),
        wants: "two callbacks with AA_OK and AA_POLL_READABLE",
        got: format!("the callbacks {log:?}"));
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
    let did = "poll_new(a pipe's read end, AA_POLL_READABLE, flags 0)";
    ensure_eq!("R-POLL-2", lp.alive(), Alive(1), "{did}: alive()");
    ensure_eq!(
        "R-POLL-2",
        lp.set_interest(p, 0),
        AA_OK,
        "{did}, poll_set_interest(0): its status"
    );
    let did = format!("{did}, poll_set_interest(0)");
    ensure_eq!("R-POLL-2", lp.alive(), Alive(0), "{did}: alive()");
    fds::put(w, b"x");
    lp.run_once(0);
    lp.run_once(10_000_000);
    ensure_eq!(
        "R-POLL-2",
        lp.log(),
        vec![],
        "{did}, 1 byte written, run_once(0), run_once(10 ms): the callbacks"
    );
    ensure_eq!(
        "R-POLL-2",
        lp.set_interest(p, AA_POLL_READABLE),
        AA_OK,
        "{did}, 1 byte written, poll_set_interest(AA_POLL_READABLE): its status"
    );
    ensure_eq!(
        "R-POLL-2",
        lp.alive(),
        Alive(1),
        "{did}, 1 byte written, poll_set_interest(AA_POLL_READABLE): alive()"
    );
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
    let did = "poll_new(a pipe's read end, AA_POLL_READABLE, flags 0), cancel(the poll, reason \
               -4343)";
    ensure_eq!("R-EV-1", lp.cancel(p, REASON), AA_OK, "{did}: its status");
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![],
        "{did}: the callbacks before any run_once (cancel calls nothing itself)"
    );
    fds::put(w, b"x");
    lp.run_until_tag("p");
    lp.run_once(10_000_000);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![Rec::Poll("p", REASON, 0)],
        "{did}, 1 byte written, run_once until a callback, run_once(10 ms): the callbacks"
    );
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
    let did = "poll_new(a pipe's read end, AA_POLL_READABLE, flags 0), the write end closed, \
               run_once until a callback";
    let log = lp.log();
    ensure!("R-POLL-5",
        polls_of(&log, "p").first().is_some_and(|(s, ready)| {
            *s == AA_OK && ready & (AA_POLL_HUP | AA_POLL_READABLE) != 0
        });
        did: did,
        wants: "a callback with AA_OK and AA_POLL_HUP or AA_POLL_READABLE",
        got: format!("the callbacks {log:?}"));
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
    fds::put(b, b"hi");
    lp.run_until("the read and the poll", |log| {
        log.contains(&Rec::Io("read", 2)) && log.iter().any(|r| r.tag() == "p")
    });
    ensure_eq!(
        "R-POLL-6",
        &buf[..2],
        b"hi",
        "poll_new(a socket, AA_POLL_READABLE) and io_submit(AA_IO_READ of 8 bytes on it, flags \
         0), run_once(0), \"hi\" written by the peer, run_once until both called back: the \
         data read"
    );
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
    let did = "poll_new(a pipe's read end, AA_POLL_READABLE, flags AA_EVF_OWNS_FD), close(the \
               poll, on_closed)";
    ensure_eq!("R-POLL-7", lp.close(p), AA_OK, "{did}: its status");
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("p")));
    ensure_eq!(
        "R-EV-2",
        lp.log(),
        vec![Rec::Closed("p")],
        "{did}, run_once until on_closed: the callbacks"
    );
    let wrote = fds::raw_write(w, b"x");
    ensure!("R-POLL-7", wrote == -(libc::EPIPE as isize);
        did: format!("{did}, run_once until on_closed, then write(2) to the pipe's write end"),
        wants: "-EPIPE (the read end closed by the reactor)",
        got: format!("{wrote} (the read end is still open)"));
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
    fds::put(w, b"x");
    let did = "poll_new(a pipe's read end, AA_POLL_READABLE, flags 0), 1 byte written (the \
               poll is ready), close(the poll, on_closed)";
    ensure_eq!("R-EV-2", lp.close(p), AA_OK, "{did}: its status");
    ensure_eq!(
        "R-EV-2",
        lp.log(),
        vec![],
        "{did}: the callbacks before any run_once (close calls nothing itself)"
    );
    lp.run_until_tag("p");
    lp.run_once(10_000_000);
    ensure_eq!(
        "R-EV-2",
        lp.log(),
        vec![Rec::Closed("p")],
        "{did}, run_once until a callback, run_once(10 ms): the callbacks"
    );
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
    let did = "poll_new(a pipe's read end, AA_POLL_READABLE, flags 0), cancel(the poll, reason \
               -4343)";
    ensure_eq!("R-POLL-4", lp.cancel(p, REASON), AA_OK, "{did}: its status");
    lp.run_until_tag("p");
    ensure_eq!(
        "R-POLL-4",
        lp.take_log(),
        vec![Rec::Poll("p", REASON, 0)],
        "{did}, run_once until a callback: the callbacks"
    );
    fds::put(w, b"x");
    let did =
        format!("{did}, the reason delivered, 1 byte written, poll_set_interest(AA_POLL_READABLE)");
    ensure_eq!(
        "R-POLL-4",
        lp.set_interest(p, AA_POLL_READABLE),
        AA_OK,
        "{did}: its status"
    );
    lp.run_until_tag("p");
    let log = lp.log();
    ensure!("R-POLL-4", one_report(&log, "p", AA_POLL_READABLE);
        did: format!("{did}, run_once until a callback"),
        wants: one_wanted(AA_POLL_READABLE),
        got: format!("the callbacks {log:?}"));
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
    fds::put(w, b"x");
    lp.run_until_tag("p");
    for _ in 0..5 {
        lp.run_once(1_000_000);
    }
    let log = lp.log();
    ensure!("R-POLL-3", polls_of(&log, "p").len() == 1;
        did: "poll_new(a pipe's read end, AA_POLL_READABLE, flags 0), 1 byte written and never \
              read, run_once until a callback, run_once(1 ms) five times",
        wants: "one callback (the readiness not reported again until consumed)",
        got: format!("the callbacks {log:?}"));
    lp.finish();
}

/// Checks that readiness back before the loop looked again, after the host
/// read the descriptor to `EAGAIN`, is reported: by an edge-triggered
/// reactor by itself (a new edge), by one that sets `AA_CAP_POLL_LEVEL`
/// once the host re-armed the poll with `poll_set_interest`, as a host of
/// ABI 1.2 does.
pub fn readiness_back_after_eagain_is_reported(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_POLL,
        "readiness_back_after_eagain_is_reported",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let level = lp.instance_caps() & AA_CAP_POLL_LEVEL != 0;
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.track_fd(w);
    let p = lp.poll("p", r, AA_POLL_READABLE, 0);
    fds::put(w, b"x");
    lp.run_until_tag("p");
    lp.take_log();
    if fds::drain(r) != 1 {
        crate::setup_failed!("the pipe did not hold the 1 byte the case wrote");
    }
    fds::put(w, b"y");
    let mut did = String::from(
        "poll_new(a pipe's read end, AA_POLL_READABLE, flags 0), 1 byte written, run_once \
         until a callback, the pipe read to EAGAIN, 1 byte written",
    );
    if level {
        did.push_str(", poll_set_interest(AA_POLL_READABLE) (the reactor has AA_CAP_POLL_LEVEL)");
        ensure_eq!(
            "R-POLL-8",
            lp.set_interest(p, AA_POLL_READABLE),
            AA_OK,
            "{did}: its status"
        );
    }
    // A reactor that held the report back would answer nothing within
    // these 2 s (the recheck of a level adapter under an older host is 100
    // ms: it passes too, later).
    let start = std::time::Instant::now();
    while polls_of(&lp.log(), "p").is_empty() && start.elapsed() < std::time::Duration::from_secs(2)
    {
        lp.run_once(100_000_000);
    }
    let log = lp.log();
    ensure!("R-POLL-8", one_report(&log, "p", AA_POLL_READABLE);
        did: format!("{did}, run_once(100 ms) until a callback, for at most 2 s"),
        wants: one_wanted(AA_POLL_READABLE),
        got: format!("the callbacks {log:?}"));
    lp.finish();
}
