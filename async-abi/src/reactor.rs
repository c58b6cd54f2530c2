//! The reactor interface, `"aa.reactor.v1"`: an immediate-mode event loop.
//!
//! "Immediate mode": each constructor creates *and starts* its event; there
//! is no separate start call. Callbacks run only from inside `run_once`, so an
//! event created just before the waiting coroutine suspends cannot complete
//! before the suspension: a coroutine prepares its events and then suspends
//! once, and nothing is lost in between.
//!
//! One loop iteration, `run_once(timeout_ns)`:
//! 1. refresh the cached clock;
//! 2. run due timers;
//! 3. wait for the OS (`timeout_ns`: -1 blocks until an event or `wake`,
//!    0 only polls; the wait is cut short by the nearest timer);
//! 4. complete what the OS reported, calling callbacks;
//! 5. deliver `on_closed` for events closed before this iteration.
//!
//! It returns the number of callbacks it ran, or a negative status.
//!
//! Required slots: everything up to and including `dispose` (each slot's
//! doc begins "Required." or "Optional."): a host refuses a vtable with one
//! of them NULL. The rest may be NULL; `caps` says which kinds are present,
//! and each `AA_CAP_*` constant says what a host does when its bit is clear
//! (see also `docs/abi/capabilities.md`: which user API needs which bit).
//!
//! Capability bits of a later minor are meaningful only from a plugin that
//! declares that minor: a host ignores the bits outside
//! [`AA_CAPS_V1_0`] in the `caps` of a reactor whose vtable says
//! `iface_minor` 0, so it never sends a 1.1 opcode to a 1.0 reactor, and
//! outside [`AA_CAPS_V1_1`] from one that says 1.

use core::ffi::c_void;

use crate::{
    AaAddrHints, AaBytes, AaClosedCb, AaDnsCb, AaEvent, AaFsWatchCb, AaIfaceHeader, AaIoCb, AaIoOp,
    AaKv, AaOsHandle, AaPluginCtx, AaPollCb, AaProcessCb, AaSignalCb, AaStatus, AaStr, AaTimerCb,
    AaTriggerCb,
};

/// Opaque reactor instance: one event loop, bound to the thread that created
/// it.
#[derive(Debug)]
pub struct AaReactor {
    _opaque: [u8; 0],
    _not_send: core::marker::PhantomData<*mut c_void>,
}

/// Capability: timers (`timer_new`, `timer_rearm`, required slots all the
/// same). Clear: the reactor cannot time anything. async-std-api relies on
/// timers for every timed wait (`sleep`, timeouts, intervals, shutdown) and
/// refuses to start such a reactor, with one line naming it and this bit.
pub const AA_CAP_TIMER: u64 = 1 << 0;
/// Capability: descriptor readiness (`poll_new`, `poll_set_interest`,
/// required slots all the same). Clear: the host never calls `poll_new`;
/// async-std-api's readiness waits (`io::Async`, a socket with a read or
/// write timeout, a datagram socket without `AA_CAP_IO_DGRAM`) fail with
/// `ErrorKind::Unsupported` naming the reactor.
pub const AA_CAP_POLL: u64 = 1 << 1;
/// Capability: completion-level requests on streams (`io_submit` with
/// `AA_IO_READ`, `WRITE`, `ACCEPT`, `CONNECT`, `CLOSE`; a required slot all
/// the same). Clear: async-std-api submits no request: its stream sockets
/// and pipes fail with `ErrorKind::Unsupported` naming the reactor, and it
/// closes descriptors itself.
pub const AA_CAP_IO: u64 = 1 << 2;
/// Capability: cross-thread triggers (`trigger_new`, `trigger_fire`,
/// required slots all the same). Clear: the host never calls `trigger_new`;
/// whatever reports from another thread fails with
/// `ErrorKind::Unsupported` naming the reactor: `spawn_blocking`, every
/// blocking-pool fallback (files, stdio, name resolution and process waits
/// without their own capability), `sync::ThreadSender`,
/// `sync::ThreadResolver`.
pub const AA_CAP_TRIGGER: u64 = 1 << 3;
/// Capability: signals (`signal_new`, and ownership of their
/// dispositions). Clear: `signal_new` may be NULL and is never called;
/// async-std-api's `signal` module fails with `ErrorKind::Unsupported`
/// naming the reactor.
pub const AA_CAP_SIGNAL: u64 = 1 << 4;
/// Capability: child process exits (`process_new`). Clear: `process_new`
/// may be NULL and is never called; async-std-api waits for children on its
/// blocking pool (which needs `AA_CAP_TRIGGER`).
pub const AA_CAP_PROCESS: u64 = 1 << 5;
/// Capability: filesystem watches (`fs_watch_new`). Clear: `fs_watch_new`
/// may be NULL and is never called; `fs::watch` fails with
/// `ErrorKind::Unsupported` naming the reactor (there is no fallback).
pub const AA_CAP_FS_WATCH: u64 = 1 << 6;
/// Capability: name resolution (`dns_resolve`). Clear: `dns_resolve` may
/// be NULL and is never called; async-std-api resolves names on its
/// blocking pool (which needs `AA_CAP_TRIGGER`).
pub const AA_CAP_DNS: u64 = 1 << 7;
/// Capability: `io_submit` honours `AA_IO_TRY_INLINE`. Clear: the reactor
/// never returns `AA_DONE`; a host may pass the flag anyway (async-std-api
/// always does) and gets every result through the callback.
pub const AA_CAP_IO_INLINE: u64 = 1 << 8;
/// Capability: the reactor completes I/O natively (io_uring), not by
/// readiness plus a system call, so a read or write at an offset of a
/// regular file never blocks its loop. Clear: async-std-api runs file
/// reads and writes on its blocking pool.
pub const AA_CAP_IO_NATIVE: u64 = 1 << 9;
/// Capability (1.1): datagram requests, `AA_IO_RECVFROM` and `AA_IO_SENDTO`
/// on UDP and Unix datagram sockets, and `AA_IO_PEEK`. Clear: the host
/// sends neither; async-std-api's datagram sockets wait for readiness
/// (`AA_CAP_POLL`) and make the system call themselves.
pub const AA_CAP_IO_DGRAM: u64 = 1 << 10;
/// Capability (1.1): file requests that never block the loop:
/// `AA_IO_OPENAT`, `AA_IO_STATX`, `AA_IO_FSYNC`, `AA_IO_UNLINKAT`,
/// `AA_IO_RENAMEAT`, `AA_IO_MKDIRAT`. A readiness reactor does not set it
/// (regular files are always "ready" and their system calls block). Clear:
/// the host sends none of these; async-std-api runs them on its blocking
/// pool.
pub const AA_CAP_IO_FILE: u64 = 1 << 11;
/// Capability (1.1): `AA_IO_FTRUNCATE` without blocking the loop (io_uring
/// since Linux 6.9). Clear: the host never sends it; async-std-api runs
/// `File::set_len` on its blocking pool.
pub const AA_CAP_IO_FTRUNCATE: u64 = 1 << 12;

/// Every capability bit ABI 1.0 defined. From a reactor whose vtable says
/// `iface_minor` 0, a host reads only these bits of `caps`.
pub const AA_CAPS_V1_0: u64 = (1 << 10) - 1;
/// Capability (1.2): the reactor keeps polls edge-style over a
/// level-triggered poller (poll(2), `select`), which cannot see the host
/// consume readiness. A host of minor 2 or later that read or wrote a
/// polled descriptor to `EAGAIN` (or otherwise found it not ready) calls
/// `poll_set_interest` on that poll, with its current interest, before it
/// waits for the poll's next report; the reactor then reports the next
/// readiness at once, even one that came back before its loop looked
/// (R-POLL-8). Clear: the reactor sees every edge itself (epoll with
/// `EPOLLET`, io_uring's multishot poll) and the host re-arms nothing.
/// From a host of minor 0 or 1, which never re-arms, such a reactor must
/// find consumed readiness by itself (`reactor-sdk`'s adapter looks again
/// on a 100 ms grid).
pub const AA_CAP_POLL_LEVEL: u64 = 1 << 13;

/// Every capability bit ABI 1.1 defines. From a reactor whose vtable says
/// `iface_minor` 1, a host reads only these bits of `caps`.
pub const AA_CAPS_V1_1: u64 = (1 << 13) - 1;
/// Every capability bit ABI 1.2 defines.
pub const AA_CAPS_V1_2: u64 = (1 << 14) - 1;

/// Creation parameters for a reactor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaReactorConfig {
    /// `sizeof(AaReactorConfig)` as the host was compiled.
    pub struct_size: u32,
    /// Zero; reserved.
    pub flags: u32,
    /// Backend options (`"uring.sq_entries" = "256"`), borrowed (AA-R2).
    /// Keys are `<name>.<option>`, `<name>` being the plugin's name without
    /// `reactor-`. A reactor refuses an unknown key of its own prefix and a
    /// key without a prefix, and ignores another plugin's prefix, so one
    /// list serves every reactor the host may try (see [`AaKv`]).
    pub options: *const AaKv,
    /// Number of entries in `options`.
    pub n_options: usize,
    /// Where `create` writes a one-line, NUL-terminated message when it fails
    /// (truncated to `err_cap`), naming the option or system call at fault.
    /// The host prints it once, naming the plugin, so `create` does not also
    /// log it. May be NULL.
    pub err_buf: *mut u8,
    /// Capacity of `err_buf` in bytes.
    pub err_cap: usize,
}

/// The reactor vtable, returned by `get_interface(ctx, "aa.reactor.v1")`.
///
/// Static (AA-R7). Grows only at the end.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaReactorVTable {
    /// Size and minor version of this vtable.
    pub hdr: AaIfaceHeader,
    /// `AA_CAP_*` bits.
    pub caps: u64,

    /// Required. Creates a loop; the calling thread becomes its loop thread. On
    /// failure, the status says which kind (`AA_E_INVALID` for an option,
    /// `-ENOSYS`, `-EPERM` for a refused io_uring, ...) and the one-line
    /// reason is written into `cfg->err_buf`, not also logged: the host
    /// prints it once, and a log record of it would print it twice. Only
    /// without a buffer does the reason go to the host's log. `[loop]`
    pub create: Option<
        unsafe extern "C" fn(
            ctx: *mut AaPluginCtx,
            cfg: *const AaReactorConfig,
            out: *mut *mut AaReactor,
        ) -> AaStatus,
    >,
    /// Required. Destroys a loop. `AA_E_BUSY` while events are alive (not yet
    /// disposed, or disposed but still held by the kernel); the host then runs
    /// the loop until they are gone. `AA_E_INVALID` from inside a callback.
    /// `[loop]`
    pub destroy: Option<unsafe extern "C" fn(r: *mut AaReactor) -> AaStatus>,
    /// Required. Runs one loop iteration (see the module doc). Returns the
    /// number of callbacks run, or a negative status. `[loop]`
    pub run_once: Option<unsafe extern "C" fn(r: *mut AaReactor, timeout_ns: i64) -> AaStatus>,
    /// Required. Number of active, referenced, non-hidden events: what keeps
    /// the loop alive. `[loop]`
    pub alive: Option<unsafe extern "C" fn(r: *const AaReactor) -> u32>,
    /// Required. The loop's cached monotonic time in nanoseconds (refreshed at
    /// the start of each iteration and before arming a timer). `[loop]`
    pub now_ns: Option<unsafe extern "C" fn(r: *const AaReactor) -> u64>,
    /// Required. Interrupts a blocking `run_once`; coalescing, never blocks,
    /// never allocates. `[any]`
    pub wake: Option<unsafe extern "C" fn(r: *const AaReactor) -> AaStatus>,

    /// Required. Creates and arms a timer that fires `first_ns` from now, then
    /// every `repeat_ns` (0: once). `flags`: `AA_EVF_*`. `[loop]`
    pub timer_new: Option<
        unsafe extern "C" fn(
            r: *mut AaReactor,
            first_ns: u64,
            repeat_ns: u64,
            flags: u32,
            cb: AaTimerCb,
            ud: *mut c_void,
            out: *mut *mut AaEvent,
        ) -> AaStatus,
    >,
    /// Required. Re-arms a timer (active or not) to fire `first_ns` from now,
    /// then every `repeat_ns`. No callback for the replaced deadline. `[loop]`
    pub timer_rearm:
        Option<unsafe extern "C" fn(ev: *mut AaEvent, first_ns: u64, repeat_ns: u64) -> AaStatus>,
    /// Required. Starts watching `fd` for `interest` (`AA_POLL_*`). `[loop]`
    pub poll_new: Option<
        unsafe extern "C" fn(
            r: *mut AaReactor,
            fd: AaOsHandle,
            interest: u32,
            flags: u32,
            cb: AaPollCb,
            ud: *mut c_void,
            out: *mut *mut AaEvent,
        ) -> AaStatus,
    >,
    /// Required. Changes a poll's interest (0 disarms it) and re-evaluates
    /// readiness. `[loop]`
    pub poll_set_interest:
        Option<unsafe extern "C" fn(ev: *mut AaEvent, interest: u32) -> AaStatus>,
    /// Required. Creates a trigger. `[loop]`
    pub trigger_new: Option<
        unsafe extern "C" fn(
            r: *mut AaReactor,
            flags: u32,
            cb: AaTriggerCb,
            ud: *mut c_void,
            out: *mut *mut AaEvent,
        ) -> AaStatus,
    >,
    /// Required. Fires a trigger from any thread; coalescing. The event must
    /// not have been disposed: the host keeps it alive while other threads hold
    /// it. `AA_E_CLOSED` after the trigger was cancelled or closed. `[any]`
    pub trigger_fire: Option<unsafe extern "C" fn(ev: *const AaEvent) -> AaStatus>,
    /// Required. Submits an I/O request. Returns 0 (pending: `*out` is set and
    /// `cb` will run once), `AA_DONE` (completed inline, only with
    /// `AA_IO_TRY_INLINE`: the result is in `op->result`), or a negative status
    /// (nothing created, AA-R8). A descriptor that is not open is reported
    /// either way: a readiness reactor returns `-EBADF` at once; a completion
    /// reactor that learns it from the kernel completes the request once with
    /// `-EBADF`. `[loop]`
    pub io_submit: Option<
        unsafe extern "C" fn(
            r: *mut AaReactor,
            op: *mut AaIoOp,
            flags: u32,
            cb: AaIoCb,
            ud: *mut c_void,
            out: *mut *mut AaEvent,
        ) -> AaStatus,
    >,

    /// Required. Changes whether an event keeps the loop alive (libuv's
    /// ref/unref). `[loop]`
    pub set_ref: Option<unsafe extern "C" fn(ev: *mut AaEvent, referenced: bool)>,
    /// Required. Ends the event's pending operation: its callback runs once
    /// more, from a later `run_once`, with `reason` (or the real result if the
    /// operation had already completed in the kernel). `reason` must be
    /// negative (a non-negative one would read as a successful result):
    /// `AA_E_INVALID` otherwise, and also if nothing is pending. `[loop]`
    pub cancel: Option<unsafe extern "C" fn(ev: *mut AaEvent, reason: AaStatus) -> AaStatus>,
    /// Required. Closes the event asynchronously (AA-R4): the only callback
    /// afterwards is one `on_closed`, after a pending request's
    /// `-ECANCELED`. `[loop]`
    pub close: Option<
        unsafe extern "C" fn(ev: *mut AaEvent, on_closed: AaClosedCb, ud: *mut c_void) -> AaStatus,
    >,
    /// Required. Drops the host's reference (see the event module doc): no
    /// further callbacks; memory freed when the kernel is done with it.
    /// `[loop]`
    pub dispose: Option<unsafe extern "C" fn(ev: *mut AaEvent)>,

    /// Optional (NULL: hosts report failures without the reactor's reason;
    /// the conformance kit requires it). Copies the last error message of
    /// this reactor into `buf` (truncated, NUL-terminated if `cap > 0`) and
    /// returns its full length. Every `[loop]` call that returns a negative
    /// status sets it first to one line naming the call and the reason.
    /// `[loop]`
    pub last_error_message:
        Option<unsafe extern "C" fn(r: *const AaReactor, buf: *mut u8, cap: usize) -> usize>,
    /// Optional: NULL exactly when `caps` lacks `AA_CAP_SIGNAL`. Watches
    /// `signum`. `[loop]`
    pub signal_new: Option<
        unsafe extern "C" fn(
            r: *mut AaReactor,
            signum: i32,
            flags: u32,
            cb: AaSignalCb,
            ud: *mut c_void,
            out: *mut *mut AaEvent,
        ) -> AaStatus,
    >,
    /// Optional: NULL exactly when `caps` lacks `AA_CAP_PROCESS`. Watches the
    /// child process `pid` for its exit. `[loop]`
    pub process_new: Option<
        unsafe extern "C" fn(
            r: *mut AaReactor,
            pid: i64,
            flags: u32,
            cb: AaProcessCb,
            ud: *mut c_void,
            out: *mut *mut AaEvent,
        ) -> AaStatus,
    >,
    /// Optional: NULL exactly when `caps` lacks `AA_CAP_FS_WATCH`. Watches a
    /// file or directory. `[loop]`
    pub fs_watch_new: Option<
        unsafe extern "C" fn(
            r: *mut AaReactor,
            path: AaBytes,
            flags: u32,
            cb: AaFsWatchCb,
            ud: *mut c_void,
            out: *mut *mut AaEvent,
        ) -> AaStatus,
    >,
    /// Optional: NULL exactly when `caps` lacks `AA_CAP_DNS`. Resolves
    /// `node`/`service`. `[loop]`
    pub dns_resolve: Option<
        unsafe extern "C" fn(
            r: *mut AaReactor,
            node: AaStr,
            service: AaStr,
            hints: *const AaAddrHints,
            cb: AaDnsCb,
            ud: *mut c_void,
            out: *mut *mut AaEvent,
        ) -> AaStatus,
    >,

    /// Optional (1.1). The capabilities of this reactor instance: `caps` less
    /// what the running kernel lacks (an io_uring reactor on a kernel without
    /// `IORING_OP_FTRUNCATE` clears `AA_CAP_IO_FTRUNCATE`); never a bit `caps`
    /// lacks. Constant for the instance's life. NULL (a 1.0 reactor): the
    /// instance has `caps`. A reactor asked for a request its instance lacks
    /// answers `AA_E_UNSUPPORTED`. `[loop]`
    pub instance_caps: Option<unsafe extern "C" fn(r: *const AaReactor) -> u64>,
}

// SAFETY: a vtable is immutable static data (AA-R7) holding only function
// pointers and integers.
unsafe impl Sync for AaReactorVTable {}
// SAFETY: as above.
unsafe impl Send for AaReactorVTable {}
