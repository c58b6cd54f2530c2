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
        assert_ne!(base, libc::MAP_FAILED, "mmap");
        // SAFETY: the second page of the mapping just made.
        let res =
            unsafe { libc::mprotect(base.cast::<u8>().add(page).cast(), page, libc::PROT_NONE) };
        assert_eq!(res, 0, "mprotect");
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
    if inline {
        assert_eq!(got, Submit::Done(3), "inline, result in the short struct");
    }
    assert_eq!(lp.result("w", got), 3);
    let mut buf = [0u8; 8];
    let mut read = AaIoOp::new(AA_IO_READ, i64::from(b));
    read.buf = buf.as_mut_ptr();
    read.len = buf.len();
    let short = guarded.place_1_0(&read);
    // SAFETY: as above; `buf` outlives the request (`result` waits).
    let got = unsafe { lp.submit_raw("r", short, flags) };
    assert_eq!(lp.result("r", got), 3);
    assert_eq!(&buf[..3], b"old");
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
        assert_eq!(lp.result("recvfrom", got), 2);
        assert_eq!(addr_bytes(&from), addr_bytes(&u_addr));
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
    assert_eq!(got, Submit::Failed(expected));
    lp.run_once(0);
    assert_eq!(lp.log(), vec![]);
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
            assert_eq!(
                caps & !vt.caps,
                0,
                "instance {caps:#x}, plugin {:#x}",
                vt.caps
            );
            assert!(vt.hdr.iface_minor >= 1, "a 1.0 vtable has no such slot");
        }
        None => {
            let expected = if vt.hdr.iface_minor == 0 {
                vt.caps & AA_CAPS_V1_0
            } else {
                vt.caps
            };
            assert_eq!(lp.instance_caps(), expected);
        }
    }
    lp.finish();
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
        if lp.vt().hdr.iface_minor == 0 {
            // A 1.0 reactor does not know the opcode: unsupported or invalid.
            assert!(
                got == Submit::Failed(AA_E_UNSUPPORTED) || got == Submit::Failed(AA_E_INVALID),
                "opcode {opcode} to a 1.0 reactor: {got:?}"
            );
            continue;
        }
        assert_eq!(got, Submit::Failed(AA_E_UNSUPPORTED), "opcode {opcode}");
        let msg = lp.last_error();
        assert!(
            msg.starts_with("io_submit: AA_IO_") && !msg.contains('\n'),
            "one line naming the request: {msg:?}"
        );
    }
    lp.run_once(0);
    assert_eq!(lp.log(), vec![]);
    assert_eq!(stat, AaStat::default());
    lp.finish();
}
