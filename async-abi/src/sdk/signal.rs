//! The process-wide half of signal watching: one `sigaction` handler per
//! watched signal, and a fixed table of reactor *ports* it reports into.
//! Shared by the workspace's reactors through the SDK (plugins share no
//! code but `async-abi`); each loaded image still has its own table.
//!
//! # What this module owns
//!
//! - `TABLE`: [`SLOTS`] ports. A reactor that watches signals claims one
//!   ([`Port::claim`]) and gives it a descriptor to wake it (an eventfd the
//!   loop waits on). A port has the set of signals its reactor watches
//!   (`watched`) and the set that arrived since the reactor last looked
//!   (`pending`), one bit per signal number.
//! - `DISPOSITIONS`: per signal, how many ports watch it and the
//!   disposition found before the handler was installed.
//!
//! # Invariants
//!
//! - **SG1 Async-signal safety.** The handler (`on_signal`) touches only
//!   atomics in static memory and makes one `write(2)` per port that
//!   watches the signal (an eventfd increment, non-blocking: a full counter
//!   already wakes its reader). It saves and restores `errno`. It takes no
//!   lock, allocates nothing and never blocks, so it may interrupt any code
//!   on any thread, including this module's own loop-side functions.
//! - **SG2 Every port is told.** The handler sets the signal's bit in
//!   `pending` of *every* port whose `watched` has it, and wakes each one:
//!   two reactors on two threads watching the same signal both see it.
//!   Bits coalesce: several deliveries before the reactor looks are one.
//! - **SG3 No write after release.** The handler raises the port's `busy`
//!   count before it reads `watched` or `fd` and lowers it after its write.
//!   [`Port::unwatch`] and dropping the [`Port`] change `watched`/`fd` first
//!   and then wait for `busy` to drop to zero (all `SeqCst`, so a handler
//!   that read the old value is seen by the wait). So once the port is
//!   dropped no handler will write its descriptor, and after `unwatch` no
//!   handler will set the old bit: `unwatch` clears that `pending` bit after
//!   the wait, and a signal that arrived for a watcher that is gone is never
//!   delivered to a later one.
//! - **SG4 Dispositions.** The handler is installed (`SA_RESTART |
//!   SA_ONSTACK`) when the first port of this image starts watching a
//!   signal, and the previous disposition is restored when the last one
//!   stops, under the `DISPOSITIONS` lock. A restore happens only if the
//!   handler is still ours: if someone installed another disposition over
//!   it meanwhile, that one is left alone.
//!
//! # Access
//!
//! The handler: any thread, at any time. Everything else: the loop thread
//! of the reactor that owns the port (claim, watch, unwatch, take, release)
//! and the `DISPOSITIONS` lock for install and restore.
//!
//! # Drop order
//!
//! A [`Port`] releases its slot when dropped (after unwatching what it still
//! watches); its owner keeps the wake descriptor open until then, which the
//! owners do by declaring the port before the descriptor.
//!
//! # Safety
//!
//! The unsafe code is the handler's `errno` access and `write(2)` (SG1), and
//! `sigaction` calls on local `struct sigaction` values.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};

/// Ports in the table: at most this many reactors of one image watch
/// signals at the same time.
pub const SLOTS: usize = 128;

/// The highest signal number a port can hold (bits 0..63 of a `u64`).
const MAX_SIGNAL: i32 = 64;

/// One reactor's port (see the module doc).
struct Slot {
    claimed: AtomicBool,
    fd: AtomicI32,
    busy: AtomicU32,
    watched: AtomicU64,
    pending: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            claimed: AtomicBool::new(false),
            fd: AtomicI32::new(-1),
            busy: AtomicU32::new(0),
            watched: AtomicU64::new(0),
            pending: AtomicU64::new(0),
        }
    }

    /// Waits until no handler is inside this slot (SG3). A handler never
    /// blocks, so this is a short spin.
    fn quiesce(&self) {
        while self.busy.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// One signal's disposition bookkeeping (SG4).
#[derive(Clone, Copy)]
struct Disposition {
    /// Ports of this image watching the signal.
    ports: u32,
    /// What `sigaction` returned when the handler was installed.
    previous: Option<libc::sigaction>,
}

static DISPOSITIONS: Mutex<[Disposition; MAX_SIGNAL as usize + 1]> = Mutex::new(
    [Disposition {
        ports: 0,
        previous: None,
    }; MAX_SIGNAL as usize + 1],
);

fn dispositions() -> MutexGuard<'static, [Disposition; MAX_SIGNAL as usize + 1]> {
    // Every update under the lock is a plain store of a complete value, so
    // a panic cannot leave the table half-written: poisoning is ignored.
    DISPOSITIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bit of `signum` in `watched` and `pending`.
fn bit(signum: i32) -> u64 {
    1 << (signum - 1)
}

/// The signal handler (SG1, SG2).
extern "C" fn on_signal(signum: libc::c_int) {
    // SAFETY: `__errno_location` returns this thread's errno slot; reading
    // and writing it is async-signal-safe.
    let saved = unsafe { *libc::__errno_location() };
    if (1..=MAX_SIGNAL).contains(&signum) {
        let bit = bit(signum);
        for slot in &TABLE {
            if slot.watched.load(SeqCst) & bit == 0 {
                continue;
            }
            slot.busy.fetch_add(1, SeqCst);
            if slot.watched.load(SeqCst) & bit != 0 {
                slot.pending.fetch_or(bit, SeqCst);
                let fd = slot.fd.load(SeqCst);
                if fd >= 0 {
                    let one: u64 = 1;
                    // SAFETY: SG3: the port's owner keeps `fd` open until
                    // the port's drop saw `busy` at zero, which cannot happen
                    // before this write returns; `one` is a local of the 8
                    // bytes written. The `write(2)` system call itself, not
                    // the C library's function a program may interpose on
                    // (the host's `hooks` do): async-signal-safe whatever is
                    // linked in. Its result is ignored (EAGAIN: the counter
                    // is full, the reader is woken anyway).
                    let _ = unsafe {
                        libc::syscall(
                            libc::SYS_write,
                            fd,
                            (&one as *const u64).cast::<libc::c_void>(),
                            8usize,
                        )
                    };
                }
            }
            slot.busy.fetch_sub(1, SeqCst);
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// `on_signal` as `sa_sigaction` holds it.
fn handler_address() -> libc::sighandler_t {
    on_signal as *const () as libc::sighandler_t
}

/// Why a signal number cannot be watched, or `None` if it can.
pub fn refusal(signum: i32) -> Option<&'static str> {
    if !(1..=MAX_SIGNAL.min(libc::SIGRTMAX())).contains(&signum) {
        return Some("is not a signal number");
    }
    match signum {
        libc::SIGKILL | libc::SIGSTOP => Some("cannot be caught"),
        libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE => {
            Some("is a synchronous fault, which a loop cannot handle later")
        }
        n if n > 31 && n < libc::SIGRTMIN() => Some("is reserved by the C library"),
        _ => None,
    }
}

/// The disposition of `signum` now (`sigaction` query).
fn current(signum: i32) -> io::Result<libc::sigaction> {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a query (NULL new action); `old` is a local `struct sigaction`
    // the kernel fills.
    let res = unsafe { libc::sigaction(signum, std::ptr::null(), old.as_mut_ptr()) };
    if res == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `sigaction` returned 0, so it filled `old` (and zeroed memory
    // is a valid `struct sigaction` anyway).
    Ok(unsafe { old.assume_init() })
}

/// Whether `signum`'s handler is this module's `on_signal`.
pub fn is_ours(signum: i32) -> bool {
    current(signum).is_ok_and(|act| act.sa_sigaction == handler_address())
}

/// Installs `on_signal` for `signum`; returns the previous disposition.
fn install(signum: i32) -> io::Result<libc::sigaction> {
    let mut act = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    let act_ptr = act.as_mut_ptr();
    // SAFETY: `act_ptr` points to a zeroed local `struct sigaction`; only
    // its fields are written.
    unsafe {
        (*act_ptr).sa_sigaction = handler_address();
        (*act_ptr).sa_flags = libc::SA_RESTART | libc::SA_ONSTACK;
        libc::sigemptyset(&mut (*act_ptr).sa_mask);
    }
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: `act` is fully initialised (zeroed, then filled); `old` is a
    // local the kernel fills.
    let res = unsafe { libc::sigaction(signum, act.as_ptr(), old.as_mut_ptr()) };
    if res == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `sigaction` returned 0, so it filled `old`.
    Ok(unsafe { old.assume_init() })
}

/// Puts `previous` back for `signum` if our handler is still installed
/// (SG4).
fn restore(signum: i32, previous: &libc::sigaction) {
    if !is_ours(signum) {
        crate::plugin_debug!(
            "signal {signum}: another disposition replaced the reactor's handler; left alone"
        );
        return;
    }
    // SAFETY: `previous` is the `struct sigaction` the kernel gave us when
    // the handler was installed; the old action is not asked for.
    let res = unsafe { libc::sigaction(signum, previous, std::ptr::null_mut()) };
    if res == -1 {
        crate::plugin_warn!(
            "signal {signum}: restoring the previous disposition failed: {}",
            io::Error::last_os_error()
        );
    }
}

/// A claimed slot of the table: one reactor's view of the signals it
/// watches (see the module doc).
#[derive(Debug)]
pub struct Port {
    index: usize,
}

impl Port {
    /// Claims a free slot, to be woken through `fd` (an eventfd the loop
    /// waits on). `None` if all [`SLOTS`] are taken.
    ///
    /// The caller keeps `fd` open until the port is dropped (SG3).
    pub fn claim(fd: RawFd) -> Option<Port> {
        let index = TABLE.iter().position(|slot| {
            slot.claimed
                .compare_exchange(false, true, SeqCst, SeqCst)
                .is_ok()
        })?;
        let slot = &TABLE[index];
        slot.watched.store(0, SeqCst);
        slot.pending.store(0, SeqCst);
        slot.fd.store(fd, SeqCst);
        Some(Port { index })
    }

    fn slot(&self) -> &'static Slot {
        &TABLE[self.index]
    }

    /// Starts reporting `signum` into this port, installing the handler if
    /// no other port of this image watches it (SG4). `signum` passed
    /// [`refusal`].
    pub fn watch(&self, signum: i32) -> io::Result<()> {
        let mut table = dispositions();
        let entry = &mut table[signum as usize];
        if entry.ports == 0 {
            entry.previous = Some(install(signum)?);
        }
        entry.ports += 1;
        self.slot().watched.fetch_or(bit(signum), SeqCst);
        Ok(())
    }

    /// Stops reporting `signum` into this port; forgets a delivery not yet
    /// taken (SG3) and restores the previous disposition if no other port
    /// of this image watches it (SG4).
    pub fn unwatch(&self, signum: i32) {
        let slot = self.slot();
        if slot.watched.fetch_and(!bit(signum), SeqCst) & bit(signum) == 0 {
            return;
        }
        slot.quiesce();
        slot.pending.fetch_and(!bit(signum), SeqCst);
        let mut table = dispositions();
        let entry = &mut table[signum as usize];
        entry.ports = entry.ports.saturating_sub(1);
        if entry.ports == 0 {
            if let Some(previous) = entry.previous.take() {
                restore(signum, &previous);
            }
        }
    }

    /// Takes the signals that arrived since the last call, as numbers.
    pub fn take_pending(&self) -> impl Iterator<Item = i32> {
        let bits = self.slot().pending.swap(0, SeqCst);
        (1..=MAX_SIGNAL).filter(move |&signum| bits & bit(signum) != 0)
    }

    /// Whether a signal arrived that was not taken yet.
    pub fn has_pending(&self) -> bool {
        self.slot().pending.load(SeqCst) != 0
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        let slot = self.slot();
        let watched = slot.watched.load(SeqCst);
        for signum in (1..=MAX_SIGNAL).filter(|&s| watched & bit(s) != 0) {
            self.unwatch(signum);
        }
        slot.fd.store(-1, SeqCst);
        slot.quiesce();
        slot.pending.store(0, SeqCst);
        slot.claimed.store(false, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncatchable_faulting_and_reserved_signals_are_refused() {
        for signum in [0, -1, 65, libc::SIGKILL, libc::SIGSTOP, libc::SIGSEGV, 32] {
            assert!(refusal(signum).is_some(), "{signum}");
        }
        for signum in [libc::SIGINT, libc::SIGUSR1, libc::SIGCHLD, libc::SIGRTMIN()] {
            assert_eq!(refusal(signum), None, "{signum}");
        }
    }
}
