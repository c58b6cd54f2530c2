//! Tier: compatibility between ABI minors, as the header's rule says.
//!
//! - A request from a 1.0 host (an `AaIoOp` of `offsetof(AaIoOp, path)`
//!   bytes) is served for the 1.0 opcodes and the datagram ones, which need
//!   no 1.1 field, and the reactor reads nothing beyond its `struct_size`:
//!   the kit places the short struct against an inaccessible page, so a
//!   read past it crashes the case. A path request in such a struct is
//!   `AA_E_INVALID`.
//! - `instance_caps` never has a bit `caps` lacks.
//! - Every 1.1 request whose capability the instance lacks is refused with
//!   `AA_E_UNSUPPORTED` (by a 1.0 reactor, which does not know the opcode:
//!   `AA_E_UNSUPPORTED` or `AA_E_INVALID`), creating nothing (AA-R8), so a
//!   host can fall back.

use std::mem::size_of;
use std::ptr;

use async_abi::*;

use super::fds;
use super::harness::{Loop, Submit};
use super::plugin::Reactor;
use super::requests::{addr_bytes, raw_send_to, udp_socket};
use super::rules::{self, submitted};
use crate::{ensure, ensure_eq, setup_failed};

/// Two pages, the second inaccessible: memory for a short struct that ends
/// exactly where reading becomes a fault.
struct Guarded {
    base: *mut u8,
    page: usize,
}

impl Guarded {
    #[track_caller]
    fn new() -> Guarded {
        // SAFETY: plain syscall.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // SAFETY: an anonymous private mapping of two pages, owned here.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        // The kit's own setup, not the reactor's: no rule is judged.
        if base == libc::MAP_FAILED {
            setup_failed!(
                "mmap of two pages for a 1.0-sized AaIoOp: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: the second page of the mapping just made.
        let res =
            unsafe { libc::mprotect(base.cast::<u8>().add(page).cast(), page, libc::PROT_NONE) };
        if res != 0 {
            setup_failed!(
                "mprotect(PROT_NONE) of the guard page after a 1.0-sized AaIoOp: {}",
                std::io::Error::last_os_error()
            );
        }
        Guarded {
            base: base.cast(),
            page,
        }
    }

    /// Copies the 1.0 prefix of `op` against the guard page, with
    /// `struct_size` set to the 1.0 size, and returns where it is.
    fn place_1_0(&self, op: &AaIoOp) -> *mut AaIoOp {
        let n = AaIoOp::SIZE_V1_0;
        let mut prefix = *op;
        prefix.struct_size = n as u32;
        // SAFETY: the last `n` bytes of the first (accessible) page; `n` is
        // a multiple of the op's alignment, and so is the page size.
        unsafe {
            let at = self.base.add(self.page - n);
            ptr::copy_nonoverlapping((&prefix as *const AaIoOp).cast::<u8>(), at, n);
            at.cast()
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), 2 * self.page) };
    }
}

/// Checks the 1.0 struct: a write and a read on a socket pair (inline where
/// the reactor offers it, so its result is written into the short struct),
/// a `RECVFROM` where the instance has datagrams, then a path request that
/// cannot fit (`AA_E_INVALID`, nothing created).
pub fn a_1_0_sized_request_is_served_and_nothing_beyond_it_is_read(reactor: &Reactor) {
    let case = "a_1_0_sized_request_is_served_and_nothing_beyond_it_is_read";
    if super::skip_without(reactor, AA_CAP_IO, case) {
        return;
    }
    let lp = Loop::new(reactor);
    let guarded = Guarded::new();
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    let inline = lp.instance_caps() & AA_CAP_IO_INLINE != 0;
    let flags = if inline { AA_IO_TRY_INLINE } else { 0 };
    let mut write = AaIoOp::new(AA_IO_WRITE, i64::from(a));
    write.buf = b"old".as_ptr().cast_mut();
    write.len = 3;
    let short = guarded.place_1_0(&write);
    // SAFETY: `short` is valid for its 1.0 struct_size; the data is static.
    let got = unsafe { lp.submit_raw("w", short, flags) };
    let what = format!(
        "io_submit(AA_IO_WRITE of 3 bytes on a socket, struct_size {} (1.0), flags {flags:#x})",
        AaIoOp::SIZE_V1_0
    );
    if inline {
        ensure!("R-COMPAT-1", got == Submit::Done(3);
            did: what, wants: "AA_DONE with result 3 written into the short struct",
            got: submitted(&got));
    }
    ensure_eq!("R-COMPAT-1", lp.result("w", got), 3, "{what}: its result");
    let mut buf = [0u8; 8];
    let mut read = AaIoOp::new(AA_IO_READ, i64::from(b));
    read.buf = buf.as_mut_ptr();
    read.len = buf.len();
    let short = guarded.place_1_0(&read);
    // SAFETY: as above; `buf` outlives the request (`result` waits).
    let got = unsafe { lp.submit_raw("r", short, flags) };
    let what = format!(
        "io_submit(AA_IO_READ of 8 bytes after a write of \"old\", struct_size {} (1.0), flags \
         {flags:#x})",
        AaIoOp::SIZE_V1_0
    );
    ensure_eq!("R-COMPAT-1", lp.result("r", got), 3, "{what}: its result");
    ensure_eq!("R-COMPAT-1", &buf[..3], b"old", "{what}: the data read");
    if lp.instance_caps() & AA_CAP_IO_DGRAM != 0 {
        let (u, u_addr) = udp_socket();
        let (v, v_addr) = udp_socket();
        lp.track_fd(u);
        lp.track_fd(v);
        raw_send_to(u, b"dg", &v_addr);
        let mut from = AaSockAddr::EMPTY;
        let mut recv = AaIoOp::new(AA_IO_RECVFROM, i64::from(v));
        recv.buf = buf.as_mut_ptr();
        recv.len = buf.len();
        recv.addr = &mut from;
        let short = guarded.place_1_0(&recv);
        // SAFETY: as above; `buf` and `from` outlive the request.
        let got = unsafe { lp.submit_raw("recvfrom", short, 0) };
        let what = "io_submit(AA_IO_RECVFROM of 8 bytes on a UDP socket sent \"dg\", struct_size \
                    1.0, flags 0)";
        ensure_eq!(
            "R-COMPAT-1",
            lp.result("recvfrom", got),
            2,
            "{what}: its result"
        );
        ensure_eq!(
            "R-COMPAT-1",
            addr_bytes(&from),
            addr_bytes(&u_addr),
            "{what}: the sender's address"
        );
    }
    let mut mkdir = AaIoOp::new(AA_IO_MKDIRAT, AA_IO_CWD);
    mkdir.path = AaBytes::from_slice(b"/nonexistent-dir-of-the-kit/x");
    let short = guarded.place_1_0(&mkdir);
    // SAFETY: as above; the request is refused before anything is kept.
    let got = unsafe { lp.submit_raw("mkdir", short, 0) };
    let expected = if lp.instance_caps() & AA_CAP_IO_FILE != 0 {
        AA_E_INVALID
    } else {
        // A reactor without file requests may refuse them first.
        match got {
            Submit::Failed(AA_E_UNSUPPORTED) => AA_E_UNSUPPORTED,
            _ => AA_E_INVALID,
        }
    };
    let what = "io_submit(AA_IO_MKDIRAT, struct_size 1.0 (so no path field), flags 0)";
    ensure!("R-COMPAT-1", got == Submit::Failed(expected);
        did: what,
        wants: format!(
            "failed with {} (a path request whose struct has no path)",
            rules::status(expected)
        ),
        got: submitted(&got));
    lp.run_once(0);
    ensure_eq!(
        "R-ERR-1",
        lp.log(),
        vec![],
        "{what}, then run_once(0): callbacks"
    );
    lp.finish();
}

/// Checks that an instance never claims a capability its plugin lacks, and
/// that a 1.0 reactor (no `instance_caps` slot) is read as its `caps`.
pub fn instance_caps_never_exceed_caps(reactor: &Reactor) {
    let lp = Loop::new(reactor);
    let vt = lp.vt();
    match vt.instance_caps {
        Some(f) => {
            // SAFETY: a live reactor, on its loop thread.
            let caps = unsafe { f(lp.raw()) };
            ensure!("R-COMPAT-2", caps & !vt.caps == 0;
                did: format!("instance_caps() of a new loop, caps {:#x}", vt.caps),
                wants: "no bit caps lacks",
                got: format!("{caps:#x}: the extra bits {:#x}", caps & !vt.caps));
        }
        None => {
            let expected = if vt.hdr.iface_minor == 0 {
                vt.caps & AA_CAPS_V1_0
            } else {
                vt.caps
            };
            ensure_eq!(
                "R-COMPAT-2",
                lp.instance_caps(),
                expected,
                "no instance_caps slot: the instance's capabilities as a host reads them"
            );
        }
    }
    lp.finish();
}

/// The capability bit of a 1.1 opcode.
fn cap_of(opcode: u32) -> u64 {
    match opcode {
        AA_IO_RECVFROM | AA_IO_SENDTO => AA_CAP_IO_DGRAM,
        AA_IO_FTRUNCATE => AA_CAP_IO_FTRUNCATE,
        _ => AA_CAP_IO_FILE,
    }
}

/// Checks that every 1.1 request whose capability this instance lacks is
/// refused with `AA_E_UNSUPPORTED` and one line naming it, creating nothing.
pub fn a_1_1_request_the_instance_lacks_is_unsupported(reactor: &Reactor) {
    let case = "a_1_1_request_the_instance_lacks_is_unsupported";
    if super::skip_without(reactor, AA_CAP_IO, case) {
        return;
    }
    let lp = Loop::new(reactor);
    let caps = lp.instance_caps();
    let (a, b) = fds::socketpair();
    lp.track_fd(a);
    lp.track_fd(b);
    let mut stat = AaStat::default();
    let mut buf = [0u8; 4];
    let requests = [
        (AA_CAP_IO_DGRAM, AA_IO_RECVFROM),
        (AA_CAP_IO_DGRAM, AA_IO_SENDTO),
        (AA_CAP_IO_FILE, AA_IO_OPENAT),
        (AA_CAP_IO_FILE, AA_IO_STATX),
        (AA_CAP_IO_FILE, AA_IO_FSYNC),
        (AA_CAP_IO_FILE, AA_IO_UNLINKAT),
        (AA_CAP_IO_FILE, AA_IO_RENAMEAT),
        (AA_CAP_IO_FILE, AA_IO_MKDIRAT),
        (AA_CAP_IO_FTRUNCATE, AA_IO_FTRUNCATE),
    ];
    let lacking: Vec<_> = requests.iter().filter(|(cap, _)| caps & cap == 0).collect();
    if lacking.is_empty() {
        super::note_skip(
            0,
            format!(
                "SKIPPED {case}: nothing to check, reactor {:?} has every ABI 1.1 capability",
                reactor.name()
            ),
        );
        lp.finish();
        return;
    }
    for &&(_, opcode) in &lacking {
        let mut op = AaIoOp::new(opcode, i64::from(a));
        match opcode {
            AA_IO_RECVFROM | AA_IO_SENDTO => {
                op.buf = buf.as_mut_ptr();
                op.len = buf.len();
            }
            AA_IO_STATX => {
                op.buf = (&mut stat as *mut AaStat).cast();
                op.len = size_of::<AaStat>();
                op.path = AaBytes::from_slice(b"/");
            }
            AA_IO_FTRUNCATE => op.offset = 0,
            AA_IO_FSYNC => {}
            _ => {
                op.fd = AA_IO_CWD;
                op.path = AaBytes::from_slice(b"/nonexistent-dir-of-the-kit/x");
                op.path2 = AaBytes::from_slice(b"/nonexistent-dir-of-the-kit/y");
                op.fd2 = AA_IO_CWD;
            }
        }
        let got = lp.submit("lacking", &mut op, AA_IO_TRY_INLINE);
        let what = format!(
            "io_submit({} ({opcode}), flags AA_IO_TRY_INLINE) to an instance without {}",
            rules::opcode_name(opcode),
            super::kit::cap_names(cap_of(opcode))
        );
        if !rules::tightened_for("R-COMPAT-3", rules::implements(reactor)) {
            // A 1.0 reactor does not know the opcode: unsupported or invalid.
            ensure!("R-COMPAT-3",
                got == Submit::Failed(AA_E_UNSUPPORTED) || got == Submit::Failed(AA_E_INVALID);
                did: what, wants: "AA_E_UNSUPPORTED or AA_E_INVALID (ABI 1.0)",
                got: submitted(&got));
            continue;
        }
        ensure!("R-COMPAT-3", got == Submit::Failed(AA_E_UNSUPPORTED);
            did: what, wants: "AA_E_UNSUPPORTED", got: submitted(&got));
        let msg = lp.last_error();
        let name = rules::opcode_name(opcode);
        ensure!("R-COMPAT-3", msg.starts_with(&format!("io_submit: {name}")) && !msg.contains('\n');
            did: what,
            wants: format!(
                "a last_error_message of one line starting with \"io_submit: \" and the \
                 opcode's name (\"io_submit: {name} ...\")"
            ),
            got: format!("last_error_message {msg:?}"));
    }
    lp.run_once(0);
    ensure_eq!(
        "R-ERR-1",
        lp.log(),
        vec![],
        "the refused 1.1 requests, then run_once(0)"
    );
    ensure_eq!(
        "R-COMPAT-3",
        stat,
        AaStat::default(),
        "a refused AA_IO_STATX: its AaStat"
    );
    lp.finish();
}
