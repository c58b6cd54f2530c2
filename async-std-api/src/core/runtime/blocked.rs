//! Where a loop thread that holds the loop is (the watchdog's WD6): the
//! system call it is blocked in, and the code that called it, read from
//! another thread without stopping or signalling it.
//!
//! - **BL1** The kernel's `/proc/self/task/<tid>/syscall` says whether the
//!   thread is in a system call, which one, and its stack pointer. A thread
//!   that is `running` is on the CPU: a busy loop or a long computation.
//! - **BL2** The calling code is found by reading the thread's stack from
//!   its stack pointer up (through `/proc/self/mem`, a copy by the kernel,
//!   so nothing here races the thread's own writes) and resolving the words
//!   that point into executable code: the first that resolves outside
//!   std, the C library and this crate is the code that made the call, and
//!   the first of those outside `~/.cargo/registry` is the program's own.
//!   Words left on the stack by earlier calls can also point into code, so
//!   the report says "as far as its stack shows".
//! - **BL3** Nothing here touches the loop thread's state: it is read-only
//!   and runs on the watchdog thread, once per warning.

use std::ffi::c_void;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// How much of the stack is read, from the stack pointer up.
const STACK_READ: usize = 64 * 1024;

/// The most candidate frames resolved per report.
const MAX_RESOLVED: usize = 256;

/// BL1, BL2: one line about where thread `tid` is, or `None` if the kernel
/// does not say.
pub(crate) fn describe(tid: libc::pid_t) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).ok()?;
    let text = text.trim();
    if text == "running" {
        return Some(
            "it is running on the CPU, not in a system call (a busy loop or a long computation)"
                .to_owned(),
        );
    }
    let fields: Vec<&str> = text.split_whitespace().collect();
    let nr: i64 = fields.first()?.parse().ok()?;
    let sp = hex(fields.get(fields.len().checked_sub(2)?)?)?;
    let call = if nr < 0 {
        "it is blocked, not in a system call".to_owned()
    } else {
        format!("it is blocked in the system call {}", syscall(nr))
    };
    match calling_code(sp) {
        Some(at) => Some(format!(
            "{call}, called from {at} (as far as its stack shows)"
        )),
        None => Some(call),
    }
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// A system call's name, with what usually makes it.
fn syscall(nr: i64) -> String {
    let known: &[(i64, &str)] = &[
        (libc::SYS_read, "read"),
        (libc::SYS_write, "write"),
        (libc::SYS_pread64, "pread64"),
        (libc::SYS_pwrite64, "pwrite64"),
        (libc::SYS_readv, "readv"),
        (libc::SYS_writev, "writev"),
        (libc::SYS_preadv2, "preadv2"),
        (libc::SYS_recvfrom, "recvfrom"),
        (libc::SYS_sendto, "sendto"),
        (libc::SYS_recvmsg, "recvmsg"),
        (libc::SYS_sendmsg, "sendmsg"),
        (libc::SYS_connect, "connect"),
        (libc::SYS_accept4, "accept4"),
        (libc::SYS_ppoll, "ppoll (poll)"),
        (libc::SYS_pselect6, "pselect6 (select)"),
        (libc::SYS_epoll_pwait, "epoll_pwait (epoll_wait)"),
        (
            libc::SYS_nanosleep,
            "nanosleep (std::thread::sleep, sleep, usleep)",
        ),
        (
            libc::SYS_clock_nanosleep,
            "clock_nanosleep (std::thread::sleep, sleep, usleep)",
        ),
        (
            libc::SYS_futex,
            "futex (a lock or a wait between threads: std's Mutex, Condvar, RwLock, a channel, \
             a thread join)",
        ),
        (
            libc::SYS_wait4,
            "wait4 (waitpid, std::process::Child::wait)",
        ),
        (libc::SYS_waitid, "waitid"),
        (libc::SYS_openat, "openat (open)"),
        (libc::SYS_fsync, "fsync"),
        (libc::SYS_fdatasync, "fdatasync"),
        (libc::SYS_close, "close"),
    ];
    #[cfg(target_arch = "x86_64")]
    let more: &[(i64, &str)] = &[
        (libc::SYS_poll, "poll"),
        (libc::SYS_select, "select"),
        (libc::SYS_epoll_wait, "epoll_wait"),
        (libc::SYS_accept, "accept"),
        (libc::SYS_open, "open"),
        (libc::SYS_pause, "pause"),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    let more: &[(i64, &str)] = &[];
    known
        .iter()
        .chain(more)
        .find(|(n, _)| *n == nr)
        .map_or_else(|| format!("number {nr}"), |(_, name)| (*name).to_owned())
}

/// A frame found on the stack: its function and, if known, file and line.
struct Frame {
    name: String,
    file: Option<String>,
    line: Option<u32>,
}

impl Frame {
    fn show(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{} at {f}:{l}", self.name),
            (Some(f), None) => format!("{} at {f}", self.name),
            _ => self.name.clone(),
        }
    }

    /// std, core, alloc, the C library, this crate, or the plugins and
    /// the crates they run on (BL2).
    fn is_runtime(&self) -> bool {
        const RUNTIME: &[&str] = &[
            "std::",
            "core::",
            "alloc::",
            "async_std_api::",
            "async_scheduler::",
            "async_abi::",
            "reactor_sdk::",
            "reactor_mio::",
            "reactor_uring::",
            "reactor_example::",
            "reactor_poll::",
            "mio::",
            "io_uring::",
            "context::",
            "corosensei::",
            "tracing",
            "libloading::",
            "backtrace::",
            "__",
        ];
        let n = self.name.trim_start_matches('<');
        let file = self.file.as_deref().unwrap_or("");
        RUNTIME.iter().any(|p| n.starts_with(p))
            || file.starts_with("/rustc/")
            // The C library's and the dynamic loader's own sources, when
            // their debug information is installed (`./elf/dl-lookup.c`).
            || file.starts_with("./")
            // This crate's own frames, the C library hooks among them
            // (`#[no_mangle]`, so their names carry no path).
            || file.starts_with(concat!(env!("CARGO_MANIFEST_DIR"), "/src/"))
            // Without debug information a Rust function still has its
            // path; a name without one is the C library's.
            || (self.file.is_none() && !n.contains("::"))
    }

    fn is_dependency(&self) -> bool {
        self.file
            .as_deref()
            .is_some_and(|f| f.contains("/.cargo/registry/") || f.contains("/.cargo/git/"))
    }
}

/// BL2: the nearest code outside the runtime on the stack above `sp`, and
/// the program's own if that is a dependency. Also for a suspended
/// coroutine's stack, whose frames stay in place while it waits (a hooked
/// call's site in reports: `runtime::called_from`).
pub(crate) fn calling_code(sp: u64) -> Option<String> {
    // Return addresses are stored at 8-byte-aligned slots.
    let sp = sp & !7;
    let code = executable_ranges();
    let mem = File::open("/proc/self/mem").ok()?;
    let mut stack = vec![0u8; STACK_READ];
    let mut got = 0;
    // The stack may end before STACK_READ: read what is mapped.
    while got < stack.len() {
        match mem.read_at(&mut stack[got..], sp + got as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let mut resolved = 0;
    let mut outside: Option<Frame> = None;
    for word in stack[..got].chunks_exact(8) {
        let addr = u64::from_ne_bytes(word.try_into().ok()?);
        if !code.iter().any(|&(lo, hi)| addr > lo && addr < hi) {
            continue;
        }
        if !after_call(&mem, addr) {
            continue;
        }
        resolved += 1;
        if resolved > MAX_RESOLVED {
            break;
        }
        let Some(frame) = resolve(addr - 1) else {
            continue;
        };
        if frame.is_runtime() {
            continue;
        }
        match &outside {
            None if !frame.is_dependency() => return Some(frame.show()),
            None => outside = Some(frame),
            Some(dep) if !frame.is_dependency() => {
                return Some(format!("{}, from {}", dep.show(), frame.show()))
            }
            Some(_) => {}
        }
    }
    outside.map(|f| f.show())
}

/// Whether `addr` follows a call instruction, as a return address does (a
/// pointer to a function's start, left in a slot, does not): the x86-64
/// forms `call rel32` and `call r/m64`; on other targets every address
/// counts.
fn after_call(mem: &File, addr: u64) -> bool {
    if !cfg!(target_arch = "x86_64") {
        return true;
    }
    let mut before = [0u8; 7];
    let Some(start) = addr.checked_sub(before.len() as u64) else {
        return false;
    };
    if mem.read_exact_at(&mut before, start).is_err() {
        return false;
    }
    // `E8 rel32`, five bytes before.
    if before[2] == 0xE8 {
        return true;
    }
    // `FF /2` (ModRM reg field 2) with 0 to 5 bytes after the ModRM byte
    // (SIB, displacement): the opcode sits 2 to 7 bytes before.
    (2..=7).any(|len| {
        let at = before.len() - len;
        before[at] == 0xFF && (before[at + 1] >> 3) & 7 == 2
    })
}

/// The address ranges of executable mappings (`r-xp` in
/// `/proc/self/maps`).
fn executable_ranges() -> Vec<(u64, u64)> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            let perms = f.next()?;
            if !perms.contains('x') {
                return None;
            }
            let (lo, hi) = range.split_once('-')?;
            Some((hex(lo)?, hex(hi)?))
        })
        .collect()
}

fn resolve(addr: u64) -> Option<Frame> {
    let mut out = None;
    backtrace::resolve(addr as *mut c_void, |sym| {
        if out.is_none() {
            if let Some(name) = sym.name() {
                out = Some(Frame {
                    name: format!("{name:#}"),
                    file: sym.filename().map(|p| p.display().to_string()),
                    line: sym.lineno(),
                });
            }
        }
    });
    out
}
