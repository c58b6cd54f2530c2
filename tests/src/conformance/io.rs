//! Tier: completion-level requests. Inline and pending paths, accept and
//! connect over loopback, end of stream and reset peers, cancel, dispose and
//! close of pending requests, `AA_IO_CLOSE`, and how requests on one
//! descriptor relate (independent directions, FIFO within one).

use crate::{ensure, ensure_eq, rule_failed};
use async_abi::*;

use super::fds;
use super::harness::{Loop, Rec, Submit};
use super::plugin::Reactor;

const REASON: AaStatus = -4545;
const ECANCELED: i64 = -(libc::ECANCELED as i64);

/// A socket pair whose ends the loop closes at the end.
fn pair(lp: &Loop) -> (i32, i32) {
    let (a, b) = fds::socketpair();
    (lp.track_fd(a), lp.track_fd(b))
}

fn skip(reactor: &Reactor, caps: u64, case: &str) -> bool {
    super::skip_without(reactor, AA_CAP_IO | caps, case)
}

/// Checks the inline fast path: with data available, a write and a read
/// complete inside `io_submit` (`AA_DONE`, no event, no callback).
pub fn write_then_read_inline_on_a_socketpair(reactor: &Reactor) {
    if skip(
        reactor,
        AA_CAP_IO_INLINE,
        "write_then_read_inline_on_a_socketpair",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    ensure_eq!(
        "R-IO-1",
        lp.write("w", a, b"hello", AA_IO_TRY_INLINE).done(),
        5
    );
    let mut buf = [0u8; 16];
    ensure_eq!(
        "R-IO-1",
        lp.read("r", b, &mut buf, AA_IO_TRY_INLINE).done(),
        5
    );
    ensure_eq!("R-IO-1", &buf[..5], b"hello");
    ensure_eq!("R-IO-1", lp.alive(), 0);
    lp.run_once(0);
    ensure_eq!("R-IO-1", lp.log(), vec![]);
    lp.finish();
}

/// Checks the pending path: a read with nothing to read stays pending,
/// alive, and completes exactly once with the data written later.
pub fn read_waits_for_data_then_completes_once(reactor: &Reactor) {
    if skip(reactor, 0, "read_waits_for_data_then_completes_once") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    let mut buf = [0u8; 16];
    lp.read("r", b, &mut buf, AA_IO_TRY_INLINE).pending();
    ensure_eq!("R-IO-2", lp.alive(), 1);
    lp.run_once(0);
    ensure_eq!("R-IO-2", lp.log(), vec![]);
    fds::put(a, b"abc");
    lp.run_until_tag("r");
    lp.run_once(0);
    ensure_eq!("R-IO-2", lp.log(), vec![Rec::Io("r", 3)]);
    ensure_eq!("R-IO-2", &buf[..3], b"abc");
    ensure_eq!("R-IO-2", lp.alive(), 0);
    lp.finish();
}

/// Checks that without `AA_IO_TRY_INLINE` the result always comes through
/// the callback, from `run_once`, even when the data is already there.
pub fn request_without_inline_completes_from_run_once(reactor: &Reactor) {
    if skip(reactor, 0, "request_without_inline_completes_from_run_once") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    fds::put(a, b"xyz");
    let mut buf = [0u8; 16];
    lp.read("r", b, &mut buf, 0).pending();
    lp.write("w", a, b"more", 0).pending();
    ensure_eq!(
        "R-IO-2",
        lp.log(),
        vec![],
        "io_submit called back synchronously"
    );
    lp.run_until("both requests", |log| log.len() == 2);
    let mut log = lp.log();
    log.sort_by_key(|r| r.tag());
    ensure_eq!("R-IO-2", log, vec![Rec::Io("r", 3), Rec::Io("w", 4)]);
    ensure_eq!("R-IO-2", &buf[..3], b"xyz");
    lp.finish();
}

/// Checks that a write to a full socket waits and completes once the peer
/// drains it.
pub fn write_waits_for_room_then_completes(reactor: &Reactor) {
    if skip(reactor, 0, "write_waits_for_room_then_completes") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    fds::fill(a);
    let data = vec![7u8; 4096];
    lp.write("w", a, &data, AA_IO_TRY_INLINE).pending();
    lp.run_once(0);
    ensure_eq!("R-IO-2", lp.log(), vec![]);
    fds::drain(b);
    lp.run_until_tag("w");
    match lp.log()[..] {
        [Rec::Io("w", n)] => ensure!("R-IO-2", n > 0 && n <= 4096, "wrote {n}"),
        ref other => rule_failed!("R-IO-2", "unexpected log {other:?}"),
    }
    lp.finish();
}

/// Checks accept and connect over `127.0.0.1`: both complete, the accepted
/// descriptor is valid and the peer address (family, address, port) is the
/// connecting socket's.
pub fn accept_and_connect_over_loopback_fill_the_peer_address(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "accept_and_connect_over_loopback_fill_the_peer_address",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (listener, mut addr) = fds::tcp_listener();
    lp.track_fd(listener);
    let client = lp.track_fd(fds::tcp_socket());
    let mut peer = AaSockAddr::EMPTY;
    lp.accept("accept", listener, &mut peer, AA_IO_TRY_INLINE)
        .pending();
    match lp.connect("connect", client, &mut addr, AA_IO_TRY_INLINE) {
        Submit::Done(result) => ensure_eq!("R-IO-3", result, 0),
        Submit::Pending(_) => lp.run_until_tag("connect"),
        Submit::Failed(s) => rule_failed!("R-IO-3", "connect failed with {s}"),
    }
    lp.run_until_tag("accept");
    let accepted = lp
        .log()
        .iter()
        .find_map(|r| match r {
            Rec::Io("accept", fd) => Some(*fd),
            _ => None,
        })
        .expect("accept completed");
    ensure!("R-IO-3", accepted >= 0, "accept failed with {accepted}");
    let accepted = lp.track_fd(accepted as i32);
    if let Some(Rec::Io("connect", result)) = lp.log().iter().find(|r| r.tag() == "connect") {
        ensure_eq!("R-IO-3", *result, 0);
    }
    let (family, ip, port) = fds::parse_ipv4(&peer);
    ensure_eq!("R-IO-3", family, libc::AF_INET);
    ensure_eq!("R-IO-3", ip, [127, 0, 0, 1]);
    ensure_eq!("R-IO-3", port, fds::parse_ipv4(&fds::local_addr(client)).2);
    ensure!(
        "R-IO-3",
        peer.len as usize >= std::mem::size_of::<libc::sockaddr_in>()
    );
    // The accepted socket carries data.
    fds::put(client, b"ping");
    let mut buf = [0u8; 4];
    match lp.read("read", accepted, &mut buf, AA_IO_TRY_INLINE) {
        Submit::Done(n) => ensure_eq!("R-IO-3", n, 4),
        Submit::Pending(_) => {
            lp.run_until_tag("read");
            ensure!("R-IO-3", lp.log().contains(&Rec::Io("read", 4)));
        }
        Submit::Failed(s) => rule_failed!("R-IO-3", "read on the accepted socket failed with {s}"),
    }
    ensure_eq!("R-IO-3", &buf, b"ping");
    lp.finish();
}

/// Checks that a connect to a port nobody listens on completes with
/// `-ECONNREFUSED`.
pub fn connect_to_a_closed_port_fails(reactor: &Reactor) {
    if skip(reactor, 0, "connect_to_a_closed_port_fails") {
        return;
    }
    let lp = Loop::new(reactor);
    let (listener, mut addr) = fds::tcp_listener();
    fds::raw_close(listener);
    let client = lp.track_fd(fds::tcp_socket());
    let result = match lp.connect("connect", client, &mut addr, 0) {
        Submit::Pending(_) => {
            lp.run_until_tag("connect");
            match lp.log()[..] {
                [Rec::Io("connect", r)] => r,
                ref other => rule_failed!("R-IO-3", "unexpected log {other:?}"),
            }
        }
        other => rule_failed!("R-IO-3", "expected a pending connect, got {other:?}"),
    };
    ensure_eq!("R-IO-3", result, -(libc::ECONNREFUSED as i64));
    lp.finish();
}

/// Checks that a read on a stream whose peer closed returns 0.
pub fn read_at_end_of_stream_returns_zero(reactor: &Reactor) {
    if skip(reactor, 0, "read_at_end_of_stream_returns_zero") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(b);
    let mut buf = [0u8; 8];
    lp.read("r", b, &mut buf, 0).pending();
    fds::raw_close(a);
    lp.run_until_tag("r");
    ensure_eq!("R-IO-4", lp.log(), vec![Rec::Io("r", 0)]);
    lp.finish();
}

/// Checks that end of stream that arrived together with the last data is
/// still delivered: a read that came back short must not make the reactor
/// wait for a readiness edge that will never come (the peer's FIN was
/// already there). A regression test for a readiness-hint bug: the `net`
/// suite's `incoming_yields_accepted_streams` hung on it.
pub fn end_of_stream_behind_a_short_read_is_still_delivered(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "end_of_stream_behind_a_short_read_is_still_delivered",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(b);
    let mut first = [0u8; 64];
    lp.read("first", b, &mut first, AA_IO_TRY_INLINE).pending();
    fds::put(a, b"hi");
    fds::raw_close(a);
    lp.run_until_tag("first");
    ensure_eq!("R-IO-4", lp.take_log(), vec![Rec::Io("first", 2)]);
    let mut second = [0u8; 64];
    match lp.read("second", b, &mut second, AA_IO_TRY_INLINE) {
        Submit::Done(n) => ensure_eq!("R-IO-4", n, 0, "the second read must see end of stream"),
        Submit::Pending(_) => {
            lp.run_until_tag("second");
            ensure_eq!("R-IO-4", lp.log(), vec![Rec::Io("second", 0)]);
        }
        Submit::Failed(s) => rule_failed!("R-IO-4", "the second read failed with {s}"),
    }
    lp.finish();
}

/// Checks that writing to a socket whose peer is gone fails with `-EPIPE`
/// or `-ECONNRESET` (and does not raise `SIGPIPE`).
pub fn write_to_a_closed_peer_fails_with_epipe_or_econnreset(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "write_to_a_closed_peer_fails_with_epipe_or_econnreset",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    fds::raw_close(b);
    let result = match lp.write("w", a, b"lost", 0) {
        Submit::Pending(_) => {
            lp.run_until_tag("w");
            match lp.log()[..] {
                [Rec::Io("w", r)] => r,
                ref other => rule_failed!("R-IO-4", "unexpected log {other:?}"),
            }
        }
        other => rule_failed!("R-IO-4", "expected a pending write, got {other:?}"),
    };
    ensure!(
        "R-IO-4",
        result == -(libc::EPIPE as i64) || result == -(libc::ECONNRESET as i64),
        "write to a closed peer gave {result}"
    );
    lp.finish();
}

/// Checks that cancelling a pending read completes it exactly once, with the
/// reason, from a later `run_once`; that the buffer is never written after;
/// and that the data that arrives later is still there for the next read.
pub fn cancel_of_a_pending_read_completes_once_with_the_reason(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "cancel_of_a_pending_read_completes_once_with_the_reason",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    let mut buf = [0xaau8; 8];
    let r = lp.read("r", b, &mut buf, AA_IO_TRY_INLINE).pending();
    ensure_eq!("R-EV-1", lp.cancel(r, REASON), AA_OK);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![],
        "cancel called back synchronously"
    );
    fds::put(a, b"late");
    lp.run_until_tag("r");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!("R-EV-1", lp.log(), vec![Rec::Io("r", i64::from(REASON))]);
    ensure_eq!(
        "R-EV-1",
        buf,
        [0xaa; 8],
        "the buffer was written after cancel"
    );
    let mut again = [0u8; 8];
    match lp.read("again", b, &mut again, AA_IO_TRY_INLINE) {
        Submit::Done(n) => ensure_eq!("R-EV-1", n, 4),
        Submit::Pending(_) => {
            lp.run_until_tag("again");
            ensure!("R-EV-1", lp.log().contains(&Rec::Io("again", 4)));
        }
        Submit::Failed(s) => rule_failed!("R-EV-1", "second read failed with {s}"),
    }
    ensure_eq!("R-EV-1", &again[..4], b"late");
    lp.finish();
}

/// Checks that a request whose callback ran has nothing left to cancel.
pub fn cancel_after_completion_is_invalid(reactor: &Reactor) {
    if skip(reactor, 0, "cancel_after_completion_is_invalid") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, _b) = pair(&lp);
    let w = lp.write("w", a, b"x", 0).pending();
    lp.run_until_tag("w");
    ensure_eq!("R-ERR-3", lp.cancel(w, REASON), AA_E_INVALID);
    lp.run_once(0);
    ensure_eq!("R-ERR-3", lp.log(), vec![Rec::Io("w", 1)]);
    lp.finish();
}

/// Checks that a disposed pending read never calls back and never consumes
/// the data that arrives afterwards.
pub fn dispose_of_a_pending_read_never_calls_back(reactor: &Reactor) {
    if skip(reactor, 0, "dispose_of_a_pending_read_never_calls_back") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    let mut buf = [0u8; 8];
    let r = lp.read("r", b, &mut buf, AA_IO_TRY_INLINE).pending();
    lp.dispose(r);
    ensure_eq!("R-EV-3", lp.alive(), 0);
    fds::put(a, b"kept");
    let mut again = [0u8; 8];
    lp.read("again", b, &mut again, 0).pending();
    lp.run_until_tag("again");
    lp.run_once(0);
    ensure_eq!("R-EV-3", lp.log(), vec![Rec::Io("again", 4)]);
    ensure_eq!("R-EV-3", &again[..4], b"kept");
    lp.finish();
}

/// Checks AA-R4 for a pending read: nothing inside `close`; then the read
/// completes with `-ECANCELED` and `on_closed` runs exactly once, in that
/// order, from a later `run_once`.
pub fn close_of_a_pending_read_gives_ecanceled_then_on_closed(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "close_of_a_pending_read_gives_ecanceled_then_on_closed",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (_a, b) = pair(&lp);
    let mut buf = [0u8; 8];
    let r = lp.read("r", b, &mut buf, AA_IO_TRY_INLINE).pending();
    ensure_eq!("R-IO-6", lp.close(r), AA_OK);
    ensure_eq!(
        "R-IO-6",
        lp.log(),
        vec![],
        "close called back synchronously"
    );
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("r")));
    lp.run_once(0);
    ensure_eq!(
        "R-IO-6",
        lp.log(),
        vec![Rec::Io("r", ECANCELED), Rec::Closed("r")]
    );
    lp.finish();
}

/// Checks that `AA_IO_CLOSE` completes the descriptor's other pending
/// requests with `-ECANCELED`, each exactly once.
pub fn io_close_completes_other_pending_requests_with_ecanceled(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "io_close_completes_other_pending_requests_with_ecanceled",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    let mut buf1 = [0u8; 8];
    let mut buf2 = [0u8; 8];
    lp.read("r1", b, &mut buf1, 0).pending();
    lp.read("r2", b, &mut buf2, 0).pending();
    lp.run_once(0);
    ensure_eq!("R-IO-7", lp.close_fd(b), 0);
    lp.run_until("both cancellations", |log| log.len() == 2);
    lp.run_once(0);
    ensure_eq!(
        "R-IO-7",
        lp.log(),
        vec![Rec::Io("r1", ECANCELED), Rec::Io("r2", ECANCELED)]
    );
    lp.finish();
}

/// Checks that a pending read does not hold up a write on the same
/// descriptor, and that each completes with its own result.
pub fn reader_and_writer_on_one_fd_complete_independently(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "reader_and_writer_on_one_fd_complete_independently",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    let mut buf = [0u8; 8];
    lp.read("read", a, &mut buf, 0).pending();
    lp.write("write", a, b"out", 0).pending();
    lp.run_until_tag("write");
    ensure_eq!("R-IO-9", lp.log(), vec![Rec::Io("write", 3)]);
    let mut peer = [0u8; 8];
    ensure_eq!("R-IO-9", fds::raw_read(b, &mut peer), 3);
    fds::put(b, b"in!!");
    lp.run_until_tag("read");
    ensure_eq!(
        "R-IO-9",
        lp.log(),
        vec![Rec::Io("write", 3), Rec::Io("read", 4)]
    );
    ensure_eq!("R-IO-9", &buf[..4], b"in!!");
    lp.finish();
}

/// Checks that reads queued on one descriptor complete in submission order,
/// each with the data that arrived for it.
pub fn pending_reads_on_one_fd_complete_in_fifo_order(reactor: &Reactor) {
    if skip(reactor, 0, "pending_reads_on_one_fd_complete_in_fifo_order") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    let mut first = [0u8; 1];
    let mut second = [0u8; 1];
    lp.read("first", b, &mut first, AA_IO_TRY_INLINE).pending();
    lp.read("second", b, &mut second, AA_IO_TRY_INLINE)
        .pending();
    lp.run_once(0);
    fds::put(a, b"1");
    lp.run_until_tag("first");
    lp.run_once(0);
    ensure_eq!("R-IO-10", lp.log(), vec![Rec::Io("first", 1)]);
    fds::put(a, b"2");
    lp.run_until_tag("second");
    ensure_eq!(
        "R-IO-10",
        lp.log(),
        vec![Rec::Io("first", 1), Rec::Io("second", 1)]
    );
    ensure_eq!("R-IO-10", (first[0], second[0]), (b'1', b'2'));
    lp.finish();
}

/// Checks re-entrancy: a read callback that disposes its own event and
/// submits the next read; each read completes once, in order.
pub fn callback_may_submit_the_next_request_and_dispose_itself(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "callback_may_submit_the_next_request_and_dispose_itself",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    let bufs: &'static mut [[u8; 1]; 3] = Box::leak(Box::new([[0u8; 1]; 3]));
    let bufs_ptr = bufs.as_mut_ptr();
    let tags = ["r0", "r1", "r2"];
    fn chain(lp: &Loop, fd: i32, bufs: *mut [u8; 1], tags: [&'static str; 3], i: usize) {
        // SAFETY: `bufs` is leaked for the case and holds three entries.
        let buf = unsafe { &mut *bufs.add(i) };
        let ev = lp.read(tags[i], fd, buf, 0).pending();
        lp.on(ev, move |lp, rec| {
            ensure_eq!("R-EV-4", *rec, Rec::Io(tags[i], 1));
            lp.dispose(ev);
            if i + 1 < tags.len() {
                chain(lp, fd, bufs, tags, i + 1);
            }
        });
    }
    chain(&lp, b, bufs_ptr, tags, 0);
    fds::put(a, b"ab");
    lp.run_until("two reads", |log| log.len() == 2);
    fds::put(a, b"c");
    lp.run_until("three reads", |log| log.len() == 3);
    ensure_eq!(
        "R-EV-4",
        lp.log(),
        vec![Rec::Io("r0", 1), Rec::Io("r1", 1), Rec::Io("r2", 1)]
    );
    ensure_eq!("R-EV-4", *bufs, [[b'a'], [b'b'], [b'c']]);
    lp.finish();
}

/// Checks that after `AA_IO_CLOSE` a new descriptor (very likely reusing the
/// number) works: the reactor forgot everything about the old one.
pub fn descriptor_reused_after_io_close_works(reactor: &Reactor) {
    if skip(reactor, 0, "descriptor_reused_after_io_close_works") {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = fds::socketpair();
    let mut old = [0u8; 4];
    lp.read("old", b, &mut old, AA_IO_TRY_INLINE).pending();
    ensure_eq!("R-IO-7", lp.close_fd(b), 0);
    ensure_eq!("R-IO-7", lp.close_fd(a), 0);
    lp.run_until_tag("old");
    let (c, d) = pair(&lp);
    let mut new = [0u8; 4];
    lp.read("new", d, &mut new, AA_IO_TRY_INLINE).pending();
    lp.run_once(0);
    fds::put(c, b"new!");
    lp.run_until_tag("new");
    ensure_eq!(
        "R-IO-7",
        lp.log(),
        vec![Rec::Io("old", ECANCELED), Rec::Io("new", 4)]
    );
    ensure_eq!("R-IO-7", &new, b"new!");
    lp.finish();
}

/// Checks that requests on different descriptors start in submission
/// order: one-byte reads on two descriptors of one socket (a `dup`),
/// submitted while the loop is not running with the bytes already queued,
/// get the bytes in submission order; then again with the descriptors in
/// the other order, so neither "by descriptor number" nor "newest first"
/// passes. Submitted without `AA_IO_TRY_INLINE`, so all start from the
/// same `run_once`.
pub fn requests_on_different_descriptors_start_in_submission_order(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "requests_on_different_descriptors_start_in_submission_order",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (a, b) = pair(&lp);
    // SAFETY: `dup` of a descriptor this case owns.
    let b2 = lp.track_fd(unsafe { libc::dup(b) });
    ensure!("R-IO-11", b2 >= 0, "dup failed");
    for (round, (first, second)) in [(b2, b), (b, b2)].into_iter().enumerate() {
        let mut bufs = [[0u8; 1]; 2];
        let [x, y] = &mut bufs;
        fds::put(a, b"12");
        let ex = lp.read("first", first, x, 0).pending();
        let ey = lp.read("second", second, y, 0).pending();
        lp.run_until("both reads", |log| log.len() == 2);
        ensure_eq!(
            "R-IO-11",
            bufs,
            [[b'1'], [b'2']],
            "round {round}: the reads did not start in submission order; log {:?}",
            lp.take_log()
        );
        lp.take_log();
        lp.dispose(ex);
        lp.dispose(ey);
    }
    lp.finish();
}

/// Checks who closes the descriptor of an `AA_IO_CLOSE` that is disposed
/// before it ran: the reactor does, by the time `destroy` returns `AA_OK`
/// (running the loop while `destroy` answers `AA_E_BUSY`, as a host does).
pub fn disposed_pending_io_close_still_closes_its_descriptor_by_destroy(reactor: &Reactor) {
    if skip(
        reactor,
        0,
        "disposed_pending_io_close_still_closes_its_descriptor_by_destroy",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let (r, w) = fds::pipe();
    let mut op = AaIoOp::new(AA_IO_CLOSE, i64::from(r));
    let ev = lp.submit("close", &mut op, 0).pending();
    lp.dispose(ev);
    let start = std::time::Instant::now();
    loop {
        match lp.destroy() {
            AA_OK => break,
            AA_E_BUSY if start.elapsed() < super::harness::PATIENCE => {
                lp.run_once(10_000_000);
            }
            other => rule_failed!("R-IO-8", "destroy returned {other}: {}", lp.last_error()),
        }
    }
    ensure_eq!("R-IO-8", lp.log(), vec![], "a disposed close called back");
    // SAFETY: F_GETFD on a number: only asks whether it is open.
    let open = unsafe { libc::fcntl(r, libc::F_GETFD) } != -1;
    fds::raw_close(w);
    ensure!("R-IO-8", !open, "fd {r} is still open after destroy");
}
