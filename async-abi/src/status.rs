//! Status codes: one table for the whole ABI.
//!
//! An [`AaStatus`] is an `int32_t`:
//! - `0` ([`AA_OK`]) is success;
//! - a positive value is a count or a documented special result
//!   (for example [`AA_DONE`] from `io_submit`);
//! - `-errno` is an operating-system error, as libuv does on Unix
//!   (`-ECANCELED` for a cancelled I/O request, `-ECONNRESET`, ...);
//! - codes in the reserved block at and below `-10000` are the ABI's own.
//!
//! An unknown negative code is treated as a generic failure. Rule AA-R8: a
//! function that returns a negative status never calls its callback.

/// Result of most ABI functions and the status argument of callbacks.
pub type AaStatus = i32;

/// Success.
pub const AA_OK: AaStatus = 0;

/// `io_submit` completed the request before returning; the result is in
/// `AaIoOp::result`, no event was created and no callback will run.
pub const AA_DONE: AaStatus = 1;

/// The first code of the ABI's reserved block; every ABI code is `<=` this.
pub const AA_E_BASE: AaStatus = -10000;

/// The plugin does not implement this function, event kind or option.
pub const AA_E_UNSUPPORTED: AaStatus = -10001;

/// An argument is invalid: a NULL pointer, a wrong `struct_size`, an unknown
/// flag bit, or a call in a state that does not allow it.
pub const AA_E_INVALID: AaStatus = -10002;

/// The other side's ABI version or struct size is not compatible.
pub const AA_E_VERSION: AaStatus = -10003;

/// The object still has live dependents (for example `destroy` on a reactor
/// with live events; libuv's `UV_EBUSY`).
pub const AA_E_BUSY: AaStatus = -10004;

/// The object is closed or closing.
pub const AA_E_CLOSED: AaStatus = -10005;

/// A panic was caught at the boundary. The instance is poisoned: the host
/// calls nothing on it but `destroy`, or leaks it.
pub const AA_E_PANIC: AaStatus = -10006;

/// A bug inside the plugin: an invariant did not hold.
pub const AA_E_INTERNAL: AaStatus = -10007;

/// Memory or another resource could not be allocated.
pub const AA_E_NOMEM: AaStatus = -10008;

/// The coroutine was resumed because it was cancelled. The host that asked
/// for the cancellation holds its details (reason, cause).
pub const AA_E_CANCELLED: AaStatus = -10010;

/// The coroutine was resumed because the scheduler found a deadlock: nothing
/// runnable, no visible event, and coroutines still waiting.
pub const AA_E_DEADLOCK: AaStatus = -10011;

/// The coroutine was resumed (or started) because the scheduler is shutting
/// down; its stack must be unwound and its entry must return.
pub const AA_E_SHUTDOWN: AaStatus = -10012;

/// A timer or deadline expired.
pub const AA_E_TIMEOUT: AaStatus = -10013;

// Name resolution (`dns_resolve`): the sub-block -10100 to -10199. The
// `EAI_*` codes of `getaddrinfo` that are not errno values land here;
// `EAI_SYSTEM` is reported as `-errno` and `EAI_MEMORY` as `AA_E_NOMEM`.

/// The name does not exist, or has no address of the requested family
/// (`EAI_NONAME`, `EAI_NODATA`, `EAI_ADDRFAMILY`). Names under `.invalid`
/// (RFC 6761) always fail with it.
pub const AA_E_DNS_NONAME: AaStatus = -10100;

/// A temporary failure of the name server; trying again later may succeed
/// (`EAI_AGAIN`).
pub const AA_E_DNS_AGAIN: AaStatus = -10101;

/// A permanent failure of the name server (`EAI_FAIL`, and any other
/// resolver failure without a closer code).
pub const AA_E_DNS_FAIL: AaStatus = -10102;

/// The address family, socket type or service is not supported for this
/// lookup (`EAI_FAMILY`, `EAI_SOCKTYPE`, `EAI_SERVICE`).
pub const AA_E_DNS_FAMILY: AaStatus = -10103;

/// One row of the status table.
#[derive(Debug, Clone, Copy)]
pub struct StatusInfo {
    /// The code.
    pub code: AaStatus,
    /// The constant's name, `"AA_E_INVALID"`.
    pub name: &'static str,
    /// One lowercase line saying what it means.
    pub message: &'static str,
}

/// Every ABI code with its name and message. Errno values are not listed;
/// they are described by the operating system.
pub const STATUS_TABLE: &[StatusInfo] = &[
    row(AA_OK, "AA_OK", "success"),
    row(AA_DONE, "AA_DONE", "completed inline"),
    row(
        AA_E_UNSUPPORTED,
        "AA_E_UNSUPPORTED",
        "not supported by this plugin",
    ),
    row(AA_E_INVALID, "AA_E_INVALID", "invalid argument or state"),
    row(
        AA_E_VERSION,
        "AA_E_VERSION",
        "incompatible ABI version or struct size",
    ),
    row(AA_E_BUSY, "AA_E_BUSY", "still in use"),
    row(AA_E_CLOSED, "AA_E_CLOSED", "closed"),
    row(AA_E_PANIC, "AA_E_PANIC", "panic caught at the ABI boundary"),
    row(
        AA_E_INTERNAL,
        "AA_E_INTERNAL",
        "internal error in the plugin",
    ),
    row(AA_E_NOMEM, "AA_E_NOMEM", "out of memory"),
    row(AA_E_CANCELLED, "AA_E_CANCELLED", "cancelled"),
    row(AA_E_DEADLOCK, "AA_E_DEADLOCK", "deadlock detected"),
    row(AA_E_SHUTDOWN, "AA_E_SHUTDOWN", "scheduler is shutting down"),
    row(AA_E_TIMEOUT, "AA_E_TIMEOUT", "timed out"),
    row(
        AA_E_DNS_NONAME,
        "AA_E_DNS_NONAME",
        "name or service not known",
    ),
    row(
        AA_E_DNS_AGAIN,
        "AA_E_DNS_AGAIN",
        "temporary failure in name resolution",
    ),
    row(
        AA_E_DNS_FAIL,
        "AA_E_DNS_FAIL",
        "non-recoverable failure in name resolution",
    ),
    row(
        AA_E_DNS_FAMILY,
        "AA_E_DNS_FAMILY",
        "address family, socket type or service not supported",
    ),
];

const fn row(code: AaStatus, name: &'static str, message: &'static str) -> StatusInfo {
    StatusInfo {
        code,
        name,
        message,
    }
}

/// Looks a code up in [`STATUS_TABLE`]; `None` for errno values and unknown
/// codes.
pub fn status_info(code: AaStatus) -> Option<&'static StatusInfo> {
    STATUS_TABLE.iter().find(|row| row.code == code)
}

/// The constant's name of an ABI code, `"AA_E_INVALID"`; `None` otherwise.
pub fn status_name(code: AaStatus) -> Option<&'static str> {
    status_info(code).map(|row| row.name)
}

/// True for a code in the ABI's reserved block (not an errno).
pub const fn is_abi_code(code: AaStatus) -> bool {
    code <= AA_E_BASE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_codes_are_unique_and_named_like_their_constants() {
        for (i, a) in STATUS_TABLE.iter().enumerate() {
            for b in &STATUS_TABLE[i + 1..] {
                assert_ne!(a.code, b.code, "{} and {} share a code", a.name, b.name);
            }
            assert!(a.name.starts_with("AA_"));
            assert!(
                a.code >= 0 || is_abi_code(a.code),
                "{} outside the block",
                a.name
            );
        }
        assert_eq!(status_name(AA_E_DEADLOCK), Some("AA_E_DEADLOCK"));
        assert_eq!(status_name(AA_E_DNS_NONAME), Some("AA_E_DNS_NONAME"));
        assert_eq!(status_name(-4), None);
    }
}
