//! Servers for the real-software tests: a PostgreSQL cluster and a Redis
//! server started in a scratch directory for one test process and stopped
//! when dropped, a slow HTTP server in a process of its own, and the ticker that shows
//! the loop kept running.
//!
//! The servers come from the system's packages (`postgresql`,
//! `redis-server`; `.ci/run` installs them). A missing one fails the test
//! with one line saying which package to install.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port on the loopback interface (bound, read, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A scratch directory under the system's temporary directory, removed
/// when dropped.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A new empty directory named after `what` and this process.
    pub fn new(what: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tests-real-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A PostgreSQL cluster of its own, trust authentication, listening on
/// 127.0.0.1; stopped when dropped.
#[derive(Debug)]
pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    /// The port it listens on.
    pub port: u16,
    _dir: Scratch,
}

impl Postgres {
    /// Makes and starts the cluster (a few seconds).
    pub fn start() -> Postgres {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .and_then(|d| {
                d.flatten()
                    .map(|e| e.path().join("bin"))
                    .filter(|b| b.join("initdb").exists())
                    .max()
            })
            .unwrap_or_else(|| panic!("PostgreSQL is not installed: apt-get install postgresql"));
        let dir = Scratch::new("pg");
        let data = dir.0.join("data");
        let root = is_root();
        if root {
            // The server refuses to run as root: it runs as `postgres`.
            let ok = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir.0)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "cannot give {} to the postgres user", dir.0.display());
        }
        let port = free_port();
        run_as_postgres(
            root,
            &bin.join("initdb"),
            &[
                "-D",
                path(&data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=250 -c fsync=off",
            dir.0.display()
        );
        let log = dir.0.join("log");
        run_as_postgres(
            root,
            &bin.join("pg_ctl"),
            &[
                "-D",
                path(&data),
                "-o",
                &opts,
                "-l",
                path(&log),
                "-w",
                "start",
            ],
        );
        Postgres {
            bin,
            data,
            port,
            _dir: dir,
        }
    }

    /// A libpq connection string for it.
    pub fn conninfo(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let root = is_root();
        let mut cmd = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"));
            c
        } else {
            Command::new(self.bin.join("pg_ctl"))
        };
        let _ = cmd
            .args(["-D", path(&self.data), "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// Whether this process runs as root (PostgreSQL then runs as `postgres`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn run_as_postgres(root: bool, exe: &Path, args: &[&str]) {
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    let out = cmd.args(args).output().expect("run a PostgreSQL tool");
    assert!(
        out.status.success(),
        "{} failed: {}{}",
        exe.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Redis server of its own, no persistence; killed when dropped.
#[derive(Debug)]
pub struct Redis {
    child: Child,
    /// The port it listens on.
    pub port: u16,
}

impl Redis {
    /// Starts it and waits until it answers.
    pub fn start() -> Redis {
        let port = free_port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server ({e}): apt-get install redis-server")
            });
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { child, port }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `slow-http` server (this package's binary), in a process of its
/// own: it answers every HTTP/1.1 request after a delay with
/// `hello <path>`; killed when dropped.
///
/// A process of its own, not a thread of the test's: its threads' stacks
/// and heap would share the test process's memory map, and a hundred
/// connections' worth of `mmap` and `mprotect` on both sides kept the loop
/// under test waiting for the map's lock (the kernel's, not a hooked call)
/// for tens of milliseconds.
#[derive(Debug)]
pub struct SlowHttp {
    child: Child,
    /// The address it listens on.
    pub addr: SocketAddr,
}

impl SlowHttp {
    /// Starts `exe` (`env!("CARGO_BIN_EXE_slow-http")` in a test) with
    /// `delay` and reads the address it prints.
    pub fn start(exe: &str, delay: Duration) -> SlowHttp {
        let mut child = Command::new(exe)
            .arg(delay.as_millis().to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {exe}: {e}"));
        let mut line = String::new();
        let out = child.stdout.take().expect("its stdout");
        BufReader::new(out)
            .read_line(&mut line)
            .expect("its address");
        let addr = line
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{exe} printed {line:?}, not an address: {e}"));
        SlowHttp { child, addr }
    }
}

impl Drop for SlowHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The suite's 10 ms ticker (tests::support).
pub use tests::support::{Ticker, Ticks};
