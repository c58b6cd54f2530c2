//! `getaddrinfo`, `gethostbyname`, `gethostbyname2`: name resolution on the
//! blocking pool. The C library resolves through its own sockets, which
//! the hooks do not see, so the whole call moves to a pool thread.
//!
//! - **DN1** The pool thread works on copies of the caller's strings and
//!   hints and owns what it gets, so a cancelled coroutine returns at once
//!   (`EAI_SYSTEM` with `errno` `ECANCELED`; a null `hostent` with
//!   `h_errno` `TRY_AGAIN`) and the pool thread frees the answer nobody
//!   takes.
//! - **DN2** `gethostbyname` answers with a record of its own: the pool
//!   thread resolves with `gethostbyname_r` into a buffer of its own (the C
//!   library's single static record would be overwritten by another pool
//!   thread's lookup), and the record and its buffer then live among the
//!   calling thread's last [`KEPT`] answers, so a coroutine that reads its
//!   answer after other coroutines of the thread made their lookups still
//!   reads its own (the C library keeps one, for the whole process).
//!   `h_errno` is copied back to the calling thread.
#![allow(unsafe_code)]
// The `#[no_mangle]` entry points are public to the linker, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_char, c_int, CStr, CString};
use std::ptr;

use libc::{addrinfo, hostent};

use super::wait::{self, PoolError};
use super::{real, set_errno};

/// An answer a pool thread owns until the caller takes it (DN1).
struct Answer(*mut addrinfo);

// SAFETY: the list is plain heap memory from getaddrinfo, owned by one
// thread at a time.
unsafe impl Send for Answer {}

impl Drop for Answer {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a list getaddrinfo returned and nobody took.
            unsafe { real::freeaddrinfo(self.0) };
        }
    }
}

/// The hints `getaddrinfo` reads: flags, family, socket type, protocol.
#[derive(Clone, Copy)]
struct Hints(c_int, c_int, c_int, c_int);

fn copy(s: *const c_char) -> Option<CString> {
    // SAFETY: a non-null C string the caller passed.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_owned())
}

extern "C" {
    fn __h_errno_location() -> *mut c_int;
}

/// `<netdb.h>`'s `TRY_AGAIN`: a temporary failure, try again.
const TRY_AGAIN: c_int = 2;

/// Hooked `getaddrinfo(3)`.
///
/// # Safety
///
/// As `getaddrinfo(3)`.
#[no_mangle]
pub unsafe extern "C" fn getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const addrinfo,
    res: *mut *mut addrinfo,
) -> c_int {
    if !wait::active() || res.is_null() {
        // SAFETY: the caller's contract.
        return unsafe { real::getaddrinfo(node, service, hints, res) };
    }
    let (n, s) = (copy(node), copy(service));
    let h = (!hints.is_null()).then(|| {
        // SAFETY: non-null hints the caller passed.
        let h = unsafe { &*hints };
        Hints(h.ai_flags, h.ai_family, h.ai_socktype, h.ai_protocol)
    });
    let work = move || {
        // SAFETY: all-zero is a valid `addrinfo` (null pointers, zeros).
        let mut hint: addrinfo = unsafe { std::mem::zeroed() };
        if let Some(Hints(flags, family, socktype, protocol)) = h {
            hint.ai_flags = flags;
            hint.ai_family = family;
            hint.ai_socktype = socktype;
            hint.ai_protocol = protocol;
        }
        let mut out = ptr::null_mut();
        // SAFETY: our own copies of the caller's strings and hints, and a
        // valid out pointer.
        let r = unsafe {
            real::getaddrinfo(
                n.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                s.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                if h.is_some() { &hint } else { ptr::null() },
                &mut out,
            )
        };
        (r, super::errno(), Answer(out))
    };
    match wait::on_pool("hooked getaddrinfo", work) {
        Ok((r, e, mut answer)) => {
            // SAFETY: the caller's out pointer; the list is now theirs.
            unsafe { *res = std::mem::replace(&mut answer.0, ptr::null_mut()) };
            if r == libc::EAI_SYSTEM {
                set_errno(e);
            }
            r
        }
        Err(PoolError::Cancelled) => {
            set_errno(libc::ECANCELED);
            libc::EAI_SYSTEM
        }
        // SAFETY: the caller's contract.
        Err(PoolError::Unavailable) => unsafe { real::getaddrinfo(node, service, hints, res) },
    }
}

/// DN2: a resolved record and the buffer its pointers point into.
struct Host {
    h: hostent,
    _buf: Vec<u8>,
}

// SAFETY: the record's pointers point into `_buf`, which moves with it
// (its heap block does not); nothing else refers to either.
unsafe impl Send for Host {}

/// DN2: how many answers a thread keeps.
const KEPT: usize = 64;

thread_local! {
    /// DN2: the calling thread's last answers, oldest first.
    static LAST: std::cell::RefCell<std::collections::VecDeque<Box<Host>>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

extern "C" {
    fn gethostbyname_r(
        name: *const c_char,
        ret: *mut hostent,
        buf: *mut c_char,
        buflen: libc::size_t,
        result: *mut *mut hostent,
        h_errnop: *mut c_int,
    ) -> c_int;
    fn gethostbyname2_r(
        name: *const c_char,
        af: c_int,
        ret: *mut hostent,
        buf: *mut c_char,
        buflen: libc::size_t,
        result: *mut *mut hostent,
        h_errnop: *mut c_int,
    ) -> c_int;
}

/// DN2: resolves `name` with the reentrant call into a buffer of its own.
fn resolve(name: &CString, af: Option<c_int>) -> (Option<Host>, c_int) {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: all-zero is a valid `hostent` (null pointers, zeros).
        let mut h: hostent = unsafe { std::mem::zeroed() };
        let mut result: *mut hostent = ptr::null_mut();
        let mut herr: c_int = 0;
        // SAFETY: our copy of the name, a record and a buffer of the given
        // length, and valid out pointers.
        let r = unsafe {
            match af {
                Some(af) => gethostbyname2_r(
                    name.as_ptr(),
                    af,
                    &mut h,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut result,
                    &mut herr,
                ),
                None => gethostbyname_r(
                    name.as_ptr(),
                    &mut h,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut result,
                    &mut herr,
                ),
            }
        };
        if r == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if result.is_null() {
            return (None, herr);
        }
        return (Some(Host { h, _buf: buf }), herr);
    }
}

fn by_name(name: *const c_char, af: Option<c_int>) -> *mut hostent {
    let Some(n) = copy(name) else {
        // SAFETY: the caller's contract (a null name is theirs to pass).
        return unsafe { real::gethostbyname(name) };
    };
    match wait::on_pool("hooked gethostbyname", move || resolve(&n, af)) {
        Ok((host, herr)) => {
            // SAFETY: the calling thread's h_errno (DN2).
            unsafe { *__h_errno_location() = herr };
            match host {
                Some(host) => LAST.with(|last| {
                    let mut last = last.borrow_mut();
                    if last.len() == KEPT {
                        last.pop_front();
                    }
                    last.push_back(Box::new(host));
                    let newest = last.back_mut().expect("just pushed");
                    &mut newest.h as *mut hostent
                }),
                None => ptr::null_mut(),
            }
        }
        Err(PoolError::Cancelled) => {
            // SAFETY: as above.
            unsafe { *__h_errno_location() = TRY_AGAIN };
            set_errno(libc::ECANCELED);
            ptr::null_mut()
        }
        // SAFETY: the caller's contract.
        Err(PoolError::Unavailable) => unsafe {
            match af {
                Some(af) => real::gethostbyname2(name, af),
                None => real::gethostbyname(name),
            }
        },
    }
}

/// Hooked `gethostbyname(3)`.
///
/// # Safety
///
/// As `gethostbyname(3)`.
#[no_mangle]
pub unsafe extern "C" fn gethostbyname(name: *const c_char) -> *mut hostent {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return unsafe { real::gethostbyname(name) };
    }
    by_name(name, None)
}

/// Hooked `gethostbyname2(3)`.
///
/// # Safety
///
/// As `gethostbyname2(3)`.
#[no_mangle]
pub unsafe extern "C" fn gethostbyname2(name: *const c_char, af: c_int) -> *mut hostent {
    if !wait::active() {
        // SAFETY: the caller's contract.
        return unsafe { real::gethostbyname2(name, af) };
    }
    by_name(name, Some(af))
}

// DN3: the name-service lookups the hooks leave blocking. The C library
// answers them through its NSS modules, which may open sockets (systemd,
// sssd, LDAP) with the exported `socket`/`connect`/`poll` the hooks define,
// while it holds its own lock for the lookup: a hooked wait there would let
// a second coroutine of the thread block on that lock. So the whole call
// runs quiet (K5): the C library's own calls inside, as on a thread.
macro_rules! quiet_lookup {
    ($( $name:ident ( $($arg:ident: $ty:ty),* ) -> $ret:ty; )*) => {$(
        #[doc = concat!("`", stringify!($name), "`, run quiet (DN3).")]
        ///
        /// # Safety
        ///
        /// The C function's contract.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            let _quiet = crate::core::runtime::Quiet::new();
            // SAFETY: the caller's contract.
            unsafe { real::$name($($arg),*) }
        }
    )*};
}

quiet_lookup! {
    getpwnam(name: *const c_char) -> *mut libc::passwd;
    getpwuid(uid: libc::uid_t) -> *mut libc::passwd;
    getpwnam_r(name: *const c_char, pwd: *mut libc::passwd, buf: *mut c_char, len: libc::size_t, result: *mut *mut libc::passwd) -> c_int;
    getpwuid_r(uid: libc::uid_t, pwd: *mut libc::passwd, buf: *mut c_char, len: libc::size_t, result: *mut *mut libc::passwd) -> c_int;
    getgrnam(name: *const c_char) -> *mut libc::group;
    getgrgid(gid: libc::gid_t) -> *mut libc::group;
    getnameinfo(addr: *const libc::sockaddr, addrlen: libc::socklen_t, host: *mut c_char, hostlen: libc::socklen_t, serv: *mut c_char, servlen: libc::socklen_t, flags: c_int) -> c_int;
}
