//! `LoopSender`: a channel of one loop fed from a coroutine of another,
//! which suspends (not its loop) while the channel is full; both
//! directions, order kept.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_std_api::per_core::{spawn_on, LoopId, LoopSender};
use async_std_api::sync::channel;
use async_std_api::{spawn, Builder};

const N: u32 = 50;

/// Waits (1 ms at a time, 10 s at most) until `cond` holds: a cross-loop
/// round trip takes longer than `yield_until`'s budget on a loaded machine.
#[track_caller]
pub(crate) fn poll_until(mut cond: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        async_std_api::delay(1).unwrap();
    }
    panic!("poll_until: the condition was not reached in 10 s");
}

#[test]
fn d39_loops_feed_each_others_channels_in_order_and_a_full_channel_suspends_only_the_sender() {
    let got = Builder::new()
        .threads(2)
        .run_per_core(|id| {
            let other = LoopId::new(1 - id.index());
            // This loop's channel, fed by the other loop; `ready` is fed by
            // the other loop once its sender is stuck on the full channel.
            let (tx, rx) = channel::<u32>(1);
            let (ready_tx, ready) = channel::<usize>(1);
            // The loop senders are the channels' only senders: each channel
            // closes (and `iter` ends) once its loop sender is gone.
            let (loop_tx, loop_ready) = (
                LoopSender::new(&tx).unwrap(),
                LoopSender::new(&ready_tx).unwrap(),
            );
            drop((tx, ready_tx));
            let feeder = spawn_on(other, move || {
                let sent = Arc::new(AtomicUsize::new(0));
                let s = sent.clone();
                let sender = spawn(move || {
                    for i in 0..N {
                        loop_tx.send(i).unwrap();
                        s.fetch_add(1, Ordering::SeqCst);
                    }
                });
                // The channel holds one value and nobody receives yet: the
                // second send waits, and this coroutine, on the same loop,
                // still runs.
                let c = sender.coroutine();
                poll_until(|| sent.load(Ordering::SeqCst) == 1 && c.is_suspended());
                loop_ready.send(sent.load(Ordering::SeqCst)).unwrap();
                sender.join().unwrap();
                sent.load(Ordering::SeqCst)
            })
            .unwrap();
            assert_eq!(ready.recv().unwrap(), 1);
            let values: Vec<u32> = rx.iter().collect(); // ends with the feeder's sender
            assert_eq!(feeder.join().unwrap(), N as usize);
            values
        })
        .unwrap();
    let expected: Vec<u32> = (0..N).collect();
    assert_eq!(got, [expected.clone(), expected]);
}

#[test]
fn d39_a_loop_sender_gets_its_value_back_from_a_closed_channel() {
    let r = Builder::new()
        .threads(2)
        .run_per_core(|id| {
            if id.index() != 0 {
                return None;
            }
            let (tx, rx) = channel::<&'static str>(1);
            let tx = LoopSender::new(&tx).unwrap();
            rx.close();
            let h = spawn_on(LoopId::new(1), move || {
                tx.send("kept").unwrap_err().into_inner()
            });
            Some(h.unwrap().join().unwrap())
        })
        .unwrap();
    assert_eq!(r, [Some(Some("kept")), None]);
}

#[test]
fn d39_a_loop_sender_cancelled_while_the_channel_is_full_returns_and_its_value_still_arrives() {
    let r = Builder::new()
        .threads(2)
        .run_per_core(|id| {
            if id.index() != 0 {
                return None;
            }
            let (tx, rx) = channel::<&'static str>(1);
            tx.try_send("first").unwrap(); // full
            let loop_tx = LoopSender::new(&tx).unwrap();
            drop(tx);
            let h = spawn_on(LoopId::new(1), move || {
                let seen = std::rc::Rc::new(std::cell::Cell::new(None));
                let s = seen.clone();
                let sender = spawn(move || {
                    let err = loop_tx.send("second").unwrap_err();
                    s.set(Some((err.cancelled().is_some(), err.into_inner())));
                });
                let c = sender.coroutine();
                poll_until(|| c.is_suspended());
                sender.cancel();
                assert!(sender.join().unwrap_err().is_cancelled());
                seen.take()
            })
            .unwrap();
            // Cancelled, and without its value: it was handed over.
            assert_eq!(h.join().unwrap(), Some((true, None)));
            // Handed over before the cancellation: it arrives, in order.
            Some(rx.iter().collect::<Vec<_>>())
        })
        .unwrap();
    assert_eq!(r[0].as_deref(), Some(&["first", "second"][..]));
}
