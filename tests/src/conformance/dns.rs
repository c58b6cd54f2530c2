//! Tier: name resolution (`AA_CAP_DNS`). A lookup calls back once, from a
//! later `run_once`, with its addresses or a status; a pending lookup keeps
//! the loop alive; cancel delivers the reason once and drops the late
//! result; a disposed lookup never calls back and does not keep `destroy`
//! from succeeding in the end.
//!
//! Only `localhost` and names under `.invalid` are looked up: the cases
//! never depend on a name server.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::{ensure, ensure_eq};
use async_abi::*;

use super::harness::{Alive, Loop, Rec};
use super::plugin::Reactor;

const REASON: AaStatus = -4444;

/// The one lookup record of `tag`, once the loop delivered it.
/// Runs until lookup `tag` called back, then once more; returns the log.
#[track_caller]
fn result_of(lp: &Loop, tag: &'static str) -> Vec<Rec> {
    lp.run_until_tag(tag);
    lp.run_once(0);
    lp.log()
}

/// The status and addresses of the one lookup callback in `log`, if that
/// is all it holds.
fn one_lookup(log: &[Rec]) -> Option<(AaStatus, Vec<SocketAddr>)> {
    match log {
        [Rec::Dns(_, status, addrs)] => Some((*status, addrs.clone())),
        _ => None,
    }
}

/// Checks that `localhost` with `AF_INET` hints resolves to `127.0.0.1`,
/// with the service's port, and to IPv4 addresses only.
pub fn localhost_with_af_inet_resolves_to_127_0_0_1(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_DNS,
        "localhost_with_af_inet_resolves_to_127_0_0_1",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    lp.dns(
        "d",
        "localhost",
        "80",
        Some((libc::AF_INET, libc::SOCK_STREAM)),
    );
    ensure_eq!(
        "R-DNS-1",
        lp.log(),
        vec![],
        "dns_resolve(\"localhost\", \"80\", hints AF_INET, SOCK_STREAM), before any run_once: \
         the callbacks",
    );
    let log = result_of(&lp, "d");
    let did = "dns_resolve(\"localhost\", \"80\", hints AF_INET, SOCK_STREAM), run_once until \
               a callback, run_once(0)";
    let ok = one_lookup(&log).is_some_and(|(status, addrs)| {
        status == AA_OK
            && addrs.contains(&SocketAddr::from((Ipv4Addr::LOCALHOST, 80)))
            && addrs.iter().all(SocketAddr::is_ipv4)
    });
    ensure!("R-DNS-1", ok;
        did: did,
        wants: "one callback with AA_OK and IPv4 addresses only, among them 127.0.0.1:80",
        got: format!("the callbacks {log:?}, last_error_message {:?}", lp.last_error()));
    lp.finish_when_idle();
}

/// Checks that `localhost` without hints includes `127.0.0.1` and only
/// loopback addresses, each once.
pub fn localhost_with_af_unspec_includes_127_0_0_1(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_DNS,
        "localhost_with_af_unspec_includes_127_0_0_1",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    lp.dns("d", "localhost", "", None);
    let log = result_of(&lp, "d");
    let did = "dns_resolve(\"localhost\", \"\", hints NULL (AF_UNSPEC)), run_once until a \
               callback, run_once(0)";
    let (status, addrs) = one_lookup(&log).unwrap_or((AA_OK, Vec::new()));
    let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
    let ok = one_lookup(&log).is_some()
        && status == AA_OK
        && ips.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST))
        && ips.iter().all(IpAddr::is_loopback)
        && addrs
            .iter()
            .enumerate()
            .all(|(i, a)| !addrs[i + 1..].contains(a));
    ensure!("R-DNS-1", ok;
        did: did,
        wants: "one callback with AA_OK and loopback addresses, each once, among them 127.0.0.1",
        got: format!("the callbacks {log:?}"));
    lp.finish_when_idle();
}

/// Checks that a name under `.invalid` fails with `AA_E_DNS_NONAME` and no
/// addresses.
pub fn name_under_invalid_fails_with_dns_noname(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_DNS,
        "name_under_invalid_fails_with_dns_noname",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    lp.dns("d", "no-such-host.invalid", "", None);
    ensure_eq!(
        "R-DNS-2",
        result_of(&lp, "d"),
        vec![Rec::Dns("d", AA_E_DNS_NONAME, vec![])],
        "dns_resolve(\"no-such-host.invalid\", \"\", hints NULL), run_once until a callback, \
         run_once(0): the callbacks",
    );
    lp.finish_when_idle();
}

/// Checks that cancelling a pending lookup calls it once with the reason,
/// and that the resolver's late result is dropped.
pub fn cancel_of_a_pending_lookup_delivers_the_reason_once(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_DNS,
        "cancel_of_a_pending_lookup_delivers_the_reason_once",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let d = lp.dns("d", "localhost", "", None);
    ensure_eq!(
        "R-EV-1",
        lp.cancel(d, REASON),
        AA_OK,
        "dns_resolve(\"localhost\", \"\", hints NULL), cancel(the lookup, reason -4444): its \
         status",
    );
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(1),
        "dns_resolve(\"localhost\"), cancel(reason -4444): alive() (the reason's callback is \
         still to come)",
    );
    ensure_eq!(
        "R-EV-1",
        result_of(&lp, "d"),
        vec![Rec::Dns("d", REASON, vec![])],
        "dns_resolve(\"localhost\", \"\", hints NULL), cancel(the lookup, reason -4444), \
         run_once until a callback, run_once(0): the callbacks",
    );
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        Alive(0),
        "dns_resolve(\"localhost\"), cancel(reason -4444), the reason delivered: alive()"
    );
    ensure_eq!(
        "R-EV-1",
        lp.cancel(d, REASON),
        AA_E_INVALID,
        "dns_resolve(\"localhost\"), cancel(reason -4444), the reason delivered, then a second \
         cancel(reason -4444): its status",
    );
    // Give the resolver time to answer: its result must not be delivered.
    for _ in 0..10 {
        lp.run_once(20_000_000);
    }
    ensure_eq!(
        "R-EV-1",
        lp.log().len(),
        1,
        "dns_resolve(\"localhost\"), cancel(reason -4444), the reason delivered, run_once(20 ms) \
         ten times: the callbacks in {:?}",
        lp.log(),
    );
    lp.finish_when_idle();
}

/// Checks that a pending lookup counts in `alive()` until its callback.
pub fn pending_lookup_counts_in_alive(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_DNS, "pending_lookup_counts_in_alive") {
        return;
    }
    let lp = Loop::new(reactor);
    lp.dns("d", "localhost", "", None);
    ensure_eq!(
        "R-LOOP-6",
        lp.alive(),
        Alive(1),
        "dns_resolve(\"localhost\", \"\", hints NULL): alive()"
    );
    lp.run_until_tag("d");
    ensure_eq!(
        "R-LOOP-6",
        lp.alive(),
        Alive(0),
        "dns_resolve(\"localhost\", \"\", hints NULL), run_once until its callback: alive()"
    );
    lp.finish_when_idle();
}

/// Checks that a disposed pending lookup never calls back and that
/// `destroy` returns `AA_OK` in the end (`AA_E_BUSY` meanwhile is allowed).
pub fn dispose_of_a_pending_lookup_then_destroy_succeeds(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_DNS,
        "dispose_of_a_pending_lookup_then_destroy_succeeds",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    let d = lp.dns("d", "localhost", "", None);
    lp.dispose(d);
    ensure_eq!(
        "R-DNS-4",
        lp.alive(),
        Alive(0),
        "dns_resolve(\"localhost\", \"\", hints NULL), dispose(the lookup): alive()"
    );
    lp.run_once(0);
    ensure_eq!(
        "R-DNS-4",
        lp.log(),
        vec![],
        "dns_resolve(\"localhost\", \"\", hints NULL), dispose(the lookup), run_once(0): the \
         callbacks",
    );
    lp.finish_when_idle();
}

/// Checks that malformed lookups fail with `AA_E_INVALID` and no callback
/// (AA-R8): no node and no service, an unknown family or socket type.
pub fn malformed_lookups_fail_without_callback(reactor: &Reactor) {
    if super::skip_without(
        reactor,
        AA_CAP_DNS,
        "malformed_lookups_fail_without_callback",
    ) {
        return;
    }
    let lp = Loop::new(reactor);
    ensure_eq!(
        "R-DNS-3",
        lp.try_dns("d", "", "", None).err(),
        Some(AA_E_INVALID),
        "dns_resolve(node \"\", service \"\", hints NULL): its status (None: created)"
    );
    ensure_eq!(
        "R-DNS-3",
        lp.try_dns("d", "localhost", "", Some((12345, 0))).err(),
        Some(AA_E_INVALID),
        "dns_resolve(\"localhost\", \"\", hints family 12345, socktype 0): its status (None: \
         created)",
    );
    ensure_eq!(
        "R-DNS-3",
        lp.try_dns("d", "localhost", "", Some((libc::AF_INET, 999)))
            .err(),
        Some(AA_E_INVALID),
        "dns_resolve(\"localhost\", \"\", hints AF_INET, socktype 999): its status (None: created)"
    );
    ensure_eq!(
        "R-DNS-3",
        lp.alive(),
        Alive(0),
        "the refused dns_resolve calls: alive()"
    );
    lp.run_once(0);
    ensure_eq!(
        "R-DNS-3",
        lp.log(),
        vec![],
        "the refused dns_resolve calls, run_once(0): the callbacks"
    );
    lp.finish_when_idle();
}
