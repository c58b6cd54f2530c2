//! Spawning, awaiting, all, race, first result, results by ordinal.

use std::time::{Duration, Instant};

use async_std_api::{
    current_scope, delay, run, spawn, spawn_in, suspend, JoinError, Scope, TaskGroup,
    TaskGroupError, TaskGroupErrorKind,
};
use tests::support::{join_cancelled, yield_until, Recorder};

#[test]
fn r_tg1_tasks_run_in_the_groups_scope_and_their_spawns_stay_out_of_the_group() {
    run(|| {
        let group = TaskGroup::<u32>::builder().capture_results(true).build();
        let scope = group.scope().clone();
        let s2 = scope.clone();
        group
            .spawn(move || {
                // Implicit: in the scope, not in the group.
                spawn(|| delay(60_000).unwrap_or(()));
                assert_eq!(current_scope(), s2);
                1
            })
            .unwrap();
        let results = group.join().unwrap();
        assert_eq!(results.into_iter().collect::<Vec<_>>(), [(0, 1)]);
        // The implicit coroutine still runs in the scope; the group is done.
        assert!(group.is_finished());
        assert_eq!(scope.coroutines().len(), 1);
        scope.cancel();
    })
    .unwrap();
}

#[test]
fn r_tg1_two_groups_share_one_scope_and_spawn_in_accepts_a_group() {
    run(|| {
        let scope = Scope::new();
        let g1 = TaskGroup::<()>::with_scope(&scope);
        let g2 = TaskGroup::<()>::with_scope(&scope);
        g1.spawn(|| ()).unwrap();
        // The group as a SpawnStrategy: an explicit task whose value is the
        // JoinHandle's.
        let h = spawn_in(&g2, || 5).unwrap();
        assert_eq!(g2.running(), 1);
        assert_eq!(h.coroutine().scope(), Some(ScopeRefOf::of(&scope)));
        assert_eq!(h.join().unwrap(), 5);
        g1.join().unwrap();
        assert!(g2.join().unwrap().is_empty());
        assert!(g2.is_finished());
    })
    .unwrap();
}

struct ScopeRefOf;
impl ScopeRefOf {
    fn of(s: &Scope) -> async_std_api::ScopeRef {
        async_std_api::ScopeRef::clone(s)
    }
}

#[test]
fn r_tg2_r_co7_join_waits_only_for_explicit_tasks_and_can_be_awaited_again() {
    run(|| {
        let group = TaskGroup::builder().capture_results(true).build();
        group
            .spawn(|| {
                spawn(|| delay(60_000).unwrap_or(()));
                "a"
            })
            .unwrap();
        let first = group.join().unwrap();
        assert_eq!(first.into_values().collect::<Vec<_>>(), ["a"]);
        // R-CO7: a group changes state many times.
        group
            .spawn(|| {
                delay(5).unwrap();
                "b"
            })
            .unwrap();
        assert_eq!(group.running(), 1);
        let second = group.join().unwrap();
        assert_eq!(second.into_values().collect::<Vec<_>>(), ["a", "b"]);
        group.dispose();
    })
    .unwrap();
}

#[test]
fn r_tg2_without_capture_results_join_returns_no_values() {
    run(|| {
        let group = TaskGroup::new();
        group.spawn(|| 1).unwrap();
        assert!(group.join().unwrap().is_empty());
    })
    .unwrap();
}

#[test]
fn r_tg2_an_awaited_task_failure_is_consumed_by_the_await() {
    // The failure goes to the group's await, not to the scope: run ends
    // normally (D-3 applied to the group).
    let r = run(|| {
        let group = TaskGroup::<u32>::new();
        group.spawn(|| panic!("boom")).unwrap();
        group
            .spawn(|| {
                delay(5).unwrap();
                2
            })
            .unwrap();
        let e = group.join().unwrap_err();
        assert_eq!(e.kind(), TaskGroupErrorKind::Failed);
        assert!(!group.scope().is_cancelled(), "the scope was not cancelled");
        e.to_string()
    })
    .unwrap();
    assert!(
        r.starts_with("task group failed: task 0: coroutine "),
        "{r}"
    );
    assert!(r.ends_with(" panicked: boom"), "{r}");
}

#[test]
fn p12_one_failure_or_several_have_the_same_shape() {
    run(|| {
        let one = TaskGroup::<()>::new();
        one.spawn_try(|| Err::<(), _>("e0")).unwrap();
        let e = one.join().unwrap_err();
        assert!(e.is_failed());
        assert_eq!(e.errors().len(), 1);
        assert_eq!(
            e.to_string(),
            format!("task group failed: task 0: {}", e.errors()[&0])
        );

        let three = TaskGroup::<()>::new();
        for i in 0..3 {
            three
                .spawn_try(move || Err::<(), _>(format!("e{i}")))
                .unwrap();
        }
        let e = three.join().unwrap_err();
        assert!(e.is_failed());
        assert_eq!(e.errors().keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
        assert!(e.to_string().ends_with(": e0 (and 2 more errors)"), "{e}");
    })
    .unwrap();
}

#[test]
fn r_tg3_all_without_null_on_fail_leaves_the_failed_ordinal_out() {
    run(|| {
        let group = TaskGroup::builder().capture_results(true).build();
        group.spawn(|| 10).unwrap();
        group.spawn_try(|| Err::<i32, _>("bad")).unwrap();
        group.spawn(|| 30).unwrap();
        let all = group.all(true, false).join().unwrap();
        assert_eq!(
            all.into_iter().collect::<Vec<_>>(),
            [(0, Some(10)), (2, Some(30))]
        );
        let errors = group.errors();
        assert_eq!(errors.keys().copied().collect::<Vec<_>>(), [1]);
        assert_eq!(
            errors[&1].to_string(),
            format!("coroutine {} failed: bad", errors[&1].id())
        );
        // Without ignore_errors, all fails like join.
        assert!(group.all(false, false).join().unwrap_err().is_failed());
    })
    .unwrap();
}

#[test]
fn r_tg3_dispose_results_clears_and_restarts_ordinals_at_0() {
    run(|| {
        let group = TaskGroup::builder().capture_results(true).build();
        group.spawn(|| 'a').unwrap();
        group.spawn_try(|| Err::<char, _>("x")).unwrap();
        assert!(group.join().is_err());
        group.dispose_results();
        assert!(group.errors().is_empty());
        group.spawn(|| 'c').unwrap();
        let r = group.join().unwrap();
        assert_eq!(r.into_iter().collect::<Vec<_>>(), [(0, 'c')]);
    })
    .unwrap();
}

#[test]
fn r_tg4_race_gives_the_next_finished_task_and_takes_its_value() {
    run(|| {
        let group = TaskGroup::builder().capture_results(true).build();
        let release = std::rc::Rc::new(std::cell::Cell::new(0));
        for i in 0..3 {
            let r = release.clone();
            group
                .spawn(move || {
                    yield_until(|| r.get() > i);
                    i
                })
                .unwrap();
        }
        let race = group.race(false);
        // Release them one by one: the race follows the finishes.
        let mut got = Vec::new();
        for _ in 0..3 {
            release.set(release.get() + 1);
            got.push(race.join().unwrap());
        }
        assert_eq!(got, [0, 1, 2]);
        // Taken out of storage: the group's results are empty now.
        assert!(group.all(false, false).join().unwrap().is_empty());
        assert!(race.join().unwrap_err().is_empty());
        assert_eq!(
            race.join().unwrap_err().to_string(),
            "task group has no task left to race"
        );
    })
    .unwrap();
}

#[test]
fn r_tg4_first_result_stays_the_same_until_dispose_results() {
    run(|| {
        let group = TaskGroup::new();
        let first = group.first_result(true);
        group.spawn_try(|| Err::<&str, _>("down")).unwrap();
        group.spawn(|| "one").unwrap();
        assert_eq!(first.join().unwrap(), "one");
        group.spawn(|| "two").unwrap();
        assert!(group.join().is_err(), "task 0 failed");
        assert_eq!(first.join().unwrap(), "one");
        group.dispose_results();
        group.spawn(|| "three").unwrap();
        assert_eq!(first.join().unwrap(), "three");
        // Without ignore_errors the failed one counts.
        let strict = TaskGroup::<&str>::new();
        let f = strict.first_result(false);
        strict.spawn_try(|| Err::<&str, _>("down")).unwrap();
        let e = f.join().unwrap_err();
        assert_eq!(e.kind(), TaskGroupErrorKind::Task);
        assert_eq!(e.task_error().unwrap().0, 0);
        let id = e.task_error().unwrap().1.id();
        assert_eq!(
            e.to_string(),
            format!("task 0 of the task group: coroutine {id} failed: down")
        );
    })
    .unwrap();
}

#[test]
fn r_tg2_a_task_awaiting_its_own_group_gets_an_error() {
    run(|| {
        let group = std::rc::Rc::new(TaskGroup::<String>::new());
        let g = std::rc::Rc::downgrade(&group);
        group
            .spawn(move || g.upgrade().unwrap().join().unwrap_err().to_string())
            .unwrap();
        let race = group.race(false);
        assert_eq!(
            race.join().unwrap(),
            "task group awaited from one of its tasks: it would wait forever"
        );
    })
    .unwrap();
}

#[test]
fn r_tg2_d25_a_cancelled_waiter_is_interrupted_and_the_tasks_go_on() {
    run(|| {
        let group = std::rc::Rc::new(TaskGroup::<u8>::new());
        group
            .spawn(|| delay(60_000).map(|_| 1).unwrap_or(0))
            .unwrap();
        let g = group.clone();
        let got: std::rc::Rc<std::cell::RefCell<Option<TaskGroupError>>> = Default::default();
        let slot = got.clone();
        let waiter = spawn(move || *slot.borrow_mut() = Some(g.join().unwrap_err()));
        let c = waiter.coroutine();
        yield_until(|| c.is_suspended());
        c.cancel();
        // The waiter caught its cancellation and returned: cancelled (D-25).
        let own = join_cancelled(waiter);
        let e = got.borrow_mut().take().expect("the group's join ended");
        assert!(e.is_interrupted());
        assert_eq!(e.cancelled(), Some(&own));
        assert_eq!(group.running(), 1);
        group.dispose();
    })
    .unwrap();
}

#[test]
fn spawning_into_a_group_with_100000_live_tasks_costs_about_the_same() {
    fn cost(group: &TaskGroup<()>, n: usize) -> Duration {
        let mut best = Duration::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..n {
                group.spawn(|| ()).unwrap();
            }
            best = best.min(t.elapsed());
        }
        best
    }
    run(|| {
        let big = TaskGroup::<()>::new();
        for _ in 0..100_000 {
            big.spawn(|| ()).unwrap();
        }
        assert_eq!(big.running(), 100_000);
        let empty = TaskGroup::<()>::new();
        let into_empty = cost(&empty, 1_000);
        let into_big = cost(&big, 1_000);
        assert!(
            into_big < into_empty * 10 + Duration::from_millis(5),
            "into the big group: {into_big:?}, into the empty one: {into_empty:?}"
        );
        // Finishing is O(1) per task too: all of them run and leave.
        big.join().unwrap();
        empty.join().unwrap();
        assert!(big.is_finished());
        let _ = suspend();
    })
    .unwrap();
}

#[test]
fn r_tg4_race_does_not_cancel_the_other_tasks_d7() {
    run(|| {
        let rec = Recorder::new();
        let group = TaskGroup::new();
        let race = group.race(false);
        let r = rec.clone();
        group
            .spawn(move || {
                delay(20).unwrap();
                r.push("slow finished");
                "slow"
            })
            .unwrap();
        group.spawn(|| "fast").unwrap();
        assert_eq!(race.join().unwrap(), "fast");
        assert_eq!(group.running(), 1);
        assert_eq!(race.join().unwrap(), "slow");
        rec.assert_events(&["slow finished"]);
        let _: Option<JoinError> = None;
    })
    .unwrap();
}

#[test]
fn ref19_a_concurrency_limit_runs_at_most_n_and_queues_the_rest_in_order() {
    run(|| {
        let group = TaskGroup::builder()
            .capture_results(true)
            .concurrency(2)
            .build();
        let now = std::rc::Rc::new(std::cell::Cell::new(0));
        let peak = std::rc::Rc::new(std::cell::Cell::new(0));
        for i in 0..6u64 {
            let (now, peak) = (now.clone(), peak.clone());
            group
                .queue(move || {
                    now.set(now.get() + 1);
                    peak.set(peak.get().max(now.get()));
                    delay(1 + (i % 3)).unwrap();
                    now.set(now.get() - 1);
                    i
                })
                .unwrap();
        }
        // Queued closures have no coroutine yet.
        assert_eq!((group.running(), group.queued()), (2, 4));
        assert_eq!(group.scope().coroutines().len(), 2);
        let r = group.join().unwrap();
        assert_eq!(peak.get(), 2);
        // Ordinals in queue order, whatever the finishing order.
        assert_eq!(
            r.into_iter().collect::<Vec<_>>(),
            (0..6u64).map(|i| (i as usize, i)).collect::<Vec<_>>()
        );
    })
    .unwrap();
}

#[test]
fn ref19_queued_tasks_never_start_once_the_group_is_cancelled() {
    run(|| {
        let started = std::rc::Rc::new(std::cell::Cell::new(0));
        let group = TaskGroup::<()>::builder().concurrency(1).build();
        for _ in 0..3 {
            let s = started.clone();
            group
                .queue(move || {
                    s.set(s.get() + 1);
                    let _ = delay(60_000);
                })
                .unwrap();
        }
        yield_until(|| started.get() == 1);
        group.cancel("enough");
        assert_eq!(group.queued(), 0);
        let e = group.join().unwrap_err();
        assert!(e.is_cancelled());
        assert_eq!(started.get(), 1, "the queued ones never started");
        assert_eq!(
            group.queue(|| ()).unwrap_err().kind(),
            TaskGroupErrorKind::Closed
        );
    })
    .unwrap();
}
