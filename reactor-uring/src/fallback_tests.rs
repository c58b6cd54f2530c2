//! The fallbacks for kernels older than this machine's, forced on through
//! `Config::old_kernel`: one `ASYNC_CANCEL` per op instead of
//! `IORING_ASYNC_CANCEL_FD` (before 5.19), and one-shot `POLL_ADD`s
//! re-armed after each completion instead of multishot ones (before 5.13).
//! Driven through the C vtable, as a host does.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;

use async_abi::*;

use crate::config::Config;
use crate::ffi::{create_with, VTABLE};

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
    fn new() -> Old {
        Old(create_with(&Config {
            old_kernel: true,
            ..Config::default()
        }))
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
        let s =
            unsafe { (VTABLE.io_submit.unwrap())(self.0, op, 0, Some(on_io), ud(tag), &mut ev) };
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

#[test]
fn without_cancel_by_descriptor_a_close_request_cancels_each_op() {
    static READ: &str = "read";
    static WATCH: &str = "watch";
    static CLOSE: &str = "close";
    let lp = Old::new();
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
    // SAFETY: F_GETFD on any number is harmless.
    assert_eq!(unsafe { libc::fcntl(b, libc::F_GETFD) }, -1, "closed");
    lp.finish(&[r, w, c]);
    // SAFETY: the test owns `a`.
    unsafe { libc::close(a) };
}

#[test]
fn one_shot_watches_are_rearmed_after_each_report() {
    static WATCH: &str = "watch";
    let lp = Old::new();
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
