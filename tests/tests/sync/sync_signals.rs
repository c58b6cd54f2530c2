//! `Notify` and `Barrier`.

use std::rc::Rc;

use async_std_api::sync::{Barrier, Notify};
use async_std_api::{run, spawn};
use tests::support::{join_cancelled, yield_until_waiting, Recorder};

#[test]
fn notify_one_stores_a_permit_when_nobody_waits() {
    run(|| {
        let n = Notify::new();
        n.notify_one();
        n.notify_one(); // still one permit
        n.notified().unwrap(); // consumed at once
        let n = Rc::new(n);
        let n1 = n.clone();
        let waiter = spawn(move || n1.notified());
        yield_until_waiting(&[&waiter.coroutine()]);
        n.notify_one();
        waiter.join().unwrap().unwrap();
    })
    .unwrap();
}

#[test]
fn notify_waiters_wakes_everyone_waiting_now_and_stores_nothing() {
    run(|| {
        let n = Rc::new(Notify::new());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let n = n.clone();
                spawn(move || n.notified())
            })
            .collect();
        let cs: Vec<_> = waiters.iter().map(|w| w.coroutine()).collect();
        yield_until_waiting(&cs.iter().collect::<Vec<_>>());
        n.notify_waiters();
        for w in waiters {
            w.join().unwrap().unwrap();
        }
        // Nothing stored: a new waiter waits.
        let n1 = n.clone();
        let late = spawn(move || n1.notified());
        yield_until_waiting(&[&late.coroutine()]);
        assert!(!late.is_finished());
        late.cancel();
        let _ = join_cancelled(late);
    })
    .unwrap();
}

#[test]
fn d29_notify_one_to_a_cancelled_waiter_goes_to_the_next() {
    run(|| {
        let n = Rc::new(Notify::new());
        let (n1, n2) = (n.clone(), n.clone());
        let first = spawn(move || n1.notified());
        let second = spawn(move || n2.notified());
        yield_until_waiting(&[&first.coroutine(), &second.coroutine()]);
        first.cancel();
        let _ = join_cancelled(first);
        n.notify_one();
        second.join().unwrap().unwrap();
    })
    .unwrap();
}

#[test]
fn a_barrier_releases_each_round_together_with_one_leader() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let b = Rc::new(Barrier::new(3));
        let parties: Vec<_> = (0..3)
            .map(|i| {
                let (b, r) = (b.clone(), r.clone());
                spawn(move || {
                    let mut leaders = 0;
                    for round in 0..2 {
                        r.push(format!("{i} arrives {round}"));
                        leaders += usize::from(b.wait().unwrap().is_leader());
                    }
                    leaders
                })
            })
            .collect();
        let leaders: usize = parties.into_iter().map(|p| p.join().unwrap()).sum();
        assert_eq!(leaders, 2, "one per round");
    })
    .unwrap();
    // Nobody arrives at round 1 before everyone arrived at round 0.
    let events = rec.events();
    let last_round0 = events.iter().rposition(|e| e.ends_with(" 0")).unwrap();
    let first_round1 = events.iter().position(|e| e.ends_with(" 1")).unwrap();
    assert!(last_round0 < first_round1, "{events:?}");
}

#[test]
fn a_cancelled_barrier_waiter_no_longer_counts_as_arrived() {
    run(|| {
        let b = Rc::new(Barrier::new(2));
        let b1 = b.clone();
        let quitter = spawn(move || b1.wait().map(|r| r.is_leader()));
        yield_until_waiting(&[&quitter.coroutine()]);
        quitter.cancel();
        let _ = join_cancelled(quitter);
        // One arrival is not enough now: a second party must come.
        let b2 = b.clone();
        let other = spawn(move || b2.wait().map(|r| r.is_leader()));
        yield_until_waiting(&[&other.coroutine()]);
        assert!(b.wait().unwrap().is_leader());
        assert!(!other.join().unwrap().unwrap());
    })
    .unwrap();
}
