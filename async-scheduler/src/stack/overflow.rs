//! Stack overflow reports: a coroutine that runs off the end of its stack
//! gets one line on stderr naming it, and the process aborts.
//!
//! Without this a coroutine hitting its guard page (stack S-I2) died with a
//! bare `Segmentation fault`. Now:
//!
//! ```text
//! async-scheduler: stack overflow in coroutine 7 (spawned at src/main.rs:12): its stack
//!   is 16384 bytes; give coroutines more with Builder::stack_size(32768) or stack_size =
//!   32768 in the config file's [scheduler] table, or, when neither is set, with the
//!   scheduler option stack_size (ASYNC_SCHEDULER_OPTIONS=stack_size=32k); aborting
//! ```
//!
//! (one line; wrapped here), then `abort()` (SIGABRT): the coroutine's frames
//! are gone past the guard, nothing can be unwound (switch W-I3), and
//! continuing would resume a stack in an unknown state.
//!
//! # How
//!
//! - `create` calls [`arm_this_thread`]: the first call in the process
//!   installs [`on_fault`] for SIGSEGV and SIGBUS with `SA_SIGINFO |
//!   SA_ONSTACK`, remembering the handlers it replaces; every call gives the
//!   calling thread an alternate signal stack if it has none (the handler
//!   cannot run on the stack that just overflowed). Threads made by Rust's
//!   std already have one (std reports overflows of thread stacks the same
//!   way), and it is kept.
//! - `run` marks its scheduler *active* on the thread ([`Active`]) for its
//!   duration; the engines already record the running context
//!   (`RootState::running`, switch W-I1), and a fiber records the coroutine
//!   it runs (`Fiber::occupant`, set when the coroutine starts and cleared
//!   before its record is released). So the handler finds the coroutine
//!   with a few loads and no lock, and a switch costs nothing more.
//! - The handler: if the fault address is in the guard page of the running
//!   fiber's stack (or of the current coroutine's, should they differ), it
//!   formats the line into a buffer on the alternate stack, `write(2)`s it
//!   and aborts. Anything else is not ours: it goes to the handler that was
//!   installed before (std's, a sanitizer's, the program's), or, if that was
//!   the default action, the default is restored and the fault happens
//!   again, so a segfault elsewhere still dies exactly as it did.
//!
//! # Invariants
//!
//! - **O-I1** The handler is async-signal-safe: it reads atomics, one
//!   thread-local `Cell` and records the faulting thread itself wrote; it
//!   formats into a fixed buffer, calls only `write`, `sigaction`, `raise`
//!   and `abort`, takes no lock and allocates nothing.
//! - **O-I2** It touches the thread-local only for addresses inside the
//!   span of every slab ever mapped in the process ([`note_slab`]); a fault
//!   outside it is passed on without a look at any scheduler state. (A
//!   thread that never ran a scheduler may not have its thread-locals for a
//!   dynamically loaded library allocated yet; touching them could call
//!   `malloc` inside the handler.)
//! - **O-I3** `ACTIVE` names a scheduler only while its `run` executes on
//!   this thread (innermost first, when a coroutine runs another scheduler),
//!   so the records the handler reads are alive: the scheduler (SR4), its
//!   fibers (F-I1), and the occupant coroutine (its record is released only
//!   after `occupant` was cleared, coroutine C-I1).
//! - **O-I4** The previous handlers are recorded before ours is installed,
//!   and installation happens once per process (per copy of this crate: a
//!   process holding the embedded scheduler and the shared library chains
//!   one to the other, each finding only its own schedulers).
//! - **O-I5** An alternate stack this module mapped is disabled and unmapped
//!   when its thread exits, and only if it is still the thread's alternate
//!   stack.
//!
//! # Safety
//!
//! `sigaction`, `sigaltstack`, `mmap` and `munmap` are called with
//! structures zero-initialised and filled here; the handler's reads are
//! justified by O-I3, and it runs on the thread whose records it reads.

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Once;

use crate::coroutine::CoroPtr;
use crate::fiber::FiberPtr;
use crate::scheduler::Scheduler;
use crate::switch::Ctx;

/// The lowest slab address ever mapped in the process (O-I2).
static SPAN_LO: AtomicUsize = AtomicUsize::new(usize::MAX);
/// One past the highest slab address ever mapped (O-I2).
static SPAN_HI: AtomicUsize = AtomicUsize::new(0);

/// Widens the span the handler looks at to include a new slab (O-I2).
pub(crate) fn note_slab(addr: usize, len: usize) {
    SPAN_LO.fetch_min(addr, Ordering::Relaxed);
    SPAN_HI.fetch_max(addr + len, Ordering::Relaxed);
}

thread_local! {
    /// The scheduler whose `run` executes on this thread (O-I3). A `Cell`
    /// of a raw pointer with a const initialiser and no destructor: reading
    /// it is a plain TLS load, fit for the handler (O-I1).
    static ACTIVE: Cell<*const Scheduler> = const { Cell::new(std::ptr::null()) };

    /// The alternate signal stack this module gave the thread, if any (O-I5).
    static ALT: AltStack = const { AltStack { base: Cell::new(0), len: Cell::new(0) } };
}

/// Marks a scheduler active on this thread for the life of the value
/// (`run`'s duration); restores the previous one when dropped (O-I3).
#[derive(Debug)]
pub(crate) struct Active {
    previous: *const Scheduler,
}

impl Active {
    /// `s` runs on this thread until the returned value is dropped.
    pub(crate) fn enter(s: &Scheduler) -> Active {
        let previous = ACTIVE.with(|a| a.replace(s));
        Active { previous }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(self.previous));
    }
}

/// Installs the process-wide handler (once, O-I4) and gives this thread an
/// alternate signal stack if it has none. Called by `create`; failures are
/// logged at debug level and leave overflows unreported (they still fault).
pub(crate) fn arm_this_thread() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        for (i, sig) in SIGNALS.iter().enumerate() {
            if let Err(e) = install(i, *sig) {
                async_abi::plugin_debug!("cannot install the stack overflow handler: {e}");
            }
        }
    });
    if let Err(e) = ALT.with(AltStack::ensure) {
        async_abi::plugin_debug!(
            "no alternate signal stack for this thread ({e}): a coroutine stack overflow will \
             not be reported"
        );
    }
}

const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// The handler each signal had before ours (O-I4): its `sa_sigaction`
/// word and its `sa_flags`.
static PREV_ACTION: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
static PREV_FLAGS: [AtomicI32; 2] = [AtomicI32::new(0), AtomicI32::new(0)];

fn install(i: usize, sig: libc::c_int) -> std::io::Result<()> {
    // SAFETY: an all-zero sigaction is a valid value (no handler, empty
    // mask, no flags); it is only an out-parameter here.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: querying (NULL new action) with a valid out-pointer.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    record_prev(i, &old);
    // SAFETY: as above, filled below.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = on_fault as *const () as usize;
    new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: `sa_mask` is a valid sigset_t to empty.
    unsafe { libc::sigemptyset(&mut new.sa_mask) };
    // SAFETY: a fully initialised action whose handler has the SA_SIGINFO
    // signature; `old` is a valid out-pointer.
    if unsafe { libc::sigaction(sig, &new, &mut old) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Normally what the query returned; differs only if another thread
    // installed a handler in between.
    record_prev(i, &old);
    Ok(())
}

fn record_prev(i: usize, old: &libc::sigaction) {
    if old.sa_sigaction != on_fault as *const () as usize {
        PREV_ACTION[i].store(old.sa_sigaction, Ordering::Relaxed);
        PREV_FLAGS[i].store(old.sa_flags, Ordering::Relaxed);
    }
}

/// The SIGSEGV/SIGBUS handler (module doc; O-I1).
extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler;
    // for SIGSEGV and SIGBUS `si_addr` is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    let ours = addr >= SPAN_LO.load(Ordering::Relaxed) && addr < SPAN_HI.load(Ordering::Relaxed);
    if ours {
        if let Some(fault) = find(addr) {
            report(&fault);
        }
    }
    chain(sig, info, ctx);
}

/// What the report names.
struct Fault {
    /// The coroutine on the overflowed stack, if it still had one.
    coro: Option<CoroPtr>,
    /// Usable bytes of the stack.
    usable: usize,
}

/// The coroutine whose stack's guard page holds `addr`, on this thread.
fn find(addr: usize) -> Option<Fault> {
    // `try_with`: never fails for a destructor-less const thread-local, and
    // does not panic if it would.
    let s = ACTIVE.try_with(|a| a.get()).ok()?;
    if s.is_null() {
        return None;
    }
    // SAFETY: O-I3: the active scheduler's `run` executes on this thread, so
    // the scheduler is alive.
    let s = unsafe { &*s };
    // SAFETY: a Cell of this thread, read by copy; volatile so the load is
    // made here, whatever the compiler assumed about the interrupted code.
    let running = unsafe { std::ptr::read_volatile(s.root.running.as_ptr()) };
    // SAFETY: as above.
    let current = unsafe { std::ptr::read_volatile(s.current.as_ptr()) };
    let current_fiber = current.and_then(|c| {
        // SAFETY: O-I3: `current` names a live coroutine record (SR2).
        unsafe { std::ptr::read_volatile(c.get().fiber.as_ptr()) }
    });
    let candidates = [
        match running {
            Ctx::Fiber(f) => Some(f),
            Ctx::Root => None,
        },
        current_fiber,
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|f| in_guard(f, addr))
}

fn in_guard(f: FiberPtr, addr: usize) -> Option<Fault> {
    // O-I3: a running or current fiber is alive (F-I1); its stack slot is
    // immutable.
    let slot = f.get().stack;
    let guard_end = slot.base - slot.usable;
    if !(slot.limit..guard_end).contains(&addr) {
        return None;
    }
    // SAFETY: a Cell of this thread, read by copy (see `find`).
    let coro = unsafe { std::ptr::read_volatile(f.get().occupant.as_ptr()) };
    Some(Fault {
        coro,
        usable: slot.usable,
    })
}

/// Writes the one-line report and aborts (O-I1).
fn report(fault: &Fault) -> ! {
    let mut line = Line::new();
    line.push(b"async-scheduler: stack overflow in ");
    match fault.coro {
        Some(c) => {
            let co = c.get();
            line.push(b"coroutine ");
            line.push_u64(co.id);
            line.push(b" (spawned at ");
            // SAFETY: coroutine C-I4: the host keeps the spawn file valid
            // until the coroutine finished, and it has not (O-I3).
            let file = unsafe { co.spawn.file.as_bytes() };
            if file.is_empty() {
                line.push(b"an unknown location");
            } else {
                line.push_truncated(file, 400);
                line.push(b":");
                line.push_u64(u64::from(co.spawn.line));
            }
            line.push(b")");
        }
        None => line.push(b"a coroutine"),
    }
    let more = suggested_size(fault.usable);
    line.push(b": its stack is ");
    line.push_u64(fault.usable as u64);
    line.push(b" bytes; give coroutines more with Builder::stack_size(");
    line.push_u64(more as u64);
    line.push(b") or stack_size = ");
    line.push_u64(more as u64);
    line.push(
        b" in the config file's [scheduler] table, or, when neither is set, with the scheduler \
          option stack_size (ASYNC_SCHEDULER_OPTIONS=stack_size=",
    );
    line.push_size(more);
    line.push(b"); aborting\n");
    line.write_stderr();
    // SAFETY: abort is async-signal-safe; it raises SIGABRT with the
    // default action.
    unsafe { libc::abort() }
}

/// Twice the stack, capped at the largest one allowed.
fn suggested_size(usable: usize) -> usize {
    usable.saturating_mul(2).min(crate::options::MAX_STACK_SIZE)
}

/// Passes a fault that is not ours on (module doc).
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let i = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    let action = PREV_ACTION[i].load(Ordering::Relaxed);
    let flags = PREV_FLAGS[i].load(Ordering::Relaxed);
    if action == libc::SIG_DFL || action == libc::SIG_IGN {
        // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
        let dfl: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: restoring the default action; async-signal-safe.
        unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) };
        // SAFETY: `info` is the kernel's siginfo (see `on_fault`).
        if unsafe { (*info).si_code } <= 0 {
            // Sent by kill/raise, not a fault: returning would not repeat
            // it, so send it again (blocked until we return).
            // SAFETY: async-signal-safe.
            unsafe { libc::raise(sig) };
        }
        // A fault: returning re-runs the faulting instruction, which now
        // takes the default action.
        return;
    }
    if flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed with SA_SIGINFO, so
        // its word is a function of this signature (O-I4).
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(action) };
        f(sig, info, ctx);
    } else {
        // SAFETY: without SA_SIGINFO the word is a plain handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(action) };
        f(sig);
    }
}

/// A line formatted without allocating (O-I1); overflowing text is cut.
struct Line {
    buf: [u8; 1024],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            buf: [0; 1024],
            len: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        // Keep room for the final newline.
        let room = self.buf.len() - 1 - self.len;
        let n = bytes.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
        if n < bytes.len() && bytes.ends_with(b"\n") {
            self.buf[self.len] = b'\n';
            self.len += 1;
        }
    }

    /// At most `max` bytes of `bytes`, with `...` in front when cut.
    fn push_truncated(&mut self, bytes: &[u8], max: usize) {
        if bytes.len() > max {
            self.push(b"...");
            self.push(&bytes[bytes.len() - max..]);
        } else {
            self.push(bytes);
        }
    }

    fn push_u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    /// A size as the option parser reads it: `m` or `k` when exact.
    fn push_size(&mut self, n: usize) {
        if n % (1 << 20) == 0 {
            self.push_u64((n >> 20) as u64);
            self.push(b"m");
        } else if n % (1 << 10) == 0 {
            self.push_u64((n >> 10) as u64);
            self.push(b"k");
        } else {
            self.push_u64(n as u64);
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn write_stderr(&self) {
        let mut rest = self.bytes();
        while !rest.is_empty() {
            // SAFETY: `rest` is valid for its length. The `write(2)`
            // system call itself, async-signal-safe, not the C library's
            // function, which a program may interpose on (the host's hooks).
            let n = unsafe {
                libc::syscall(
                    libc::SYS_write,
                    2,
                    rest.as_ptr().cast::<libc::c_void>(),
                    rest.len(),
                )
            } as isize;
            if n > 0 {
                rest = &rest[n as usize..];
            } else if n < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            } else {
                return;
            }
        }
    }
}

/// The alternate signal stack this module mapped for a thread (O-I5).
struct AltStack {
    base: Cell<usize>,
    len: Cell<usize>,
}

/// Usable bytes of an alternate stack this module maps: the handler needs
/// little, but a chained handler (std's overflow report) runs there too.
const ALT_STACK_SIZE: usize = 64 * 1024;

impl AltStack {
    /// Maps and installs an alternate stack unless the thread has one.
    fn ensure(&self) -> std::io::Result<()> {
        // SAFETY: an all-zero stack_t is valid as an out-parameter.
        let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: querying with a NULL new stack and a valid out-pointer.
        if unsafe { libc::sigaltstack(std::ptr::null(), &mut current) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if current.ss_flags & libc::SS_DISABLE == 0 {
            // std's (or the program's), or ours from an earlier scheduler.
            return Ok(());
        }
        let page = super::page_size();
        let len = page + ALT_STACK_SIZE;
        // SAFETY: a fresh anonymous mapping at an address the kernel picks.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // A guard below the alternate stack too: a handler that overflows
        // it then faults instead of writing into whatever lies below.
        // SAFETY: the first page of the mapping just made.
        unsafe { libc::mprotect(base, page, libc::PROT_NONE) };
        let stack = libc::stack_t {
            // SAFETY: inside the mapping (one page above its start).
            ss_sp: unsafe { base.cast::<u8>().add(page) }.cast(),
            ss_flags: 0,
            ss_size: ALT_STACK_SIZE,
        };
        // SAFETY: a mapped, writable range of `ss_size` bytes that lives
        // until this thread's `AltStack` is dropped (O-I5).
        if unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) } != 0 {
            let err = std::io::Error::last_os_error();
            // SAFETY: the mapping made above, not installed anywhere.
            unsafe { libc::munmap(base, len) };
            return Err(err);
        }
        self.base.set(base as usize);
        self.len.set(len);
        Ok(())
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let (base, len) = (self.base.get(), self.len.get());
        if base == 0 {
            return;
        }
        // SAFETY: as in `ensure`.
        let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: querying, valid out-pointer.
        let ok = unsafe { libc::sigaltstack(std::ptr::null(), &mut current) } == 0;
        let page = super::page_size();
        if !ok || current.ss_sp as usize != base + page || current.ss_flags & libc::SS_ONSTACK != 0
        {
            // Replaced by someone else (or in use): leave it mapped.
            return;
        }
        let disable = libc::stack_t {
            ss_sp: std::ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        // SAFETY: disabling the thread's alternate stack, which is ours and
        // not in use (checked above), before unmapping it (O-I5).
        unsafe {
            libc::sigaltstack(&disable, std::ptr::null_mut());
            libc::munmap(base as *mut libc::c_void, len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_formats_numbers_sizes_and_cuts_long_text() {
        let mut l = Line::new();
        l.push_u64(0);
        l.push(b" ");
        l.push_u64(u64::MAX);
        l.push(b" ");
        l.push_size(32 * 1024);
        l.push(b" ");
        l.push_size(2 << 20);
        l.push(b" ");
        l.push_size(20481);
        assert_eq!(l.bytes(), b"0 18446744073709551615 32k 2m 20481");
        let mut l = Line::new();
        l.push_truncated(&[b'a'; 500], 10);
        assert_eq!(l.bytes(), b"...aaaaaaaaaa");
        let mut l = Line::new();
        l.push(&[b'x'; 2000]);
        l.push(b"end\n");
        assert_eq!(l.bytes().len(), 1024);
        assert!(l.bytes().ends_with(b"x\n"), "the newline survives a cut");
    }

    #[test]
    fn the_suggestion_doubles_the_stack_up_to_the_maximum() {
        assert_eq!(suggested_size(16 * 1024), 32 * 1024);
        assert_eq!(
            suggested_size(crate::options::MAX_STACK_SIZE),
            crate::options::MAX_STACK_SIZE
        );
    }
}
