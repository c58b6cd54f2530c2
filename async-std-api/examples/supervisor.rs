//! The RFC's Supervisor: an error in one task stops that task's children,
//! not its siblings.
//!
//! ```text
//! cargo run -p async-std-api --example supervisor
//! ```
//!
//! Expected output:
//!
//! ```text
//! Task 2
//! Task 3 (a long task) done
//! supervisor: 1 failure(s): coroutine 2 failed: Task 1
//! ```
//!
//! [`Supervisor`] is built from the RFC's pieces: a scope, a
//! `SpawnStrategy` whose `provide_scope` gives each task its own child scope
//! and whose `before_coroutine_enqueue` disposes that scope when the task
//! finishes (`on_finally`), plus a child-scope exception handler that keeps
//! the tasks' failures instead of cancelling the siblings.

use async_std_api::{delay, run, spawn, spawn_in, spawn_try_in, timeout, Supervisor};

fn main() -> Result<(), async_std_api::Error> {
    run(|| {
        let supervisor = Supervisor::new();
        // `throw new Exception("Task 1")`: an error returned by the body (a
        // panic would do the same).
        spawn_try_in(&supervisor, || {
            spawn(|| println!("This code is not executed"));
            Err::<(), _>("Task 1")
        })
        .unwrap();
        spawn_in(&supervisor, || println!("Task 2")).unwrap();
        spawn_in(&supervisor, || {
            delay(50).unwrap(); // not cancelled by Task 1's failure
            println!("Task 3 (a long task) done");
        })
        .unwrap();
        supervisor
            .scope()
            .await_completion(&timeout(5_000))
            .expect("the supervisor absorbs its tasks' failures");
        let failures = supervisor.failures();
        let lines: Vec<String> = failures.iter().map(ToString::to_string).collect();
        println!(
            "supervisor: {} failure(s): {}",
            failures.len(),
            lines.join("; ")
        );
    })
}
