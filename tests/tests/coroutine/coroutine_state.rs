//! State queries and introspection (R-CO2, R-T1).

use async_std_api::{current, delay, run, spawn, Coroutine};
use tests::support::{yield_until, Recorder};

#[test]
fn state_queries_follow_the_lifecycle() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        let h = spawn(move || {
            let me = current();
            r1.push(format!("inside: running={}", me.is_running()));
            delay(20).unwrap();
        });
        let c = h.coroutine();
        r.push(format!(
            "spawned: started={} queued={} suspended={} finished={}",
            c.is_started(),
            c.is_queued(),
            c.is_suspended(),
            c.is_finished()
        ));
        yield_until(|| c.is_suspended());
        r.push(format!(
            "waiting: started={} queued={} suspended={} running={}",
            c.is_started(),
            c.is_queued(),
            c.is_suspended(),
            c.is_running()
        ));
        h.join().unwrap();
        r.push(format!(
            "joined: finished={} suspended={} cancelled={}",
            c.is_finished(),
            c.is_suspended(),
            c.is_cancelled()
        ));
    })
    .unwrap();
    rec.assert_events(&[
        "spawned: started=false queued=true suspended=false finished=false",
        "inside: running=true",
        "waiting: started=true queued=false suspended=true running=false",
        "joined: finished=true suspended=false cancelled=false",
    ]);
}

#[test]
fn spawn_location_is_the_callers_line() {
    run(|| {
        let line = line!() + 1;
        let c = spawn(|| ()).coroutine();
        let loc = c.spawn_location();
        assert_eq!(loc.file(), file!());
        assert_eq!(loc.line(), line);
        c.wait().unwrap();
    })
    .unwrap();
}

#[test]
fn coroutine_ids_are_unique_and_display_as_numbers() {
    run(|| {
        let a = spawn(|| ());
        let b = spawn(|| ());
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id().to_string(), a.id().as_u64().to_string());
        assert_ne!(a.id().as_u64(), 0);
        let main: Coroutine = current();
        assert_eq!(main, current());
        assert_ne!(main, a.coroutine());
    })
    .unwrap();
}
