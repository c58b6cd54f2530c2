//! The RFC's structured-concurrency example: a user profile fetched from
//! several sources in parallel, with nested groups and timeouts.
//!
//! ```text
//! cargo run -p async-std-api --example user_profile
//! ```
//!
//! Note: the RFC writes it with `TaskGroup(captureResults: true)`; the
//! `TaskGroup` of this crate is being written, so this version uses what it
//! is built on: a child [`Scope`] per group (`Scope::inherit`), the tasks'
//! [`JoinHandle`](async_std_api::JoinHandle)s joined in order (capturing
//! their results), and `join_until(timeout)` for the RFC's
//! `await ... until timeout(2000)`. Switch to `TaskGroup` once it lands.
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

use async_std_api::{delay, run, spawn, spawn_in, timeout, JoinError, Scope};

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
    delay(60_000).ok(); // far slower than its timeout (cancelled at the end)
    "never".to_owned()
}

fn fetch_user_settings(_id: u32) -> String {
    delay(10).unwrap();
    "dark mode".to_owned()
}

fn get_user_profile(user_id: u32) -> Profile {
    // The main group: a child scope of the caller's.
    let profile_tasks = Scope::inherit();
    let result = (|| -> Result<Profile, JoinError> {
        let basic = spawn_in(&profile_tasks, move || {
            let user_data = spawn(move || fetch_user_data(user_id)).join()?;
            Ok::<_, JoinError>(Profile::from([("basic", user_data)]))
        })
        .expect("open");
        let extended = spawn_in(&profile_tasks, move || {
            // A subgroup for the orders, a child of this task's scope.
            let order_tasks = Scope::inherit();
            let orders = spawn_in(&order_tasks, move || {
                match spawn(move || fetch_user_orders(user_id)).join_until(&timeout(200)) {
                    Ok(o) => ("orders", o),
                    Err(e) if e.is_await_cancelled() => ("orders", "timeout".to_owned()),
                    Err(e) => ("orders", format!("error: {e}")),
                }
            })
            .expect("open");
            let orders2 = spawn_in(&order_tasks, move || {
                match spawn(move || fetch_user_orders_api2(user_id)).join_until(&timeout(200)) {
                    Ok(o) => ("orders2", o),
                    Err(e) if e.is_await_cancelled() => ("orders2", "timeout".to_owned()),
                    Err(e) => ("orders2", format!("error: {e}")),
                }
            })
            .expect("open");
            let mut merged = Profile::new();
            for h in [orders, orders2] {
                let (k, v) = h.join()?;
                merged.insert(k, v);
            }
            // The awaited fetch that timed out still runs (R-AU3): the
            // group is done with it, so cancel what is left in it.
            order_tasks.cancel();
            Ok::<_, JoinError>(merged)
        })
        .expect("open");
        let settings = spawn_in(&profile_tasks, move || {
            let s = spawn(move || fetch_user_settings(user_id)).join()?;
            Ok::<_, JoinError>(Profile::from([("settings", s)]))
        })
        .expect("open");
        let mut profile = Profile::new();
        for h in [basic, extended, settings] {
            profile.extend(h.join()??);
        }
        Ok(profile)
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
