//! Slots: set / replace / unset, typed reads (a wrong type is an error,
//! not a panic), object keys that only their holder can read, weak slots
//! (the RFC's WeakReference dereference), and the errors' exact text.

use std::cell::Cell;
use std::rc::Rc;

use async_std_api::{current_context, run, spawn, spawn_in, ContextErrorKind, Key, Scope};
use tests::support::Recorder;

/// Records `"<name> dropped"` when dropped.
pub(crate) struct DropEvent(pub(crate) Recorder, pub(crate) &'static str);

impl Drop for DropEvent {
    fn drop(&mut self) {
        self.0.push(format!("{} dropped", self.1));
    }
}

#[test]
fn r_cx1_set_refuses_an_existing_key_and_keeps_the_old_value() {
    run(|| {
        let ctx = current_context();
        ctx.set("id", 1i32).unwrap();
        let e = ctx.set("id", 2i32).unwrap_err();
        assert!(e.is_key_exists());
        assert_eq!(e.kind(), ContextErrorKind::KeyExists);
        assert_eq!(
            e.to_string(),
            "context key \"id\" already set (use replace to overwrite it)"
        );
        // Whatever the new value's type.
        assert!(ctx.set("id", "text").unwrap_err().is_key_exists());
        assert_eq!(*ctx.get::<i32>("id").unwrap(), 1);
    })
    .unwrap();
}

#[test]
fn r_cx1_replace_overwrites_and_drops_the_old_value_at_once() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let ctx = current_context();
        assert!(!ctx.replace("v", DropEvent(r.clone(), "first")));
        r.push("replacing");
        assert!(ctx.replace("v", DropEvent(r.clone(), "second")));
        r.push("replaced");
        // The type may change too.
        assert!(ctx.replace("v", 3u8));
        assert_eq!(*ctx.get::<u8>("v").unwrap(), 3);
    })
    .unwrap();
    rec.assert_events(&["replacing", "first dropped", "replaced", "second dropped"]);
}

#[test]
fn r_cx1_unset_removes_and_drops_the_value() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let ctx = current_context();
        ctx.set("v", DropEvent(r.clone(), "value")).unwrap();
        assert!(ctx.unset("v"));
        r.push("unset returned");
        assert!(!ctx.has("v"));
        assert!(!ctx.unset("v"));
        // Set again after unset: no KeyExists.
        ctx.set("v", 1).unwrap();
    })
    .unwrap();
    rec.assert_events(&["value dropped", "unset returned"]);
}

#[test]
fn r_cx1_a_value_read_out_outlives_its_slot() {
    run(|| {
        let ctx = current_context();
        ctx.set("shared", Cell::new(1)).unwrap();
        let v = ctx.get::<Cell<i32>>("shared").unwrap();
        // Values are shared, not copied: a Cell inside is seen by all.
        ctx.get::<Cell<i32>>("shared").unwrap().set(2);
        assert_eq!(v.get(), 2);
        ctx.unset("shared");
        assert_eq!(v.get(), 2, "the reader's Rc keeps it");
    })
    .unwrap();
}

#[test]
fn r_cx1_a_wrong_type_is_an_error_not_a_panic() {
    run(|| {
        let ctx = current_context();
        ctx.set("n", 5i64).unwrap();
        for e in [
            ctx.get::<u32>("n").unwrap_err(),
            ctx.find::<u32>("n").unwrap_err(),
            ctx.get_local::<u32>("n").unwrap_err(),
            ctx.find_local::<u32>("n").unwrap_err(),
        ] {
            assert!(e.is_wrong_type() && !e.is_key_missing());
            assert_eq!(e.kind(), ContextErrorKind::WrongType);
            assert_eq!(e.to_string(), "context key \"n\" holds i64, not u32");
        }
        assert_eq!(*ctx.get::<i64>("n").unwrap(), 5);
    })
    .unwrap();
}

#[test]
fn r_cx1_string_keys_accept_str_and_string() {
    run(|| {
        let ctx = current_context();
        let name = String::from("dynamic");
        ctx.set(&name, 1).unwrap();
        assert_eq!(*ctx.get::<i32>("dynamic").unwrap(), 1);
        assert!(ctx.has(&name));
        assert!(ctx.unset(&name));
    })
    .unwrap();
}

#[test]
fn r_cx1_object_keys_hide_values_from_code_without_the_key() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let db: Key<String> = Key::new("db connection");
        current_context().set(&db, String::from("conn #1")).unwrap();
        // Code without the key: not by the same name, not by another key
        // with the same name and type.
        let r1 = r.clone();
        spawn(move || {
            let ctx = current_context();
            let impostor: Key<String> = Key::new("db connection");
            r1.push(format!(
                "stranger: by name {}, by impostor key {}",
                ctx.has("db connection"),
                ctx.has(&impostor)
            ));
        })
        .join()
        .unwrap();
        // Code with the key: typed, no turbofish.
        let h = spawn(move || {
            let conn: Rc<String> = current_context().get(&db).unwrap();
            format!("holder: {conn}")
        });
        r.push(h.join().unwrap());
    })
    .unwrap();
    rec.assert_events(&[
        "stranger: by name false, by impostor key false",
        "holder: conn #1",
    ]);
}

#[test]
fn r_cx1_object_key_errors_name_the_key_object() {
    run(|| {
        let key: Key<u8> = Key::new("secret");
        let e = current_context().get(&key).unwrap_err();
        assert_eq!(e.to_string(), "context key object \"secret\" not found");
        current_context().set(&key, 1).unwrap();
        let e = current_context().set(&key, 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "context key object \"secret\" already set (use replace to overwrite it)"
        );
        assert!(current_context().unset(&key));
        assert_eq!(format!("{key:?}").split('#').next(), Some("Key(\"secret\""));
    })
    .unwrap();
}

#[test]
fn r_cx1_a_weak_slot_reads_back_the_object_or_none() {
    run(|| {
        let scope = Scope::new();
        let pdo = Rc::new(String::from("sqlite::memory:"));
        scope
            .context()
            .set_weak("pdo", Rc::downgrade(&pdo))
            .unwrap();
        let task = || current_context().find::<String>("pdo").unwrap();
        let h = spawn_in(&scope, task).unwrap();
        let found = h.join().unwrap().expect("the object is alive");
        assert!(Rc::ptr_eq(&found, &pdo), "the original object, not a copy");
        drop(found);
        assert!(scope.context().has("pdo"));
        // The context never keeps it alive.
        assert_eq!(Rc::strong_count(&pdo), 1);
        drop(pdo);
        let h = spawn_in(&scope, task).unwrap();
        assert!(h.join().unwrap().is_none());
        let ctx = scope.context();
        assert!(!ctx.has("pdo") && !ctx.has_local("pdo"));
        let e = ctx.get::<String>("pdo").unwrap_err();
        assert_eq!(e.to_string(), "context key \"pdo\" not found");
        // A dead weak slot is as if unset: set may take its place.
        ctx.set("pdo", String::from("new")).unwrap();
        assert_eq!(*ctx.get::<String>("pdo").unwrap(), "new");
    })
    .unwrap();
}

#[test]
fn r_cx1_a_dead_weak_slot_lets_the_parent_value_show_through() {
    run(|| {
        let parent = Scope::new();
        parent
            .context()
            .set("conn", String::from("parent's"))
            .unwrap();
        let child = Scope::inherit_from(&parent);
        let mine = Rc::new(String::from("child's"));
        child
            .context()
            .set_weak("conn", Rc::downgrade(&mine))
            .unwrap();
        assert_eq!(*child.context().get::<String>("conn").unwrap(), "child's");
        drop(mine);
        assert_eq!(*child.context().get::<String>("conn").unwrap(), "parent's");
    })
    .unwrap();
}

#[test]
fn r_cx1_a_weak_slot_read_with_another_type_is_wrong_type() {
    run(|| {
        let v = Rc::new(5u16);
        current_context().set_weak("w", Rc::downgrade(&v)).unwrap();
        let e = current_context().get::<u32>("w").unwrap_err();
        assert_eq!(e.to_string(), "context key \"w\" holds u16, not u32");
        assert!(current_context()
            .set("w", 1u16)
            .unwrap_err()
            .is_key_exists());
    })
    .unwrap();
}

#[test]
fn r_cx1_a_value_destructor_may_use_the_same_context() {
    // CX3: no borrow is held while a replaced or unset value drops.
    struct Reentrant;
    impl Drop for Reentrant {
        fn drop(&mut self) {
            let ctx = current_context();
            let _ = ctx.has("other");
            ctx.replace("from drop", 1);
        }
    }
    run(|| {
        let ctx = current_context();
        ctx.set("r", Reentrant).unwrap();
        ctx.unset("r");
        assert!(ctx.has("from drop"));
        ctx.set("r", Reentrant).unwrap();
        ctx.replace("r", 0);
        ctx.unset("from drop");
    })
    .unwrap();
}
