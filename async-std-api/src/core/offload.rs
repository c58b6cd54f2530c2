//! Running a closure on the blocking pool while the calling coroutine
//! waits: the one wait under `spawn_blocking`, file operations on a reactor
//! without native file I/O, and name resolution without the reactor's DNS.
//!
//! The closure runs on a pool thread (`runtime::pool`); its result (or its
//! panic) comes back through the runtime's door (`runtime::remote`), whose
//! trigger wakes the loop. The coroutine suspends in between.
//!
//! Rules:
//! - **OF1** A suspension point (W1): a pending cancellation is delivered
//!   before anything is queued.
//! - **OF2** A waiter cancelled before the result arrives stops waiting and
//!   returns the cancellation; the closure is *detached*: it runs to its end
//!   on its thread (a thread cannot be interrupted) and its result is
//!   dropped. A result that arrived first wins: it is returned and the
//!   cancellation stays pending (as D-29 and P-08).
//! - **OF3** A panic of the closure is caught on its thread and returned as
//!   `Err(payload)`, for the caller to resume on the coroutine.

use std::cell::RefCell;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;
use std::thread;

use async_abi::AA_E_UNSUPPORTED;

use super::error::Cancelled;
use super::runtime::{self, Runtime};
use super::wait::{checkpoint, suspend_once, with_me};

/// Why an offloaded closure gave no result.
#[derive(Debug)]
pub(crate) enum OffloadError {
    /// The waiter was cancelled (OF1, OF2); the closure is detached if it
    /// was queued.
    Cancelled(Cancelled),
    /// The work could not be queued or was dropped: no trigger on the
    /// reactor, no thread could be started, or the runtime is shutting
    /// down. One line naming the reason.
    Unavailable(io::Error),
}

impl From<OffloadError> for io::Error {
    fn from(e: OffloadError) -> io::Error {
        match e {
            OffloadError::Cancelled(c) => c.into(),
            OffloadError::Unavailable(e) => e,
        }
    }
}

/// Runs `f` on the blocking pool and waits for it (module doc). `what`
/// describes the wait for deadlock and watchdog reports.
#[track_caller]
pub(crate) fn offload<T, F>(what: &'static str, f: F) -> Result<thread::Result<T>, OffloadError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let at = Location::caller();
    with_me(what, move |rt, me| {
        checkpoint(me).map_err(OffloadError::Cancelled)?; // OF1
        let slot: Rc<RefCell<Option<Option<thread::Result<T>>>>> = Rc::default();
        let (id, promise) = {
            let slot = slot.clone();
            let waiter = me.clone();
            rt.remote
                .register(move |v: Option<thread::Result<T>>| {
                    *slot.borrow_mut() = Some(v);
                    runtime::wake(&waiter);
                })
                .map_err(|s| OffloadError::Unavailable(no_trigger(rt, s)))?
        };
        // OF2: whatever way this function leaves, a callback that has not
        // run is dropped, so it never wakes a coroutine that stopped
        // waiting.
        let _forget = Forget { rt, id };
        rt.pool
            .submit(Box::new(move || {
                let r = catch_unwind(AssertUnwindSafe(f)); // OF3
                promise.keep(r);
            }))
            .map_err(|m| OffloadError::Unavailable(io::Error::other(m)))?;
        loop {
            let resumed = suspend_once(rt, me, what.as_bytes(), at);
            let arrived = slot.borrow_mut().take();
            if let Some(v) = arrived {
                if resumed.is_err() {
                    me.repend_cancel(); // OF2: the result wins
                }
                return v.ok_or_else(|| {
                    OffloadError::Unavailable(io::Error::other(
                        "the blocking work was dropped before it ran: the runtime is shutting down",
                    ))
                });
            }
            resumed.map_err(OffloadError::Cancelled)?;
        }
    })
}

fn no_trigger(rt: &Runtime, status: async_abi::AaStatus) -> io::Error {
    if status == AA_E_UNSUPPORTED {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "reactor \"{}\" lacks AA_CAP_TRIGGER: blocking work cannot report back to the loop",
                rt.reactor.label()
            ),
        )
    } else {
        io::Error::other(format!(
            "cannot make the loop's cross-thread trigger: {}",
            runtime::status_text(status)
        ))
    }
}

struct Forget<'a> {
    rt: &'a Runtime,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.rt.remote.forget(self.id);
    }
}
