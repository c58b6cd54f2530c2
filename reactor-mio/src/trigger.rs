//! Cross-thread triggers and the reactor's waker: the only state another
//! thread may touch.
//!
//! # What this module owns
//!
//! - [`Shared`]: the reactor's `mio::Waker` and the list of fired triggers,
//!   behind an `Arc` that the reactor and every trigger hold.
//! - [`TriggerFlag`]: one trigger's thread-safe part (fired and closed
//!   flags), behind an `Arc` held by the trigger's event and, while it is
//!   fired, by the fired list.
//!
//! # Invariants
//!
//! - **T1** A flag is in the fired list at most once: only the `fire` that
//!   turns `fired` from false to true pushes it, and only the loop clears
//!   `fired`, after taking the flag out of the list. So several fires before
//!   the loop notices coalesce into one callback, and the list never holds
//!   more entries than there are flags.
//! - **T2** The fired list's capacity (and the loop's spare list's) is
//!   reserved on the loop thread for every flag that exists before any
//!   thread can fire it, so `fire` never allocates: it swaps a bool, pushes
//!   into reserved capacity under a lock held for O(1), and writes the
//!   waker's eventfd once per coalesced batch.
//! - **T3** `closed` is set by the loop when the trigger is cancelled,
//!   closed or disposed; a later `fire` does nothing and says so.
//!
//! # Access
//!
//! `fire` and `Shared::wake` from any thread; everything else on the loop
//! thread. The lock is never held while calling anything.
//!
//! # Drop order
//!
//! Flags hold the `Shared` they fire into, so the waker outlives every
//! trigger that could wake it.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_abi::{AaStatus, AA_E_CLOSED, AA_OK};

/// The part of a reactor other threads reach (see the module doc).
#[derive(Debug)]
pub(crate) struct Shared {
    waker: mio::Waker,
    fired: Mutex<Vec<Arc<TriggerFlag>>>,
    any_fired: AtomicBool,
}

impl Shared {
    /// Wraps the reactor's waker.
    pub(crate) fn new(waker: mio::Waker) -> Shared {
        Shared {
            waker,
            fired: Mutex::new(Vec::new()),
            any_fired: AtomicBool::new(false),
        }
    }

    /// Interrupts a blocking `run_once`. `[any]`
    pub(crate) fn wake(&self) -> io::Result<()> {
        self.waker.wake()
    }

    fn fired(&self) -> MutexGuard<'_, Vec<Arc<TriggerFlag>>> {
        // A panic while the lock is held cannot leave the Vec inconsistent
        // (push into reserved capacity, swap), so poisoning is ignored.
        self.fired.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves room for `flags` more entries (T2). Loop thread.
    pub(crate) fn reserve(&self, flags: usize) {
        self.fired().reserve(flags);
    }

    /// Empties the fired list (`destroy`): a flag in it holds this `Shared`,
    /// so leaving one there would keep the waker's eventfd alive forever.
    pub(crate) fn clear_fired(&self) {
        self.any_fired.store(false, Ordering::Release);
        let fired = std::mem::take(&mut *self.fired());
        drop(fired);
    }

    /// Swaps the fired list with `batch` (empty, with reserved capacity) if
    /// anything fired. Loop thread.
    pub(crate) fn take_fired(&self, batch: &mut Vec<Arc<TriggerFlag>>) {
        if self.any_fired.swap(false, Ordering::AcqRel) {
            std::mem::swap(&mut *self.fired(), batch);
        }
    }
}

/// One trigger's thread-safe state (see the module doc).
#[derive(Debug)]
pub(crate) struct TriggerFlag {
    /// The trigger's id in the reactor's table of open triggers.
    pub(crate) id: u64,
    fired: AtomicBool,
    closed: AtomicBool,
    shared: Arc<Shared>,
}

impl TriggerFlag {
    /// A flag firing into `shared`.
    pub(crate) fn new(id: u64, shared: Arc<Shared>) -> TriggerFlag {
        TriggerFlag {
            id,
            fired: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            shared,
        }
    }

    /// Fires the trigger: coalescing, no allocation (T1, T2). `[any]`
    pub(crate) fn fire(self: &Arc<Self>) -> AaStatus {
        if self.closed.load(Ordering::Acquire) {
            return AA_E_CLOSED;
        }
        if self.fired.swap(true, Ordering::AcqRel) {
            return AA_OK;
        }
        self.shared.fired().push(Arc::clone(self));
        self.shared.any_fired.store(true, Ordering::Release);
        match self.shared.wake() {
            Ok(()) => AA_OK,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        }
    }

    /// Clears `fired` after the loop took the flag out of the list (T1).
    pub(crate) fn rearm(&self) {
        self.fired.store(false, Ordering::Release);
    }

    /// Marks the trigger closed (T3). Loop thread.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

impl reactor_sdk::event::Trigger for TriggerFlag {
    #[inline]
    fn fire(this: &Arc<TriggerFlag>) -> AaStatus {
        TriggerFlag::fire(this)
    }
}

impl crate::reactor::Reactor {
    /// `trigger_new`: an open trigger, registered in the table of open
    /// triggers so a fired flag finds its event.
    pub(crate) fn trigger_new(
        &self,
        flags: u32,
        callback: crate::ffi::HostCallback,
    ) -> crate::error::Result<std::rc::Rc<crate::event::Event>> {
        crate::reactor::check_flags("trigger_new", flags, async_abi::AA_EVF_HIDDEN)?;
        let id = self.next_trigger_id();
        let flag = Arc::new(TriggerFlag::new(id, Arc::clone(&self.shared)));
        let state = crate::event::State::Trigger { open: true };
        let ev = self.new_event(
            async_abi::AA_EVENT_TRIGGER,
            flags,
            callback,
            Some(flag),
            state,
        );
        self.triggers
            .borrow_mut()
            .insert(id, std::rc::Rc::clone(&ev));
        self.touch(&ev);
        Ok(ev)
    }
}
