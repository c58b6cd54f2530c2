//! The async combinators: [`all`], [`any`], [`any_of`], [`capture_errors`]
//! and [`ignore_errors`] (R-CB1), over lists of [`Trigger`]s or over an
//! iterator that runs concurrently ([`concurrent`]); and [`select`], which
//! runs closures and cancels the losers (D-44).
//!
//! # Two kinds of combinator
//!
//! The RFC's combinators wait for triggers they do not own: a coroutine,
//! a timeout or a group stays its scope's, so a combinator never cancels
//! an input (D-7), and the losers of [`any`] run on. That is the right
//! default for things other code may also be waiting for, and the wrong
//! one for work started only to get one answer. For that, two calls own
//! what they start, in a scope made for the call, and cancel it (D-44):
//!
//! | call | runs | ends with | then |
//! |---|---|---|---|
//! | [`select`]`(branches)` | each closure in its own coroutine | the first to finish: `(index, value)` | cancels the others and waits for their cleanup |
//! | [`time::with_timeout`](crate::time::with_timeout)`(ms, f)` | `f` in a coroutine | `f`'s value, or [`TimeoutError::is_elapsed`](crate::time::TimeoutError::is_elapsed) once `ms` passed | cancels `f` and waits for its cleanup |
//!
//! tokio's `select!` and `time::timeout` do the same by dropping the
//! losing futures; Kotlin's `select` and `withTimeout` by cancelling child
//! coroutines, which is what happens here. Neither call returns before
//! what it started (the branches and whatever they spawned) has finished,
//! cleanup included; if the caller is cancelled meanwhile, they are
//! cancelled too and awaited the same way.
//!
//! Owns: the combinator objects ([`All`], [`Any`], [`AnyOf`],
//! [`CaptureErrors`], [`IgnoreErrors`]), the engine that waits on their
//! inputs, and the feed of a concurrent iterator.
//!
//! Invariants:
//! - **CB1** Each input gives exactly one outcome, taken once: a
//!   [`JoinHandle`]'s value moves into the combinator; a re-usable trigger
//!   (a [`Race`]) is asked once per input.
//! - **CB2** A combinator owns nothing it waits for (D-7): finishing (or
//!   being dropped) never cancels an input; the tasks go on in their
//!   scopes, whose owners decide. The exceptions are its own helpers: the
//!   coroutine that runs a [`concurrent`] iterator is cancelled when the
//!   combinator is dropped before the iterator ended, and the branches of
//!   [`select`] (and `time::with_timeout`) are the call's own, run on this
//!   engine by `first` and cancelled once it decided (SL1-SL4 in
//!   `structured::select`).
//! - **CB3** A join opens a *session*: each pending input is polled once,
//!   in input order, and subscribed with a tagged waiter (WL3 in
//!   `core::waiters`) for the rest of the join; an input that completes or
//!   changes queues its tag, and only queued inputs are polled again. A
//!   wake-up costs O(1) per input that reported, not a poll of every
//!   input; a join costs O(inputs) once, to subscribe. The feed and the
//!   `until` trigger are subscribed per suspension. An input counts as
//!   awaited (D-3) while a join waits: one that fails before the
//!   combinator first waits on it (an item the iterator produced and which
//!   failed at once), or after the combinator returned (a loser of `any`),
//!   goes to its scope's error flow like any failure nobody awaited.
//! - **CB4** An error raised by the iterator itself (an `Err` item or a
//!   panic) ends every combinator at once, [`capture_errors`] and
//!   [`ignore_errors`] included, which pass it on (D-24); the inputs'
//!   errors are what those two catch.
//!
//! The objects are lazy, like iterators: `all(inputs)` waits for nothing
//! until its `join`. Mapping of the RFC: `await all([...])` is
//! `all([...]).join()`; `await captureErrors(all([...]))` is
//! `capture_errors(all([...])).join()`; an `any` trigger awaited again is
//! [`Any::join`] called again.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;

pub use super::select::{select, Branches};
use super::spawn::spawn;
use super::task_group::{FirstResult, GroupAll, Race, TaskGroup, TaskGroupError};
use crate::core::awaitable::{Awaitable, Latch};
use crate::core::coroutine::Coroutine;
use crate::core::error::{Cancelled, JoinError};
use crate::core::failure::{Failure, FailureOrigin};
use crate::core::join::JoinHandle;
use crate::core::state::Outcome;
use crate::core::task::current;
use crate::core::wait::{checkpoint, suspend_once, with_me, ForcedUnwind};
use crate::core::waiters::{
    Completion, Notify, NotifySubscription, ReadySet, Subscription, WaitKey,
};

#[allow(private_interfaces, missing_debug_implementations)]
pub(crate) mod sealed {
    /// Proof that the caller is this crate: the [`Trigger`](super::Trigger)
    /// methods take one, so nobody else can call or implement them.
    #[derive(Debug, Clone, Copy)]
    pub struct Token(pub(crate) ());

    /// What a waiter subscribes to for one input.
    pub enum Watch<'a> {
        /// A one-shot completion.
        Once(&'a crate::core::waiters::Completion),
        /// A re-armable wake-up list.
        Many(&'a crate::core::waiters::Notify),
    }
}

use sealed::{Token, Watch};

/// Something a combinator can wait for and take one outcome from: the
/// RFC's triggers, typed.
///
/// Implemented by [`JoinHandle`] (its value), [`Coroutine`] and
/// [`Timeout`](crate::time::Timeout) (unit), [`TaskGroup`] (its [`join`](TaskGroup::join)), and a
/// group's triggers [`GroupAll`], [`Race`] and [`FirstResult`]; by
/// reference too, except for `JoinHandle` (its value moves). Sealed: the
/// methods are the runtime's contract with its waiters, internal and still
/// moving (like [`Awaitable`](crate::Awaitable)).
///
/// Why a second trait and not [`Awaitable`](crate::Awaitable): an
/// `Awaitable` is an untyped, one-shot `until` trigger (R-CO7: it changes
/// state once), while a combinator needs each input's typed value or error
/// and inputs that change state many times (a group, its race); a
/// [`Timeout`](crate::time::Timeout) or [`Coroutine`] is both.
pub trait Trigger {
    /// The value of a success.
    type Output;
    /// The error of a failure.
    type Error;
    #[doc(hidden)]
    fn poll_trigger(&self, _: Token) -> Option<Result<Self::Output, Self::Error>>;
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_>;
}

impl<T: 'static> Trigger for JoinHandle<T> {
    type Output = T;
    type Error = JoinError;
    fn poll_trigger(&self, _: Token) -> Option<Result<T, JoinError>> {
        let state = &self.state;
        if !state.is_finished() {
            return None;
        }
        let id = state.id();
        state.with_outcome(|o| match o {
            Outcome::Value(v) => match v.take().map(|b| b.downcast::<T>()) {
                Some(Ok(t)) => Ok(*t),
                _ => unreachable!("CB1: a coroutine's value is taken once, by its handle"),
            },
            Outcome::Failed(f) => Err(JoinError::failed(id, f.clone())),
            Outcome::Cancelled(c) => Err(JoinError::cancelled_with(id, (**c).clone())),
        })
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Once(&self.state.done)
    }
}

impl Trigger for Coroutine {
    type Output = ();
    type Error = JoinError;
    fn poll_trigger(&self, _: Token) -> Option<Result<(), JoinError>> {
        let state = &self.state;
        if !state.is_finished() {
            return None;
        }
        let id = state.id();
        state.with_outcome(|o| match o {
            Outcome::Value(_) => Ok(()),
            Outcome::Failed(f) => Err(JoinError::failed(id, f.clone())),
            Outcome::Cancelled(c) => Err(JoinError::cancelled_with(id, (**c).clone())),
        })
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Once(&self.state.done)
    }
}

impl<T: Clone + 'static> Trigger for TaskGroup<T> {
    type Output = BTreeMap<usize, T>;
    type Error = TaskGroupError;
    fn poll_trigger(&self, _: Token) -> Option<Result<Self::Output, TaskGroupError>> {
        self.poll_join()
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Many(self.notify())
    }
}

impl<T: Clone + 'static> Trigger for GroupAll<T> {
    type Output = BTreeMap<usize, Option<T>>;
    type Error = TaskGroupError;
    fn poll_trigger(&self, _: Token) -> Option<Result<Self::Output, TaskGroupError>> {
        self.poll()
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Many(self.notify())
    }
}

impl<T: 'static> Trigger for Race<T> {
    type Output = T;
    type Error = TaskGroupError;
    fn poll_trigger(&self, _: Token) -> Option<Result<T, TaskGroupError>> {
        self.poll()
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Many(self.notify())
    }
}

impl<T: Clone + 'static> Trigger for FirstResult<T> {
    type Output = T;
    type Error = TaskGroupError;
    fn poll_trigger(&self, _: Token) -> Option<Result<T, TaskGroupError>> {
        self.poll()
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Many(self.notify())
    }
}

impl Trigger for Latch {
    type Output = ();
    type Error = Failure;
    fn poll_trigger(&self, _: Token) -> Option<Result<(), Failure>> {
        self.is_open().then(|| self.failure().map_or(Ok(()), Err))
    }
    #[allow(private_interfaces)]
    fn watch_trigger(&self, _: Token) -> Watch<'_> {
        Watch::Once(crate::core::awaitable::sealed::Sealed::completion(self))
    }
}

macro_rules! by_ref {
    ($($t:ty $(, $g:ident)?);*) => {$(
        impl<'a $(, $g: Clone + 'static)?> Trigger for &'a $t {
            type Output = <$t as Trigger>::Output;
            type Error = <$t as Trigger>::Error;
            fn poll_trigger(&self, t: Token) -> Option<Result<Self::Output, Self::Error>> {
                (**self).poll_trigger(t)
            }
            #[allow(private_interfaces)]
            fn watch_trigger(&self, t: Token) -> Watch<'_> {
                (**self).watch_trigger(t)
            }
        }
    )*};
}

by_ref!(Coroutine; Latch; TaskGroup<T>, T; GroupAll<T>, T; Race<T>, T; FirstResult<T>, T);

// ---- inputs ----

/// The feed of a [`concurrent`] iterator.
struct Feed<A> {
    items: RefCell<VecDeque<A>>,
    done: Cell<bool>,
    error: RefCell<Option<Failure>>,
    notify: Notify,
    runner: RefCell<Option<Coroutine>>,
}

/// Inputs that come from an iterator running in its own coroutine,
/// concurrently with the combinator: the RFC's asynchronous iterable
/// triggers. Made by [`concurrent`].
pub struct Concurrent<A> {
    feed: Rc<Feed<A>>,
}

impl<A> fmt::Debug for Concurrent<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Concurrent")
            .field("done", &self.feed.done.get())
            .finish()
    }
}

/// Runs `iter` in a new coroutine (in the current scope), concurrently,
/// as the input of a combinator: the RFC's iterable triggers (R-CB1).
///
/// The iterator may suspend and spawn (it is ordinary code in its own
/// coroutine); each `Ok` item is an input as soon as it is produced. [`all`]
/// also waits for the iterator to end; [`any`] fires on the first
/// completion even while it runs. An `Err` item or a panic ends the
/// iteration and every combinator over it at once, also through
/// [`capture_errors`] and [`ignore_errors`] (D-24): kind
/// [`CombineErrorKind::Iterator`].
///
/// Dropping the combinator before the iterator ended cancels the
/// iterator's coroutine (CB2); the inputs it produced are not cancelled.
///
/// # Panics
///
/// Outside a coroutine runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::combinators::{all, concurrent};
/// use async_std_api::{delay, run, spawn, JoinHandle};
///
/// run(|| {
///     // The iterator itself waits between the tasks it spawns.
///     let tasks = (1..=3).map(|i| {
///         delay(1)?;
///         Ok::<JoinHandle<i32>, async_std_api::Cancelled>(spawn(move || i * 10))
///     });
///     assert_eq!(all(concurrent(tasks)).join().unwrap(), [10, 20, 30]);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn concurrent<A, E, I>(iter: I) -> Concurrent<A>
where
    I: IntoIterator<Item = Result<A, E>> + 'static,
    A: 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    let feed = Rc::new(Feed {
        items: RefCell::new(VecDeque::new()),
        done: Cell::new(false),
        error: RefCell::new(None),
        notify: Notify::new(),
        runner: RefCell::new(None),
    });
    let f = feed.clone();
    let h = spawn(move || {
        let id = current().id();
        let r = catch_unwind(AssertUnwindSafe(|| {
            for item in iter {
                match item {
                    Ok(a) => {
                        f.items.borrow_mut().push_back(a);
                        f.notify.wake_all();
                    }
                    Err(e) => {
                        let failure = Failure::from_error(FailureOrigin::Coroutine(id), e.into());
                        *f.error.borrow_mut() = Some(failure);
                        break;
                    }
                }
            }
        }));
        if let Err(p) = r {
            if p.is::<ForcedUnwind>() {
                f.done.set(true);
                resume_unwind(p);
            }
            *f.error.borrow_mut() = Some(Failure::from_panic(FailureOrigin::Coroutine(id), p));
        }
        f.done.set(true);
        f.notify.wake_all();
    });
    *feed.runner.borrow_mut() = Some(h.coroutine());
    Concurrent { feed }
}

/// What a combinator accepts as its inputs: any `IntoIterator` of
/// [`Trigger`]s (drained at once, in the caller), or a [`Concurrent`]
/// iterator.
pub trait IntoInputs<A> {
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn into_inputs(self, _: Token) -> Inputs<A>;
}

/// The inputs, as the engine takes them.
pub(crate) struct Inputs<A> {
    list: Vec<A>,
    feed: Option<Rc<Feed<A>>>,
}

impl<A: Trigger, I: IntoIterator<Item = A>> IntoInputs<A> for I {
    #[allow(private_interfaces)]
    fn into_inputs(self, _: Token) -> Inputs<A> {
        Inputs {
            list: self.into_iter().collect(),
            feed: None,
        }
    }
}

impl<A: Trigger> IntoInputs<A> for Concurrent<A> {
    #[allow(private_interfaces)]
    fn into_inputs(self, _: Token) -> Inputs<A> {
        Inputs {
            list: Vec::new(),
            feed: Some(self.feed),
        }
    }
}

// ---- the engine ----

/// One input's outcome, with its index.
type Outcome1<A> = (usize, Result<<A as Trigger>::Output, <A as Trigger>::Error>);
/// What [`Engine::next`] returns.
type Next<A> = Result<
    Event<<A as Trigger>::Output, <A as Trigger>::Error>,
    CombineError<<A as Trigger>::Error>,
>;
/// Values by input index, or the combinator's error.
type Indexed<A> = Result<Vec<(usize, <A as Trigger>::Output)>, CombineError<<A as Trigger>::Error>>;

enum Event<O, E> {
    Item(usize, Result<O, E>),
    End,
}

/// One input the engine waits for.
struct Slot<A> {
    /// Its input index.
    index: usize,
    input: A,
    /// Its tagged subscription (CB3), while a session holds one.
    key: Option<WaitKey>,
}

struct Engine<A: Trigger> {
    /// The inputs not yet taken, by tag (their position), in input order;
    /// `None` once taken. Compacted when a session starts.
    slots: Vec<Option<Slot<A>>>,
    /// How many slots are `Some`.
    live: usize,
    /// Where the inputs' subscriptions report (CB3).
    ready: Rc<ReadySet>,
    /// Within a join: subscriptions are held (CB3).
    session: bool,
    feed: Option<Rc<Feed<A>>>,
    next_index: usize,
    /// The RFC's `await <combinator> until <trigger>`.
    until: Option<Box<dyn Awaitable>>,
}

/// Ends the engine's session when the join that opened it returns or
/// unwinds (CB3: inputs count as awaited only while a join waits).
struct Session<'a, A: Trigger>(&'a mut Engine<A>);

impl<A: Trigger> std::ops::Deref for Session<'_, A> {
    type Target = Engine<A>;
    fn deref(&self) -> &Engine<A> {
        self.0
    }
}

impl<A: Trigger> std::ops::DerefMut for Session<'_, A> {
    fn deref_mut(&mut self) -> &mut Engine<A> {
        self.0
    }
}

impl<A: Trigger> Drop for Session<'_, A> {
    fn drop(&mut self) {
        self.0.end();
    }
}

impl<A: Trigger> Engine<A> {
    fn new(inputs: Inputs<A>) -> Self {
        let n = inputs.list.len();
        Engine {
            slots: inputs
                .list
                .into_iter()
                .enumerate()
                .map(|(index, input)| {
                    Some(Slot {
                        index,
                        input,
                        key: None,
                    })
                })
                .collect(),
            live: n,
            ready: Rc::default(),
            session: false,
            feed: inputs.feed,
            next_index: n,
            until: None,
        }
    }

    /// Opens a session for one join (CB3); it ends when the guard drops.
    fn session(&mut self) -> Session<'_, A> {
        Session(self)
    }

    /// Starts the session on its first wait: every input not taken is
    /// queued, in input order, to be polled and subscribed.
    fn begin(&mut self) {
        if self.session {
            return;
        }
        self.session = true;
        while self.ready.pop().is_some() {}
        // No subscription is held: positions may change.
        self.slots.retain(Option::is_some);
        for tag in 0..self.slots.len() {
            self.ready.queue(tag);
        }
    }

    /// Ends the session: every subscription is dropped.
    fn end(&mut self) {
        if !self.session {
            return;
        }
        self.session = false;
        for slot in self.slots.iter_mut().flatten() {
            if let Some(key) = slot.key.take() {
                unsubscribe(slot.input.watch_trigger(Token(())), key);
            }
        }
    }

    /// Moves produced items in, each queued to be polled; CB4: an iterator
    /// error ends it at once.
    fn pull(&mut self) -> Result<(), CombineError<A::Error>> {
        if let Some(feed) = &self.feed {
            if let Some(f) = feed.error.borrow_mut().take() {
                return Err(CombineError::new(Repr::Iterator(f)));
            }
            while let Some(input) = feed.items.borrow_mut().pop_front() {
                self.slots.push(Some(Slot {
                    index: self.next_index,
                    input,
                    key: None,
                }));
                self.live += 1;
                self.next_index += 1;
                if self.session {
                    self.ready.queue(self.slots.len() - 1);
                }
            }
        }
        Ok(())
    }

    /// Polls the queued inputs (those that reported, and new ones, in that
    /// order) and stops at the first that is ready: polling takes its
    /// outcome (a join's value, a channel's message), so the others keep
    /// theirs until they are asked for, and a combinator dropped after one
    /// outcome loses nothing (CH4 in `sync::channel`). An input polled and
    /// not ready is subscribed, once per session. O(1) per input that
    /// reported (CB3).
    fn poll_ready(&mut self) -> Option<Outcome1<A>> {
        while let Some(tag) = self.ready.pop() {
            let Some(Some(slot)) = self.slots.get_mut(tag) else {
                continue; // taken meanwhile
            };
            if let Some(r) = slot.input.poll_trigger(Token(())) {
                let slot = self.slots[tag].take().expect("polled above");
                self.live -= 1;
                if let Some(key) = slot.key {
                    unsubscribe(slot.input.watch_trigger(Token(())), key);
                }
                return Some((slot.index, r));
            }
            if slot.key.is_none() {
                let w = slot.input.watch_trigger(Token(()));
                if completion_done(&w) {
                    // Done but gave nothing yet: look again next turn.
                    self.ready.queue(tag);
                    return None;
                }
                slot.key = Some(match w {
                    Watch::Once(c) => c.subscribe_tagged(&self.ready, tag),
                    Watch::Many(n) => n.subscribe_tagged(&self.ready, tag),
                });
            }
        }
        None
    }

    fn feed_done(&self) -> bool {
        self.feed.as_ref().is_none_or(|f| f.done.get())
    }

    /// The next outcome (in the order the inputs completed; inputs found
    /// complete together come in input order), or the end.
    #[track_caller]
    fn next(&mut self, at: &'static Location<'static>) -> Next<A> {
        self.begin();
        let mut first = true;
        loop {
            self.pull()?;
            if let Some((i, r)) = self.poll_ready() {
                return Ok(Event::Item(i, r));
            }
            if self.live == 0 && self.feed_done() {
                self.pull()?;
                if self.live == 0 {
                    return Ok(Event::End);
                }
                continue;
            }
            // D-20: an outcome already there beats the trigger; the
            // caller's own cancellation (below, at the checkpoint and the
            // suspension) beats both.
            if let Some(u) = &self.until {
                if u.is_completed() && !first {
                    return Err(CombineError::new(Repr::AwaitCancelled));
                }
            }
            // CB3: the inputs are subscribed (tagged); the feed and the
            // trigger for this one suspension.
            let ready = &self.ready;
            let interrupted = with_me("combinator join", |rt, me| {
                if first {
                    checkpoint(me)?;
                }
                let until = self.until.as_deref().map(|u| u.completion());
                if until.is_some_and(Completion::is_done) {
                    return Ok(()); // decided on the next turn, after the checkpoint
                }
                if ready.has_queued() {
                    return Ok(()); // reported meanwhile
                }
                let _feed = self
                    .feed
                    .as_ref()
                    .map(|f| NotifySubscription::new(&f.notify, me));
                let _until = until.map(|c| Subscription::new(c, me));
                // Named by the inputs' reports only while suspended here,
                // however the suspension ends (an unwind included).
                struct Waiting<'a>(&'a ReadySet);
                impl Drop for Waiting<'_> {
                    fn drop(&mut self) {
                        self.0.set_waiter(std::ptr::null_mut());
                    }
                }
                ready.set_waiter(me.raw.get());
                let _waiting = Waiting(ready);
                suspend_once(rt, me, b"combinator", at)
            });
            first = false;
            if let Err(c) = interrupted {
                return Err(CombineError::new(Repr::Interrupted(c)));
            }
        }
    }
}

/// Removes a tagged subscription from the list it is in.
fn unsubscribe(w: Watch<'_>, key: WaitKey) {
    match w {
        Watch::Once(c) => c.unsubscribe(key),
        Watch::Many(n) => n.unsubscribe(key),
    }
}

fn completion_done(w: &Watch<'_>) -> bool {
    match w {
        Watch::Once(c) => Completion::is_done(c),
        Watch::Many(_) => false,
    }
}

impl<A: Trigger> Drop for Engine<A> {
    fn drop(&mut self) {
        // WL3: no subscription outlives the engine.
        self.end();
        // CB2: the iterator's own coroutine is the combinator's.
        if let Some(feed) = &self.feed {
            if !feed.done.get() {
                if let Some(c) = feed.runner.borrow().as_ref() {
                    c.cancel();
                }
            }
        }
    }
}

/// The first of `inputs` to complete, with its index: one join of
/// [`any`]'s engine (CB3, D-20), for the calls that own their inputs
/// ([`select`], `time::with_timeout`). The session, and with it every
/// subscription, has ended when it returns (SL4 in `structured::select`
/// relies on it).
#[track_caller]
pub(crate) fn first<A: Trigger>(
    inputs: Vec<A>,
    until: Option<Box<dyn Awaitable>>,
    at: &'static Location<'static>,
) -> Result<Outcome1<A>, CombineError<A::Error>> {
    let mut engine = Engine::new(Inputs {
        list: inputs,
        feed: None,
    });
    engine.until = until;
    let next = engine.session().next(at)?;
    match next {
        Event::Item(i, r) => Ok((i, r)),
        Event::End => Err(CombineError::new(Repr::Exhausted)),
    }
}

/// What [`capture_errors`] and [`ignore_errors`] accept: [`All`], [`Any`],
/// [`AnyOf`], each with its *lenient* result (the errors of its inputs
/// left out).
pub trait Combinator {
    /// The error of one input.
    type Error;
    /// The result once input errors are set aside: `Vec<Option<T>>` for
    /// [`All`] (`None` where an input failed), `Option<T>` for [`Any`] (the
    /// first success), `Vec<(usize, T)>` for [`AnyOf`] (up to `n`
    /// successes, by input index).
    type Lenient;
    #[doc(hidden)]
    #[track_caller]
    fn run_lenient(
        self,
        _: Token,
        at: &'static Location<'static>,
        sink: &mut dyn FnMut(usize, Self::Error),
    ) -> Result<Self::Lenient, CombineError<Self::Error>>;
}

/// The combinator of [`all`].
pub struct All<A: Trigger> {
    engine: Engine<A>,
}

/// Waits for every input and returns their values in input order: the
/// RFC's `all($triggers)` (R-CB1). The first input to fail fails it (its
/// error and index: kind [`CombineErrorKind::Input`]); the other inputs are
/// not cancelled (D-7). See [`All::join`].
///
/// # Examples
///
/// ```
/// use async_std_api::combinators::all;
/// use async_std_api::{delay, run, spawn};
///
/// run(|| {
///     let users = spawn(|| { delay(20).unwrap(); "user" });
///     let settings = spawn(|| "settings");
///     assert_eq!(all([users, settings]).join().unwrap(), ["user", "settings"]);
/// })
/// .unwrap();
/// ```
pub fn all<A: Trigger>(inputs: impl IntoInputs<A>) -> All<A> {
    All {
        engine: Engine::new(inputs.into_inputs(Token(()))),
    }
}

impl<A: Trigger> All<A> {
    /// Ends the wait with [`CombineErrorKind::AwaitCancelled`] when
    /// `trigger` completes first: the RFC's `await all(...) until
    /// $trigger`. An input outcome that is already there wins over the
    /// trigger, the caller's own cancellation over both (D-20); the inputs
    /// go on running (R-AU3, D-7).
    ///
    /// ```
    /// use async_std_api::combinators::{all, CombineErrorKind};
    /// use async_std_api::{delay, run, spawn, timeout};
    ///
    /// run(|| {
    ///     let slow = spawn(|| delay(10_000).is_ok());
    ///     let c = slow.coroutine();
    ///     let err = all([slow]).until(timeout(5)).join().unwrap_err();
    ///     assert_eq!(err.kind(), CombineErrorKind::AwaitCancelled);
    ///     assert!(!c.is_finished() && !c.is_cancellation_requested());
    ///     c.cancel();
    /// })
    /// .unwrap();
    /// ```
    pub fn until(mut self, trigger: impl Awaitable + 'static) -> Self {
        self.engine.until = Some(Box::new(trigger));
        self
    }

    /// Waits for every input (and the iterator of a [`concurrent`] input
    /// to end).
    ///
    /// # Errors
    ///
    /// [`CombineErrorKind::Input`] at the first input that fails;
    /// [`CombineErrorKind::Iterator`] (D-24); [`CombineErrorKind::Interrupted`]
    /// if the caller is cancelled.
    ///
    /// # Panics
    ///
    /// Outside a coroutine, when it has to wait.
    ///
    /// # Cancellation
    ///
    /// A cancellation point; the inputs go on (D-7).
    #[track_caller]
    pub fn join(mut self) -> Result<Vec<A::Output>, CombineError<A::Error>> {
        let at = Location::caller();
        let mut slots: BTreeMap<usize, A::Output> = BTreeMap::new();
        let mut engine = self.engine.session();
        loop {
            match engine.next(at)? {
                Event::Item(i, Ok(v)) => {
                    slots.insert(i, v);
                }
                Event::Item(i, Err(e)) => return Err(CombineError::new(Repr::Input(i, e))),
                Event::End => return Ok(slots.into_values().collect()),
            }
        }
    }
}

impl<A: Trigger> Combinator for All<A> {
    type Error = A::Error;
    type Lenient = Vec<Option<A::Output>>;
    #[track_caller]
    fn run_lenient(
        mut self,
        _: Token,
        at: &'static Location<'static>,
        sink: &mut dyn FnMut(usize, A::Error),
    ) -> Result<Self::Lenient, CombineError<A::Error>> {
        let mut slots: BTreeMap<usize, Option<A::Output>> = BTreeMap::new();
        let mut engine = self.engine.session();
        loop {
            match engine.next(at)? {
                Event::Item(i, Ok(v)) => {
                    slots.insert(i, Some(v));
                }
                Event::Item(i, Err(e)) => {
                    slots.insert(i, None);
                    sink(i, e);
                }
                Event::End => return Ok(slots.into_values().collect()),
            }
        }
    }
}

/// The combinator of [`any`]: re-usable, each [`join`](Any::join) gives
/// the next input to complete.
pub struct Any<A: Trigger> {
    engine: Engine<A>,
}

/// Fires when an input completes: the RFC's `any($triggers)` (R-CB1).
/// Awaited again, it gives the next one (R-CO7). The other inputs are not
/// cancelled (D-7).
///
/// # Examples
///
/// The RFC's `getFirstAvailable` with an error tolerance:
///
/// ```
/// use async_std_api::combinators::any;
/// use async_std_api::{delay, run, spawn_try};
///
/// run(|| {
///     let sources = vec![
///         spawn_try(|| Err::<&str, _>("down")),
///         spawn_try(|| { delay(10)?; Ok::<_, async_std_api::Cancelled>("mirror") }),
///     ];
///     let mut trigger = any(sources);
///     let mut errors = 0;
///     let first = loop {
///         match trigger.join() {
///             Ok(v) => break v,
///             Err(_) if errors < 1 => errors += 1,
///             Err(e) => panic!("sources failed: {e}"),
///         }
///     };
///     assert_eq!((first, errors), ("mirror", 1));
/// })
/// .unwrap();
/// ```
pub fn any<A: Trigger>(inputs: impl IntoInputs<A>) -> Any<A> {
    Any {
        engine: Engine::new(inputs.into_inputs(Token(()))),
    }
}

impl<A: Trigger> Any<A> {
    /// Ends the wait with [`CombineErrorKind::AwaitCancelled`] when
    /// `trigger` completes first: the RFC's `await any(...) until
    /// $trigger`. An input outcome that is already there wins over the
    /// trigger, the caller's own cancellation over both (D-20); the inputs
    /// go on running (R-AU3, D-7); the trigger stays, so each later `join` ends at once once it completed.
    ///
    /// ```
    /// use async_std_api::combinators::{any, CombineErrorKind};
    /// use async_std_api::{delay, run, spawn, timeout};
    ///
    /// run(|| {
    ///     let slow = spawn(|| delay(10_000).is_ok());
    ///     let c = slow.coroutine();
    ///     let err = any([slow]).until(timeout(5)).join().unwrap_err();
    ///     assert_eq!(err.kind(), CombineErrorKind::AwaitCancelled);
    ///     assert!(!c.is_finished() && !c.is_cancellation_requested());
    ///     c.cancel();
    /// })
    /// .unwrap();
    /// ```
    pub fn until(mut self, trigger: impl Awaitable + 'static) -> Self {
        self.engine.until = Some(Box::new(trigger));
        self
    }

    /// Waits for the next input to complete and returns its value.
    ///
    /// # Errors
    ///
    /// [`CombineErrorKind::Input`] if that input failed (call again for
    /// the next); [`CombineErrorKind::Exhausted`] once every input was
    /// given; [`CombineErrorKind::Iterator`] (D-24);
    /// [`CombineErrorKind::Interrupted`].
    ///
    /// # Cancellation
    ///
    /// A cancellation point; the inputs go on (D-7).
    #[track_caller]
    pub fn join(&mut self) -> Result<A::Output, CombineError<A::Error>> {
        match self.engine.session().next(Location::caller())? {
            Event::Item(_, Ok(v)) => Ok(v),
            Event::Item(i, Err(e)) => Err(CombineError::new(Repr::Input(i, e))),
            Event::End => Err(CombineError::new(Repr::Exhausted)),
        }
    }
}

impl<A: Trigger> Combinator for Any<A> {
    type Error = A::Error;
    type Lenient = Option<A::Output>;
    #[track_caller]
    fn run_lenient(
        mut self,
        _: Token,
        at: &'static Location<'static>,
        sink: &mut dyn FnMut(usize, A::Error),
    ) -> Result<Self::Lenient, CombineError<A::Error>> {
        let mut engine = self.engine.session();
        loop {
            match engine.next(at)? {
                Event::Item(_, Ok(v)) => return Ok(Some(v)),
                Event::Item(i, Err(e)) => sink(i, e),
                Event::End => return Ok(None),
            }
        }
    }
}

/// The combinator of [`any_of`].
pub struct AnyOf<A: Trigger> {
    n: usize,
    engine: Engine<A>,
}

/// Fires once `n` inputs have completed: the RFC's `anyOf($n, $triggers)`
/// (R-CB1). The values come by input index, in completion order. The
/// other inputs are not cancelled (D-7).
///
/// # Examples
///
/// ```
/// use async_std_api::combinators::any_of;
/// use async_std_api::{delay, run, spawn};
///
/// run(|| {
///     let images = vec![
///         spawn(|| { delay(1).unwrap(); "preview" }),
///         spawn(|| { delay(5_000).unwrap_or(()); "full" }),
///         spawn(|| { delay(5).unwrap(); "medium" }),
///     ];
///     let two = any_of(2, images).join().unwrap();
///     assert_eq!(two, [(0, "preview"), (2, "medium")]);
/// })
/// .unwrap();
/// ```
pub fn any_of<A: Trigger>(n: usize, inputs: impl IntoInputs<A>) -> AnyOf<A> {
    AnyOf {
        n,
        engine: Engine::new(inputs.into_inputs(Token(()))),
    }
}

impl<A: Trigger> AnyOf<A> {
    /// Ends the wait with [`CombineErrorKind::AwaitCancelled`] when
    /// `trigger` completes first: the RFC's `await any_of(...) until
    /// $trigger`. An input outcome that is already there wins over the
    /// trigger, the caller's own cancellation over both (D-20); the inputs
    /// go on running (R-AU3, D-7).
    ///
    /// ```
    /// use async_std_api::combinators::{any_of, CombineErrorKind};
    /// use async_std_api::{delay, run, spawn, timeout};
    ///
    /// run(|| {
    ///     let slow = spawn(|| delay(10_000).is_ok());
    ///     let c = slow.coroutine();
    ///     let err = any_of(1, [slow]).until(timeout(5)).join().unwrap_err();
    ///     assert_eq!(err.kind(), CombineErrorKind::AwaitCancelled);
    ///     assert!(!c.is_finished() && !c.is_cancellation_requested());
    ///     c.cancel();
    /// })
    /// .unwrap();
    /// ```
    pub fn until(mut self, trigger: impl Awaitable + 'static) -> Self {
        self.engine.until = Some(Box::new(trigger));
        self
    }

    /// Waits for `n` inputs to complete.
    ///
    /// # Errors
    ///
    /// [`CombineErrorKind::Input`] at the first input that fails;
    /// [`CombineErrorKind::Exhausted`] if fewer than `n` inputs exist;
    /// [`CombineErrorKind::Iterator`] (D-24); [`CombineErrorKind::Interrupted`].
    ///
    /// # Cancellation
    ///
    /// A cancellation point; the inputs go on (D-7).
    #[track_caller]
    pub fn join(mut self) -> Indexed<A> {
        let at = Location::caller();
        let mut got = Vec::new();
        let n = self.n;
        let mut engine = self.engine.session();
        while got.len() < n {
            match engine.next(at)? {
                Event::Item(i, Ok(v)) => got.push((i, v)),
                Event::Item(i, Err(e)) => return Err(CombineError::new(Repr::Input(i, e))),
                Event::End => return Err(CombineError::new(Repr::Exhausted)),
            }
        }
        Ok(got)
    }
}

impl<A: Trigger> Combinator for AnyOf<A> {
    type Error = A::Error;
    type Lenient = Vec<(usize, A::Output)>;
    #[track_caller]
    fn run_lenient(
        mut self,
        _: Token,
        at: &'static Location<'static>,
        sink: &mut dyn FnMut(usize, A::Error),
    ) -> Result<Self::Lenient, CombineError<A::Error>> {
        let mut got = Vec::new();
        let n = self.n;
        let mut engine = self.engine.session();
        while got.len() < n {
            match engine.next(at)? {
                Event::Item(i, Ok(v)) => got.push((i, v)),
                Event::Item(i, Err(e)) => sink(i, e),
                Event::End => break,
            }
        }
        Ok(got)
    }
}

/// The combinator of [`capture_errors`].
pub struct CaptureErrors<C> {
    inner: C,
}

/// Sets the inputs' errors aside and returns them with the result: the
/// RFC's `captureErrors($awaitable)` (R-CB1). `all` then waits for every
/// input, `any` for the first success, `any_of` for `n` successes. An
/// error of a [`concurrent`] iterator is not captured: it passes through
/// (D-24).
///
/// # Examples
///
/// ```
/// use async_std_api::combinators::{all, capture_errors};
/// use async_std_api::{run, spawn_try};
///
/// run(|| {
///     let tasks = vec![
///         spawn_try(|| Ok::<_, &str>("user")),
///         spawn_try(|| Err::<&str, _>("settings unavailable")),
///     ];
///     let (result, errors) = capture_errors(all(tasks)).join().unwrap();
///     assert_eq!(result, [Some("user"), None]);
///     assert_eq!(errors.len(), 1);
///     assert_eq!(errors[0].0, 1);
/// })
/// .unwrap();
/// ```
pub fn capture_errors<C: Combinator>(inner: C) -> CaptureErrors<C> {
    CaptureErrors { inner }
}

impl<C: Combinator> CaptureErrors<C> {
    /// Runs the combinator; returns its lenient result and the inputs'
    /// errors by input index, in the order they came.
    ///
    /// # Errors
    ///
    /// Only [`CombineErrorKind::Iterator`] (D-24) and
    /// [`CombineErrorKind::Interrupted`].
    ///
    /// # Cancellation
    ///
    /// A cancellation point; the inputs go on (D-7).
    #[track_caller]
    #[allow(clippy::type_complexity)]
    pub fn join(self) -> Result<(C::Lenient, Vec<(usize, C::Error)>), CombineError<C::Error>> {
        let mut errors = Vec::new();
        let r = self
            .inner
            .run_lenient(Token(()), Location::caller(), &mut |i, e| {
                errors.push((i, e))
            })?;
        Ok((r, errors))
    }
}

/// The combinator of [`ignore_errors`].
pub struct IgnoreErrors<C, F> {
    inner: C,
    handler: F,
}

/// Passes each input error to `handler` and goes on: the RFC's
/// `ignoreErrors($awaitable, $handler)` (R-CB1). Like [`capture_errors`]
/// otherwise (an iterator error passes through, D-24).
///
/// # Examples
///
/// ```
/// use async_std_api::combinators::{any, ignore_errors};
/// use async_std_api::{delay, run, spawn_try};
///
/// run(|| {
///     let apis = vec![
///         spawn_try(|| Err::<&str, _>("api1 down")),
///         spawn_try(|| { delay(5)?; Ok::<_, async_std_api::Cancelled>("api2") }),
///     ];
///     let mut seen = Vec::new();
///     let first = ignore_errors(any(apis), |e| seen.push(e.to_string())).join().unwrap();
///     assert_eq!(first, Some("api2"));
///     assert_eq!(seen.len(), 1);
/// })
/// .unwrap();
/// ```
pub fn ignore_errors<C: Combinator, F: FnMut(C::Error)>(
    inner: C,
    handler: F,
) -> IgnoreErrors<C, F> {
    IgnoreErrors { inner, handler }
}

impl<C: Combinator, F: FnMut(C::Error)> IgnoreErrors<C, F> {
    /// Runs the combinator; each input error goes to the handler.
    ///
    /// # Errors
    ///
    /// Only [`CombineErrorKind::Iterator`] (D-24) and
    /// [`CombineErrorKind::Interrupted`].
    ///
    /// # Cancellation
    ///
    /// A cancellation point; the inputs go on (D-7).
    #[track_caller]
    pub fn join(self) -> Result<C::Lenient, CombineError<C::Error>> {
        let mut handler = self.handler;
        self.inner
            .run_lenient(Token(()), Location::caller(), &mut |_, e| handler(e))
    }
}

macro_rules! debug_combinator {
    ($($t:ident),*) => {$(
        impl<A: Trigger> fmt::Debug for $t<A> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("pending", &self.engine.live)
                    .finish()
            }
        }
    )*};
}
debug_combinator!(All, Any, AnyOf);

impl<C> fmt::Debug for CaptureErrors<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureErrors").finish_non_exhaustive()
    }
}

impl<C, F> fmt::Debug for IgnoreErrors<C, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IgnoreErrors").finish_non_exhaustive()
    }
}

// ---- errors ----

/// What ended a combinator (closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CombineErrorKind {
    /// An input failed: [`CombineError::input`] has its index and error.
    /// For [`select`]: the branch that finished first failed or was
    /// cancelled (by someone else), and the others were cancelled.
    Input,
    /// The caller was cancelled while it waited.
    Interrupted,
    /// The [`concurrent`] iterator returned an error or panicked (D-24).
    Iterator,
    /// [`Any`] was awaited again with no input left, [`AnyOf`] had
    /// fewer than `n`, or [`select`] was given no branch.
    Exhausted,
    /// The trigger given to `until` completed first (the RFC's
    /// `AwaitCancelledException`); the inputs go on (R-AU3, D-7).
    AwaitCancelled,
}

enum Repr<E> {
    Input(usize, E),
    Interrupted(Cancelled),
    Iterator(Failure),
    Exhausted,
    AwaitCancelled,
}

/// The error of a combinator: opaque, with a closed [`CombineErrorKind`];
/// `E` is the inputs' error type.
pub struct CombineError<E> {
    repr: Repr<E>,
}

impl<E> CombineError<E> {
    fn new(repr: Repr<E>) -> Self {
        CombineError { repr }
    }

    /// Kind `Input`: input `i` ended with `e` (for [`select`]).
    pub(crate) fn failed_input(i: usize, e: E) -> Self {
        CombineError::new(Repr::Input(i, e))
    }

    /// Kind `Interrupted`: the caller's own cancellation (for [`select`]).
    pub(crate) fn interrupted_by(c: Cancelled) -> Self {
        CombineError::new(Repr::Interrupted(c))
    }

    /// Kind `Exhausted`: nothing to wait for (for [`select`]).
    pub(crate) fn exhausted() -> Self {
        CombineError::new(Repr::Exhausted)
    }

    /// Which error it is.
    pub fn kind(&self) -> CombineErrorKind {
        match &self.repr {
            Repr::Input(..) => CombineErrorKind::Input,
            Repr::Interrupted(_) => CombineErrorKind::Interrupted,
            Repr::Iterator(_) => CombineErrorKind::Iterator,
            Repr::Exhausted => CombineErrorKind::Exhausted,
            Repr::AwaitCancelled => CombineErrorKind::AwaitCancelled,
        }
    }

    /// The failed input's index and error (kind `Input`).
    pub fn input(&self) -> Option<(usize, &E)> {
        match &self.repr {
            Repr::Input(i, e) => Some((*i, e)),
            _ => None,
        }
    }

    /// The failed input's error, by value (kind `Input`).
    pub fn into_input(self) -> Option<E> {
        match self.repr {
            Repr::Input(_, e) => Some(e),
            _ => None,
        }
    }

    /// The caller's own cancellation (kind `Interrupted`).
    pub fn cancelled(&self) -> Option<&Cancelled> {
        match &self.repr {
            Repr::Interrupted(c) => Some(c),
            _ => None,
        }
    }

    /// The iterator's failure (kind `Iterator`, D-24).
    pub fn iterator_failure(&self) -> Option<&Failure> {
        match &self.repr {
            Repr::Iterator(f) => Some(f),
            _ => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for CombineError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Input(i, e) => write!(f, "combinator input {i} failed: {e}"),
            Repr::Interrupted(c) => write!(f, "waiting for a combinator interrupted: {c}"),
            Repr::Iterator(x) => write!(f, "combinator input iterator failed: {x}"),
            Repr::Exhausted => write!(f, "combinator has no input left to wait for"),
            Repr::AwaitCancelled => {
                write!(
                    f,
                    "waiting for a combinator ended: the until trigger completed first"
                )
            }
        }
    }
}

impl<E: fmt::Display> fmt::Debug for CombineError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CombineError")
            .field(&self.to_string())
            .finish()
    }
}

impl<E: std::error::Error + 'static> std::error::Error for CombineError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.repr {
            Repr::Input(_, e) => Some(e),
            Repr::Interrupted(c) => Some(c),
            Repr::Iterator(f) => Some(f),
            Repr::Exhausted | Repr::AwaitCancelled => None,
        }
    }
}

#[cfg(test)]
mod tests {
    //! CB3's cost: polls per completed input, counted through a trigger
    //! that only this crate can write (the trait is sealed).

    use std::cell::Cell;
    use std::rc::Rc;

    use super::{all, any, sealed::Token, sealed::Watch, Trigger};
    use crate::core::awaitable::Latch;
    use crate::core::failure::Failure;
    use crate::core::task::suspend;
    use crate::structured::run::run;
    use crate::structured::spawn::spawn;

    /// A latch that counts how often it is polled.
    struct Counted {
        latch: Rc<Latch>,
        polls: Rc<Cell<u64>>,
    }

    impl Trigger for Counted {
        type Output = ();
        type Error = Failure;
        fn poll_trigger(&self, t: Token) -> Option<Result<(), Failure>> {
            self.polls.set(self.polls.get() + 1);
            (*self.latch).poll_trigger(t)
        }
        fn watch_trigger(&self, t: Token) -> Watch<'_> {
            (*self.latch).watch_trigger(t)
        }
    }

    /// `n` latches opened one at a time, in reverse input order, by another
    /// coroutine; the polls the combinator made.
    fn polls_for(n: usize, use_any: bool) -> u64 {
        run(move || {
            let latches: Vec<Rc<Latch>> = (0..n)
                .map(|i| Rc::new(Latch::new(format!("l{i}"))))
                .collect();
            let polls = Rc::new(Cell::new(0));
            let inputs: Vec<Counted> = latches
                .iter()
                .map(|l| Counted {
                    latch: l.clone(),
                    polls: polls.clone(),
                })
                .collect();
            let opener = spawn(move || {
                for l in latches.iter().rev() {
                    l.open();
                    suspend().unwrap();
                }
            });
            if use_any {
                let mut a = any(inputs);
                for _ in 0..n {
                    a.join().unwrap();
                }
            } else {
                assert_eq!(all(inputs).join().unwrap().len(), n);
            }
            opener.join().unwrap();
            polls.get()
        })
        .unwrap()
    }

    #[test]
    fn cb3_all_polls_each_input_a_constant_number_of_times() {
        // Once when the join starts, once when it reports: 2n, not n²/2.
        let n = 2000;
        let polls = polls_for(n, false);
        assert!(polls <= 2 * n as u64 + 2, "{polls} polls for {n} inputs");
    }

    #[test]
    fn cb3_any_joined_again_polls_only_what_reported_within_a_join() {
        // Each join opens a session (every pending input polled once);
        // within it, only the input that reported is polled again.
        let n = 200;
        let polls = polls_for(n, true);
        let per_session: u64 = (1..=n as u64).sum();
        assert!(
            polls <= per_session + 2 * n as u64,
            "{polls} polls for {n} joins"
        );
    }
}
