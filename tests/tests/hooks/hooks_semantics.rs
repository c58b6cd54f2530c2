//! What a descriptor looks like to the user with hooks on: its mode, its
//! timeouts, its errors, and a number reused after a close.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use async_std_api::spawn;

use crate::{hooked, Ticker};

fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
    let (s, _) = l.accept().expect("accept");
    (c, s)
}

fn flags(fd: i32) -> i32 {
    // SAFETY: F_GETFL takes no argument.
    unsafe { libc::fcntl(fd, libc::F_GETFL) }
}

#[test]
fn d45_a_blocking_socket_still_looks_blocking_after_a_hooked_wait() {
    hooked()
        .run(|| {
            let (mut a, mut b) = pair();
            let before = flags(b.as_raw_fd());
            assert_eq!(before & libc::O_NONBLOCK, 0);
            let reader = spawn(move || {
                let mut buf = [0u8; 5];
                b.read_exact(&mut buf).expect("read");
                (buf, flags(b.as_raw_fd()))
            });
            async_std_api::delay(20).expect("delay");
            a.write_all(b"hello").expect("write");
            let (buf, after) = reader.join().expect("reader");
            assert_eq!(&buf, b"hello");
            assert_eq!(after, before, "the hooks changed the descriptor's flags");
        })
        .expect("runtime");
}

#[test]
fn d45_a_socket_the_user_made_non_blocking_still_returns_would_block() {
    hooked()
        .run(|| {
            let (_a, mut b) = pair();
            b.set_nonblocking(true).expect("nonblocking");
            let mut buf = [0u8; 8];
            let start = Instant::now();
            let e = b.read(&mut buf).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::WouldBlock);
            assert!(start.elapsed() < Duration::from_millis(100));
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            l.set_nonblocking(true).expect("nonblocking");
            assert_eq!(l.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
        })
        .expect("runtime");
}

#[test]
fn d45_a_read_timeout_ends_the_wait_with_would_block_while_others_run() {
    let (kind, waited, ticks) = hooked()
        .run(|| {
            let (_a, mut b) = pair();
            b.set_read_timeout(Some(Duration::from_millis(150)))
                .expect("timeout");
            let ticker = Ticker::start();
            let start = Instant::now();
            let e = b.read(&mut [0u8; 8]).unwrap_err();
            let waited = start.elapsed();
            (e.kind(), waited, ticker.stop().0)
        })
        .expect("runtime");
    assert_eq!(kind, ErrorKind::WouldBlock);
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    assert!(waited < Duration::from_millis(1500), "{waited:?}");
    assert!(ticks >= 5, "{ticks} ticks");
}

#[test]
fn d45_end_of_stream_resets_and_partial_reads_are_the_real_calls() {
    hooked()
        .run(|| {
            let (mut a, mut b) = pair();
            let reader = spawn(move || {
                let mut buf = [0u8; 64];
                let first = b.read(&mut buf).expect("first read");
                let second = b.read(&mut buf).expect("second read");
                (first, second)
            });
            async_std_api::delay(10).expect("delay");
            a.write_all(b"abc").expect("write");
            async_std_api::delay(10).expect("delay");
            drop(a);
            // A short read returns what came (3 bytes), then end of stream.
            assert_eq!(reader.join().expect("reader"), (3, 0));

            let (a, mut b) = pair();
            let s2 = socket2::SockRef::from(&a);
            s2.set_linger(Some(Duration::ZERO)).expect("linger");
            drop(a); // a reset
            let e = b.read(&mut [0u8; 4]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ConnectionReset);

            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = l.local_addr().expect("addr");
            drop(l);
            let e = TcpStream::connect(addr).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        })
        .expect("runtime");
}

#[test]
fn d45_a_closed_descriptors_number_reused_inherits_nothing() {
    hooked()
        .run(|| {
            let (_a, b) = pair();
            let old = b.as_raw_fd();
            // A wait on it, then a close.
            b.set_read_timeout(Some(Duration::from_millis(20)))
                .expect("timeout");
            assert_eq!(
                (&b).read(&mut [0u8; 1]).unwrap_err().kind(),
                ErrorKind::WouldBlock
            );
            // The number comes back as a pipe (dup2 onto the freed number,
            // as a program's own dup2 would): blocking, no timeout, and a
            // hooked wait on it sees the pipe's data.
            let (r, mut w) = std::io::pipe().expect("pipe");
            drop(b);
            // SAFETY: `old` is free (its socket was closed above).
            let fd = unsafe { libc::dup2(r.as_raw_fd(), old) };
            assert_eq!(fd, old);
            drop(r);
            // SAFETY: `old` now names the pipe's read end, owned here.
            let mut r = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(old) };
            assert_eq!(flags(fd) & libc::O_NONBLOCK, 0);
            let reader = spawn(move || {
                let mut buf = [0u8; 4];
                r.read_exact(&mut buf).expect("read pipe");
                buf
            });
            async_std_api::delay(20).expect("delay");
            w.write_all(b"pipe").expect("write pipe");
            assert_eq!(&reader.join().expect("reader"), b"pipe");
        })
        .expect("runtime");
}

#[test]
fn poll_reports_the_kernels_events_and_its_timeout() {
    hooked()
        .run(|| {
            let (mut a, b) = pair();
            let mut p = [libc::pollfd {
                fd: b.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            let start = Instant::now();
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(p.as_mut_ptr(), 1, 50) };
            assert_eq!(n, 0);
            assert!(start.elapsed() >= Duration::from_millis(50));
            let writer = spawn(move || {
                async_std_api::delay(20).expect("delay");
                a.write_all(b"x").expect("write");
                a
            });
            // SAFETY: as above.
            let n = unsafe { libc::poll(p.as_mut_ptr(), 1, -1) };
            assert_eq!(n, 1);
            assert_eq!(p[0].revents & libc::POLLIN, libc::POLLIN);
            drop(writer.join().expect("writer"));
        })
        .expect("runtime");
}

/// Waits in a hooked `recv` (std's `TcpStream::read`): the frame reports
/// should name.
#[inline(never)]
fn reads_the_socket(mut s: TcpStream) -> usize {
    let n = s.read(&mut [0u8; 8]).expect("read");
    std::hint::black_box(n)
}

#[test]
fn awaiting_info_names_the_hooked_call_and_the_code_that_made_it() {
    hooked()
        .run(|| {
            let (mut a, b) = pair();
            let fd = b.as_raw_fd();
            let reader = spawn(move || reads_the_socket(b));
            tests::support::yield_until(|| reader.coroutine().is_suspended());
            let info = reader.coroutine().awaiting_info().expect("suspended");
            assert!(info.starts_with(&format!("hooked recv fd {fd}")), "{info}");
            assert!(info.contains("reads_the_socket"), "{info}");
            a.write_all(b"x").expect("write");
            assert_eq!(reader.join().expect("reader"), 1);
        })
        .expect("runtime");
}

#[inline(never)]
fn reads_the_socket_twice(mut s: TcpStream, first: &std::cell::Cell<bool>) -> usize {
    let n = s.read(&mut [0u8; 8]).expect("first read");
    first.set(true);
    let m = s.read(&mut [0u8; 8]).expect("second read");
    std::hint::black_box(n + m)
}

#[test]
fn awaiting_info_names_a_later_wait_on_the_same_socket_too() {
    // The second wait takes the route of a socket already found plain
    // (IO6): its report names the call and the caller all the same.
    hooked()
        .run(|| {
            let (mut a, b) = pair();
            let fd = b.as_raw_fd();
            let first = std::rc::Rc::new(std::cell::Cell::new(false));
            let f = first.clone();
            let reader = spawn(move || reads_the_socket_twice(b, &f));
            tests::support::yield_until(|| reader.coroutine().is_suspended());
            a.write_all(b"x").expect("write");
            // The first read returns, the second waits.
            tests::support::yield_until(|| first.get() && reader.coroutine().is_suspended());
            let info = reader.coroutine().awaiting_info().expect("suspended");
            assert!(info.starts_with(&format!("hooked recv fd {fd}")), "{info}");
            a.write_all(b"yz").expect("write");
            assert_eq!(reader.join().expect("reader"), 3);
        })
        .expect("runtime");
}

#[test]
fn a_traced_hooked_wait_keeps_the_whole_stack() {
    hooked()
        .trace(true)
        .run(|| {
            let (mut a, b) = pair();
            let reader = spawn(move || reads_the_socket(b));
            tests::support::yield_until(|| reader.coroutine().is_suspended());
            let trace = reader.coroutine().trace().expect("a trace").to_string();
            assert!(trace.contains("reads_the_socket"), "{trace}");
            a.write_all(b"x").expect("write");
            reader.join().expect("reader");
        })
        .expect("runtime");
}

#[test]
fn d45_a_mode_or_timeout_set_after_a_wait_is_honoured() {
    hooked()
        .run(|| {
            let (mut a, b) = pair();
            let b = std::rc::Rc::new(b);
            // A first wait: the hooks learn the socket is plain (FD4).
            let r = b.clone();
            let reader = spawn(move || (&*r).read(&mut [0u8; 4]).expect("read"));
            async_std_api::delay(10).expect("delay");
            a.write_all(b"x").expect("write");
            assert_eq!(reader.join().expect("reader"), 1);
            // Then a timeout: the next wait ends with WouldBlock.
            b.set_read_timeout(Some(Duration::from_millis(30)))
                .expect("timeout");
            let e = (&*b).read(&mut [0u8; 4]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::WouldBlock);
            // Then non-blocking mode (ioctl FIONBIO): at once.
            b.set_read_timeout(None).expect("no timeout");
            b.set_nonblocking(true).expect("nonblocking");
            let start = Instant::now();
            assert_eq!(
                (&*b).read(&mut [0u8; 4]).unwrap_err().kind(),
                ErrorKind::WouldBlock
            );
            assert!(start.elapsed() < Duration::from_millis(500));
            // And back to blocking (fcntl F_SETFL): it waits again.
            b.set_nonblocking(false).expect("blocking");
            let r = b.clone();
            let reader = spawn(move || (&*r).read(&mut [0u8; 4]).expect("read"));
            async_std_api::delay(10).expect("delay");
            assert!(!reader.coroutine().is_finished(), "the read did not wait");
            a.write_all(b"y").expect("write");
            assert_eq!(reader.join().expect("reader"), 1);
        })
        .expect("runtime");
}

#[test]
fn printing_from_many_coroutines_never_switches_inside_stds_stdout_lock() {
    // In a child process with --nocapture, so the lines reach descriptor 1
    // (a pipe the parent reads) through std's locked stdout.
    if std::env::var_os("HOOKS_PRINT_CHILD").is_some() {
        hooked()
            .run(|| {
                let printers: Vec<_> = (0..4)
                    .map(|c| {
                        spawn(move || {
                            for i in 0..2000 {
                                println!("coroutine {c} line {i} {}", "x".repeat(64));
                            }
                        })
                    })
                    .collect();
                for p in printers {
                    p.join().expect("printer");
                }
            })
            .expect("runtime");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("own path"))
        .args([
            "--exact",
            "hooks_semantics::printing_from_many_coroutines_never_switches_inside_stds_stdout_lock",
            "--nocapture",
        ])
        .env("HOOKS_PRINT_CHILD", "1")
        .output()
        .expect("child");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("coroutine ")).count(),
        8000
    );
}

#[test]
fn poll_with_no_descriptors_sleeps_its_timeout() {
    let (r, took, ticks) = hooked()
        .run(|| {
            let ticker = Ticker::start();
            let start = Instant::now();
            // SAFETY: poll(NULL, 0, ms), how C code sleeps.
            let r = unsafe { libc::poll(std::ptr::null_mut(), 0, 60) };
            (r, start.elapsed(), ticker.stop().0)
        })
        .expect("runtime");
    assert_eq!(r, 0);
    assert!(took >= Duration::from_millis(60), "{took:?}");
    assert!(ticks >= 2, "{ticks} ticks");
}

/// `gethostbyname`'s answer as text (the first address).
fn first_address(h: *mut libc::hostent) -> String {
    assert!(!h.is_null(), "no answer");
    // SAFETY: a non-null record gethostbyname returned: its address list
    // holds at least one 4-byte IPv4 address.
    unsafe {
        let a = *(*h).h_addr_list;
        let b = std::slice::from_raw_parts(a.cast::<u8>(), 4);
        format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    }
}

extern "C" {
    fn gethostbyname(name: *const std::ffi::c_char) -> *mut libc::hostent;
}

#[test]
fn concurrent_gethostbyname_answers_are_each_their_own() {
    let answers = hooked()
        .run(|| {
            let lookups: Vec<_> = (1..=8)
                .map(|i| {
                    spawn(move || {
                        let name = std::ffi::CString::new(format!("10.0.0.{i}")).expect("name");
                        // SAFETY: a valid C string.
                        let h = unsafe { gethostbyname(name.as_ptr()) };
                        // Other coroutines look up meanwhile: the answer
                        // read afterwards is still this one's.
                        async_std_api::delay(20).expect("delay");
                        first_address(h)
                    })
                })
                .collect();
            lookups
                .into_iter()
                .map(|l| l.join().expect("lookup"))
                .collect::<Vec<_>>()
        })
        .expect("runtime");
    let expected: Vec<String> = (1..=8).map(|i| format!("10.0.0.{i}")).collect();
    assert_eq!(answers, expected);
}

#[test]
fn a_file_read_that_ends_short_at_the_end_of_the_file_comes_back_at_once() {
    let path = std::env::temp_dir().join(format!("hooks-short-{}", std::process::id()));
    std::fs::write(&path, vec![5u8; 1000]).expect("write");
    let p = path.clone();
    let (n, worst_ns) = hooked()
        .run(move || {
            let f = std::fs::File::open(&p).expect("open");
            let mut worst = Duration::ZERO;
            let mut n = 0;
            for _ in 0..20 {
                let mut buf = [0u8; 4096];
                let start = Instant::now();
                n = std::os::unix::fs::FileExt::read_at(&f, &mut buf, 0).expect("read_at");
                worst = worst.max(start.elapsed());
            }
            (n, worst)
        })
        .expect("runtime");
    let _ = std::fs::remove_file(&path);
    assert_eq!(n, 1000);
    // From the page cache: no pool round trip (tens of microseconds and a
    // switch) for the end of the file. Generous: a loaded machine.
    assert!(worst_ns < Duration::from_millis(20), "{worst_ns:?}");
}

#[test]
fn accept_restores_the_flags_the_socket_has_when_it_returns() {
    hooked()
        .run(|| {
            let l = std::rc::Rc::new(TcpListener::bind("127.0.0.1:0").expect("bind"));
            let addr = l.local_addr().expect("addr");
            let fd = l.as_raw_fd();
            let acceptor = {
                let l = l.clone();
                spawn(move || l.accept().map(|_| ()).map_err(|e| e.kind()))
            };
            async_std_api::delay(20).expect("delay");
            // While it waits, another coroutine makes the listener
            // non-blocking; the accept must not undo that.
            l.set_nonblocking(true).expect("nonblocking");
            let _c = TcpStream::connect(addr).expect("connect");
            assert_eq!(acceptor.join().expect("acceptor"), Ok(()));
            assert_ne!(
                flags(fd) & libc::O_NONBLOCK,
                0,
                "the accept undid set_nonblocking"
            );
        })
        .expect("runtime");
}

/// Makes a hooked read on `s` wait once, so the loop keeps a watch for its
/// number (on a duplicate of the socket, FW1).
fn wait_once_on(s: std::rc::Rc<TcpStream>, peer: &mut TcpStream) {
    let r = s.clone();
    let reader = spawn(move || (&*r).read(&mut [0u8; 4]).expect("read"));
    async_std_api::delay(10).expect("delay");
    assert!(reader.coroutine().is_suspended(), "the read did not wait");
    peer.write_all(b"x").expect("write");
    assert_eq!(reader.join().expect("reader"), 1);
}

#[test]
fn d45_closing_a_socket_a_hooked_read_waited_on_ends_the_stream_for_the_peer() {
    hooked()
        .run(|| {
            let (mut a, b) = pair();
            let b = std::rc::Rc::new(b);
            wait_once_on(b.clone(), &mut a);
            // The owner closes it on the loop thread: the watch's duplicate
            // goes first, so the close is the last and the peer sees the end
            // (read on a pool thread: no hooked wait of the loop's helps).
            drop(std::rc::Rc::into_inner(b).expect("the only reference"));
            a.set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
            let n =
                async_std_api::spawn_blocking(move || a.read(&mut [0u8; 4]).map_err(|e| e.kind()))
                    .join()
                    .expect("pool read");
            assert_eq!(n, Ok(0), "the peer did not see the end of the stream");
        })
        .expect("runtime");
}

#[test]
fn d45_a_socket_closed_on_another_thread_ends_the_stream_at_the_loops_next_wait() {
    hooked()
        .run(|| {
            let (mut a, b) = pair();
            let b = std::rc::Rc::new(b);
            wait_once_on(b.clone(), &mut a);
            let b = std::rc::Rc::into_inner(b).expect("the only reference");
            // Closed on a thread of its own, which cannot reach the loop's
            // watches: the loop's next hooked wait drops the stale one (FW3).
            std::thread::spawn(move || drop(b)).join().expect("closer");
            a.set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
            let start = Instant::now();
            assert_eq!(a.read(&mut [0u8; 4]).expect("end of stream"), 0);
            assert!(
                start.elapsed() < Duration::from_secs(4),
                "{:?}",
                start.elapsed()
            );
        })
        .expect("runtime");
}

#[test]
fn name_service_lookups_answer_inside_a_hooked_coroutine() {
    let name = hooked()
        .run(|| {
            // SAFETY: getpwuid with a valid uid; the record is read at once.
            unsafe {
                let pw = libc::getpwuid(0);
                assert!(!pw.is_null(), "no passwd entry for uid 0");
                std::ffi::CStr::from_ptr((*pw).pw_name)
                    .to_string_lossy()
                    .into_owned()
            }
        })
        .expect("runtime");
    assert_eq!(name, "root");
}
