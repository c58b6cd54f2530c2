//! `fs::watch` (D-31): created, modified, renamed and removed entries with
//! their names, read in a loop; a wait bounded by `until`; the watcher as
//! an awaitable; the end of the watch; the bounded queue.

use std::cell::RefCell;
use std::io::{self, Write};
use std::path::PathBuf;
use std::rc::Rc;

use async_std_api::fs::{self, WatchEvent, Watcher};
use async_std_api::{run, spawn, timeout, Awaitable};

use tests::support::{join_cancelled, yield_until_waiting};

use crate::scratch::Scratch;

/// Reads events until one satisfies `want`, returning it and the ones
/// skipped before it. The wait is bounded (generously): a missing event
/// fails the test instead of hanging it.
#[track_caller]
fn next_matching(w: &Watcher, want: impl Fn(&WatchEvent) -> bool) -> (WatchEvent, Vec<WatchEvent>) {
    let deadline = timeout(10_000);
    let mut skipped = Vec::new();
    loop {
        match w.next_until(&deadline) {
            Some(Ok(ev)) if want(&ev) => return (ev, skipped),
            Some(Ok(ev)) => skipped.push(ev),
            Some(Err(e)) => panic!("no matching event ({}): {e}", tail(&skipped)),
            None => panic!("the watch ended ({})", tail(&skipped)),
        }
    }
}

/// The last few of `events`, for a failure message.
fn tail(events: &[WatchEvent]) -> String {
    let from = events.len().saturating_sub(5);
    format!("{} skipped, ending {:?}", events.len(), &events[from..])
}

/// The events that arrive until none has for 50 ms: what is still on its
/// way from earlier steps (a quiet period, not a synchronisation).
fn drain_quiet(w: &Watcher) -> Vec<WatchEvent> {
    let mut late = Vec::new();
    while let Some(Ok(ev)) = w.next_until(&timeout(50)) {
        late.push(ev);
    }
    late
}

/// `fs::watch(path)`, or `None` on a third party's reactor without
/// filesystem watches (`ASYNC_REACTOR` a path, such as reactor-c's): its
/// error must be `Unsupported` naming the capability, and the test ends
/// there. The built-in reactors have the capability, so on them an
/// `Unsupported` error fails the test.
#[track_caller]
fn watch(path: &std::path::Path) -> io::Result<Option<Watcher>> {
    let third_party = std::env::var("ASYNC_REACTOR").is_ok_and(|r| r.contains('/'));
    match fs::watch(path) {
        Err(e) if e.kind() == io::ErrorKind::Unsupported && third_party => {
            let msg = e.to_string();
            assert!(
                msg.contains("AA_CAP_FS_WATCH") && msg.contains("reactor \""),
                "{msg}"
            );
            Ok(None)
        }
        other => other.map(Some),
    }
}

fn name(s: &str) -> PathBuf {
    PathBuf::from(s)
}

#[test]
fn d31_a_watcher_sees_creation_modification_rename_and_removal_with_names() {
    let dir = Scratch::new("watch");
    let root = dir.path().to_owned();
    run(move || -> io::Result<()> {
        let Some(w) = watch(&root)? else {
            return Ok(());
        };
        assert_eq!(w.path(), root);

        fs::write(root.join("a.txt"), "1")?;
        let (ev, skipped) = next_matching(&w, |e| matches!(e, WatchEvent::Created(_)));
        assert_eq!(ev, WatchEvent::Created(name("a.txt")));
        assert!(skipped.is_empty(), "{skipped:?}");
        // Writing and closing it: a modification (or two, if the reader
        // took the first before the second arrived).
        let (ev, _) = next_matching(&w, |e| matches!(e, WatchEvent::Modified(_)));
        assert_eq!(ev, WatchEvent::Modified(name("a.txt")));

        let late = drain_quiet(&w);
        assert!(
            late.iter()
                .all(|e| *e == WatchEvent::Modified(name("a.txt"))),
            "{late:?}"
        );
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(root.join("a.txt"))?;
        f.write_all(b"2")?;
        let (ev, skipped) = next_matching(&w, |_| true);
        assert_eq!(ev, WatchEvent::Modified(name("a.txt")));
        assert!(skipped.is_empty());
        drop(f);

        fs::rename(root.join("a.txt"), root.join("b.txt"))?;
        let (ev, skipped) = next_matching(&w, |e| !matches!(e, WatchEvent::Modified(_)));
        assert_eq!(
            ev,
            WatchEvent::Renamed {
                from: name("a.txt"),
                to: name("b.txt")
            },
            "skipped {skipped:?}"
        );
        assert_eq!(ev.name(), Some(name("b.txt").as_path()));

        fs::remove_file(root.join("b.txt"))?;
        let (ev, skipped) = next_matching(&w, |e| !matches!(e, WatchEvent::Modified(_)));
        assert_eq!(
            ev,
            WatchEvent::Removed(name("b.txt")),
            "skipped {skipped:?}"
        );

        // Nothing else is pending.
        let left: Vec<_> = std::iter::from_fn(|| w.try_next()).collect();
        assert!(
            left.iter().all(|e| matches!(e, WatchEvent::Modified(_))),
            "{left:?}"
        );
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_next_until_bounds_the_wait_and_the_watcher_stays_usable() {
    let dir = Scratch::new("watch-until");
    let root = dir.path().to_owned();
    run(move || -> io::Result<()> {
        let Some(w) = watch(&root)? else {
            return Ok(());
        };
        let err = w.next_until(&timeout(20)).expect("not ended").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(
            err.to_string(),
            format!(
                "no change under {} before the until trigger completed",
                root.display()
            )
        );
        fs::create_dir(root.join("sub"))?;
        let mut w = w;
        let ev = w.next().expect("not ended")?;
        assert_eq!(ev, WatchEvent::Created(name("sub")));
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_a_watcher_is_an_awaitable_that_completes_at_the_first_change() {
    let dir = Scratch::new("watch-await");
    let root = dir.path().to_owned();
    run(move || -> io::Result<()> {
        let Some(w) = watch(&root)? else {
            return Ok(());
        };
        assert!(!w.is_completed());
        let sleeper = spawn(|| async_std_api::delay(60_000));
        let r = root.clone();
        spawn(move || fs::write(r.join("poke"), ""));
        // The join is bounded by the first change in the directory.
        let err = sleeper.wait_until(&w).unwrap_err();
        assert!(err.is_await_cancelled(), "{err}");
        assert!(w.is_completed());
        sleeper.cancel();
        assert_eq!(w.try_next(), Some(WatchEvent::Created(name("poke"))));
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_the_iteration_ends_when_the_watched_directory_is_removed() {
    let dir = Scratch::new("watch-end");
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("x"), "").unwrap();
    run(move || -> io::Result<()> {
        let Some(w) = watch(&sub)? else {
            return Ok(());
        };
        fs::remove_dir_all(&sub)?;
        let events: Vec<WatchEvent> = (&w).collect::<io::Result<_>>()?;
        assert!(
            events.contains(&WatchEvent::Removed(name("x"))),
            "{events:?}"
        );
        assert_eq!(
            events.last(),
            Some(&WatchEvent::Removed(name(""))),
            "{events:?}"
        );
        // Ended for good.
        assert!((&w).next().is_none());
        assert!(w.next_until(&timeout(1)).is_none());
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_changes_beyond_the_queue_become_one_overflow_event() {
    let dir = Scratch::new("watch-overflow");
    let root = dir.path().to_owned();
    run(move || -> io::Result<()> {
        let Some(w) = watch(&root)? else {
            return Ok(());
        };
        // A second watch of the directory, read at every pass, tells when
        // the reactor has delivered everything (it gets each change right
        // after `w` does); `w` itself is not read until then.
        let probe = fs::watch(&root)?;
        // 1,500 creations while nobody reads, each a creation and a close
        // after writing: 3,000 changes for a queue of 1,024.
        for i in 0..1500 {
            std::fs::File::create(root.join(format!("f{i:04}")))?;
        }
        let deadline = timeout(10_000);
        'delivered: loop {
            while let Some(ev) = probe.try_next() {
                // The last creation, or a loss (then `w`, never read, lost
                // at least as much).
                if ev == WatchEvent::Created(name("f1499")) || ev == WatchEvent::Overflow {
                    break 'delivered;
                }
            }
            assert!(!deadline.is_completed(), "{} queued", w.queued());
            async_std_api::delay(1)?;
        }
        assert_eq!(w.queued(), 1024);
        let events: Vec<WatchEvent> = std::iter::from_fn(|| w.try_next()).collect();
        assert_eq!(events.len(), 1025, "a full queue, then the marker");
        assert_eq!(events.last(), Some(&WatchEvent::Overflow));
        assert_eq!(events[0], WatchEvent::Created(name("f0000")));
        assert!(!events[..1024].contains(&WatchEvent::Overflow));
        // The watch goes on after an overflow, once the changes the reactor
        // had not delivered yet (if any: more losses) are read.
        drain_quiet(&w);
        fs::write(root.join("after"), "")?;
        let (_, skipped) = next_matching(&w, |e| *e == WatchEvent::Created(name("after")));
        assert!(skipped.is_empty(), "{skipped:?}");
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_a_watched_file_reports_its_own_changes_with_an_empty_name() {
    let dir = Scratch::new("watch-file");
    let path = dir.join("f");
    std::fs::write(&path, "x").unwrap();
    run(move || -> io::Result<()> {
        let Some(w) = watch(&path)? else {
            return Ok(());
        };
        assert_eq!(w.path(), path);
        fs::OpenOptions::new()
            .append(true)
            .open(&path)?
            .write_all(b"y")?;
        let (ev, _) = next_matching(&w, |_| true);
        assert_eq!(ev, WatchEvent::Modified(name("")));
        fs::remove_file(&path)?;
        let rest: Vec<WatchEvent> = (&w).collect::<io::Result<_>>()?;
        assert_eq!(
            rest.last(),
            Some(&WatchEvent::Removed(name(""))),
            "{rest:?}"
        );
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_a_cancelled_reader_takes_no_event_and_the_watcher_stays_usable() {
    let dir = Scratch::new("watch-cancel");
    let root = dir.path().to_owned();
    run(move || -> io::Result<()> {
        let Some(w) = watch(&root)? else {
            return Ok(());
        };
        let w = Rc::new(w);
        let got: Rc<RefCell<Option<io::Error>>> = Rc::default();
        let (rw, g) = (w.clone(), got.clone());
        let reader = spawn(move || {
            let r = (&*rw).next().expect("not ended");
            *g.borrow_mut() = r.err();
        });
        yield_until_waiting(&[&reader.coroutine()]);
        reader.cancel();
        join_cancelled(reader);
        let err = got.take().expect("the reader got an error");
        assert!(async_std_api::io::cancelled(&err).is_some(), "{err}");
        fs::write(root.join("later"), "")?;
        let (ev, skipped) = next_matching(&w, |_| true);
        assert_eq!(ev, WatchEvent::Created(name("later")));
        assert!(skipped.is_empty());
        Ok(())
    })
    .unwrap()
    .unwrap();
}

#[test]
fn d31_watching_a_missing_path_is_not_found_naming_it() {
    run(|| {
        let missing = std::path::Path::new("/no/such/dir/for/fs-watch");
        let err = match watch(missing) {
            Ok(None) => return, // no filesystem watches: said above
            Ok(Some(_)) => panic!("watching a missing path succeeded"),
            Err(e) => e,
        };
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            err.to_string(),
            "cannot watch /no/such/dir/for/fs-watch: No such file or directory (os error 2)"
        );
    })
    .unwrap();
}
