//! [`Loop`]: one reactor instance driven through its vtable alone, with
//! every callback recorded into a log.
//!
//! # What a loop owns
//!
//! The `*mut AaReactor`, a copy of the vtable, the log, one `Slot` per
//! event (the callback's `ud`: its tag, an optional hook, the event it
//! belongs to), and the descriptors the case opened.
//!
//! # Rules the harness enforces
//!
//! - **H1** A callback must name the event it was registered for; a
//!   mismatch (one request completed with another's callback, or another's
//!   `ud`) fails the case as a violation of R-EV-5, reported once
//!   `run_once` returns.
//! - **H2** A panic inside a callback (a failed assertion in a hook) is
//!   caught at the `extern "C"` boundary and re-raised after `run_once`
//!   returns, so it fails the case instead of aborting the process.
//! - **H3** [`Loop::finish`] disposes every event the case did not, closes
//!   every descriptor through `AA_IO_CLOSE`, checks that `alive()` is 0
//!   (R-LOOP-6), that nothing runs any more (R-EV-3), and that `destroy`
//!   returns `AA_OK` (R-LOOP-2); these fail naming the rule, as a tier's
//!   assertion does. So does a `create` that fails ([`Loop::new`],
//!   R-LOOP-1). The harness's other checks that the plugin can fail (a
//!   constructor the case needs failing, a request not pending or not
//!   inline, a callback that never comes within [`PATIENCE`], `run_once`
//!   failing) say what was called and what it gave, statuses by name, and
//!   name the running case's rules ([`rules::case_rules`]): which rule they
//!   protect is the case's.
//! - **H4** Slots live until the loop is destroyed, so a late callback from
//!   a faulty reactor reads valid memory (and fails H1 or the final count).
//!
//! # Access
//!
//! One thread (the case's); [`FireHandle`] is the only thing that crosses to
//! another thread.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::mem::size_of;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use async_abi::*;

use super::plugin::Reactor;
use super::rules::{self, violated};

/// One recorded callback (or a marker the case wrote). Its `Debug` names
/// statuses and negated errnos (`Io("r", -ECANCELED)`, `Timer("t",
/// AA_OK)`), so a failure that prints a log reads without the header.
#[derive(Clone, PartialEq, Eq)]
pub enum Rec {
    /// A timer callback: tag, status.
    Timer(&'static str, AaStatus),
    /// A poll callback: tag, status, ready bits.
    Poll(&'static str, AaStatus, u32),
    /// A request callback: tag, result.
    Io(&'static str, i64),
    /// A trigger callback: tag, status.
    Trigger(&'static str, AaStatus),
    /// `on_closed`: tag.
    Closed(&'static str),
    /// A signal callback: tag, status, signal number.
    Signal(&'static str, AaStatus, i32),
    /// A process callback: tag, status, `(code, signal)` of the exit status
    /// (`None` when the reactor passed NULL).
    Process(&'static str, AaStatus, Option<(i32, i32)>),
    /// A filesystem watch callback: tag, status, change bits, entry name.
    FsWatch(&'static str, AaStatus, u32, String),
    /// A lookup callback: tag, status, the addresses (each checked to be a
    /// well-formed `sockaddr_in` or `sockaddr_in6`).
    Dns(&'static str, AaStatus, Vec<SocketAddr>),
    /// A marker written by the case (`Loop::mark`).
    Mark(&'static str),
}

impl std::fmt::Debug for Rec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use super::rules::short;
        let st = |s: &AaStatus| short(i64::from(*s));
        match self {
            Rec::Timer(t, s) => write!(f, "Timer({t:?}, {})", st(s)),
            Rec::Poll(t, s, bits) => write!(f, "Poll({t:?}, {}, {})", st(s), poll_bits(*bits)),
            Rec::Io(t, r) => write!(f, "Io({t:?}, {})", short(*r)),
            Rec::Trigger(t, s) => write!(f, "Trigger({t:?}, {})", st(s)),
            Rec::Closed(t) => write!(f, "Closed({t:?})"),
            Rec::Signal(t, s, sig) => write!(f, "Signal({t:?}, {}, {sig})", st(s)),
            Rec::Process(t, s, exit) => write!(f, "Process({t:?}, {}, {exit:?})", st(s)),
            Rec::FsWatch(t, s, bits, name) => {
                write!(f, "FsWatch({t:?}, {}, {bits:#x}, {name:?})", st(s))
            }
            Rec::Dns(t, s, addrs) => write!(f, "Dns({t:?}, {}, {addrs:?})", st(s)),
            Rec::Mark(t) => write!(f, "Mark({t:?})"),
        }
    }
}

/// `AA_POLL_READABLE|AA_POLL_WRITABLE`, or `0`.
pub fn poll_bits(bits: u32) -> String {
    let mut names: Vec<String> = [
        (AA_POLL_READABLE, "AA_POLL_READABLE"),
        (AA_POLL_WRITABLE, "AA_POLL_WRITABLE"),
        (AA_POLL_HUP, "AA_POLL_HUP"),
        (AA_POLL_ERROR, "AA_POLL_ERROR"),
    ]
    .iter()
    .filter(|(b, _)| bits & b != 0)
    .map(|(_, n)| (*n).to_owned())
    .collect();
    let rest = bits & !(AA_POLL_READABLE | AA_POLL_WRITABLE | AA_POLL_HUP | AA_POLL_ERROR);
    if rest != 0 {
        names.push(format!("{rest:#x}"));
    }
    if names.is_empty() {
        "0".to_owned()
    } else {
        names.join("|")
    }
}

impl Rec {
    /// The tag of the event (or marker).
    pub fn tag(&self) -> &'static str {
        match self {
            Rec::Timer(t, _)
            | Rec::Poll(t, _, _)
            | Rec::Io(t, _)
            | Rec::Trigger(t, _)
            | Rec::Closed(t)
            | Rec::Signal(t, _, _)
            | Rec::Process(t, _, _)
            | Rec::FsWatch(t, _, _, _)
            | Rec::Dns(t, _, _)
            | Rec::Mark(t) => t,
        }
    }
}

/// A hook run after a callback was recorded: it may call back into the
/// reactor (re-entrancy is part of the contract).
pub type Hook = Box<dyn FnMut(&Loop, &Rec)>;

/// The `ud` of one event.
struct Slot {
    core: Weak<Core>,
    tag: &'static str,
    ev: Cell<*mut AaEvent>,
    hook: RefCell<Option<Hook>>,
}

/// An event made through a [`Loop`]: a copyable handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ev {
    ptr: *mut AaEvent,
    index: usize,
}

impl Ev {
    /// The raw event pointer.
    pub fn raw(self) -> *mut AaEvent {
        self.ptr
    }
}

/// What `io_submit` gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submit {
    /// `AA_DONE`: the result written to `op->result`.
    Done(i64),
    /// `AA_OK`: pending, the callback will run once.
    Pending(Ev),
    /// A negative status (AA-R8: nothing created).
    Failed(AaStatus),
}

impl Submit {
    /// The event of a pending request; panics otherwise.
    #[track_caller]
    pub fn pending(self) -> Ev {
        match self {
            Submit::Pending(ev) => ev,
            other => panic!(
                "expected a pending request (AA_OK), got {}.{}",
                super::rules::submitted(&other),
                super::rules::case_rules()
            ),
        }
    }

    /// The result of an inline completion; panics otherwise.
    #[track_caller]
    pub fn done(self) -> i64 {
        match self {
            Submit::Done(result) => result,
            other => panic!(
                "expected an inline completion (AA_DONE), got {}.{}",
                super::rules::submitted(&other),
                super::rules::case_rules()
            ),
        }
    }
}

struct Core {
    vt: AaReactorVTable,
    r: Cell<*mut AaReactor>,
    log: RefCell<Vec<Rec>>,
    slots: RefCell<Vec<Rc<Slot>>>,
    disposed: RefCell<Vec<bool>>,
    fds: RefCell<Vec<i32>>,
    failure: RefCell<Option<String>>,
}

/// One reactor instance under test (see the module doc). Cloning gives
/// another handle to the same instance (for hooks).
#[derive(Clone)]
pub struct Loop(Rc<Core>);

impl std::fmt::Debug for Loop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loop").field("r", &self.0.r.get()).finish()
    }
}

/// The `[any]` entry point to fire one trigger from another thread.
#[derive(Debug, Clone, Copy)]
pub struct FireHandle {
    fire: unsafe extern "C" fn(*const AaEvent) -> AaStatus,
    ev: usize,
}

impl FireHandle {
    /// Calls `trigger_fire`.
    pub fn fire(&self) -> AaStatus {
        // SAFETY: the case keeps the trigger undisposed while the other
        // thread may fire it (the ABI's rule for `trigger_fire`).
        unsafe { (self.fire)(self.ev as *const AaEvent) }
    }
}

/// The `[any]` entry point to wake a loop from another thread.
#[derive(Debug, Clone, Copy)]
pub struct WakeHandle {
    wake: unsafe extern "C" fn(*const AaReactor) -> AaStatus,
    r: usize,
}

impl WakeHandle {
    /// Calls `wake`.
    pub fn wake(&self) -> AaStatus {
        // SAFETY: the case keeps the reactor alive while the other thread
        // may wake it.
        unsafe { (self.wake)(self.r as *const AaReactor) }
    }
}

/// What `alive()` answered, in words when a case's check of it fails
/// (`alive() = 1: an event still keeps the loop alive`), not a bare count.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Alive(pub u32);

impl std::fmt::Debug for Alive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0 => write!(f, "alive() = 0: nothing keeps the loop alive"),
            1 => write!(f, "alive() = 1: an event keeps the loop alive"),
            n => write!(f, "alive() = {n}: {n} events keep the loop alive"),
        }
    }
}

/// How long [`Loop::run_until`] waits before failing the case.
pub const PATIENCE: Duration = Duration::from_secs(10);

fn record(ud: *mut c_void, ev: *mut AaEvent, rec: impl FnOnce(&'static str) -> Rec) {
    // SAFETY: H4: `ud` is a slot of a loop that is not destroyed yet.
    let slot = unsafe { &*(ud as *const Slot) };
    let Some(core) = slot.core.upgrade() else {
        return;
    };
    let rec = rec(slot.tag);
    let expected = slot.ev.get();
    if !expected.is_null() && expected != ev {
        // H1: a callback run for another event, or with another's `ud`.
        fail(
            &core,
            rules::violation(
                "R-EV-5",
                &format!(
                    "run_once; the callback given with the event {:?} ran (recorded as {rec:?})",
                    slot.tag
                ),
                &format!("its first argument to be that event ({expected:?})"),
                &format!("passed another pointer ({ev:?})"),
            ),
        );
    }
    core.log.borrow_mut().push(rec.clone());
    let hook = slot.hook.borrow_mut().take();
    if let Some(mut hook) = hook {
        let lp = Loop(Rc::clone(&core));
        let outcome = catch_unwind(AssertUnwindSafe(|| hook(&lp, &rec)));
        // Keep the hook unless it installed a new one.
        let mut current = slot.hook.borrow_mut();
        if current.is_none() {
            *current = Some(hook);
        }
        if let Err(payload) = outcome {
            fail(&core, panic_text(&*payload));
        }
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic".to_string()
    }
}

fn fail(core: &Core, msg: String) {
    let mut failure = core.failure.borrow_mut();
    if failure.is_none() {
        *failure = Some(msg);
    }
}

unsafe extern "C" fn timer_cb(ev: *mut AaEvent, status: AaStatus, ud: *mut c_void) {
    let _ = catch_unwind(|| record(ud, ev, |t| Rec::Timer(t, status)));
}

unsafe extern "C" fn poll_cb(ev: *mut AaEvent, status: AaStatus, ready: u32, ud: *mut c_void) {
    let _ = catch_unwind(|| record(ud, ev, |t| Rec::Poll(t, status, ready)));
}

unsafe extern "C" fn io_cb(ev: *mut AaEvent, result: i64, ud: *mut c_void) {
    let _ = catch_unwind(|| record(ud, ev, |t| Rec::Io(t, result)));
}

unsafe extern "C" fn trigger_cb(ev: *mut AaEvent, status: AaStatus, ud: *mut c_void) {
    let _ = catch_unwind(|| record(ud, ev, |t| Rec::Trigger(t, status)));
}

unsafe extern "C" fn closed_cb(ev: *mut AaEvent, ud: *mut c_void) {
    let _ = catch_unwind(|| record(ud, ev, Rec::Closed));
}

unsafe extern "C" fn signal_cb(ev: *mut AaEvent, status: AaStatus, signum: i32, ud: *mut c_void) {
    let _ = catch_unwind(|| record(ud, ev, |t| Rec::Signal(t, status, signum)));
}

unsafe extern "C" fn process_cb(
    ev: *mut AaEvent,
    status: AaStatus,
    exit: *const AaExitStatus,
    ud: *mut c_void,
) {
    // SAFETY: a non-NULL `exit` is valid for the callback (AA-R3).
    let exit = unsafe { exit.as_ref() }.map(|e| (e.code, e.signal));
    let _ = catch_unwind(|| record(ud, ev, |t| Rec::Process(t, status, exit)));
}

unsafe extern "C" fn fs_watch_cb(
    ev: *mut AaEvent,
    status: AaStatus,
    events: u32,
    name: AaBytes,
    ud: *mut c_void,
) {
    let name = if name.len == 0 {
        String::new()
    } else {
        // SAFETY: `name` is valid for the callback (AA-R3): `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(name.ptr, name.len) };
        String::from_utf8_lossy(bytes).into_owned()
    };
    let _ = catch_unwind(|| record(ud, ev, |t| Rec::FsWatch(t, status, events, name)));
}

unsafe extern "C" fn dns_cb(
    ev: *mut AaEvent,
    status: AaStatus,
    addrs: *const AaSockAddr,
    n: usize,
    ud: *mut c_void,
) {
    let addrs = if n == 0 {
        &[][..]
    } else {
        // SAFETY: `addrs` holds `n` addresses for the callback (AA-R3).
        unsafe { std::slice::from_raw_parts(addrs, n) }
    };
    let parsed: Result<Vec<SocketAddr>, String> =
        addrs.iter().map(super::fds::socket_addr).collect();
    let _ = catch_unwind(|| match parsed {
        Ok(parsed) => record(ud, ev, |t| Rec::Dns(t, status, parsed)),
        Err(why) => fail_from(ud, format!("dns_resolve gave a malformed address: {why}")),
    });
}

/// Fails the case of the loop that owns the slot `ud`.
fn fail_from(ud: *mut c_void, msg: String) {
    // SAFETY: H4: `ud` is a slot of a loop that is not destroyed yet.
    let slot = unsafe { &*(ud as *const Slot) };
    if let Some(core) = slot.core.upgrade() {
        fail(&core, msg);
    }
}

impl Loop {
    /// Creates a loop with no options; panics if `create` fails.
    #[track_caller]
    pub fn new(reactor: &Reactor) -> Loop {
        match Loop::with_options(reactor, &[]) {
            Ok(lp) => lp,
            Err((status, msg)) => violated(
                "R-LOOP-1",
                &"create(config of this ABI's size, no options)",
                &"AA_OK and a reactor",
                &format!("{}, err_buf {msg:?}", rules::status(status)),
            ),
        }
    }

    /// Creates a loop with options; on failure returns the status and the
    /// message `create` wrote into `err_buf`.
    pub fn with_options(
        reactor: &Reactor,
        options: &[(&str, &str)],
    ) -> Result<Loop, (AaStatus, String)> {
        let kvs: Vec<AaKv> = options
            .iter()
            .map(|(k, v)| AaKv {
                key: AaStr::from_str(k),
                value: AaStr::from_str(v),
            })
            .collect();
        let mut err = [0u8; 256];
        let cfg = AaReactorConfig {
            struct_size: size_of::<AaReactorConfig>() as u32,
            flags: 0,
            options: kvs.as_ptr(),
            n_options: kvs.len(),
            err_buf: err.as_mut_ptr(),
            err_cap: err.len(),
        };
        let status = create_raw(reactor, &cfg);
        match status {
            Ok(r) => Ok(Loop(Rc::new(Core {
                vt: *reactor.vtable(),
                r: Cell::new(r),
                log: RefCell::new(Vec::new()),
                slots: RefCell::new(Vec::new()),
                disposed: RefCell::new(Vec::new()),
                fds: RefCell::new(Vec::new()),
                failure: RefCell::new(None),
            }))),
            Err(status) => {
                let len = err.iter().position(|b| *b == 0).unwrap_or(err.len());
                Err((status, String::from_utf8_lossy(&err[..len]).into_owned()))
            }
        }
    }

    /// The vtable.
    pub fn vt(&self) -> &AaReactorVTable {
        &self.0.vt
    }

    /// The raw reactor pointer.
    pub fn raw(&self) -> *mut AaReactor {
        self.0.r.get()
    }

    fn new_slot(&self, tag: &'static str) -> (Rc<Slot>, usize) {
        let slot = Rc::new(Slot {
            core: Rc::downgrade(&self.0),
            tag,
            ev: Cell::new(ptr::null_mut()),
            hook: RefCell::new(None),
        });
        let mut slots = self.0.slots.borrow_mut();
        slots.push(Rc::clone(&slot));
        self.0.disposed.borrow_mut().push(true);
        (slot, slots.len() - 1)
    }

    fn adopt(&self, slot: &Slot, index: usize, ev: *mut AaEvent) -> Ev {
        assert!(
            !ev.is_null(),
            "constructor returned AA_OK with a NULL event"
        );
        slot.ev.set(ev);
        self.0.disposed.borrow_mut()[index] = false;
        Ev { ptr: ev, index }
    }

    fn ud(slot: &Rc<Slot>) -> *mut c_void {
        Rc::as_ptr(slot) as *mut c_void
    }

    // -- loop -------------------------------------------------------------

    /// `run_once(timeout_ns)`; panics on a negative status or a failure
    /// caught in a callback (H2).
    #[track_caller]
    pub fn run_once(&self, timeout_ns: i64) -> i32 {
        let run_once = self.0.vt.run_once.expect("required slot");
        // SAFETY: the reactor is alive (not finished), on its loop thread.
        let n = unsafe { run_once(self.raw(), timeout_ns) };
        if let Some(msg) = self.0.failure.borrow_mut().take() {
            // A rule's own message (H1, or a tier's check in a hook) stays
            // the first line the kit's summary prints.
            if msg.starts_with("R-") {
                panic!("{msg}");
            }
            panic!("inside a callback: {msg}");
        }
        assert!(
            n >= 0,
            "run_once({timeout_ns}) failed with {}, last_error_message {:?}.{}",
            rules::status(n),
            self.last_error(),
            rules::case_rules()
        );
        n
    }

    /// Runs iterations (each waiting at most 100 ms) until `done(log)`;
    /// fails the case after [`PATIENCE`].
    #[track_caller]
    pub fn run_until(&self, what: &str, mut done: impl FnMut(&[Rec]) -> bool) {
        let start = Instant::now();
        while !done(&self.0.log.borrow()) {
            assert!(
                start.elapsed() < PATIENCE,
                "timed out after {} s of run_once(100 ms) waiting for {what}: it never came; the \
                 callbacks so far: {:?}.{}",
                PATIENCE.as_secs(),
                self.log(),
                rules::case_rules()
            );
            self.run_once(100_000_000);
        }
    }

    /// Runs until a record with `tag` is in the log.
    #[track_caller]
    pub fn run_until_tag(&self, tag: &str) {
        self.run_until(tag, |log| log.iter().any(|r| r.tag() == tag));
    }

    /// `alive()`.
    pub fn alive(&self) -> Alive {
        let alive = self.0.vt.alive.expect("required slot");
        // SAFETY: the reactor is alive, on its loop thread.
        Alive(unsafe { alive(self.raw()) })
    }

    /// `now_ns()`.
    pub fn now_ns(&self) -> u64 {
        let now_ns = self.0.vt.now_ns.expect("required slot");
        // SAFETY: the reactor is alive, on its loop thread.
        unsafe { now_ns(self.raw()) }
    }

    /// `last_error_message()` as a string ("" if the slot is NULL).
    pub fn last_error(&self) -> String {
        let Some(f) = self.0.vt.last_error_message else {
            return String::new();
        };
        let mut buf = [0u8; 512];
        // SAFETY: the reactor is alive; `buf` is a local of `len` bytes.
        let n = unsafe { f(self.raw(), buf.as_mut_ptr(), buf.len()) };
        let n = n.min(buf.len() - 1);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    /// A handle to `wake` this loop from another thread.
    pub fn wake_handle(&self) -> WakeHandle {
        WakeHandle {
            wake: self.0.vt.wake.expect("required slot"),
            r: self.raw() as usize,
        }
    }

    // -- log --------------------------------------------------------------

    /// A copy of the log.
    pub fn log(&self) -> Vec<Rec> {
        self.0.log.borrow().clone()
    }

    /// Takes the log, leaving it empty.
    pub fn take_log(&self) -> Vec<Rec> {
        std::mem::take(&mut *self.0.log.borrow_mut())
    }

    /// Takes the records of `tag` out of the log, leaving the others.
    pub fn take_tagged(&self, tag: &str) -> Vec<Rec> {
        let mut log = self.0.log.borrow_mut();
        let (taken, kept) = std::mem::take(&mut *log)
            .into_iter()
            .partition(|r| r.tag() == tag);
        *log = kept;
        taken
    }

    /// Writes a marker into the log.
    pub fn mark(&self, name: &'static str) {
        self.0.log.borrow_mut().push(Rec::Mark(name));
    }

    /// Installs a hook that runs after each callback of `ev` is recorded.
    pub fn on(&self, ev: Ev, hook: impl FnMut(&Loop, &Rec) + 'static) {
        let slot = Rc::clone(&self.0.slots.borrow()[ev.index]);
        *slot.hook.borrow_mut() = Some(Box::new(hook));
    }

    // -- constructors -------------------------------------------------------

    /// `timer_new`; the status on failure.
    pub fn try_timer(
        &self,
        tag: &'static str,
        first_ns: u64,
        repeat_ns: u64,
        flags: u32,
    ) -> Result<Ev, AaStatus> {
        let (slot, index) = self.new_slot(tag);
        let mut out = ptr::null_mut();
        let f = self.0.vt.timer_new.expect("required slot");
        // SAFETY: live reactor; the slot outlives the event (H4).
        let status = unsafe {
            f(
                self.raw(),
                first_ns,
                repeat_ns,
                flags,
                Some(timer_cb),
                Self::ud(&slot),
                &mut out,
            )
        };
        match status {
            AA_OK => Ok(self.adopt(&slot, index, out)),
            s => Err(s),
        }
    }

    /// `timer_new`, which must succeed.
    #[track_caller]
    pub fn timer(&self, tag: &'static str, first_ns: u64, repeat_ns: u64, flags: u32) -> Ev {
        self.try_timer(tag, first_ns, repeat_ns, flags)
            .unwrap_or_else(|s| {
                panic!(
                    "timer_new failed with {}, last_error_message {:?}.{}",
                    rules::status(s),
                    self.last_error(),
                    rules::case_rules()
                )
            })
    }

    /// `timer_rearm`.
    pub fn rearm(&self, ev: Ev, first_ns: u64, repeat_ns: u64) -> AaStatus {
        let f = self.0.vt.timer_rearm.expect("required slot");
        // SAFETY: `ev` is a live event of this loop (the case's contract).
        unsafe { f(ev.ptr, first_ns, repeat_ns) }
    }

    /// `poll_new`; the status on failure.
    pub fn try_poll(
        &self,
        tag: &'static str,
        fd: i32,
        interest: u32,
        flags: u32,
    ) -> Result<Ev, AaStatus> {
        let (slot, index) = self.new_slot(tag);
        let mut out = ptr::null_mut();
        let f = self.0.vt.poll_new.expect("required slot");
        // SAFETY: live reactor; the slot outlives the event (H4).
        let status = unsafe {
            f(
                self.raw(),
                i64::from(fd),
                interest,
                flags,
                Some(poll_cb),
                Self::ud(&slot),
                &mut out,
            )
        };
        match status {
            AA_OK => Ok(self.adopt(&slot, index, out)),
            s => Err(s),
        }
    }

    /// `poll_new`, which must succeed.
    #[track_caller]
    pub fn poll(&self, tag: &'static str, fd: i32, interest: u32, flags: u32) -> Ev {
        self.try_poll(tag, fd, interest, flags).unwrap_or_else(|s| {
            panic!(
                "poll_new failed with {}, last_error_message {:?}.{}",
                rules::status(s),
                self.last_error(),
                rules::case_rules()
            )
        })
    }

    /// `poll_set_interest`.
    pub fn set_interest(&self, ev: Ev, interest: u32) -> AaStatus {
        let f = self.0.vt.poll_set_interest.expect("required slot");
        // SAFETY: `ev` is a live event of this loop.
        unsafe { f(ev.ptr, interest) }
    }

    /// `trigger_new`, which must succeed.
    #[track_caller]
    pub fn trigger(&self, tag: &'static str, flags: u32) -> Ev {
        let (slot, index) = self.new_slot(tag);
        let mut out = ptr::null_mut();
        let f = self.0.vt.trigger_new.expect("required slot");
        // SAFETY: live reactor; the slot outlives the event (H4).
        let status = unsafe {
            f(
                self.raw(),
                flags,
                Some(trigger_cb),
                Self::ud(&slot),
                &mut out,
            )
        };
        assert_eq!(
            status,
            AA_OK,
            "trigger_new(flags {flags:#x}) failed with {}, last_error_message {:?}.{}",
            rules::status(status),
            self.last_error(),
            rules::case_rules()
        );
        self.adopt(&slot, index, out)
    }

    /// `trigger_fire` from this thread.
    pub fn fire(&self, ev: Ev) -> AaStatus {
        self.fire_handle(ev).fire()
    }

    /// A handle to fire `ev` from another thread.
    pub fn fire_handle(&self, ev: Ev) -> FireHandle {
        FireHandle {
            fire: self.0.vt.trigger_fire.expect("required slot"),
            ev: ev.ptr as usize,
        }
    }

    /// `io_submit` with a request built by the case. The buffer and address
    /// it points to must stay valid until the callback (AA-R5).
    pub fn submit(&self, tag: &'static str, op: &mut AaIoOp, flags: u32) -> Submit {
        // SAFETY: `op` is a whole `AaIoOp`, valid for the call; the case
        // keeps what it points to alive (AA-R5).
        unsafe { self.submit_raw(tag, op, flags) }
    }

    /// `io_submit` with a request that may be shorter than this kit's
    /// `AaIoOp` (an older host's: its `struct_size` says how long).
    ///
    /// # Safety
    ///
    /// `op` must be valid for reads and writes of its `struct_size` bytes
    /// for the call (at least up to `result`), and what it points to must
    /// stay valid until the callback (AA-R5).
    pub unsafe fn submit_raw(&self, tag: &'static str, op: *mut AaIoOp, flags: u32) -> Submit {
        let (slot, index) = self.new_slot(tag);
        let mut out = ptr::null_mut();
        let f = self.0.vt.io_submit.expect("required slot");
        // SAFETY: live reactor; `op` is valid for the call and the case
        // keeps its buffer and address alive (AA-R5, the caller); the slot
        // outlives the event (H4).
        let status = unsafe {
            f(
                self.raw(),
                op,
                flags,
                Some(io_cb),
                Self::ud(&slot),
                &mut out,
            )
        };
        match status {
            AA_OK => Submit::Pending(self.adopt(&slot, index, out)),
            // SAFETY: `result` is in the 1.0 prefix every op has (caller).
            AA_DONE => Submit::Done(unsafe { ptr::addr_of!((*op).result).read() }),
            s => Submit::Failed(s),
        }
    }

    /// Submits a read of `buf.len()` bytes into `buf`.
    pub fn read(&self, tag: &'static str, fd: i32, buf: &mut [u8], flags: u32) -> Submit {
        let mut op = AaIoOp::new(AA_IO_READ, i64::from(fd));
        op.buf = buf.as_mut_ptr();
        op.len = buf.len();
        self.submit(tag, &mut op, flags)
    }

    /// Submits a write of `data`.
    pub fn write(&self, tag: &'static str, fd: i32, data: &[u8], flags: u32) -> Submit {
        let mut op = AaIoOp::new(AA_IO_WRITE, i64::from(fd));
        op.buf = data.as_ptr().cast_mut();
        op.len = data.len();
        self.submit(tag, &mut op, flags)
    }

    /// Submits an accept on `fd`, the peer address written to `peer`.
    pub fn accept(&self, tag: &'static str, fd: i32, peer: &mut AaSockAddr, flags: u32) -> Submit {
        let mut op = AaIoOp::new(AA_IO_ACCEPT, i64::from(fd));
        op.addr = peer;
        self.submit(tag, &mut op, flags)
    }

    /// Submits a connect of `fd` to `addr`.
    pub fn connect(&self, tag: &'static str, fd: i32, addr: &mut AaSockAddr, flags: u32) -> Submit {
        let mut op = AaIoOp::new(AA_IO_CONNECT, i64::from(fd));
        op.addr = addr;
        self.submit(tag, &mut op, flags)
    }

    // -- optional kinds -----------------------------------------------------

    /// `signal_new`; the status on failure.
    pub fn try_signal(&self, tag: &'static str, signum: i32, flags: u32) -> Result<Ev, AaStatus> {
        let (slot, index) = self.new_slot(tag);
        let mut out = ptr::null_mut();
        let f = self
            .0
            .vt
            .signal_new
            .expect("AA_CAP_SIGNAL fills signal_new");
        // SAFETY: live reactor; the slot outlives the event (H4).
        let status = unsafe {
            f(
                self.raw(),
                signum,
                flags,
                Some(signal_cb),
                Self::ud(&slot),
                &mut out,
            )
        };
        match status {
            AA_OK => Ok(self.adopt(&slot, index, out)),
            s => Err(s),
        }
    }

    /// `signal_new`, which must succeed.
    #[track_caller]
    pub fn signal(&self, tag: &'static str, signum: i32, flags: u32) -> Ev {
        self.try_signal(tag, signum, flags).unwrap_or_else(|s| {
            panic!(
                "signal_new failed with {}, last_error_message {:?}.{}",
                rules::status(s),
                self.last_error(),
                rules::case_rules()
            )
        })
    }

    /// `process_new`; the status on failure.
    pub fn try_process(&self, tag: &'static str, pid: i64, flags: u32) -> Result<Ev, AaStatus> {
        let (slot, index) = self.new_slot(tag);
        let mut out = ptr::null_mut();
        let f = self
            .0
            .vt
            .process_new
            .expect("AA_CAP_PROCESS fills process_new");
        // SAFETY: live reactor; the slot outlives the event (H4).
        let status = unsafe {
            f(
                self.raw(),
                pid,
                flags,
                Some(process_cb),
                Self::ud(&slot),
                &mut out,
            )
        };
        match status {
            AA_OK => Ok(self.adopt(&slot, index, out)),
            s => Err(s),
        }
    }

    /// `process_new`, which must succeed.
    #[track_caller]
    pub fn process(&self, tag: &'static str, pid: i64, flags: u32) -> Ev {
        self.try_process(tag, pid, flags).unwrap_or_else(|s| {
            panic!(
                "process_new failed with {}, last_error_message {:?}.{}",
                rules::status(s),
                self.last_error(),
                rules::case_rules()
            )
        })
    }

    /// `fs_watch_new`; the status on failure.
    pub fn try_fs_watch(&self, tag: &'static str, path: &[u8], flags: u32) -> Result<Ev, AaStatus> {
        let (slot, index) = self.new_slot(tag);
        let mut out = ptr::null_mut();
        let f = self
            .0
            .vt
            .fs_watch_new
            .expect("AA_CAP_FS_WATCH fills fs_watch_new");
        let path = AaBytes {
            ptr: path.as_ptr(),
            len: path.len(),
        };
        // SAFETY: live reactor; `path` is borrowed for the call (AA-R2); the
        // slot outlives the event (H4).
        let status = unsafe {
            f(
                self.raw(),
                path,
                flags,
                Some(fs_watch_cb),
                Self::ud(&slot),
                &mut out,
            )
        };
        match status {
            AA_OK => Ok(self.adopt(&slot, index, out)),
            s => Err(s),
        }
    }

    /// `fs_watch_new`, which must succeed.
    #[track_caller]
    pub fn fs_watch(&self, tag: &'static str, path: &[u8], flags: u32) -> Ev {
        self.try_fs_watch(tag, path, flags).unwrap_or_else(|s| {
            panic!(
                "fs_watch_new failed with {}, last_error_message {:?}.{}",
                rules::status(s),
                self.last_error(),
                rules::case_rules()
            )
        })
    }

    /// `dns_resolve` with hints of `family` and `socktype` (NULL hints when
    /// `None`); the status on failure.
    pub fn try_dns(
        &self,
        tag: &'static str,
        node: &str,
        service: &str,
        hints: Option<(i32, i32)>,
    ) -> Result<Ev, AaStatus> {
        let (slot, index) = self.new_slot(tag);
        let mut out = ptr::null_mut();
        let f = self.0.vt.dns_resolve.expect("AA_CAP_DNS fills dns_resolve");
        let hints = hints.map(|(family, socktype)| AaAddrHints {
            struct_size: size_of::<AaAddrHints>() as u32,
            family,
            socktype,
            flags: 0,
        });
        let hints_ptr = hints
            .as_ref()
            .map_or(ptr::null(), |h| h as *const AaAddrHints);
        // SAFETY: live reactor; the strings and hints are borrowed for the
        // call (AA-R2); the slot outlives the event (H4).
        let status = unsafe {
            f(
                self.raw(),
                AaStr::from_str(node),
                AaStr::from_str(service),
                hints_ptr,
                Some(dns_cb),
                Self::ud(&slot),
                &mut out,
            )
        };
        match status {
            AA_OK => Ok(self.adopt(&slot, index, out)),
            s => Err(s),
        }
    }

    /// `dns_resolve`, which must succeed.
    #[track_caller]
    pub fn dns(
        &self,
        tag: &'static str,
        node: &str,
        service: &str,
        hints: Option<(i32, i32)>,
    ) -> Ev {
        self.try_dns(tag, node, service, hints).unwrap_or_else(|s| {
            panic!(
                "dns_resolve failed with {}, last_error_message {:?}.{}",
                rules::status(s),
                self.last_error(),
                rules::case_rules()
            )
        })
    }

    // -- control ------------------------------------------------------------

    /// `cancel(ev, reason)`.
    pub fn cancel(&self, ev: Ev, reason: AaStatus) -> AaStatus {
        let f = self.0.vt.cancel.expect("required slot");
        // SAFETY: `ev` is a live event of this loop.
        unsafe { f(ev.ptr, reason) }
    }

    /// `close(ev, on_closed)`; `on_closed` records `Closed(tag of ev)`.
    pub fn close(&self, ev: Ev) -> AaStatus {
        let slot = Rc::clone(&self.0.slots.borrow()[ev.index]);
        let f = self.0.vt.close.expect("required slot");
        // SAFETY: `ev` is a live event of this loop; the slot outlives it.
        unsafe { f(ev.ptr, Some(closed_cb), Self::ud(&slot)) }
    }

    /// `dispose(ev)`; panics if the case disposes twice.
    #[track_caller]
    pub fn dispose(&self, ev: Ev) {
        {
            let mut disposed = self.0.disposed.borrow_mut();
            assert!(!disposed[ev.index], "event disposed twice by the case");
            disposed[ev.index] = true;
        }
        let f = self.0.vt.dispose.expect("required slot");
        // SAFETY: `ev` is a live event of this loop, disposed once.
        unsafe { f(ev.ptr) }
    }

    /// `set_ref(ev, referenced)`.
    pub fn set_ref(&self, ev: Ev, referenced: bool) {
        let f = self.0.vt.set_ref.expect("required slot");
        // SAFETY: `ev` is a live event of this loop.
        unsafe { f(ev.ptr, referenced) }
    }

    // -- descriptors --------------------------------------------------------

    /// Remembers `fd`, to be closed through `AA_IO_CLOSE` by `finish`.
    pub fn track_fd(&self, fd: i32) -> i32 {
        self.0.fds.borrow_mut().push(fd);
        fd
    }

    /// Closes `fd` through `AA_IO_CLOSE` (inline if the reactor can, else by
    /// running the loop until the close completes) and returns the result.
    #[track_caller]
    pub fn close_fd(&self, fd: i32) -> i64 {
        self.0.fds.borrow_mut().retain(|f| *f != fd);
        let mut op = AaIoOp::new(AA_IO_CLOSE, i64::from(fd));
        match self.submit("close_fd", &mut op, AA_IO_TRY_INLINE) {
            Submit::Done(result) => result,
            Submit::Pending(ev) => {
                let before = self.0.log.borrow().len();
                let mut result = None;
                self.run_until("AA_IO_CLOSE", |log| {
                    result = log[before..].iter().find_map(|r| match r {
                        Rec::Io("close_fd", res) => Some(*res),
                        _ => None,
                    });
                    result.is_some()
                });
                self.0.log.borrow_mut().retain(|r| r.tag() != "close_fd");
                self.dispose(ev);
                result.expect("checked by run_until")
            }
            Submit::Failed(s) => panic!("AA_IO_CLOSE of fd {fd} failed with {}", rules::status(s)),
        }
    }

    /// Ends the case (H3): disposes what is left, closes descriptors, checks
    /// that nothing is alive and nothing runs, then destroys the reactor,
    /// which must return `AA_OK`.
    #[track_caller]
    pub fn finish(self) {
        self.finish_with(false);
    }

    /// [`Loop::finish`] for a reactor that may hold work of disposed events
    /// outside the loop (a lookup still running on a resolver thread):
    /// `destroy` may answer `AA_E_BUSY` for a while; the loop is run (as a
    /// host does) and `destroy` retried until it returns `AA_OK`, within
    /// [`PATIENCE`].
    #[track_caller]
    pub fn finish_when_idle(self) {
        self.finish_with(true);
    }

    #[track_caller]
    fn finish_with(self, patient: bool) {
        let left: Vec<Ev> = {
            let slots = self.0.slots.borrow();
            let disposed = self.0.disposed.borrow();
            (0..slots.len())
                .filter(|&i| !disposed[i])
                .map(|i| Ev {
                    ptr: slots[i].ev.get(),
                    index: i,
                })
                .collect()
        };
        for ev in left {
            self.dispose(ev);
        }
        let fds = std::mem::take(&mut *self.0.fds.borrow_mut());
        for fd in fds {
            self.close_fd(fd);
        }
        let log = self.log();
        let alive = self.alive();
        if alive != Alive(0) {
            violated(
                "R-LOOP-6",
                &"the case's end: every event disposed, every descriptor closed",
                &format!("{:?}", Alive(0)),
                &format!("{alive:?}"),
            );
        }
        self.run_once(0);
        self.run_once(0);
        self.nothing_after_dispose(&log, "run_once(0) twice");
        let destroy = self.0.vt.destroy.expect("required slot");
        let start = Instant::now();
        let status = loop {
            // SAFETY: the reactor is alive and no callback is running.
            let status = unsafe { destroy(self.raw()) };
            if !(patient && status == AA_E_BUSY && start.elapsed() < PATIENCE) {
                break status;
            }
            self.run_once(10_000_000);
            self.nothing_after_dispose(&log, "destroy answered AA_E_BUSY, then run_once(10 ms)");
        };
        if status != AA_OK {
            violated(
                "R-LOOP-2",
                &"the case's end: every event disposed, every descriptor closed, then destroy",
                &"AA_OK",
                &format!(
                    "{}, last_error_message {:?}",
                    rules::status(status),
                    self.last_error()
                ),
            );
        }
        self.0.r.set(ptr::null_mut());
        // Break the Loop <-> hook cycles.
        for slot in self.0.slots.borrow().iter() {
            slot.hook.borrow_mut().take();
        }
    }

    /// H3's check that nothing called back once every event was disposed
    /// (R-EV-3): the log is still `before` after `what`.
    #[track_caller]
    fn nothing_after_dispose(&self, before: &[Rec], what: &str) {
        let now = self.log();
        if now.len() != before.len() || now[..] != before[..] {
            violated(
                "R-EV-3",
                &format!("the case's end: every event disposed, then {what}"),
                &"no callback",
                &format!("callbacks {:?}", &now[before.len().min(now.len())..]),
            );
        }
    }

    /// `destroy` now, returning its status (lifecycle cases); on `AA_OK` the
    /// loop is gone and only `log()` may be used.
    pub fn destroy(&self) -> AaStatus {
        let destroy = self.0.vt.destroy.expect("required slot");
        // SAFETY: the reactor is alive and no callback is running.
        let status = unsafe { destroy(self.raw()) };
        if status == AA_OK {
            self.0.r.set(ptr::null_mut());
        }
        status
    }
}

/// `create` with a config, returning the reactor or the status.
pub fn create_raw(reactor: &Reactor, cfg: &AaReactorConfig) -> Result<*mut AaReactor, AaStatus> {
    let create = reactor.vtable().create.expect("required slot");
    let mut r = ptr::null_mut();
    // SAFETY: `ctx` came from `init`; `cfg` and its options are borrowed for
    // the call (AA-R2).
    let status = unsafe { create(reactor.ctx(), cfg, &mut r) };
    if status == AA_OK {
        assert!(!r.is_null(), "create returned AA_OK with a NULL reactor");
        Ok(r)
    } else {
        Err(status)
    }
}

/// Prints why a case is skipped (STYLE S21) and returns `true` if the
/// reactor lacks `caps`.
pub fn skip_without(reactor: &Reactor, caps: u64, case: &str) -> bool {
    if reactor.has_caps(caps) {
        return false;
    }
    let missing = caps & !reactor.vtable().caps;
    note_skip(
        missing,
        format!(
            "SKIPPED {case}: reactor {:?} lacks {}",
            reactor.name(),
            super::kit::cap_names(missing)
        ),
    );
    true
}

/// The skip the running case noted: the capability bits it lacked (0 when
/// the reason is not a capability) and its line.
static SKIP: std::sync::Mutex<Option<(u64, String)>> = std::sync::Mutex::new(None);

/// Prints `line` (`SKIPPED <case>: <why>`) and records that the running
/// case was skipped for lacking the capability bits `missing`, so the kit
/// binary reports it as skipped (never as passed), grouped by capability.
pub fn note_skip(missing: u64, line: String) {
    eprintln!("{line}");
    *SKIP.lock().unwrap_or_else(|e| e.into_inner()) = Some((missing, line));
}

/// Takes the skip [`note_skip`] recorded, if any.
pub fn take_skip() -> Option<(u64, String)> {
    SKIP.lock().unwrap_or_else(|e| e.into_inner()).take()
}
