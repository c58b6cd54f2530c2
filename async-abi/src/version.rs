//! ABI version numbers and entry symbol names.
//!
//! Compatibility rule: the same major version means binary compatible. A
//! minor version only *appends*: fields at the end of structs, slots at the
//! end of vtables, new constants, new status codes. The host accepts a plugin
//! of any minor of its major and the plugin accepts a host of any minor; a
//! trailing slot that the other side does not have reads as `NULL`. An
//! incompatible change is a new major, which is a new entry symbol name, so
//! an old host never even finds a new plugin's descriptor.

/// The major version of this ABI. A host refuses a plugin with another major.
pub const AA_ABI_MAJOR: u16 = 1;

/// The minor version of this ABI: additions only, see the module doc.
///
/// - 1.0: the first stable version.
/// - 1.1: datagram requests (`AA_IO_RECVFROM`, `AA_IO_SENDTO`, the
///   `AA_IO_PEEK` flag, `AA_CAP_IO_DGRAM`); file requests (`AA_IO_OPENAT`,
///   `AA_IO_STATX` with `AaStat`, `AA_IO_FSYNC`, `AA_IO_UNLINKAT`,
///   `AA_IO_RENAMEAT`, `AA_IO_MKDIRAT`, `AA_CAP_IO_FILE`;
///   `AA_IO_FTRUNCATE`, `AA_CAP_IO_FTRUNCATE`); the `AaIoOp` fields
///   `path`, `path2`, `fd2`, `open_flags`, `mode`; the vtable slot
///   `instance_caps`; `AA_CAPS_V1_0`.
/// - 1.2: `AA_CAP_POLL_LEVEL` (a reactor over a level-triggered poller
///   asks the host to re-arm a poll whose readiness it consumed);
///   `AA_CAPS_V1_2`.
///
/// This is the minor of the header (or crate) a plugin is built with, not
/// the minor the plugin implements: a plugin states that itself
/// (`AA_IMPLEMENTS_MINOR` and `AA_PLUGIN_MINOR` in C, `Reactor::ABI_MINOR`
/// in `reactor-sdk`), so a rebuild against a newer header never promises
/// more than the source implements.
pub const AA_ABI_MINOR: u16 = 2;

/// The entry symbol a scheduler plugin exports, with its terminating NUL.
///
/// Its type is [`crate::AaPluginEntryFn`].
pub const AA_SCHEDULER_ENTRY_SYMBOL: &[u8; 22] = b"aa_scheduler_entry_v1\0";

/// The entry symbol a reactor plugin exports, with its terminating NUL.
///
/// Its type is [`crate::AaPluginEntryFn`].
pub const AA_REACTOR_ENTRY_SYMBOL: &[u8; 20] = b"aa_reactor_entry_v1\0";

/// Interface id of the scheduler vtable, [`crate::AaSchedulerVTable`].
pub const AA_IFACE_SCHEDULER_V1: &[u8; 16] = b"aa.scheduler.v1\0";

/// Interface id of the reactor vtable, [`crate::AaReactorVTable`].
pub const AA_IFACE_REACTOR_V1: &[u8; 14] = b"aa.reactor.v1\0";
