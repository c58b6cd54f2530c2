//! Fibers: the Fiber API of PHP's Fibers RFC, for library authors who want
//! generator-like control (a parser that suspends for input, a task
//! scheduler of their own) inside or outside coroutines.
//!
//! A [`Fiber`] runs a closure on its own stack. [`start`](Fiber::start)
//! runs it until it calls [`Fiber::suspend`] (or returns);
//! [`resume`](Fiber::resume) continues it with a value, which
//! `Fiber::suspend` returns inside; [`throw`](Fiber::throw) continues it
//! with an error instead. A fiber's suspension returns to whoever resumed
//! it, not to the scheduler: fibers are synchronous, nested control flow on
//! the calling thread. A fiber inside a coroutine runs on that coroutine's
//! thread, and a blocking call inside the fiber (a `delay`, a read)
//! suspends the whole coroutine as usual, fiber stack included.
//!
//! Rules:
//! - **FB1** A fiber is started once; only a suspended fiber is resumed or
//!   thrown into; `Fiber::suspend` works only inside a fiber. Each misuse
//!   is a [`FiberError`] naming it, never a panic or undefined behaviour.
//! - **FB2** Fibers nest: a fiber may start and resume others; each
//!   `Fiber::suspend` leaves the innermost running fiber of the calling
//!   coroutine (or thread, outside coroutines).
//! - **FB3** A panic in a fiber ends it (terminated) and continues in its
//!   resumer, from `start`/`resume`/`throw`.
//! - **FB4** Dropping the last handle of a suspended fiber unwinds its
//!   stack (its locals are dropped, as the RFC's destructor does).
//!
//! # Backend differences
//!
//! The fiber's stack is this crate's own (a `corosensei` stack with a guard
//! page), not one of the scheduler plugin's: an overflow there is not
//! reported by the scheduler's handler (it faults as an overflow of a
//! thread's stack would).
//!
//! # Examples
//!
//! ```
//! use async_std_api::fiber::Fiber;
//!
//! // A generator of squares: each suspension hands one out.
//! let squares: Fiber<u64, &str> = Fiber::new(|limit| {
//!     for i in 1..=limit {
//!         Fiber::suspend(i * i).unwrap();
//!     }
//!     "done"
//! });
//! let mut got = vec![squares.start(4).unwrap().unwrap()];
//! while let Some(v) = squares.resume(0).unwrap() {
//!     got.push(v);
//! }
//! assert_eq!(got, [1, 4, 9, 16]);
//! assert_eq!(squares.get_return().unwrap(), "done");
//! ```
#![allow(unsafe_code)] // `Fiber::suspend` reaching its fiber's slot and yielder

use std::any::TypeId;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::rc::Rc;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::core::runtime::with_running;

/// The default fiber stack (a guard page below it): the coroutines' own
/// default, [`crate::DEFAULT_STACK_SIZE`] (2 MiB in a debug build, 256 KiB
/// in a release build).
pub const DEFAULT_STACK_SIZE: usize = crate::core::runtime::DEFAULT_STACK_SIZE;

/// What a fiber is resumed with; the value itself waits in the fiber's
/// slot (no allocation per transfer).
enum Resume {
    Value,
    Throw(Box<dyn std::error::Error + Send + Sync + 'static>),
}

type Core = Coroutine<Resume, (), (), DefaultStack>;

/// The lifecycle the RFC's queries report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Init,
    Running,
    Suspended,
    Terminated,
    /// Terminated by a panic (no return value).
    Failed,
}

/// A running fiber as `Fiber::suspend` finds it (FB2).
struct Frame {
    /// The coroutine that runs it now (0: outside coroutines).
    owner: u64,
    id: u64,
    /// The type the fiber transfers, checked by `suspend`.
    value: TypeId,
    /// The fiber's `Cell<Option<V>>` slot, of the type `value` names.
    slot: *const (),
    /// The fiber's yielder, valid while the fiber runs (it lives on the
    /// fiber's stack, which is not unwound while a frame names it).
    yielder: *const Yielder<Resume, ()>,
}

thread_local! {
    /// Running fibers of this thread, innermost of each owner last.
    static RUNNING: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

fn owner() -> u64 {
    with_running(|_, me| me.id().0).unwrap_or(0)
}

fn push(frame: Frame) {
    RUNNING.with(|r| r.borrow_mut().push(frame));
}

/// The innermost running fiber of `owner`, taken off the list.
fn pop(owner: u64) -> Option<Frame> {
    RUNNING.with(|r| {
        let mut r = r.borrow_mut();
        let at = r.iter().rposition(|f| f.owner == owner)?;
        Some(r.remove(at))
    })
}

fn top_id(owner: u64) -> Option<u64> {
    RUNNING.with(|r| {
        r.borrow()
            .iter()
            .rev()
            .find(|f| f.owner == owner)
            .map(|f| f.id)
    })
}

/// A fiber: a closure on its own stack that suspends to its resumer.
/// `V` is the type of the values passed in and out (the start argument,
/// each suspension's value and each resumption's), `R` its return type.
/// A cheap handle: clones refer to the same fiber.
///
/// See the [module](self) for the rules and an example.
pub struct Fiber<V: 'static = (), R: 'static = ()> {
    inner: Rc<Inner<V, R>>,
}

struct Inner<V, R> {
    id: u64,
    state: Cell<State>,
    core: RefCell<Option<Core>>,
    /// The value in transit, either way.
    slot: Rc<Cell<Option<V>>>,
    ret: Rc<RefCell<Option<R>>>,
}

impl<V: 'static, R: 'static> Clone for Fiber<V, R> {
    fn clone(&self) -> Self {
        Fiber {
            inner: self.inner.clone(),
        }
    }
}

impl<V: 'static, R: 'static> Fiber<V, R> {
    /// A fiber that will run `f` with the argument of
    /// [`start`](Fiber::start), on a stack of [`DEFAULT_STACK_SIZE`].
    ///
    /// # Panics
    ///
    /// If the stack cannot be mapped (out of memory or mappings); see
    /// [`with_stack_size`](Fiber::with_stack_size) for the error instead.
    pub fn new(f: impl FnOnce(V) -> R + 'static) -> Fiber<V, R> {
        Fiber::with_stack_size(DEFAULT_STACK_SIZE, f)
            .unwrap_or_else(|e| panic!("cannot make a fiber stack: {e}"))
    }

    /// [`new`](Fiber::new) with a stack of `size` bytes (rounded up to
    /// pages).
    ///
    /// # Errors
    ///
    /// The operating system's error mapping the stack.
    pub fn with_stack_size(
        size: usize,
        f: impl FnOnce(V) -> R + 'static,
    ) -> io::Result<Fiber<V, R>> {
        let id = NEXT_ID.with(|n| {
            let id = n.get();
            n.set(id + 1);
            id
        });
        let stack = DefaultStack::new(size)?;
        let slot: Rc<Cell<Option<V>>> = Rc::new(Cell::new(None));
        let ret: Rc<RefCell<Option<R>>> = Rc::new(RefCell::new(None));
        let (s, r) = (slot.clone(), ret.clone());
        let core = Coroutine::with_stack(stack, move |y: &Yielder<Resume, ()>, _first: Resume| {
            let me = owner();
            push(Frame {
                owner: me,
                id,
                value: TypeId::of::<V>(),
                slot: Rc::as_ptr(&s).cast(),
                yielder: y,
            });
            let arg = s.take().expect("start puts the argument in the slot");
            let out = f(arg);
            pop(owner());
            *r.borrow_mut() = Some(out);
        });
        Ok(Fiber {
            inner: Rc::new(Inner {
                id,
                state: Cell::new(State::Init),
                core: RefCell::new(Some(core)),
                slot,
                ret,
            }),
        })
    }

    /// Starts the fiber with `arg`; returns the value of its first
    /// suspension, or `None` if it returned without suspending.
    ///
    /// # Errors
    ///
    /// [`FiberErrorKind::AlreadyStarted`] if it was started before (FB1).
    ///
    /// # Panics
    ///
    /// A panic of the fiber continues here (FB3).
    pub fn start(&self, arg: V) -> Result<Option<V>, FiberError> {
        if self.inner.state.get() != State::Init {
            return Err(FiberError::new(FiberErrorKind::AlreadyStarted));
        }
        self.inner.slot.set(Some(arg));
        self.run(Resume::Value)
    }

    /// Resumes the suspended fiber: its `Fiber::suspend` returns `value`.
    /// Returns the value of its next suspension, or `None` if it returned.
    ///
    /// # Errors
    ///
    /// [`FiberErrorKind::NotSuspended`] unless it is suspended (FB1).
    ///
    /// # Panics
    ///
    /// A panic of the fiber continues here (FB3).
    pub fn resume(&self, value: V) -> Result<Option<V>, FiberError> {
        self.check_suspended()?;
        self.inner.slot.set(Some(value));
        self.run(Resume::Value)
    }

    /// Resumes the suspended fiber with an error: its `Fiber::suspend`
    /// returns `Err` of kind [`FiberErrorKind::Thrown`] carrying `error`
    /// (the RFC's `throw`; a fiber usually passes it on with `?`).
    ///
    /// # Errors
    ///
    /// [`FiberErrorKind::NotSuspended`] unless it is suspended (FB1).
    ///
    /// # Panics
    ///
    /// A panic of the fiber continues here (FB3).
    pub fn throw(
        &self,
        error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Result<Option<V>, FiberError> {
        self.check_suspended()?;
        self.run(Resume::Throw(error.into()))
    }

    /// Takes the fiber's return value.
    ///
    /// # Errors
    ///
    /// [`FiberErrorKind::NotReturned`] if it has not returned (not started,
    /// running, suspended, or ended by a panic), or the value was taken.
    pub fn get_return(&self) -> Result<R, FiberError> {
        let why = match self.inner.state.get() {
            State::Terminated => match self.inner.ret.borrow_mut().take() {
                Some(r) => return Ok(r),
                None => "its return value was already taken",
            },
            State::Init => "the fiber has not been started",
            State::Running => "the fiber is running",
            State::Suspended => "the fiber has not returned",
            State::Failed => "the fiber panicked",
        };
        Err(FiberError::with_detail(FiberErrorKind::NotReturned, why))
    }

    /// True once started.
    pub fn is_started(&self) -> bool {
        self.inner.state.get() != State::Init
    }

    /// True while suspended.
    pub fn is_suspended(&self) -> bool {
        self.inner.state.get() == State::Suspended
    }

    /// True while running (including while a fiber it resumed runs).
    pub fn is_running(&self) -> bool {
        self.inner.state.get() == State::Running
    }

    /// True once it returned or panicked.
    pub fn is_terminated(&self) -> bool {
        matches!(self.inner.state.get(), State::Terminated | State::Failed)
    }

    /// This fiber's id (unique in its thread).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    fn check_suspended(&self) -> Result<(), FiberError> {
        if self.inner.state.get() != State::Suspended {
            return Err(FiberError::with_detail(
                FiberErrorKind::NotSuspended,
                match self.inner.state.get() {
                    State::Init => "it has not been started",
                    State::Running => "it is running",
                    _ => "it has terminated",
                },
            ));
        }
        Ok(())
    }

    fn run(&self, input: Resume) -> Result<Option<V>, FiberError> {
        // Borrowed while it runs: a resume of this fiber from inside itself
        // is refused by the state check before it could borrow again (FB1).
        let mut core = self.inner.core.borrow_mut();
        let co = core.as_mut().expect("present until terminated");
        self.inner.state.set(State::Running);
        let result = catch_unwind(AssertUnwindSafe(|| co.resume(input)));
        match result {
            Ok(CoroutineResult::Yield(())) => {
                self.inner.state.set(State::Suspended);
                Ok(self.inner.slot.take())
            }
            Ok(CoroutineResult::Return(())) => {
                self.inner.state.set(State::Terminated);
                *core = None; // the stack goes back now
                Ok(None)
            }
            Err(panic) => {
                self.inner.state.set(State::Failed); // FB3
                *core = None;
                drop(core);
                resume_unwind(panic)
            }
        }
    }
}

impl Fiber {
    /// Suspends the innermost running fiber of the caller, handing `value`
    /// to its resumer; returns the value it is resumed with (FB2).
    ///
    /// # Errors
    ///
    /// [`FiberErrorKind::OutsideFiber`] outside a fiber;
    /// [`FiberErrorKind::WrongType`] if the fiber transfers another type
    /// than `V`; [`FiberErrorKind::Thrown`] if it was resumed with
    /// [`throw`](Fiber::throw).
    pub fn suspend<V: 'static>(value: V) -> Result<V, FiberError> {
        let me = owner();
        let Some(frame) = pop(me) else {
            return Err(FiberError::new(FiberErrorKind::OutsideFiber));
        };
        if frame.value != TypeId::of::<V>() {
            push(frame);
            return Err(FiberError::with_detail(
                FiberErrorKind::WrongType,
                std::any::type_name::<V>(),
            ));
        }
        // SAFETY: `slot` points to the running fiber's `Cell<Option<V>>`
        // (its type checked just above), kept alive by the fiber's body,
        // which is on this stack.
        let slot = unsafe { &*frame.slot.cast::<Cell<Option<V>>>() };
        slot.set(Some(value));
        let yielder = frame.yielder;
        // SAFETY: the frame was pushed by the running fiber's body with its
        // own yielder, which lives on that fiber's stack; the fiber is
        // running (we are on its stack), so the yielder is alive.
        let resumed = unsafe { (*yielder).suspend(()) };
        // Whoever resumed it owns it now (a fiber handle may move between
        // the coroutines of a thread).
        push(Frame {
            owner: owner(),
            ..frame
        });
        match resumed {
            Resume::Value => Ok(slot.take().expect("resume puts a value in the slot")),
            Resume::Throw(e) => Err(FiberError {
                kind: FiberErrorKind::Thrown,
                detail: String::new(),
                thrown: Some(e),
            }),
        }
    }

    /// The id of the innermost running fiber of the caller, if any.
    pub fn current() -> Option<u64> {
        top_id(owner())
    }
}

impl<V: 'static, R: 'static> fmt::Debug for Fiber<V, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fiber")
            .field("id", &self.inner.id)
            .field("state", &self.inner.state.get())
            .finish()
    }
}

/// Which misuse a [`FiberError`] reports (FB1), or the error a fiber was
/// resumed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FiberErrorKind {
    /// `start` on a fiber already started.
    AlreadyStarted,
    /// `resume` or `throw` on a fiber that is not suspended (not started,
    /// running, or terminated).
    NotSuspended,
    /// `Fiber::suspend` outside a fiber.
    OutsideFiber,
    /// `Fiber::suspend` with another type than the fiber transfers.
    WrongType,
    /// `get_return` before the fiber returned (or after the value was
    /// taken).
    NotReturned,
    /// The fiber was resumed with [`Fiber::throw`]: the error is the
    /// [`source`](std::error::Error::source).
    Thrown,
}

/// A misuse of a fiber, or an error thrown into one.
pub struct FiberError {
    kind: FiberErrorKind,
    detail: String,
    thrown: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl FiberError {
    fn new(kind: FiberErrorKind) -> FiberError {
        FiberError {
            kind,
            detail: String::new(),
            thrown: None,
        }
    }

    fn with_detail(kind: FiberErrorKind, detail: &str) -> FiberError {
        FiberError {
            kind,
            detail: detail.to_owned(),
            thrown: None,
        }
    }

    /// Which misuse (or `Thrown`).
    pub fn kind(&self) -> FiberErrorKind {
        self.kind
    }

    /// The error thrown into the fiber, taken out.
    pub fn into_thrown(self) -> Option<Box<dyn std::error::Error + Send + Sync + 'static>> {
        self.thrown
    }
}

impl fmt::Display for FiberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            FiberErrorKind::AlreadyStarted => {
                f.write_str("cannot start a fiber that has already been started")
            }
            FiberErrorKind::NotSuspended => write!(
                f,
                "cannot resume a fiber that is not suspended: {}",
                self.detail
            ),
            FiberErrorKind::OutsideFiber => f.write_str("cannot suspend outside of a fiber"),
            FiberErrorKind::WrongType => write!(
                f,
                "cannot suspend with a {}: the fiber transfers another type",
                self.detail
            ),
            FiberErrorKind::NotReturned => {
                write!(f, "cannot get the fiber's return value: {}", self.detail)
            }
            FiberErrorKind::Thrown => match &self.thrown {
                Some(e) => write!(f, "thrown into the fiber: {e}"),
                None => f.write_str("thrown into the fiber"),
            },
        }
    }
}

impl fmt::Debug for FiberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FiberError")
            .field("kind", &self.kind)
            .field("message", &self.to_string())
            .finish()
    }
}

impl std::error::Error for FiberError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.thrown.as_deref().map(|e| e as _)
    }
}
