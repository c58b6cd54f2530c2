//! The RFC's Context examples, as recorded events: the request/server
//! inheritance example ("Context inheritance"), the coroutine-local
//! connection example ("Coroutine local context"), the PDO slot pattern
//! and the WeakReference example ("Context API").

use std::cell::RefCell;
use std::rc::Rc;

use async_std_api::{
    coroutine_context, current_context, root_context, run, spawn, spawn_in, Key, Scope,
};
use tests::support::{any_order, one, Recorder};

/// The RFC's `handleRequest`: reads the request's key, the server's key
/// through the chain, and the root context's view of the request key.
fn handle_request(rec: &Recorder, socket: u32) {
    let request_id = current_context()
        .get::<Option<String>>("request_id")
        .unwrap();
    rec.push(format!(
        "socket {socket}: request_id {}",
        request_id.as_deref().unwrap()
    ));
    let server_id = current_context().get::<String>("server_id").unwrap();
    rec.push(format!("socket {socket}: server_id {server_id}"));
    // "Should be NULL": the root (the server scope) has its own null slot,
    // never the request's value.
    let root = root_context().get::<Option<String>>("request_id").unwrap();
    rec.push(format!("socket {socket}: root request_id {root:?}"));
}

/// The RFC's `startRequestHandler`: a request scope inheriting the
/// server's, overriding the `request_id` slot.
fn start_request_handler(rec: &Recorder, socket: u32) -> Scope {
    let request_scope = Scope::inherit(); // inherit the server context
    request_scope
        .context()
        .set("request_id", Some(format!("req-{socket}")))
        .unwrap(); // override the server's slot
    let r = rec.clone();
    spawn_in(&request_scope, move || handle_request(&r, socket)).unwrap();
    request_scope
}

#[test]
fn rfc_context_inheritance_request_and_server_example() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        // startServer
        let server_scope = Scope::new();
        server_scope
            .context()
            .set("server_id", String::from("srv-1"))
            .unwrap();
        server_scope
            .context()
            .set("request_id", None::<String>)
            .unwrap();
        let r1 = r.clone();
        let acceptor = spawn_in(&server_scope, move || {
            // The accept loop, two sockets.
            let requests: Vec<Scope> = (1..=2).map(|s| start_request_handler(&r1, s)).collect();
            for scope in &requests {
                scope
                    .await_completion(&async_std_api::timeout(5_000))
                    .unwrap();
            }
        })
        .unwrap();
        acceptor.join().unwrap();
        // Outside the request scopes, nothing sees their keys.
        r.push(format!(
            "server request_id {:?}",
            server_scope
                .context()
                .get::<Option<String>>("request_id")
                .unwrap()
        ));
    })
    .unwrap();
    let per_socket = |s: u32| {
        [
            format!("socket {s}: request_id req-{s}"),
            format!("socket {s}: server_id srv-1"),
            format!("socket {s}: root request_id None"),
        ]
    };
    // The two handlers may interleave (no suspension inside, but the
    // policy decides which runs first).
    let events = rec.events();
    assert_eq!(events.len(), 7, "{events:?}");
    for s in 1..=2 {
        let mine: Vec<&String> = events
            .iter()
            .filter(|e| e.starts_with(&format!("socket {s}")))
            .collect();
        assert_eq!(mine, per_socket(s).iter().collect::<Vec<_>>());
    }
    rec.assert_steps(&[
        any_order(
            per_socket(1)
                .into_iter()
                .chain(per_socket(2))
                .collect::<Vec<_>>(),
        ),
        one("server request_id None"),
    ]);
}

/// The RFC's `ConnectionPool`: a stack of connections.
#[derive(Default)]
struct ConnectionPool {
    pool: RefCell<Vec<String>>,
    opened: RefCell<u32>,
    rec: Recorder,
}

impl ConnectionPool {
    fn connection(self: &Rc<Self>) -> ConnectionProxy {
        let conn = self.pool.borrow_mut().pop().unwrap_or_else(|| {
            *self.opened.borrow_mut() += 1;
            format!("conn{}", self.opened.borrow())
        });
        self.rec.push(format!("take {conn}"));
        ConnectionProxy {
            conn,
            pool: self.clone(),
        }
    }

    fn release(&self, conn: String) {
        self.rec.push(format!("release {conn}"));
        self.pool.borrow_mut().push(conn);
    }
}

/// The RFC's `ConnectionProxy`: gives its connection back to the pool
/// when dropped.
struct ConnectionProxy {
    conn: String,
    pool: Rc<ConnectionPool>,
}

impl Drop for ConnectionProxy {
    fn drop(&mut self) {
        self.pool.release(std::mem::take(&mut self.conn));
    }
}

thread_local! {
    /// The RFC's `static $key = new Key('db_connection')`.
    static DB_KEY: Key<ConnectionProxy> = Key::new("db_connection");
}

/// The RFC's `getDb()`: one connection per coroutine, kept in the
/// coroutine's local context.
fn get_db(pool: &Rc<ConnectionPool>) -> Rc<ConnectionProxy> {
    DB_KEY.with(|key| {
        let ctx = coroutine_context();
        if ctx.has(key) {
            return ctx.get(key).unwrap();
        }
        ctx.set(key, pool.connection()).unwrap();
        ctx.get(key).unwrap()
    })
}

/// The RFC's `printUser($id)`: two queries, one connection.
fn print_user(pool: &Rc<ConnectionPool>, id: u32) {
    let db = get_db(pool);
    pool.rec.push(format!("user {id} via {}", db.conn));
    let again = get_db(pool);
    assert!(Rc::ptr_eq(&db, &again), "one connection per coroutine");
}

#[test]
fn rfc_coroutine_local_connection_returns_to_the_pool_when_the_coroutine_ends() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let pool = Rc::new(ConnectionPool {
            rec: r.clone(),
            ..ConnectionPool::default()
        });
        // spawn printUser(1); spawn printUser(2); awaited one after the
        // other: the second reuses the connection the first gave back.
        let p = pool.clone();
        spawn(move || print_user(&p, 1)).join().unwrap();
        r.push("first done");
        let p = pool.clone();
        spawn(move || print_user(&p, 2)).join().unwrap();
        r.push("second done");
        assert_eq!(*pool.opened.borrow(), 1);
        assert_eq!(*pool.pool.borrow(), ["conn1"]);
    })
    .unwrap();
    rec.assert_events(&[
        "take conn1",
        "user 1 via conn1",
        "release conn1",
        "first done",
        "take conn1",
        "user 2 via conn1",
        "release conn1",
        "second done",
    ]);
}

#[test]
fn rfc_coroutine_local_connections_are_unique_per_concurrent_coroutine() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let pool = Rc::new(ConnectionPool {
            rec: Recorder::new(),
            ..ConnectionPool::default()
        });
        let hs: Vec<_> = (1..=2)
            .map(|id| {
                let p = pool.clone();
                spawn(move || {
                    let db = get_db(&p);
                    async_std_api::delay(1).unwrap(); // both hold one now
                    assert!(Rc::ptr_eq(&db, &get_db(&p)));
                    id
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        r.push(format!("opened {}", pool.opened.borrow()));
        r.push(format!("idle {}", pool.pool.borrow().len()));
    })
    .unwrap();
    rec.assert_events(&["opened 2", "idle 2"]);
}

#[test]
fn rfc_context_api_pdo_slot_pattern_sets_once_and_reuses() {
    run(|| {
        let key = "pdo connection";
        let opened = RefCell::new(0);
        let pdo = || {
            if current_context().has(key) {
                current_context().get::<String>(key).unwrap()
            } else {
                *opened.borrow_mut() += 1;
                current_context()
                    .set(key, String::from("sqlite::memory:"))
                    .unwrap();
                current_context().get::<String>(key).unwrap()
            }
        };
        assert_eq!(*pdo(), "sqlite::memory:");
        assert_eq!(*pdo(), "sqlite::memory:");
        assert_eq!(*opened.borrow(), 1);
    })
    .unwrap();
}

#[test]
fn rfc_context_api_weak_reference_example_gives_the_original_object() {
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let pdo = Rc::new(String::from("sqlite::memory:"));
        current_context()
            .set_weak("pdo", Rc::downgrade(&pdo))
            .unwrap();
        let r1 = r.clone();
        let p = pdo.clone();
        spawn(move || {
            // task(): "Should return the original object".
            let found = current_context().find::<String>("pdo").unwrap();
            r1.push(format!(
                "same object: {}",
                found.is_some_and(|f| Rc::ptr_eq(&f, &p))
            ));
        })
        .join()
        .unwrap();
        drop(pdo);
        r.push(format!(
            "after drop: {:?}",
            current_context().find::<String>("pdo").unwrap()
        ));
    })
    .unwrap();
    rec.assert_events(&["same object: true", "after drop: None"]);
}

#[test]
fn rfc_context_overview_user_id_example() {
    // currentContext()->set('user_id', 123);
    // spawn { echo "User ID: " . currentContext()->get("user_id"); };
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        current_context().set("user_id", 123).unwrap();
        let r1 = r.clone();
        spawn(move || {
            let user_id = current_context().get::<i32>("user_id").unwrap();
            r1.push(format!("User ID: {user_id}"));
        })
        .join()
        .unwrap();
    })
    .unwrap();
    rec.assert_events(&["User ID: 123"]);
}

#[test]
fn rfc_coroutine_local_context_data_is_not_found_by_a_spawned_coroutine() {
    // function task() { coroutineContext()->set('data', 'This local data');
    //   spawn { echo coroutineContext()->find('data'); }; }  // nothing found
    let rec = Recorder::new();
    let r = rec.clone();
    run(move || {
        let r1 = r.clone();
        spawn(move || {
            coroutine_context().set("data", "This local data").unwrap();
            let r2 = r1.clone();
            let inner = spawn(move || {
                let found = coroutine_context().find::<&str>("data").unwrap();
                r2.push(format!("inner found: {found:?}"));
            });
            inner.join().unwrap();
            let mine = coroutine_context().find::<&str>("data").unwrap();
            r1.push(format!("task found: {:?}", mine.as_deref()));
        })
        .join()
        .unwrap();
    })
    .unwrap();
    rec.assert_events(&["inner found: None", "task found: Some(\"This local data\")"]);
}
