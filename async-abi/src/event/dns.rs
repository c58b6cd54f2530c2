//! Name resolution.
//!
//! `AaDnsEvent` is an [`crate::AaEvent`] of kind `AA_EVENT_DNS`: one
//! `getaddrinfo`-style lookup, completed once.

use core::ffi::c_void;

use crate::{AaEvent, AaSockAddr, AaStatus};

/// Hints for a lookup, as `struct addrinfo`'s hint fields.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaAddrHints {
    /// `sizeof(AaAddrHints)`.
    pub struct_size: u32,
    /// `AF_UNSPEC`, `AF_INET` or `AF_INET6`.
    pub family: i32,
    /// `SOCK_STREAM`, `SOCK_DGRAM` or 0.
    pub socktype: i32,
    /// `AI_*` flags.
    pub flags: i32,
}

/// Called once with the addresses found (`status == 0`; valid only during the
/// call, AA-R3) or a failure (`status < 0`: `-errno` or an `EAI_*` code
/// mapped into the ABI block). `[loop]`
pub type AaDnsCb = Option<
    unsafe extern "C" fn(
        ev: *mut AaEvent,
        status: AaStatus,
        addrs: *const AaSockAddr,
        n_addrs: usize,
        ud: *mut c_void,
    ),
>;
