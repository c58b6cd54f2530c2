//! The RFC's TaskGroup examples with an expected output, as recorded
//! events.

use async_std_api::{delay, run, spawn, suspend, Scope, TaskGroup};
use tests::support::Recorder;

#[test]
fn rfc_merge_files_results_by_ordinal() {
    // mergeFiles: array_merge of await $taskGroup, in spawn order whatever
    // the order the reads finish in.
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let group = TaskGroup::builder().capture_results(true).build();
        for (i, file) in ["file1.txt", "file2.txt", "file3.txt"]
            .into_iter()
            .enumerate()
        {
            group
                .spawn(move || {
                    delay(30 - 10 * i as u64).unwrap();
                    format!("contents of {file}")
                })
                .unwrap();
        }
        for (k, v) in group.join().unwrap() {
            r.push(format!("{k}: {v}"));
        }
    })
    .unwrap();
    rec.assert_events(&[
        "0: contents of file1.txt",
        "1: contents of file2.txt",
        "2: contents of file3.txt",
    ]);
}

#[test]
fn rfc_all_ignore_errors_null_on_fail() {
    // var_dump(await $taskGroup->all(ignoreErrors: true, nullOnFail: true));
    // array(2) { [0]=> string(8) "result 1" [1]=> NULL }
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let group = TaskGroup::builder().capture_results(true).build();
        group.spawn(|| "result 1").unwrap();
        group.spawn_try(|| Err::<&str, _>("Error")).unwrap();
        for (k, v) in group.all(true, true).join().unwrap() {
            r.push(format!("[{k}] => {v:?}"));
        }
    })
    .unwrap();
    rec.assert_events(&["[0] => Some(\"result 1\")", "[1] => None"]);
}

#[test]
fn rfc_cancel_with_a_custom_message() {
    // Expected output: Task was cancelled: Custom cancellation message
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let group = TaskGroup::<()>::new();
        let t = group
            .spawn(move || {
                // `suspend` may return before the cancel; wait until it comes.
                let c = loop {
                    if let Err(c) = suspend() {
                        break c;
                    }
                };
                r.push(format!("Task was cancelled: {}", c.reason().unwrap()));
            })
            .unwrap();
        tests::support::yield_until(|| t.is_started());
        group.cancel("Custom cancellation message");
        let _ = group.join();
    })
    .unwrap();
    rec.assert_events(&["Task was cancelled: Custom cancellation message"]);
}

#[test]
fn rfc_r_tg6_caught_task_group_was_cancelled() {
    // Expected output: Caught exception: TaskGroup was cancelled at ...
    // The await's cancellation does not consume the failure (D-27): it goes
    // on to the group scope's parent. In the RFC's example nothing handles
    // it, so it would reach the global scope and start graceful shutdown,
    // which cancels the awaiter as well; here the example runs in a scope
    // whose handler logs it, as a server would.
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let server = Scope::new();
        let rh = r.clone();
        server
            .set_exception_handler(move |_, _, f| {
                rh.push(format!("handler: {}", f.panic_message().unwrap()));
                Ok(())
            })
            .unwrap();
        let group = TaskGroup::<()>::with_scope(&Scope::inherit_from(&server));
        group
            .spawn(|| {
                spawn(|| panic!("Error in coroutine"));
                let _ = delay(1000);
            })
            .unwrap();
        if let Err(e) = group.join() {
            if e.is_cancelled() {
                let text = e.to_string();
                r.push(format!("Caught exception: {}", &text[..24]));
            }
        }
    })
    .unwrap();
    rec.assert_events(&[
        "handler: Error in coroutine",
        "Caught exception: task group was cancelled",
    ]);
}

#[test]
fn rfc_race_fetch_first_successful() {
    // return await $taskGroup->race(ignoreErrors: true);
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let group = TaskGroup::<String>::new();
        // "b" is the slow host: it answers only once the race is decided,
        // so "c" wins however late the loop runs its timers.
        let (gate, wait) = async_std_api::sync::channel::<()>(1);
        let wait = std::rc::Rc::new(wait);
        for (host, ms, ok) in [("a", 1, false), ("b", 30, true), ("c", 10, true)] {
            let wait = wait.clone();
            group
                .spawn_try(
                    move || -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
                        delay(ms)?;
                        if host == "b" {
                            let _ = wait.recv();
                        }
                        if ok {
                            Ok(format!("response of {host}"))
                        } else {
                            Err(format!("Failed to fetch data from {host}").into())
                        }
                    },
                )
                .unwrap();
        }
        r.push(group.race(true).join().unwrap());
        drop(gate);
        // "a" failed at 1 ms; under a loaded loop its failure may be
        // recorded just after "c" answered.
        tests::support::yield_until(|| !group.errors().is_empty());
        r.push(format!(
            "errors: {:?}",
            group.errors().keys().collect::<Vec<_>>()
        ));
    })
    .unwrap();
    rec.assert_events(&["response of c", "errors: [0]"]);
}

#[test]
fn rfc_process_in_batches_with_dispose_results() {
    // processInBatches(['file1.txt', ..., 'file4.txt'], limit: 2)
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let files = ["file1.txt", "file2.txt", "file3.txt", "file4.txt"];
        let group = TaskGroup::builder().capture_results(true).build();
        let mut all: Vec<String> = Vec::new();
        let mut count = 0;
        for f in files {
            group.spawn(move || format!("contents of {f}")).unwrap();
            count += 1;
            if count >= 2 {
                let batch = group.join().unwrap();
                r.push(format!(
                    "batch ordinals {:?}",
                    batch.keys().collect::<Vec<_>>()
                ));
                all.extend(batch.into_values());
                group.dispose_results();
                count = 0;
            }
        }
        all.extend(group.join().unwrap().into_values());
        for line in all {
            r.push(line);
        }
    })
    .unwrap();
    rec.assert_events(&[
        "batch ordinals [0, 1]",
        "batch ordinals [0, 1]",
        "contents of file1.txt",
        "contents of file2.txt",
        "contents of file3.txt",
        "contents of file4.txt",
    ]);
}

#[test]
fn rfc_hierarchy_parent_awaits_child_group() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let parent = TaskGroup::<()>::new();
        let r2 = r.clone();
        parent
            .spawn(move || {
                let child = TaskGroup::<()>::with_scope(&async_std_api::Scope::inherit());
                let r3 = r2.clone();
                child.spawn(move || r3.push("child task")).unwrap();
                child.join().unwrap();
                r2.push("child group done");
            })
            .unwrap();
        parent.join().unwrap();
        r.push("parent group done");
    })
    .unwrap();
    rec.assert_events(&["child task", "child group done", "parent group done"]);
}

mod user_profile {
    //! The RFC's structured-concurrency example (getUserProfile): nested
    //! task groups and `until timeout(..)`.

    use std::collections::BTreeMap;

    use async_std_api::{delay, run, spawn, timeout, JoinError, Scope, TaskGroup, TaskGroupError};
    use tests::support::Recorder;

    type Profile = BTreeMap<&'static str, String>;

    fn with_timeout(key: &'static str, ms: u64, f: impl FnOnce() -> String + 'static) -> Profile {
        let v = match spawn(f).join_until(&timeout(ms)) {
            Ok(v) => v,
            Err(e) if e.is_await_cancelled() => "timeout".to_owned(),
            Err(e) => format!("error: {e}"),
        };
        Profile::from([(key, v)])
    }

    fn merge(results: BTreeMap<usize, Profile>) -> Profile {
        results.into_values().flatten().collect()
    }

    fn get_user_profile(user_id: u32, settings_fail: bool) -> Profile {
        let tasks = TaskGroup::<Profile>::builder()
            .capture_results(true)
            .build();
        let result = (|| -> Result<Profile, TaskGroupError> {
            tasks.spawn_try(move || {
                let u = spawn(move || {
                    delay(20).unwrap();
                    format!("user {user_id}")
                })
                .join()?;
                Ok::<_, JoinError>(Profile::from([("basic", u)]))
            })?;
            tasks.spawn_try(move || {
                let orders = TaskGroup::<Profile>::builder()
                    .scope(&Scope::inherit())
                    .capture_results(true)
                    .build();
                orders.spawn(|| {
                    with_timeout("orders", 2_000, || {
                        delay(30).unwrap();
                        "3 orders".to_owned()
                    })
                })?;
                orders.spawn(|| {
                    with_timeout("orders2", 50, || {
                        delay(60_000).ok();
                        "never".to_owned()
                    })
                })?;
                let merged = merge(orders.join()?);
                orders.scope().cancel();
                Ok::<_, TaskGroupError>(merged)
            })?;
            tasks.spawn_try(move || {
                let s = spawn(move || {
                    delay(10).unwrap();
                    if settings_fail {
                        panic!("settings service down");
                    }
                    "dark mode".to_owned()
                })
                .join()?;
                Ok::<_, JoinError>(Profile::from([("settings", s)]))
            })?;
            Ok(merge(tasks.join()?))
        })();
        result.unwrap_or_else(|e| Profile::from([("error", e.to_string())]))
    }

    #[test]
    fn rfc_user_profile_with_nested_groups_and_timeouts() {
        let rec = Recorder::new();
        let r = rec.clone();
        run(move || {
            let profile = spawn(|| get_user_profile(123, false)).join().unwrap();
            for (k, v) in profile {
                r.push(format!("{k}: {v}"));
            }
        })
        .unwrap();
        rec.assert_events(&[
            "basic: user 123",
            "orders: 3 orders",
            "orders2: timeout",
            "settings: dark mode",
        ]);
    }

    #[test]
    fn rfc_user_profile_reports_an_error_as_the_catch_does() {
        let rec = Recorder::new();
        let r = rec.clone();
        run(move || {
            let profile = spawn(|| get_user_profile(123, true)).join().unwrap();
            for (k, v) in profile {
                let v = if v.contains("settings service down") {
                    "settings service down".into()
                } else {
                    v
                };
                r.push(format!("{k}: {v}"));
            }
        })
        .unwrap();
        rec.assert_events(&["error: settings service down"]);
    }
}
