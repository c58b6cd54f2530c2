//! The RFC's structured-concurrency example: a user profile fetched from
//! several sources in parallel, with nested task groups and timeouts.
//!
//! ```text
//! cargo run -p async-std-api --example user_profile
//! ```
//!
//! As in the RFC: a main [`TaskGroup`] capturing results; one of its tasks
//! opens a subgroup in a child scope (`Scope::inherit()`) for the two
//! orders APIs, each awaited `until timeout(..)`
//! ([`join_until`](async_std_api::JoinHandle::join_until)); the results are
//! merged from `join` of each group. Rust's typed version of `catch
//! (AwaitCancelledException)` is [`JoinError::is_await_cancelled`].
//!
//! Expected output (the second orders API is slower than its timeout):
//!
//! ```text
//! basic: user 123
//! orders: 3 orders
//! orders2: timeout
//! settings: dark mode
//! ```

use std::collections::BTreeMap;

use async_std_api::{delay, run, spawn, timeout, JoinError, Scope, TaskGroup};

type Profile = BTreeMap<&'static str, String>;

fn fetch_user_data(id: u32) -> String {
    delay(20).unwrap();
    format!("user {id}")
}

fn fetch_user_orders(_id: u32) -> String {
    delay(30).unwrap();
    "3 orders".to_owned()
}

fn fetch_user_orders_api2(_id: u32) -> String {
    delay(60_000).ok(); // far slower than its timeout (cancelled with its group)
    "never".to_owned()
}

fn fetch_user_settings(_id: u32) -> String {
    delay(10).unwrap();
    "dark mode".to_owned()
}

/// `await spawn f() until timeout(ms)`, with the RFC's `catch
/// (AwaitCancelledException)` turned into a "timeout" status.
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

fn get_user_profile(user_id: u32) -> Profile {
    // Main task group with result capturing.
    let profile_tasks = TaskGroup::<Profile>::builder()
        .capture_results(true)
        .build();
    let result = (|| -> Result<Profile, Box<dyn std::error::Error>> {
        // Basic user information.
        profile_tasks.spawn_try(move || {
            let user_data = spawn(move || fetch_user_data(user_id)).join()?;
            Ok::<_, JoinError>(Profile::from([("basic", user_data)]))
        })?;
        // Extended details in parallel, in a subgroup of a child scope.
        profile_tasks.spawn_try(move || {
            let order_tasks = TaskGroup::<Profile>::builder()
                .scope(&Scope::inherit())
                .capture_results(true)
                .build();
            order_tasks
                .spawn(move || with_timeout("orders", 200, move || fetch_user_orders(user_id)))?;
            order_tasks.spawn(move || {
                with_timeout("orders2", 200, move || fetch_user_orders_api2(user_id))
            })?;
            let orders = merge(order_tasks.join()?);
            // The fetch that timed out still runs in the subgroup's scope
            // (R-AU3); dropping the group disposes that scope, which would
            // warn about it: cancel it on purpose first.
            order_tasks.scope().cancel();
            Ok::<_, async_std_api::TaskGroupError>(orders)
        })?;
        // User settings.
        profile_tasks.spawn_try(move || {
            let s = spawn(move || fetch_user_settings(user_id)).join()?;
            Ok::<_, JoinError>(Profile::from([("settings", s)]))
        })?;
        // Merge all results into a single profile.
        Ok(merge(profile_tasks.join()?))
    })();
    match result {
        Ok(p) => p,
        Err(e) => {
            eprintln!("Error fetching user profile: {e}");
            Profile::from([("error", e.to_string())])
        }
    }
}

fn main() -> Result<(), async_std_api::Error> {
    run(|| {
        let profile = spawn(|| get_user_profile(123)).join().unwrap();
        for (k, v) in &profile {
            println!("{k}: {v}");
        }
    })
}
