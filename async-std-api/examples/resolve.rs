//! Name resolution without blocking the loop.
//!
//! ```text
//! cargo run -p async-std-api --example resolve                    # localhost
//! cargo run -p async-std-api --example resolve -- localhost:443 example.org:80
//! ```
//!
//! Each name is looked up in its own coroutine, all at once: the reactor
//! resolves them on its own thread (or the blocking pool does, on a reactor
//! without DNS), and the coroutines suspend meanwhile. A name without a
//! port gets port 0. Exits 1 if any name does not resolve.

use std::process::ExitCode;

use async_std_api::net::lookup_host;
use async_std_api::spawn;

fn main() -> ExitCode {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "-h" || a == "--help")
    {
        println!("usage: resolve [HOST[:PORT]]...\n  resolves each name without blocking the loop (default: localhost)");
        std::process::exit(0);
    }
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names.push("localhost".to_owned());
    }
    let ok = async_std_api::run(move || {
        let lookups: Vec<_> = names
            .into_iter()
            .map(|name| {
                spawn(move || {
                    let query = if name.contains(':') {
                        name.clone()
                    } else {
                        format!("{name}:0")
                    };
                    match lookup_host(query.as_str()) {
                        Ok(addrs) => {
                            let addrs: Vec<String> = addrs.map(|a| a.to_string()).collect();
                            println!("{name}: {}", addrs.join(", "));
                            true
                        }
                        Err(e) => {
                            println!("{name}: {e}");
                            false
                        }
                    }
                })
            })
            .collect();
        lookups.into_iter().all(|h| h.join().unwrap_or(false))
    });
    match ok {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("resolve: {e}");
            ExitCode::FAILURE
        }
    }
}
