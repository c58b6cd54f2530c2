//! Tier: datagram requests (ABI 1.1, `AA_CAP_IO_DGRAM`). `AA_IO_SENDTO` and
//! `AA_IO_RECVFROM` over UDP on loopback and over Unix datagram sockets
//! (path, abstract and unnamed senders), message boundaries and
//! truncation, `AA_IO_PEEK` (which must not drain anything, on datagram and
//! stream sockets), connected sockets and refused ports, and a pending
//! `RECVFROM` cancelled (its buffer and address untouched after its
//! callback, and no datagram lost) or disposed.

use crate::{ensure, ensure_eq, rule_failed};
use async_abi::*;

use super::fds;
use super::harness::{Alive, Loop, Rec, Submit};
use super::os::TempDir;
use super::plugin::Reactor;
use super::requests::{
    addr_bytes, bind, connect, raw_send_to, raw_try_recv, skip_without_instance, udp_socket,
    unix_addr, unix_dgram,
};

/// The cases of this tier, for a caller that checks which ran.
pub const CASES: &[&str] = &[
    "udp_sendto_and_recvfrom_carry_data_and_the_sender_address",
    "recvfrom_truncates_a_long_datagram_and_keeps_message_boundaries",
    "peek_leaves_the_data_for_the_next_read",
    "unix_datagrams_carry_path_abstract_and_unnamed_senders",
    "sendto_without_address_needs_a_connection_and_a_closed_port_refuses",
    "cancel_of_a_pending_recvfrom_keeps_the_buffer_until_its_callback",
    "dispose_of_a_pending_recvfrom_never_calls_back",
    "peek_on_a_pipe_or_a_send_is_invalid",
];

const REASON: AaStatus = -4646;

/// Sends bytes to the descriptor under test, behind the reactor's back.
type Sender<'a> = dyn Fn(&[u8]) + 'a;

/// A loop for `case`, or `None` (printed as skipped) if its instance lacks
/// datagram requests.
fn start(reactor: &Reactor, case: &str) -> Option<Loop> {
    let lp = Loop::new(reactor);
    if skip_without_instance(&lp, reactor, AA_CAP_IO | AA_CAP_IO_DGRAM, case) {
        lp.finish();
        return None;
    }
    Some(lp)
}

/// Two UDP sockets the loop closes at the end, with their addresses.
fn udp_pair(lp: &Loop) -> ((i32, AaSockAddr), (i32, AaSockAddr)) {
    let (a, a_addr) = udp_socket();
    let (b, b_addr) = udp_socket();
    lp.track_fd(a);
    lp.track_fd(b);
    ((a, a_addr), (b, b_addr))
}

/// Checks the pending path both ways: a `RECVFROM` with nothing queued
/// stays pending and alive, a `SENDTO` to it completes with the bytes sent,
/// and the receive then completes once with the data and the sender's
/// address; then the same inline, where the reactor offers it.
pub fn udp_sendto_and_recvfrom_carry_data_and_the_sender_address(reactor: &Reactor) {
    let case = "udp_sendto_and_recvfrom_carry_data_and_the_sender_address";
    let Some(lp) = start(reactor, case) else {
        return;
    };
    let ((a, a_addr), (b, mut b_addr)) = udp_pair(&lp);
    let mut buf = [0u8; 64];
    let mut from = AaSockAddr::EMPTY;
    let r = lp
        .recv_from("r", b, &mut buf, Some(&mut from), 0, 0)
        .pending();
    lp.run_once(0);
    ensure_eq!(
        "R-IO-13",
        lp.log(),
        vec![],
        "io_submit(AA_IO_RECVFROM of 64 bytes on a UDP socket with nothing queued, flags 0), \
         pending, run_once(0): the callbacks",
    );
    ensure_eq!(
        "R-IO-13",
        lp.alive(),
        Alive(1),
        "a pending AA_IO_RECVFROM of 64 bytes on a UDP socket: alive()",
    );
    let sent = lp.send_to("s", a, b"ping", Some(&mut b_addr), 0);
    ensure_eq!(
        "R-IO-13",
        lp.result("s", sent),
        4,
        "a pending AA_IO_RECVFROM on UDP socket b, io_submit(AA_IO_SENDTO of \"ping\" from UDP \
         socket a to b's address, flags 0): its result",
    );
    lp.run_until_tag("r");
    lp.run_once(0);
    ensure_eq!(
        "R-IO-13",
        lp.log(),
        vec![Rec::Io("r", 4)],
        "a pending AA_IO_RECVFROM of 64 bytes on b, \"ping\" sent to it from a, run_once until \
         its callback, run_once(0): the callbacks",
    );
    ensure_eq!(
        "R-IO-13",
        &buf[..4],
        b"ping",
        "a pending AA_IO_RECVFROM of 64 bytes on b, \"ping\" sent to it from a: the data received",
    );
    ensure_eq!(
        "R-IO-13",
        addr_bytes(&from),
        addr_bytes(&a_addr),
        "a pending AA_IO_RECVFROM of 64 bytes on b, \"ping\" sent to it from a: the sender's \
         address (bytes of the sockaddr)",
    );
    lp.dispose(r);
    lp.take_log();
    if lp.instance_caps() & AA_CAP_IO_INLINE != 0 {
        let mut to_a = a_addr;
        let s = lp.send_to("s2", b, b"pong!", Some(&mut to_a), AA_IO_TRY_INLINE);
        ensure_eq!(
            "R-IO-13",
            lp.result("s2", s),
            5,
            "io_submit(AA_IO_SENDTO of \"pong!\" from b to a's address, flags AA_IO_TRY_INLINE): \
             its result",
        );
        let mut back = [0u8; 8];
        let mut from = AaSockAddr::EMPTY;
        let got = lp.recv_from("r2", a, &mut back, Some(&mut from), 0, AA_IO_TRY_INLINE);
        ensure_eq!(
            "R-IO-13",
            lp.result("r2", got),
            5,
            "\"pong!\" sent from b to a, io_submit(AA_IO_RECVFROM of 8 bytes on a, flags \
             AA_IO_TRY_INLINE): its result",
        );
        ensure_eq!(
            "R-IO-13",
            &back[..5],
            b"pong!",
            "\"pong!\" sent from b to a, an AA_IO_RECVFROM of 8 bytes on a: the data received",
        );
        ensure_eq!(
            "R-IO-13",
            addr_bytes(&from),
            addr_bytes(&b_addr),
            "\"pong!\" sent from b to a, an AA_IO_RECVFROM of 8 bytes on a: the sender's address \
             (bytes of the sockaddr)",
        );
    }
    ensure_eq!(
        "R-IO-13",
        lp.log(),
        vec![],
        "the UDP exchanges of the case, inline where offered: callbacks left in the log",
    );
    lp.finish();
}

/// Checks datagram semantics: a datagram longer than the buffer is
/// truncated and its rest discarded, the next receive gets the next
/// datagram whole, and pending receives on one socket complete in
/// submission order, one datagram each.
pub fn recvfrom_truncates_a_long_datagram_and_keeps_message_boundaries(reactor: &Reactor) {
    let case = "recvfrom_truncates_a_long_datagram_and_keeps_message_boundaries";
    let Some(lp) = start(reactor, case) else {
        return;
    };
    let ((a, _), (b, b_addr)) = udp_pair(&lp);
    raw_send_to(a, b"hello world", &b_addr);
    raw_send_to(a, b"x", &b_addr);
    let mut short = [0u8; 5];
    let got = lp.recv_from("short", b, &mut short, None, 0, 0);
    ensure_eq!(
        "R-IO-13",
        lp.result("short", got),
        5,
        "\"hello world\" then \"x\" sent to a UDP socket, io_submit(AA_IO_RECVFROM of 5 bytes, \
         addr NULL, flags 0): its result",
    );
    ensure_eq!(
        "R-IO-13",
        &short,
        b"hello",
        "\"hello world\" then \"x\" sent to a UDP socket, an AA_IO_RECVFROM of 5 bytes: the data \
         received",
    );
    let mut next = [0u8; 8];
    let got = lp.recv_from("next", b, &mut next, None, 0, 0);
    ensure_eq!(
        "R-IO-13",
        lp.result("next", got),
        1,
        "\"hello world\" received truncated to 5 bytes, then io_submit(AA_IO_RECVFROM of 8 \
         bytes, flags 0): its result (the rest of the first datagram dropped)",
    );
    ensure_eq!(
        "R-IO-13",
        next[0],
        b'x',
        "\"hello world\" received truncated, then an AA_IO_RECVFROM of 8 bytes: its first byte \
         (of the datagram \"x\")",
    );
    let mut first = [0u8; 8];
    let mut second = [0u8; 8];
    lp.recv_from("first", b, &mut first, None, 0, 0).pending();
    lp.recv_from("second", b, &mut second, None, 0, 0).pending();
    lp.run_once(0);
    raw_send_to(a, b"1", &b_addr);
    raw_send_to(a, b"22", &b_addr);
    lp.run_until("both", |log| log.len() == 2);
    lp.run_once(0);
    ensure_eq!(
        "R-IO-10",
        lp.log(),
        vec![Rec::Io("first", 1), Rec::Io("second", 2)],
        "two pending AA_IO_RECVFROM of 8 bytes on one UDP socket (first, second; flags 0), \
         run_once(0), \"1\" then \"22\" sent to it, run_once until two callbacks, run_once(0): \
         the callbacks",
    );
    ensure_eq!(
        "R-IO-10",
        (&first[..1], &second[..2]),
        (&b"1"[..], &b"22"[..]),
        "two pending AA_IO_RECVFROM of 8 bytes (first, second), \"1\" then \"22\" sent: (first's \
         data, second's data)",
    );
    lp.finish();
}

/// Checks `AA_IO_PEEK`: a peeking `RECVFROM` and a peeking `READ` see the
/// data and leave it queued, and a plain `READ` submitted after them
/// (without inline completion, so the reactor's readiness bookkeeping
/// decides) still gets it; the same on a stream socket, where a peek
/// shorter than its buffer must not be taken for a drained socket. Each
/// descriptor is first made known to the reactor and its readiness edge
/// consumed, so the final read has no new edge to wake it.
pub fn peek_leaves_the_data_for_the_next_read(reactor: &Reactor) {
    let case = "peek_leaves_the_data_for_the_next_read";
    let Some(lp) = start(reactor, case) else {
        return;
    };
    let ((a, a_addr), (b, b_addr)) = udp_pair(&lp);
    let (x, y) = fds::socketpair();
    lp.track_fd(x);
    lp.track_fd(y);
    let send_udp = |data: &[u8]| {
        raw_send_to(a, data, &b_addr);
    };
    let send_stream = |data: &[u8]| {
        fds::put(x, data);
    };
    let sends: [(&str, i32, &Sender<'_>); 2] = [("udp", b, &send_udp), ("stream", y, &send_stream)];
    for (what, fd, send) in sends {
        let mut prime = [0u8; 4];
        let got = lp.read("prime", fd, &mut prime, 0);
        lp.run_once(0);
        send(b"p");
        ensure_eq!(
            "R-IO-13",
            lp.result("prime", got),
            1,
            "{what}: io_submit(AA_IO_READ of 4 bytes, flags 0), run_once(0), \"p\" sent: its \
             result",
        );
        send(b"abc");
        lp.run_once(0);
        let mut peeked = [0u8; 16];
        let got = if fd == b {
            let mut from = AaSockAddr::EMPTY;
            let got = lp.recv_from(
                "peek",
                fd,
                &mut peeked,
                Some(&mut from),
                AA_IO_PEEK,
                AA_IO_TRY_INLINE,
            );
            let n = lp.result("peek", got);
            ensure_eq!(
                "R-IO-13",
                addr_bytes(&from),
                addr_bytes(&a_addr),
                "{what}: \"abc\" sent, io_submit(AA_IO_RECVFROM of 16 bytes, op_flags \
                 AA_IO_PEEK, flags AA_IO_TRY_INLINE): the sender's address (bytes of the \
                 sockaddr)",
            );
            n
        } else {
            let mut op = AaIoOp::new(AA_IO_READ, i64::from(fd));
            op.buf = peeked.as_mut_ptr();
            op.len = peeked.len();
            op.op_flags = AA_IO_PEEK;
            let got = lp.submit("peek", &mut op, AA_IO_TRY_INLINE);
            lp.result("peek", got)
        };
        ensure_eq!(
            "R-IO-13",
            (got, &peeked[..3]),
            (3, &b"abc"[..]),
            "{what}: \"abc\" sent, a peek of 16 bytes (op_flags AA_IO_PEEK, flags \
             AA_IO_TRY_INLINE): (its result, the data)",
        );
        let mut op = AaIoOp::new(AA_IO_READ, i64::from(fd));
        let mut again = [0u8; 16];
        op.buf = again.as_mut_ptr();
        op.len = again.len();
        op.op_flags = AA_IO_PEEK;
        let got = lp.submit("peek_read", &mut op, AA_IO_TRY_INLINE);
        ensure_eq!(
            "R-IO-13",
            lp.result("peek_read", got),
            3,
            "{what}: \"abc\" sent and peeked, io_submit(AA_IO_READ of 16 bytes, op_flags \
             AA_IO_PEEK, flags AA_IO_TRY_INLINE) again: its result",
        );
        let mut read = [0u8; 16];
        let got = lp.read("read", fd, &mut read, 0);
        ensure_eq!(
            "R-IO-13",
            lp.result("read", got),
            3,
            "{what}: \"abc\" sent and peeked twice, io_submit(AA_IO_READ of 16 bytes, op_flags \
             0, flags 0): its result (the data still there)",
        );
        ensure_eq!(
            "R-IO-13",
            &read[..3],
            b"abc",
            "{what}: \"abc\" sent and peeked twice, then read: the data read",
        );
        ensure_eq!(
            "R-IO-13",
            raw_try_recv(fd, &mut read),
            None,
            "{what}: \"abc\" sent, peeked twice and read once, then the kit's non-blocking \
             recv(2): bytes left (None: nothing)",
        );
    }
    ensure_eq!(
        "R-IO-13",
        lp.log(),
        vec![],
        "the peeks and reads of the case: callbacks left in the log",
    );
    lp.finish();
}

/// Checks Unix datagram sockets: the receiver learns a path sender's path,
/// an abstract sender's name (leading NUL), and nothing (length 0) for an
/// unbound sender.
pub fn unix_datagrams_carry_path_abstract_and_unnamed_senders(reactor: &Reactor) {
    let case = "unix_datagrams_carry_path_abstract_and_unnamed_senders";
    let Some(lp) = start(reactor, case) else {
        return;
    };
    let dir = TempDir::new("udg");
    let name = |file: &str| {
        dir.path()
            .join(file)
            .as_os_str()
            .as_encoded_bytes()
            .to_vec()
    };
    let receiver = lp.track_fd(unix_dgram());
    let mut to = unix_addr(&name("r.sock"));
    bind(receiver, &to);
    let path_sender = lp.track_fd(unix_dgram());
    let path_addr = unix_addr(&name("s.sock"));
    bind(path_sender, &path_addr);
    let abstract_sender = lp.track_fd(unix_dgram());
    let abstract_name = format!("\0aa-kit-{}-{case}", std::process::id());
    let abstract_addr = unix_addr(abstract_name.as_bytes());
    bind(abstract_sender, &abstract_addr);
    let unnamed_sender = lp.track_fd(unix_dgram());
    let senders = [
        ("path", path_sender, addr_bytes(&path_addr)),
        ("abstract", abstract_sender, addr_bytes(&abstract_addr)),
        ("unnamed", unnamed_sender, Vec::new()),
    ];
    for (what, fd, expected) in senders {
        let sent = lp.send_to("s", fd, what.as_bytes(), Some(&mut to), 0);
        ensure_eq!(
            "R-IO-13",
            lp.result("s", sent),
            what.len() as i64,
            "a Unix datagram socket ({what} sender), io_submit(AA_IO_SENDTO of \"{what}\" to a \
             bound Unix datagram socket, flags 0): its result",
        );
        let mut buf = [0u8; 16];
        let mut from = AaSockAddr::EMPTY;
        from.len = 0xdead;
        let got = lp.recv_from("r", receiver, &mut buf, Some(&mut from), 0, 0);
        ensure_eq!(
            "R-IO-13",
            lp.result("r", got),
            what.len() as i64,
            "\"{what}\" sent from a {what} Unix datagram socket, io_submit(AA_IO_RECVFROM of 16 \
             bytes, flags 0) on the receiver: its result",
        );
        ensure_eq!(
            "R-IO-13",
            &buf[..what.len()],
            what.as_bytes(),
            "\"{what}\" sent from a {what} Unix datagram socket, an AA_IO_RECVFROM of 16 bytes: \
             the data received",
        );
        ensure_eq!(
            "R-IO-13",
            addr_bytes(&from),
            expected,
            "\"{what}\" sent from a {what} Unix datagram socket, an AA_IO_RECVFROM of 16 bytes: \
             the sender's address (bytes; empty for an unnamed sender)",
        );
    }
    lp.finish();
}

/// Checks the errors of datagram sockets, as the system calls give them: a
/// `SENDTO` without an address needs a connected socket (`-EDESTADDRREQ`
/// otherwise); on a socket connected to a port nobody listens on, the send
/// succeeds and the next receive reports `-ECONNREFUSED`.
pub fn sendto_without_address_needs_a_connection_and_a_closed_port_refuses(reactor: &Reactor) {
    let case = "sendto_without_address_needs_a_connection_and_a_closed_port_refuses";
    let Some(lp) = start(reactor, case) else {
        return;
    };
    let ((a, a_addr), (b, b_addr)) = udp_pair(&lp);
    let sent = lp.send_to("unconnected", a, b"x", None, 0);
    ensure_eq!(
        "R-IO-13",
        lp.result("unconnected", sent),
        -i64::from(libc::EDESTADDRREQ),
        "io_submit(AA_IO_SENDTO of 1 byte on an unconnected UDP socket, addr NULL, flags 0): its \
         result",
    );
    connect(a, &b_addr);
    let sent = lp.send_to("connected", a, b"hi", None, 0);
    ensure_eq!(
        "R-IO-13",
        lp.result("connected", sent),
        2,
        "the UDP socket connected to b, io_submit(AA_IO_SENDTO of \"hi\", addr NULL, flags 0): \
         its result",
    );
    let mut buf = [0u8; 4];
    let mut from = AaSockAddr::EMPTY;
    let got = lp.recv_from("r", b, &mut buf, Some(&mut from), 0, 0);
    ensure_eq!(
        "R-IO-13",
        lp.result("r", got),
        2,
        "\"hi\" sent over a connected UDP socket, io_submit(AA_IO_RECVFROM of 4 bytes on b, \
         flags 0): its result",
    );
    ensure_eq!(
        "R-IO-13",
        addr_bytes(&from),
        addr_bytes(&a_addr),
        "\"hi\" sent over a connected UDP socket, an AA_IO_RECVFROM on b: the sender's address \
         (bytes of the sockaddr)",
    );
    // A port nobody listens on: bound, then closed.
    let (gone, gone_addr) = udp_socket();
    fds::raw_close(gone);
    connect(b, &gone_addr);
    let sent = lp.send_to("to_gone", b, b"?", None, 0);
    ensure_eq!(
        "R-IO-13",
        lp.result("to_gone", sent),
        1,
        "b connected to a closed UDP port, io_submit(AA_IO_SENDTO of 1 byte, addr NULL, flags \
         0): its result",
    );
    let got = lp.recv_from("refused", b, &mut buf, None, 0, 0);
    ensure_eq!(
        "R-IO-13",
        lp.result("refused", got),
        -i64::from(libc::ECONNREFUSED),
        "b connected to a closed UDP port, 1 byte sent, io_submit(AA_IO_RECVFROM of 4 bytes on \
         b, flags 0): its result",
    );
    lp.finish();
}

/// Checks AA-R5 for a cancelled `RECVFROM` the reactor (or the kernel)
/// already holds: no callback inside `cancel`, the request stays alive until
/// its one callback (the reason), its buffer and address are untouched then
/// and afterwards, and the datagram that arrives later is not lost. Then a
/// cancellation racing a datagram: exactly one callback, and either the
/// datagram is in the buffer or it is still queued.
pub fn cancel_of_a_pending_recvfrom_keeps_the_buffer_until_its_callback(reactor: &Reactor) {
    let case = "cancel_of_a_pending_recvfrom_keeps_the_buffer_until_its_callback";
    let Some(lp) = start(reactor, case) else {
        return;
    };
    let ((a, _), (b, b_addr)) = udp_pair(&lp);
    let mut buf = [0xaau8; 16];
    let mut from = AaSockAddr::EMPTY;
    from.len = 0xdead;
    let r = lp
        .recv_from("r", b, &mut buf, Some(&mut from), 0, 0)
        .pending();
    lp.run_once(0);
    ensure_eq!(
        "R-IO-14",
        lp.cancel(r, REASON),
        AA_OK,
        "io_submit(AA_IO_RECVFROM of 16 bytes on an empty UDP socket, flags 0), pending, \
         run_once(0), cancel(the request, reason -4242): its status",
    );
    ensure_eq!(
        "R-IO-14",
        lp.log(),
        vec![],
        "a pending AA_IO_RECVFROM, cancel(reason -4242): the callbacks before any run_once \
         (cancel calls nothing itself)",
    );
    ensure_eq!(
        "R-IO-14",
        lp.alive(),
        Alive(1),
        "a pending AA_IO_RECVFROM, cancel(reason -4242): alive() (alive until its callback)",
    );
    lp.run_until_tag("r");
    lp.run_once(0);
    ensure_eq!(
        "R-IO-14",
        lp.log(),
        vec![Rec::Io("r", i64::from(REASON))],
        "a pending AA_IO_RECVFROM, cancel(reason -4242), run_once until a callback, run_once(0): \
         the callbacks",
    );
    ensure_eq!(
        "R-IO-14",
        lp.alive(),
        Alive(0),
        "a pending AA_IO_RECVFROM, cancel(reason -4242), the reason delivered: alive()",
    );
    raw_send_to(a, b"late", &b_addr);
    let mut again = [0u8; 16];
    let got = lp.recv_from("again", b, &mut again, None, 0, 0);
    ensure_eq!(
        "R-IO-14",
        lp.result("again", got),
        4,
        "an AA_IO_RECVFROM cancelled (reason delivered), then \"late\" sent, \
         io_submit(AA_IO_RECVFROM of 16 bytes, flags 0): its result (the datagram not lost)",
    );
    ensure_eq!(
        "R-IO-14",
        &again[..4],
        b"late",
        "an AA_IO_RECVFROM cancelled, then \"late\" sent and received by another request: the \
         data received",
    );
    ensure_eq!(
        "R-IO-14",
        buf,
        [0xaa; 16],
        "an AA_IO_RECVFROM into a buffer of 0xaa cancelled before any datagram, the reason \
         delivered, then \"late\" sent and received by another request: the cancelled request's \
         buffer",
    );
    ensure_eq!(
        "R-IO-14",
        from.len,
        0xdead,
        "an AA_IO_RECVFROM with addr.len 0xdead cancelled before any datagram, the reason \
         delivered, then \"late\" received by another request: the cancelled request's addr.len",
    );
    lp.dispose(r);
    lp.take_log();

    let mut raced = [0u8; 16];
    let r2 = lp.recv_from("raced", b, &mut raced, None, 0, 0).pending();
    lp.run_once(0);
    raw_send_to(a, b"race", &b_addr);
    ensure_eq!(
        "R-IO-14",
        lp.cancel(r2, REASON),
        AA_OK,
        "a pending AA_IO_RECVFROM of 16 bytes, run_once(0), \"race\" sent, cancel(the request, \
         reason -4242): its status",
    );
    lp.run_until_tag("raced");
    lp.run_once(0);
    let mut left = [0u8; 16];
    match lp.log()[..] {
        [Rec::Io("raced", 4)] => {
            ensure_eq!(
                "R-IO-14",
                &raced[..4],
                b"race",
                "a pending AA_IO_RECVFROM, \"race\" sent, cancel(reason -4242), one callback \
                 with 4 (the data won): the data received",
            );
            ensure_eq!(
                "R-IO-14",
                raw_try_recv(b, &mut left),
                None,
                "a pending AA_IO_RECVFROM, \"race\" sent, cancel(reason -4242), one callback \
                 with 4 (the data won), then the kit's non-blocking recv(2): bytes left (None: \
                 nothing; the datagram delivered once)",
            );
        }
        [Rec::Io("raced", reason)] if reason == i64::from(REASON) => {
            ensure_eq!(
                "R-IO-14",
                raced,
                [0; 16],
                "a pending AA_IO_RECVFROM, \"race\" sent, cancel(reason -4242), one callback \
                 with the reason: the request's buffer",
            );
            ensure_eq!(
                "R-IO-14",
                raw_try_recv(b, &mut left),
                Some(4),
                "a pending AA_IO_RECVFROM, \"race\" sent, cancel(reason -4242), one callback \
                 with the reason, then the kit's non-blocking recv(2): bytes left (Some(4): the \
                 datagram still queued)",
            );
        }
        ref other => rule_failed!(
            "R-IO-14",
            "the callbacks {other:?} after a pending AA_IO_RECVFROM of 16 bytes, \"race\" sent, \
             cancel(reason -4242), run_once until a callback, run_once(0) (one callback, with \
             4 or the reason, expected)"
        ),
    }
    lp.finish();
}

/// Checks that a `RECVFROM` disposed before the loop ran never calls back
/// and never takes the datagram that arrives afterwards.
pub fn dispose_of_a_pending_recvfrom_never_calls_back(reactor: &Reactor) {
    let case = "dispose_of_a_pending_recvfrom_never_calls_back";
    let Some(lp) = start(reactor, case) else {
        return;
    };
    let ((a, _), (b, b_addr)) = udp_pair(&lp);
    let mut buf = [0u8; 8];
    let r = lp.recv_from("r", b, &mut buf, None, 0, 0).pending();
    lp.dispose(r);
    ensure_eq!(
        "R-EV-3",
        lp.alive(),
        Alive(0),
        "io_submit(AA_IO_RECVFROM of 8 bytes on an empty UDP socket, flags 0), pending, \
         dispose(the request): alive()",
    );
    raw_send_to(a, b"kept", &b_addr);
    let mut again = [0u8; 8];
    let got = lp.recv_from("again", b, &mut again, None, 0, 0);
    ensure_eq!(
        "R-EV-3",
        lp.result("again", got),
        4,
        "an AA_IO_RECVFROM disposed, \"kept\" sent, io_submit(AA_IO_RECVFROM of 8 bytes, flags \
         0): its result",
    );
    ensure_eq!(
        "R-EV-3",
        &again[..4],
        b"kept",
        "an AA_IO_RECVFROM disposed, \"kept\" sent and received by another request: the data \
         received",
    );
    lp.run_once(0);
    ensure_eq!(
        "R-EV-3",
        lp.log(),
        vec![],
        "an AA_IO_RECVFROM disposed, \"kept\" received by another request, run_once(0): the \
         callbacks",
    );
    lp.finish();
}

/// Checks the refusals of `AA_IO_PEEK`: on a descriptor that is not a
/// socket (a pipe) and on an opcode that does not take it (`SENDTO`), each
/// `AA_E_INVALID` with nothing created (AA-R8).
pub fn peek_on_a_pipe_or_a_send_is_invalid(reactor: &Reactor) {
    let case = "peek_on_a_pipe_or_a_send_is_invalid";
    let Some(lp) = start(reactor, case) else {
        return;
    };
    let (r, w) = fds::pipe();
    lp.track_fd(r);
    lp.track_fd(w);
    fds::put(w, b"p");
    let mut buf = [0u8; 4];
    let mut op = AaIoOp::new(AA_IO_READ, i64::from(r));
    op.buf = buf.as_mut_ptr();
    op.len = buf.len();
    op.op_flags = AA_IO_PEEK;
    ensure_eq!(
        "R-IO-13",
        lp.submit("peek_pipe", &mut op, AA_IO_TRY_INLINE),
        Submit::Failed(AA_E_INVALID),
        "io_submit(AA_IO_READ of 4 bytes on a pipe holding 1 byte, op_flags AA_IO_PEEK, flags \
         AA_IO_TRY_INLINE)",
    );
    // What the message says is not written in R-IO-13, so not checked
    // (issue 20: whatever is not written is not checked); R-ERR-2's form is.
    let msg = lp.last_error();
    ensure!("R-ERR-2", !msg.is_empty() && !msg.contains('\n');
        did: "io_submit(AA_IO_READ of 4 bytes on a pipe, op_flags AA_IO_PEEK), refused",
        wants: "a last_error_message of one line",
        got: format!("last_error_message {msg:?}"));
    let ((a, _), (_, mut b_addr)) = udp_pair(&lp);
    let mut op = AaIoOp::new(AA_IO_SENDTO, i64::from(a));
    op.buf = b"x".as_ptr().cast_mut();
    op.len = 1;
    op.addr = &mut b_addr;
    op.op_flags = AA_IO_PEEK;
    ensure_eq!(
        "R-IO-13",
        lp.submit("peek_send", &mut op, 0),
        Submit::Failed(AA_E_INVALID),
        "io_submit(AA_IO_SENDTO of 1 byte on a UDP socket, op_flags AA_IO_PEEK, flags 0)",
    );
    lp.run_once(0);
    ensure_eq!(
        "R-IO-13",
        lp.log(),
        vec![],
        "the refused peeks, run_once(0): the callbacks"
    );
    ensure_eq!(
        "R-IO-13",
        fds::raw_read(r, &mut buf),
        1,
        "the refused peek of a pipe holding 1 byte, then the kit's read(2) of 4 bytes: its \
         result (the byte still there)",
    );
    lp.finish();
}
