//! The runtime's door for other threads: a thread that is not the loop
//! thread hands a value to the loop through a [`Promise`], and a callback
//! registered on the loop thread receives it there.
//!
//! Everything another thread can reach is behind one lock: an inbox of
//! `(id, value)` pairs and the trigger's [`FireHandle`]. A delivery pushes
//! onto the inbox and, if the inbox was empty, fires the reactor trigger;
//! the trigger's callback (inside `run_once`, on the loop thread) takes the
//! whole inbox and calls each id's callback. No polling, no spinning: the
//! loop sleeps in the reactor until a delivery fires the trigger.
//!
//! Rules:
//! - **RM1** A callback is registered on the loop thread and called there:
//!   a [`Promise`]'s at most once, with `Some(value)` for a kept promise or
//!   `None` for a promise dropped unkept (the thread panicked or gave up); a
//!   [`Port`]'s once per value sent, in the order each thread sent them,
//!   then once with `None` when its last clone is dropped.
//! - **RM2** The trigger keeps the loop alive exactly while a registered
//!   callback waits: a coroutine waiting for
//!   another thread is not deadlocked, and a loop with nothing registered
//!   is not held open by the door.
//! - **RM3** [`Remote::forget`] drops a registered callback (the waiter gave
//!   up, cancelled); the promise may still be kept later, and its value is
//!   then dropped on the loop thread.
//! - **RM4** After [`Remote::close`] (teardown, before the reactor goes) a
//!   promise kept drops its value on its own thread and reports nothing;
//!   the trigger itself refuses to fire once disposed (F7 in `ffi`).
//!
//! The trigger is made on first use, so a program that never leaves the
//! loop thread pays nothing. A reactor without `AA_CAP_TRIGGER` makes
//! [`Remote::register`] fail with `AA_E_UNSUPPORTED`.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex, MutexGuard};

use async_abi::AaStatus;

use super::ffi::{Firer, TriggerEvent};
use super::Reactor;

type Value = Box<dyn Any + Send>;

/// A registered callback: called once ([`Promise`]) or for every value
/// until the last [`Port`] goes (`None` then).
enum Callback {
    Once(Box<dyn FnOnce(Option<Value>)>),
    Many(Box<dyn FnMut(Option<Value>)>),
}

/// What other threads touch.
#[derive(Default)]
struct Door {
    inbox: Vec<(u64, Option<Value>)>,
    /// `None` until the trigger exists and after [`Remote::close`] (RM4).
    fire: Option<Firer>,
}

fn lock(door: &Mutex<Door>) -> MutexGuard<'_, Door> {
    // A panic under this lock (a value's drop never runs under it) cannot
    // leave the door half-changed: recover rather than poison the loop.
    door.lock().unwrap_or_else(|p| p.into_inner())
}

/// The loop thread's side of the door.
pub(crate) struct Remote {
    reactor: Rc<Reactor>,
    door: Arc<Mutex<Door>>,
    trigger: RefCell<Option<TriggerEvent>>,
    callbacks: RefCell<HashMap<u64, Callback>>,
    next_id: Cell<u64>,
    /// Whether the trigger is referenced (RM2), to call `set_ref` only on a
    /// change.
    referenced: Cell<bool>,
    /// Handed to the trigger's callback, which must not keep the runtime
    /// alive.
    me: RefCell<Weak<Remote>>,
}

/// A value one thread owes the loop; made by [`Remote::register`], kept
/// with [`Promise::keep`] from any thread. Dropping it unkept delivers
/// `None` (RM1).
pub(crate) struct Promise<T: Send + 'static> {
    door: Arc<Mutex<Door>>,
    id: u64,
    kept: bool,
    _value: PhantomData<fn(T)>,
}

impl<T: Send + 'static> Promise<T> {
    /// Delivers `value` to the loop thread's callback.
    pub(crate) fn keep(mut self, value: T) {
        self.kept = true;
        deliver(&self.door, self.id, Some(Box::new(value)));
    }
}

impl<T: Send + 'static> Drop for Promise<T> {
    fn drop(&mut self) {
        if !self.kept {
            deliver(&self.door, self.id, None);
        }
    }
}

/// A stream of values other threads send to the loop; made by
/// [`Remote::port`]. Clones share the registration; dropping the last
/// delivers `None` (RM1).
pub(crate) struct Port<T: Send + 'static> {
    inner: Arc<PortInner>,
    _value: PhantomData<fn(T)>,
}

struct PortInner {
    door: Arc<Mutex<Door>>,
    id: u64,
}

impl<T: Send + 'static> Port<T> {
    /// Delivers `value` to the loop thread's callback.
    pub(crate) fn send(&self, value: T) {
        deliver(&self.inner.door, self.inner.id, Some(Box::new(value)));
    }
}

impl<T: Send + 'static> Clone for Port<T> {
    fn clone(&self) -> Self {
        Port {
            inner: self.inner.clone(),
            _value: PhantomData,
        }
    }
}

impl Drop for PortInner {
    fn drop(&mut self) {
        deliver(&self.door, self.id, None);
    }
}

fn deliver(door: &Mutex<Door>, id: u64, value: Option<Value>) {
    let mut d = lock(door);
    let Some(fire) = &d.fire else {
        drop(d); // RM4: closed; the value drops here, outside the lock
        drop(value);
        return;
    };
    if d.inbox.is_empty() {
        // Fired before the push, still under the lock: the loop cannot take
        // the inbox before we release it, so the push is seen. A trigger
        // already gone (teardown) just does not fire.
        fire.fire();
    }
    d.inbox.push((id, value));
}

impl Remote {
    pub(crate) fn new(reactor: Rc<Reactor>) -> Rc<Remote> {
        let remote = Rc::new(Remote {
            reactor,
            door: Arc::default(),
            trigger: RefCell::new(None),
            callbacks: RefCell::new(HashMap::new()),
            next_id: Cell::new(0),
            referenced: Cell::new(false),
            me: RefCell::new(Weak::new()),
        });
        *remote.me.borrow_mut() = Rc::downgrade(&remote);
        remote
    }

    /// Registers `on_value` (RM1) and returns the promise another thread
    /// keeps. The returned id is for [`Remote::forget`].
    pub(crate) fn register<T: Send + 'static>(
        &self,
        on_value: impl FnOnce(Option<T>) + 'static,
    ) -> Result<(u64, Promise<T>), AaStatus> {
        self.open()?;
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let callback = Callback::Once(Box::new(move |v: Option<Value>| {
            on_value(v.and_then(|v| v.downcast::<T>().ok()).map(|v| *v))
        }));
        self.callbacks.borrow_mut().insert(id, callback);
        self.update_ref();
        let promise = Promise {
            door: self.door.clone(),
            id,
            kept: false,
            _value: PhantomData,
        };
        Ok((id, promise))
    }

    /// Registers `on_value` for every value sent through the returned
    /// [`Port`] and its clones, and `None` once they are all dropped (RM1).
    pub(crate) fn port<T: Send + 'static>(
        &self,
        mut on_value: impl FnMut(Option<T>) + 'static,
    ) -> Result<Port<T>, AaStatus> {
        self.open()?;
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let callback = Callback::Many(Box::new(move |v: Option<Value>| {
            on_value(v.and_then(|v| v.downcast::<T>().ok()).map(|v| *v))
        }));
        self.callbacks.borrow_mut().insert(id, callback);
        self.update_ref();
        Ok(Port {
            inner: Arc::new(PortInner {
                door: self.door.clone(),
                id,
            }),
            _value: PhantomData,
        })
    }

    /// RM3: drops the callback of `id`, if it has not run.
    pub(crate) fn forget(&self, id: u64) {
        let callback = self.callbacks.borrow_mut().remove(&id);
        drop(callback);
        self.update_ref();
    }

    /// RM4: retires the fire handle and disposes the trigger; callbacks
    /// that still wait are dropped. Called at teardown, before the reactor
    /// is destroyed.
    pub(crate) fn close(&self) {
        let (fire, inbox) = {
            let mut d = lock(&self.door);
            (d.fire.take(), std::mem::take(&mut d.inbox))
        };
        drop(fire);
        drop(inbox);
        drop(self.trigger.borrow_mut().take());
        let callbacks = std::mem::take(&mut *self.callbacks.borrow_mut());
        drop(callbacks);
    }

    /// Makes the trigger on first use.
    fn open(&self) -> Result<(), AaStatus> {
        if self.trigger.borrow().is_some() {
            return Ok(());
        }
        let me = self.me.borrow().clone();
        let trigger = self.reactor.trigger(Box::new(move |_status| {
            if let Some(remote) = me.upgrade() {
                remote.drain();
            }
        }))?;
        lock(&self.door).fire = Some(trigger.firer());
        *self.trigger.borrow_mut() = Some(trigger);
        Ok(())
    }

    /// The trigger's callback: calls each delivered value's callback.
    fn drain(&self) {
        let inbox = std::mem::take(&mut lock(&self.door).inbox);
        for (id, value) in inbox {
            let callback = self.callbacks.borrow_mut().remove(&id);
            match callback {
                Some(Callback::Once(f)) => f(value),
                Some(Callback::Many(mut f)) => {
                    let last = value.is_none();
                    f(value);
                    if !last {
                        // Called outside the borrow: it may register more.
                        self.callbacks.borrow_mut().insert(id, Callback::Many(f));
                    }
                }
                None => drop(value), // RM3: forgotten
            }
        }
        self.update_ref();
    }

    /// RM2.
    fn update_ref(&self) {
        let want = !self.callbacks.borrow().is_empty();
        if want != self.referenced.get() {
            if let Some(t) = &*self.trigger.borrow() {
                t.set_ref(want);
                self.referenced.set(want);
            }
        }
    }
}
