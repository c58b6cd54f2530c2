//! D-35: other threads reaching coroutines (`ThreadResolver`,
//! `ThreadSender`, TH1-TH4 in `sync::thread`).

use std::sync::mpsc;

use async_std_api::sync::{channel, Deferred, DeferredErrorKind};
use async_std_api::{run, spawn, spawn_blocking};
use tests::support::yield_until_waiting;

#[test]
fn d35_a_thread_resolves_a_deferred_its_waiter_is_not_deadlocked() {
    let (gate, opened) = mpsc::channel::<()>();
    let v = run(move || {
        let (deferred, resolver) = Deferred::new();
        let resolver = resolver.for_thread().unwrap();
        let t = std::thread::spawn(move || {
            opened.recv().unwrap(); // until the waiter waits
            resolver.resolve(String::from("from a thread"));
        });
        let waiter = spawn(move || deferred.wait().unwrap());
        yield_until_waiting(&[&waiter.coroutine()]);
        gate.send(()).unwrap();
        let v = waiter.join().unwrap();
        t.join().unwrap();
        v
    })
    .unwrap();
    assert_eq!(v, "from a thread");
}

#[test]
fn d35_a_thread_rejects_and_a_dropped_thread_resolver_abandons() {
    run(|| {
        let (d, r) = Deferred::<u8>::new();
        let r = r.for_thread().unwrap();
        std::thread::spawn(move || r.reject("worker failed"))
            .join()
            .unwrap();
        let e = d.wait().unwrap_err();
        assert_eq!(e.kind(), DeferredErrorKind::Rejected);
        assert!(e.to_string().contains("worker failed"), "{e}");

        let (d, r) = Deferred::<u8>::new();
        let r = r.for_thread().unwrap();
        // The thread panics holding it: its drop abandons the deferred.
        let _ = std::thread::spawn(move || {
            let _r = r;
            panic!("worker died");
        })
        .join();
        assert_eq!(d.wait().unwrap_err().kind(), DeferredErrorKind::Abandoned);
    })
    .unwrap();
}

#[test]
fn d35_one_threads_messages_arrive_in_order_through_a_full_channel() {
    let got = run(|| {
        let (tx, rx) = channel::<u32>(1); // back-pressure on every message
        let ttx = tx.for_thread().unwrap();
        drop(tx);
        let t = std::thread::spawn(move || {
            for i in 0..2_000 {
                ttx.send(i).unwrap();
            }
        });
        let got: Vec<u32> = rx.iter().collect();
        t.join().unwrap();
        got
    })
    .unwrap();
    assert_eq!(got, (0..2_000).collect::<Vec<_>>());
}

#[test]
fn d35_several_threads_lose_nothing_and_keep_their_own_order() {
    let got = run(|| {
        let (tx, rx) = channel::<(u32, u32)>(8);
        let ttx = tx.for_thread().unwrap();
        drop(tx);
        let threads: Vec<_> = (0..4)
            .map(|k| {
                let ttx = ttx.clone();
                std::thread::spawn(move || {
                    for i in 0..500 {
                        ttx.send((k, i)).unwrap();
                    }
                })
            })
            .collect();
        drop(ttx);
        let got: Vec<(u32, u32)> = rx.iter().collect();
        for t in threads {
            t.join().unwrap();
        }
        got
    })
    .unwrap();
    assert_eq!(got.len(), 2_000);
    for k in 0..4 {
        let mine: Vec<u32> = got.iter().filter(|m| m.0 == k).map(|m| m.1).collect();
        assert_eq!(mine, (0..500).collect::<Vec<_>>(), "thread {k}'s order");
    }
}

#[test]
fn d35_a_closed_channel_gives_the_thread_its_value_back() {
    run(|| {
        let (tx, rx) = channel::<u32>(1);
        let ttx = tx.for_thread().unwrap();
        drop(rx);
        // Not `std::thread::spawn(..).join()`: that would block the loop the
        // send needs; a pool thread is not a runtime's thread.
        let r = spawn_blocking(move || ttx.send(7)).join().unwrap();
        assert_eq!(r.unwrap_err().value, Some(7));
        drop(tx);
    })
    .unwrap();
}

#[test]
fn d35_a_thread_sender_refuses_to_block_a_runtime_thread() {
    run(|| {
        let (tx, _rx) = channel::<u32>(1);
        let ttx = tx.for_thread().unwrap();
        let h = spawn(move || {
            let _ = ttx.send(1);
        });
        let e = h.join().unwrap_err();
        assert!(
            e.panic_message()
                .unwrap()
                .starts_with("ThreadSender::send called on a runtime's thread"),
            "{e}"
        );
    })
    .unwrap();
}

#[test]
fn d35_after_the_runtime_ends_a_thread_send_fails_without_its_value() {
    let ttx = run(|| {
        let (tx, rx) = channel::<u32>(4);
        std::mem::forget(rx); // keep the channel open; the runtime ends anyway
        tx.for_thread().unwrap()
    })
    .unwrap();
    let r = std::thread::spawn(move || ttx.send(3)).join().unwrap();
    assert_eq!(r.unwrap_err().value, None);
}
