//! `Mutex`, `RwLock`, `Semaphore`: FIFO hand-off, nothing lost or leaked
//! under cancellation (D-29), deadlocks reported.

use std::cell::Cell;
use std::rc::Rc;

use async_std_api::sync::{Mutex, RwLock, Semaphore};
use async_std_api::{delay, run, spawn, suspend, CancelCause, ErrorKind};
use tests::support::{capture_logs, join_cancelled, yield_until, yield_until_waiting, Recorder};

#[test]
fn a_mutex_is_handed_to_waiters_in_order_and_a_later_caller_cannot_barge() {
    // The order the waiters arrive in is the scheduler's (random under
    // chaos); the order they get the lock in must be that one.
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let m = Rc::new(Mutex::new(()));
        let guard = m.lock().unwrap();
        let waiters: Vec<_> = ["b", "c", "d"]
            .into_iter()
            .map(|name| {
                let (m, r) = (m.clone(), r.clone());
                spawn(move || {
                    r.push(format!("{name} asks")); // nothing runs in between
                    let _g = m.lock().unwrap();
                    r.push(format!("{name} holds"));
                    suspend().unwrap(); // hold it across a switch
                })
            })
            .collect();
        let cs: Vec<_> = waiters.iter().map(|w| w.coroutine()).collect();
        yield_until_waiting(&cs.iter().collect::<Vec<_>>());
        drop(guard);
        // Handed to the first waiter, not free: no barging, not even by
        // the releaser.
        assert!(m.is_locked());
        assert!(m.try_lock().is_none());
        let (m2, r2) = (m.clone(), r.clone());
        let late = spawn(move || {
            r2.push("e asks".to_owned());
            let _g = m2.lock().unwrap();
            r2.push("e holds".to_owned());
        });
        for w in waiters {
            w.join().unwrap();
        }
        late.join().unwrap();
        assert!(!m.is_locked());
    })
    .unwrap();
    let events = rec.events();
    let asked: Vec<&str> = events
        .iter()
        .filter_map(|e| e.strip_suffix(" asks"))
        .collect();
    let held: Vec<&str> = events
        .iter()
        .filter_map(|e| e.strip_suffix(" holds"))
        .collect();
    assert_eq!(held, asked, "the lock goes in arrival order: {events:?}");
    assert_eq!(held.last(), Some(&"e"), "{events:?}");
}

#[test]
fn d29_a_cancelled_lock_waiter_leaves_and_the_lock_goes_to_the_next() {
    run(|| {
        let m = Rc::new(Mutex::new(0));
        let guard = m.lock().unwrap();
        let (m1, m2) = (m.clone(), m.clone());
        let first = spawn(move || {
            *m1.lock()? += 1;
            Ok::<_, async_std_api::Cancelled>(())
        });
        let second = spawn(move || *m2.lock().unwrap() += 10);
        yield_until_waiting(&[&first.coroutine(), &second.coroutine()]);
        first.cancel();
        yield_until(|| first.is_finished());
        drop(guard);
        second.join().unwrap();
        let _ = join_cancelled(first);
        assert_eq!(*m.lock().unwrap(), 10);
        assert!(m.try_lock().is_some());
    })
    .unwrap();
}

#[test]
fn d29_a_waiter_handed_the_lock_before_its_cancellation_holds_it() {
    run(|| {
        let m = Rc::new(Mutex::new(Vec::new()));
        let guard = m.lock().unwrap();
        let m1 = m.clone();
        let later = Rc::new(Cell::new(false));
        let l = later.clone();
        let waiter = spawn(move || {
            let mut g = m1.lock().unwrap(); // granted first, cancelled after
            g.push("held");
            l.set(suspend().is_err()); // the cancellation comes here
        });
        yield_until_waiting(&[&waiter.coroutine()]);
        drop(guard); // handed to the waiter
        waiter.cancel(); // in the same tick
        let _ = waiter.join();
        assert!(later.get());
        assert_eq!(*m.lock().unwrap(), ["held"]);
    })
    .unwrap();
}

#[test]
fn a_panic_while_holding_the_lock_releases_it() {
    run(|| {
        let m = Rc::new(Mutex::new(1));
        let m1 = m.clone();
        let h = spawn(move || {
            let _g = m1.lock().unwrap();
            panic!("while locked");
        });
        assert!(h.join().unwrap_err().is_panic());
        assert_eq!(*m.lock().unwrap(), 1);
    })
    .unwrap();
}

#[test]
fn two_mutexes_taken_in_opposite_orders_are_a_deadlock_naming_the_mutexes() {
    let (err, logs) = capture_logs(|| {
        run(|| {
            let (a, b) = (Rc::new(Mutex::new(())), Rc::new(Mutex::new(())));
            let (a1, b1) = (a.clone(), b.clone());
            let other = spawn(move || {
                let _ga = a1.lock().unwrap();
                suspend().unwrap();
                b1.lock().map(|_| ()).map_err(|c| c.cause())
            });
            let _gb = b.lock().unwrap();
            yield_until(|| a.is_locked());
            // Both waiters are resumed with the deadlock. Whichever runs
            // first ends and releases its lock, which may then be handed to
            // the other before it sees its cancellation: it holds the lock
            // and the cancellation waits for its next point (D-29).
            match a.lock() {
                Err(c) => assert_eq!(c.cause(), CancelCause::Deadlock),
                Ok(_held) => {
                    let c = async_std_api::check_cancelled().unwrap_err();
                    assert_eq!(c.cause(), CancelCause::Deadlock);
                }
            }
            drop(_gb);
            // The other waiter was resumed with the deadlock too; having
            // caught it and returned, it ended cancelled (D-25).
            let theirs = other.join().unwrap_err();
            assert_eq!(theirs.cancelled().unwrap().cause(), CancelCause::Deadlock);
        })
        .unwrap_err()
    });
    assert_eq!(err.kind(), ErrorKind::Deadlock);
    assert!(
        logs.lines()
            .iter()
            .any(|l| l.contains("lock sync::Mutex (created at")),
        "{logs:#?}"
    );
}

#[test]
fn readers_share_a_rwlock_and_a_waiting_writer_holds_later_readers_back() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let lock = Rc::new(RwLock::new(0));
        let g1 = lock.read().unwrap();
        let g2 = lock.read().unwrap(); // two readers at once
        assert!(lock.try_write().is_none());
        let (l, rw) = (lock.clone(), r.clone());
        let writer = spawn(move || {
            *l.write().unwrap() += 1;
            rw.push("writer");
        });
        yield_until_waiting(&[&writer.coroutine()]);
        // A reader now queues behind the waiting writer (no starvation).
        assert!(lock.try_read().is_none());
        let (l, rr) = (lock.clone(), r.clone());
        let reader = spawn(move || {
            let v = *l.read().unwrap();
            rr.push(format!("reader saw {v}"));
        });
        yield_until_waiting(&[&reader.coroutine()]);
        drop((g1, g2));
        writer.join().unwrap();
        reader.join().unwrap();
    })
    .unwrap();
    rec.assert_events(&["writer", "reader saw 1"]);
}

#[test]
fn readers_behind_a_writer_that_gave_up_are_let_in() {
    run(|| {
        let lock = Rc::new(RwLock::new(()));
        let g = lock.read().unwrap();
        let (l1, l2) = (lock.clone(), lock.clone());
        let writer = spawn(move || l1.write().map(|_| ()));
        yield_until_waiting(&[&writer.coroutine()]);
        let reader = spawn(move || l2.read().map(|_| "read"));
        yield_until_waiting(&[&reader.coroutine()]);
        writer.cancel();
        let _ = join_cancelled(writer);
        assert_eq!(reader.join().unwrap().unwrap(), "read");
        drop(g);
        assert!(lock.try_write().is_some());
    })
    .unwrap();
}

#[test]
fn semaphore_permits_are_conserved_through_cancellations() {
    run(|| {
        let sem = Rc::new(Semaphore::new(3));
        let holders: Vec<_> = (0..20)
            .map(|i| {
                let s = sem.clone();
                spawn(move || {
                    let _p = s.acquire_many(1 + i % 3)?;
                    delay(1)?;
                    Ok::<_, async_std_api::Cancelled>(())
                })
            })
            .collect();
        suspend().unwrap();
        for (i, h) in holders.iter().enumerate() {
            if i % 4 == 0 {
                h.cancel();
            }
        }
        for h in holders {
            let _ = h.join();
        }
        assert_eq!(sem.available_permits(), 3);
    })
    .unwrap();
}

#[test]
fn a_large_request_at_the_head_is_not_overtaken_by_a_small_one() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let sem = Rc::new(Semaphore::new(2));
        let held = sem.acquire().unwrap(); // 1 left
        let (s, r1) = (sem.clone(), r.clone());
        let big = spawn(move || {
            let _p = s.acquire_many(2).unwrap();
            r1.push("big");
        });
        yield_until_waiting(&[&big.coroutine()]);
        // One permit is free, but the big request came first.
        assert!(sem.try_acquire().is_none());
        let (s, r2) = (sem.clone(), r.clone());
        let small = spawn(move || {
            let _p = s.acquire().unwrap();
            r2.push("small");
        });
        yield_until_waiting(&[&small.coroutine()]);
        drop(held);
        big.join().unwrap();
        small.join().unwrap();
        let p = sem.acquire_many(2).unwrap();
        assert_eq!(p.num_permits(), 2);
        p.forget();
        assert_eq!(sem.available_permits(), 0);
    })
    .unwrap();
    rec.assert_events(&["big", "small"]);
}
