//! Channels: [`channel`] (bounded; capacity 0 is a rendezvous) and
//! [`unbounded`], with many [`Sender`]s and many [`Receiver`]s.
//!
//! Rules:
//! - **CH1** Order: messages leave in the order they were sent by each
//!   sender, and blocked senders deliver in the order they blocked; a
//!   message handed to a waiting receiver skips the buffer but keeps that
//!   order (the buffer is empty whenever a receiver waits).
//! - **CH2** Nothing is lost or delivered twice: a message is in exactly one
//!   place (a sender's parked slot, the buffer, or a receiver's grant). A
//!   cancelled send gives its value back with the error; a cancelled
//!   receive takes nothing; a send or receive completed just before its
//!   cancellation was seen stands (D-29). A receiver that unwinds with a
//!   message in hand puts it back at the front.
//! - **CH3** Closing ([`Sender::close`], [`Receiver::close`], or the last
//!   sender or receiver dropped): receivers drain what is buffered, then
//!   get [`RecvError`]; blocked and later senders get their value back in a
//!   [`SendError`]. Without receivers the buffer is dropped.
//! - **CH4** A [`Receiver`] is a combinator input
//!   ([`combinators::Trigger`](crate::combinators::Trigger)): a combinator
//!   over several receivers takes a message from one input at a time, so
//!   waiting on several channels loses none.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::panic::Location;
use std::rc::Rc;

use super::queue::{enter, wait_for_grant, with_coroutine, Grantor, WaitQueue, WaitText};
use crate::core::error::Cancelled;
use crate::core::waiters::Notify;
use crate::structured::combinators::sealed::{Token, Watch};
use crate::structured::combinators::Trigger;

/// A sender's parked value: taken by the receiver it is delivered to, or
/// back by the sender if its send ends otherwise.
type Parked<T> = Rc<Cell<Option<T>>>;

struct Chan<T> {
    buf: RefCell<VecDeque<T>>,
    /// `None`: unbounded.
    cap: Option<usize>,
    senders: Cell<usize>,
    receivers: Cell<usize>,
    closed: Cell<bool>,
    /// Receivers waiting for a message; the grant is the message, or
    /// `None` once closed.
    recv_waiters: RefCell<WaitQueue<Option<T>>>,
    /// Senders waiting for room (or, at capacity 0, a receiver); the grant
    /// says whether their parked value was delivered.
    send_waiters: RefCell<WaitQueue<bool, Parked<T>>>,
    /// Wakes combinators watching a receiver (CH4): a message arrived, a
    /// sender parked, or the channel closed.
    watchers: Notify,
    created_at: &'static Location<'static>,
    send_what: WaitText,
    recv_what: WaitText,
}

/// A new bounded channel: at most `capacity` messages wait in it; a sender
/// waits for room. With `capacity == 0` every send waits for a receiver to
/// take the message (a rendezvous).
///
/// # Examples
///
/// ```
/// use async_std_api::sync::channel;
/// use async_std_api::{run, spawn};
///
/// run(|| {
///     let (tx, rx) = channel(2);
///     let producer = spawn(move || {
///         for i in 0..5 {
///             tx.send(i).unwrap(); // waits while 2 are queued
///         }
///     }); // the last sender dropped: the channel closes
///     let got: Vec<i32> = rx.iter().collect();
///     assert_eq!(got, [0, 1, 2, 3, 4]);
///     producer.join().unwrap();
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn channel<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    make(Some(capacity), Location::caller())
}

/// A new unbounded channel: [`send`](Sender::send) never waits.
///
/// # Examples
///
/// ```
/// use async_std_api::sync::unbounded;
/// use async_std_api::run;
///
/// run(|| {
///     let (tx, rx) = unbounded();
///     for i in 0..1000 {
///         tx.send(i).unwrap();
///     }
///     drop(tx);
///     assert_eq!(rx.iter().sum::<i32>(), 499_500);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    make(None, Location::caller())
}

fn make<T>(cap: Option<usize>, at: &'static Location<'static>) -> (Sender<T>, Receiver<T>) {
    let chan = Rc::new(Chan {
        buf: RefCell::new(VecDeque::new()),
        cap,
        senders: Cell::new(1),
        receivers: Cell::new(1),
        closed: Cell::new(false),
        recv_waiters: RefCell::new(WaitQueue::default()),
        send_waiters: RefCell::new(WaitQueue::default()),
        watchers: Notify::new(),
        created_at: at,
        send_what: WaitText::default(),
        recv_what: WaitText::default(),
    });
    (Sender { chan: chan.clone() }, Receiver { chan })
}

impl<T> Chan<T> {
    fn is_closed(&self) -> bool {
        self.closed.get() || self.receivers.get() == 0
    }

    fn has_room(&self) -> bool {
        self.cap.is_none_or(|c| self.buf.borrow().len() < c)
    }

    /// Sends without waiting: to a waiting receiver, else into the buffer
    /// if it has room and no sender waits ahead (CH1).
    fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        if self.is_closed() {
            return Err(TrySendError::Closed(v));
        }
        let receiver = self.recv_waiters.borrow().first().map(|(t, _)| t);
        if let Some(t) = receiver {
            self.recv_waiters.borrow_mut().grant(t, Some(v));
            return Ok(());
        }
        if self.has_room() && self.send_waiters.borrow().is_empty() {
            self.buf.borrow_mut().push_back(v);
            self.watchers.wake_all();
            return Ok(());
        }
        Err(TrySendError::Full(v))
    }

    /// Receives without waiting: from the buffer (refilled from the oldest
    /// blocked sender), else straight from a blocked sender (capacity 0).
    fn try_recv(&self) -> Result<T, TryRecvError> {
        let front = self.buf.borrow_mut().pop_front();
        if let Some(v) = front {
            self.refill();
            return Ok(v);
        }
        if let Some(v) = self.take_from_sender() {
            return Ok(v);
        }
        if self.closed.get() || self.senders.get() == 0 {
            Err(TryRecvError::Closed)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    /// Moves the oldest blocked sender's value into the buffer, if room.
    fn refill(&self) {
        if !self.has_room() {
            return;
        }
        if let Some(v) = self.take_from_sender() {
            self.buf.borrow_mut().push_back(v);
        }
    }

    /// Takes the oldest blocked sender's value and tells it it was
    /// delivered.
    fn take_from_sender(&self) -> Option<T> {
        let first = self
            .send_waiters
            .borrow()
            .first()
            .map(|(t, slot)| (t, slot.clone()));
        let (t, slot) = first?;
        let v = slot.take();
        self.send_waiters.borrow_mut().grant(t, true);
        v
    }

    /// CH3: wakes every waiter with the end.
    fn close_all(&self) {
        self.closed.set(true);
        self.end_receivers();
        self.end_senders();
    }

    fn end_receivers(&self) {
        let all: Vec<_> = self.recv_waiters.borrow().iter().map(|(t, _)| t).collect();
        let mut q = self.recv_waiters.borrow_mut();
        for t in all {
            q.grant(t, None);
        }
        drop(q);
        self.watchers.wake_all();
    }

    fn end_senders(&self) {
        let all: Vec<_> = self.send_waiters.borrow().iter().map(|(t, _)| t).collect();
        let mut q = self.send_waiters.borrow_mut();
        for t in all {
            q.grant(t, false);
        }
    }
}

/// The receiving side's waits (CH2).
struct RecvSide<'a, T>(&'a Chan<T>);

impl<T> Grantor for RecvSide<'_, T> {
    type Grant = Option<T>;
    type Want = ();
    fn queue(&self) -> &RefCell<WaitQueue<Option<T>>> {
        &self.0.recv_waiters
    }
    fn give_back(&self, g: Option<T>) {
        // CH2: an unwinding receiver's message goes back to the front.
        if let Some(v) = g {
            let receiver = self.0.recv_waiters.borrow().first().map(|(t, _)| t);
            match receiver {
                Some(t) => self.0.recv_waiters.borrow_mut().grant(t, Some(v)),
                None => self.0.buf.borrow_mut().push_front(v),
            }
        }
    }
}

/// The sending side's waits (CH2).
struct SendSide<'a, T>(&'a Chan<T>);

impl<T> Grantor for SendSide<'_, T> {
    type Grant = bool;
    type Want = Parked<T>;
    fn queue(&self) -> &RefCell<WaitQueue<bool, Parked<T>>> {
        &self.0.send_waiters
    }
    fn give_back(&self, _delivered: bool) {}
}

/// The sending half of a channel; clone it for more senders. The channel
/// closes for the receivers when the last sender is dropped (CH3).
pub struct Sender<T> {
    chan: Rc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `value`, waiting while a bounded channel is full (or, at
    /// capacity 0, until a receiver takes it).
    ///
    /// # Errors
    ///
    /// [`SendError`] with the value back if the channel is closed (before
    /// or while waiting) or the calling coroutine was cancelled while
    /// waiting ([`SendError::cancelled`]).
    ///
    /// # Panics
    ///
    /// Outside a coroutine (when it has to wait).
    ///
    /// # Cancellation
    ///
    /// A cancellation point (CH2).
    #[track_caller]
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        let at = Location::caller();
        if let Err(c) = enter("Sender::send") {
            return Err(SendError {
                value,
                cancelled: Some(c),
            });
        }
        let value = match self.chan.try_send(value) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Closed(value)) => {
                return Err(SendError {
                    value,
                    cancelled: None,
                })
            }
            Err(TrySendError::Full(value)) => value,
        };
        let slot: Parked<T> = Rc::new(Cell::new(Some(value)));
        let t = with_coroutine("Sender::send", |me| {
            self.chan.send_waiters.borrow_mut().push(me, slot.clone())
        });
        self.chan.watchers.wake_all();
        let what = self.chan.send_what.get(|| {
            format!(
                "send on sync::channel (created at {})",
                self.chan.created_at
            )
        });
        match wait_for_grant(&SendSide(&self.chan), t, what, at) {
            Ok(true) => Ok(()),
            Ok(false) => Err(SendError {
                value: slot.take().expect("CH2: an undelivered value is parked"),
                cancelled: None,
            }),
            Err(c) => Err(SendError {
                value: slot.take().expect("CH2: an undelivered value is parked"),
                cancelled: Some(c),
            }),
        }
    }

    /// Sends without waiting.
    ///
    /// # Errors
    ///
    /// [`TrySendError::Full`] or [`TrySendError::Closed`], with the value.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.chan.try_send(value)
    }

    /// Closes the channel for everyone (CH3).
    pub fn close(&self) {
        self.chan.close_all();
    }

    /// True once the channel is closed or has no receiver.
    pub fn is_closed(&self) -> bool {
        self.chan.is_closed()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.chan.senders.set(self.chan.senders.get() + 1);
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let n = self.chan.senders.get() - 1;
        self.chan.senders.set(n);
        if n == 0 {
            // CH3: the receivers drain, then end.
            self.chan.end_receivers();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("closed", &self.is_closed())
            .field("created_at", &self.chan.created_at)
            .finish_non_exhaustive()
    }
}

/// The receiving half of a channel; clone it for more receivers (each
/// message goes to one of them).
pub struct Receiver<T> {
    chan: Rc<Chan<T>>,
}

impl<T> Receiver<T> {
    /// Receives the next message, waiting while the channel is empty.
    ///
    /// # Errors
    ///
    /// [`RecvError`] once the channel is closed and drained, or if the
    /// calling coroutine was cancelled while waiting
    /// ([`RecvError::cancelled`]).
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point (CH2).
    #[track_caller]
    pub fn recv(&self) -> Result<T, RecvError> {
        let at = Location::caller();
        enter("Receiver::recv").map_err(RecvError::interrupted)?;
        match self.chan.try_recv() {
            Ok(v) => return Ok(v),
            Err(TryRecvError::Closed) => return Err(RecvError { cancelled: None }),
            Err(TryRecvError::Empty) => {}
        }
        let t = with_coroutine("Receiver::recv", |me| {
            self.chan.recv_waiters.borrow_mut().push(me, ())
        });
        let what = self.chan.recv_what.get(|| {
            format!(
                "receive on sync::channel (created at {})",
                self.chan.created_at
            )
        });
        match wait_for_grant(&RecvSide(&self.chan), t, what, at) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(RecvError { cancelled: None }),
            Err(c) => Err(RecvError::interrupted(c)),
        }
    }

    /// Receives the next message, waiting at most `timeout` while the
    /// channel is empty: the analogue of std's
    /// [`Receiver::recv_timeout`](std::sync::mpsc::Receiver::recv_timeout).
    /// A message already buffered is returned even with a zero timeout
    /// (D-20), and a message that arrives after the timeout stays in the
    /// channel for the next receive: nothing is lost (CH4).
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Timeout`] if no message came in time,
    /// [`RecvTimeoutError::Closed`] once the channel is closed and drained,
    /// [`RecvTimeoutError::Cancelled`] if the calling coroutine was
    /// cancelled while it waited.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use async_std_api::run;
    /// use async_std_api::sync::{channel, RecvTimeoutError};
    ///
    /// run(|| {
    ///     let (tx, rx) = channel::<u32>(1);
    ///     let wait = Duration::from_millis(10);
    ///     assert_eq!(rx.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
    ///     tx.send(7).unwrap();
    ///     assert_eq!(rx.recv_timeout(wait), Ok(7));
    ///     drop(tx);
    ///     assert_eq!(rx.recv_timeout(wait), Err(RecvTimeoutError::Closed));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn recv_timeout(&self, timeout: std::time::Duration) -> Result<T, RecvTimeoutError> {
        use crate::structured::combinators::{any, CombineErrorKind};
        enter("Receiver::recv_timeout").map_err(RecvTimeoutError::Cancelled)?;
        // Whole milliseconds, rounded up: never shorter than asked.
        let ms = timeout.as_nanos().div_ceil(1_000_000);
        let trigger = crate::time::timeout(u64::try_from(ms).unwrap_or(u64::MAX));
        match any([self]).until(trigger).join() {
            Ok(v) => Ok(v),
            Err(e) => match e.kind() {
                CombineErrorKind::AwaitCancelled => Err(RecvTimeoutError::Timeout),
                CombineErrorKind::Interrupted => Err(RecvTimeoutError::Cancelled(
                    e.cancelled()
                        .cloned()
                        .expect("an interrupted join has its cancellation"),
                )),
                _ => Err(RecvTimeoutError::Closed),
            },
        }
    }

    /// Receives without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] or [`TryRecvError::Closed`].
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.try_recv()
    }

    /// Closes the channel for everyone (CH3); what is buffered can still be
    /// received.
    pub fn close(&self) {
        self.chan.close_all();
    }

    /// The messages waiting in the buffer now.
    pub fn len(&self) -> usize {
        self.chan.buf.borrow().len()
    }

    /// True if no message waits in the buffer.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An iterator of [`recv`](Receiver::recv): it ends once the channel is
    /// closed and drained, or when the calling coroutine is cancelled (use
    /// `recv` to tell the two apart).
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.chan.receivers.set(self.chan.receivers.get() + 1);
        Receiver {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let n = self.chan.receivers.get() - 1;
        self.chan.receivers.set(n);
        if n == 0 {
            // CH3: senders get their values back; the buffer goes.
            self.chan.end_senders();
            let buffered = std::mem::take(&mut *self.chan.buf.borrow_mut());
            drop(buffered);
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("buffered", &self.len())
            .field("created_at", &self.chan.created_at)
            .finish_non_exhaustive()
    }
}

/// The iterator of [`Receiver::iter`].
#[derive(Debug)]
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    #[track_caller]
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> Trigger for Receiver<T> {
    type Output = T;
    type Error = RecvError;
    fn poll_trigger(&self, _: Token) -> Option<Result<T, RecvError>> {
        match self.chan.try_recv() {
            Ok(v) => Some(Ok(v)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Closed) => Some(Err(RecvError { cancelled: None })),
        }
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Many(&self.chan.watchers)
    }
}

impl<T> Trigger for &Receiver<T> {
    type Output = T;
    type Error = RecvError;
    fn poll_trigger(&self, t: Token) -> Option<Result<T, RecvError>> {
        (**self).poll_trigger(t)
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, t: Token) -> Watch<'_> {
        (**self).watch_trigger(t)
    }
}

/// Why [`Sender::send`] did not deliver; the value is in it.
pub struct SendError<T> {
    /// The value that was not sent.
    pub value: T,
    cancelled: Option<Cancelled>,
}

impl<T> SendError<T> {
    /// A send refused because the channel is closed.
    pub(crate) fn closed(value: T) -> SendError<T> {
        SendError {
            value,
            cancelled: None,
        }
    }

    /// A send given up because the sender was cancelled while it waited.
    pub(crate) fn interrupted(value: T, c: Cancelled) -> SendError<T> {
        SendError {
            value,
            cancelled: Some(c),
        }
    }

    /// The sender's own cancellation, if that is why (else the channel is
    /// closed).
    pub fn cancelled(&self) -> Option<&Cancelled> {
        self.cancelled.as_ref()
    }

    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SendError").field(&self.to_string()).finish()
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cancelled {
            Some(c) => write!(f, "sending on a channel interrupted: {c}"),
            None => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> std::error::Error for SendError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cancelled.as_ref().map(|c| c as _)
    }
}

/// Why [`Sender::try_send`] did not send; the value is in it.
pub enum TrySendError<T> {
    /// A bounded channel is full (or, at capacity 0, no receiver waits).
    Full(T),
    /// The channel is closed or has no receiver.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> std::error::Error for TrySendError<T> {}

/// Why [`Receiver::recv`] gave no message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvError {
    cancelled: Option<Cancelled>,
}

impl RecvError {
    fn interrupted(c: Cancelled) -> RecvError {
        RecvError { cancelled: Some(c) }
    }

    /// The receiver's own cancellation, if that is why (else the channel
    /// is closed and drained).
    pub fn cancelled(&self) -> Option<&Cancelled> {
        self.cancelled.as_ref()
    }

    /// True if the channel is closed and drained.
    pub fn is_closed(&self) -> bool {
        self.cancelled.is_none()
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cancelled {
            Some(c) => write!(f, "receiving on a channel interrupted: {c}"),
            None => f.write_str("receiving on a closed and empty channel"),
        }
    }
}

impl std::error::Error for RecvError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cancelled.as_ref().map(|c| c as _)
    }
}

impl From<RecvError> for std::io::Error {
    /// A cancellation stays findable ([`io::cancelled`](crate::io::cancelled));
    /// a closed channel is `BrokenPipe`.
    fn from(e: RecvError) -> std::io::Error {
        match e.cancelled {
            Some(c) => c.into(),
            None => std::io::Error::new(std::io::ErrorKind::BrokenPipe, e.to_string()),
        }
    }
}

/// Why [`Receiver::recv_timeout`] gave no message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecvTimeoutError {
    /// No message came in time; the channel is still open.
    Timeout,
    /// The channel is closed (or has no sender) and drained.
    Closed,
    /// The receiver's own cancellation.
    Cancelled(Cancelled),
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting on a channel"),
            RecvTimeoutError::Closed => f.write_str("receiving on a closed and empty channel"),
            RecvTimeoutError::Cancelled(c) => write!(f, "receiving on a channel interrupted: {c}"),
        }
    }
}

impl std::error::Error for RecvTimeoutError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecvTimeoutError::Cancelled(c) => Some(c),
            _ => None,
        }
    }
}

/// Why [`Receiver::try_recv`] gave no message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// No message now.
    Empty,
    /// The channel is closed (or has no sender) and drained.
    Closed,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Closed => f.write_str("receiving on a closed and empty channel"),
        }
    }
}

impl std::error::Error for TryRecvError {}
