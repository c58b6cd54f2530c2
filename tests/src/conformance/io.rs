//! Tier: completion-level requests. Inline and pending paths, accept and
//! connect over loopback, end of stream and reset peers, cancel, dispose and
//! close of pending requests, `AA_IO_CLOSE`, and how requests on one
//! descriptor relate (independent directions, FIFO within one).

use crate::{ensure, ensure_eq, rule_failed, setup_failed};
use async_abi::*;

use super::fds;
use super::harness::{Alive, Loop, Rec, Submit};
use super::plugin::Reactor;
use super::rules;

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
        lp.write("w", a, b"hello", AA_IO_TRY_INLINE),
        Submit::Done(5),
        "io_submit(AA_IO_WRITE of \"hello\" on a socket, flags AA_IO_TRY_INLINE): its result",
    );
    let mut buf = [0u8; 16];
    ensure_eq!(
        "R-IO-1",
        lp.read("r", b, &mut buf, AA_IO_TRY_INLINE),
        Submit::Done(5),
        "io_submit(AA_IO_WRITE of \"hello\", AA_IO_TRY_INLINE), then io_submit(AA_IO_READ of 16 \
         bytes on the peer, flags AA_IO_TRY_INLINE): its result",
    );
    ensure_eq!(
        "R-IO-1",
        &buf[..5],
        b"hello",
        "an inline write of \"hello\", then an inline AA_IO_READ of 16 bytes on the peer: the \
         data read",
    );
    ensure_eq!(
        "R-IO-1",
        lp.alive(),
        Alive(0),
        "an inline write and an inline read (AA_DONE both): alive()",
    );
    lp.run_once(0);
    ensure_eq!(
        "R-IO-1",
        lp.log(),
        vec![],
        "an inline write and an inline read (AA_DONE both), run_once(0): the callbacks (an \
         inline completion calls nothing)",
    );
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
    ensure_eq!(
        "R-IO-2",
        lp.alive(),
        Alive(1),
        "io_submit(AA_IO_READ of 16 bytes on an empty socket, flags AA_IO_TRY_INLINE), pending: \
         alive()",
    );
    lp.run_once(0);
    ensure_eq!(
        "R-IO-2",
        lp.log(),
        vec![],
        "io_submit(AA_IO_READ of 16 bytes on an empty socket, flags AA_IO_TRY_INLINE), pending, \
         run_once(0): the callbacks",
    );
    fds::put(a, b"abc");
    lp.run_until_tag("r");
    lp.run_once(0);
    ensure_eq!(
        "R-IO-2",
        lp.log(),
        vec![Rec::Io("r", 3)],
        "a pending AA_IO_READ of 16 bytes, \"abc\" written by the peer, run_once until a \
         callback, run_once(0): the callbacks",
    );
    ensure_eq!(
        "R-IO-2",
        &buf[..3],
        b"abc",
        "a pending AA_IO_READ of 16 bytes, \"abc\" written by the peer, its callback ran: the \
         data read",
    );
    ensure_eq!(
        "R-IO-2",
        lp.alive(),
        Alive(0),
        "a pending AA_IO_READ of 16 bytes, \"abc\" written by the peer, its callback ran: alive()",
    );
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
        "\"xyz\" written by the peer, io_submit(AA_IO_READ of 16 bytes, flags 0) and \
         io_submit(AA_IO_WRITE of \"more\", flags 0), before any run_once: the callbacks",
    );
    lp.run_until("both requests", |log| log.len() == 2);
    let mut log = lp.log();
    log.sort_by_key(|r| r.tag());
    ensure_eq!(
        "R-IO-2",
        log,
        vec![Rec::Io("r", 3), Rec::Io("w", 4)],
        "\"xyz\" written by the peer, io_submit(AA_IO_READ of 16 bytes, flags 0) and \
         (AA_IO_WRITE of \"more\", flags 0), run_once until two callbacks: the callbacks by tag",
    );
    ensure_eq!(
        "R-IO-2",
        &buf[..3],
        b"xyz",
        "\"xyz\" written by the peer, io_submit(AA_IO_READ of 16 bytes, flags 0), its callback \
         ran: the data read",
    );
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
    ensure_eq!(
        "R-IO-2",
        lp.log(),
        vec![],
        "a socket whose buffer the kit filled, io_submit(AA_IO_WRITE of 4096 bytes, flags \
         AA_IO_TRY_INLINE), pending, run_once(0): the callbacks",
    );
    fds::drain(b);
    lp.run_until_tag("w");
    match lp.log()[..] {
        [Rec::Io("w", n)] => ensure!("R-IO-2", n > 0 && n <= 4096;
            did: "a full socket, io_submit(AA_IO_WRITE of 4096 bytes, flags AA_IO_TRY_INLINE), \
                  pending, the peer drained, run_once until its callback",
            wants: "a result of 1 to 4096 bytes",
            got: format!("the result {}", rules::result(n))),
        ref other => rule_failed!(
            "R-IO-2",
            "the callbacks {other:?} for a pending AA_IO_WRITE of 4096 bytes to a socket the \
             peer drained (one callback with 1 to 4096 expected)"
        ),
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
        Submit::Done(result) => ensure_eq!(
            "R-IO-3",
            result,
            0,
            "io_submit(AA_IO_CONNECT to a listening 127.0.0.1 port, flags AA_IO_TRY_INLINE), \
             AA_DONE: its result",
        ),
        Submit::Pending(_) => lp.run_until_tag("connect"),
        Submit::Failed(s) => rule_failed!(
            "R-IO-3",
            "io_submit(AA_IO_CONNECT to a listening 127.0.0.1 port, flags AA_IO_TRY_INLINE) \
             failed with {}",
            rules::status(s)
        ),
    }
    lp.run_until_tag("accept");
    let accepted = lp
        .log()
        .iter()
        .find_map(|r| match r {
            Rec::Io("accept", fd) => Some(*fd),
            _ => None,
        })
        .unwrap_or_else(|| {
            rule_failed!(
                "R-IO-3",
                "no callback of the AA_IO_ACCEPT among {:?} after run_once until it came",
                lp.log()
            )
        });
    ensure!("R-IO-3", accepted >= 0;
        did: "io_submit(AA_IO_ACCEPT on a 127.0.0.1 listener, flags AA_IO_TRY_INLINE), a \
              connect to it, run_once until the accept's callback",
        wants: "the accepted descriptor (>= 0)",
        got: format!("the result {}", rules::result(accepted)));
    let accepted = lp.track_fd(accepted as i32);
    if let Some(Rec::Io("connect", result)) = lp.log().iter().find(|r| r.tag() == "connect") {
        ensure_eq!(
            "R-IO-3",
            *result,
            0,
            "io_submit(AA_IO_CONNECT to a listening 127.0.0.1 port), pending, run_once until its \
             callback: its result",
        );
    }
    let (family, ip, port) = fds::parse_ipv4(&peer);
    ensure_eq!(
        "R-IO-3",
        family,
        libc::AF_INET,
        "io_submit(AA_IO_ACCEPT on a 127.0.0.1 listener, flags AA_IO_TRY_INLINE) and a connect \
         to it, both completed: the peer address's family (AF_INET is 2)",
    );
    ensure_eq!(
        "R-IO-3",
        ip,
        [127, 0, 0, 1],
        "an AA_IO_ACCEPT on a 127.0.0.1 listener, a connect to it, both completed: the peer \
         address's IP",
    );
    ensure_eq!(
        "R-IO-3",
        port,
        fds::parse_ipv4(&fds::local_addr(client)).2,
        "an AA_IO_ACCEPT on a 127.0.0.1 listener, a connect to it, both completed: the peer \
         address's port (the connecting socket's)",
    );
    ensure!("R-IO-3", peer.len as usize >= std::mem::size_of::<libc::sockaddr_in>();
        did: "an AA_IO_ACCEPT on a 127.0.0.1 listener completed",
        wants: "the peer address's len at least sizeof(struct sockaddr_in) (16)",
        got: format!("len {}", peer.len));
    // The accepted socket carries data.
    fds::put(client, b"ping");
    let mut buf = [0u8; 4];
    match lp.read("read", accepted, &mut buf, AA_IO_TRY_INLINE) {
        Submit::Done(n) => ensure_eq!(
            "R-IO-3",
            n,
            4,
            "\"ping\" written by the client, io_submit(AA_IO_READ of 4 bytes on the accepted \
             socket, flags AA_IO_TRY_INLINE), AA_DONE: its result",
        ),
        Submit::Pending(_) => {
            lp.run_until_tag("read");
            let log = lp.log();
            ensure!("R-IO-3", log.contains(&Rec::Io("read", 4));
                did: "\"ping\" written by the client, io_submit(AA_IO_READ of 4 bytes on the \
                      accepted socket, flags AA_IO_TRY_INLINE), pending, run_once until its \
                      callback",
                wants: "a callback with 4",
                got: format!("the callbacks {log:?}"));
        }
        Submit::Failed(s) => rule_failed!(
            "R-IO-3",
            "io_submit(AA_IO_READ of 4 bytes on the accepted socket, flags AA_IO_TRY_INLINE) \
             failed with {}",
            rules::status(s)
        ),
    }
    ensure_eq!(
        "R-IO-3",
        &buf,
        b"ping",
        "\"ping\" written by the client, an AA_IO_READ of 4 bytes on the accepted socket \
         completed: the data read",
    );
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
                ref other => rule_failed!(
                    "R-IO-3",
                    "the callbacks {other:?} for an AA_IO_CONNECT to a closed port (one \
                     expected)"
                ),
            }
        }
        other => rule_failed!(
            "R-IO-3",
            "{} for io_submit(AA_IO_CONNECT to a closed 127.0.0.1 port, flags 0) (pending \
             expected: the refusal comes from the peer)",
            rules::submitted(&other)
        ),
    };
    ensure_eq!(
        "R-IO-3",
        result,
        -(libc::ECONNREFUSED as i64),
        "io_submit(AA_IO_CONNECT to a closed 127.0.0.1 port, flags 0), pending, run_once until \
         its callback: its result",
    );
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
    ensure_eq!(
        "R-IO-4",
        lp.log(),
        vec![Rec::Io("r", 0)],
        "io_submit(AA_IO_READ of 8 bytes on a socket, flags 0), pending, the peer closed, \
         run_once until a callback: the callbacks",
    );
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
    ensure_eq!(
        "R-IO-4",
        lp.take_log(),
        vec![Rec::Io("first", 2)],
        "io_submit(AA_IO_READ of 64 bytes, flags AA_IO_TRY_INLINE), pending, \"hi\" written by \
         the peer and the peer closed, run_once until a callback: the callbacks",
    );
    let mut second = [0u8; 64];
    match lp.read("second", b, &mut second, AA_IO_TRY_INLINE) {
        Submit::Done(n) => ensure_eq!(
            "R-IO-4",
            n,
            0,
            "the first read gave \"hi\" of a peer that closed, then io_submit(AA_IO_READ of 64 \
             bytes, flags AA_IO_TRY_INLINE), AA_DONE: its result",
        ),
        Submit::Pending(_) => {
            lp.run_until_tag("second");
            ensure_eq!(
                "R-IO-4",
                lp.log(),
                vec![Rec::Io("second", 0)],
                "the first read gave \"hi\" of a peer that closed, then io_submit(AA_IO_READ of \
                 64 bytes, flags AA_IO_TRY_INLINE), pending, run_once until a callback: the \
                 callbacks",
            );
        }
        Submit::Failed(s) => rule_failed!(
            "R-IO-4",
            "io_submit(AA_IO_READ of 64 bytes, flags AA_IO_TRY_INLINE) after the peer closed \
             and \"hi\" was read failed with {}",
            rules::status(s)
        ),
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
                ref other => rule_failed!(
                    "R-IO-4",
                    "the callbacks {other:?} for an AA_IO_WRITE to a closed peer (one expected)"
                ),
            }
        }
        other => rule_failed!(
            "R-IO-4",
            "{} for io_submit(AA_IO_WRITE of \"lost\" to a socket whose peer closed, flags 0) \
             (without AA_IO_TRY_INLINE: pending expected)",
            rules::submitted(&other)
        ),
    };
    ensure!("R-IO-4", result == -(libc::EPIPE as i64) || result == -(libc::ECONNRESET as i64);
        did: "io_submit(AA_IO_WRITE of \"lost\" to a socket whose peer closed, flags 0), \
              pending, run_once until its callback",
        wants: "-EPIPE or -ECONNRESET",
        got: rules::result(result));
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
    ensure_eq!(
        "R-EV-1",
        lp.cancel(r, REASON),
        AA_OK,
        "io_submit(AA_IO_READ of 8 bytes on an empty socket, flags AA_IO_TRY_INLINE), pending, \
         cancel(the request, reason -4242): its status",
    );
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![],
        "a pending AA_IO_READ of 8 bytes, cancel(reason -4242): the callbacks before any \
         run_once (cancel calls nothing itself)",
    );
    fds::put(a, b"late");
    lp.run_until_tag("r");
    lp.run_once(0);
    lp.run_once(0);
    ensure_eq!(
        "R-EV-1",
        lp.log(),
        vec![Rec::Io("r", i64::from(REASON))],
        "a pending AA_IO_READ of 8 bytes, cancel(reason -4242), \"late\" written by the peer, \
         run_once until a callback, run_once(0) twice: the callbacks",
    );
    ensure_eq!(
        "R-EV-1",
        buf,
        [0xaa; 8],
        "a pending AA_IO_READ of 8 bytes into a buffer of 0xaa, cancel(reason -4242), \"late\" \
         written by the peer, the reason delivered: the buffer (the cancelled read took nothing)",
    );
    let mut again = [0u8; 8];
    match lp.read("again", b, &mut again, AA_IO_TRY_INLINE) {
        Submit::Done(n) => ensure_eq!(
            "R-EV-1",
            n,
            4,
            "a read cancelled before \"late\" came, then io_submit(AA_IO_READ of 8 bytes, flags \
             AA_IO_TRY_INLINE), AA_DONE: its result (the data was left for it)",
        ),
        Submit::Pending(_) => {
            lp.run_until_tag("again");
            let log = lp.log();
            ensure!("R-EV-1", log.contains(&Rec::Io("again", 4));
                did: "a read cancelled before \"late\" came, then io_submit(AA_IO_READ of 8 \
                      bytes, flags AA_IO_TRY_INLINE), pending, run_once until its callback",
                wants: "a callback with 4 (the data left for it)",
                got: format!("the callbacks {log:?}"));
        }
        Submit::Failed(s) => rule_failed!(
            "R-EV-1",
            "io_submit(AA_IO_READ of 8 bytes, flags AA_IO_TRY_INLINE) after a cancelled read \
             failed with {}",
            rules::status(s)
        ),
    }
    ensure_eq!(
        "R-EV-1",
        &again[..4],
        b"late",
        "a read cancelled before \"late\" came, then a second AA_IO_READ of 8 bytes completed: \
         the data read",
    );
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
    ensure_eq!(
        "R-ERR-3",
        lp.cancel(w, REASON),
        AA_E_INVALID,
        "io_submit(AA_IO_WRITE of 1 byte, flags 0), pending, run_once until its callback, then \
         cancel(the request, reason -4242): its status",
    );
    lp.run_once(0);
    ensure_eq!(
        "R-ERR-3",
        lp.log(),
        vec![Rec::Io("w", 1)],
        "a completed AA_IO_WRITE of 1 byte, cancel(reason -4242) refused, run_once(0): the \
         callbacks",
    );
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
    ensure_eq!(
        "R-EV-3",
        lp.alive(),
        Alive(0),
        "io_submit(AA_IO_READ of 8 bytes on an empty socket, flags AA_IO_TRY_INLINE), pending, \
         dispose(the request): alive()",
    );
    fds::put(a, b"kept");
    let mut again = [0u8; 8];
    lp.read("again", b, &mut again, 0).pending();
    lp.run_until_tag("again");
    lp.run_once(0);
    ensure_eq!(
        "R-EV-3",
        lp.log(),
        vec![Rec::Io("again", 4)],
        "a pending AA_IO_READ disposed, \"kept\" written by the peer, io_submit(AA_IO_READ of 8 \
         bytes, flags 0), run_once until a callback, run_once(0): the callbacks",
    );
    ensure_eq!(
        "R-EV-3",
        &again[..4],
        b"kept",
        "a pending AA_IO_READ disposed, \"kept\" written by the peer, a second AA_IO_READ of 8 \
         bytes completed: the data read (the disposed read took nothing)",
    );
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
    ensure_eq!(
        "R-IO-6",
        lp.close(r),
        AA_OK,
        "io_submit(AA_IO_READ of 8 bytes on an empty socket, flags AA_IO_TRY_INLINE), pending, \
         close(the request, on_closed): its status",
    );
    ensure_eq!(
        "R-IO-6",
        lp.log(),
        vec![],
        "a pending AA_IO_READ, close(the request, on_closed): the callbacks before any run_once \
         (close calls nothing itself)",
    );
    lp.run_until("on_closed", |log| log.contains(&Rec::Closed("r")));
    lp.run_once(0);
    ensure_eq!(
        "R-IO-6",
        lp.log(),
        vec![Rec::Io("r", ECANCELED), Rec::Closed("r")],
        "a pending AA_IO_READ, close(the request, on_closed), run_once until on_closed, \
         run_once(0): the callbacks",
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
    ensure_eq!(
        "R-IO-7",
        lp.close_fd(b),
        0,
        "two pending AA_IO_READ of 8 bytes on one socket (flags 0), run_once(0), then \
         AA_IO_CLOSE of that socket: its result",
    );
    lp.run_until("both cancellations", |log| log.len() == 2);
    lp.run_once(0);
    ensure_eq!(
        "R-IO-7",
        lp.log(),
        vec![Rec::Io("r1", ECANCELED), Rec::Io("r2", ECANCELED)],
        "two pending AA_IO_READ of 8 bytes on one socket, AA_IO_CLOSE of it, run_once until two \
         callbacks, run_once(0): the callbacks",
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
    ensure_eq!(
        "R-IO-9",
        lp.log(),
        vec![Rec::Io("write", 3)],
        "io_submit(AA_IO_READ of 8 bytes, flags 0) and io_submit(AA_IO_WRITE of \"out\", flags \
         0) on one socket, run_once until the write's callback: the callbacks",
    );
    let mut peer = [0u8; 8];
    ensure_eq!(
        "R-IO-9",
        fds::raw_read(b, &mut peer),
        3,
        "a pending AA_IO_READ and an AA_IO_WRITE of \"out\" completed with 3 on one socket, then \
         the kit's read(2) of 8 bytes on the peer: its result (the bytes written)",
    );
    fds::put(b, b"in!!");
    lp.run_until_tag("read");
    ensure_eq!(
        "R-IO-9",
        lp.log(),
        vec![Rec::Io("write", 3), Rec::Io("read", 4)],
        "a pending AA_IO_READ and a completed AA_IO_WRITE of \"out\" on one socket, the peer \
         read it and wrote \"in!!\", run_once until the read's callback: the callbacks",
    );
    ensure_eq!(
        "R-IO-9",
        &buf[..4],
        b"in!!",
        "a pending AA_IO_READ of 8 bytes on a socket written \"in!!\" by its peer, its callback \
         ran: the data read",
    );
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
    ensure_eq!(
        "R-IO-10",
        lp.log(),
        vec![Rec::Io("first", 1)],
        "two pending AA_IO_READ of 1 byte on one socket (first, second; flags AA_IO_TRY_INLINE), \
         run_once(0), \"1\" written by the peer, run_once until first's callback, run_once(0): \
         the callbacks",
    );
    fds::put(a, b"2");
    lp.run_until_tag("second");
    ensure_eq!(
        "R-IO-10",
        lp.log(),
        vec![Rec::Io("first", 1), Rec::Io("second", 1)],
        "two pending AA_IO_READ of 1 byte (first, second), \"1\" then \"2\" written by the peer, \
         run_once until second's callback: the callbacks",
    );
    ensure_eq!(
        "R-IO-10",
        (first[0], second[0]),
        (b'1', b'2'),
        "two pending AA_IO_READ of 1 byte (first, second), \"1\" then \"2\" written by the peer, \
         both completed: (first's byte, second's byte)",
    );
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
            ensure_eq!(
                "R-EV-4",
                *rec,
                Rec::Io(tags[i], 1),
                "inside the callback of read {} of a chain of AA_IO_READ of 1 byte (each \
                 callback disposes its request and submits the next): the callback's record",
                tags[i],
            );
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
        vec![Rec::Io("r0", 1), Rec::Io("r1", 1), Rec::Io("r2", 1)],
        "a chain of AA_IO_READ of 1 byte r0, r1, r2 (each callback disposes its request and \
         submits the next), \"ab\" then \"c\" written by the peer, run_once until three \
         callbacks: the callbacks",
    );
    ensure_eq!(
        "R-EV-4",
        *bufs,
        [[b'a'], [b'b'], [b'c']],
        "a chain of AA_IO_READ of 1 byte r0, r1, r2, \"ab\" then \"c\" written by the peer: the \
         three buffers",
    );
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
    ensure_eq!(
        "R-IO-7",
        lp.close_fd(b),
        0,
        "io_submit(AA_IO_READ of 4 bytes on b, flags AA_IO_TRY_INLINE), pending, then \
         AA_IO_CLOSE of b: its result",
    );
    ensure_eq!(
        "R-IO-7",
        lp.close_fd(a),
        0,
        "a pending AA_IO_READ on b, AA_IO_CLOSE of b, then AA_IO_CLOSE of its peer a: its result",
    );
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
        vec![Rec::Io("old", ECANCELED), Rec::Io("new", 4)],
        "a pending AA_IO_READ (old) on a socket closed with AA_IO_CLOSE, a new socket pair \
         (which may reuse the descriptor numbers), io_submit(AA_IO_READ of 4 bytes (new), flags \
         AA_IO_TRY_INLINE), run_once(0), \"new!\" written by the peer, run_once until its \
         callback: the callbacks",
    );
    ensure_eq!(
        "R-IO-7",
        &new,
        b"new!",
        "a descriptor closed with AA_IO_CLOSE and reused, an AA_IO_READ of 4 bytes on the reused \
         number, \"new!\" written by the peer: the data read",
    );
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
    if b2 < 0 {
        setup_failed!("dup of a socket: {}", std::io::Error::last_os_error());
    }
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
            "round {round}: \"12\" written to a socket, io_submit(AA_IO_READ of 1 byte, flags 0) \
             on one descriptor of it and then on a dup of it ({}), run_once until both \
             completed: (the first read's byte, the second's); the log {:?}",
            if round == 0 {
                "the dup first"
            } else {
                "the original first"
            },
            lp.take_log(),
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
            other => rule_failed!(
                "R-IO-8",
                "destroy, after a pending AA_IO_CLOSE of a pipe's read end was disposed, \
                 returned {} (AA_OK expected, AA_E_BUSY for a while), last_error_message {:?}",
                rules::status(other),
                lp.last_error()
            ),
        }
    }
    ensure_eq!(
        "R-IO-8",
        lp.log(),
        vec![],
        "io_submit(AA_IO_CLOSE of a pipe's read end, flags 0), pending, dispose(the request), \
         destroy (run_once while AA_E_BUSY): the callbacks",
    );
    // SAFETY: F_GETFD on a number: only asks whether it is open.
    let open = unsafe { libc::fcntl(r, libc::F_GETFD) } != -1;
    fds::raw_close(w);
    ensure!("R-IO-8", !open;
        did: format!(
            "io_submit(AA_IO_CLOSE of fd {r}, a pipe's read end, flags 0), pending, dispose(the \
             request), destroy, then the kit's fcntl(F_GETFD) of fd {r}"
        ),
        wants: "the descriptor closed (fcntl fails)",
        got: format!("fd {r} still open"));
}
