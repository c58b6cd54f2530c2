//! The runtime's warnings and errors as structured events (`events`), the
//! cancellation watchdog (D-1(c)), and what a run's error carries: a handler
//! installed with `Builder::on_event` receives them as data, in order, with
//! the ids and locations a tool needs; without a handler or a `tracing`
//! subscriber they reach stderr.

use std::panic::Location;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_std_api::events::{CoroutineRef, Event, Level};
use async_std_api::{
    current, delay, spawn, spawn_in, spawn_try, suspend, Builder, CancelCause, Cancelled,
    ErrorKind, Failure, Scope,
};
use tests::support::{join_cancelled, run_child, yield_until, yield_until_waiting};

const PROBE: &str = env!("CARGO_BIN_EXE_runtime_probe");

/// A builder whose handler keeps every event.
fn recording() -> (Builder, Arc<Mutex<Vec<Event>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let b = Builder::new().on_event(move |e| s.lock().unwrap().push(e.clone()));
    (b, seen)
}

fn taken(seen: &Arc<Mutex<Vec<Event>>>) -> Vec<Event> {
    std::mem::take(&mut *seen.lock().unwrap())
}

#[test]
fn r_s9_dispose_and_dispose_safely_are_events_naming_each_coroutine() {
    let (b, seen) = recording();
    let (at, a, z, zombie_scope) = b
        .zombie_timeout(Duration::from_millis(20))
        .run(|| {
            let scope = Scope::new();
            let a = spawn_in(&scope, || delay(60_000)).unwrap();
            yield_until_waiting(&[&a.coroutine()]);
            let at = Location::caller();
            scope.dispose();
            let safe = Scope::new();
            let z = spawn_in(&safe, || delay(60_000)).unwrap();
            yield_until_waiting(&[&z.coroutine()]);
            safe.dispose_safely();
            let ids = (a.id(), z.id(), safe.id());
            let _ = join_cancelled(a);
            // The zombie is left to the zombie timeout, once main is done.
            (at, ids.0, ids.1, ids.2)
        })
        .unwrap();
    let events = taken(&seen);
    assert_eq!(events.len(), 3, "{events:#?}");
    match &events[0] {
        Event::ScopeDisposed {
            disposed_at,
            cancelled,
            ..
        } => {
            assert_eq!(disposed_at.unwrap().file(), at.file());
            assert_eq!(cancelled.iter().map(|c| c.id).collect::<Vec<_>>(), [a]);
        }
        other => panic!("expected ScopeDisposed, got {other:?}"),
    }
    match &events[1] {
        Event::Zombie {
            coroutine, scope, ..
        } => assert_eq!((coroutine.id, *scope), (z, zombie_scope)),
        other => panic!("expected Zombie, got {other:?}"),
    }
    match &events[2] {
        Event::ZombiesCancelled { zombies, timeout } => {
            assert_eq!(zombies.iter().map(|c| c.id).collect::<Vec<_>>(), [z]);
            assert_eq!(*timeout, Duration::from_millis(20));
        }
        other => panic!("expected ZombiesCancelled, got {other:?}"),
    }
    assert!(events.iter().all(|e| e.level() == Level::Warn));
}

#[test]
fn d9_dropping_the_last_handle_is_a_scope_disposed_event_without_a_location() {
    let (b, seen) = recording();
    let id = b
        .run(|| {
            let scope = Scope::new();
            let h = spawn_in(&scope, || delay(60_000)).unwrap();
            yield_until_waiting(&[&h.coroutine()]);
            drop(scope);
            let id = h.id();
            let _ = join_cancelled(h);
            id
        })
        .unwrap();
    let events = taken(&seen);
    match events.as_slice() {
        [e @ Event::ScopeDisposed {
            disposed_at: None,
            cancelled,
            ..
        }] => {
            assert_eq!(cancelled[0].id, id);
            assert!(
                e.to_string()
                    .contains("dropped while 1 coroutine still ran"),
                "{e}"
            );
        }
        other => panic!("{other:#?}"),
    }
}

#[test]
fn r_gs1_an_unhandled_failure_is_an_event_and_the_runs_error_carries_it() {
    let (b, seen) = recording();
    let err = b
        .run(|| {
            // Cleanup during the shutdown fails too: the shutdown is forced.
            let second = spawn(|| {
                if delay(60_000).is_err() {
                    panic!("second");
                }
            });
            yield_until_waiting(&[&second.coroutine()]);
            spawn(|| panic!("first"));
            let _ = delay(60_000);
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    let failure = err.failure().expect("the unhandled failure").clone();
    assert_eq!(failure.panic_message(), Some("first"));
    let attached = failure.attached();
    assert_eq!(attached.len(), 1);
    assert_eq!(attached[0].panic_message(), Some("second"));
    let source = std::error::Error::source(&err).expect("a source");
    assert_eq!(source.to_string(), failure.to_string());

    let events = taken(&seen);
    let unhandled: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::UnhandledFailure {
                failure,
                started_shutdown,
                forced_shutdown,
            } => Some((failure.clone(), *started_shutdown, *forced_shutdown)),
            _ => None,
        })
        .collect();
    assert_eq!(unhandled.len(), 2, "{events:#?}");
    assert!(
        Failure::ptr_eq(&unhandled[0].0, &failure),
        "the same object"
    );
    assert_eq!((unhandled[0].1, unhandled[0].2), (true, false));
    assert_eq!(unhandled[1].0.panic_message(), Some("second"));
    assert_eq!((unhandled[1].1, unhandled[1].2), (false, true));
    assert!(events.iter().all(|e| e.level() == Level::Error));
}

#[test]
fn r_dl1_a_deadlock_is_an_event_per_waiter_naming_where_it_waited() {
    let (b, seen) = recording();
    let err = b
        .run(|| {
            let main = current();
            let child = spawn(move || main.wait());
            let _ = child.join();
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Deadlock);
    let events = taken(&seen);
    let waiters: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Deadlock {
                coroutine,
                waited_at,
                ..
            } => Some((coroutine.id, waited_at.map(|l| l.file()))),
            _ => None,
        })
        .collect();
    assert_eq!(waiters.len(), 2, "{events:#?}");
    assert!(waiters.iter().all(|(_, at)| *at == Some(file!())));
}

#[test]
fn d1c_a_coroutine_still_running_after_its_cancellation_timeout_is_reported_once() {
    let (b, seen) = recording();
    let line = line!() + 4;
    let (slow, quick) = b
        .cancellation_timeout(Duration::from_millis(30))
        .run(|| {
            let slow = spawn(|| {
                if delay(60_000).is_err() {
                    let _ = delay(300); // a slow cleanup: reported, not cut short
                }
            });
            let quick = spawn(|| delay(60_000));
            yield_until_waiting(&[&slow.coroutine(), &quick.coroutine()]);
            slow.cancel();
            quick.cancel();
            let ids = (slow.id(), quick.id());
            let _ = join_cancelled(quick);
            let started = Instant::now();
            let _ = join_cancelled(slow);
            assert!(
                started.elapsed() >= Duration::from_millis(250),
                "not interrupted"
            );
            ids
        })
        .unwrap();
    let events = taken(&seen);
    let stuck: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::StuckInCancellation {
                coroutine,
                suspended_at,
                waiting_for,
                since,
            } => Some((*coroutine, *suspended_at, waiting_for.clone(), *since)),
            _ => None,
        })
        .collect();
    assert_eq!(stuck.len(), 1, "once, and only the slow one: {events:#?}");
    let (c, at, what, since) = &stuck[0];
    assert_eq!(c.id, slow);
    assert_ne!(c.id, quick);
    assert_eq!((c.spawned_at.file(), c.spawned_at.line()), (file!(), line));
    assert_eq!(at.map(|l| (l.file(), l.line())), Some((file!(), line + 2)));
    assert!(
        what.as_deref().is_some_and(|w| w.contains("delay")),
        "{what:?}"
    );
    assert!(*since >= Duration::from_millis(30));
    let text = events
        .iter()
        .find(|e| matches!(e, Event::StuckInCancellation { .. }))
        .unwrap()
        .to_string();
    assert!(
        text.starts_with(&format!("coroutine {slow} (spawned at "))
            && text.contains("(it is not interrupted)"),
        "{text}"
    );
}

#[test]
fn d1c_a_zero_timeout_turns_the_report_off_and_the_watch_never_keeps_the_loop_alive() {
    let (b, seen) = recording();
    b.cancellation_timeout(Duration::ZERO)
        .run(|| {
            let h = spawn(|| {
                if delay(60_000).is_err() {
                    let _ = delay(50);
                }
            });
            yield_until_waiting(&[&h.coroutine()]);
            h.cancel();
            let _ = join_cancelled(h);
        })
        .unwrap();
    assert!(taken(&seen).is_empty());

    // On, with the default 10 s: a quick cancellation ends the run at once
    // (the hidden timer does not keep the loop alive).
    let started = Instant::now();
    async_std_api::run(|| {
        let h = spawn(|| delay(60_000));
        yield_until_waiting(&[&h.coroutine()]);
        h.cancel();
    })
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn r_t1_the_activity_watchdog_reports_through_the_handler() {
    let (b, seen) = recording();
    let id = b
        .max_activity_interval(Duration::from_millis(50))
        .run(|| {
            let h = spawn(|| {
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(400) {
                    std::hint::spin_loop();
                }
            });
            let id = h.id();
            h.join().unwrap();
            id
        })
        .unwrap();
    let events = taken(&seen);
    match events.as_slice() {
        [Event::ActivityExceeded {
            coroutine,
            spawned_at,
            interval,
            ..
        }] => {
            assert_eq!(*coroutine, id);
            assert_eq!(spawned_at.map(|l| l.file()), Some(file!()));
            assert_eq!(*interval, Duration::from_millis(50));
        }
        other => panic!("{other:#?}"),
    }
}

#[test]
fn a_panicking_handler_is_caught_and_the_run_goes_on() {
    let b = Builder::new().on_event(|_| panic!("handler bug"));
    let v = b
        .run(|| {
            let scope = Scope::new();
            let h = spawn_in(&scope, || delay(60_000)).unwrap();
            yield_until_waiting(&[&h.coroutine()]);
            scope.dispose(); // an event: the handler panics
            let _ = join_cancelled(h);
            7
        })
        .unwrap();
    assert_eq!(v, 7);
}

#[test]
fn r_c1_cancelled_new_ends_a_body_cancelled_with_its_reason() {
    async_std_api::run(|| {
        let h = spawn_try(|| -> Result<u8, Cancelled> {
            suspend().unwrap();
            Err(Cancelled::new("nothing left to do"))
        });
        let id = h.id();
        let c = h.coroutine();
        let got = join_cancelled(h);
        assert_eq!(got.id(), id);
        assert_eq!(got.cause(), CancelCause::Explicit);
        assert_eq!(got.reason(), Some("nothing left to do"));
        assert!(c.is_cancelled() && !c.is_cancellation_requested());
        yield_until(|| c.is_finished());
    })
    .unwrap();
}

#[test]
#[should_panic(expected = "Cancelled::new called outside a coroutine runtime")]
fn cancelled_new_outside_a_runtime_panics_naming_the_fix() {
    let _ = Cancelled::new("x");
}

#[test]
fn without_a_handler_or_a_subscriber_the_events_go_to_stderr() {
    let out = run_child(PROBE, &["zombie"], &[]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines[0].starts_with("WARN async_std_api::scope: coroutine ")
            && lines[0].contains(") is a zombie: scope "),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(
            "WARN async_std_api::scope: zombie timeout (20 ms): cancelling 1 zombie coroutine(s): coroutine "
        ),
        "{}",
        lines[1]
    );

    // With a handler, nothing on stderr: the handler saw both.
    let out = run_child(PROBE, &["zombie", "handler"], &[]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stderr, "");
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("event: "))
            .count(),
        2
    );
}

#[test]
fn an_events_text_names_the_coroutine_as_logs_do() {
    let at = Location::caller();
    let c = CoroutineRef {
        id: async_std_api::run(|| current().id()).unwrap(),
        spawned_at: at,
    };
    assert_eq!(
        c.to_string(),
        format!("coroutine {} (spawned at {at})", c.id)
    );
}

#[test]
fn a_coroutines_panic_message_names_the_coroutine() {
    let out = run_child(PROBE, &["panic"], &[("RUST_BACKTRACE", "0")]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let spawned = out
        .stdout
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("spawned ");
    let (id, at) = spawned.split_once(" at ").unwrap();
    let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        format!("coroutine {id} (spawned at {at}) panicked:"),
        "{}",
        out.stderr
    );
    assert!(
        lines[1].starts_with("thread 'main'") && lines[1].contains("panicked at"),
        "{}",
        out.stderr
    );
    assert_eq!(lines[2], "boom");
}
