//! Concurrent iterators as inputs (R-CB1's iterable triggers, D-24).

use std::cell::Cell;
use std::rc::Rc;

use async_std_api::combinators::{
    all, any, capture_errors, concurrent, ignore_errors, CombineErrorKind,
};
use async_std_api::{delay, run, spawn, Cancelled, JoinHandle, TaskGroup};
use tests::support::Recorder;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[test]
fn r_cb1_all_waits_for_the_iterator_to_end() {
    run(|| {
        let ended = Rc::new(Cell::new(false));
        let e = ended.clone();
        let items = (0..3)
            .map(|i| {
                delay(2)?; // the iterator itself suspends
                Ok::<_, Cancelled>(spawn(move || i))
            })
            .chain(std::iter::from_fn(move || {
                e.set(true);
                None
            }));
        let values = all(concurrent(items)).join().unwrap();
        assert_eq!(values, [0, 1, 2]);
        assert!(ended.get());
    })
    .unwrap();
}

#[test]
fn r_cb1_any_fires_while_the_iterator_still_runs() {
    run(|| {
        let produced = Rc::new(Cell::new(0));
        let p = produced.clone();
        let items = (0..3).map(move |i| {
            if i > 0 {
                delay(60_000)?;
            }
            p.set(p.get() + 1);
            Ok::<_, Cancelled>(spawn(move || i))
        });
        let mut first = any(concurrent(items));
        assert_eq!(first.join().unwrap(), 0);
        assert_eq!(produced.get(), 1);
        // Dropping the combinator cancels its iterator (CB2).
        drop(first);
    })
    .unwrap();
}

#[test]
fn d24_plain_all_raises_an_iterator_error_at_once() {
    run(|| {
        let items = (0..3).map(|i| {
            if i == 1 {
                return Err::<JoinHandle<i32>, BoxError>("iterator broke".into());
            }
            Ok(spawn(move || i))
        });
        let e = all(concurrent(items)).join().unwrap_err();
        assert_eq!(e.kind(), CombineErrorKind::Iterator);
        let f = e.iterator_failure().unwrap();
        assert_eq!(
            e.to_string(),
            format!("combinator input iterator failed: {f}")
        );
        assert!(f.to_string().ends_with("failed: iterator broke"), "{f}");
    })
    .unwrap();
}

#[test]
fn d24_an_iterator_error_passes_through_capture_errors_and_ignore_errors() {
    run(|| {
        let mk = || {
            (0..3).map(|i| {
                if i == 2 {
                    // Input 0 fails while the combinator waits (it is
                    // captured); then the iterator itself fails.
                    delay(30)?;
                    return Err::<JoinHandle<i32>, BoxError>("iterator broke".into());
                }
                // Failing after a delay: the combinator awaits it by then
                // (a failure before any await goes to the scope, D-3).
                Ok(spawn(move || {
                    delay(5).unwrap();
                    if i == 0 {
                        panic!("input failed")
                    }
                    i
                }))
            })
        };
        let e = capture_errors(all(concurrent(mk()))).join().unwrap_err();
        assert_eq!(e.kind(), CombineErrorKind::Iterator);
        let e = ignore_errors(all(concurrent(mk())), |_| ())
            .join()
            .unwrap_err();
        assert_eq!(e.kind(), CombineErrorKind::Iterator);
        // A panicking iterator is an iterator error too.
        let panicking =
            (0..1).map(|_| -> Result<JoinHandle<()>, BoxError> { panic!("iterator panicked") });
        let e = all(concurrent(panicking)).join().unwrap_err();
        assert_eq!(
            e.iterator_failure().unwrap().panic_message(),
            Some("iterator panicked")
        );
    })
    .unwrap();
}

#[test]
fn rfc_process_all_user_tasks_iterator_races_a_group() {
    // The RFC's processAllUserTasks: an iterator that races a task group
    // and yields a task per user task; all waits for everything.
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let users = TaskGroup::builder().capture_results(true).build();
        for (id, tasks) in [(1, vec!["a", "b"]), (2, vec!["c"])] {
            users
                .spawn(move || {
                    delay(id).unwrap();
                    tasks
                })
                .unwrap();
        }
        let race = users.race(false);
        let mut pending: Vec<&'static str> = Vec::new();
        let items = std::iter::from_fn(move || loop {
            if let Some(t) = pending.pop() {
                return Some(Ok::<_, BoxError>(spawn(move || format!("processed {t}"))));
            }
            match race.join() {
                Ok(mut tasks) => {
                    tasks.reverse();
                    pending = tasks;
                }
                Err(e) if e.is_empty() => return None,
                Err(e) => return Some(Err(e.into())),
            }
        });
        let mut results = all(concurrent(items)).join().unwrap();
        results.sort();
        for x in results {
            r.push(x);
        }
        drop(users);
    })
    .unwrap();
    rec.assert_events(&["processed a", "processed b", "processed c"]);
}
