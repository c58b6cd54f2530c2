//! Real software, unchanged, in coroutines with the C library hooks on:
//! 100 coroutines each make a call that takes 100 ms server-side, through
//! the software's own blocking API, and all finish together while a 10 ms
//! ticker keeps ticking. One after another they would take 10 s, and the
//! ticker would stall for each.
//!
//! PostgreSQL is reached two ways: through libpq, the C client most
//! drivers wrap, and through the `postgres` crate, whose clients each embed
//! a tokio runtime entered on every call (each coroutine keeps its own
//! copy of tokio's thread-local context: hooks FT1-FT4).

use std::ffi::CString;
use std::io::Read;
use std::time::{Duration, Instant};

use async_std_api::{spawn, Builder};
use tests_real::{Postgres, Redis, SlowHttp, Ticker, Ticks};

const N: usize = 100;

/// Runs `n` coroutines of `each(i)` with hooks on and a ticker; returns
/// their results, how long they took together, and what the ticker saw.
fn together<T: 'static>(each: impl Fn(usize) -> T + Clone + 'static) -> (Vec<T>, Duration, Ticks) {
    Builder::new()
        .hooks(true)
        .run(move || {
            let ticker = Ticker::start();
            let start = Instant::now();
            let handles: Vec<_> = (0..N)
                .map(|i| {
                    let each = each.clone();
                    spawn(move || each(i))
                })
                .collect();
            let out: Vec<T> = handles
                .into_iter()
                .map(|h| h.join().expect("a coroutine"))
                .collect();
            let took = start.elapsed();
            (out, took, ticker.ticks())
        })
        .expect("runtime")
}

/// What every test asserts on timing: together, well under the 10 s one
/// after another would take; the ticker kept going meanwhile, and the loop
/// thread never slept through one of the 100 ms calls.
///
/// The longest gap between ticks is printed, not asserted: starting a
/// hundred connections is CPU work that holds the ticker for 50-100 ms on
/// a slow two-core machine in a debug build, as long as one blocked call
/// would. What tells them apart is sleep: a blocked call sleeps in the
/// kernel for the server's 100 ms, while a busy loop does not sleep at all
/// and an idle one only until its next timer.
#[track_caller]
fn assert_together(took: Duration, ticks: Ticks) {
    let Ticks {
        count,
        worst_gap,
        worst_asleep,
    } = ticks;
    eprintln!(
        "{N} calls of 100 ms took {took:?}; ticker: {count} ticks, longest gap {worst_gap:?}, \
         longest sleep of the loop thread in one gap {worst_asleep:?}"
    );
    assert!(took < Duration::from_secs(1), "{N} calls took {took:?}");
    assert!(count >= 5, "the ticker got {count} ticks in {took:?}");
    match worst_asleep {
        Some(slept) => assert!(
            slept < Duration::from_millis(50),
            "the loop thread slept {slept:?} within one tick (gap {worst_gap:?}): a call blocked it"
        ),
        // Without schedstat, the gap alone, with room for the busy start.
        None => assert!(
            worst_gap < Duration::from_millis(100).max(took / 2),
            "longest gap {worst_gap:?} in {took:?}"
        ),
    }
}

/// This package's `slow-http` server, answering after 100 ms.
fn slow_http() -> SlowHttp {
    SlowHttp::start(env!("CARGO_BIN_EXE_slow-http"), Duration::from_millis(100))
}

#[test]
fn redis_crate_a_hundred_blocking_pops_of_100_ms_wait_together() {
    let redis = Redis::start();
    let url = format!("redis://127.0.0.1:{}/", redis.port);
    // Connections first: the test times the waits.
    let conns: Vec<_> = Builder::new()
        .hooks(true)
        .run({
            let url = url.clone();
            move || {
                (0..N)
                    .map(|_| {
                        redis::Client::open(url.as_str())
                            .and_then(|c| c.get_connection())
                            .expect("connect")
                    })
                    .collect()
            }
        })
        .expect("runtime");
    let conns = std::rc::Rc::new(std::cell::RefCell::new(
        conns.into_iter().map(Some).collect::<Vec<_>>(),
    ));
    let (popped, took, ticks) = together(move |i| {
        let mut con = conns.borrow_mut()[i].take().expect("a connection");
        // BLPOP waits up to its timeout for a list that stays empty.
        let got: Option<(String, String)> = redis::cmd("BLPOP")
            .arg(format!("empty-{i}"))
            .arg(0.1)
            .query(&mut con)
            .expect("BLPOP");
        got
    });
    assert!(popped.iter().all(Option::is_none));
    assert_together(took, ticks);
    // And the client still talks: a SET and a GET.
    Builder::new()
        .hooks(true)
        .run(move || {
            let mut con = redis::Client::open(url.as_str())
                .and_then(|c| c.get_connection())
                .expect("connect");
            let _: () = redis::cmd("SET")
                .arg("k")
                .arg("v")
                .query(&mut con)
                .expect("SET");
            let v: String = redis::cmd("GET").arg("k").query(&mut con).expect("GET");
            assert_eq!(v, "v");
        })
        .expect("runtime");
}

#[test]
fn ureq_a_hundred_requests_to_a_server_answering_after_100_ms_wait_together() {
    let server = slow_http();
    let addr = server.addr;
    let (bodies, took, ticks) = together(move |i| {
        let mut body = String::new();
        ureq::get(&format!("http://localhost:{}/item/{i}", addr.port()))
            .call()
            .expect("request")
            .into_reader()
            .read_to_string(&mut body)
            .expect("body");
        body
    });
    for (i, b) in bodies.iter().enumerate() {
        assert_eq!(b, &format!("hello /item/{i}"));
    }
    assert_together(took, ticks);
}

#[test]
fn libcurl_a_hundred_transfers_from_a_server_answering_after_100_ms_wait_together() {
    let server = slow_http();
    let addr = server.addr;
    let (bodies, took, ticks) = together(move |i| {
        let mut easy = curl::easy::Easy::new();
        easy.url(&format!("http://127.0.0.1:{}/c/{i}", addr.port()))
            .expect("url");
        let mut body = Vec::new();
        {
            let mut t = easy.transfer();
            t.write_function(|d| {
                body.extend_from_slice(d);
                Ok(d.len())
            })
            .expect("write function");
            t.perform().expect("perform");
        }
        assert_eq!(easy.response_code().expect("code"), 200);
        String::from_utf8(body).expect("utf-8")
    });
    for (i, b) in bodies.iter().enumerate() {
        assert_eq!(b, &format!("hello /c/{i}"));
    }
    assert_together(took, ticks);
}

/// A libpq connection, closed when dropped.
struct Pq(*mut pq_sys::PGconn);

impl Pq {
    fn connect(conninfo: &str) -> Pq {
        let c = CString::new(conninfo).expect("conninfo");
        // SAFETY: a valid C string; libpq returns a connection object (or
        // null on out-of-memory), which `Drop` finishes.
        let conn = unsafe { pq_sys::PQconnectdb(c.as_ptr()) };
        assert!(!conn.is_null());
        // SAFETY: a live connection object.
        let status = unsafe { pq_sys::PQstatus(conn) };
        assert_eq!(
            status,
            pq_sys::ConnStatusType::CONNECTION_OK,
            "libpq could not connect"
        );
        Pq(conn)
    }

    /// Runs `sql` and returns the first row's first column.
    fn one(&self, sql: &str) -> String {
        let q = CString::new(sql).expect("sql");
        // SAFETY: a live connection and a valid C string; the result is
        // read, then cleared.
        unsafe {
            let res = pq_sys::PQexec(self.0, q.as_ptr());
            assert_eq!(
                pq_sys::PQresultStatus(res),
                pq_sys::ExecStatusType::PGRES_TUPLES_OK
            );
            let v = std::ffi::CStr::from_ptr(pq_sys::PQgetvalue(res, 0, 0))
                .to_string_lossy()
                .into_owned();
            pq_sys::PQclear(res);
            v
        }
    }
}

impl Drop for Pq {
    fn drop(&mut self) {
        // SAFETY: a connection object libpq made, finished once.
        unsafe { pq_sys::PQfinish(self.0) }
    }
}

/// With hooks on: `N` coroutines each `connect` (a server forks a backend
/// per connection, which the timing leaves out), then all `query` at once
/// while a ticker runs; the answers, how long the queries took together, and
/// what the ticker saw. The connections close after the
/// ticker stops: `N` backends exiting at once keep the server busy on both
/// cores of a small machine, which starves this process (the loop is not
/// what holds the ticker).
fn connected_then_together<C: 'static, T: 'static>(
    connect: impl Fn() -> C + Clone + 'static,
    query: impl Fn(usize, &mut C) -> T + Clone + 'static,
) -> (Vec<T>, Duration, Ticks) {
    Builder::new()
        .hooks(true)
        .run(move || {
            let conns: Vec<_> = (0..N).map(|_| spawn(connect.clone())).collect();
            let conns: Vec<C> = conns
                .into_iter()
                .map(|h| h.join().expect("connect"))
                .collect();
            let ticker = Ticker::start();
            let start = Instant::now();
            let queries: Vec<_> = conns
                .into_iter()
                .enumerate()
                .map(|(i, mut c)| {
                    let query = query.clone();
                    spawn(move || (query(i, &mut c), c))
                })
                .collect();
            let (answers, conns): (Vec<T>, Vec<C>) = queries
                .into_iter()
                .map(|q| q.join().expect("query"))
                .unzip();
            let took = start.elapsed();
            let ticks = ticker.ticks();
            drop(conns);
            (answers, took, ticks)
        })
        .expect("runtime")
}

#[test]
fn libpq_a_hundred_queries_of_100_ms_wait_together() {
    let pg = Postgres::start();
    let conninfo = pg.conninfo();
    let (answers, took, ticks) = connected_then_together(
        move || Pq::connect(&conninfo),
        |i, c: &mut Pq| c.one(&format!("select {i}::text || ':' || pg_sleep(0.1)::text")),
    );
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a, &format!("{i}:"));
    }
    assert_together(took, ticks);
}

#[test]
fn postgres_crate_a_hundred_queries_of_100_ms_wait_together() {
    // Each client embeds a tokio runtime and enters it for every call:
    // a hundred coroutines of one thread are inside theirs at once, each
    // with its own copy of tokio's thread-local context (hooks FT1-FT3).
    let pg = Postgres::start();
    let conninfo = pg.conninfo();
    let (answers, took, ticks) = connected_then_together(
        move || postgres::Client::connect(&conninfo, postgres::NoTls).expect("connect"),
        |i, c: &mut postgres::Client| {
            let row = c
                .query_one("select $1::int8 * 2, pg_sleep(0.1)::text", &[&(i as i64)])
                .expect("query");
            row.get::<_, i64>(0)
        },
    );
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(*a, 2 * i as i64);
    }
    assert_together(took, ticks);
}

#[test]
fn postgres_crate_queries_keep_the_loop_running() {
    let pg = Postgres::start();
    let conninfo = pg.conninfo();
    let (sum, took, (ticks, worst)) = Builder::new()
        .hooks(true)
        .run(move || {
            let ticker = Ticker::start();
            let start = Instant::now();
            let mut client =
                postgres::Client::connect(&conninfo, postgres::NoTls).expect("connect");
            let mut sum = 0i64;
            for i in 0..5i64 {
                let row = client
                    .query_one("select $1::int8 + 1, pg_sleep(0.1)::text", &[&i])
                    .expect("query");
                sum += row.get::<_, i64>(0);
            }
            (sum, start.elapsed(), ticker.stop())
        })
        .expect("runtime");
    assert_eq!(sum, 15);
    eprintln!(
        "5 postgres queries of 100 ms took {took:?}; ticker: {ticks} ticks, longest gap {worst:?}"
    );
    // 500 ms of server time: the ticker ticks through it.
    assert!(ticks >= 25, "the ticker got {ticks} ticks in {took:?}");
    assert!(worst < Duration::from_millis(100), "longest gap {worst:?}");
}
