//! A public call made where it cannot work (outside `run`, outside a
//! coroutine, on the loop's own thread, in a closed scope, with bad input)
//! panics with one line naming the call and the fix, raised at the
//! *caller's* line: every function from the public call down to the panic
//! is `#[track_caller]`, so the location is the user's code, not the
//! runtime's.

use std::cell::RefCell;
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Once;
use std::time::Duration;

use async_std_api::awaitable::Latch;
use async_std_api::combinators::{all, concurrent, select};
use async_std_api::sync::{channel, Barrier, Deferred, Future, Mutex, Notify, RwLock, Semaphore};
use async_std_api::time::{interval, with_timeout};
use async_std_api::{
    check_cancelled, coroutine_context, coroutines, current, current_context, current_scope, delay,
    global_scope, graceful_shutdown, live_events, on_finally, protect, root_context, run, sleep,
    spawn, spawn_blocking, spawn_in, spawn_try, suspend, timeout, Scope, TaskGroup,
};

thread_local! {
    /// Where the last panic on this thread was raised, and its message.
    static LAST: RefCell<Option<(String, u32, String)>> = const { RefCell::new(None) };
}

/// Records each panic's location on its thread, then lets the previous
/// hook print as usual (the runtime's hook chains the same way, PH1).
fn hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            if let Some(l) = info.location() {
                LAST.with(|x| *x.borrow_mut() = Some((l.file().to_owned(), l.line(), message)));
            }
            previous(info);
        }));
    });
}

/// Runs `f` and returns where it panicked and with what message (`None`:
/// it did not panic).
fn panic_of(f: impl FnOnce()) -> Option<(String, u32, String)> {
    hook();
    LAST.with(|x| *x.borrow_mut() = None);
    catch_unwind(AssertUnwindSafe(f)).err()?;
    LAST.with(|x| x.borrow_mut().take())
}

/// `Ok(message)` if `$call` panicked at this very line of this file;
/// otherwise `Err` saying what happened instead.
macro_rules! panic_here {
    ($call:expr) => {{
        let call = stringify!($call);
        match panic_of(|| {
            let _ = $call;
        }) {
            Some((file, line, message)) if file == file!() && line == line!() => Ok(message),
            Some((file, line, message)) => {
                Err(format!("{call}: panicked at {file}:{line}: {message}"))
            }
            None => Err(format!("{call}: did not panic")),
        }
    }};
}

/// The calls that did not panic at their caller's line.
#[derive(Default)]
struct Wrong(Vec<String>);

impl Wrong {
    /// Records a miss; returns the message of a panic at the right line.
    fn check(&mut self, r: Result<String, String>) -> String {
        r.unwrap_or_else(|e| {
            self.0.push(e);
            String::new()
        })
    }

    #[track_caller]
    fn assert_none(&self) {
        assert!(
            self.0.is_empty(),
            "panics not at the caller's line:\n{}",
            self.0.join("\n")
        );
    }
}

const FIX: &str = "called outside a coroutine runtime: run the program inside async_std_api::run";

#[test]
fn misuse_outside_run_panics_at_the_callers_line() {
    let mut w = Wrong::default();
    // Coroutines, scopes, contexts.
    assert_eq!(w.check(panic_here!(spawn(|| ()))), format!("spawn {FIX}"));
    w.check(panic_here!(spawn_try(|| Ok::<(), std::io::Error>(()))));
    w.check(panic_here!(spawn_blocking(|| ())));
    w.check(panic_here!(suspend()));
    assert_eq!(w.check(panic_here!(current())), format!("current {FIX}"));
    assert_eq!(
        w.check(panic_here!(coroutines())),
        format!("coroutines {FIX}")
    );
    w.check(panic_here!(live_events()));
    w.check(panic_here!(on_finally(|| ())));
    w.check(panic_here!(check_cancelled()));
    w.check(panic_here!(protect(|| ())));
    assert_eq!(
        w.check(panic_here!(current_scope())),
        format!("current_scope {FIX}")
    );
    w.check(panic_here!(global_scope()));
    assert_eq!(
        w.check(panic_here!(Scope::new())),
        format!("Scope::new {FIX}")
    );
    assert_eq!(
        w.check(panic_here!(Scope::inherit())),
        format!("Scope::inherit {FIX}")
    );
    assert_eq!(
        w.check(panic_here!(TaskGroup::<()>::new())),
        format!("TaskGroup::new {FIX}")
    );
    assert_eq!(
        w.check(panic_here!(current_context())),
        format!("current_context {FIX}")
    );
    w.check(panic_here!(root_context()));
    w.check(panic_here!(coroutine_context()));
    w.check(panic_here!(graceful_shutdown()));
    w.check(panic_here!(async_std_api::Supervisor::new()));
    // Time.
    assert_eq!(w.check(panic_here!(delay(1))), format!("delay {FIX}"));
    w.check(panic_here!(delay(0)));
    w.check(panic_here!(sleep(Duration::from_millis(1))));
    assert_eq!(w.check(panic_here!(timeout(1))), format!("timeout {FIX}"));
    assert_eq!(
        w.check(panic_here!(interval(Duration::from_millis(1)))),
        format!("interval {FIX}")
    );
    assert_eq!(
        w.check(panic_here!(with_timeout(1, || ()))),
        format!("with_timeout {FIX}")
    );
    // Combinators and waits.
    assert_eq!(
        w.check(panic_here!(select((|| 1,)))),
        format!("select {FIX}")
    );
    w.check(panic_here!(concurrent(std::iter::empty::<
        Result<Latch, std::io::Error>,
    >())));
    let latch = Latch::new("never");
    w.check(panic_here!(all([&latch]).join()));
    w.check(panic_here!(latch.wait()));
    w.check(panic_here!(async_std_api::awaitable::wait(&latch)));
    let finished = run(current).unwrap();
    w.check(panic_here!(finished.wait_until(&latch)));
    let scope = run(|| Scope::new().detach()).unwrap();
    w.check(panic_here!(scope.await_completion(&latch)));
    // Synchronisation.
    let m = Mutex::new(0);
    let _held = m.try_lock();
    w.check(panic_here!(m.lock()));
    let rw = RwLock::new(0);
    let _w = rw.try_write();
    w.check(panic_here!(rw.read()));
    w.check(panic_here!(rw.write()));
    let sem = Semaphore::new(0);
    w.check(panic_here!(sem.acquire()));
    w.check(panic_here!(Notify::new().notified()));
    w.check(panic_here!(Barrier::new(2).wait()));
    let (tx, rx) = channel::<u8>(1);
    w.check(panic_here!(rx.recv()));
    tx.try_send(1).unwrap();
    w.check(panic_here!(tx.send(2)));
    let (d, resolver) = Deferred::<u8>::new();
    w.check(panic_here!(d.wait()));
    let (f, _p) = Future::<u8>::new();
    w.check(panic_here!(f.wait()));
    // I/O. Sockets and pipes can be made outside a runtime, as std's;
    // waiting on them cannot.
    assert_eq!(
        w.check(panic_here!(async_std_api::net::TcpStream::connect(
            "127.0.0.1:1"
        ))),
        format!("TcpStream::connect {FIX}")
    );
    let to = "127.0.0.1:1".parse().unwrap();
    w.check(panic_here!(async_std_api::net::TcpStream::connect_timeout(
        &to,
        Duration::from_secs(1)
    )));
    w.check(panic_here!(async_std_api::net::UnixStream::connect(
        "/nonexistent"
    )));
    let listener = async_std_api::net::TcpListener::bind("127.0.0.1:0").unwrap();
    w.check(panic_here!(listener.accept()));
    let udp = async_std_api::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    w.check(panic_here!(udp.recv_from(&mut [0; 8])));
    w.check(panic_here!(udp.send_to(b"x", "localhost:9")));
    let (mut a, _b) = async_std_api::net::UnixStream::pair().unwrap();
    w.check(panic_here!(a.read(&mut [0; 8])));
    let (mut pipe, _w) = async_std_api::io::pipe().unwrap();
    w.check(panic_here!(pipe.read(&mut [0; 8])));
    let dgram = async_std_api::net::UnixDatagram::unbound().unwrap();
    w.check(panic_here!(dgram.recv(&mut [0; 8])));
    let (sock, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
    sock.set_nonblocking(true).unwrap();
    let fd = async_std_api::io::Async::new(sock).unwrap();
    w.check(panic_here!(fd.readable()));
    w.check(panic_here!(async_std_api::fs::read("/nonexistent")));
    w.check(panic_here!(async_std_api::fs::File::open("/nonexistent")));
    w.check(panic_here!(async_std_api::fs::watch("/tmp")));
    let mut cmd = async_std_api::process::Command::new("true");
    w.check(panic_here!(cmd.status()));
    w.check(panic_here!(cmd.spawn()));
    w.check(panic_here!(cmd.output()));
    w.check(panic_here!(async_std_api::signal::signal(10)));
    // Other threads and loops.
    w.check(panic_here!(tx.for_thread()));
    w.check(panic_here!(resolver.for_thread()));
    let loop0 = async_std_api::per_core::LoopId::new(0);
    w.check(panic_here!(async_std_api::per_core::spawn_on(loop0, || ())));
    // Bad input.
    assert_eq!(
        w.check(panic_here!(TaskGroup::<()>::builder().concurrency(0))),
        "a task group's concurrency limit must be at least 1"
    );
    let not_a_panic = run(|| {
        let h = spawn(|| ());
        h.cancel();
        h.join().unwrap_err()
    })
    .unwrap();
    w.check(panic_here!(not_a_panic.into_panic()));
    w.assert_none();
}

#[test]
fn misuse_inside_run_panics_at_the_callers_line() {
    let w = Rc::new(RefCell::new(Wrong::default()));
    let messages = Rc::new(RefCell::new(Vec::new()));
    let (w1, m1) = (w.clone(), messages.clone());
    let closed = run(move || {
        // A thread sender used on the loop's own thread would block it.
        let (tx, _rx) = channel::<u8>(1);
        let ts = tx.for_thread().unwrap();
        let m = w1.borrow_mut().check(panic_here!(ts.send(1)));
        m1.borrow_mut().push(m);
        // A closed scope starts no new work (R-S4).
        let scope = Scope::new();
        let (s, w2, m2) = (scope.clone(), w1.clone(), m1.clone());
        let inside = spawn_in(&scope, move || {
            s.cancel(); // closes it; this coroutine goes on (D-11)
            let mut w = w2.borrow_mut();
            let got = [
                w.check(panic_here!(spawn(|| ()))),
                w.check(panic_here!(select((|| 1,)))),
                w.check(panic_here!(with_timeout(1, || ()))),
            ];
            m2.borrow_mut().extend(got);
        })
        .unwrap();
        // It returned with its cancellation undelivered: it ends cancelled.
        assert!(inside.join().unwrap_err().is_cancelled());
        scope.id()
    })
    .unwrap();
    w.borrow().assert_none();
    assert_eq!(
        *messages.borrow(),
        [
            "ThreadSender::send called on a runtime's thread: it would block the loop; \
             use the channel's Sender there"
                .to_owned(),
            format!(
                "cannot spawn a coroutine in scope {closed}: the scope is closed (use spawn_in to \
                 handle it as an error)"
            ),
            format!(
                "select cannot start its branches: scope {closed} is closed (cancelled or disposed)"
            ),
            format!(
                "with_timeout cannot start its closure: scope {closed} is closed (cancelled or \
                 disposed)"
            ),
        ]
    );
}
