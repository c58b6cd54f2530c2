//! `getaddrinfo`, run by a resolver thread (never the loop thread), and the
//! mapping of its `EAI_*` codes into the ABI. Shared by the workspace's
//! reactors through the SDK.
//!
//! # Safety
//!
//! The unsafe code is the `getaddrinfo` call on NUL-terminated strings the
//! job owns and a local hints struct, the walk of the list it returns (read
//! only, each `ai_addr` valid for `ai_addrlen` bytes, as the C library
//! promises), and the `freeaddrinfo` of exactly that list.

use std::ffi::CString;
use std::mem::size_of;
use std::ptr;

use crate::{AaSockAddr, AaStatus, AA_E_DNS_AGAIN, AA_E_DNS_FAIL, AA_E_DNS_FAMILY};
use crate::{AA_E_DNS_NONAME, AA_E_INTERNAL, AA_E_INVALID, AA_E_NOMEM};

/// glibc's `EAI_ADDRFAMILY` (not in every C library, nor in `libc`).
const EAI_ADDRFAMILY: libc::c_int = -9;
/// glibc's `EAI_CANCELED`.
const EAI_CANCELED: libc::c_int = -101;

/// The `AaAddrHints` fields of one lookup, checked by the caller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// `AF_UNSPEC`, `AF_INET` or `AF_INET6`.
    pub family: i32,
    /// `SOCK_STREAM`, `SOCK_DGRAM` or 0.
    pub socktype: i32,
    /// `AI_*` flags.
    pub flags: i32,
}

/// Resolves `node`/`service` (either may be `None`, not both): the
/// addresses in the order the C library gave them, without duplicates (a
/// lookup without a socket type lists each address once per type), or a
/// status: an `AA_E_DNS_*` code, `AA_E_NOMEM`, or `-errno`.
pub fn getaddrinfo(
    node: Option<&CString>,
    service: Option<&CString>,
    hints: Hints,
) -> Result<Vec<AaSockAddr>, AaStatus> {
    // SAFETY: an all-zero `struct addrinfo` is the C idiom for "no hints".
    let mut want: libc::addrinfo = unsafe { std::mem::zeroed() };
    want.ai_family = hints.family;
    want.ai_socktype = hints.socktype;
    want.ai_flags = hints.flags;
    let mut list: *mut libc::addrinfo = ptr::null_mut();
    // SAFETY: `node` and `service` are NUL-terminated strings the caller
    // owns for the call (or NULL); `want` is a local; `list` is a local the
    // call fills on success.
    let rc = unsafe {
        libc::getaddrinfo(
            node.map_or(ptr::null(), |s| s.as_ptr()),
            service.map_or(ptr::null(), |s| s.as_ptr()),
            &want,
            &mut list,
        )
    };
    if rc != 0 {
        let errno = std::io::Error::last_os_error().raw_os_error();
        return Err(status_of(rc, errno));
    }
    let mut out: Vec<AaSockAddr> = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list `getaddrinfo` returned, not yet
        // freed.
        let ai = unsafe { &*at };
        let len = ai.ai_addrlen as usize;
        if !ai.ai_addr.is_null() && len > 0 && len <= size_of::<[u64; 16]>() {
            let mut addr = AaSockAddr::EMPTY;
            // SAFETY: `ai_addr` is valid for `ai_addrlen` bytes (C library
            // contract); `storage` is 128 bytes, at least `len`; they do not
            // overlap.
            unsafe {
                ptr::copy_nonoverlapping(
                    ai.ai_addr.cast::<u8>(),
                    addr.storage.as_mut_ptr().cast::<u8>(),
                    len,
                )
            };
            addr.len = len as u32;
            if !out
                .iter()
                .any(|a| a.len == addr.len && a.storage == addr.storage)
            {
                out.push(addr);
            }
        }
        at = ai.ai_next;
    }
    // SAFETY: `list` is the list `getaddrinfo` returned, freed once, and no
    // reference into it outlives this line.
    unsafe { libc::freeaddrinfo(list) };
    Ok(out)
}

/// The ABI status of a `getaddrinfo` failure (`errno` for `EAI_SYSTEM`).
pub fn status_of(eai: libc::c_int, errno: Option<i32>) -> AaStatus {
    match eai {
        libc::EAI_NONAME | libc::EAI_NODATA | EAI_ADDRFAMILY => AA_E_DNS_NONAME,
        libc::EAI_AGAIN => AA_E_DNS_AGAIN,
        libc::EAI_FAIL => AA_E_DNS_FAIL,
        libc::EAI_FAMILY | libc::EAI_SOCKTYPE | libc::EAI_SERVICE => AA_E_DNS_FAMILY,
        libc::EAI_MEMORY => AA_E_NOMEM,
        libc::EAI_BADFLAGS => AA_E_INVALID,
        libc::EAI_OVERFLOW => AA_E_INTERNAL,
        EAI_CANCELED => -libc::ECANCELED,
        libc::EAI_SYSTEM => -errno.filter(|e| *e > 0).unwrap_or(libc::EIO),
        _ => AA_E_DNS_FAIL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eai_codes_map_into_the_abi_block() {
        assert_eq!(status_of(libc::EAI_NONAME, None), AA_E_DNS_NONAME);
        assert_eq!(status_of(libc::EAI_NODATA, None), AA_E_DNS_NONAME);
        assert_eq!(status_of(libc::EAI_AGAIN, None), AA_E_DNS_AGAIN);
        assert_eq!(status_of(libc::EAI_FAIL, None), AA_E_DNS_FAIL);
        assert_eq!(status_of(libc::EAI_SERVICE, None), AA_E_DNS_FAMILY);
        assert_eq!(status_of(libc::EAI_MEMORY, None), AA_E_NOMEM);
        assert_eq!(
            status_of(libc::EAI_SYSTEM, Some(libc::EMFILE)),
            -libc::EMFILE
        );
        assert_eq!(status_of(libc::EAI_SYSTEM, None), -libc::EIO);
    }

    #[test]
    fn a_numeric_host_resolves_once_per_address() {
        let node = CString::new("127.0.0.1").unwrap();
        let hints = Hints {
            family: libc::AF_INET,
            socktype: 0,
            flags: libc::AI_NUMERICHOST,
        };
        let addrs = getaddrinfo(Some(&node), None, hints).unwrap();
        assert_eq!(addrs.len(), 1, "duplicates per socket type are merged");
        assert_eq!(addrs[0].len as usize, size_of::<libc::sockaddr_in>());
    }
}
