//! Lists of inputs: results, failures, re-awaiting, the error combinators.

use std::cell::Cell;
use std::rc::Rc;

use async_std_api::combinators::{
    all, any, any_of, capture_errors, ignore_errors, CombineErrorKind,
};
use async_std_api::{delay, run, spawn, spawn_try, timeout, Cancelled, TaskGroup};
use tests::support::{join_cancelled, yield_until, Recorder};

#[test]
fn r_cb1_all_returns_values_in_input_order() {
    run(|| {
        let hs: Vec<_> = (0..4u64)
            .map(|i| {
                spawn(move || {
                    delay(20 - 5 * i).unwrap(); // finish in reverse order
                    i
                })
            })
            .collect();
        assert_eq!(all(hs).join().unwrap(), [0, 1, 2, 3]);
    })
    .unwrap();
}

#[test]
fn r_cb1_all_fails_at_the_first_failing_input() {
    run(|| {
        let hs = vec![
            spawn_try(|| {
                delay(5)?;
                Ok::<_, Cancelled>("ok")
            }),
            spawn_try(|| Err::<&str, _>("fetchUserSettings failed")),
        ];
        let e = all(hs).join().unwrap_err();
        assert_eq!(e.kind(), CombineErrorKind::Input);
        let (i, je) = e.input().unwrap();
        assert_eq!(i, 1);
        assert_eq!(
            e.to_string(),
            format!(
                "combinator input 1 failed: coroutine {} failed: fetchUserSettings failed",
                je.id()
            )
        );
    })
    .unwrap();
}

#[test]
fn d7_all_does_not_cancel_the_other_inputs_when_one_fails() {
    run(|| {
        let done = Rc::new(Cell::new(false));
        let d = done.clone();
        let slow = spawn(move || {
            delay(10).unwrap();
            d.set(true);
        });
        let c = slow.coroutine();
        let failing = spawn(|| panic!("boom"));
        let e = all(vec![slow, failing]).join().unwrap_err();
        assert_eq!(e.input().unwrap().0, 1);
        assert!(!c.is_cancellation_requested());
        c.wait().unwrap();
        assert!(done.get(), "the slow input ran to its end");
    })
    .unwrap();
}

#[test]
fn d7_any_does_not_cancel_the_losers() {
    run(|| {
        let rec = Recorder::new();
        // Gates, not delays: which input wins is decided here, not by the
        // timers' race under load.
        let mut gates = Vec::new();
        let hs: Vec<_> = [1u64, 20, 30]
            .into_iter()
            .map(|n| {
                let (gate, open) = async_std_api::sync::Deferred::<()>::new();
                gates.push(open);
                let r = rec.clone();
                spawn(move || {
                    gate.wait().unwrap();
                    r.push(format!("{n} done"));
                    n
                })
            })
            .collect();
        let losers: Vec<_> = hs[1..].iter().map(|h| h.coroutine()).collect();
        let mut gates = gates.into_iter();
        gates.next().unwrap().resolve(()).unwrap();
        assert_eq!(any(hs).join().unwrap(), 1);
        for (c, g) in losers.iter().zip(gates) {
            assert!(!c.is_cancellation_requested());
            g.resolve(()).unwrap();
            c.wait().unwrap();
        }
        rec.assert_events(&["1 done", "20 done", "30 done"]);
    })
    .unwrap();
}

#[test]
fn r_cb1_any_awaited_again_gives_the_next_completion() {
    run(|| {
        let gate = Rc::new(Cell::new(0));
        let hs: Vec<_> = (0..3)
            .map(|i| {
                let g = gate.clone();
                spawn(move || {
                    yield_until(|| g.get() > i);
                    i
                })
            })
            .collect();
        let mut trigger = any(hs);
        let mut got = Vec::new();
        for _ in 0..3 {
            gate.set(gate.get() + 1);
            got.push(trigger.join().unwrap());
        }
        assert_eq!(got, [0, 1, 2]);
        let e = trigger.join().unwrap_err();
        assert_eq!(e.kind(), CombineErrorKind::Exhausted);
        assert_eq!(e.to_string(), "combinator has no input left to wait for");
    })
    .unwrap();
}

#[test]
fn r_cb1_any_of_fires_after_n_completions() {
    run(|| {
        let hs: Vec<_> = [5u64, 60_000, 1]
            .into_iter()
            .map(|ms| spawn(move || delay(ms).map(|_| ms).unwrap_or(0)))
            .collect();
        let slow = hs[1].coroutine();
        let two = any_of(2, hs).join().unwrap();
        let mut idx: Vec<_> = two.iter().map(|(i, _)| *i).collect();
        idx.sort();
        assert_eq!(idx, [0, 2]);
        assert!(!slow.is_finished());
        slow.cancel();
        let e = any_of(3, vec![spawn(|| 1)]).join().unwrap_err();
        assert_eq!(e.kind(), CombineErrorKind::Exhausted);
    })
    .unwrap();
}

#[test]
fn r_cb1_capture_errors_returns_the_result_and_the_errors() {
    run(|| {
        let mk = || {
            vec![
                spawn_try(|| Err::<u8, _>("a down".to_owned())),
                // Late: the failures come first, so `any` sees them (a
                // loser failing after `any` returned would go to the scope).
                spawn_try(|| delay(20).map(|_| 2u8).map_err(|c| c.to_string())),
                spawn_try(|| Err::<u8, _>("c down".to_owned())),
            ]
        };
        let (all_r, errors) = capture_errors(all(mk())).join().unwrap();
        assert_eq!(all_r, [None, Some(2), None]);
        let mut idx: Vec<_> = errors.iter().map(|(i, _)| *i).collect();
        idx.sort();
        assert_eq!(idx, [0, 2]);
        // any: the first success, errors before it captured.
        let (first, _errors) = capture_errors(any(mk())).join().unwrap();
        assert_eq!(first, Some(2));
        // All failed: no result.
        let failing = vec![
            spawn_try(|| Err::<u8, _>("x")),
            spawn_try(|| Err::<u8, _>("y")),
        ];
        let (none, errors) = capture_errors(any(failing)).join().unwrap();
        assert_eq!((none, errors.len()), (None, 2));
    })
    .unwrap();
}

#[test]
fn r_cb1_ignore_errors_passes_each_error_to_the_handler() {
    run(|| {
        let hs = vec![
            spawn_try(|| Err::<u8, _>("api1")),
            spawn_try(|| Err::<u8, _>("api2")),
            spawn_try(|| Ok::<u8, &str>(3)),
        ];
        let mut seen = Vec::new();
        let r = ignore_errors(all(hs), |e| seen.push(e.failure().unwrap().to_string()))
            .join()
            .unwrap();
        assert_eq!(r, [None, None, Some(3)]);
        seen.sort();
        assert!(seen[0].ends_with("failed: api1"), "{seen:?}");
        assert!(seen[1].ends_with("failed: api2"), "{seen:?}");
    })
    .unwrap();
}

#[test]
fn r_cb1_combinators_take_coroutines_timeouts_groups_and_their_triggers() {
    run(|| {
        // Coroutines and timeouts: unit outputs.
        let c = spawn(|| ()).coroutine();
        assert_eq!(all([&c]).join().unwrap(), [()]);
        let t1 = timeout(1);
        let t2 = timeout(60_000);
        assert_eq!(any([&t1, &t2]).join().unwrap(), ());
        // Task groups.
        let g1 = TaskGroup::builder().capture_results(true).build();
        let g2 = TaskGroup::builder().capture_results(true).build();
        g1.spawn(|| 1).unwrap();
        g2.spawn(|| 2).unwrap();
        let both = all([&g1, &g2]).join().unwrap();
        assert_eq!(both[0][&0] + both[1][&0], 3);
        // A group's race trigger.
        let g3 = TaskGroup::new();
        let race = g3.race(false);
        g3.spawn(|| "r").unwrap();
        assert_eq!(any([&race]).join().unwrap(), "r");
        let all_trigger = g1.all(true, true);
        assert_eq!(all([&all_trigger]).join().unwrap()[0][&0], Some(1));
    })
    .unwrap();
}

#[test]
fn r_cb1_d25_a_cancelled_caller_is_interrupted() {
    run(|| {
        let kind: Rc<Cell<Option<CombineErrorKind>>> = Rc::default();
        let k = kind.clone();
        let waiter = spawn(move || {
            let h = spawn(|| delay(60_000).unwrap_or(()));
            let c = h.coroutine();
            let e = all(vec![h]).join().unwrap_err();
            c.cancel();
            k.set(Some(e.kind()));
        });
        let w = waiter.coroutine();
        yield_until(|| w.is_suspended());
        w.cancel();
        // It caught its cancellation (as the combinator's error) and
        // returned: it ends cancelled (D-25).
        assert_eq!(join_cancelled(waiter).id(), w.id());
        assert_eq!(kind.get(), Some(CombineErrorKind::Interrupted));
    })
    .unwrap();
}

#[test]
fn rfc_get_first_available_with_error_tolerance() {
    // The RFC's getFirstAvailable: the first success, tolerating errors.
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let sources = vec![
            spawn_try(|| Err::<&str, _>("s1 down")),
            spawn_try(|| {
                delay(10)?;
                Ok::<_, Cancelled>("s2")
            }),
            spawn_try(|| Err::<&str, _>("s3 down")),
            spawn_try(|| {
                delay(60_000)?;
                Ok::<_, Cancelled>("s4")
            }),
        ];
        let s4 = sources[3].coroutine();
        let tolerance = sources.len() / 2;
        let mut errors = 0;
        let mut trigger = any(sources);
        let mut result = None;
        while errors < tolerance + 1 {
            match trigger.join() {
                Ok(v) => {
                    result = Some(v);
                    break;
                }
                Err(_) => errors += 1,
            }
        }
        r.push(format!("{result:?} after {errors} errors"));
        drop(trigger);
        s4.cancel(); // D-7: the combinator left it running
    })
    .unwrap();
    rec.assert_events(&["Some(\"s2\") after 2 errors"]);
}
