//! Cancellation of a coroutine waiting in a hooked call: the call fails
//! (`ECANCELED`, or `EINTR` with nothing left for a sleep) and the
//! cancellation is raised at the next suspension point in the runtime's
//! API.

use std::cell::RefCell;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_std_api::{spawn, suspend};
use tests::support::join_cancelled;

use crate::hooked;

/// Spawns `f`, lets it reach its wait, cancels it; returns what the
/// hooked call gave and whether the next runtime call was cancelled. The
/// coroutine ends cancelled.
fn cancelled_in<T: 'static>(f: impl FnOnce() -> T + 'static) -> (T, bool) {
    let out: Rc<RefCell<Option<(T, bool)>>> = Rc::default();
    let o = out.clone();
    let h = spawn(move || {
        let got = f();
        let next = suspend();
        *o.borrow_mut() = Some((got, next.is_err()));
    });
    async_std_api::delay(30).expect("delay");
    assert!(h.coroutine().is_suspended(), "the coroutine is not waiting");
    h.cancel();
    join_cancelled(h);
    let got = out.borrow_mut().take();
    got.expect("the coroutine recorded what its calls gave")
}

#[test]
fn d45_a_cancelled_std_read_fails_with_ecanceled() {
    hooked()
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
            let (s, _) = l.accept().expect("accept");
            let (r, raised) =
                cancelled_in(move || (&s).read(&mut [0u8; 8]).map_err(|e| e.raw_os_error()));
            assert_eq!(r, Err(Some(libc::ECANCELED)));
            assert!(
                raised,
                "the cancellation was not raised at the next suspend"
            );
            drop(c);
        })
        .expect("runtime");
}

#[test]
fn d45_a_cancelled_std_read_after_earlier_waits_fails_with_ecanceled() {
    // The second read's wait takes the route of a socket already found
    // plain, with its watch cached (IO6): cancelled the same way.
    hooked()
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            let mut c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
            let (s, _) = l.accept().expect("accept");
            let first = spawn(move || {
                let n = (&s).read(&mut [0u8; 8]).expect("first read");
                (s, n)
            });
            tests::support::yield_until(|| first.coroutine().is_suspended());
            std::io::Write::write_all(&mut c, b"ab").expect("write");
            let (s, n) = first.join().expect("first reader");
            assert_eq!(n, 2);
            let (r, raised) =
                cancelled_in(move || (&s).read(&mut [0u8; 8]).map_err(|e| e.raw_os_error()));
            assert_eq!(r, Err(Some(libc::ECANCELED)));
            assert!(
                raised,
                "the cancellation was not raised at the next suspend"
            );
            drop(c);
        })
        .expect("runtime");
}

#[test]
fn d45_a_cancelled_std_sleep_ends_early() {
    hooked()
        .run(|| {
            let (took, raised) = cancelled_in(|| {
                let start = Instant::now();
                std::thread::sleep(Duration::from_secs(30));
                start.elapsed()
            });
            assert!(took < Duration::from_secs(5), "slept {took:?}");
            assert!(raised);
        })
        .expect("runtime");
}

#[test]
fn d45_a_cancelled_accept_and_poll_fail_with_ecanceled() {
    hooked()
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            let (r, raised) =
                cancelled_in(move || l.accept().map(|_| ()).map_err(|e| e.raw_os_error()));
            assert_eq!(r, Err(Some(libc::ECANCELED)));
            assert!(raised);

            let (a, _b) = {
                let l = TcpListener::bind("127.0.0.1:0").expect("bind");
                let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
                (c, l.accept().expect("accept").0)
            };
            let (r, raised) = cancelled_in(move || {
                let mut p = [libc::pollfd {
                    fd: a.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }];
                // SAFETY: one valid pollfd.
                let n = unsafe { libc::poll(p.as_mut_ptr(), 1, -1) };
                (n, std::io::Error::last_os_error().raw_os_error())
            });
            assert_eq!(r, (-1, Some(libc::ECANCELED)));
            assert!(raised);
        })
        .expect("runtime");
}

#[test]
fn d45_a_cancelled_wait_for_a_child_fails_and_the_child_can_still_be_reaped() {
    hooked()
        .run(|| {
            let mut child = std::process::Command::new("sleep")
                .arg("0.5")
                .spawn()
                .expect("spawn");
            let pid = child.id() as i32;
            let (r, raised) = cancelled_in(move || {
                let mut status = 0;
                // SAFETY: a valid status pointer.
                let r = unsafe { libc::waitpid(pid, &mut status, 0) };
                (r, std::io::Error::last_os_error().raw_os_error())
            });
            assert_eq!(r, (-1, Some(libc::ECANCELED)));
            assert!(raised);
            assert!(child.wait().expect("wait").success());
        })
        .expect("runtime");
}

#[test]
fn d45_an_already_cancelled_coroutine_fails_its_hooked_calls_at_once() {
    hooked()
        .run(|| {
            let out: Rc<RefCell<Option<(Duration, bool)>>> = Rc::default();
            let o = out.clone();
            let h = spawn(move || {
                async_std_api::current().cancel();
                let start = Instant::now();
                std::thread::sleep(Duration::from_secs(30));
                let slept = start.elapsed();
                // Still pending: the runtime's next suspension point raises it.
                *o.borrow_mut() = Some((slept, suspend().is_err()));
            });
            join_cancelled(h);
            let (slept, raised) = out.borrow_mut().take().expect("recorded");
            assert!(slept < Duration::from_secs(5), "slept {slept:?}");
            assert!(raised);
        })
        .expect("runtime");
}

/// HK3 for files: a coroutine already cancelled fails a large file read
/// (the reactor's requests on io_uring, the blocking pool elsewhere) at
/// once with `ECANCELED`, reading nothing into the buffer, and the
/// cancellation is raised at its next suspension point; an open file it
/// read before the cancellation gave everything.
#[test]
fn d45_an_already_cancelled_coroutines_big_file_read_fails_with_ecanceled() {
    let path = std::env::temp_dir().join(format!("hooks-{}-cancelled-read", std::process::id()));
    std::fs::write(&path, vec![1u8; 1 << 20]).expect("write");
    let p = path.clone();
    let got = hooked()
        .run(move || {
            let out: Rc<RefCell<Option<_>>> = Rc::default();
            let o = out.clone();
            let h = spawn(move || {
                let mut f = std::fs::File::open(&p).expect("open");
                let mut first = vec![0u8; 512 << 10];
                let before = f.read(&mut first).map_err(|e| e.raw_os_error());
                async_std_api::current().cancel();
                let mut rest = vec![0u8; 512 << 10];
                let after = f.read(&mut rest).map_err(|e| e.raw_os_error());
                let untouched = rest.iter().all(|&b| b == 0);
                let raised = suspend().is_err();
                *o.borrow_mut() = Some((before, after, untouched, raised));
            });
            join_cancelled(h);
            let got = out.borrow_mut().take();
            got.expect("recorded")
        })
        .expect("runtime");
    let _ = std::fs::remove_file(&path);
    assert_eq!(got, (Ok(512 << 10), Err(Some(libc::ECANCELED)), true, true));
}
