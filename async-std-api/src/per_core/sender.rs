//! [`LoopSender`]: a channel's sender for other loops, which suspends the
//! sending coroutine (not its loop) while the channel is full.
//!
//! Rules:
//! - **LS1** It is a [`ThreadSender`] (D-35: TH1 order per sender, the
//!   channel's capacity as back-pressure, the value back on a closed
//!   channel) whose send, in a coroutine, registers a reply on the sender's
//!   own loop and suspends until the channel's loop answers; on a plain
//!   thread it blocks like [`ThreadSender::send`].
//! - **LS2** A sender cancelled while it waits gets its cancellation back
//!   without the value: the value was handed over and arrives in order
//!   unless the channel closes first (a value cannot be taken back from
//!   another thread). An answer that arrived before the cancellation was
//!   seen wins, and the cancellation stays pending.

use std::cell::RefCell;
use std::fmt;
use std::io;
use std::panic::Location;
use std::rc::Rc;

use crate::core::runtime::{self, with_running};
use crate::core::wait::{checkpoint, suspend_once};
use crate::sync::{Reply, SendError, Sender, ThreadSender};

/// The channel loop's answer (LS1): `None` if the runtime ended first.
type Answer<T> = Option<Result<(), T>>;

/// Sends into a [`channel`](crate::sync::channel) of one loop from a
/// coroutine on another loop (or from a plain thread): `Send`, `Sync` and
/// cloneable. Made on the receiving loop with [`LoopSender::new`], then
/// moved (for example through [`spawn_on`](super::spawn_on)).
///
/// While it exists, the receiving loop stays alive (D-35); the channel
/// closes for its receivers when every sender, this one included, is
/// dropped.
///
/// # Examples
///
/// ```
/// use async_std_api::per_core::{spawn_on, LoopId, LoopSender};
/// use async_std_api::sync::channel;
/// use async_std_api::Builder;
///
/// let got = Builder::new()
///     .threads(2)
///     .run_per_core(|id| {
///         if id.index() != 0 {
///             return vec![];
///         }
///         let (tx, rx) = channel::<u32>(1);
///         let loop_tx = LoopSender::new(&tx).unwrap();
///         drop(tx); // the loop sender is the last: `rx.iter()` ends with it
///         spawn_on(LoopId::new(1), move || {
///             for i in 0..5 {
///                 loop_tx.send(i).unwrap(); // suspends this coroutine while the channel is full
///             }
///         })
///         .unwrap();
///         rx.iter().collect()
///     })
///     .unwrap();
/// assert_eq!(got[0], [0, 1, 2, 3, 4]);
/// ```
pub struct LoopSender<T: Send + 'static> {
    inner: ThreadSender<T>,
}

impl<T: Send + 'static> Clone for LoopSender<T> {
    fn clone(&self) -> Self {
        LoopSender {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Send + 'static> fmt::Debug for LoopSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopSender").finish_non_exhaustive()
    }
}

impl<T: Send + 'static> LoopSender<T> {
    /// A sender other loops can use, into `tx`'s channel (`tx` stays on
    /// this loop). Call it on the channel's loop.
    ///
    /// # Errors
    ///
    /// `Unsupported` naming the reactor if it has no cross-thread trigger.
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn new(tx: &Sender<T>) -> io::Result<LoopSender<T>> {
        Ok(LoopSender {
            inner: tx.for_thread()?,
        })
    }

    /// Sends `value`: in a coroutine, suspends it while the channel is
    /// full (LS1); on a plain thread, blocks it.
    ///
    /// # Errors
    ///
    /// [`SendError`] with `Some(value)` if the channel is closed; with
    /// `None` if the channel's runtime has ended (the value was dropped),
    /// or if the sender was cancelled while it waited
    /// ([`SendError::cancelled`]; LS2: the value may still arrive).
    ///
    /// # Panics
    ///
    /// On a runtime's thread outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point (LS2): a pending cancellation is returned with
    /// the value before anything is sent.
    #[track_caller]
    pub fn send(&self, value: T) -> Result<(), SendError<Option<T>>> {
        let at = Location::caller();
        let mut value = Some(value);
        let sent = with_running(|rt, me| {
            let v = value.take().expect("taken once");
            if let Err(c) = checkpoint(me) {
                return Err(SendError::interrupted(Some(v), c));
            }
            let answer: Rc<RefCell<Option<Answer<T>>>> = Rc::default();
            let (a, waiter) = (answer.clone(), me.clone());
            let registered = rt.remote.register(move |r: Option<Result<(), T>>| {
                *a.borrow_mut() = Some(r);
                runtime::wake(&waiter);
            });
            let Ok((id, promise)) = registered else {
                // No trigger on this loop: nothing can wake it, so the
                // value is refused as if the channel were closed.
                return Err(SendError::closed(Some(v)));
            };
            let reply: Reply<T> = Box::new(move |r| promise.keep(r));
            self.inner.send_then(v, reply);
            loop {
                let resumed = suspend_once(rt, me, b"send on a channel of another loop", at);
                let got = answer.borrow_mut().take();
                if let Some(r) = got {
                    if resumed.is_err() {
                        me.repend_cancel();
                    }
                    return match r {
                        Some(Ok(())) => Ok(()),
                        Some(Err(v)) => Err(SendError::closed(Some(v))),
                        None => Err(SendError::closed(None)),
                    };
                }
                if let Err(c) = resumed {
                    rt.remote.forget(id); // LS2
                    return Err(SendError::interrupted(None, c));
                }
            }
        });
        match sent {
            Some(r) => r,
            None => self
                .inner
                .send(value.take().expect("not sent in a coroutine")),
        }
    }
}
