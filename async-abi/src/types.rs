//! Plain data shared by every part of the ABI: strings, options, addresses.

use core::ffi::c_void;
use core::marker::PhantomData;

/// A borrowed UTF-8 string: pointer and length, not NUL-terminated.
///
/// Valid only for the call it is passed to (AA-R2) unless the function says
/// otherwise. `ptr` may be NULL when `len` is 0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaStr {
    /// First byte, or NULL for the empty string.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl AaStr {
    /// The empty string.
    pub const EMPTY: AaStr = AaStr {
        ptr: core::ptr::null(),
        len: 0,
    };

    /// Borrows a Rust string. The result is valid while `s` is.
    pub const fn from_str(s: &str) -> AaStr {
        AaStr {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// Reads the string back.
    ///
    /// # Safety
    ///
    /// `ptr` must point to `len` initialized bytes that stay valid and
    /// unmodified for `'a`, or `len` must be 0.
    pub unsafe fn as_bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 || self.ptr.is_null() {
            return &[];
        }
        // SAFETY: the caller guarantees `ptr..ptr+len` is readable for 'a.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Reads the string back as UTF-8, replacing nothing: invalid UTF-8 gives
    /// `None`.
    ///
    /// # Safety
    ///
    /// As for [`AaStr::as_bytes`].
    pub unsafe fn as_str<'a>(self) -> Option<&'a str> {
        // SAFETY: forwarded to the caller's guarantee.
        core::str::from_utf8(unsafe { self.as_bytes() }).ok()
    }
}

/// A borrowed byte string (paths, names): pointer and length, any bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaBytes {
    /// First byte, or NULL when `len` is 0.
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

impl AaBytes {
    /// The empty byte string.
    pub const EMPTY: AaBytes = AaBytes {
        ptr: core::ptr::null(),
        len: 0,
    };

    /// Borrows a Rust byte slice. The result is valid while `b` is.
    pub const fn from_slice(b: &[u8]) -> AaBytes {
        AaBytes {
            ptr: b.as_ptr(),
            len: b.len(),
        }
    }
}

/// One backend-specific option, `"uring.sq_entries" = "256"`.
///
/// Options let tuning pass through without ABI changes. A key is
/// `<name>.<option>` (`uring.sq_entries`); a scheduler also takes its own
/// keys bare (`engine`). A plugin ignores keys with another plugin's
/// prefix, so one list serves whichever plugin the host picks
/// (`ASYNC_REACTOR=auto` tries uring, then mio). It fails `create` with
/// [`crate::AA_E_INVALID`] for a bad value or an unknown key of its own,
/// and a reactor for a key without a prefix, writing one line naming the
/// key into `err_buf` (not also into the log).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaKv {
    /// The key.
    pub key: AaStr,
    /// The value, as text.
    pub value: AaStr,
}

/// An operating-system descriptor: a file descriptor on Unix.
pub type AaOsHandle = i64;

/// A socket address in the platform's `struct sockaddr_*` layout.
///
/// `storage` holds a `struct sockaddr_in`, `struct sockaddr_in6` or (for
/// the datagram requests of ABI 1.1 on Unix sockets) `struct sockaddr_un`,
/// 110 bytes on Linux, or any `struct sockaddr` that fits, aligned for all
/// of them; `len` is the number of valid bytes, the `socklen_t` the system
/// calls take and return. A Unix address may be abstract (a leading NUL in
/// `sun_path`) or unnamed (`len` 0 or just the family).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AaSockAddr {
    /// Valid bytes in `storage`.
    pub len: u32,
    /// Zero.
    pub _reserved: u32,
    /// The address bytes (128 bytes, the size of `struct sockaddr_storage`).
    pub storage: [u64; 16],
}

impl AaSockAddr {
    /// An empty address (`len` 0), ready to be filled by `accept`.
    pub const EMPTY: AaSockAddr = AaSockAddr {
        len: 0,
        _reserved: 0,
        storage: [0; 16],
    };
}

/// Opaque per-instance context a plugin returns from `init`.
#[derive(Debug)]
pub struct AaPluginCtx {
    _opaque: [u8; 0],
    _not_send: PhantomData<*mut c_void>,
}

#[cfg(all(test, feature = "plugin"))]
mod tests {
    use super::*;

    #[test]
    fn every_socket_address_of_the_platform_fits_in_aa_sock_addr() {
        let room = core::mem::size_of_val(&AaSockAddr::EMPTY.storage);
        assert_eq!(room, core::mem::size_of::<libc::sockaddr_storage>());
        assert!(core::mem::size_of::<libc::sockaddr_un>() <= room);
        assert!(core::mem::size_of::<libc::sockaddr_in6>() <= room);
        assert!(core::mem::align_of::<AaSockAddr>() >= core::mem::align_of::<libc::sockaddr_un>());
    }
}
