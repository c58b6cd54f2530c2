//! The RFC's `Async\Context`: slots of data shared along the scope tree
//! (R-CX1) and a private store per coroutine (R-CX2).
//!
//! Owns: [`Context`] (a cheap handle, `Rc` inside), the record behind it
//! (its slots and its link to the parent context), the keys ([`Key`] and
//! string keys) and [`ContextError`].
//!
//! Where the records live:
//! - a scope's record is made on first use through the scope's hook
//!   (`ScopeState::context`), chained to the parent scope's record, which
//!   the hook makes first; so every scope context chains up to the global
//!   scope's context. It lives as long as the scope's record does (or a
//!   [`Context`] handle, or a child context, needs it);
//! - a coroutine's record is made on first use through the coroutine's hook
//!   (`CoroState::with_local_context`), with no parent: it is never
//!   inherited. The hook's owner empties it when the coroutine finishes.
//!
//! Invariants:
//! - **CX1** A record's `parent` is fixed at creation: the parent scope's
//!   record, or none (the global scope's context, a coroutine's context).
//!   `find`/`get`/`has` walk `self, parent, parent's parent, ...` and stop
//!   at the first level holding a live slot for the key (a child's slot
//!   shadows its ancestors'); the `*_local` methods read one level (D-15).
//! - **CX2** A slot keeps its value as an `Rc<dyn Any>` with the stored
//!   type's name, or a weak reference (`set_weak`). A weak slot whose value
//!   was dropped is as if unset: every read skips it, and `set` replaces it.
//! - **CX3** No `RefCell` borrow of the slots is held while user code runs:
//!   a value replaced, unset or emptied out is dropped after the borrow
//!   ends, so its destructor may use any context (even this one).
//! - **CX4** A coroutine's record is emptied when the coroutine finishes,
//!   on its own stack, before any coroutine waiting for it runs; its
//!   values are dropped then, each in its turn; a destructor's panic is
//!   caught and logged as a warning (it cannot unwind through the finish).
//!   A scope's record drops its values the same way (it may be dropped
//!   by the runtime, at its last member's finish).
//!   A destructor that calls `coroutine_context()` then gets a new, empty
//!   record, which the finish drops too (`scope::flow::coroutine_finished`
//!   loops until none is left).
//!
//! Decisions (where the RFC is open or `docs/semantics.md` settles it):
//! - D-15: `find`, `get` and `has` all walk the chain; `get` is
//!   `KeyMissing` where `find` is `Ok(None)`; the `*_local` methods read
//!   this context only (R-CX1's other reading of "local", the coroutine's
//!   context, is `coroutine_context()`).
//! - The RFC's `set($key, $value, $replace = false)` is two methods: `set`
//!   (`KeyExists` if the key has a live value here) and `replace`.
//! - Values are `Rc<T>`, shared rather than cloned; a read of another type
//!   is `WrongType`; a value destroyed with its context never unwinds
//!   into the runtime (CX4).
//! - The RFC's `WeakReference` slot is `set_weak`; a dead one is as if
//!   unset (CX2), so the RFC's "`find` gives NULL" holds, and `has` agrees.
//! - Every scope chain ends at the global context (a `Scope::new` scope's
//!   parent is the global scope); `root_context()` is the topmost scope
//!   below it, or the global context itself in the global scope (R-CX2).
//!
//! Who touches what: the loop thread only (`Rc`, `!Send`).
//!
//! Drop order: a scope's values are dropped when its record is (SC2 in
//! `scope::state`); a coroutine's values at its finish (CX4). A value read
//! out (an `Rc<T>`) lives as long as its reader keeps it.

use std::any::{type_name, Any};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, Ordering};

use super::scope::current_scope;
use super::scope::state::ScopeState;
use crate::core::events::{self, Event};
use crate::core::runtime;
use crate::core::wait::outside_runtime;

// ---- keys ----

/// An object key: the RFC's "key object". Only code that can reach the key
/// can read or write the values set under it.
///
/// The analogue of JavaScript's `Symbol` or a Kotlin `CoroutineContext.Key`:
/// each `Key::new` makes a key with its own identity, which no string and no
/// other key equals, even one with the same name. The type parameter fixes
/// the value's type, so reads through a `Key<T>` are typed with no
/// turbofish and cannot meet a value of another type.
///
/// A key is `Send + Sync` and can live in a `static` (through
/// `std::sync::LazyLock`) or a `thread_local!`. Dropping it makes the
/// values set under it unreachable by key (they stay in their contexts
/// until those are dropped).
///
/// # Examples
///
/// ```
/// use async_std_api::{current_context, run, Key};
///
/// run(|| {
///     let secret: Key<u32> = Key::new("secret");
///     current_context().set(&secret, 7).unwrap();
///     assert_eq!(*current_context().get(&secret).unwrap(), 7);
///     // Another key with the same name is another key.
///     let other: Key<u32> = Key::new("secret");
///     assert!(!current_context().has(&other));
///     assert!(!current_context().has("secret"));
/// })
/// .unwrap();
/// ```
pub struct Key<T> {
    id: u64,
    name: &'static str,
    _value: PhantomData<fn() -> T>,
}

impl<T: 'static> Key<T> {
    /// Creates a key with a new identity; `name` is for messages and
    /// `Debug` only.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::Key;
    ///
    /// let db: Key<String> = Key::new("db connection");
    /// assert_eq!(db.name(), "db connection");
    /// ```
    pub fn new(name: &'static str) -> Key<T> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Key {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            name,
            _value: PhantomData,
        }
    }

    /// The name given to [`Key::new`].
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl<T> fmt::Debug for Key<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:?}#{})", self.name, self.id)
    }
}

/// The identity of a key, borrowed for one call.
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub enum KeyRef<'a> {
    Str(&'a str),
    Object { id: u64, name: &'static str },
}

impl KeyRef<'_> {
    fn name(&self) -> KeyName {
        match *self {
            KeyRef::Str(s) => KeyName::Str(s.into()),
            KeyRef::Object { name, .. } => KeyName::Object(name),
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Anything that names a slot: a string (`&str`, `&String`) or an object
/// key (`&`[`Key`]). Used by the methods that do not read a value
/// ([`Context::has`], [`Context::unset`]). Sealed.
pub trait ContextKey: sealed::Sealed {
    #[doc(hidden)]
    fn key_ref(&self) -> KeyRef<'_>;
}

/// A key through which a value of type `T` can be read or written: a
/// string (any `T`, named at the call: `ctx.get::<u32>("id")`) or a
/// `&Key<T>` (exactly `T`, inferred). Sealed.
pub trait ContextKeyFor<T>: ContextKey {}

impl sealed::Sealed for &str {}
impl ContextKey for &str {
    fn key_ref(&self) -> KeyRef<'_> {
        KeyRef::Str(self)
    }
}
impl<T> ContextKeyFor<T> for &str {}

impl sealed::Sealed for &String {}
impl ContextKey for &String {
    fn key_ref(&self) -> KeyRef<'_> {
        KeyRef::Str(self.as_str())
    }
}
impl<T> ContextKeyFor<T> for &String {}

impl<T> sealed::Sealed for &Key<T> {}
impl<T> ContextKey for &Key<T> {
    fn key_ref(&self) -> KeyRef<'_> {
        KeyRef::Object {
            id: self.id,
            name: self.name,
        }
    }
}
impl<T> ContextKeyFor<T> for &Key<T> {}

// ---- errors ----

/// Why a context operation failed: a closed set (S9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContextErrorKind {
    /// [`Context::get`] / [`Context::get_local`]: no live slot for the key
    /// (where [`Context::find`] returns `None`; D-15).
    KeyMissing,
    /// [`Context::set`]: the key already has a value in this context (the
    /// RFC's `set($key, $value, replace: false)`); [`Context::replace`]
    /// overwrites.
    KeyExists,
    /// A read asked for another type than the one stored.
    WrongType,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum KeyName {
    Str(Box<str>),
    Object(&'static str),
}

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyName::Str(s) => write!(f, "context key {s:?}"),
            KeyName::Object(n) => write!(f, "context key object {n:?}"),
        }
    }
}

/// The error of a [`Context`] operation: which key, and why
/// ([`ContextErrorKind`]).
///
/// Its `Display` is one line, e.g. `context key "user_id" not found`,
/// `context key "user_id" already set (use replace to overwrite it)`,
/// `context key "user_id" holds i64, not u32`; an object key shows as
/// `context key object "db connection"`.
///
/// # Examples
///
/// ```
/// use async_std_api::{current_context, run};
///
/// run(|| {
///     let e = current_context().get::<u32>("user_id").unwrap_err();
///     assert!(e.is_key_missing());
///     assert_eq!(e.to_string(), "context key \"user_id\" not found");
/// })
/// .unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextError {
    kind: ContextErrorKind,
    key: KeyName,
    /// WrongType: the stored type and the requested one.
    types: Option<(&'static str, &'static str)>,
}

impl ContextError {
    fn new(kind: ContextErrorKind, key: KeyRef<'_>) -> ContextError {
        ContextError {
            kind,
            key: key.name(),
            types: None,
        }
    }

    /// Why it failed.
    pub fn kind(&self) -> ContextErrorKind {
        self.kind
    }

    /// No live slot for the key ([`ContextErrorKind::KeyMissing`]).
    pub fn is_key_missing(&self) -> bool {
        self.kind == ContextErrorKind::KeyMissing
    }

    /// The key already had a value ([`ContextErrorKind::KeyExists`]).
    pub fn is_key_exists(&self) -> bool {
        self.kind == ContextErrorKind::KeyExists
    }

    /// The value is of another type ([`ContextErrorKind::WrongType`]).
    pub fn is_wrong_type(&self) -> bool {
        self.kind == ContextErrorKind::WrongType
    }
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ContextErrorKind::KeyMissing => write!(f, "{} not found", self.key),
            ContextErrorKind::KeyExists => {
                write!(f, "{} already set (use replace to overwrite it)", self.key)
            }
            ContextErrorKind::WrongType => {
                let (stored, wanted) = self.types.unwrap_or(("?", "?"));
                write!(f, "{} holds {stored}, not {wanted}", self.key)
            }
        }
    }
}

impl std::error::Error for ContextError {}

// ---- slots ----

/// A weak reference, type-erased (CX2).
trait WeakAny {
    fn upgrade_any(&self) -> Option<Rc<dyn Any>>;
}

impl<T: 'static> WeakAny for Weak<T> {
    fn upgrade_any(&self) -> Option<Rc<dyn Any>> {
        self.upgrade().map(|v| v as Rc<dyn Any>)
    }
}

enum Value {
    Strong(Rc<dyn Any>),
    Weak(Box<dyn WeakAny>),
}

/// One slot (CX2).
struct Slot {
    value: Value,
    type_name: &'static str,
}

impl Slot {
    /// The value, if the slot is live (CX2: a dead weak slot is not).
    fn live(&self) -> Option<Rc<dyn Any>> {
        match &self.value {
            Value::Strong(v) => Some(v.clone()),
            Value::Weak(w) => w.upgrade_any(),
        }
    }

    fn is_live(&self) -> bool {
        match &self.value {
            Value::Strong(_) => true,
            Value::Weak(w) => w.upgrade_any().is_some(),
        }
    }
}

#[derive(Default)]
struct Slots {
    strings: HashMap<Box<str>, Slot>,
    objects: HashMap<u64, Slot>,
}

impl Slots {
    fn get(&self, key: KeyRef<'_>) -> Option<&Slot> {
        match key {
            KeyRef::Str(s) => self.strings.get(s),
            KeyRef::Object { id, .. } => self.objects.get(&id),
        }
    }

    fn insert(&mut self, key: KeyRef<'_>, slot: Slot) -> Option<Slot> {
        match key {
            KeyRef::Str(s) => self.strings.insert(s.into(), slot),
            KeyRef::Object { id, .. } => self.objects.insert(id, slot),
        }
    }

    fn remove(&mut self, key: KeyRef<'_>) -> Option<Slot> {
        match key {
            KeyRef::Str(s) => self.strings.remove(s),
            KeyRef::Object { id, .. } => self.objects.remove(&id),
        }
    }
}

/// The record behind a [`Context`] handle.
pub(crate) struct Record {
    /// CX1.
    parent: Option<Rc<Record>>,
    /// CX2, CX3.
    slots: RefCell<Slots>,
}

impl Record {
    fn new(parent: Option<Rc<Record>>) -> Rc<Record> {
        Rc::new(Record {
            parent,
            slots: RefCell::new(Slots::default()),
        })
    }

    /// The live value for `key` at this level, if any (CX2).
    fn live(&self, key: KeyRef<'_>) -> Option<(Rc<dyn Any>, &'static str)> {
        let slots = self.slots.borrow();
        let slot = slots.get(key)?;
        slot.live().map(|v| (v, slot.type_name))
    }

    /// Empties the record; the values are dropped after the borrow ends
    /// (CX3), each in its turn, a panic caught and logged (CX4).
    fn clear(&self) {
        loop {
            let slots = std::mem::take(&mut *self.slots.borrow_mut());
            if slots.strings.is_empty() && slots.objects.is_empty() {
                return;
            }
            let values = slots
                .strings
                .into_values()
                .chain(slots.objects.into_values());
            for slot in values {
                if let Err(p) = catch_unwind(AssertUnwindSafe(move || drop(slot))) {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a non-string panic".to_string());
                    events::emit(Event::ContextDropPanicked { message: msg });
                }
            }
        }
    }
}

impl Drop for Record {
    /// CX4: a scope's record may be dropped inside the runtime (its last
    /// member's finish), where a destructor's panic must not unwind.
    fn drop(&mut self) {
        self.clear();
    }
}

/// Turns a found value into `Rc<T>`, or the wrong-type error.
fn typed<T: 'static>(
    found: (Rc<dyn Any>, &'static str),
    key: KeyRef<'_>,
) -> Result<Rc<T>, ContextError> {
    found.0.downcast::<T>().map_err(|_| ContextError {
        types: Some((found.1, type_name::<T>())),
        ..ContextError::new(ContextErrorKind::WrongType, key)
    })
}

// ---- the handle ----

/// A store of values shared along the scope tree: the RFC's
/// `Async\Context`.
///
/// The analogue of a `HashMap<Key, Rc<dyn Any>>` with a parent link, like
/// Go's `context.WithValue` chain but mutable, or a Kotlin
/// `CoroutineContext` with object keys. Each scope has one
/// ([`ScopeRef::context`](crate::ScopeRef::context), [`current_context`]),
/// chained to its parent scope's (R-CX1); each coroutine has a private one
/// ([`coroutine_context`], R-CX2).
///
/// Reads:
/// - [`find`](Context::find) / [`get`](Context::get) /
///   [`has`](Context::has) look in this context, then its parent, up to the
///   global context; the nearest slot wins (D-15: the RFC's example reads a
///   server-scope key with `get`). `find` returns `Ok(None)` where `get`
///   returns [`ContextErrorKind::KeyMissing`];
/// - [`find_local`](Context::find_local), [`get_local`](Context::get_local),
///   [`has_local`](Context::has_local) look in this context only.
///
/// Values are stored as `Rc<T>` and read back as `Rc<T>`, typed: no
/// `Clone` bound, no copy, and a value meant to change uses a `Cell` or
/// `RefCell` inside. Reading with another type than the stored one is
/// [`ContextErrorKind::WrongType`], never a panic. A value is dropped when
/// its slot is replaced or unset, or its context is dropped, unless a
/// reader still holds its `Rc`.
///
/// `Clone` gives another handle to the same context. Dropping a handle does
/// nothing to the values: they live with the scope (or the coroutine). When
/// a context is dropped, a panic in a value's destructor is caught and
/// logged as a warning; one in a value dropped by [`replace`](Context::replace)
/// or [`unset`](Context::unset) reaches their caller, like any drop.
///
/// No method suspends: none is a cancellation point, and none panics.
///
/// # Examples
///
/// The RFC's first example: a value set in the current scope's context is
/// read by a coroutine spawned into it.
///
/// ```
/// use async_std_api::{current_context, run, spawn};
///
/// run(|| {
///     current_context().set("user_id", 123).unwrap();
///     let h = spawn(|| *current_context().get::<i32>("user_id").unwrap());
///     assert_eq!(h.join().unwrap(), 123);
/// })
/// .unwrap();
/// ```
#[derive(Clone)]
pub struct Context {
    record: Rc<Record>,
}

impl Context {
    /// The value for `key` here or in the nearest ancestor context that
    /// has it (the RFC's `find`); `Ok(None)` if none has it.
    ///
    /// A weak slot ([`set_weak`](Context::set_weak)) gives back its value
    /// if it is still alive; a dead one is skipped, as if unset (the RFC's
    /// `WeakReference` dereference).
    ///
    /// # Errors
    ///
    /// [`ContextErrorKind::WrongType`] if the nearest value is not a `T`
    /// (the search does not go on past it).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{run, Scope};
    ///
    /// run(|| {
    ///     let parent = Scope::new();
    ///     parent.context().set("server_id", "s1").unwrap();
    ///     let child = Scope::inherit_from(&parent);
    ///     let found = child.context().find::<&str>("server_id").unwrap();
    ///     assert_eq!(*found.unwrap(), "s1");
    ///     assert!(child.context().find::<&str>("nothing").unwrap().is_none());
    /// })
    /// .unwrap();
    /// ```
    pub fn find<T: 'static>(
        &self,
        key: impl ContextKeyFor<T>,
    ) -> Result<Option<Rc<T>>, ContextError> {
        self.find_ref(key.key_ref())
    }

    fn find_ref<T: 'static>(&self, key: KeyRef<'_>) -> Result<Option<Rc<T>>, ContextError> {
        let mut level = Some(&self.record);
        while let Some(r) = level {
            if let Some(found) = r.live(key) {
                return typed(found, key).map(Some);
            }
            level = r.parent.as_ref();
        }
        Ok(None)
    }

    /// The value for `key` here or in the nearest ancestor context that
    /// has it (D-15: `get` walks the chain like `find`).
    ///
    /// # Errors
    ///
    /// [`ContextErrorKind::KeyMissing`] if no context of the chain has a
    /// live slot for it; [`ContextErrorKind::WrongType`] if the nearest
    /// value is not a `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run};
    ///
    /// run(|| {
    ///     current_context().set("answer", 42u8).unwrap();
    ///     assert_eq!(*current_context().get::<u8>("answer").unwrap(), 42);
    ///     let e = current_context().get::<u32>("answer").unwrap_err();
    ///     assert_eq!(e.to_string(), "context key \"answer\" holds u8, not u32");
    /// })
    /// .unwrap();
    /// ```
    pub fn get<T: 'static>(&self, key: impl ContextKeyFor<T>) -> Result<Rc<T>, ContextError> {
        let key = key.key_ref();
        self.find_ref(key)?
            .ok_or_else(|| ContextError::new(ContextErrorKind::KeyMissing, key))
    }

    /// True if this context or an ancestor has a live slot for `key`
    /// (D-15), whatever the value's type.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run, Scope};
    ///
    /// run(|| {
    ///     current_context().set("flag", ()).unwrap();
    ///     let child = Scope::inherit();
    ///     assert!(child.context().has("flag"));
    ///     assert!(!child.context().has_local("flag"));
    /// })
    /// .unwrap();
    /// ```
    pub fn has(&self, key: impl ContextKey) -> bool {
        let key = key.key_ref();
        let mut level = Some(&self.record);
        while let Some(r) = level {
            if r.slots.borrow().get(key).is_some_and(Slot::is_live) {
                return true;
            }
            level = r.parent.as_ref();
        }
        false
    }

    /// [`find`](Context::find) in this context only (D-15: the `*_local`
    /// methods read one level).
    ///
    /// # Errors
    ///
    /// [`ContextErrorKind::WrongType`] if the value is not a `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run, Scope};
    ///
    /// run(|| {
    ///     current_context().set("k", 1).unwrap();
    ///     let child = Scope::inherit();
    ///     assert!(child.context().find_local::<i32>("k").unwrap().is_none());
    ///     assert_eq!(*child.context().find::<i32>("k").unwrap().unwrap(), 1);
    /// })
    /// .unwrap();
    /// ```
    pub fn find_local<T: 'static>(
        &self,
        key: impl ContextKeyFor<T>,
    ) -> Result<Option<Rc<T>>, ContextError> {
        self.find_local_ref(key.key_ref())
    }

    fn find_local_ref<T: 'static>(&self, key: KeyRef<'_>) -> Result<Option<Rc<T>>, ContextError> {
        match self.record.live(key) {
            Some(found) => typed(found, key).map(Some),
            None => Ok(None),
        }
    }

    /// [`get`](Context::get) in this context only (D-15).
    ///
    /// # Errors
    ///
    /// [`ContextErrorKind::KeyMissing`] if this context has no live slot
    /// for it, even if an ancestor has (REF-23);
    /// [`ContextErrorKind::WrongType`] if the value is not a `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run, Scope};
    ///
    /// run(|| {
    ///     current_context().set("k", 1).unwrap();
    ///     let child = Scope::inherit();
    ///     assert!(child.context().get_local::<i32>("k").unwrap_err().is_key_missing());
    /// })
    /// .unwrap();
    /// ```
    pub fn get_local<T: 'static>(&self, key: impl ContextKeyFor<T>) -> Result<Rc<T>, ContextError> {
        let key = key.key_ref();
        self.find_local_ref(key)?
            .ok_or_else(|| ContextError::new(ContextErrorKind::KeyMissing, key))
    }

    /// True if this context itself has a live slot for `key` (D-15).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run};
    ///
    /// run(|| {
    ///     assert!(!current_context().has_local("k"));
    ///     current_context().set("k", 1).unwrap();
    ///     assert!(current_context().has_local("k"));
    /// })
    /// .unwrap();
    /// ```
    pub fn has_local(&self, key: impl ContextKey) -> bool {
        let key = key.key_ref();
        self.record
            .slots
            .borrow()
            .get(key)
            .is_some_and(Slot::is_live)
    }

    /// Sets `key` to `value` in this context: the RFC's `set($key, $value)`
    /// (`replace: false`). The slot shadows the ancestors' slots for the
    /// same key (REF-23); the ancestors keep theirs.
    ///
    /// The RFC's `replace: true` is [`replace`](Context::replace): two
    /// methods, not a `bool` argument. The RFC's `set` returns the context
    /// for chaining; `?` chains here.
    ///
    /// # Errors
    ///
    /// [`ContextErrorKind::KeyExists`] if this context already has a live
    /// slot for `key` (whatever its type); `value` is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run};
    ///
    /// run(|| {
    ///     let ctx = current_context();
    ///     ctx.set("id", 1).unwrap();
    ///     let e = ctx.set("id", 2).unwrap_err();
    ///     assert_eq!(
    ///         e.to_string(),
    ///         "context key \"id\" already set (use replace to overwrite it)"
    ///     );
    ///     assert_eq!(*ctx.get::<i32>("id").unwrap(), 1);
    /// })
    /// .unwrap();
    /// ```
    pub fn set<T: 'static>(
        &self,
        key: impl ContextKeyFor<T>,
        value: T,
    ) -> Result<(), ContextError> {
        let slot = Slot {
            value: Value::Strong(Rc::new(value)),
            type_name: type_name::<T>(),
        };
        self.insert(key.key_ref(), slot)
    }

    /// Sets `key` to `value` in this context, replacing a value it had
    /// (of any type): the RFC's `set($key, $value, replace: true)`.
    /// Returns true if a live value was replaced; that value is dropped
    /// before `replace` returns (unless a reader still holds it).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run};
    ///
    /// run(|| {
    ///     let ctx = current_context();
    ///     assert!(!ctx.replace("id", 1));
    ///     assert!(ctx.replace("id", 2));
    ///     assert_eq!(*ctx.get::<i32>("id").unwrap(), 2);
    /// })
    /// .unwrap();
    /// ```
    pub fn replace<T: 'static>(&self, key: impl ContextKeyFor<T>, value: T) -> bool {
        let slot = Slot {
            value: Value::Strong(Rc::new(value)),
            type_name: type_name::<T>(),
        };
        let old = self.record.slots.borrow_mut().insert(key.key_ref(), slot);
        // CX3: dropped after the borrow.
        old.is_some_and(|s| s.is_live())
    }

    /// Sets `key` to a weak reference in this context: the RFC's slot
    /// holding a `WeakReference`. Reads give back the value while it is
    /// alive (as an `Rc<T>`, like a strong slot), and treat the slot as
    /// unset once it is dropped (CX2): `find` returns `None`, `get` is
    /// [`ContextErrorKind::KeyMissing`], `has` is false, and `set` may
    /// replace it. The context never keeps the value alive.
    ///
    /// # Errors
    ///
    /// [`ContextErrorKind::KeyExists`] if this context already has a live
    /// slot for `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::rc::Rc;
    /// use async_std_api::{current_context, run, spawn};
    ///
    /// run(|| {
    ///     let pdo = Rc::new(String::from("sqlite::memory:"));
    ///     current_context().set_weak("pdo", Rc::downgrade(&pdo)).unwrap();
    ///     let h = spawn(|| current_context().find::<String>("pdo").unwrap().is_some());
    ///     assert!(h.join().unwrap());
    ///     drop(pdo);
    ///     assert!(current_context().find::<String>("pdo").unwrap().is_none());
    /// })
    /// .unwrap();
    /// ```
    pub fn set_weak<T: 'static>(
        &self,
        key: impl ContextKeyFor<T>,
        value: Weak<T>,
    ) -> Result<(), ContextError> {
        let slot = Slot {
            value: Value::Weak(Box::new(value)),
            type_name: type_name::<T>(),
        };
        self.insert(key.key_ref(), slot)
    }

    fn insert(&self, key: KeyRef<'_>, slot: Slot) -> Result<(), ContextError> {
        let mut slots = self.record.slots.borrow_mut();
        if slots.get(key).is_some_and(Slot::is_live) {
            drop(slots);
            // CX3: `slot` (the refused value) drops after the borrow.
            return Err(ContextError::new(ContextErrorKind::KeyExists, key));
        }
        let dead = slots.insert(key, slot);
        drop(slots);
        drop(dead);
        Ok(())
    }

    /// Removes `key` from this context (not from its ancestors, whose slot
    /// becomes visible again): the RFC's `unset`. Returns true if a live
    /// value was removed; it is dropped before `unset` returns (unless a
    /// reader still holds it).
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{current_context, run, Scope};
    ///
    /// run(|| {
    ///     current_context().set("k", "outer").unwrap();
    ///     let child = Scope::inherit();
    ///     child.context().set("k", "inner").unwrap();
    ///     assert!(child.context().unset("k"));
    ///     assert_eq!(*child.context().get::<&str>("k").unwrap(), "outer");
    ///     assert!(!child.context().unset("k"));
    /// })
    /// .unwrap();
    /// ```
    pub fn unset(&self, key: impl ContextKey) -> bool {
        let old = self.record.slots.borrow_mut().remove(key.key_ref());
        // CX3: dropped after the borrow.
        old.is_some_and(|s| s.is_live())
    }

    /// The parent context: the parent scope's (R-CX1); `None` for the
    /// global context and for a coroutine's context.
    ///
    /// # Examples
    ///
    /// ```
    /// use async_std_api::{coroutine_context, current_context, root_context, run, Scope};
    ///
    /// run(|| {
    ///     let child = Scope::inherit();
    ///     assert!(child.context().parent().unwrap().ptr_eq(&current_context()));
    ///     assert!(current_context().parent().is_none()); // main: the global scope
    ///     assert!(coroutine_context().parent().is_none());
    ///     assert!(root_context().ptr_eq(&current_context()));
    /// })
    /// .unwrap();
    /// ```
    pub fn parent(&self) -> Option<Context> {
        self.record.parent.clone().map(|record| Context { record })
    }

    /// True if both handles are the same context.
    pub fn ptr_eq(&self, other: &Context) -> bool {
        Rc::ptr_eq(&self.record, &other.record)
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slots = self.record.slots.borrow();
        let mut names: Vec<String> = slots.strings.keys().map(|k| format!("{k:?}")).collect();
        names.sort();
        f.debug_struct("Context")
            .field("keys", &names)
            .field("object_keys", &slots.objects.len())
            .field("has_parent", &self.record.parent.is_some())
            .finish()
    }
}

// ---- where contexts come from ----

/// A scope's context (R-CX1), through the scope's hook: made on first use,
/// chained to the parent scope's.
pub(crate) fn of_scope(scope: &ScopeState) -> Context {
    Context {
        record: scope.context::<Record>(&Record::new),
    }
}

/// The current coroutine's scope's context: the RFC's
/// `Async\currentContext()`.
///
/// The same as [`current_scope`](crate::current_scope)`().`[`context`](crate::ScopeRef::context)`()`:
/// in the main coroutine (and a coroutine spawned into the global scope)
/// it is the global context.
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{current_context, current_scope, run, spawn_in, Scope};
///
/// run(|| {
///     assert!(current_context().ptr_eq(&current_scope().context()));
///     let scope = Scope::new();
///     scope.context().set("in", 1).unwrap();
///     let h = spawn_in(&scope, || *current_context().get::<i32>("in").unwrap()).unwrap();
///     assert_eq!(h.join().unwrap(), 1);
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn current_context() -> Context {
    if runtime::with_runtime(|_| ()).is_none() {
        outside_runtime("current_context");
    }
    current_scope().context()
}

/// The context at the root of the current scope's hierarchy: the RFC's
/// `Async\rootContext()`.
///
/// The root of a hierarchy is its topmost scope below the global scope (a
/// [`Scope::new`](crate::Scope::new) scope, or one inherited from the
/// global scope); in the global scope itself (the main coroutine) it is
/// the global context, the RFC's "global application context".
///
/// Every scope context chains up to the global context, so a value set
/// there is found from any scope (a decision: the RFC leaves it open).
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{root_context, run, spawn_in, Scope};
///
/// run(|| {
///     let server = Scope::new();
///     let request = Scope::inherit_from(&server);
///     let h = spawn_in(&request, || root_context()).unwrap();
///     assert!(h.join().unwrap().ptr_eq(&server.context()));
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn root_context() -> Context {
    if runtime::with_runtime(|_| ()).is_none() {
        outside_runtime("root_context");
    }
    let mut scope = current_scope().state;
    while let Some(p) = scope.parent.clone() {
        if p.is_global {
            break;
        }
        scope = p;
    }
    of_scope(&scope)
}

/// The owner of a coroutine's context, kept in the coroutine's hook: the
/// hook drops it when the coroutine finishes, which empties the context
/// (CX4).
struct LocalOwner(Context);

impl Drop for LocalOwner {
    fn drop(&mut self) {
        self.0.record.clear();
    }
}

/// The running coroutine's private context: the RFC's
/// `Async\coroutineContext()`.
///
/// It has no parent, and a coroutine spawned from this one does not see it
/// (R-CX2): each coroutine has its own, made on first use (a coroutine that
/// never calls this pays nothing for it).
///
/// When the coroutine finishes (returns, fails, or is cancelled), the
/// context is emptied: its values are dropped then, on the coroutine's own
/// stack, after its [`on_finally`](crate::on_finally) handlers (which may
/// still use it) and before any coroutine waiting for it runs (CX4). A
/// panic in a value's destructor is caught and logged as a warning; a
/// value a destructor sets meanwhile is dropped too.
///
/// Currently, but not guaranteed: a handle kept past the finish still
/// works, and values set through it then live until the last handle is
/// dropped.
///
/// # Panics
///
/// Outside a coroutine.
///
/// # Examples
///
/// ```
/// use async_std_api::{coroutine_context, run, spawn};
///
/// run(|| {
///     coroutine_context().set("data", "this local data").unwrap();
///     let h = spawn(|| coroutine_context().find::<&str>("data").unwrap().is_none());
///     assert!(h.join().unwrap(), "not inherited");
///     assert_eq!(*coroutine_context().get::<&str>("data").unwrap(), "this local data");
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn coroutine_context() -> Context {
    let context = runtime::with_running(|_, me| {
        me.with_local_context(
            || {
                LocalOwner(Context {
                    record: Record::new(None),
                })
            },
            |owner: &mut LocalOwner| owner.0.clone(),
        )
    });
    // Not in a closure: the panic names the caller's line.
    let Some(context) = context else {
        panic!("coroutine_context called outside a coroutine: run the program inside async_std_api::run")
    };
    context
}
