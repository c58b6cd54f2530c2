//! Handles other threads use to reach coroutines: [`ThreadResolver`] (settle
//! a [`Deferred`] from a worker thread) and [`ThreadSender`] (send into a
//! [`channel`](super::channel) from one).
//!
//! Both go through the runtime's door for other threads: a value is handed
//! to the loop under one lock and the reactor's cross-thread trigger wakes
//! it (no polling). While one of these handles exists the loop stays alive,
//! so a coroutine waiting for a thread is not reported as deadlocked.
//!
//! Rules:
//! - **TH1** Values from one thread arrive in the order it sent them.
//! - **TH2** A [`ThreadSender::send`] blocks its thread while the channel is
//!   full (the channel's capacity is the back-pressure), and returns the
//!   value if the channel is closed. It must not run on a runtime's thread:
//!   blocking there would stop that loop; it panics instead.
//! - **TH3** A [`ThreadResolver`] dropped unresolved (its thread panicked
//!   or gave up) counts as a dropped resolver (DF1): if it was the last, the
//!   deferred is abandoned and its waiter is told.
//! - **TH4** Once the runtime has ended, a value sent is dropped and the
//!   call reports it ([`ThreadSender::send`] fails; a resolution is lost).

use std::fmt;
use std::io;
use std::sync::mpsc;

use super::channel::{SendError, Sender, TrySendError};
use super::deferred::Resolver;
use crate::core::runtime::remote::{Port, Promise};
use crate::core::runtime::with_runtime;
use crate::core::wait::outside_runtime;
use crate::structured::scope::current_scope;
use crate::structured::spawn::spawn_in;

/// How a [`ThreadResolver`] settles.
enum Settle<T> {
    Resolve(T),
    Reject(Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// Settles a [`Deferred`](super::Deferred) from any thread: made by
/// [`Resolver::for_thread`] on the loop thread, then sent to a worker.
///
/// # Examples
///
/// ```
/// use async_std_api::run;
/// use async_std_api::sync::Deferred;
///
/// run(|| {
///     let (deferred, resolver) = Deferred::new();
///     let resolver = resolver.for_thread().unwrap();
///     std::thread::spawn(move || resolver.resolve(6 * 7));
///     assert_eq!(deferred.wait().unwrap(), 42); // suspends until the thread resolves
/// })
/// .unwrap();
/// ```
pub struct ThreadResolver<T: Send + 'static> {
    promise: Promise<Settle<T>>,
}

impl<T: Send + 'static> ThreadResolver<T> {
    /// Resolves the deferred with `value` (if nothing settled it first: a
    /// value that arrives after is dropped on the loop thread, since it
    /// cannot be given back across threads).
    pub fn resolve(self, value: T) {
        self.promise.keep(Settle::Resolve(value));
    }

    /// Rejects the deferred: its waiter gets the error as a failure.
    pub fn reject(self, error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) {
        self.promise.keep(Settle::Reject(error.into()));
    }
}

impl<T: Send + 'static> fmt::Debug for ThreadResolver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadResolver").finish_non_exhaustive()
    }
}

impl<T: Send + 'static> Resolver<T> {
    /// Turns this resolver into one another thread can use (the others,
    /// if cloned, stay on the loop thread). Call it in a runtime.
    ///
    /// # Errors
    ///
    /// `Unsupported` naming the reactor if it has no cross-thread trigger
    /// (`AA_CAP_TRIGGER`).
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn for_thread(self) -> io::Result<ThreadResolver<T>> {
        let registered = with_runtime(|rt| {
            rt.remote.register(move |s: Option<Settle<T>>| match s {
                Some(Settle::Resolve(v)) => drop(self.resolve(v)),
                Some(Settle::Reject(e)) => drop(self.reject(e)),
                None => drop(self), // TH3
            })
        });
        // Not in a closure: the panic names the caller's line.
        let Some(registered) = registered else {
            outside_runtime("Resolver::for_thread")
        };
        let (_, promise) = registered.map_err(|s| no_trigger("Resolver::for_thread", s))?;
        Ok(ThreadResolver { promise })
    }
}

/// How one send went, told on the channel's loop thread: to a blocked
/// thread's `mpsc` (TH2), or to a suspended coroutine's loop
/// (`per_core::LoopSender`). Dropped uncalled once the runtime ended (TH4).
pub(crate) type Reply<T> = Box<dyn FnOnce(Result<(), T>) + Send>;

/// One send from a thread: the value and where to say how it went.
struct Msg<T> {
    value: T,
    reply: Reply<T>,
}

/// Sends into a channel from any thread: made by [`Sender::for_thread`];
/// clone it for more threads. See the module doc for its rules.
///
/// # Examples
///
/// ```
/// use async_std_api::run;
/// use async_std_api::sync::channel;
///
/// let total = run(|| {
///     let (tx, rx) = channel::<u64>(4);
///     let thread_tx = tx.for_thread().unwrap();
///     drop(tx); // the thread's is the only sender left
///     let worker = std::thread::spawn(move || {
///         for i in 1..=100 {
///             thread_tx.send(i).unwrap(); // blocks this thread while the channel is full
///         }
///     });
///     let total: u64 = rx.iter().sum(); // ends when the thread's sender is gone
///     worker.join().unwrap();
///     total
/// })
/// .unwrap();
/// assert_eq!(total, 5050);
/// ```
pub struct ThreadSender<T: Send + 'static> {
    port: Port<Msg<T>>,
}

impl<T: Send + 'static> Clone for ThreadSender<T> {
    fn clone(&self) -> Self {
        ThreadSender {
            port: self.port.clone(),
        }
    }
}

impl<T: Send + 'static> fmt::Debug for ThreadSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadSender").finish_non_exhaustive()
    }
}

impl<T: Send + 'static> ThreadSender<T> {
    /// Sends `value`, blocking this thread while the channel is full (TH2).
    ///
    /// # Errors
    ///
    /// [`SendError`] with the value back if the channel is closed; without
    /// it if the runtime has ended (TH4: the value was dropped).
    ///
    /// # Panics
    ///
    /// On a thread that runs a coroutine runtime (TH2).
    #[track_caller]
    pub fn send(&self, value: T) -> Result<(), SendError<Option<T>>> {
        if with_runtime(|_| ()).is_some() {
            panic!(
                "ThreadSender::send called on a runtime's thread: it would block the loop; \
                 use the channel's Sender there"
            );
        }
        let (reply, answer) = mpsc::sync_channel(1);
        let reply: Reply<T> = Box::new(move |r| {
            let _ = reply.send(r);
        });
        self.port.send(Msg { value, reply });
        match answer.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(value)) => Err(SendError::closed(Some(value))),
            Err(_) => Err(SendError::closed(None)), // TH4
        }
    }
}

impl<T: Send + 'static> ThreadSender<T> {
    /// Hands `value` to the channel's loop without waiting; `reply` is
    /// called there with how it went (TH1, TH2), or dropped uncalled if the
    /// runtime ended (TH4). For senders that wait their own way.
    pub(crate) fn send_then(&self, value: T, reply: Reply<T>) {
        self.port.send(Msg { value, reply });
    }
}

impl<T: Send + 'static> Sender<T> {
    /// A sender for other threads (this one stays on the loop thread).
    /// Call it in a runtime.
    ///
    /// # Errors
    ///
    /// `Unsupported` naming the reactor if it has no cross-thread trigger
    /// (`AA_CAP_TRIGGER`).
    ///
    /// # Panics
    ///
    /// Outside a runtime.
    #[track_caller]
    pub fn for_thread(&self) -> io::Result<ThreadSender<T>> {
        let tx = self.clone();
        let port = with_runtime(|rt| {
            rt.remote.port(move |m: Option<Msg<T>>| {
                if let Some(m) = m {
                    deliver(&tx, m);
                }
                // `None`: the last thread sender is gone; `tx` drops with
                // this callback, which may close the channel (CH3).
            })
        });
        // Not in a closure: the panic names the caller's line.
        let Some(port) = port else {
            outside_runtime("Sender::for_thread")
        };
        let port = port.map_err(|s| no_trigger("Sender::for_thread", s))?;
        Ok(ThreadSender { port })
    }
}

/// On the loop thread: into the channel now, or through a coroutine that
/// waits for room while the thread stays blocked (TH2).
fn deliver<T: 'static>(tx: &Sender<T>, m: Msg<T>) {
    let Msg { value, reply } = m;
    match tx.try_send(value) {
        Ok(()) => reply(Ok(())),
        Err(TrySendError::Closed(value)) => reply(Err(value)),
        Err(TrySendError::Full(value)) => {
            let slot = std::rc::Rc::new(std::cell::Cell::new(Some((value, reply))));
            let (s, tx2) = (slot.clone(), tx.clone());
            let spawned = spawn_in(&current_scope(), move || {
                if let Some((value, reply)) = s.take() {
                    reply(tx2.send(value).map_err(|e| e.value));
                }
            });
            if spawned.is_err() {
                // The runtime is shutting down: the thread gets its value
                // back as if the channel were closed.
                if let Some((value, reply)) = slot.take() {
                    reply(Err(value));
                }
            }
        }
    }
}

fn no_trigger(what: &str, status: async_abi::AaStatus) -> io::Error {
    with_runtime(|rt| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{what}: reactor \"{}\" lacks AA_CAP_TRIGGER: other threads cannot wake the loop ({})",
                rt.reactor.label(),
                crate::core::runtime::status_text(status)
            ),
        )
    })
    .unwrap_or_else(|| io::Error::other(format!("{what}: no runtime")))
}
