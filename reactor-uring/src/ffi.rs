//! The C ABI: this reactor's implementation of the kit's traits
//! (`reactor_sdk::{Reactor, Event}`), from which `reactor_sdk` makes the
//! plugin descriptor, the `aa.reactor.v1` vtable and every `extern "C"`
//! shim (panic fence, pointer and flag checks, `last_error_message`).
//!
//! # Safety
//!
//! The pointer rules F1-F5 are the kit's (`reactor_sdk::ffi`); what is left
//! here is what only this reactor knows:
//!
//! - `wake` and `trigger_fire` (F4) read only immutable fields holding
//!   thread-safe values (`Reactor::waker`, `Event::trigger`) through raw
//!   field pointers, never a reference to the whole loop-thread object;
//! - `io_submit` turns the request's borrowed pointers (its buffer and
//!   address, and since ABI 1.1 its paths and the `AaStat` of a statx, F5)
//!   into the kit's `HostBuf` and `HostAddr` (`reactor_sdk::sys::lent`),
//!   whose promise the ops module keeps
//!   inside the window AA-R5 gives (its invariant O1).

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::ptr::addr_of;
use std::rc::Rc;

use async_abi::sdk::dns::Hints;
use async_abi::sdk::request;
use async_abi::*;
use reactor_sdk::core::Core;
use reactor_sdk::timer::Timed;
use reactor_sdk::Submitted;

pub(crate) use reactor_sdk::{ClosedCallback, HostCallback};

use crate::config::Config;
use crate::error::Result;
use crate::event::{Event, State, EVENT_MAGIC};
use crate::ops::Request;
use crate::reactor::Reactor;

reactor_sdk::export_reactor!(linked Reactor);

/// The vtable, for this crate's own tests.
#[cfg(test)]
pub(crate) use self::AA_REACTOR_VTABLE as VTABLE;

/// Capabilities: every event kind of the ABI; requests complete natively
/// through the ring, stream socket reads and writes first inline
/// (`AA_CAP_IO_INLINE`, `uring.inline_streams`); datagram and file requests
/// (1.1). An instance narrows them to what its kernel has and its options
/// ask (`instance_caps`, probe.rs).
pub(crate) const CAPS: u64 = AA_CAP_TIMER
    | AA_CAP_IO_INLINE
    | AA_CAP_POLL
    | AA_CAP_IO
    | AA_CAP_TRIGGER
    | AA_CAP_IO_NATIVE
    | AA_CAP_SIGNAL
    | AA_CAP_PROCESS
    | AA_CAP_FS_WATCH
    | AA_CAP_DNS
    | AA_CAP_IO_DGRAM
    | AA_CAP_IO_FILE
    | AA_CAP_IO_FTRUNCATE;

// SAFETY: `Event` is `#[repr(C)]` with its `AaEvent` header first, never
// changed after creation (event invariant E1); `fire` keeps F4.
unsafe impl reactor_sdk::Event for Event {
    type Reactor = Reactor;

    #[inline]
    fn is_ours(&self) -> bool {
        self.magic == EVENT_MAGIC
    }

    #[inline]
    fn reactor(&self) -> Option<Rc<Reactor>> {
        self.reactor.upgrade()
    }

    #[inline]
    fn callback(&self) -> &HostCallback {
        &self.callback
    }

    #[inline]
    fn deliverable(&self) -> bool {
        !self.disposed.get()
    }

    #[inline]
    fn scheduled(&self) -> &std::cell::Cell<u32> {
        &self.scheduled
    }

    unsafe fn fire(ev: *const Event) -> AaStatus {
        // SAFETY: F2 and F4: the host keeps the trigger undisposed while any
        // thread may fire it; `magic` and `trigger` are immutable after
        // creation, and only those fields are referenced.
        let (magic, trigger) = unsafe { (*addr_of!((*ev).magic), &*addr_of!((*ev).trigger)) };
        match (magic == EVENT_MAGIC, trigger) {
            (true, Some(shared)) => shared.fire(),
            _ => AA_E_INVALID,
        }
    }
}

impl Timed for Event {
    #[inline]
    fn armed_generation(&self) -> Option<u64> {
        match &*self.state.borrow() {
            State::Timer(t) if t.armed => Some(t.generation),
            _ => None,
        }
    }
}

impl reactor_sdk::Reactor for Reactor {
    type Event = Event;
    type Config = Config;

    const NAME: &'static CStr = c"reactor-uring";
    const VENDOR: &'static CStr = c"async workspace";
    const CAPS: u64 = CAPS;
    // Implements ABI 1.2 (1.1's datagram and file requests; 1.2 asks
    // nothing more of a reactor that sees every edge itself): stated here,
    // not taken from the SDK, so a newer SDK changes nothing.
    const ABI_MINOR: u16 = 2;

    fn configure<'a>(
        options: impl Iterator<Item = std::result::Result<(&'a str, &'a str), &'a [u8]>>,
    ) -> Result<Config> {
        Config::from_options(options)
    }

    fn new(config: &Config) -> Result<Rc<Reactor>> {
        Reactor::new(config)
    }

    /// [`CAPS`] less the optional ones whose opcodes the kernel lacks
    /// (probe.rs).
    fn instance_caps(&self) -> u64 {
        self.features.caps
    }

    #[inline]
    fn core(&self) -> &Core {
        &self.core
    }

    fn destroy(&self) -> Result<()> {
        Reactor::destroy(self)
    }

    #[inline]
    fn run_once(&self, timeout_ns: i64) -> Result<i32> {
        Reactor::run_once(self, timeout_ns)
    }

    unsafe fn wake(this: *const Reactor) -> AaStatus {
        // SAFETY: F1 and F4: `waker` is immutable after `create` and holds
        // only an eventfd, which any thread may write; only that field is
        // referenced.
        let waker = unsafe { &*addr_of!((*this).waker) };
        match waker.wake() {
            Ok(()) => AA_OK,
            Err(e) => crate::error::neg_errno(&e),
        }
    }

    #[inline]
    fn timer_new(
        &self,
        first_ns: u64,
        repeat_ns: u64,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
        Reactor::timer_new(self, first_ns, repeat_ns, flags, cb)
    }

    #[inline]
    fn timer_rearm(&self, ev: &Rc<Event>, first_ns: u64, repeat_ns: u64) -> Result<()> {
        Reactor::timer_rearm(self, ev, first_ns, repeat_ns)
    }

    fn poll_new(
        &self,
        fd: RawFd,
        interest: u32,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
        Reactor::poll_new(self, fd, interest, flags, cb)
    }

    #[inline]
    fn poll_set_interest(&self, ev: &Rc<Event>, interest: u32) -> Result<()> {
        Reactor::poll_set_interest(self, ev, interest)
    }

    fn trigger_new(&self, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::trigger_new(self, flags, cb)
    }

    /// Through the ring, but for a stream socket's read or write allowed
    /// inline, which is first tried at once (`uring.inline_streams`).
    #[inline]
    unsafe fn io_submit(
        &self,
        req: request::Request,
        inline: bool,
        cb: HostCallback,
    ) -> Result<Submitted<Event>> {
        // SAFETY: F5, this method's contract, is `lent`'s: the host keeps
        // the buffer and the peer slot unmoved until the callback, which
        // runs only after the ring's final completion.
        let (buf, peer) = unsafe { reactor_sdk::sys::lent(&req) };
        let req = Request {
            opcode: req.opcode,
            fd: req.fd,
            buf,
            offset: req.offset,
            peer,
            target: req.target,
            socket: false,
            regular: false,
            nowait: false,
            flags: req.flags,
            path: req.path,
            path2: req.path2,
            fd2: req.fd2,
            open_flags: req.open_flags,
            mode: req.mode,
        };
        if inline {
            if let Some(result) = self.try_inline(&req) {
                return Ok(Submitted::Done(result));
            }
        }
        Reactor::io_submit(self, req, cb).map(Submitted::Pending)
    }

    fn signal_new(&self, signum: i32, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::signal_new(self, signum, flags, cb)
    }

    fn process_new(&self, pid: i32, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::process_new(self, pid, flags, cb)
    }

    fn fs_watch_new(&self, path: &CStr, flags: u32, cb: HostCallback) -> Result<Rc<Event>> {
        Reactor::fs_watch_new(self, path, flags, cb)
    }

    fn dns_resolve(
        &self,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        cb: HostCallback,
    ) -> Result<Rc<Event>> {
        Reactor::dns_resolve(self, node, service, hints, cb)
    }

    #[inline]
    fn set_ref(&self, ev: &Rc<Event>, referenced: bool) {
        Reactor::set_ref(self, ev, referenced)
    }

    #[inline]
    fn cancel(&self, ev: &Rc<Event>, reason: AaStatus) -> Result<()> {
        Reactor::cancel(self, ev, reason)
    }

    #[inline]
    fn close(&self, ev: &Rc<Event>, on_closed: Option<ClosedCallback>) -> Result<()> {
        Reactor::close(self, ev, on_closed)
    }

    #[inline]
    fn dispose(&self, ev: Rc<Event>) {
        Reactor::dispose(self, ev)
    }
}

/// A reactor made from a resolved config (the crate's own tests); `None`,
/// after printing why the test is skipped, if this system refuses io_uring.
#[cfg(test)]
pub(crate) fn create_with(config: &Config) -> Option<*mut AaReactor> {
    match Reactor::new(config) {
        Ok(reactor) => Some(Rc::into_raw(reactor).cast_mut().cast()),
        Err(e) if e.message.starts_with("io_uring unavailable") => {
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            eprintln!("SKIPPED {name}: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[cfg(test)]
mod fallback_tests {
    //! The fallbacks for kernels older than this machine's, forced on through
    //! `Config::old_kernel`: one `ASYNC_CANCEL` per op instead of
    //! `IORING_ASYNC_CANCEL_FD` (before 5.19), one-shot `POLL_ADD`s re-armed
    //! after each completion instead of multishot ones (before 5.13), and
    //! requests that answer `EAGAIN` instead of waiting in the kernel (files
    //! without `FMODE_NOWAIT`). Driven through the C vtable, as a host does.

    use std::cell::RefCell;
    use std::ffi::c_void;
    use std::os::fd::AsRawFd;
    use std::ptr;

    use async_abi::*;

    use super::{create_with, VTABLE};
    use crate::config::Config;

    thread_local! {
        static LOG: RefCell<Vec<(&'static str, i64)>> = const { RefCell::new(Vec::new()) };
    }

    fn tag(ud: *mut c_void) -> &'static str {
        // SAFETY: every `ud` below is a `&'static &'static str`.
        unsafe { *ud.cast::<&'static str>() }
    }

    unsafe extern "C" fn on_io(_: *mut AaEvent, result: i64, ud: *mut c_void) {
        LOG.with(|l| l.borrow_mut().push((tag(ud), result)));
    }

    unsafe extern "C" fn on_trigger(_: *mut AaEvent, status: AaStatus, ud: *mut c_void) {
        LOG.with(|l| l.borrow_mut().push((tag(ud), i64::from(status))));
    }

    unsafe extern "C" fn on_poll(_: *mut AaEvent, status: AaStatus, ready: u32, ud: *mut c_void) {
        let value = if status < 0 {
            i64::from(status)
        } else {
            i64::from(ready)
        };
        LOG.with(|l| l.borrow_mut().push((tag(ud), value)));
    }

    fn take() -> Vec<(&'static str, i64)> {
        LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
    }

    fn ud(tag: &'static &'static str) -> *mut c_void {
        (tag as *const &'static str).cast_mut().cast()
    }

    struct Old(*mut AaReactor);

    impl Old {
        fn new() -> Option<Old> {
            create_with(&Config {
                old_kernel: true,
                ..Config::default()
            })
            .map(Old)
        }

        fn run_until(&self, n: usize) {
            for _ in 0..100 {
                if LOG.with(|l| l.borrow().len()) >= n {
                    return;
                }
                // SAFETY: a live reactor of this thread.
                assert!(unsafe { (VTABLE.run_once.unwrap())(self.0, 50_000_000) } >= 0);
            }
            panic!("fewer than {n} callbacks: {:?}", take());
        }

        fn read(&self, fd: i32, buf: &mut [u8], tag: &'static &'static str) -> *mut AaEvent {
            let mut op = AaIoOp::new(AA_IO_READ, i64::from(fd));
            op.buf = buf.as_mut_ptr();
            op.len = buf.len();
            self.submit(&mut op, tag)
        }

        fn submit(&self, op: &mut AaIoOp, tag: &'static &'static str) -> *mut AaEvent {
            let mut ev = ptr::null_mut();
            // SAFETY: a live reactor; the buffer outlives the callback (AA-R5).
            let s = unsafe {
                (VTABLE.io_submit.unwrap())(self.0, op, 0, Some(on_io), ud(tag), &mut ev)
            };
            assert_eq!(s, AA_OK);
            ev
        }

        fn poll(&self, fd: i32, tag: &'static &'static str) -> *mut AaEvent {
            let mut ev = ptr::null_mut();
            // SAFETY: a live reactor; `tag` is static.
            let s = unsafe {
                (VTABLE.poll_new.unwrap())(
                    self.0,
                    i64::from(fd),
                    AA_POLL_READABLE,
                    0,
                    Some(on_poll),
                    ud(tag),
                    &mut ev,
                )
            };
            assert_eq!(s, AA_OK);
            ev
        }

        fn trigger(&self, tag: &'static &'static str) -> *mut AaEvent {
            let mut ev = ptr::null_mut();
            // SAFETY: a live reactor; `tag` is static.
            let s = unsafe {
                (VTABLE.trigger_new.unwrap())(self.0, 0, Some(on_trigger), ud(tag), &mut ev)
            };
            assert_eq!(s, AA_OK);
            ev
        }

        fn idle(&self) {
            for _ in 0..3 {
                // SAFETY: a live reactor of this thread.
                assert!(unsafe { (VTABLE.run_once.unwrap())(self.0, 0) } >= 0);
            }
            assert_eq!(take(), [], "nothing may complete yet");
        }

        fn finish(self, evs: &[*mut AaEvent]) {
            for ev in evs {
                // SAFETY: live events of this reactor, disposed once.
                unsafe { (VTABLE.dispose.unwrap())(*ev) };
            }
            for _ in 0..100 {
                // SAFETY: a live reactor of this thread.
                if unsafe { (VTABLE.destroy.unwrap())(self.0) } == AA_OK {
                    return;
                }
                // SAFETY: as above.
                unsafe { (VTABLE.run_once.unwrap())(self.0, 10_000_000) };
            }
            panic!("destroy stays busy");
        }
    }

    fn socketpair() -> (i32, i32) {
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
        assert_eq!(r, 0);
        (fds[0], fds[1])
    }

    fn send(fd: i32, data: &[u8]) {
        // SAFETY: a valid slice.
        let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), 0) };
        assert_eq!(n, data.len() as isize);
    }

    /// Whether the first page of `file` is in the page cache (`mincore`).
    fn cached(file: &std::fs::File) -> bool {
        // SAFETY: a fresh shared read-only mapping of one page of a file the
        // test owns, unmapped below; `vec` is one byte, for one page.
        unsafe {
            let p = libc::mmap(
                ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let mut vec = 0u8;
            assert_eq!(libc::mincore(p, 4096, &mut vec), 0);
            libc::munmap(p, 4096);
            vec & 1 != 0
        }
    }

    /// A regular file is always "ready" to poll(2): a read of one that the
    /// page cache cannot serve (`RWF_NOWAIT` on an older kernel) answers
    /// its `EAGAIN` to the host, whose pool makes it, rather than wait for
    /// readiness (which spun until readahead brought the page, then gave
    /// the data). A file system that cannot drop the page (tmpfs) gives
    /// the data at once.
    ///
    /// The `EAGAIN` read itself starts readahead, and on a fast disk the
    /// page can be back before the kernel looks again, so the data is an
    /// honest answer too: what must never happen is a readiness wait.
    #[test]
    fn a_regular_file_read_answers_data_or_eagain_never_a_readiness_wait() {
        use crate::ops::poll::READINESS_WAITS;
        static READ: &str = "file read";
        let Some(lp) = Old::new() else { return };
        let path = std::env::temp_dir().join(format!("uring-old-{}", std::process::id()));
        std::fs::write(&path, b"hello").unwrap();
        let file = std::fs::File::open(&path).unwrap();
        file.sync_all().unwrap();
        // Out of the page cache where the file system allows it.
        // SAFETY: plain advice on a descriptor the test owns.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let dropped = !cached(&file);
        let mut buf = [0u8; 8];
        let r = lp.read(file.as_raw_fd(), &mut buf, &READ);
        lp.run_until(1);
        let log = take();
        assert!(
            !READINESS_WAITS.with(|w| w.borrow().contains(&file.as_raw_fd())),
            "a readiness wait on a regular file (page dropped: {dropped})"
        );
        match log[..] {
            [(what, 5)] if what == READ => assert_eq!(&buf[..5], b"hello"),
            [(what, e)] if what == READ && e == -i64::from(libc::EAGAIN) => {
                assert!(dropped, "EAGAIN for a cached page")
            }
            _ => panic!("one read, of the data or EAGAIN: {log:?} (page dropped: {dropped})"),
        }
        lp.finish(&[r]);
        drop(file);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn without_cancel_by_descriptor_a_close_request_cancels_each_op() {
        static READ: &str = "read";
        static WATCH: &str = "watch";
        static CLOSE: &str = "close";
        let Some(lp) = Old::new() else { return };
        let (a, b) = socketpair();
        let mut buf = [0u8; 4];
        let r = lp.read(b, &mut buf, &READ);
        let w = lp.poll(b, &WATCH);
        // SAFETY: a live reactor of this thread.
        unsafe { (VTABLE.run_once.unwrap())(lp.0, 0) };
        let c = lp.submit(&mut AaIoOp::new(AA_IO_CLOSE, i64::from(b)), &CLOSE);
        lp.run_until(3);
        let mut log = take();
        assert_eq!(log.pop(), Some(("close", 0)), "the close comes last");
        log.sort_unstable();
        let canceled = -i64::from(libc::ECANCELED);
        assert_eq!(log, [("read", canceled), ("watch", canceled)]);
        // The peer sees the end of the stream: `b` was closed. (Checking the
        // number itself races with other tests of this binary, which may
        // open a descriptor that reuses it.)
        let mut byte = [0u8; 1];
        // SAFETY: a valid local buffer; `a` is the test's socket.
        let n = unsafe { libc::recv(a, byte.as_mut_ptr().cast(), 1, libc::MSG_DONTWAIT) };
        assert_eq!(n, 0, "closed");
        lp.finish(&[r, w, c]);
        // SAFETY: the test owns `a`.
        unsafe { libc::close(a) };
    }

    #[test]
    fn requests_the_kernel_answers_eagain_wait_for_readiness_then_complete() {
        static FIRST: &str = "first";
        static SECOND: &str = "second";
        static PIPE: &str = "pipe";
        static TRIGGER: &str = "trigger";
        let Some(lp) = Old::new() else { return };
        // Socket reads (RECV), in their lane's order.
        let (a, b) = socketpair();
        let mut first = [0u8; 1];
        let mut second = [0u8; 1];
        let r1 = lp.read(b, &mut first, &FIRST);
        let r2 = lp.read(b, &mut second, &SECOND);
        lp.idle();
        send(a, b"12");
        lp.run_until(2);
        assert_eq!(take(), [("first", 1), ("second", 1)]);
        assert_eq!((first, second), ([b'1'], [b'2']));
        // A pipe read (READ).
        let mut p = [0; 2];
        // SAFETY: `p` is a local array of two ints.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_NONBLOCK) }, 0);
        let mut buf = [0u8; 4];
        let r3 = lp.read(p[0], &mut buf, &PIPE);
        lp.idle();
        // SAFETY: a local 3-byte buffer.
        assert_eq!(unsafe { libc::write(p[1], b"abc".as_ptr().cast(), 3) }, 3);
        lp.run_until(1);
        assert_eq!(take(), [("pipe", 3)]);
        // A trigger: its eventfd read answers EAGAIN too.
        let t = lp.trigger(&TRIGGER);
        lp.idle();
        // SAFETY: a live trigger of this reactor.
        assert_eq!(unsafe { (VTABLE.trigger_fire.unwrap())(t) }, AA_OK);
        lp.run_until(1);
        assert_eq!(take(), [("trigger", 0)]);
        lp.finish(&[r1, r2, r3, t]);
        // SAFETY: the test owns these descriptors.
        unsafe {
            for fd in [a, b, p[0], p[1]] {
                libc::close(fd);
            }
        }
    }

    #[test]
    fn one_shot_watches_are_rearmed_after_each_report() {
        static WATCH: &str = "watch";
        let Some(lp) = Old::new() else { return };
        let (a, b) = socketpair();
        let w = lp.poll(b, &WATCH);
        send(a, b"1");
        lp.run_until(1);
        assert_eq!(take(), [("watch", i64::from(AA_POLL_READABLE))]);
        // Consume the byte: the re-armed one-shot poll waits for the next.
        let mut buf = [0u8; 4];
        // SAFETY: a valid buffer.
        assert_eq!(unsafe { libc::recv(b, buf.as_mut_ptr().cast(), 4, 0) }, 1);
        // SAFETY: a live reactor of this thread.
        unsafe { (VTABLE.run_once.unwrap())(lp.0, 0) };
        assert_eq!(take(), [], "nothing new to report");
        send(a, b"2");
        lp.run_until(1);
        assert_eq!(take(), [("watch", i64::from(AA_POLL_READABLE))]);
        lp.finish(&[w]);
        // SAFETY: the test owns both ends.
        unsafe {
            libc::close(a);
            libc::close(b);
        }
    }
}
