//! Coroutines that talk to each other: [`channel`]s, a [`Deferred`] value
//! and a shared [`Future`], and the locks and signals of a shared-memory
//! program ([`Mutex`], [`RwLock`], [`Semaphore`], [`Notify`], [`Barrier`]).
//!
//! Everything here is for the coroutines of one runtime (one thread): the
//! types are `!Send`, share them with `Rc`. Each blocking call suspends
//! only the calling coroutine and is a cancellation point; waiters are
//! served in arrival order (a lock is *handed* to the oldest waiter, never
//! taken by a later one). Where std or tokio has the same primitive, the
//! method names are theirs.
//!
//! Cancellation never loses or leaks anything (D-29): a wait cancelled
//! before it was granted takes nothing and leaves the queue; one granted
//! just before its cancellation was seen completes (the message is
//! returned, the lock held, the send delivered) and the cancellation waits
//! for the next suspension point. A coroutine forced to unwind with a grant
//! in hand gives it to the next waiter.
//!
//! Waits that nothing can ever complete are a deadlock like any other: the
//! scheduler's report names the primitive and where it was created
//! (`lock sync::Mutex (created at src/main.rs:12:15)`), the waiters get a
//! cancellation with cause [`Deadlock`](crate::CancelCause::Deadlock), and
//! [`run`](crate::run) fails.
//!
//! | RFC / design | here |
//! |---|---|
//! | `DeferredResume`, a oneshot | [`Deferred`] + [`Resolver`] |
//! | `Future` (future scope) | [`Future`] + [`Promise`] |
//! | `Channel` (future scope) | [`channel`], [`unbounded`]: [`Sender`], [`Receiver`] |

mod barrier;
mod channel;
mod deferred;
mod mutex;
mod notify;
mod queue;
mod rwlock;
mod semaphore;
mod thread;

pub use barrier::{Barrier, BarrierWaitResult};
pub use channel::{
    channel, unbounded, Iter, Receiver, RecvError, RecvTimeoutError, SendError, Sender,
    TryRecvError, TrySendError,
};
pub use deferred::{
    Deferred, DeferredError, DeferredErrorKind, Future, Promise, ResolveError, Resolver,
};
pub use mutex::{Mutex, MutexGuard};
pub use notify::Notify;
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use semaphore::{Semaphore, SemaphorePermit};
pub(crate) use thread::Reply;
pub use thread::{ThreadResolver, ThreadSender};
