//! Drives the reactor through its C vtable only, recording every callback.

use std::cell::RefCell;
use std::ffi::c_void;
use std::os::fd::RawFd;
use std::ptr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_abi::*;

/// One callback, as the host saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rec {
    /// A timer fired (0) or was cancelled (< 0).
    Timer(&'static str, i32),
    /// A poll reported ready bits (status 0) or ended (status < 0).
    Poll(&'static str, i32, u32),
    /// A request completed.
    Io(&'static str, i64),
    /// A trigger fired (0) or was cancelled (< 0).
    Trigger(&'static str, i32),
    /// `on_closed` ran.
    Closed(&'static str),
}

/// What a callback does besides recording itself.
pub(crate) type Hook = Box<dyn FnMut(*mut AaEvent)>;

struct Sink {
    log: Rc<RefCell<Vec<Rec>>>,
    tag: &'static str,
    hook: RefCell<Option<Hook>>,
}

impl Sink {
    fn record(&self, ev: *mut AaEvent, rec: Rec) {
        self.log.borrow_mut().push(rec);
        let hook = self.hook.borrow_mut().take();
        if let Some(mut hook) = hook {
            hook(ev);
            let mut slot = self.hook.borrow_mut();
            if slot.is_none() {
                *slot = Some(hook);
            }
        }
    }
}

/// # Safety
///
/// `ud` is a `Sink` owned by the `Loop` that outlives every event.
unsafe fn sink<'a>(ud: *mut c_void) -> &'a Sink {
    // SAFETY: the caller's contract.
    unsafe { &*ud.cast::<Sink>() }
}

unsafe extern "C" fn on_timer(ev: *mut AaEvent, status: AaStatus, ud: *mut c_void) {
    // SAFETY: `ud` is a sink of the loop (see `sink`).
    let s = unsafe { sink(ud) };
    s.record(ev, Rec::Timer(s.tag, status));
}

unsafe extern "C" fn on_poll(ev: *mut AaEvent, status: AaStatus, ready: u32, ud: *mut c_void) {
    // SAFETY: `ud` is a sink of the loop (see `sink`).
    let s = unsafe { sink(ud) };
    s.record(ev, Rec::Poll(s.tag, status, ready));
}

unsafe extern "C" fn on_io(ev: *mut AaEvent, result: i64, ud: *mut c_void) {
    // SAFETY: `ud` is a sink of the loop (see `sink`).
    let s = unsafe { sink(ud) };
    s.record(ev, Rec::Io(s.tag, result));
}

unsafe extern "C" fn on_trigger(ev: *mut AaEvent, status: AaStatus, ud: *mut c_void) {
    // SAFETY: `ud` is a sink of the loop (see `sink`).
    let s = unsafe { sink(ud) };
    s.record(ev, Rec::Trigger(s.tag, status));
}

unsafe extern "C" fn on_closed(ev: *mut AaEvent, ud: *mut c_void) {
    // SAFETY: `ud` is a sink of the loop (see `sink`).
    let s = unsafe { sink(ud) };
    s.record(ev, Rec::Closed(s.tag));
}

/// The reactor's vtable, from `plugin_desc()` like a host would get it.
pub(crate) fn vtable() -> (&'static AaReactorVTable, *mut AaPluginCtx) {
    // SAFETY: the descriptor and vtable are static (AA-R7); `init` accepts a
    // NULL host; the returned vtable lives for the process.
    unsafe {
        let desc = &*reactor_uring::plugin_desc();
        let mut ctx = ptr::null_mut();
        assert_eq!((desc.init.unwrap())(ptr::null(), &mut ctx), AA_OK);
        let id = &AA_IFACE_REACTOR_V1[..AA_IFACE_REACTOR_V1.len() - 1];
        let id = AaStr {
            ptr: id.as_ptr(),
            len: id.len(),
        };
        let vt = (desc.get_interface.unwrap())(ctx, id);
        assert!(!vt.is_null());
        (&*vt.cast::<AaReactorVTable>(), ctx)
    }
}

/// A reactor under test, with the log of its callbacks.
pub(crate) struct Loop {
    pub(crate) vt: &'static AaReactorVTable,
    pub(crate) r: *mut AaReactor,
    pub(crate) log: Rc<RefCell<Vec<Rec>>>,
    sinks: Vec<Rc<Sink>>,
}

/// `create` with options; `Err((status, err_buf line))` on refusal.
pub(crate) fn create(options: &[(&str, &str)]) -> Result<Loop, (AaStatus, String)> {
    let (vt, ctx) = vtable();
    let kvs: Vec<AaKv> = options
        .iter()
        .map(|(k, v)| AaKv {
            key: AaStr::from_str(k),
            value: AaStr::from_str(v),
        })
        .collect();
    let mut err = [0u8; 256];
    let cfg = AaReactorConfig {
        struct_size: std::mem::size_of::<AaReactorConfig>() as u32,
        flags: 0,
        options: kvs.as_ptr(),
        n_options: kvs.len(),
        err_buf: err.as_mut_ptr(),
        err_cap: err.len(),
    };
    let mut r = ptr::null_mut();
    // SAFETY: every pointer is valid for the call (AA-R2).
    let status = unsafe { (vt.create.unwrap())(ctx, &cfg, &mut r) };
    if status != AA_OK {
        let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
        return Err((status, String::from_utf8_lossy(&err[..end]).into_owned()));
    }
    Ok(Loop {
        vt,
        r,
        log: Rc::default(),
        sinks: Vec::new(),
    })
}

/// `create`, or `None` after printing why the test is skipped, if this
/// system refuses io_uring (a seccomp policy, `kernel.io_uring_disabled`, an
/// old kernel); any other failure fails the test (STYLE S21).
#[track_caller]
pub(crate) fn create_or_skip(options: &[(&str, &str)]) -> Option<Loop> {
    match create(options) {
        Ok(lp) => Some(lp),
        Err((_, m)) if m.starts_with("io_uring unavailable") => {
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            eprintln!("SKIPPED {name}: {m}");
            None
        }
        Err((s, m)) => panic!("create failed ({s}): {m}"),
    }
}

/// A reactor with default options, or an early return that skips the test
/// when the system refuses io_uring.
#[macro_export]
macro_rules! uring_loop {
    () => {
        $crate::uring_loop!(&[])
    };
    ($options:expr) => {
        match $crate::support::create_or_skip($options) {
            Some(lp) => lp,
            None => return,
        }
    };
}

impl Loop {
    fn sink(&mut self, tag: &'static str, hook: Option<Hook>) -> *mut c_void {
        let sink = Rc::new(Sink {
            log: Rc::clone(&self.log),
            tag,
            hook: RefCell::new(hook),
        });
        // The sink's address is the callbacks' `ud`: an `Rc` never moves it.
        let ud = Rc::as_ptr(&sink).cast_mut().cast::<c_void>();
        self.sinks.push(sink);
        ud
    }

    /// `run_once`, asserting success; returns the callbacks it ran.
    #[track_caller]
    pub(crate) fn run_once(&self, timeout_ns: i64) -> i32 {
        // SAFETY: `r` is live until `destroy`.
        let n = unsafe { (self.vt.run_once.unwrap())(self.r, timeout_ns) };
        assert!(n >= 0, "run_once failed: {n} ({})", self.last_error());
        n
    }

    /// Runs the loop until `done` holds, failing after `limit`.
    #[track_caller]
    pub(crate) fn run_until(&self, limit: Duration, mut done: impl FnMut(&[Rec]) -> bool) {
        let start = Instant::now();
        while !done(&self.log.borrow()) {
            assert!(
                start.elapsed() < limit,
                "condition not met in {limit:?}; log: {:?}",
                self.log.borrow()
            );
            self.run_once(50_000_000);
        }
    }

    pub(crate) fn alive(&self) -> u32 {
        // SAFETY: `r` is live until `destroy`.
        unsafe { (self.vt.alive.unwrap())(self.r) }
    }

    pub(crate) fn now_ns(&self) -> u64 {
        // SAFETY: `r` is live until `destroy`.
        unsafe { (self.vt.now_ns.unwrap())(self.r) }
    }

    pub(crate) fn last_error(&self) -> String {
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { (self.vt.last_error_message.unwrap())(self.r, buf.as_mut_ptr(), 256) };
        String::from_utf8_lossy(&buf[..n.min(255)]).into_owned()
    }

    pub(crate) fn take_log(&self) -> Vec<Rec> {
        std::mem::take(&mut *self.log.borrow_mut())
    }

    pub(crate) fn timer(
        &mut self,
        tag: &'static str,
        first_ns: u64,
        repeat_ns: u64,
    ) -> *mut AaEvent {
        self.timer_with(tag, first_ns, repeat_ns, 0, None)
    }

    pub(crate) fn timer_with(
        &mut self,
        tag: &'static str,
        first_ns: u64,
        repeat_ns: u64,
        flags: u32,
        hook: Option<Hook>,
    ) -> *mut AaEvent {
        let ud = self.sink(tag, hook);
        let mut ev = ptr::null_mut();
        // SAFETY: valid pointers; `ud` outlives the event.
        let s = unsafe {
            (self.vt.timer_new.unwrap())(
                self.r,
                first_ns,
                repeat_ns,
                flags,
                Some(on_timer),
                ud,
                &mut ev,
            )
        };
        assert_eq!(s, AA_OK, "timer_new: {}", self.last_error());
        ev
    }

    pub(crate) fn poll(
        &mut self,
        tag: &'static str,
        fd: RawFd,
        interest: u32,
        flags: u32,
    ) -> *mut AaEvent {
        let ud = self.sink(tag, None);
        let mut ev = ptr::null_mut();
        // SAFETY: valid pointers; `ud` outlives the event.
        let s = unsafe {
            (self.vt.poll_new.unwrap())(
                self.r,
                i64::from(fd),
                interest,
                flags,
                Some(on_poll),
                ud,
                &mut ev,
            )
        };
        assert_eq!(s, AA_OK, "poll_new: {}", self.last_error());
        ev
    }

    pub(crate) fn trigger(&mut self, tag: &'static str, flags: u32) -> *mut AaEvent {
        let ud = self.sink(tag, None);
        let mut ev = ptr::null_mut();
        // SAFETY: valid pointers; `ud` outlives the event.
        let s =
            unsafe { (self.vt.trigger_new.unwrap())(self.r, flags, Some(on_trigger), ud, &mut ev) };
        assert_eq!(s, AA_OK, "trigger_new: {}", self.last_error());
        ev
    }

    /// `io_submit`; the op's buffer and address must outlive the callback
    /// (AA-R5): tests keep them in locals that outlive the loop run.
    pub(crate) fn try_submit(
        &mut self,
        tag: &'static str,
        op: &mut AaIoOp,
        hook: Option<Hook>,
    ) -> Result<*mut AaEvent, AaStatus> {
        let ud = self.sink(tag, hook);
        let mut ev = ptr::null_mut();
        // SAFETY: valid pointers; `ud` outlives the event.
        let s = unsafe { (self.vt.io_submit.unwrap())(self.r, op, 0, Some(on_io), ud, &mut ev) };
        if s == AA_OK {
            Ok(ev)
        } else {
            assert!(ev.is_null(), "a failing io_submit set *out (AA-R8)");
            Err(s)
        }
    }

    /// `io_submit` with `AA_IO_TRY_INLINE`: `Ok(None)` if it completed at
    /// once (`AA_DONE`, the result in `op.result`), `Ok(Some(event))` if
    /// it is pending.
    pub(crate) fn submit_inline(
        &mut self,
        tag: &'static str,
        op: &mut AaIoOp,
    ) -> Result<Option<*mut AaEvent>, AaStatus> {
        let ud = self.sink(tag, None);
        let mut ev = ptr::null_mut();
        // SAFETY: valid pointers; `ud` outlives the event.
        let s = unsafe {
            (self.vt.io_submit.unwrap())(self.r, op, AA_IO_TRY_INLINE, Some(on_io), ud, &mut ev)
        };
        match s {
            AA_OK => Ok(Some(ev)),
            AA_DONE => {
                assert!(ev.is_null(), "AA_DONE with an event");
                Ok(None)
            }
            s => Err(s),
        }
    }

    /// The instance's capabilities (`instance_caps`).
    pub(crate) fn instance_caps(&self) -> u64 {
        // SAFETY: `r` is this loop's live instance.
        unsafe { (self.vt.instance_caps.unwrap())(self.r) }
    }

    #[track_caller]
    pub(crate) fn submit(&mut self, tag: &'static str, op: &mut AaIoOp) -> *mut AaEvent {
        match self.try_submit(tag, op, None) {
            Ok(ev) => ev,
            Err(s) => panic!("io_submit({tag}) failed: {s} ({})", self.last_error()),
        }
    }

    pub(crate) fn cancel(&self, ev: *mut AaEvent, reason: AaStatus) -> AaStatus {
        // SAFETY: `ev` is a live event of this loop.
        unsafe { (self.vt.cancel.unwrap())(ev, reason) }
    }

    pub(crate) fn close(&mut self, tag: &'static str, ev: *mut AaEvent) -> AaStatus {
        let ud = self.sink(tag, None);
        // SAFETY: `ev` is a live event of this loop; `ud` outlives it.
        unsafe { (self.vt.close.unwrap())(ev, Some(on_closed), ud) }
    }

    pub(crate) fn dispose(&self, ev: *mut AaEvent) {
        // SAFETY: `ev` is a live event of this loop, disposed once.
        unsafe { (self.vt.dispose.unwrap())(ev) }
    }

    pub(crate) fn set_ref(&self, ev: *mut AaEvent, referenced: bool) {
        // SAFETY: `ev` is a live event of this loop.
        unsafe { (self.vt.set_ref.unwrap())(ev, referenced) }
    }

    pub(crate) fn destroy_status(&self) -> AaStatus {
        // SAFETY: `r` is live (a refused destroy leaves it so).
        unsafe { (self.vt.destroy.unwrap())(self.r) }
    }

    /// Destroys the loop, running it until the kernel released everything.
    #[track_caller]
    pub(crate) fn finish(self) {
        assert_eq!(self.alive(), 0, "events still alive at the end");
        let start = Instant::now();
        loop {
            let s = self.destroy_status();
            if s == AA_OK {
                break;
            }
            assert_eq!(s, AA_E_BUSY, "destroy: {}", self.last_error());
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "destroy stays busy"
            );
            self.run_once(10_000_000);
        }
        // The sinks go with `self`: no callback can run any more.
    }
}

/// A connected pair of non-blocking, close-on-exec Unix stream sockets.
pub(crate) fn socketpair() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a local array of two ints.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(r, 0, "socketpair: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

/// Closes a descriptor the test owns.
pub(crate) fn close_fd(fd: RawFd) {
    // SAFETY: the test owns `fd` and closes it once.
    unsafe { libc::close(fd) };
}

/// True if `peer` (one end of a [`socketpair`]) reads end of stream: the
/// other end was really closed. Asking whether the closed number is open
/// could be fooled by a test on another thread reusing that number.
pub(crate) fn peer_sees_eof(peer: RawFd) -> bool {
    recv_now(peer, &mut [0u8; 1]) == Some(0)
}

/// A blocking-free `send` of `data` (the socket has room).
pub(crate) fn send_now(fd: RawFd, data: &[u8]) {
    // SAFETY: `data` is a valid slice for its length.
    let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
    assert_eq!(
        n,
        data.len() as isize,
        "send: {}",
        std::io::Error::last_os_error()
    );
}

/// A non-blocking `recv`: bytes read, or `None` on `EAGAIN`.
pub(crate) fn recv_now(fd: RawFd, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: `buf` is a valid, writable slice for its length.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        None
    } else {
        Some(n as usize)
    }
}

/// A read request into `buf`.
pub(crate) fn read_op(fd: RawFd, buf: &mut [u8]) -> AaIoOp {
    let mut op = AaIoOp::new(AA_IO_READ, i64::from(fd));
    op.buf = buf.as_mut_ptr();
    op.len = buf.len();
    op
}

/// A write request from `buf`.
pub(crate) fn write_op(fd: RawFd, buf: &[u8]) -> AaIoOp {
    let mut op = AaIoOp::new(AA_IO_WRITE, i64::from(fd));
    op.buf = buf.as_ptr().cast_mut();
    op.len = buf.len();
    op
}
