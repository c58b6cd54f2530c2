//! Builders for the requests of ABI 1.1 (datagrams, files) on a [`Loop`],
//! the datagram sockets the cases use, and the instance's capabilities, as
//! a host reads them.
//!
//! Every builder takes the memory the request points to by reference; the
//! case keeps it alive until the callback (AA-R5), which [`Loop::result`]
//! waits for.

use std::mem::{offset_of, size_of};

use async_abi::*;

use super::harness::{Loop, Rec, Submit};
use super::plugin::Reactor;

/// Panics with the OS error if `res` is -1.
#[track_caller]
fn check(what: &str, res: libc::c_int) -> libc::c_int {
    assert!(res != -1, "{what}: {}", std::io::Error::last_os_error());
    res
}

/// A non-blocking UDP socket bound to `127.0.0.1:0`, and its address.
#[track_caller]
pub fn udp_socket() -> (i32, AaSockAddr) {
    // SAFETY: plain syscall with constant arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    check("socket(AF_INET, SOCK_DGRAM)", fd);
    bind(fd, &super::fds::ipv4([127, 0, 0, 1], 0));
    (fd, super::fds::local_addr(fd))
}

/// A non-blocking, unbound Unix datagram socket.
#[track_caller]
pub fn unix_dgram() -> i32 {
    // SAFETY: plain syscall with constant arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    check("socket(AF_UNIX, SOCK_DGRAM)", fd)
}

/// A Unix socket address: a path, or an abstract name when `name` starts
/// with a NUL byte; its length is what the kernel reports back for it
/// (`offsetof(sun_path)` + the name, + its NUL for a path).
pub fn unix_addr(name: &[u8]) -> AaSockAddr {
    let mut addr = AaSockAddr::EMPTY;
    let path_at = offset_of!(libc::sockaddr_un, sun_path);
    assert!(
        name.len() < size_of::<libc::sockaddr_un>() - path_at,
        "name too long"
    );
    let bytes = addr.storage.as_mut_ptr().cast::<u8>();
    let family = (libc::AF_UNIX as libc::sa_family_t).to_ne_bytes();
    // SAFETY: `storage` is 128 bytes, more than a `sockaddr_un` (110); the
    // family and the name fit (asserted).
    unsafe {
        std::ptr::copy_nonoverlapping(family.as_ptr(), bytes, family.len());
        std::ptr::copy_nonoverlapping(name.as_ptr(), bytes.add(path_at), name.len());
    }
    let nul = usize::from(name.first() != Some(&0));
    addr.len = (path_at + name.len() + nul) as u32;
    addr
}

/// The bytes of an `AaSockAddr` that count (`len` of them).
pub fn addr_bytes(addr: &AaSockAddr) -> Vec<u8> {
    let len = (addr.len as usize).min(size_of::<[u64; 16]>());
    // SAFETY: `storage` is 128 initialised bytes; `len` is at most that.
    unsafe { std::slice::from_raw_parts(addr.storage.as_ptr().cast::<u8>(), len) }.to_vec()
}

/// Binds `fd` to `addr`.
#[track_caller]
pub fn bind(fd: i32, addr: &AaSockAddr) {
    // SAFETY: `storage` holds a socket address of `len` bytes.
    check("bind", unsafe {
        libc::bind(fd, addr.storage.as_ptr().cast(), addr.len)
    });
}

/// Connects the datagram socket `fd` to `addr` (sets its default peer).
#[track_caller]
pub fn connect(fd: i32, addr: &AaSockAddr) {
    // SAFETY: as for `bind`.
    check("connect", unsafe {
        libc::connect(fd, addr.storage.as_ptr().cast(), addr.len)
    });
}

/// `sendto(2)` behind the reactor's back; the bytes sent.
#[track_caller]
pub fn raw_send_to(fd: i32, data: &[u8], to: &AaSockAddr) -> usize {
    // SAFETY: `data` is valid for the call; `to` holds `len` bytes.
    let n = unsafe {
        libc::sendto(
            fd,
            data.as_ptr().cast(),
            data.len(),
            0,
            to.storage.as_ptr().cast(),
            to.len,
        )
    };
    assert!(n >= 0, "sendto: {}", std::io::Error::last_os_error());
    n as usize
}

/// A `recv(2)` that does not wait; `None` when nothing is queued.
pub fn raw_try_recv(fd: i32, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: `buf` is valid for writes of its length.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    (n >= 0).then_some(n as usize)
}

/// A path as the bytes a request carries.
pub fn path_bytes(path: &std::path::Path) -> Vec<u8> {
    path.as_os_str().as_encoded_bytes().to_vec()
}

/// Prints why a case is skipped and returns `true` if the loop's instance
/// lacks `caps` (see [`Loop::instance_caps`]).
pub fn skip_without_instance(lp: &Loop, reactor: &Reactor, caps: u64, case: &str) -> bool {
    let have = lp.instance_caps();
    if have & caps == caps {
        return false;
    }
    let missing = caps & !have;
    super::note_skip(
        missing,
        format!(
            "SKIPPED {case}: reactor {:?} (ABI 1.{}) lacks {}",
            reactor.name(),
            lp.vt().hdr.iface_minor,
            super::kit::cap_names(missing),
        ),
    );
    true
}

impl Loop {
    /// The capabilities a host may use with this instance: `caps`, only the
    /// bits of ABI 1.0 from a reactor whose vtable says minor 0 (of 1.1
    /// from one that says 1), narrowed by `instance_caps` where the slot
    /// exists (the host's reading of 1.1).
    pub fn instance_caps(&self) -> u64 {
        let vt = self.vt();
        let mut caps = vt.caps;
        match vt.hdr.iface_minor {
            0 => caps &= AA_CAPS_V1_0,
            1 => caps &= AA_CAPS_V1_1,
            _ => {}
        }
        if let Some(f) = vt.instance_caps {
            // SAFETY: a live reactor, on its loop thread.
            caps &= unsafe { f(self.raw()) };
        }
        caps
    }

    /// The result of a submitted request: inline, or from its callback
    /// (run for; the record is taken out of the log and the event
    /// disposed), or the negative status `io_submit` returned.
    #[track_caller]
    pub fn result(&self, tag: &'static str, submitted: Submit) -> i64 {
        match submitted {
            Submit::Done(result) => result,
            Submit::Failed(status) => i64::from(status),
            Submit::Pending(ev) => {
                self.run_until_tag(tag);
                let taken = self.take_tagged(tag);
                let [Rec::Io(_, result)] = taken[..] else {
                    panic!("{tag}: expected one request callback, got {taken:?}");
                };
                self.dispose(ev);
                result
            }
        }
    }

    /// `AA_IO_RECVFROM` into `buf`, the sender written to `from` if given.
    pub fn recv_from(
        &self,
        tag: &'static str,
        fd: i32,
        buf: &mut [u8],
        from: Option<&mut AaSockAddr>,
        op_flags: u32,
        flags: u32,
    ) -> Submit {
        let mut op = AaIoOp::new(AA_IO_RECVFROM, i64::from(fd));
        op.buf = buf.as_mut_ptr();
        op.len = buf.len();
        op.addr = from.map_or(std::ptr::null_mut(), |a| a as *mut AaSockAddr);
        op.op_flags = op_flags;
        self.submit(tag, &mut op, flags)
    }

    /// `AA_IO_SENDTO` of `data` to `to` (the connected peer if `None`).
    pub fn send_to(
        &self,
        tag: &'static str,
        fd: i32,
        data: &[u8],
        to: Option<&mut AaSockAddr>,
        flags: u32,
    ) -> Submit {
        let mut op = AaIoOp::new(AA_IO_SENDTO, i64::from(fd));
        op.buf = data.as_ptr().cast_mut();
        op.len = data.len();
        op.addr = to.map_or(std::ptr::null_mut(), |a| a as *mut AaSockAddr);
        self.submit(tag, &mut op, flags)
    }

    /// A path request: `opcode` on `path` relative to `dir` (a descriptor
    /// or `AA_IO_CWD`), with `op_flags`; `edit` fills the rest.
    pub fn path_request(
        &self,
        tag: &'static str,
        opcode: u32,
        dir: i64,
        path: &[u8],
        op_flags: u32,
        edit: impl FnOnce(&mut AaIoOp),
    ) -> Submit {
        let mut op = AaIoOp::new(opcode, dir);
        op.path = AaBytes::from_slice(path);
        op.op_flags = op_flags;
        edit(&mut op);
        self.submit(tag, &mut op, 0)
    }

    /// `AA_IO_OPENAT`.
    pub fn open_at(
        &self,
        tag: &'static str,
        dir: i64,
        path: &[u8],
        open_flags: i32,
        mode: u32,
    ) -> Submit {
        self.path_request(tag, AA_IO_OPENAT, dir, path, 0, |op| {
            op.open_flags = open_flags as u32;
            op.mode = mode;
        })
    }

    /// `AA_IO_STATX` into `stat` (of `fd` itself when `path` is empty).
    pub fn statx(
        &self,
        tag: &'static str,
        dir: i64,
        path: &[u8],
        stat: &mut AaStat,
        op_flags: u32,
    ) -> Submit {
        self.path_request(tag, AA_IO_STATX, dir, path, op_flags, |op| {
            op.buf = (stat as *mut AaStat).cast();
            op.len = size_of::<AaStat>();
        })
    }

    /// `AA_IO_RENAMEAT` of `dir`/`path` to `dir2`/`path2`.
    pub fn rename_at(
        &self,
        tag: &'static str,
        dir: i64,
        path: &[u8],
        dir2: i64,
        path2: &[u8],
    ) -> Submit {
        self.path_request(tag, AA_IO_RENAMEAT, dir, path, 0, |op| {
            op.path2 = AaBytes::from_slice(path2);
            op.fd2 = dir2;
        })
    }

    /// `AA_IO_FSYNC` or `AA_IO_FTRUNCATE` (to `len`) on `fd`.
    pub fn file_request(
        &self,
        tag: &'static str,
        opcode: u32,
        fd: i32,
        op_flags: u32,
        len: i64,
    ) -> Submit {
        let mut op = AaIoOp::new(opcode, i64::from(fd));
        op.op_flags = op_flags;
        if opcode == AA_IO_FTRUNCATE {
            op.offset = len;
        }
        self.submit(tag, &mut op, 0)
    }
}
