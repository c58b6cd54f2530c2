//! Tier: name resolution (`AA_CAP_DNS`). A lookup calls back once, from a
//! later `run_once`, with its addresses or a status; a pending lookup keeps
//! the loop alive; cancel delivers the reason once and drops the late
//! result; a disposed lookup never calls back and does not keep `destroy`
//! from succeeding in the end.
//!
//! Only `localhost` and names under `.invalid` are looked up: the cases
//! never depend on a name server.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::{ensure, ensure_eq, rule_failed};
use async_abi::*;

use super::harness::{Loop, Rec};
use super::plugin::Reactor;

const REASON: AaStatus = -4444;

/// The one lookup record of `tag`, once the loop delivered it.
#[track_caller]
fn result_of(lp: &Loop, tag: &'static str) -> (AaStatus, Vec<SocketAddr>) {
    lp.run_until_tag(tag);
    lp.run_once(0);
    let log = lp.log();
    ensure_eq!("R-DNS-1", log.len(), 1, "one callback: {log:?}");
    match &log[0] {
        Rec::Dns(t, status, addrs) if *t == tag => (*status, addrs.clone()),
        other => rule_failed!("R-DNS-1", "not a lookup record: {other:?}"),
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
    ensure_eq!("R-DNS-1", lp.log(), vec![], "called back outside run_once");
    let (status, addrs) = result_of(&lp, "d");
    ensure_eq!("R-DNS-1", status, 0, "{}", lp.last_error());
    ensure!(
        "R-DNS-1",
        addrs.contains(&SocketAddr::from((Ipv4Addr::LOCALHOST, 80))),
        "{addrs:?}"
    );
    ensure!(
        "R-DNS-1",
        addrs.iter().all(SocketAddr::is_ipv4),
        "{addrs:?}"
    );
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
    let (status, addrs) = result_of(&lp, "d");
    ensure_eq!("R-DNS-1", status, 0);
    let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
    ensure!(
        "R-DNS-1",
        ips.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)),
        "{addrs:?}"
    );
    ensure!("R-DNS-1", ips.iter().all(IpAddr::is_loopback), "{addrs:?}");
    for (i, a) in addrs.iter().enumerate() {
        ensure!(
            "R-DNS-1",
            !addrs[i + 1..].contains(a),
            "{a} listed twice: {addrs:?}"
        );
    }
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
    ensure_eq!("R-DNS-2", result_of(&lp, "d"), (AA_E_DNS_NONAME, vec![]));
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
    ensure_eq!("R-EV-1", lp.cancel(d, REASON), AA_OK);
    ensure_eq!(
        "R-EV-1",
        lp.alive(),
        1,
        "the cancellation callback is still to come"
    );
    ensure_eq!("R-EV-1", result_of(&lp, "d"), (REASON, vec![]));
    ensure_eq!("R-EV-1", lp.alive(), 0);
    ensure_eq!(
        "R-EV-1",
        lp.cancel(d, REASON),
        AA_E_INVALID,
        "nothing is pending"
    );
    // Give the resolver time to answer: its result must not be delivered.
    for _ in 0..10 {
        lp.run_once(20_000_000);
    }
    ensure_eq!("R-EV-1", lp.log().len(), 1, "{:?}", lp.log());
    lp.finish_when_idle();
}

/// Checks that a pending lookup counts in `alive()` until its callback.
pub fn pending_lookup_counts_in_alive(reactor: &Reactor) {
    if super::skip_without(reactor, AA_CAP_DNS, "pending_lookup_counts_in_alive") {
        return;
    }
    let lp = Loop::new(reactor);
    lp.dns("d", "localhost", "", None);
    ensure_eq!("R-LOOP-6", lp.alive(), 1);
    lp.run_until_tag("d");
    ensure_eq!("R-LOOP-6", lp.alive(), 0);
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
    ensure_eq!("R-DNS-4", lp.alive(), 0);
    lp.run_once(0);
    ensure_eq!("R-DNS-4", lp.log(), vec![]);
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
        Some(AA_E_INVALID)
    );
    ensure_eq!(
        "R-DNS-3",
        lp.try_dns("d", "localhost", "", Some((12345, 0))).err(),
        Some(AA_E_INVALID)
    );
    ensure_eq!(
        "R-DNS-3",
        lp.try_dns("d", "localhost", "", Some((libc::AF_INET, 999)))
            .err(),
        Some(AA_E_INVALID)
    );
    ensure_eq!("R-DNS-3", lp.alive(), 0);
    lp.run_once(0);
    ensure_eq!("R-DNS-3", lp.log(), vec![]);
    lp.finish_when_idle();
}
