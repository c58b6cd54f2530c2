//! Channels (CH1-CH4 in `sync::channel`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use async_std_api::combinators::{any, CombineErrorKind};
use async_std_api::sync::{channel, unbounded, TryRecvError, TrySendError};
use async_std_api::{current, run, spawn, suspend, timeout, ErrorKind};
use tests::support::{join_cancelled, yield_until, yield_until_waiting, Recorder};

#[test]
fn ch1_each_senders_order_is_kept_and_nothing_is_lost_or_repeated() {
    run(|| {
        let (tx, rx) = channel(2);
        let senders: Vec<_> = (0..3)
            .map(|s| {
                let tx = tx.clone();
                spawn(move || {
                    for i in 0..100 {
                        tx.send((s, i)).unwrap();
                        if i % 7 == 0 {
                            suspend().unwrap();
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let mut per_sender: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for (s, i) in rx.iter() {
            per_sender.entry(s).or_default().push(i);
        }
        for h in senders {
            h.join().unwrap();
        }
        let expected: Vec<i32> = (0..100).collect();
        assert_eq!(per_sender.len(), 3);
        for (s, got) in per_sender {
            assert_eq!(got, expected, "sender {s}");
        }
    })
    .unwrap();
}

#[test]
fn capacity_zero_is_a_rendezvous_the_send_returns_when_the_message_is_taken() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let (tx, rx) = channel(0);
        let r1 = r.clone();
        let sender = spawn(move || {
            r1.push("sending");
            tx.send("m").unwrap();
            r1.push("send returned");
        });
        yield_until_waiting(&[&sender.coroutine()]);
        r.push("receiving");
        r.push(format!("got {}", rx.recv().unwrap()));
        sender.join().unwrap();
    })
    .unwrap();
    rec.assert_events(&["sending", "receiving", "got m", "send returned"]);
}

#[test]
fn try_send_and_try_recv_never_wait_and_give_values_back() {
    run(|| {
        let (tx, rx) = channel(1);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(1).unwrap();
        match tx.try_send(2) {
            Err(TrySendError::Full(v)) => assert_eq!(v, 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(rx.try_recv(), Ok(1));
        tx.close();
        match tx.try_send(3) {
            Err(TrySendError::Closed(v)) => assert_eq!(v, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    })
    .unwrap();
}

#[test]
fn ch3_closing_lets_receivers_drain_then_end_and_gives_blocked_senders_their_value() {
    run(|| {
        let (tx, rx) = channel(2);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        let t2 = tx.clone();
        let blocked = spawn(move || t2.send(3).map_err(|e| e.into_inner()));
        yield_until_waiting(&[&blocked.coroutine()]);
        rx.close();
        assert_eq!(blocked.join().unwrap(), Err(3), "the value comes back");
        assert_eq!(rx.recv().unwrap(), 1);
        assert_eq!(rx.recv().unwrap(), 2);
        let end = rx.recv().unwrap_err();
        assert!(end.is_closed());
        assert_eq!(end.to_string(), "receiving on a closed and empty channel");
        let e = tx.send(4).unwrap_err();
        assert!(e.cancelled().is_none());
        assert_eq!(e.value, 4);
    })
    .unwrap();
}

#[test]
fn ch3_the_last_sender_dropped_ends_the_receivers_after_the_buffer() {
    run(|| {
        let (tx, rx) = unbounded::<u8>();
        let waiting_rx = rx.clone();
        let waiter = spawn(move || waiting_rx.recv().map_err(|e| e.is_closed()));
        yield_until_waiting(&[&waiter.coroutine()]);
        drop(tx);
        assert_eq!(waiter.join().unwrap(), Err(true));
        assert!(rx.recv().unwrap_err().is_closed());
    })
    .unwrap();
}

#[test]
fn ch3_the_last_receiver_dropped_gives_blocked_and_later_senders_their_values() {
    run(|| {
        let (tx, rx) = channel(0);
        let t2 = tx.clone();
        let blocked = spawn(move || t2.send("parked").map_err(|e| e.into_inner()));
        yield_until_waiting(&[&blocked.coroutine()]);
        drop(rx);
        assert_eq!(blocked.join().unwrap(), Err("parked"));
        assert!(tx.is_closed());
        assert_eq!(tx.send("late").unwrap_err().value, "late");
    })
    .unwrap();
}

#[test]
fn many_receivers_each_message_goes_to_exactly_one() {
    run(|| {
        let (tx, rx) = channel(4);
        let got = Rc::new(RefCell::new(Vec::new()));
        let receivers: Vec<_> = (0..3)
            .map(|_| {
                let (rx, got) = (rx.clone(), got.clone());
                spawn(move || {
                    for v in rx.iter() {
                        got.borrow_mut().push(v);
                        suspend().unwrap();
                    }
                })
            })
            .collect();
        drop(rx);
        for i in 0..300 {
            tx.send(i).unwrap();
        }
        drop(tx);
        for r in receivers {
            r.join().unwrap();
        }
        let mut got = got.borrow().clone();
        got.sort();
        assert_eq!(got, (0..300).collect::<Vec<_>>());
    })
    .unwrap();
}

#[test]
fn d29_a_cancelled_receiver_takes_nothing_and_the_next_one_gets_the_message() {
    run(|| {
        let (tx, rx) = channel::<&str>(1);
        let r1 = rx.clone();
        let first = spawn(move || r1.recv());
        let r2 = rx.clone();
        let second = spawn(move || r2.recv());
        yield_until_waiting(&[&first.coroutine(), &second.coroutine()]);
        first.cancel();
        let c = join_cancelled(first);
        assert_eq!(c.cause(), async_std_api::CancelCause::Explicit);
        tx.send("only").unwrap();
        assert_eq!(second.join().unwrap().unwrap(), "only");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    })
    .unwrap();
}

#[test]
fn d29_a_cancelled_blocked_sender_gets_its_value_back_and_the_order_holds() {
    run(|| {
        let (tx, rx) = channel(1);
        tx.send(0).unwrap();
        let (t1, t2) = (tx.clone(), tx.clone());
        let a = spawn(move || t1.send(1).map_err(|e| (e.cancelled().is_some(), e.value)));
        let b = spawn(move || t2.send(2));
        yield_until_waiting(&[&a.coroutine(), &b.coroutine()]);
        a.cancel();
        yield_until(|| a.is_finished());
        assert_eq!(rx.recv().unwrap(), 0);
        assert_eq!(
            rx.recv().unwrap(),
            2,
            "b moved up; a's value did not get in"
        );
        b.join().unwrap().unwrap();
        let err = a.join().unwrap_err();
        assert!(err.is_cancelled(), "a ended cancelled (D-25)");
    })
    .unwrap();
}

#[test]
fn d29_a_receiver_handed_a_message_before_its_cancellation_keeps_it() {
    run(|| {
        let (tx, rx) = unbounded::<u32>();
        let got = Rc::new(RefCell::new(None));
        let g = got.clone();
        let receiver = spawn(move || {
            let v = rx.recv();
            // The cancellation was not lost: it waits for the next point.
            let later = suspend();
            *g.borrow_mut() = Some((v.map_err(|e| e.to_string()), later.is_err()));
        });
        yield_until_waiting(&[&receiver.coroutine()]);
        // Same tick: the message is handed over, then the cancel arrives.
        tx.send(7).unwrap();
        receiver.cancel();
        let _ = receiver.join();
        assert_eq!(*got.borrow(), Some((Ok(7), true)));
    })
    .unwrap();
}

#[test]
fn ch4_any_over_several_receivers_takes_one_message_and_loses_none() {
    run(|| {
        let (tx1, rx1) = unbounded();
        let (tx2, rx2) = unbounded();
        tx1.send("a").unwrap();
        tx2.send("b").unwrap();
        // One outcome, then the combinator is dropped: the other message
        // must still be in its channel.
        let first = any([&rx1, &rx2]).join().unwrap();
        assert_eq!(first, "a");
        assert_eq!(rx2.try_recv(), Ok("b"));
        // Waiting on both while empty: the first message that comes wins.
        let t2 = tx2.clone();
        spawn(move || t2.send("late").unwrap());
        assert_eq!(any([&rx1, &rx2]).join().unwrap(), "late");
    })
    .unwrap();
}

#[test]
fn ch4_a_receive_bounded_by_a_timeout_ends_await_cancelled_and_the_channel_goes_on() {
    run(|| {
        let (tx, rx) = unbounded::<u8>();
        let err = any([&rx]).until(timeout(10)).join().unwrap_err();
        assert_eq!(err.kind(), CombineErrorKind::AwaitCancelled);
        tx.send(1).unwrap();
        assert_eq!(rx.recv().unwrap(), 1);
    })
    .unwrap();
}

#[test]
fn no_message_is_lost_or_repeated_when_receivers_are_cancelled_at_every_point() {
    run(|| {
        let (tx, rx) = channel(3);
        let received = Rc::new(RefCell::new(Vec::new()));
        let mut cancelled = 0;
        let producer = spawn(move || {
            for i in 0..500 {
                tx.send(i).unwrap();
            }
        });
        // Receivers that each take a few messages and are cancelled at
        // varying points; whatever one was handed is kept (D-29).
        let mut round = 0;
        while !producer.is_finished() || !rx.is_empty() {
            let (rx2, got) = (rx.clone(), received.clone());
            let h = spawn(move || {
                while let Ok(v) = rx2.recv() {
                    got.borrow_mut().push(v);
                }
            });
            for _ in 0..(round % 5) {
                suspend().unwrap();
            }
            h.cancel();
            if h.join().is_err() {
                cancelled += 1;
            }
            round += 1;
        }
        producer.join().unwrap();
        while let Ok(v) = rx.try_recv() {
            received.borrow_mut().push(v);
        }
        let mut got = received.borrow().clone();
        got.sort();
        assert_eq!(got, (0..500).collect::<Vec<_>>());
        assert!(cancelled > 0);
    })
    .unwrap();
}

#[test]
fn a_receive_that_nothing_can_complete_is_a_deadlock() {
    let err = run(|| {
        let (_tx, rx) = unbounded::<u8>();
        let c = rx.recv().unwrap_err();
        assert_eq!(
            c.cancelled().unwrap().cause(),
            async_std_api::CancelCause::Deadlock
        );
        assert!(current().is_cancellation_requested());
    })
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Deadlock);
}

#[test]
fn ch4_recv_timeout_returns_a_message_times_out_and_loses_nothing() {
    use async_std_api::sync::RecvTimeoutError;
    use std::time::Duration;
    run(|| {
        let (tx, rx) = channel::<u32>(4);
        // Empty and open: the timeout.
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(5)),
            Err(RecvTimeoutError::Timeout)
        );
        // Buffered: returned even with a zero timeout.
        tx.send(1).unwrap();
        assert_eq!(rx.recv_timeout(Duration::ZERO), Ok(1));
        // Sent while it waits: received (the deadline is generous).
        let sender = spawn({
            let tx = tx.clone();
            move || tx.send(2).unwrap()
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(2));
        sender.join().unwrap();
        // A message sent after a timeout stays for the next receive.
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(1)),
            Err(RecvTimeoutError::Timeout)
        );
        tx.send(3).unwrap();
        assert_eq!(rx.try_recv(), Ok(3));
        // Closed and drained.
        drop(tx);
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(30)),
            Err(RecvTimeoutError::Closed)
        );
    })
    .unwrap();
}

#[test]
fn ch4_a_receiver_cancelled_in_recv_timeout_gets_its_cancellation_and_takes_nothing() {
    use async_std_api::sync::RecvTimeoutError;
    use std::time::Duration;
    run(|| {
        let (tx, rx) = channel::<u32>(1);
        let rx = Rc::new(rx);
        let r = rx.clone();
        let waiter = spawn(move || match r.recv_timeout(Duration::from_secs(30)) {
            Err(RecvTimeoutError::Cancelled(c)) => c.cause(),
            other => panic!("expected the cancellation, got {other:?}"),
        });
        yield_until_waiting(&[&waiter.coroutine()]);
        waiter.cancel();
        assert_eq!(
            join_cancelled(waiter).cause(),
            async_std_api::CancelCause::Explicit
        );
        tx.send(9).unwrap();
        assert_eq!(rx.try_recv(), Ok(9), "the message stays in the channel");
    })
    .unwrap();
}
