//! `ScopeProvider`, `SpawnStrategy` and `hi_priority` (R-HP1).

use std::cell::RefCell;

use async_std_api::{
    current_scope, hi_priority, hi_priority_in, run, spawn, spawn_in, suspend, Coroutine, Scope,
    ScopeProvider, ScopeRef, SpawnOptions, SpawnStrategy,
};
use tests::support::Recorder;

/// Order-dependent (FIFO): the RFC's expected output is a scheduling order.
#[test]
fn fifo_r_hp1_hi_priority_runs_first() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let (a, b) = (r.clone(), r.clone());
        spawn(move || a.push("normal priority"));
        let h = spawn_in(&hi_priority(), move || b.push("high priority")).unwrap();
        assert!(h.coroutine().is_hi_priority());
        suspend().unwrap();
    })
    .unwrap();
    rec.assert_events(&["high priority", "normal priority"]);
}

#[test]
fn r_hp1_hi_priority_spawns_in_the_current_or_the_given_scope() {
    run(|| {
        let scope = Scope::new();
        let in_current = spawn_in(&hi_priority(), || current_scope().id()).unwrap();
        let in_scope = spawn_in(&hi_priority_in(&scope), || current_scope().id()).unwrap();
        assert_eq!(in_current.join().unwrap(), current_scope().id());
        assert_eq!(in_scope.join().unwrap(), scope.id());
        assert!(!spawn(|| ()).coroutine().is_hi_priority());
    })
    .unwrap();
}

/// The RFC's `CustomTaskGroup` with `afterCoroutineEnqueue`, and the order
/// of every hook.
struct Tracing {
    scope: Scope,
    rec: Recorder,
    seen: RefCell<Vec<Coroutine>>,
}

impl ScopeProvider for Tracing {
    fn provide_scope(&self) -> Option<ScopeRef> {
        self.rec.push("provide_scope");
        Some(ScopeRef::clone(&self.scope))
    }
}

impl SpawnStrategy for Tracing {
    fn spawn_options(&self, scope: &ScopeRef) -> SpawnOptions {
        self.rec.push(format!(
            "spawn_options in {}",
            scope.id() == self.scope.id()
        ));
        SpawnOptions::new()
    }
    fn before_coroutine_enqueue(&self, c: &Coroutine, scope: &ScopeRef) {
        self.rec.push(format!(
            "before: started={} queued={} in scope={}",
            c.is_started(),
            c.is_queued(),
            scope.coroutines().contains(c)
        ));
    }
    fn after_coroutine_enqueue(&self, c: &Coroutine, _scope: &ScopeRef) {
        self.rec.push(format!(
            "after: started={} queued={}",
            c.is_started(),
            c.is_queued()
        ));
        self.seen.borrow_mut().push(c.clone());
    }
}

#[test]
fn spawn_strategy_hooks_run_in_order_around_the_enqueue() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let group = Tracing {
            scope: Scope::new(),
            rec: r.clone(),
            seen: RefCell::default(),
        };
        let r1 = r.clone();
        let h = spawn_in(&group, move || r1.push("body")).unwrap();
        r.push("spawn_in returned");
        assert_eq!(*group.seen.borrow(), [h.coroutine()]);
        h.join().unwrap();
    })
    .unwrap();
    rec.assert_events(&[
        "provide_scope",
        "spawn_options in true",
        "before: started=false queued=false in scope=true",
        "after: started=false queued=true",
        "spawn_in returned",
        "body",
    ]);
}

struct CurrentScope;

impl ScopeProvider for CurrentScope {
    fn provide_scope(&self) -> Option<ScopeRef> {
        None
    }
}

impl SpawnStrategy for CurrentScope {}

#[test]
fn a_provider_without_a_scope_means_the_current_one() {
    run(|| {
        let scope = Scope::new();
        let h = spawn_in(&scope, || {
            spawn_in(&CurrentScope, || current_scope().id())
                .unwrap()
                .join()
                .unwrap()
        })
        .unwrap();
        assert_eq!(h.join().unwrap(), scope.id());
    })
    .unwrap();
}

struct Exploding(Recorder);

impl ScopeProvider for Exploding {
    fn provide_scope(&self) -> Option<ScopeRef> {
        None
    }
}

impl SpawnStrategy for Exploding {
    fn before_coroutine_enqueue(&self, c: &Coroutine, _scope: &ScopeRef) {
        let r = self.0.clone();
        c.on_finally(move || r.push("finally of the never-run coroutine"));
        panic!("hook failed");
    }
}

struct DropFlag(Recorder);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.push("captures dropped");
    }
}

#[test]
fn a_panicking_hook_cancels_the_coroutine_before_it_starts() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let flag = DropFlag(r.clone());
        let r1 = r.clone();
        let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            spawn_in(&Exploding(r.clone()), move || {
                let _keep = &flag;
                r1.push("body ran");
            })
        }));
        assert!(p.is_err());
        r.push("panic reached the caller");
        suspend().unwrap();
    })
    .unwrap();
    rec.assert_events(&[
        "panic reached the caller",
        "captures dropped",
        "finally of the never-run coroutine",
    ]);
}
