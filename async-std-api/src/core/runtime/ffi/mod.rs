//! Safe wrappers over the scheduler and reactor vtables: the only place the
//! host calls plugin functions after loading.
//!
//! Owns: the scheduler and reactor instances ([`Scheduler`], [`Reactor`]),
//! the coroutine entry trampoline, timer events ([`TimerEvent`]) and, in
//! [`io`], I/O requests.
//!
//! Invariants:
//! - **F1** A vtable here was validated by the loader: every required slot
//!   is `Some` (so the `expect`s below never fire).
//! - **F2** An instance pointer (`AaScheduler`, `AaReactor`) is non-null
//!   from a successful `create` until a successful `destroy`; a wrapper
//!   method on a null instance does nothing and reports `AA_E_CLOSED`.
//! - **F3** Every coroutine of our scheduler is created by
//!   [`Scheduler::spawn`], with `arg` = `Rc::into_raw(Rc<CoroState>)`; that
//!   strong count belongs to the coroutine and is released by the trampoline
//!   after the entry body (so `coroutine_arg` of a live coroutine is a live
//!   `CoroState`).
//! - **F4** A `CoroState::raw` is passed to the scheduler only while it is
//!   non-null (I1 in `task::state`): the coroutine is alive.
//! - **F5** An event's `ud` is owned by its wrapper and freed only after
//!   `dispose` (after which no callback runs) or after its final callback.
//! - **F6** The hot slots (`coroutine_new`, `coroutine_id`, `enqueue`,
//!   `suspend`) are copied out of the validated vtable once, at `create`
//!   (F1), so a call is one indirect call with no `Option` check.
//! - **F7** A trigger's [`Firer`] (the one thing here another thread
//!   touches) fires it only while its [`TriggerEvent`] lives: it fires
//!   under a lock, and the event's drop empties it under that lock before
//!   disposing the event.
//! - **F8** A one-shot callback (an I/O request's, a process watch's, a
//!   name lookup's, a one-shot timer's) that the reactor calls a second time is not passed on:
//!   the first call stands, and the plugin's fault is reported once per
//!   runtime and kind as an [`Event::PluginFault`], naming the reactor.
//! - **F9** A reactor without `AA_CAP_IO` is sent no request: a request
//!   fails with `AA_E_UNSUPPORTED` and a close is done by the host.
//! - **F10** A user call that falls back because the reactor lacks a
//!   capability says so once per runtime and capability at WARN
//!   ([`Event::PluginFallback`]), for a reactor that is not one of the
//!   runtime's own ([`Reactor::fell_back`]).
//! - **F11** A request the reactor fails with an error of its own
//!   (`AA_E_INTERNAL`, `AA_E_PANIC`) gives the call an error naming the
//!   reactor and its message, read right after the failure, and is reported
//!   once per runtime ([`Reactor::failed_request`]).
//!
//! [`current`] keeps the thread's runtime and running coroutine (K1-K3).
//!
//! # Safety
//!
//! Every `unsafe` block calls a plugin function through a validated vtable
//! (F1) on a live instance (F2) with arguments that satisfy the slot's
//! documented contract; each block names the contract it relies on.
#![allow(unsafe_code)]

pub(crate) mod current;
mod dns;
pub(crate) mod fs_watch;
pub(crate) mod io;
mod poll;
pub(crate) mod process;

pub(crate) use poll::PollEvent;

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::ptr::{self, NonNull};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use async_abi::{
    AaCoroutine, AaCoroutineEntry, AaCoroutineInfo, AaEvent, AaKv, AaReactor, AaReactorConfig,
    AaReactorVTable, AaScheduler, AaSchedulerConfig, AaSchedulerVTable, AaSpawnOptions, AaStatus,
    AaStr, AaWaitInfo, AA_CAP_SIGNAL, AA_CAP_TRIGGER, AA_E_CLOSED, AA_E_INVALID, AA_E_UNSUPPORTED,
    AA_OK, AA_SCHED_CAP_WAIT_YIELD, AA_WAIT_YIELD,
};

use super::loader::Loaded;
use crate::core::entry::run_entry;
use crate::core::events::Event;
use crate::core::state::{Body, CoroState};

/// Owned `AaKv` views over Rust strings, valid while `self` lives.
struct KvList<'a> {
    kvs: Vec<AaKv>,
    _src: std::marker::PhantomData<&'a [(String, String)]>,
}

impl<'a> KvList<'a> {
    fn new(options: &'a [(String, String)]) -> Self {
        KvList {
            kvs: options
                .iter()
                .map(|(k, v)| AaKv {
                    key: AaStr::from_str(k),
                    value: AaStr::from_str(v),
                })
                .collect(),
            _src: std::marker::PhantomData,
        }
    }
}

fn err_text(buf: &[u8], status: AaStatus) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let msg = String::from_utf8_lossy(&buf[..end])
        .trim()
        .replace('\n', " ");
    if msg.is_empty() {
        super::status_text(status)
    } else {
        msg
    }
}

/// F8: reports that the reactor called a one-shot callback (`what`, e.g.
/// "an I/O request's") again; once per runtime and kind.
pub(crate) fn called_twice(what: &'static str) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let event = super::with_runtime(|rt| {
            let r = &rt.reactor;
            if r.faults.borrow().contains(&what) {
                return None;
            }
            r.faults.borrow_mut().push(what);
            let (name, version) = super::loader::describe(&r.plugin.desc);
            Some(Event::PluginFault {
                plugin: format!("reactor {} ({name} {version})", r.named()),
                fault: format!(
                    "called {what} callback a second time (ignored; the first call stands)"
                ),
            })
        });
        if let Some(Some(event)) = event {
            crate::core::events::emit(event);
        }
    }));
}

/// A reactor instance and its plugin.
pub(crate) struct Reactor {
    plugin: Loaded<AaReactorVTable>,
    /// The name the configuration chose it by (`mio`, `uring`, a path), for
    /// messages.
    label: String,
    /// Where it was loaded from (a path, or "statically linked").
    origin: String,
    /// The vtable's capabilities narrowed to what this instance has on the
    /// running kernel (`instance_caps`, ABI 1.1).
    caps: u64,
    r: std::cell::Cell<*mut AaReactor>,
    /// The vtable the scheduler gets while the watchdog is on: the plugin's,
    /// with `run_once` interposed (WD2). Boxed, so it stays put and lives
    /// as long as the reactor, longer than the scheduler (R2).
    watched: std::cell::OnceCell<Box<AaReactorVTable>>,
    /// The kinds of fault already reported (F8), and the capabilities
    /// whose fallback was already said (F10).
    faults: std::cell::RefCell<Vec<&'static str>>,
    /// Whether this is one of the runtime's own reactors (chosen by a
    /// built-in name), whose fallbacks are their design (F10).
    builtin: bool,
}

impl Reactor {
    /// Creates a reactor; the error is the plugin's one-line message and
    /// status (`AA_E_INVALID`: the configuration is at fault, not the
    /// system).
    pub(crate) fn create(
        plugin: Loaded<AaReactorVTable>,
        label: &str,
        origin: &str,
        options: &[(String, String)],
    ) -> Result<Reactor, (Loaded<AaReactorVTable>, String, AaStatus)> {
        let kv = KvList::new(options);
        let mut err = [0u8; 512];
        let cfg = AaReactorConfig {
            struct_size: std::mem::size_of::<AaReactorConfig>() as u32,
            flags: 0,
            options: kv.kvs.as_ptr(),
            n_options: kv.kvs.len(),
            err_buf: err.as_mut_ptr(),
            err_cap: err.len(),
        };
        let create = plugin.vt.create.expect("F1");
        let mut out: *mut AaReactor = ptr::null_mut();
        // SAFETY: `ctx` is the plugin's live context; `cfg`, its options
        // and `err` are valid for the call (AA-R2); `out` is a valid out
        // pointer.
        let status = unsafe { create(plugin.ctx, &cfg, &mut out) };
        if status < 0 || out.is_null() {
            let msg = err_text(&err, status);
            return Err((plugin, msg, status));
        }
        let caps = match plugin.vt.instance_caps {
            // SAFETY: `out` is the instance just created (F2), and the slot
            // may be called on the loop thread at any time after create.
            Some(f) => plugin.vt.caps & unsafe { f(out) },
            None => plugin.vt.caps,
        };
        Ok(Reactor {
            plugin,
            caps,
            label: label.to_owned(),
            origin: origin.to_owned(),
            r: std::cell::Cell::new(out),
            watched: std::cell::OnceCell::new(),
            faults: std::cell::RefCell::default(),
            builtin: matches!(label, "embedded" | "mio" | "uring" | "auto"),
        })
    }

    pub(crate) fn vtable(&self) -> &AaReactorVTable {
        &self.plugin.vt
    }

    /// The vtable for the scheduler: the plugin's, or, with the watchdog,
    /// a copy whose `run_once` first marks the loop idle (WD2).
    pub(crate) fn vtable_for_scheduler(&self, watched: bool) -> &AaReactorVTable {
        if !watched {
            return &self.plugin.vt;
        }
        self.watched.get_or_init(|| {
            let mut vt: AaReactorVTable = *self.plugin.vt;
            vt.run_once = Some(watched_run_once);
            Box::new(vt)
        })
    }

    pub(crate) fn raw(&self) -> *mut AaReactor {
        self.r.get()
    }

    pub(crate) fn caps(&self) -> u64 {
        self.caps
    }

    /// Whether the instance has capability `bit`; if not, the caller falls
    /// back (to the pool, to readiness) and that is said once (F10).
    pub(crate) fn has_or_falls_back(&self, bit: u64) -> bool {
        if self.caps & bit != 0 {
            return true;
        }
        self.fell_back(bit);
        false
    }

    /// F10: a user call fell back because the reactor lacks `bit`. Said at
    /// WARN once per runtime and capability, for a reactor that is not one
    /// of the runtime's own: a third party's reactor, perhaps of an older
    /// minor, whose user would otherwise never learn that datagrams or
    /// files took the slower path (the load line says it only at INFO).
    /// The built-in reactors' fallbacks are their design (mio has no file
    /// requests): the load line at INFO says them.
    pub(crate) fn fell_back(&self, bit: u64) {
        let Some(why) = super::fallback_text(bit) else {
            return;
        };
        if self.builtin {
            return;
        }
        if self.faults.borrow().contains(&why) {
            return;
        }
        self.faults.borrow_mut().push(why);
        let (name, version) = super::loader::describe(&self.plugin.desc);
        crate::core::events::emit(Event::PluginFallback {
            plugin: format!(
                "reactor {} ({name} {version}, ABI 1.{})",
                self.named(),
                self.plugin.desc.abi_minor
            ),
            missing: why.to_owned(),
        });
    }

    /// F11: the reactor failed a request with an error of its own
    /// (`AA_E_INTERNAL`: not the system's errno, not a refusal the ABI
    /// names): the message it gave, logged once per runtime; the caller
    /// gets it in its `io::Error` too.
    pub(crate) fn failed_request(&self, status: AaStatus) -> String {
        let message = self
            .last_error()
            .unwrap_or_else(|| "it gave no message".to_owned());
        let line = format!(
            "reactor {} failed the request with {}: {message}",
            self.named(),
            super::status_text(status)
        );
        if !self.faults.borrow().contains(&"F11") {
            self.faults.borrow_mut().push("F11");
            let (name, version) = super::loader::describe(&self.plugin.desc);
            crate::core::events::emit(Event::PluginFault {
                plugin: format!("reactor {} ({name} {version})", self.named()),
                fault: format!(
                    "failed a request with {}: {message} (said once; each call gets the error)",
                    super::status_text(status)
                ),
            });
        }
        line
    }

    /// The reactor's last error message, if it has one.
    pub(crate) fn last_error(&self) -> Option<String> {
        let r = self.r.get();
        let f = self.plugin.vt.last_error_message?;
        if r.is_null() {
            return None;
        }
        let mut buf = [0u8; 512];
        // SAFETY: `r` is live (F2); `buf` is writable for its length.
        let n = unsafe { f(r, buf.as_mut_ptr(), buf.len()) };
        (n > 0).then(|| err_text(&buf, 0))
    }

    /// The reactor's count of events that keep the loop alive.
    pub(crate) fn alive(&self) -> u32 {
        let r = self.r.get();
        if r.is_null() {
            return 0;
        }
        let alive = self.plugin.vt.alive.expect("F1");
        // SAFETY: `r` is live (F2) and we are on its loop thread.
        unsafe { alive(r) }
    }

    /// The name the configuration chose the reactor by.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// Where it was loaded from: a file's path, or `statically linked`.
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// `"<label>"`, and where it was loaded from when the label does not
    /// say: how a failure names the plugin.
    pub(crate) fn named(&self) -> String {
        super::named(&self.label, &self.origin)
    }

    /// Destroys the reactor. On `AA_E_BUSY`, runs it with `run_once(0)` up
    /// to `attempts` times while disposed requests drain; if it stays busy,
    /// the instance is leaked (returns false).
    pub(crate) fn destroy(&self, attempts: usize) -> bool {
        let r = self.r.get();
        if r.is_null() {
            return true;
        }
        let destroy = self.plugin.vt.destroy.expect("F1");
        for _ in 0..=attempts {
            // SAFETY: `r` is live (F2); destroy may be retried after BUSY.
            let status = unsafe { destroy(r) };
            if status >= 0 {
                self.r.set(ptr::null_mut());
                self.plugin.deinit();
                return true;
            }
            if status != async_abi::AA_E_BUSY {
                tracing::warn!(
                    "reactor destroy failed ({}): leaking it",
                    super::status_text(status)
                );
                return false;
            }
            self.run_once(0);
        }
        false
    }

    /// One loop iteration.
    pub(crate) fn run_once(&self, timeout_ns: i64) -> AaStatus {
        let r = self.r.get();
        if r.is_null() {
            return AA_E_CLOSED;
        }
        let run_once = self.plugin.vt.run_once.expect("F1");
        // SAFETY: `r` is live (F2) and we are on its loop thread (the
        // runtime is thread-local).
        unsafe { run_once(r, timeout_ns) }
    }

    /// Creates a one-shot timer that calls `on_fire` from inside `run_once`.
    pub(crate) fn timer(
        self: &Rc<Self>,
        after_ns: u64,
        on_fire: Box<dyn Fn(AaStatus)>,
    ) -> Result<TimerEvent, AaStatus> {
        self.timer_with_flags(after_ns, 0, on_fire)
    }

    /// [`Reactor::timer`] with `AA_EVF_*` flags (`AA_EVF_HIDDEN`: it never
    /// keeps the loop alive).
    pub(crate) fn timer_with_flags(
        self: &Rc<Self>,
        after_ns: u64,
        flags: u32,
        on_fire: Box<dyn Fn(AaStatus)>,
    ) -> Result<TimerEvent, AaStatus> {
        self.timer_full(after_ns, 0, flags, on_fire)
    }

    /// A timer that fires `first_ns` from now, then every `repeat_ns`: one
    /// reactor event for all its ticks (`time::Interval`).
    pub(crate) fn timer_repeating(
        self: &Rc<Self>,
        first_ns: u64,
        repeat_ns: u64,
        on_fire: Box<dyn Fn(AaStatus)>,
    ) -> Result<TimerEvent, AaStatus> {
        self.timer_full(first_ns, repeat_ns.max(1), 0, on_fire)
    }

    fn timer_full(
        self: &Rc<Self>,
        after_ns: u64,
        repeat_ns: u64,
        flags: u32,
        on_fire: Box<dyn Fn(AaStatus)>,
    ) -> Result<TimerEvent, AaStatus> {
        let r = self.r.get();
        if r.is_null() {
            return Err(AA_E_CLOSED);
        }
        let ud: *mut Box<dyn Fn(AaStatus)> = Box::into_raw(Box::new(on_fire));
        let timer_new = self.plugin.vt.timer_new.expect("F1");
        let mut ev: *mut AaEvent = ptr::null_mut();
        // SAFETY: `r` is live (F2); `timer_cb` matches `AaTimerCb`; `ud`
        // stays valid until the event is disposed (F5).
        let status = unsafe {
            timer_new(
                r,
                after_ns,
                repeat_ns,
                flags,
                Some(timer_cb),
                ud.cast::<c_void>(),
                &mut ev,
            )
        };
        match NonNull::new(ev) {
            Some(ev) if status >= 0 => Ok(TimerEvent {
                reactor: self.clone(),
                ev,
                ud,
            }),
            _ => {
                // SAFETY: AA-R8: a failed constructor created nothing and
                // never calls back, so `ud` is ours again.
                drop(unsafe { Box::from_raw(ud) });
                Err(if status < 0 { status } else { AA_E_INVALID })
            }
        }
    }

    /// A one-shot timer that marks `rec` fired and wakes its waiter (the
    /// sleeps' timer, `time::delay`): `rec` lives on the sleeping
    /// coroutine's stack, which stays put while it waits, so a sleep
    /// allocates nothing in the host.
    pub(crate) fn wake_timer<'a>(
        &'a self,
        after_ns: u64,
        rec: &'a WakeRec,
    ) -> Result<WakeTimer<'a>, AaStatus> {
        let r = self.r.get();
        if r.is_null() {
            return Err(AA_E_CLOSED);
        }
        let timer_new = self.plugin.vt.timer_new.expect("F1");
        let mut ev: *mut AaEvent = ptr::null_mut();
        // SAFETY: `r` is live (F2); `wake_timer_cb` matches `AaTimerCb`;
        // `rec` outlives the returned guard, which disposes the event (F5).
        let status = unsafe {
            timer_new(
                r,
                after_ns,
                0,
                0,
                Some(wake_timer_cb),
                ptr::from_ref(rec).cast_mut().cast::<c_void>(),
                &mut ev,
            )
        };
        match NonNull::new(ev) {
            Some(ev) if status >= 0 => Ok(WakeTimer {
                reactor: self,
                ev,
                _rec: std::marker::PhantomData,
            }),
            // AA-R8: a failed constructor never calls back.
            _ => Err(if status < 0 { status } else { AA_E_INVALID }),
        }
    }

    /// Watches `signum`: `on_signal` runs from inside `run_once` for each
    /// delivery (status 0) or once with a negative status. `AA_E_UNSUPPORTED`
    /// if the reactor lacks `AA_CAP_SIGNAL`.
    pub(crate) fn signal(
        self: &Rc<Self>,
        signum: i32,
        on_signal: Box<dyn Fn(AaStatus)>,
    ) -> Result<SignalEvent, AaStatus> {
        let r = self.r.get();
        if r.is_null() {
            return Err(AA_E_CLOSED);
        }
        let Some(signal_new) = self.plugin.vt.signal_new else {
            return Err(AA_E_UNSUPPORTED);
        };
        if self.caps & AA_CAP_SIGNAL == 0 {
            return Err(AA_E_UNSUPPORTED);
        }
        let ud: *mut Box<dyn Fn(AaStatus)> = Box::into_raw(Box::new(on_signal));
        let mut ev: *mut AaEvent = ptr::null_mut();
        // SAFETY: `r` is live (F2); `signal_cb` matches `AaSignalCb`; `ud`
        // stays valid until the event is disposed (F5).
        let status = unsafe { signal_new(r, signum, 0, Some(signal_cb), ud.cast(), &mut ev) };
        match NonNull::new(ev) {
            Some(ev) if status >= 0 => Ok(SignalEvent {
                reactor: self.clone(),
                ev,
                ud,
            }),
            _ => {
                // SAFETY: AA-R8: a failed constructor created nothing and
                // never calls back, so `ud` is ours again.
                drop(unsafe { Box::from_raw(ud) });
                Err(if status < 0 { status } else { AA_E_INVALID })
            }
        }
    }

    /// Creates a trigger, unreferenced (it keeps the loop alive only after
    /// [`TriggerEvent::set_ref`]): `on_fire` runs from inside `run_once`
    /// after one or more [`FireHandle::fire`]s. `AA_E_UNSUPPORTED` if the
    /// reactor lacks `AA_CAP_TRIGGER`.
    pub(crate) fn trigger(
        self: &Rc<Self>,
        on_fire: Box<dyn Fn(AaStatus)>,
    ) -> Result<TriggerEvent, AaStatus> {
        let r = self.r.get();
        if r.is_null() {
            return Err(AA_E_CLOSED);
        }
        let vt = &self.plugin.vt;
        let (Some(trigger_new), Some(fire), Some(set_ref)) =
            (vt.trigger_new, vt.trigger_fire, vt.set_ref)
        else {
            return Err(AA_E_UNSUPPORTED);
        };
        if self.caps & AA_CAP_TRIGGER == 0 {
            return Err(AA_E_UNSUPPORTED);
        }
        let ud: *mut Box<dyn Fn(AaStatus)> = Box::into_raw(Box::new(on_fire));
        let mut ev: *mut AaEvent = ptr::null_mut();
        // SAFETY: `r` is live (F2); `trigger_cb` matches `AaTriggerCb`; `ud`
        // stays valid until the event is disposed (F5).
        let status = unsafe { trigger_new(r, 0, Some(trigger_cb), ud.cast(), &mut ev) };
        match NonNull::new(ev) {
            Some(ev) if status >= 0 => {
                // SAFETY: `ev` is a live event of this live reactor.
                unsafe { set_ref(ev.as_ptr(), false) };
                Ok(TriggerEvent {
                    reactor: self.clone(),
                    ev,
                    ud,
                    set_ref,
                    firer: Firer(Arc::new(Mutex::new(Some(FireSlot {
                        fire,
                        ev: ev.as_ptr(),
                    })))),
                })
            }
            _ => {
                // SAFETY: AA-R8: a failed constructor created nothing and
                // never calls back, so `ud` is ours again.
                drop(unsafe { Box::from_raw(ud) });
                Err(if status < 0 { status } else { AA_E_INVALID })
            }
        }
    }

    fn dispose(&self, ev: NonNull<AaEvent>) {
        if self.r.get().is_null() {
            return;
        }
        let dispose = self.plugin.vt.dispose.expect("F1");
        // SAFETY: `ev` was created by this live reactor (F2) and is
        // disposed exactly once (its wrapper's drop or the I/O path).
        unsafe { dispose(ev.as_ptr()) }
    }

    fn cancel(&self, ev: NonNull<AaEvent>, reason: AaStatus) -> AaStatus {
        if self.r.get().is_null() {
            return AA_E_CLOSED;
        }
        let cancel = self.plugin.vt.cancel.expect("F1");
        // SAFETY: `ev` is a live event of this reactor, not yet disposed.
        unsafe { cancel(ev.as_ptr(), reason) }
    }
}

/// WD2: the reactor's `run_once`, after marking the loop idle.
unsafe extern "C" fn watched_run_once(r: *mut AaReactor, timeout_ns: i64) -> AaStatus {
    let run = catch_unwind(|| {
        current::mark_idle();
        super::with_runtime(|rt| rt.reactor.plugin.vt.run_once).flatten()
    });
    match run {
        // SAFETY: the scheduler calls us exactly as it would call the
        // plugin's `run_once` (same `r`, same thread), and we forward the
        // call to it unchanged (F1: validated slot).
        Ok(Some(run_once)) => unsafe { run_once(r, timeout_ns) },
        _ => AA_E_CLOSED,
    }
}

unsafe extern "C" fn timer_cb(_ev: *mut AaEvent, status: AaStatus, ud: *mut c_void) {
    // SAFETY: `ud` is the `Box<dyn Fn>` made in `Reactor::timer`, alive until
    // the event is disposed (F5), and callbacks never run after dispose.
    let f = unsafe { &*ud.cast::<Box<dyn Fn(AaStatus)>>() };
    let _ = catch_unwind(AssertUnwindSafe(|| f(status)));
}

unsafe extern "C" fn signal_cb(_ev: *mut AaEvent, status: AaStatus, _signum: i32, ud: *mut c_void) {
    // SAFETY: `ud` is the `Box<dyn Fn>` made in `Reactor::signal`, alive
    // until the event is disposed (F5), and callbacks never run after
    // dispose.
    let f = unsafe { &*ud.cast::<Box<dyn Fn(AaStatus)>>() };
    let _ = catch_unwind(AssertUnwindSafe(|| f(status)));
}

/// A signal watch; dropping it disposes the event (no callback after).
pub(crate) struct SignalEvent {
    reactor: Rc<Reactor>,
    ev: NonNull<AaEvent>,
    ud: *mut Box<dyn Fn(AaStatus)>,
}

impl Drop for SignalEvent {
    fn drop(&mut self) {
        if self.reactor.r.get().is_null() {
            return; // as for `TimerEvent`
        }
        self.reactor.dispose(self.ev);
        // SAFETY: disposed above: no callback runs any more (F5).
        drop(unsafe { Box::from_raw(self.ud) });
    }
}

unsafe extern "C" fn trigger_cb(_ev: *mut AaEvent, status: AaStatus, ud: *mut c_void) {
    // SAFETY: `ud` is the `Box<dyn Fn>` made in `Reactor::trigger`, alive
    // until the event is disposed (F5), and callbacks never run after
    // dispose.
    let f = unsafe { &*ud.cast::<Box<dyn Fn(AaStatus)>>() };
    let _ = catch_unwind(AssertUnwindSafe(|| f(status)));
}

/// A cross-thread trigger; dropping it disposes the event (no callback
/// after). Other threads fire it through a [`Firer`].
pub(crate) struct TriggerEvent {
    reactor: Rc<Reactor>,
    ev: NonNull<AaEvent>,
    ud: *mut Box<dyn Fn(AaStatus)>,
    set_ref: unsafe extern "C" fn(*mut AaEvent, bool),
    firer: Firer,
}

impl TriggerEvent {
    /// Whether the trigger keeps the loop alive (libuv's ref/unref).
    pub(crate) fn set_ref(&self, referenced: bool) {
        if self.reactor.r.get().is_null() {
            return;
        }
        // SAFETY: `ev` is a live event of this live reactor (F2), not yet
        // disposed (that happens in our drop).
        unsafe { (self.set_ref)(self.ev.as_ptr(), referenced) }
    }

    /// What other threads fire the trigger with.
    pub(crate) fn firer(&self) -> Firer {
        self.firer.clone()
    }
}

impl Drop for TriggerEvent {
    fn drop(&mut self) {
        // F7: retired under its lock before the event goes.
        self.firer.retire();
        if self.reactor.r.get().is_null() {
            return; // as for `TimerEvent`
        }
        self.reactor.dispose(self.ev);
        // SAFETY: disposed above: no callback runs any more (F5).
        drop(unsafe { Box::from_raw(self.ud) });
    }
}

/// Fires a [`TriggerEvent`] from any thread, while it lives (F7).
#[derive(Clone)]
pub(crate) struct Firer(Arc<Mutex<Option<FireSlot>>>);

struct FireSlot {
    fire: unsafe extern "C" fn(*const AaEvent) -> AaStatus,
    ev: *const AaEvent,
}

// SAFETY: `trigger_fire` is an `[any]`-thread slot, and the event pointer is
// only passed to it, under the lock that F7 retires it under.
unsafe impl Send for FireSlot {}

impl Firer {
    /// Fires the trigger (coalescing); false once the trigger is gone.
    pub(crate) fn fire(&self) -> bool {
        let slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &*slot {
            Some(s) => {
                // SAFETY: F7: the slot is filled, so the event has not been
                // disposed, and cannot be while we hold the lock;
                // `trigger_fire` may be called from any thread.
                unsafe { (s.fire)(s.ev) };
                true
            }
            None => false,
        }
    }

    fn retire(&self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// A one-shot timer; dropping it disposes the event (no callback after).
pub(crate) struct TimerEvent {
    reactor: Rc<Reactor>,
    ev: NonNull<AaEvent>,
    ud: *mut Box<dyn Fn(AaStatus)>,
}

impl Drop for TimerEvent {
    fn drop(&mut self) {
        if self.reactor.r.get().is_null() {
            // The reactor is gone and freed its events; the closure must not
            // be freed while a leaked reactor might still call it.
            return;
        }
        self.reactor.dispose(self.ev);
        // SAFETY: disposed above: no callback runs any more (F5), so the
        // closure box is ours.
        drop(unsafe { Box::from_raw(self.ud) });
    }
}

/// What a [`WakeTimer`] reports to: whether it fired, and whom it wakes.
pub(crate) struct WakeRec {
    fired: std::cell::Cell<bool>,
    waiter: *mut async_abi::AaCoroutine,
}

impl WakeRec {
    /// A record that wakes `me` (alive while it waits on it).
    pub(crate) fn new(me: &CoroState) -> WakeRec {
        WakeRec {
            fired: std::cell::Cell::new(false),
            waiter: me.raw.get(),
        }
    }

    /// Whether the timer fired.
    pub(crate) fn fired(&self) -> bool {
        self.fired.get()
    }
}

/// A one-shot timer over a [`WakeRec`]; dropping it disposes the event (no
/// callback after), before the record can go.
pub(crate) struct WakeTimer<'a> {
    reactor: &'a Reactor,
    ev: NonNull<AaEvent>,
    _rec: std::marker::PhantomData<&'a WakeRec>,
}

impl Drop for WakeTimer<'_> {
    fn drop(&mut self) {
        // A null instance: destroyed (or leaked after a failed destroy),
        // and never run again, so the record is never called either.
        if !self.reactor.r.get().is_null() {
            self.reactor.dispose(self.ev);
        }
    }
}

unsafe extern "C" fn wake_timer_cb(_ev: *mut AaEvent, _status: AaStatus, ud: *mut c_void) {
    // SAFETY: `ud` is the `WakeRec` the `WakeTimer` borrows, alive until
    // the event is disposed (F5), and callbacks never run after dispose.
    let rec = unsafe { &*ud.cast::<WakeRec>() };
    if rec.fired.replace(true) {
        return called_twice("a one-shot timer's"); // F8
    }
    let waiter = rec.waiter;
    let _ = catch_unwind(|| super::wake_raw(waiter));
}

/// Keeps `me`'s stack as it suspends (the RFC's `getTrace`): out of line,
/// since it costs microseconds and runs only when tracing is on.
#[cold]
#[inline(never)]
fn capture_trace(me: &CoroState) {
    // std's capture holds a process-wide lock: never a hooked wait inside.
    let _quiet = super::Quiet::new();
    let bt = std::backtrace::Backtrace::force_capture();
    me.with_extra(|x| x.trace = Some(bt));
}

type CoroutineNewFn = unsafe extern "C" fn(
    *mut AaScheduler,
    *const AaSpawnOptions,
    AaCoroutineEntry,
    *mut c_void,
    *mut *mut AaCoroutine,
) -> AaStatus;
type CoroutineIdFn = unsafe extern "C" fn(*const AaCoroutine) -> u64;
type EnqueueFn = unsafe extern "C" fn(*mut AaScheduler, *mut AaCoroutine, AaStatus) -> AaStatus;
type SuspendFn = unsafe extern "C" fn(*mut AaScheduler, *const AaWaitInfo) -> AaStatus;
type CoroutineArgFn = unsafe extern "C" fn(*const AaCoroutine) -> *mut c_void;

/// Copies an `AaStr` into a `String` (lossy UTF-8).
///
/// # Safety
///
/// `s` must point to `s.len` readable bytes (or be empty).
unsafe fn aa_str_to_string(s: AaStr) -> String {
    if s.ptr.is_null() || s.len == 0 {
        return String::new();
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// The slots every spawn, wake-up and suspension calls (F6).
struct HotSlots {
    coroutine_new: CoroutineNewFn,
    coroutine_id: CoroutineIdFn,
    enqueue: EnqueueFn,
    suspend: SuspendFn,
    /// `AA_SCHED_CAP_WAIT_YIELD`: a yield is one `suspend` call.
    wait_yield: bool,
}

/// A scheduler instance and its plugin.
pub(crate) struct Scheduler {
    plugin: Loaded<AaSchedulerVTable>,
    s: std::cell::Cell<*mut AaScheduler>,
    hot: HotSlots,
    /// Capture each coroutine's stack at its suspensions (`Builder::trace`).
    pub(crate) trace: std::cell::Cell<bool>,
}

impl Scheduler {
    /// Creates a scheduler ticking `reactor`; the error is the plugin's
    /// one-line message.
    pub(crate) fn create(
        plugin: Loaded<AaSchedulerVTable>,
        reactor: &Reactor,
        watched: bool,
        stack_size: usize,
        options: &[(String, String)],
    ) -> Result<Scheduler, (Loaded<AaSchedulerVTable>, String)> {
        let kv = KvList::new(options);
        let mut err = [0u8; 512];
        let cfg = AaSchedulerConfig {
            struct_size: std::mem::size_of::<AaSchedulerConfig>() as u32,
            flags: 0,
            reactor: reactor.vtable_for_scheduler(watched),
            reactor_instance: reactor.raw(),
            stack_size,
            options: kv.kvs.as_ptr(),
            n_options: kv.kvs.len(),
            err_buf: err.as_mut_ptr(),
            err_cap: err.len(),
        };
        let create = plugin.vt.create.expect("F1");
        let mut out: *mut AaScheduler = ptr::null_mut();
        // SAFETY: `ctx` is the plugin's live context; the reactor vtable is
        // boxed inside `reactor` and the instance is live, both outliving the
        // scheduler (the runtime destroys the scheduler first); options and
        // `err` are valid for the call (AA-R2).
        let status = unsafe { create(plugin.ctx, &cfg, &mut out) };
        if status < 0 || out.is_null() {
            let msg = err_text(&err, status);
            return Err((plugin, msg));
        }
        let vt = &plugin.vt;
        let hot = HotSlots {
            coroutine_new: vt.coroutine_new.expect("F1"),
            coroutine_id: vt.coroutine_id.expect("F1"),
            enqueue: vt.enqueue.expect("F1"),
            suspend: vt.suspend.expect("F1"),
            wait_yield: vt.caps & AA_SCHED_CAP_WAIT_YIELD != 0,
        };
        Ok(Scheduler {
            plugin,
            s: std::cell::Cell::new(out),
            hot,
            trace: std::cell::Cell::new(false),
        })
    }

    fn vt(&self) -> &AaSchedulerVTable {
        &self.plugin.vt
    }

    pub(crate) fn caps(&self) -> u64 {
        self.plugin.vt.caps
    }

    /// The scheduler's last error message, if it has one.
    pub(crate) fn last_error(&self) -> Option<String> {
        let s = self.s.get();
        let f = self.plugin.vt.last_error_message?;
        if s.is_null() {
            return None;
        }
        let mut buf = [0u8; 512];
        // SAFETY: `s` is live (F2); `buf` is writable for its length.
        let n = unsafe { f(s, buf.as_mut_ptr(), buf.len()) };
        (n > 0).then(|| err_text(&buf, 0))
    }

    /// Runs the loop until no coroutine is left.
    pub(crate) fn run(&self) -> AaStatus {
        let s = self.s.get();
        if s.is_null() {
            return AA_E_CLOSED;
        }
        let run = self.vt().run.expect("F1");
        // SAFETY: `s` is live (F2); `run` is called on the loop thread,
        // outside any coroutine (the runtime calls it from `run` itself).
        unsafe { run(s) }
    }

    /// Destroys the scheduler and deinitialises its plugin.
    pub(crate) fn destroy(&self) -> AaStatus {
        let s = self.s.get();
        if s.is_null() {
            return AA_OK;
        }
        let destroy = self.vt().destroy.expect("F1");
        // SAFETY: `s` is live (F2) and not running (its `run` returned).
        let status = unsafe { destroy(s) };
        if status >= 0 {
            self.s.set(ptr::null_mut());
            self.plugin.deinit();
        }
        status
    }

    /// Creates a coroutine for `state` and enqueues it for its first start.
    #[inline]
    pub(crate) fn spawn(
        &self,
        state: &Rc<CoroState>,
        stack_size: usize,
        location: &'static Location<'static>,
        priority: u32,
    ) -> Result<(), AaStatus> {
        self.create_coroutine(state, stack_size, location, priority)?;
        let status = self.enqueue(state, AA_OK);
        if status < 0 {
            return Err(status);
        }
        Ok(())
    }

    /// Creates a coroutine for `state` (state CREATED: not queued yet; the
    /// caller enqueues it).
    #[inline]
    pub(crate) fn create_coroutine(
        &self,
        state: &Rc<CoroState>,
        stack_size: usize,
        location: &'static Location<'static>,
        priority: u32,
    ) -> Result<(), AaStatus> {
        let s = self.s.get();
        if s.is_null() {
            return Err(AA_E_CLOSED);
        }
        let opts = AaSpawnOptions {
            struct_size: std::mem::size_of::<AaSpawnOptions>() as u32,
            priority,
            stack_size,
            spawn_file: AaStr::from_str(location.file()),
            spawn_line: location.line(),
            spawn_column: location.column(),
        };
        let arg = Rc::into_raw(state.clone()) as *mut c_void;
        let mut out: *mut AaCoroutine = ptr::null_mut();
        // SAFETY: `s` is live (F2); `opts.spawn_file` is `'static`, as the
        // slot requires; `coroutine_entry` matches `AaCoroutineEntry`;
        // `arg` carries one strong count for the coroutine (F3).
        let status =
            unsafe { (self.hot.coroutine_new)(s, &opts, Some(coroutine_entry), arg, &mut out) };
        if status < 0 || out.is_null() {
            // SAFETY: AA-R8: nothing was created, so the count is ours again.
            drop(unsafe { Rc::from_raw(arg as *const CoroState) });
            return Err(if status < 0 { status } else { AA_E_INVALID });
        }
        // SAFETY: `out` is the coroutine just created, alive (not started).
        state.id.set(unsafe { (self.hot.coroutine_id)(out) });
        state.raw.set(out);
        Ok(())
    }

    /// Enqueues a live coroutine with `status` (F4); `AA_E_INVALID` if it
    /// has finished.
    #[inline]
    pub(crate) fn enqueue(&self, state: &CoroState, status: AaStatus) -> AaStatus {
        self.enqueue_raw(state.raw.get(), status)
    }

    /// [`Scheduler::enqueue`] by handle: `raw` is a `CoroState::raw` read
    /// just before (F4: null once the coroutine finished).
    #[inline]
    pub(crate) fn enqueue_raw(&self, raw: *mut AaCoroutine, status: AaStatus) -> AaStatus {
        let s = self.s.get();
        if s.is_null() {
            return AA_E_CLOSED;
        }
        if raw.is_null() {
            return AA_E_INVALID;
        }
        // SAFETY: `s` is live (F2) and `raw` is a live coroutine of it (F4).
        unsafe { (self.hot.enqueue)(s, raw, status) }
    }

    /// Suspends `me`, the running coroutine; returns the status it is
    /// resumed with. `what` and `at` describe the wait (deadlock reports).
    #[inline]
    pub(crate) fn suspend(
        &self,
        me: &Rc<CoroState>,
        what: &[u8],
        at: &'static Location<'static>,
    ) -> AaStatus {
        self.suspend_with(me, 0, what, at)
    }

    /// Yields: enqueues `me`, the running coroutine, with status 0 and
    /// suspends it; one `suspend` call with `AA_WAIT_YIELD` when the
    /// scheduler has `AA_SCHED_CAP_WAIT_YIELD`, else `enqueue` + `suspend`.
    #[inline(always)]
    pub(crate) fn yield_now(
        &self,
        me: &Rc<CoroState>,
        what: &[u8],
        at: &'static Location<'static>,
    ) -> AaStatus {
        if self.hot.wait_yield {
            return self.suspend_with(me, AA_WAIT_YIELD, what, at);
        }
        let _ = self.enqueue(me, AA_OK);
        self.suspend_with(me, 0, what, at)
    }

    #[inline(always)]
    fn suspend_with(
        &self,
        me: &Rc<CoroState>,
        flags: u32,
        what: &[u8],
        at: &'static Location<'static>,
    ) -> AaStatus {
        let s = self.s.get();
        if s.is_null() {
            return AA_E_CLOSED;
        }
        let info = AaWaitInfo {
            struct_size: std::mem::size_of::<AaWaitInfo>() as u32,
            flags,
            // UTF-8: every `what` is a `&str`'s bytes or ASCII (task::wait).
            what: AaStr {
                ptr: what.as_ptr(),
                len: what.len(),
            },
            file: AaStr::from_str(at.file()),
            line: at.line(),
            column: at.column(),
        };
        me.last_suspend.set(Some(at));
        if self.trace.get() {
            capture_trace(me);
        }
        current::leave();
        // K5: a quiet section open here is this coroutine's.
        #[cfg(feature = "hooks")]
        let quiet = current::take_quiet();
        // SAFETY: `s` is live (F2); `info` and `what` live on this stack
        // until `suspend` returns, which is what `AaWaitInfo` requires.
        let status = unsafe { (self.hot.suspend)(s, &info) };
        // K2: control is back on `me`'s stack.
        current::enter(me);
        #[cfg(feature = "hooks")]
        current::restore_quiet(quiet);
        status
    }

    /// The scheduler's view of a live coroutine (`AA_CORO_*` state).
    pub(crate) fn coroutine_state(&self, state: &CoroState) -> Option<u32> {
        self.info_with(state, |info| info.state)
    }

    /// What a live coroutine waits for (`wait_what`), if it is suspended
    /// with a description.
    pub(crate) fn awaiting_info(&self, state: &CoroState) -> Option<String> {
        self.info_with(state, |info| {
            // SAFETY: the strings of an `AaCoroutineInfo` are valid until the
            // coroutine next runs; we copy them before returning, and nothing
            // runs in between (we are on the loop thread, not switching).
            let what = unsafe { aa_str_to_string(info.wait_what) };
            (!what.is_empty()).then_some(what)
        })
        .flatten()
    }

    fn info_with<R>(&self, state: &CoroState, f: impl FnOnce(&AaCoroutineInfo) -> R) -> Option<R> {
        let s = self.s.get();
        let raw = state.raw.get();
        if s.is_null() || raw.is_null() {
            return None;
        }
        let mut info = AaCoroutineInfo {
            struct_size: std::mem::size_of::<AaCoroutineInfo>() as u32,
            state: 0,
            id: 0,
            arg: ptr::null_mut(),
            priority: 0,
            spawn_line: 0,
            spawn_file: AaStr::EMPTY,
            spawn_column: 0,
            wait_line: 0,
            wait_file: AaStr::EMPTY,
            wait_what: AaStr::EMPTY,
            switches: 0,
        };
        let coroutine_info = self.vt().coroutine_info.expect("F1");
        // SAFETY: `s` is live (F2), `raw` is a live coroutine (F4), `info`
        // is a valid out struct with its size set.
        let status = unsafe { coroutine_info(s, raw, &mut info) };
        (status >= 0).then(|| f(&info))
    }

    /// Every live coroutine of this scheduler, in creation order (the
    /// scheduler's `iterate`).
    pub(crate) fn live_coroutines(&self) -> Vec<Rc<CoroState>> {
        let s = self.s.get();
        let mut out: Vec<Rc<CoroState>> = Vec::new();
        let Some(iterate) = self.vt().iterate else {
            return out;
        };
        if s.is_null() {
            return out;
        }
        let coroutine_arg = self.vt().coroutine_arg.expect("F1");
        let mut args: Vec<*mut c_void> = Vec::new();
        unsafe extern "C" fn visit(coro: *mut AaCoroutine, ud: *mut c_void) -> bool {
            // SAFETY: `ud` is the `(fn, Vec)` pair below, alive for the
            // whole `iterate` call that calls us.
            let (arg_of, args) =
                unsafe { &mut *ud.cast::<(CoroutineArgFn, &mut Vec<*mut c_void>)>() };
            // SAFETY: `coro` is a live coroutine handed to us by `iterate`.
            args.push(unsafe { arg_of(coro) });
            true
        }
        let mut pair: (CoroutineArgFn, &mut Vec<*mut c_void>) = (coroutine_arg, &mut args);
        // SAFETY: `s` is live (F2); `visit` matches `AaCoroutineVisitFn` and
        // only records arguments (it creates, enqueues or finishes nothing,
        // as the slot requires); `pair` outlives the call.
        let status = unsafe { iterate(s, Some(visit), (&raw mut pair).cast()) };
        if status < 0 {
            return out;
        }
        for arg in args {
            if arg.is_null() {
                continue;
            }
            let arg = arg as *const CoroState;
            // SAFETY: F3: the `arg` of a live coroutine of ours is a strong
            // count of its `CoroState` (held by the coroutine until its entry
            // returns); nothing ran since `iterate` listed it, so it is still
            // live, and we take a new count of our own.
            let state = unsafe {
                Rc::increment_strong_count(arg);
                Rc::from_raw(arg)
            };
            out.push(state);
        }
        out
    }

    /// Starts shutdown: every other live coroutine is resumed with `reason`.
    pub(crate) fn shutdown(&self, reason: AaStatus) -> AaStatus {
        let s = self.s.get();
        if s.is_null() {
            return AA_E_CLOSED;
        }
        let shutdown = self.vt().shutdown.expect("F1");
        // SAFETY: `s` is live (F2); shutdown is callable inside `run`.
        unsafe { shutdown(s, reason) }
    }
}

/// A new coroutine state, written straight into its reference-counted
/// allocation (no copy of the large record through the stack: every spawn
/// makes one).
#[inline]
pub(crate) fn new_state(
    body: Body,
    location: &'static Location<'static>,
    is_main: bool,
) -> Rc<CoroState> {
    let mut rc = Rc::<CoroState>::new_uninit();
    match Rc::get_mut(&mut rc) {
        Some(slot) => {
            slot.write(CoroState::new(body, location, is_main));
        }
        None => unreachable!("a new Rc is unique"),
    }
    // SAFETY: the value was written just above.
    unsafe { rc.assume_init() }
}

/// The entry of every coroutine (rules C1-C3): runs the host's entry logic
/// and never unwinds.
unsafe extern "C" fn coroutine_entry(arg: *mut c_void, start_status: AaStatus) {
    // SAFETY: F3: `arg` is the coroutine's own strong count, made by
    // `Rc::into_raw` in `Scheduler::spawn`; we take it back here, once.
    let state: Rc<CoroState> = unsafe { Rc::from_raw(arg as *const CoroState) };
    // K2: this coroutine runs host code now.
    current::enter(&state);
    let r = catch_unwind(AssertUnwindSafe(|| run_entry(&state, start_status)));
    if let Err(payload) = r {
        // `run_entry` catches the body's panics; this is a panic while
        // storing the outcome. Dropping its payload could panic again.
        std::mem::forget(payload);
    }
    // K2/K3: cleared before our strong count can go.
    current::leave();
    // I1: the coroutine is finished; the scheduler frees it after we return.
    state.raw.set(ptr::null_mut());
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(state))) {
        std::mem::forget(payload);
    }
}
