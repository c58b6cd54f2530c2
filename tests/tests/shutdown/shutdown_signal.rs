//! Signals: a host API over the reactor's `signal_new`, and graceful
//! shutdown on a signal. Each test raises its own signal (the disposition
//! is process-wide; the watch exists before the raise).

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{
    delay, graceful_shutdown, run, signal, spawn, spawn_in, spawn_try, timeout, CancelCause, Scope,
    ScopeErrorKind,
};
use tests::support::{join_cancelled, yield_until_waiting, Recorder};

fn raise(signum: i32) {
    // SAFETY: `raise` only asks the kernel to deliver the signal to this
    // thread; a handler (the reactor's) is installed for it.
    let rc = unsafe { libc::raise(signum) };
    assert_eq!(rc, 0);
}

#[test]
fn r_gs1_a_signal_starts_graceful_shutdown() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let watch = signal::any(&[signal::SIGUSR1, signal::SIGUSR2]).unwrap();
        let r1 = r.clone();
        let watcher = spawn_try(move || -> std::io::Result<()> {
            watch.wait()?;
            r1.push(format!("received {:?}", watch.received()));
            graceful_shutdown();
            Ok(())
        });
        let r2 = r.clone();
        let server = spawn(move || {
            if let Err(c) = delay(60_000) {
                r2.push(format!("server: {:?}", c.cause()));
            }
        });
        yield_until_waiting(&[&watcher.coroutine(), &server.coroutine()]);
        raise(signal::SIGUSR1);
        let _ = server.join(); // main is cancelled too (interrupted)
    })
    .unwrap();
    rec.assert_events(&["received Some(10)", "server: Shutdown"]);
}

#[test]
fn a_signal_is_a_cancellation_token_for_await_completion() {
    run(|| {
        let scope = Scope::new();
        spawn_in(&scope, || delay(60_000)).unwrap();
        let token = signal::signal(signal::SIGHUP).unwrap();
        spawn(|| raise(signal::SIGHUP));
        let err = scope.await_completion(&token).unwrap_err();
        assert_eq!(err.kind(), ScopeErrorKind::AwaitCancelled);
        assert!(token.is_received());
        scope.cancel();
    })
    .unwrap();
}

#[test]
fn d25_a_signal_wait_is_a_cancellation_point() {
    run(|| {
        let got: Rc<RefCell<Option<std::io::Result<()>>>> = Rc::default();
        let g = got.clone();
        let h = spawn(move || *g.borrow_mut() = Some(signal::wait(signal::SIGUSR2)));
        yield_until_waiting(&[&h.coroutine()]);
        h.cancel();
        // Caught (as the wait's error) and returned: cancelled (D-25).
        let joined = join_cancelled(h);
        let err = got
            .borrow_mut()
            .take()
            .expect("the wait ended")
            .unwrap_err();
        let c = async_std_api::io::cancelled(&err).unwrap();
        assert_eq!(c.cause(), CancelCause::Explicit);
        assert_eq!(c, &joined);
        let _ = timeout(0);
    })
    .unwrap();
}

#[test]
fn signals_the_reactor_refuses_are_invalid_input() {
    run(|| {
        for n in [9, 19, 11] {
            let err = signal::signal(n).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
            assert_eq!(
                err.to_string(),
                format!("cannot watch signal {n}: the reactor refuses it")
            );
        }
    })
    .unwrap();
}
