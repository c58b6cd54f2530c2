//! `await <combinator> until <trigger>` (R-AU1, R-AU3, D-7, D-20).

use async_std_api::combinators::{all, any, any_of, capture_errors, CombineErrorKind};
use async_std_api::{current, delay, run, spawn, timeout, TaskGroup};
use tests::support::{yield_until, Recorder};

#[test]
fn r_au1_all_until_a_timeout_ends_await_cancelled_and_the_inputs_go_on() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        // The slow input waits for a gate opened only after the await
        // ended: the timeout comes first whatever the load.
        let (gate, wait) = async_std_api::sync::channel::<()>(1);
        let fast = spawn(|| 1);
        let slow = spawn(move || {
            let _ = wait.recv();
            r1.push("slow finished");
            2
        });
        let s = slow.coroutine();
        let err = all([fast, slow]).until(timeout(10)).join().unwrap_err();
        drop(gate);
        assert_eq!(err.kind(), CombineErrorKind::AwaitCancelled);
        assert_eq!(
            err.to_string(),
            "waiting for a combinator ended: the until trigger completed first"
        );
        r.push("await cancelled");
        // R-AU3, D-7: the slow input was not cancelled.
        assert!(!s.is_cancellation_requested());
        s.wait().unwrap();
        r.push("joined slow");
    })
    .unwrap();
    rec.assert_events(&["await cancelled", "slow finished", "joined slow"]);
}

#[test]
fn d20_a_ready_outcome_beats_an_expired_trigger_and_own_cancellation_beats_both() {
    run(|| {
        let done = spawn(|| "done");
        yield_until(|| done.is_finished());
        let t = timeout(0);
        assert!(t.is_expired());
        // The outcome is already there: it wins over the trigger.
        let mut trigger = any([done]).until(t);
        assert_eq!(trigger.join().unwrap(), "done");
        // Nothing left but the expired trigger: await-cancelled, at once.
        let slow = spawn(|| delay(60_000).is_ok());
        let c = slow.coroutine();
        let err = any_of(1, [slow]).until(timeout(0)).join().unwrap_err();
        assert_eq!(err.kind(), CombineErrorKind::AwaitCancelled);
        // The caller's own cancellation beats an expired trigger.
        current().cancel_with("mine");
        let err = all([c.clone()]).until(timeout(0)).join().unwrap_err();
        assert_eq!(err.kind(), CombineErrorKind::Interrupted);
        assert_eq!(err.cancelled().and_then(|x| x.reason()), Some("mine"));
        c.cancel();
    })
    .unwrap();
}

#[test]
fn capture_errors_of_all_until_a_coroutine_trigger() {
    run(|| {
        let inputs = vec![
            spawn(|| delay(60_000).is_ok()),
            spawn(|| delay(60_000).is_ok()),
        ];
        let cs: Vec<_> = inputs.iter().map(|h| h.coroutine()).collect();
        let stop = spawn(|| delay(5).unwrap());
        let err = capture_errors(all(inputs).until(stop)).join().unwrap_err();
        assert_eq!(err.kind(), CombineErrorKind::AwaitCancelled);
        for c in &cs {
            assert!(!c.is_finished() && !c.is_cancellation_requested());
            c.cancel();
        }
    })
    .unwrap();
}

#[test]
fn r_au1_a_task_group_awaited_until_a_timeout_through_its_trigger() {
    run(|| {
        let group: TaskGroup<u32> = TaskGroup::new();
        let slow = group
            .spawn(|| delay(60_000).map(|_| 1).unwrap_or(0))
            .unwrap();
        let err = all([group.all(false, false)])
            .until(timeout(5))
            .join()
            .unwrap_err();
        assert_eq!(err.kind(), CombineErrorKind::AwaitCancelled);
        assert!(!slow.is_finished() && !slow.is_cancellation_requested());
        group.cancel("done waiting");
    })
    .unwrap();
}
