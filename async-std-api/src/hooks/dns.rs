//! `getaddrinfo`, `gethostbyname`, `gethostbyname2`: name resolution on the
//! blocking pool. The C library resolves through its own sockets, which
//! the hooks do not see, so the whole call moves to a pool thread.
//!
//! - **DN1** The pool thread works on copies of the caller's strings and
//!   hints and owns what it gets, so a cancelled coroutine returns at once
//!   (`EAI_SYSTEM` with `errno` `ECANCELED`; a null `hostent` with
//!   `h_errno` `TRY_AGAIN`) and the pool thread frees the answer nobody
//!   takes.
//! - **DN2** `gethostbyname` returns the C library's static record, as it
//!   does on a thread; `h_errno` is copied back to the calling thread.
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

/// A `hostent` pointer into the C library's static record (DN2).
struct Host(*mut hostent);

// SAFETY: the record is the C library's process-wide static.
unsafe impl Send for Host {}

fn by_name(name: *const c_char, af: Option<c_int>) -> *mut hostent {
    let Some(n) = copy(name) else {
        // SAFETY: the caller's contract (a null name is theirs to pass).
        return unsafe { real::gethostbyname(name) };
    };
    let work = move || {
        // SAFETY: our copy of the name; the record returned is static.
        let h = unsafe {
            match af {
                Some(af) => real::gethostbyname2(n.as_ptr(), af),
                None => real::gethostbyname(n.as_ptr()),
            }
        };
        // SAFETY: the pool thread's own h_errno.
        (Host(h), unsafe { *__h_errno_location() })
    };
    match wait::on_pool("hooked gethostbyname", work) {
        Ok((Host(h), herr)) => {
            // SAFETY: the calling thread's h_errno (DN2).
            unsafe { *__h_errno_location() = herr };
            h
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
