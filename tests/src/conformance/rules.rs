//! The rules of `docs/abi/` as the kit knows them, and the assertions that
//! cite them.
//!
//! # Why a copy of the rules
//!
//! The kit is a standalone program (it runs where the repository is not),
//! yet a failure must say what the rule requires and where it is written,
//! and the kit must know which ABI minor introduced (or tightened) each
//! rule to hold a plugin only to the rules of the minor it implements.
//! [`RULES`] is that copy: `cargo xtask check-abi-rules` fails when it
//! differs from the pages and `cargo xtask check-abi-rules --bless`
//! rewrites it, so it is never edited by hand.
//!
//! # Assertions
//!
//! Every check of a tier is one of [`ensure!`](crate::ensure),
//! [`ensure_eq!`](crate::ensure_eq), [`ensure_ne!`](crate::ensure_ne),
//! [`rule_failed!`](crate::rule_failed) or [`violated`], whose first argument is the rule id it checks (`cargo
//! xtask check-abi-rules` fails on a bare `assert!` in a tier, or on an id
//! the pages do not define). A failure reads:
//!
//! ```text
//! R-IO-12 (docs/abi/io.md#r-io-12, ABI 1.0, tightened in 1.1) violated. The case did: io_submit(AA_IO_WRITE of 1 byte on a socket, op_flags 1 << 30 (0x40000000), flags 0). The rule requires: AA_E_INVALID (op_flags bits no minor defines). The reactor did: failed with AA_E_UNSUPPORTED (-10001).
//!   Rule: Malformed requests fail at `io_submit`, ...
//! ```
//!
//! The first line is one line whatever its length: it is what the kit's
//! summary prints for the case (`failed: tier::case [rules]: ...`). The
//! rule's text, and for a tightened rule which minor the reactor is held
//! to, follow on their own lines, in the details the kit prints under
//! `FAIL`. The case's own setup failing (a system call the kit makes for
//! itself) is not a rule failure: [`setup_failed!`](crate::setup_failed)
//! says "could not set up the case" and blames no rule.
//!
//! # Versions
//!
//! [`implements`] is the minor a reactor says it implements (its vtable's
//! `iface_minor`, the interface the kit drives). A case whose every rule
//! is newer is skipped, naming the rules and their minor
//! ([`newer_rules`]); a case that checks a rule tightened after the
//! plugin's minor checks the earlier requirement instead, asking
//! [`tightened_for`].

use std::fmt::Display;
use std::sync::atomic::{AtomicU32, Ordering};

use async_abi::*;

use super::harness::Submit;
use super::plugin::Reactor;

/// One rule of `docs/abi/`: where it is, when it came, what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleDoc {
    /// `R-IO-12`.
    pub id: &'static str,
    /// The page under `docs/abi/` (`io.md`).
    pub page: &'static str,
    /// The ABI minor that introduced it (0 for 1.0).
    pub since: u16,
    /// The minor that tightened it, if one did.
    pub tightened: Option<u16>,
    /// The rule's text as the page writes it (up to `*Since:*`).
    pub text: &'static str,
    /// What the minor before `tightened` required (empty if never
    /// tightened).
    pub earlier: &'static str,
}

impl RuleDoc {
    /// `docs/abi/io.md#r-io-12`.
    pub fn link(&self) -> String {
        format!("docs/abi/{}#{}", self.page, self.id.to_ascii_lowercase())
    }

    /// `ABI 1.0` or `ABI 1.0, tightened in 1.1`.
    pub fn minors(&self) -> String {
        match self.tightened {
            Some(t) => format!("ABI 1.{}, tightened in 1.{t}", self.since),
            None => format!("ABI 1.{}", self.since),
        }
    }
}

// The table below is generated from docs/abi/*.md; see the module doc.
// BEGIN RULES (cargo xtask check-abi-rules --bless)
/// Every rule of `docs/abi/`, by id (generated: see the module doc).
pub const RULES: &[RuleDoc] = &[
    RuleDoc {
        id: "R-COMPAT-1",
        page: "versioning.md",
        since: 0,
        tightened: None,
        text: "A reactor reads `min(op->struct_size, sizeof(AaIoOp))` bytes of a request: a 1.0-sized `AaIoOp` (`offsetof(AaIoOp, path)` bytes) is served and nothing beyond it is read.",
        earlier: "",
    },
    RuleDoc {
        id: "R-COMPAT-2",
        page: "versioning.md",
        since: 1,
        tightened: None,
        text: "`instance_caps` (1.1) never reports a bit that `caps` lacks.",
        earlier: "",
    },
    RuleDoc {
        id: "R-COMPAT-3",
        page: "versioning.md",
        since: 0,
        tightened: Some(1),
        text: "A 1.1 request whose capability the instance lacks fails with `AA_E_UNSUPPORTED`, creating nothing, and its `last_error_message` is one line that starts with `io_submit: ` and the request's opcode name as the header spells it (`io_submit: AA_IO_OPENAT is a request ...`).",
        earlier: "a reactor of minor 0 does not know these opcodes: R-IO-12 of 1.0 holds, `AA_E_UNSUPPORTED` or `AA_E_INVALID`, any message",
    },
    RuleDoc {
        id: "R-DNS-1",
        page: "dns.md",
        since: 0,
        tightened: None,
        text: "`localhost` resolves: to `127.0.0.1` with `AF_INET`, and with `AF_UNSPEC` to a list that includes it.",
        earlier: "",
    },
    RuleDoc {
        id: "R-DNS-2",
        page: "dns.md",
        since: 0,
        tightened: None,
        text: "A name under `.invalid` fails with `AA_E_DNS_NONAME`.",
        earlier: "",
    },
    RuleDoc {
        id: "R-DNS-3",
        page: "dns.md",
        since: 0,
        tightened: None,
        text: "Malformed lookups (both strings empty, a NUL byte, short hints, an unknown family or socket type) fail with `AA_E_INVALID`, creating nothing.",
        earlier: "",
    },
    RuleDoc {
        id: "R-DNS-4",
        page: "dns.md",
        since: 0,
        tightened: None,
        text: "A pending lookup may be disposed at any time; `destroy` then returns `AA_OK` (after `AA_E_BUSY` for a while at most).",
        earlier: "",
    },
    RuleDoc {
        id: "R-ERR-1",
        page: "status.md",
        since: 0,
        tightened: None,
        text: "A call that fails returns a negative status, creates nothing and never calls back (AA-R8): a NULL callback or out pointer, a descriptor that is not open.",
        earlier: "",
    },
    RuleDoc {
        id: "R-ERR-2",
        page: "status.md",
        since: 0,
        tightened: Some(1),
        text: "Every failure sets `last_error_message`: `destroy` answering `AA_E_BUSY`, an unknown opcode, a refused signal, a bad argument to `cancel` or `run_once`, a failed constructor. The message is one line, describes this failure (not an earlier one), its full length is returned, and a short buffer gets a truncated, NUL-terminated copy.",
        earlier: "1.0 required a one-line message, with that length and truncation, after a failed `io_submit` and after `destroy` answering `AA_E_BUSY`; the other failures listed here, and a message that differs from the previous failure's, are 1.1",
    },
    RuleDoc {
        id: "R-ERR-3",
        page: "status.md",
        since: 0,
        tightened: None,
        text: "`cancel` with a reason that is not negative, or of an event with nothing pending (a one-shot timer that fired, a request that completed), fails and calls nothing.",
        earlier: "",
    },
    RuleDoc {
        id: "R-EV-1",
        page: "event.md",
        since: 0,
        tightened: None,
        text: "`cancel(ev, reason)` calls nothing itself; the event's callback runs exactly once more, with `reason`, from a later `run_once` (a cancel made inside a callback: from a later iteration than the running one), and then never again for that operation.",
        earlier: "",
    },
    RuleDoc {
        id: "R-EV-2",
        page: "event.md",
        since: 0,
        tightened: None,
        text: "`close` of an armed timer, poll, trigger or signal watcher calls only `on_closed`: exactly once, from a later `run_once`, and no callback of the event's kind, even with its deadline passed or its readiness pending; a second `close` fails.",
        earlier: "",
    },
    RuleDoc {
        id: "R-EV-3",
        page: "event.md",
        since: 0,
        tightened: None,
        text: "A disposed event never calls back, whatever was pending.",
        earlier: "",
    },
    RuleDoc {
        id: "R-EV-4",
        page: "event.md",
        since: 0,
        tightened: None,
        text: "A callback may call any `[loop]` function, including `dispose` of its own event, `io_submit` on the same descriptor and `trigger_fire` of its own trigger (which runs it again from a later iteration, never twice in one `run_once`).",
        earlier: "",
    },
    RuleDoc {
        id: "R-EV-5",
        page: "event.md",
        since: 0,
        tightened: None,
        text: "Every callback gets, first, the event it belongs to (the pointer its constructor or `io_submit` gave the host) and, last, the `ud` given with it, also when several events of several kinds complete in one `run_once`. (The kit's harness checks this of every callback of every case.)",
        earlier: "",
    },
    RuleDoc {
        id: "R-FS-1",
        page: "fs-watch.md",
        since: 0,
        tightened: None,
        text: "Changes are reported with the entry's name (empty for the watched file itself): creating then writing a file is a rename then a change; every watch of a path is told, and a disposed one no more.",
        earlier: "",
    },
    RuleDoc {
        id: "R-FS-2",
        page: "fs-watch.md",
        since: 0,
        tightened: None,
        text: "Watching a path that does not exist fails with `-ENOENT`, creating nothing.",
        earlier: "",
    },
    RuleDoc {
        id: "R-FS-3",
        page: "fs-watch.md",
        since: 0,
        tightened: None,
        text: "Deleting the watched directory reports `AA_FS_RENAME` with an empty name, then ends the watch with `-ENOENT`.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-1",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "With `AA_IO_TRY_INLINE` and the operation possible at once, `io_submit` returns `AA_DONE` with the result in `op->result`, and creates no event and no callback (`AA_CAP_IO_INLINE`).",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-10",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "Reads at the current position on one descriptor (and `AA_IO_RECVFROM` with them) complete in submission order, each with the data that arrived for it; so do writes.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-11",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "Requests submitted before a `run_once` start in submission order across descriptors: a descriptor whose oldest pending request was submitted earlier starts earlier (a reactor may start all of one descriptor's queued requests together).",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-12",
        page: "io.md",
        since: 0,
        tightened: Some(1),
        text: "Malformed requests fail at `io_submit`, creating nothing: a NULL op, a `struct_size` below the 1.0 size, a NULL buffer with a length, unknown `io_submit` flag bits (`AA_E_INVALID`), an opcode the reactor does not know (`AA_E_UNSUPPORTED`); a descriptor that is not open fails at submission or completes with `-EBADF`. Since 1.1 also: unknown `op_flags` bits (bits no minor defines, as `1 << 30` and `1 << 31`) are `AA_E_INVALID`, and the `last_error_message` of an unknown opcode is one line that names the opcode as the decimal number it was given (opcode `0x4000`: the text contains `16384`, as in `io_submit: unknown opcode 16384`).",
        earlier: "1.0 required: an unknown opcode fails with `AA_E_INVALID`, with no requirement on its message, and the kit also accepts the 1.1 answer `AA_E_UNSUPPORTED` from a 1.0 reactor; `op_flags` was not checked",
    },
    RuleDoc {
        id: "R-IO-13",
        page: "io.md",
        since: 1,
        tightened: None,
        text: "Datagram requests (`AA_CAP_IO_DGRAM`) carry data and the sender's address (UDP, Unix path, abstract and unnamed senders), truncate a long datagram and keep message boundaries, peek with `AA_IO_PEEK` without consuming, send to the connected peer without an address and report a refused port; `AA_IO_PEEK` on a pipe or on a send is `AA_E_INVALID`.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-14",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "A request's buffer stays the request's until its callback ran (AA-R5): a cancelled receive fills it only before its one callback, and no datagram is lost; a disposed one never calls back and consumes nothing.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-15",
        page: "io.md",
        since: 1,
        tightened: None,
        text: "File requests (`AA_CAP_IO_FILE`, `AA_CAP_IO_FTRUNCATE`) do what their system calls do, with the same `-errno`: open, statx (as std's metadata; `AA_IO_NOFOLLOW`), fsync and fdatasync, mkdir, rename, unlink, truncate; a cancelled or disposed one leaks no descriptor.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-2",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "A request that cannot complete at once (and every request without `AA_IO_TRY_INLINE`) returns `AA_OK` and completes exactly once, from a `run_once`, with its result.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-3",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "`AA_IO_ACCEPT` gives a new descriptor and fills the peer address; `AA_IO_CONNECT` gives 0, or `-ECONNREFUSED` from a closed port.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-4",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "A read at end of stream gives 0, also when the end arrived together with the last data; a write to a peer that is gone gives `-EPIPE` or `-ECONNRESET` (never `SIGPIPE`).",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-5",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "`cancel` of a pending request completes it exactly once with the reason (or its real result if the kernel completed it first).",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-6",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "`close` of a pending request: nothing inside `close`, then the request completes with `-ECANCELED`, then one `on_closed` (AA-R4).",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-7",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "`AA_IO_CLOSE` completes the descriptor's other pending requests with `-ECANCELED`, each once, and the reactor forgets the descriptor, so a new one with the same number works.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-8",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "A pending `AA_IO_CLOSE` whose event is disposed (or the loop destroyed) before it ran still closes its descriptor: the reactor closes it, at the latest before `destroy` returns `AA_OK`; the host never closes it itself.",
        earlier: "",
    },
    RuleDoc {
        id: "R-IO-9",
        page: "io.md",
        since: 0,
        tightened: None,
        text: "Requests are independent: a pending read does not hold up a write on the same descriptor.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOAD-1",
        page: "versioning.md",
        since: 0,
        tightened: None,
        text: "The entry symbol returns a static descriptor of this ABI major with the reactor role, a name and a version, and `get_interface(\"aa.reactor.v1\")` returns a vtable whose header's `struct_size` covers at least the ABI 1.0 prefix.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOAD-2",
        page: "versioning.md",
        since: 0,
        tightened: None,
        text: "`get_interface` answers NULL for an interface id it does not have (never another table).",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOOP-1",
        page: "loop.md",
        since: 0,
        tightened: None,
        text: "An empty loop is created and destroyed with `AA_OK`; `run_once(0)` on it runs nothing and returns 0.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOOP-2",
        page: "loop.md",
        since: 0,
        tightened: None,
        text: "`destroy` answers `AA_E_BUSY` (with a `last_error_message`) while an event is not disposed, and `AA_OK` once everything is disposed and the kernel holds nothing.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOOP-3",
        page: "loop.md",
        since: 0,
        tightened: None,
        text: "A `create` whose config `struct_size` is smaller than the 1.0 config fails with `AA_E_INVALID`.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOOP-4",
        page: "loop.md",
        since: 0,
        tightened: None,
        text: "`now_ns` is the cached monotonic clock, refreshed by every `run_once`: it moves forward across iterations.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOOP-5",
        page: "loop.md",
        since: 0,
        tightened: None,
        text: "Timers that fall due during a wait that blocked (step 3) fire in the same `run_once` (those that fall due during a wait that only polled may fire in the next one, step 2): a `run_once(-1)` whose wait the nearest timer cut short returns only after running that timer, never empty-handed, and without waiting for farther timers.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOOP-6",
        page: "loop.md",
        since: 0,
        tightened: None,
        text: "`alive()` counts active, referenced, non-hidden events: an armed timer until it fired, a pending request or lookup until its callback, a close in progress until `on_closed`; an empty loop has 0.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOOP-7",
        page: "loop.md",
        since: 0,
        tightened: None,
        text: "`set_ref(ev, false)` and `AA_EVF_HIDDEN` take an event out of `alive()` without stopping it.",
        earlier: "",
    },
    RuleDoc {
        id: "R-LOOP-8",
        page: "loop.md",
        since: 0,
        tightened: None,
        text: "`wake(r)` from another thread makes a `run_once(-1)` blocked in the OS return, with no callback, also while a timer due much later bounds the wait (a wake-up is never taken for the timer cutting the wait short).",
        earlier: "",
    },
    RuleDoc {
        id: "R-OPT-1",
        page: "reactor-guide.md",
        since: 0,
        tightened: None,
        text: "The reactor's option prefix is its descriptor name without a leading `reactor-`, then a dot (`reactor-mio`: `mio.`); a key with another plugin's prefix is ignored, the other built-in reactors' included.",
        earlier: "",
    },
    RuleDoc {
        id: "R-OPT-2",
        page: "reactor-guide.md",
        since: 0,
        tightened: None,
        text: "An unknown key in the reactor's own prefix fails `create` with `AA_E_INVALID`, naming the key: the key's text, as given, appears in the line.",
        earlier: "",
    },
    RuleDoc {
        id: "R-OPT-3",
        page: "reactor-guide.md",
        since: 0,
        tightened: None,
        text: "A key without a prefix (or with an empty one) fails `create` with `AA_E_INVALID`, naming the key (its text, as given, appears in the line) and saying how the reactor's options are written: the line contains the reactor's prefix with its dot (`c.` for `reactor-c`), as in `unknown option \"events\": write it c.<option>`.",
        earlier: "",
    },
    RuleDoc {
        id: "R-OPT-4",
        page: "reactor-guide.md",
        since: 0,
        tightened: None,
        text: "`create` has one error channel: its reason is one non-empty line in `cfg->err_buf`, and the same failure is not also logged at warn or error (the host prints `err_buf` once).",
        earlier: "",
    },
    RuleDoc {
        id: "R-POLL-1",
        page: "poll.md",
        since: 0,
        tightened: None,
        text: "A poll reports readiness when the descriptor becomes ready, not before: a pipe's read end once data was written, a fresh socket as writable.",
        earlier: "",
    },
    RuleDoc {
        id: "R-POLL-2",
        page: "poll.md",
        since: 0,
        tightened: None,
        text: "`poll_set_interest` re-evaluates the current readiness and reports it if present; interest 0 disarms the poll (no report, not alive) and a new interest re-arms it.",
        earlier: "",
    },
    RuleDoc {
        id: "R-POLL-3",
        page: "poll.md",
        since: 0,
        tightened: None,
        text: "A reactor must not report the same readiness again until it was consumed (an operation returned `EAGAIN`) or `poll_set_interest` was called: iterations with the data still unread run no callback. (A host still treats a report as a hint and re-checks.)",
        earlier: "",
    },
    RuleDoc {
        id: "R-POLL-4",
        page: "poll.md",
        since: 0,
        tightened: None,
        text: "A cancelled poll is still a poll: after its reason was delivered, `poll_set_interest` re-arms it and it reports readiness again.",
        earlier: "",
    },
    RuleDoc {
        id: "R-POLL-5",
        page: "poll.md",
        since: 0,
        tightened: None,
        text: "The peer's hang-up is reported, as `AA_POLL_HUP` or as readable (a read then returns end of stream).",
        earlier: "",
    },
    RuleDoc {
        id: "R-POLL-6",
        page: "poll.md",
        since: 0,
        tightened: None,
        text: "A poll and a pending request on one descriptor both see its data: one registration serves both.",
        earlier: "",
    },
    RuleDoc {
        id: "R-POLL-7",
        page: "poll.md",
        since: 0,
        tightened: None,
        text: "Closing a poll made with `AA_EVF_OWNS_FD` closes its descriptor (AA-R6).",
        earlier: "",
    },
    RuleDoc {
        id: "R-POLL-8",
        page: "poll.md",
        since: 2,
        tightened: None,
        text: "Readiness that comes back after the host read the descriptor to `EAGAIN`, before the loop looked again, is reported: by a reactor without `AA_CAP_POLL_LEVEL` by itself (a new edge), by one with it once the host called `poll_set_interest` with the same interest (as a host of minor 2 or later does).",
        earlier: "",
    },
    RuleDoc {
        id: "R-PROC-1",
        page: "process.md",
        since: 0,
        tightened: None,
        text: "A child's exit is reported once, with its code (or -1 and the killing signal), and the child is reaped; a child that exited before the watch was made is reported by the next `run_once`.",
        earlier: "",
    },
    RuleDoc {
        id: "R-PROC-2",
        page: "process.md",
        since: 0,
        tightened: None,
        text: "A pid that is not a child of this process fails (`-ECHILD`, `-ESRCH` or `AA_E_INVALID`), creating nothing.",
        earlier: "",
    },
    RuleDoc {
        id: "R-SIG-1",
        page: "signal.md",
        since: 0,
        tightened: None,
        text: "A raised signal calls each watcher once, from `run_once`, with its number; deliveries before an iteration coalesce into one callback per watcher.",
        earlier: "",
    },
    RuleDoc {
        id: "R-SIG-2",
        page: "signal.md",
        since: 0,
        tightened: None,
        text: "Every watcher of the signal is told, in every loop of the process that watches it.",
        earlier: "",
    },
    RuleDoc {
        id: "R-SIG-3",
        page: "signal.md",
        since: 0,
        tightened: None,
        text: "The previous disposition is restored when the last watcher of a signal stops.",
        earlier: "",
    },
    RuleDoc {
        id: "R-SIG-4",
        page: "signal.md",
        since: 0,
        tightened: None,
        text: "`SIGKILL`, `SIGSTOP`, the synchronous faults, the C library's signals and numbers that are not signals are refused with `AA_E_INVALID`, creating nothing.",
        earlier: "",
    },
    RuleDoc {
        id: "R-TIMER-1",
        page: "timer.md",
        since: 0,
        tightened: None,
        text: "Due timers fire in deadline order (a timer's deadline is the loop clock at its arming plus its duration), also when several are due in the same iteration (whatever order they were armed in).",
        earlier: "",
    },
    RuleDoc {
        id: "R-TIMER-2",
        page: "timer.md",
        since: 0,
        tightened: None,
        text: "Timers with equal deadlines fire in the order they were armed.",
        earlier: "",
    },
    RuleDoc {
        id: "R-TIMER-3",
        page: "timer.md",
        since: 0,
        tightened: None,
        text: "A one-shot timer fires once and is then inactive; a periodic timer fires every `repeat_ns` until it is cancelled, closed or disposed.",
        earlier: "",
    },
    RuleDoc {
        id: "R-TIMER-4",
        page: "timer.md",
        since: 0,
        tightened: None,
        text: "`timer_rearm` replaces the deadline with no callback for the old one, and restarts a one-shot timer that already fired.",
        earlier: "",
    },
    RuleDoc {
        id: "R-TIMER-5",
        page: "timer.md",
        since: 0,
        tightened: None,
        text: "The reactor refreshes its clock before arming: a timer armed after a burst of CPU work waits its full duration from the arming.",
        earlier: "",
    },
    RuleDoc {
        id: "R-TIMER-6",
        page: "timer.md",
        since: 0,
        tightened: None,
        text: "Disposing an armed timer stops it silently, also from inside its own callback (a periodic timer never runs again).",
        earlier: "",
    },
    RuleDoc {
        id: "R-TRIG-1",
        page: "trigger.md",
        since: 0,
        tightened: None,
        text: "`trigger_fire` from another thread wakes a `run_once(-1)` blocked in the OS, also while a timer due much later bounds the wait; the callback runs once, on the loop thread.",
        earlier: "",
    },
    RuleDoc {
        id: "R-TRIG-2",
        page: "trigger.md",
        since: 0,
        tightened: None,
        text: "Fires coalesce: several before the loop notices are one callback, and a fire after the callback is another.",
        earlier: "",
    },
    RuleDoc {
        id: "R-TRIG-3",
        page: "trigger.md",
        since: 0,
        tightened: None,
        text: "After `cancel` (whose reason is delivered once) or `close`, fires run nothing.",
        earlier: "",
    },
];
// END RULES

/// The rule `id`, if the pages define it.
pub fn rule(id: &str) -> Option<&'static RuleDoc> {
    RULES.iter().find(|r| r.id == id)
}

/// The minor a reactor implements: its vtable's `iface_minor` (the
/// `aa.reactor.v1` interface is what the kit drives; the loader reads
/// capability bits by the same number).
pub fn implements(reactor: &Reactor) -> u16 {
    reactor.vtable().hdr.iface_minor
}

/// The rules of `ids` that a reactor of minor `minor` is not held to (each
/// introduced by a later minor), as `R-IO-13 (ABI 1.1)`.
pub fn newer_rules(ids: &[&str], minor: u16) -> Vec<String> {
    ids.iter()
        .filter_map(|id| rule(id))
        .filter(|r| r.since > minor)
        .map(|r| format!("{} (ABI 1.{})", r.id, r.since))
        .collect()
}

/// Whether a reactor of minor `minor` is held to rule `id` as tightened
/// (`true`), or to what the earlier minor required (`false`; the kit
/// prints which, so a reader of its output knows what was checked).
pub fn tightened_for(id: &str, minor: u16) -> bool {
    let Some(r) = rule(id) else {
        return true;
    };
    match r.tightened {
        Some(t) if minor < t => {
            eprintln!(
                "{id}: the reactor implements ABI 1.{minor}, so the kit checks what 1.{} \
                 required ({}), not what 1.{t} added ({})",
                t - 1,
                r.earlier,
                r.link()
            );
            false
        }
        _ => true,
    }
}

/// The minor of the reactor the running case checks (`u32::MAX`: not
/// known), for the hint of [`violated`].
static CURRENT_MINOR: AtomicU32 = AtomicU32::new(u32::MAX);

/// Records the minor of the reactor the running case checks
/// ([`super::run_versioned`] does, before running the case).
pub fn set_current_minor(minor: u16) {
    CURRENT_MINOR.store(u32::from(minor), Ordering::Relaxed);
}

thread_local! {
    /// The rules of the case running on this thread (set by
    /// [`super::run_versioned`]), for the harness's own failures
    /// ([`case_rules`]). Per thread: in a test binary the cases run on
    /// parallel threads of one process.
    static CURRENT_RULES: std::cell::Cell<&'static [&'static str]> =
        const { std::cell::Cell::new(&[]) };
}

/// Records the rules the case running on this thread checks.
pub fn set_current_rules(ids: &'static [&'static str]) {
    CURRENT_RULES.with(|c| c.set(ids));
}

/// ` The case checks R-IO-2 (docs/abi/io.md#r-io-2).`, or nothing outside a
/// case: appended to a harness failure the plugin can cause (a callback
/// that never came, a constructor the case needs failing), whose rule is
/// the case's, not the harness's.
pub fn case_rules() -> String {
    let ids = CURRENT_RULES.with(std::cell::Cell::get);
    if ids.is_empty() {
        return String::new();
    }
    let named: Vec<String> = ids
        .iter()
        .map(|id| match rule(id) {
            Some(r) => format!("{id} ({})", r.link()),
            None => (*id).to_owned(),
        })
        .collect();
    format!(" The case checks {}.", named.join(", "))
}

/// Fails the running case: rule `id` was violated. `did` is what the case
/// did (the call and its input), `wants` what the rule requires of it,
/// `got` what the reactor did.
#[track_caller]
pub fn violated(id: &str, did: &dyn Display, wants: &dyn Display, got: &dyn Display) -> ! {
    panic!("{}", violation(id, did, wants, got))
}

/// The message [`violated`] fails with, for a check that cannot fail the
/// case at once (the harness inside a callback, which reports it after
/// `run_once` returns: H1).
pub fn violation(id: &str, did: &dyn Display, wants: &dyn Display, got: &dyn Display) -> String {
    let (where_, text) = match rule(id) {
        Some(r) => (format!("{}, {}", r.link(), r.minors()), r.text),
        None => ("not in docs/abi".to_owned(), ""),
    };
    let did = did.to_string();
    let did = if did.is_empty() {
        String::new()
    } else {
        format!(" The case did: {did}.")
    };
    // A reactor held to a tightened rule because of the minor it declares:
    // say what the earlier minor required, and that the declaration is the
    // author's (the failure of a 1.0 source rebuilt claiming 1.1).
    let minor = CURRENT_MINOR.load(Ordering::Relaxed);
    let hint = match rule(id).and_then(|r| r.tightened.map(|t| (r, t))) {
        Some((r, t)) if minor != u32::MAX && minor >= u32::from(t) => format!(
            " The reactor declares ABI 1.{minor}, so it is held to the rule as 1.{t} tightened \
             it (before: {}). If it implements only 1.{}, declare that minor \
             (AA_IMPLEMENTS_MINOR in C, Reactor::ABI_MINOR in reactor-sdk).",
            r.earlier,
            t - 1
        ),
        _ => String::new(),
    };
    // The first line is the summary the kit prints per failed case (`failed:
    // ...`): the rule, where it is, the input, what it requires, what the
    // reactor did. The rule's text and the hint follow on their own lines,
    // for the details under `FAIL` (the case's stderr).
    let text = if text.is_empty() {
        String::new()
    } else {
        format!("\n  Rule: {text}")
    };
    let hint = if hint.is_empty() {
        hint
    } else {
        format!("\n {hint}")
    };
    format!(
        "{id} ({where_}) violated.{did} The rule requires: {wants}. The reactor did: {got}.\
         {text}{hint}"
    )
}

/// The first words of every message of [`could_not_set_up`]: the kit's
/// summary and its readers tell a setup failure from a rule failure by
/// them.
pub const SETUP_FAILED: &str = "could not set up the case";

/// Fails the running case because the kit could not prepare it (a system
/// call the case makes for itself, such as `mmap` or `socketpair`, failed):
/// no rule was judged and the reactor is not blamed. Tiers call it through
/// [`setup_failed!`](crate::setup_failed), the only form of panic `cargo
/// xtask check-abi-rules` allows in a tier.
#[track_caller]
pub fn could_not_set_up(what: &str) -> ! {
    panic!("{SETUP_FAILED} (the kit's own setup, not the reactor; no rule was checked): {what}")
}

/// `AA_E_INVALID (-10002)`, `-EBADF (-9)`, `AA_OK (0)`; a number with no
/// name (a count, `-4242`) as itself.
pub fn status(s: AaStatus) -> String {
    match label(i64::from(s)) {
        Some(name) => format!("{name} ({s})"),
        None => s.to_string(),
    }
}

/// A request's result: `-ECANCELED (-125)` for a negative errno the kit
/// knows (or a status), else the number (a byte count).
pub fn result(r: i64) -> String {
    match label(r) {
        Some(name) if r < 0 => format!("{name} ({r})"),
        _ => r.to_string(),
    }
}

/// The name of a status or a negated errno (`AA_OK`, `AA_E_INVALID`,
/// `-EBADF`), if the kit knows one.
pub fn label(v: i64) -> Option<String> {
    let s = i32::try_from(v).ok()?;
    if let Some(name) = status_name(s) {
        return Some(name.to_owned());
    }
    if s < 0 && s > i32::MIN {
        let e = errno_name(-s);
        if e.starts_with(|c: char| c.is_ascii_uppercase()) {
            return Some(format!("-{e}"));
        }
    }
    None
}

/// `label` or the number, without the number in parentheses: for
/// statuses inside a record (`Io("r", -ECANCELED)`).
pub fn short(v: i64) -> String {
    label(v).unwrap_or_else(|| v.to_string())
}

/// `EBADF` for 9 (the errno values the kit meets), else the number.
pub fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EBADF => "EBADF",
        libc::EINVAL => "EINVAL",
        libc::ENOENT => "ENOENT",
        libc::EPIPE => "EPIPE",
        libc::ECONNRESET => "ECONNRESET",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ECANCELED => "ECANCELED",
        libc::EAGAIN => "EAGAIN",
        libc::ECHILD => "ECHILD",
        libc::ESRCH => "ESRCH",
        libc::EEXIST => "EEXIST",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EMSGSIZE => "EMSGSIZE",
        libc::EPERM => "EPERM",
        libc::ENOTCONN => "ENOTCONN",
        libc::EDESTADDRREQ => "EDESTADDRREQ",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        _ => return e.to_string(),
    };
    name.to_owned()
}

/// What `io_submit` gave, in words: `AA_DONE with result 1`, `AA_OK
/// (pending)`, `failed with AA_E_INVALID (-10002)`.
pub fn submitted(s: &Submit) -> String {
    match s {
        Submit::Done(r) => format!("AA_DONE with result {r}"),
        Submit::Pending(_) => "AA_OK (pending: an event was created)".to_owned(),
        Submit::Failed(st) => format!("failed with {}", status(*st)),
    }
}

/// The name of an opcode as the header spells it (`AA_IO_WRITE`), or its
/// number.
pub fn opcode_name(op: u32) -> String {
    let name = match op {
        AA_IO_READ => "AA_IO_READ",
        AA_IO_WRITE => "AA_IO_WRITE",
        AA_IO_ACCEPT => "AA_IO_ACCEPT",
        AA_IO_CONNECT => "AA_IO_CONNECT",
        AA_IO_CLOSE => "AA_IO_CLOSE",
        AA_IO_RECVFROM => "AA_IO_RECVFROM",
        AA_IO_SENDTO => "AA_IO_SENDTO",
        AA_IO_OPENAT => "AA_IO_OPENAT",
        AA_IO_STATX => "AA_IO_STATX",
        AA_IO_FSYNC => "AA_IO_FSYNC",
        AA_IO_UNLINKAT => "AA_IO_UNLINKAT",
        AA_IO_RENAMEAT => "AA_IO_RENAMEAT",
        AA_IO_MKDIRAT => "AA_IO_MKDIRAT",
        AA_IO_FTRUNCATE => "AA_IO_FTRUNCATE",
        other => return format!("opcode {other} ({other:#x}, unknown)"),
    };
    name.to_owned()
}

/// How [`ensure_eq!`](crate::ensure_eq) prints a value: statuses
/// (`i32`) and request results (`i64`) by name (`AA_E_INVALID (-10002)`,
/// `-ECANCELED (-125)`), anything else by `Debug`. (Autoref
/// specialisation: [`ShowStatus`] applies to `Shown<i32>` and
/// `Shown<i64>`, [`ShowDebug`] to every other `&Shown<T>`.)
#[doc(hidden)]
#[derive(Debug)]
pub struct Shown<'a, T: ?Sized>(pub &'a T);

/// See [`Shown`].
#[doc(hidden)]
pub trait ShowStatus {
    /// The value in words.
    fn shown(&self) -> String;
}

impl ShowStatus for Shown<'_, i32> {
    fn shown(&self) -> String {
        status(*self.0)
    }
}

impl ShowStatus for Shown<'_, i64> {
    fn shown(&self) -> String {
        result(*self.0)
    }
}

impl ShowStatus for Shown<'_, Option<i32>> {
    fn shown(&self) -> String {
        match self.0 {
            Some(s) => format!("Some({})", status(*s)),
            None => "None (AA_OK: it was created)".to_owned(),
        }
    }
}

impl ShowStatus for Shown<'_, Submit> {
    fn shown(&self) -> String {
        submitted(self.0)
    }
}

/// See [`Shown`].
#[doc(hidden)]
pub trait ShowDebug {
    /// The value in words.
    fn shown(&self) -> String;
}

impl<T: std::fmt::Debug + ?Sized> ShowDebug for &Shown<'_, T> {
    fn shown(&self) -> String {
        format!("{:?}", self.0)
    }
}

/// Fails the case with a harness-style "could not set up the case"
/// message ([`could_not_set_up`]): for the kit's own system calls, never
/// for what the reactor did.
#[macro_export]
macro_rules! setup_failed {
    ($($fmt:tt)+) => {
        $crate::conformance::rules::could_not_set_up(&format!($($fmt)+))
    };
}

/// Checks a condition of rule `$rule`; on failure reports the rule, its
/// link and text, and the three parts given (each `Display`):
/// `ensure!("R-IO-12", cond; did: .., wants: .., got: ..)`. `did` is the
/// input (the calls, opcodes, flags, timeouts, the step of the case),
/// `wants` what the rule requires of it, `got` what the reactor did. (There
/// is no form without them: a failure that says only "`cond` was false"
/// is not actionable.)
#[macro_export]
macro_rules! ensure {
    ($rule:literal, $cond:expr; did: $did:expr, wants: $wants:expr, got: $got:expr $(,)?) => {
        if !$cond {
            $crate::conformance::rules::violated($rule, &$did, &$wants, &$got)
        }
    };
}

/// Checks that what the reactor gave (`$got`) equals what rule `$rule`
/// requires (`$want`); the format (required) says what the case did, the
/// input and the step, ending with what `$got` is (`...: its status`).
/// Statuses, results and `Submit`s print by name ([`Shown`]).
#[macro_export]
macro_rules! ensure_eq {
    ($rule:literal, $got:expr, $want:expr, $($fmt:tt)+) => {
        match (&$got, &$want) {
            (got, want) => {
                if !(*got == *want) {
                    #[allow(unused_imports)]
                    use $crate::conformance::rules::{ShowDebug as _, ShowStatus as _, Shown};
                    $crate::conformance::rules::violated(
                        $rule,
                        &format!($($fmt)+),
                        &(&Shown(want)).shown(),
                        &(&Shown(got)).shown(),
                    )
                }
            }
        }
    };
}

/// Checks that what the reactor gave (`$got`) differs from `$unwanted`;
/// the format (required) says what the case did, as for
/// [`ensure_eq!`](crate::ensure_eq).
#[macro_export]
macro_rules! ensure_ne {
    ($rule:literal, $got:expr, $unwanted:expr, $($fmt:tt)+) => {
        match (&$got, &$unwanted) {
            (got, unwanted) => {
                if *got == *unwanted {
                    #[allow(unused_imports)]
                    use $crate::conformance::rules::{ShowDebug as _, ShowStatus as _, Shown};
                    $crate::conformance::rules::violated(
                        $rule,
                        &format!($($fmt)+),
                        &format!("anything but {}", (&Shown(unwanted)).shown()),
                        &(&Shown(got)).shown(),
                    )
                }
            }
        }
    };
}

/// Fails the running case for rule `$rule` where the reactor did something
/// no branch of the case expects: the format says what it did (and, for
/// the reader, in answer to what); the rule's text says what it requires.
#[macro_export]
macro_rules! rule_failed {
    ($rule:literal, $($fmt:tt)+) => {
        $crate::conformance::rules::violated(
            $rule,
            &"",
            &"what the rule below says",
            &format!($($fmt)+),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::harness::Rec;

    #[test]
    fn statuses_errnos_and_records_read_by_name() {
        assert_eq!(status(AA_E_INVALID), "AA_E_INVALID (-10002)");
        assert_eq!(status(AA_OK), "AA_OK (0)");
        assert_eq!(status(-libc::EBADF), "-EBADF (-9)");
        assert_eq!(status(-4242), "-4242");
        assert_eq!(status(3), "3");
        assert_eq!(result(-i64::from(libc::ECANCELED)), "-ECANCELED (-125)");
        assert_eq!(result(5), "5");
        assert_eq!(
            format!(
                "{:?}",
                vec![
                    Rec::Io("r", -i64::from(libc::ECANCELED)),
                    Rec::Timer("t", 0)
                ]
            ),
            "[Io(\"r\", -ECANCELED), Timer(\"t\", AA_OK)]"
        );
        assert_eq!(
            Shown(&Submit::Failed(AA_E_UNSUPPORTED)).shown(),
            "failed with AA_E_UNSUPPORTED (-10001)"
        );
        assert_eq!(
            Shown(&Some(AA_E_INVALID)).shown(),
            "Some(AA_E_INVALID (-10002))"
        );
        assert_eq!((&Shown(&[1u8, 2])).shown(), "[1, 2]");
    }

    #[test]
    fn a_violation_is_one_summary_line_then_the_rule_text() {
        let caught = std::panic::catch_unwind(|| {
            violated(
                "R-TIMER-4",
                &"timer_rearm(1 ms, repeat 0)",
                &status(AA_OK),
                &status(AA_E_INVALID),
            )
        });
        let payload = caught.expect_err("violated returned");
        let msg = payload
            .downcast_ref::<String>()
            .expect("a formatted message");
        let mut lines = msg.lines();
        assert_eq!(
            lines.next(),
            Some(
                "R-TIMER-4 (docs/abi/timer.md#r-timer-4, ABI 1.0) violated. The case did: \
                 timer_rearm(1 ms, repeat 0). The rule requires: AA_OK (0). The reactor did: \
                 AA_E_INVALID (-10002)."
            )
        );
        let text = rule("R-TIMER-4").expect("defined").text;
        assert_eq!(lines.next(), Some(format!("  Rule: {text}").as_str()));
        assert_eq!(lines.next(), None);
    }
}
