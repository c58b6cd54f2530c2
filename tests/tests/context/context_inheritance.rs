//! Inheritance along the scope tree (R-CX1, R-CX2): each scope's context
//! chains to its parent scope's; `find`/`get`/`has` walk the chain, the
//! `*_local` methods read one level (D-15); a child's slot shadows its
//! ancestors' (REF-23).

use async_std_api::{
    current_context, current_scope, global_scope, root_context, run, spawn, spawn_in, Scope,
};

#[test]
fn r_cx1_a_scope_context_is_made_with_the_scope_and_chained_to_its_parent() {
    run(|| {
        let parent = Scope::new();
        let child = Scope::inherit_from(&parent);
        let grandchild = Scope::inherit_from(&child);
        // One context per scope: every call gives the same one.
        assert!(child.context().ptr_eq(&child.context()));
        assert!(grandchild
            .context()
            .parent()
            .unwrap()
            .ptr_eq(&child.context()));
        assert!(child.context().parent().unwrap().ptr_eq(&parent.context()));
        // A Scope::new scope chains to the global context, which is the end.
        let global = global_scope().context();
        assert!(parent.context().parent().unwrap().ptr_eq(&global));
        assert!(global.parent().is_none());
        assert!(!child.context().ptr_eq(&parent.context()));
    })
    .unwrap();
}

#[test]
fn r_cx1_find_walks_from_the_current_context_to_the_root() {
    run(|| {
        global_scope().context().set("app", "global").unwrap();
        let server = Scope::new();
        server.context().set("server_id", 7u32).unwrap();
        let request = Scope::inherit_from(&server);
        let h = spawn_in(&request, || {
            let ctx = current_context();
            (
                *ctx.find::<u32>("server_id").unwrap().unwrap(),
                *ctx.find::<&str>("app").unwrap().unwrap(),
                ctx.find::<u32>("absent").unwrap().is_none(),
            )
        })
        .unwrap();
        assert_eq!(h.join().unwrap(), (7, "global", true));
    })
    .unwrap();
}

#[test]
fn d15_get_and_has_walk_the_parent_chain_like_find() {
    run(|| {
        let server = Scope::new();
        server.context().set("server_id", 7u32).unwrap();
        let request = Scope::inherit_from(&server);
        let ctx = request.context();
        assert!(ctx.has("server_id"));
        assert_eq!(*ctx.get::<u32>("server_id").unwrap(), 7);
    })
    .unwrap();
}

#[test]
fn d15_get_raises_key_missing_where_find_returns_none() {
    run(|| {
        let ctx = Scope::inherit().context();
        assert!(ctx.find::<u32>("nowhere").unwrap().is_none());
        let e = ctx.get::<u32>("nowhere").unwrap_err();
        assert!(e.is_key_missing() && !e.is_key_exists() && !e.is_wrong_type());
        assert_eq!(e.to_string(), "context key \"nowhere\" not found");
        assert!(!ctx.has("nowhere"));
    })
    .unwrap();
}

#[test]
fn d15_local_variants_read_one_level_only() {
    run(|| {
        let parent = Scope::new();
        parent.context().set("k", 1i32).unwrap();
        let ctx = Scope::inherit_from(&parent).context();
        assert!(!ctx.has_local("k"));
        assert!(ctx.find_local::<i32>("k").unwrap().is_none());
        let e = ctx.get_local::<i32>("k").unwrap_err();
        assert!(e.is_key_missing());
        assert_eq!(e.to_string(), "context key \"k\" not found");
        // The walking variants see it.
        assert!(ctx.has("k"));
        // At its own level, the local variants see it too.
        assert!(parent.context().has_local("k"));
        assert_eq!(*parent.context().get_local::<i32>("k").unwrap(), 1);
    })
    .unwrap();
}

#[test]
fn ref23_a_child_set_shadows_the_parent_slot_and_unset_reveals_it() {
    run(|| {
        let parent = Scope::new();
        parent.context().set("mode", "parent").unwrap();
        let child = Scope::inherit_from(&parent);
        // Set in the child is local: no KeyExists from the parent's slot.
        child.context().set("mode", "child").unwrap();
        assert_eq!(*child.context().get::<&str>("mode").unwrap(), "child");
        assert_eq!(*parent.context().get::<&str>("mode").unwrap(), "parent");
        assert!(child.context().unset("mode"));
        assert_eq!(*child.context().get::<&str>("mode").unwrap(), "parent");
        // Unset touches this level only.
        assert!(!child.context().unset("mode"));
        assert!(parent.context().has_local("mode"));
    })
    .unwrap();
}

#[test]
fn r_cx1_find_stops_at_the_nearest_slot_even_of_another_type() {
    run(|| {
        let parent = Scope::new();
        parent.context().set("k", 1u32).unwrap();
        let child = Scope::inherit_from(&parent);
        child.context().set("k", "text").unwrap();
        let e = child.context().find::<u32>("k").unwrap_err();
        assert!(e.is_wrong_type());
        assert_eq!(e.to_string(), "context key \"k\" holds &str, not u32");
    })
    .unwrap();
}

#[test]
fn r_cx1_values_set_after_spawn_are_seen_live_through_the_chain() {
    run(|| {
        let scope = Scope::new();
        let child = Scope::inherit_from(&scope);
        let h = spawn_in(&child, || {
            tests::support::yield_until(|| current_context().has("late"));
            *current_context().get::<i32>("late").unwrap()
        })
        .unwrap();
        // Set in the parent after the child coroutine was spawned: the
        // chain is live, not a copy made at spawn.
        scope.context().set("late", 5).unwrap();
        assert_eq!(h.join().unwrap(), 5);
    })
    .unwrap();
}

#[test]
fn r_cx2_current_context_is_the_current_scope_context() {
    run(|| {
        assert!(current_context().ptr_eq(&global_scope().context()));
        let scope = Scope::new();
        let s = scope.clone();
        let h = spawn_in(&scope, move || {
            current_context().ptr_eq(&s.context())
                && current_context().ptr_eq(&current_scope().context())
        })
        .unwrap();
        assert!(h.join().unwrap());
        // A plain spawn from main goes to the global scope, so its context.
        assert!(
            spawn(|| current_context().ptr_eq(&global_scope().context()))
                .join()
                .unwrap()
        );
    })
    .unwrap();
}

#[test]
fn r_cx2_root_context_is_the_top_of_the_hierarchy_or_the_global_context() {
    run(|| {
        // In the global scope: the global context.
        assert!(root_context().ptr_eq(&global_scope().context()));
        let server = Scope::new();
        let request = Scope::inherit_from(&server);
        let deeper = Scope::inherit_from(&request);
        let h = spawn_in(&deeper, root_context).unwrap();
        assert!(h.join().unwrap().ptr_eq(&server.context()));
        let h = spawn_in(&server, root_context).unwrap();
        assert!(h.join().unwrap().ptr_eq(&server.context()));
    })
    .unwrap();
}

#[test]
fn r_cx1_scope_values_are_dropped_with_the_scope() {
    let rec = tests::support::Recorder::new();
    let r = rec.clone();
    run(move || {
        let scope = Scope::new();
        scope
            .context()
            .set(
                "guard",
                super::context_slots::DropEvent(r.clone(), "scope value"),
            )
            .unwrap();
        r.push("dispose");
        scope.dispose();
        drop(scope);
        r.push("after drop");
    })
    .unwrap();
    rec.assert_events(&["dispose", "scope value dropped", "after drop"]);
}

#[test]
fn r_cx1_a_scope_value_whose_destructor_panics_at_the_last_members_finish_is_logged() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("scope bomb");
        }
    }
    let (joined, logs) = tests::support::capture_logs(|| {
        run(|| {
            let scope = Scope::new();
            scope.context().set("bomb", Bomb).unwrap();
            let h = spawn_in(&scope, || async_std_api::suspend().is_ok()).unwrap();
            // Only the member keeps the scope's record now: it is dropped
            // inside the runtime, at the member's finish.
            drop(scope.detach());
            h.join().unwrap()
        })
    });
    assert!(joined.unwrap());
    assert_eq!(
        logs.matching("context value"),
        ["WARN a context value panicked in its destructor: scope bomb"]
    );
}
