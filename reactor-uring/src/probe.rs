//! Probing the kernel at `create`: can this process use io_uring at all,
//! and does the kernel have every opcode and feature the reactor relies on?
//!
//! Every refusal becomes one line starting `io_uring unavailable: ` (copied
//! into `cfg->err_buf` by `ffi.rs`) and a negative status: the `-errno` of
//! a refused system call (`-EPERM` when `kernel.io_uring_disabled` or a
//! seccomp filter forbids io_uring, `-ENOSYS` on a kernel without it), or
//! `-ENOSYS` for a missing opcode or feature.
//!
//! | needed | for | since |
//! |---|---|---|
//! | `io_uring_setup`, `IORING_FEAT_NODROP` | the ring; no completion is ever dropped | 5.5 |
//! | `IORING_REGISTER_PROBE` | this probe | 5.6 |
//! | `READ`, `WRITE` | files, pipes, eventfds (triggers, waker) | 5.6 |
//! | `RECV`, `SEND`, `ACCEPT`, `CONNECT` | sockets | 5.6 / 5.5 |
//! | `CLOSE` | `AA_IO_CLOSE`, `AA_EVF_OWNS_FD` | 5.6 |
//! | `POLL_ADD` | watches, `EAGAIN` fallback | 5.1 |
//! | `ASYNC_CANCEL` | cancel, close, dispose | 5.5 |
//! | `IORING_FEAT_EXT_ARG` | the wait's timeout in the same `io_uring_enter` | 5.11 |
//!
//! Used when present, with a fallback otherwise: `IORING_ASYNC_CANCEL_FD`
//! (5.19; else one cancel per op) and multishot `POLL_ADD` (5.13; else
//! one-shot polls re-armed, detected at the first watch).
//!
//! Setup flags asked for by the options (`uring.single_issuer`,
//! `uring.defer_taskrun`), dropped with a debug line when the kernel
//! refuses them with `EINVAL`: `IORING_SETUP_DEFER_TASKRUN` with
//! `IORING_SETUP_TASKRUN_FLAG` (6.1), then `IORING_SETUP_SINGLE_ISSUER`
//! (6.0). The reactor's debug line at `create` says which the ring has.
//!
//! Optional (ABI 1.1): each capability below is in the instance's
//! capabilities (`instance_caps`) only if the kernel has every opcode it
//! needs; without one, `io_submit` answers `AA_E_UNSUPPORTED` naming it, and
//! the host falls back to its blocking pool.
//!
//! | capability | opcodes | since |
//! |---|---|---|
//! | `AA_CAP_IO_DGRAM` | `RECVMSG`, `SENDMSG` | 5.3 |
//! | `AA_CAP_IO_FILE` | `OPENAT`, `STATX`, `FSYNC`, `UNLINKAT`, `RENAMEAT`, `MKDIRAT` | 5.6 to 5.15 |
//! | `AA_CAP_IO_FTRUNCATE` | `FTRUNCATE` | 6.9 |

use std::io;
use std::os::fd::RawFd;

use async_abi::{AA_CAP_IO_DGRAM, AA_CAP_IO_FILE, AA_CAP_IO_FTRUNCATE};
use io_uring::{opcode, IoUring, Probe};

use crate::config::Config;
use crate::error::{neg_errno, Error, Result};
use crate::ops::cancel::probe_cancel_fd;
use crate::ring::Ring;

/// What the kernel offers beyond the required minimum.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Features {
    /// `IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL` (5.19).
    pub(crate) cancel_fd: bool,
    /// The instance's capabilities: the plugin's, less every optional one
    /// whose opcodes the kernel lacks (see the module doc).
    pub(crate) caps: u64,
    /// The first opcode the kernel lacks, for each optional capability it
    /// cleared: `io_submit`'s refusal names it.
    lacking: [Option<&'static str>; 3],
    /// The setup flags the ring was made with.
    pub(crate) setup: Setup,
    /// Multishot `ACCEPT` (5.19; `IORING_OP_SOCKET`, of the same release,
    /// stands for it in the opcode probe).
    pub(crate) accept_multi: bool,
    /// Multishot `RECV` with provided-buffer rings (6.0;
    /// `IORING_OP_SEND_ZC`, of the same release, stands for it).
    pub(crate) recv_multi: bool,
}

/// The optional setup flags of the ring: asked for by the configuration,
/// kept if the kernel accepted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Setup {
    /// `IORING_SETUP_SINGLE_ISSUER` (6.0): only the loop thread submits,
    /// which every shim already checks.
    pub(crate) single_issuer: bool,
    /// `IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG` (6.1):
    /// completions are posted only when the loop enters the ring asking for
    /// events.
    pub(crate) defer_taskrun: bool,
}

impl Features {
    /// Why the instance lacks `cap` (one of the optional ones), if it does:
    /// `"IORING_OP_FTRUNCATE (linux 6.9)"`.
    pub(crate) fn lacking(&self, cap: u64) -> Option<&'static str> {
        OPTIONAL
            .iter()
            .position(|(c, _)| *c == cap)
            .and_then(|i| self.lacking[i])
    }
}

/// The optional capabilities and the opcodes each needs, with the kernel
/// version that added them.
const OPTIONAL: [(u64, &[(&str, u8)]); 3] = [
    (
        AA_CAP_IO_DGRAM,
        &[
            ("IORING_OP_RECVMSG (linux 5.3)", opcode::RecvMsg::CODE),
            ("IORING_OP_SENDMSG (linux 5.3)", opcode::SendMsg::CODE),
        ],
    ),
    (
        AA_CAP_IO_FILE,
        &[
            ("IORING_OP_OPENAT (linux 5.6)", opcode::OpenAt::CODE),
            ("IORING_OP_STATX (linux 5.6)", opcode::Statx::CODE),
            ("IORING_OP_FSYNC (linux 5.1)", opcode::Fsync::CODE),
            ("IORING_OP_UNLINKAT (linux 5.11)", opcode::UnlinkAt::CODE),
            ("IORING_OP_RENAMEAT (linux 5.11)", opcode::RenameAt::CODE),
            ("IORING_OP_MKDIRAT (linux 5.15)", opcode::MkDirAt::CODE),
        ],
    ),
    (
        AA_CAP_IO_FTRUNCATE,
        &[("IORING_OP_FTRUNCATE (linux 6.9)", opcode::Ftruncate::CODE)],
    ),
];

/// The instance's capabilities from the plugin's `caps`, the opcodes the
/// kernel has (`has`), and the ones a test configuration pretends it lacks
/// (`Config::without`).
fn optional_caps(
    plugin: u64,
    without: u64,
    has: impl Fn(u8) -> bool,
) -> (u64, [Option<&'static str>; 3]) {
    let mut caps = plugin;
    let mut lacking = [None; 3];
    for (i, (cap, opcodes)) in OPTIONAL.iter().enumerate() {
        let missing = if without & cap != 0 {
            Some(opcodes[0].0)
        } else {
            opcodes
                .iter()
                .find(|(_, code)| !has(*code))
                .map(|(n, _)| *n)
        };
        if let Some(name) = missing {
            caps &= !cap;
            lacking[i] = Some(name);
        }
    }
    (caps, lacking)
}

/// The opcodes the reactor submits, by name.
const REQUIRED: &[(&str, u8)] = &[
    ("IORING_OP_READ", opcode::Read::CODE),
    ("IORING_OP_WRITE", opcode::Write::CODE),
    ("IORING_OP_RECV", opcode::Recv::CODE),
    ("IORING_OP_SEND", opcode::Send::CODE),
    ("IORING_OP_ACCEPT", opcode::Accept::CODE),
    ("IORING_OP_CONNECT", opcode::Connect::CODE),
    ("IORING_OP_CLOSE", opcode::Close::CODE),
    ("IORING_OP_POLL_ADD", opcode::PollAdd::CODE),
    ("IORING_OP_ASYNC_CANCEL", opcode::AsyncCancel::CODE),
];

/// The prefix of every refusal.
const UNAVAILABLE: &str = "io_uring unavailable: ";

/// Makes the ring and checks the kernel (see the module doc). `probe_fd` is
/// a descriptor with nothing in flight, for the cancel-by-descriptor probe.
pub(crate) fn open(config: &Config, probe_fd: RawFd) -> Result<(Ring, Features)> {
    let (uring, setup) = build(config)?;
    let mut ring = Ring::new(uring);
    ring.set_defer_taskrun(setup.defer_taskrun);
    let params = ring.params();
    if !params.is_feature_nodrop() {
        return Err(lacks("IORING_FEAT_NODROP (linux 5.5)"));
    }
    if !params.is_feature_ext_arg() {
        return Err(lacks("IORING_FEAT_EXT_ARG (linux 5.11)"));
    }
    let mut probe = Probe::new();
    ring.register_probe(&mut probe).map_err(|e| {
        Error::new(
            neg_errno(&e),
            format!("{UNAVAILABLE}io_uring_register(IORING_REGISTER_PROBE) failed: {e}"),
        )
    })?;
    if let Some((name, _)) = REQUIRED.iter().find(|(_, code)| !probe.is_supported(*code)) {
        return Err(lacks(name));
    }
    let cancel_fd = probe_cancel_fd(&mut ring, probe_fd).map_err(|e| {
        Error::new(
            neg_errno(&e),
            format!("{UNAVAILABLE}io_uring_enter failed: {e}"),
        )
    })? && !config.old_kernel;
    let (mut caps, lacking) = optional_caps(crate::ffi::CAPS, config.without, |code| {
        probe.is_supported(code)
    });
    // `uring.inline_streams`, which a multishot receive rules out: its
    // queued bytes are ahead of anything a direct read would get.
    if !config.inline_streams || config.multishot_recv {
        caps &= !async_abi::AA_CAP_IO_INLINE;
    }
    Ok((
        ring,
        Features {
            cancel_fd,
            caps,
            lacking,
            setup,
            accept_multi: probe.is_supported(opcode::Socket::CODE),
            recv_multi: probe.is_supported(opcode::SendZc::CODE),
        },
    ))
}

/// Makes the ring with the setup flags `config` asks for, dropping them one
/// step at a time while the kernel refuses them with `EINVAL` (flags it does
/// not know): `DEFER_TASKRUN` (6.1) first, then `SINGLE_ISSUER` (6.0). A
/// refusal of the plain ring is the caller's error.
fn build(config: &Config) -> Result<(IoUring, Setup)> {
    let wanted = Setup {
        single_issuer: config.single_issuer,
        defer_taskrun: config.single_issuer && config.defer_taskrun,
    };
    negotiate(wanted, |setup| {
        let mut builder = IoUring::builder();
        builder.dontfork();
        if setup.single_issuer {
            builder.setup_single_issuer();
        }
        if setup.defer_taskrun {
            // The flag tells a non-blocking enter that deferred work is
            // waiting (`IORING_SQ_TASKRUN`), so `run_once(0)` still reaps
            // it (ring invariant K5).
            builder.setup_defer_taskrun().setup_taskrun_flag();
        }
        builder.build(config.sq_entries)
    })
    .map_err(|e| setup_refused(&e, disabled_sysctl()))
}

/// Calls `make` with `wanted`, then, while it fails with `EINVAL` (a kernel
/// that does not know a flag), without deferred task running, then without
/// a single issuer; any other failure, or `EINVAL` for the plain ring, is
/// returned.
fn negotiate<T>(
    wanted: Setup,
    mut make: impl FnMut(Setup) -> io::Result<T>,
) -> io::Result<(T, Setup)> {
    let mut setup = wanted;
    loop {
        match make(setup) {
            Ok(made) => return Ok((made, setup)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && setup.defer_taskrun => {
                async_abi::plugin_debug!(
                    "reactor-uring: the kernel refused IORING_SETUP_DEFER_TASKRUN (linux 6.1): {e}; without it"
                );
                setup.defer_taskrun = false;
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && setup.single_issuer => {
                async_abi::plugin_debug!(
                    "reactor-uring: the kernel refused IORING_SETUP_SINGLE_ISSUER (linux 6.0): {e}; without it"
                );
                setup.single_issuer = false;
            }
            Err(e) => return Err(e),
        }
    }
}

/// A kernel without `what`.
fn lacks(what: &str) -> Error {
    Error::new(-libc::ENOSYS, format!("{UNAVAILABLE}kernel lacks {what}"))
}

/// The value of `kernel.io_uring_disabled` (Linux 6.6+), if the file exists.
fn disabled_sysctl() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .map(|s| s.trim().to_owned())
}

/// The refusal of `io_uring_setup`, naming the sysctl when it explains it.
fn setup_refused(err: &io::Error, sysctl: Option<String>) -> Error {
    let mut message = format!("{UNAVAILABLE}io_uring_setup failed: {err}");
    if err.raw_os_error() == Some(libc::EPERM) {
        match sysctl.as_deref() {
            Some("2") => message.push_str(" (kernel.io_uring_disabled = 2: disabled for everyone)"),
            Some("1") => message.push_str(
                " (kernel.io_uring_disabled = 1: only members of kernel.io_uring_group may use it)",
            ),
            _ => message.push_str(" (a seccomp filter or a container policy may forbid it)"),
        }
    }
    Error::new(neg_errno(err), message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_setup_names_the_call_the_reason_and_the_sysctl() {
        let eperm = io::Error::from_raw_os_error(libc::EPERM);
        let err = setup_refused(&eperm, Some("2".into()));
        assert_eq!(err.status, -libc::EPERM);
        assert_eq!(
            err.message,
            "io_uring unavailable: io_uring_setup failed: Operation not permitted (os error 1) \
             (kernel.io_uring_disabled = 2: disabled for everyone)"
        );
        let enosys = io::Error::from_raw_os_error(libc::ENOSYS);
        let err = setup_refused(&enosys, None);
        assert_eq!(err.status, -libc::ENOSYS);
        assert_eq!(
            err.message,
            "io_uring unavailable: io_uring_setup failed: Function not implemented (os error 38)"
        );
    }

    #[test]
    fn an_optional_capability_without_its_opcodes_is_cleared_and_named() {
        let all = crate::ffi::CAPS;
        let (caps, lacking) = optional_caps(all, 0, |_| true);
        assert_eq!(caps, all);
        assert_eq!(lacking, [None; 3]);
        let (caps, lacking) = optional_caps(all, 0, |code| code != opcode::Ftruncate::CODE);
        assert_eq!(caps, all & !AA_CAP_IO_FTRUNCATE);
        assert_eq!(lacking[2], Some("IORING_OP_FTRUNCATE (linux 6.9)"));
        let (caps, lacking) = optional_caps(all, AA_CAP_IO_FILE, |_| true);
        assert_eq!(caps, all & !AA_CAP_IO_FILE);
        assert_eq!(lacking[1], Some("IORING_OP_OPENAT (linux 5.6)"));
    }

    #[test]
    fn setup_flags_the_kernel_refuses_are_dropped_one_at_a_time() {
        let both = Setup {
            single_issuer: true,
            defer_taskrun: true,
        };
        let einval = || io::Error::from_raw_os_error(libc::EINVAL);
        // A 6.0 kernel: no deferred task running.
        let mut tried = Vec::new();
        let made = negotiate(both, |s| {
            tried.push(s);
            if s.defer_taskrun {
                Err(einval())
            } else {
                Ok(())
            }
        });
        let kept = Setup {
            single_issuer: true,
            defer_taskrun: false,
        };
        assert_eq!(made.unwrap().1, kept);
        assert_eq!(tried, [both, kept]);
        // A 5.x kernel: neither.
        let made = negotiate(both, |s| {
            if s.defer_taskrun || s.single_issuer {
                Err(einval())
            } else {
                Ok(())
            }
        });
        let none = Setup {
            single_issuer: false,
            defer_taskrun: false,
        };
        assert_eq!(made.unwrap().1, none);
        // EINVAL for the plain ring, and any other error, are the caller's.
        let err = negotiate(none, |_| Err::<(), _>(einval())).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
        let mut calls = 0;
        let err = negotiate(both, |_| {
            calls += 1;
            Err::<(), _>(io::Error::from_raw_os_error(libc::EPERM))
        })
        .unwrap_err();
        assert_eq!((err.raw_os_error(), calls), (Some(libc::EPERM), 1));
    }

    #[test]
    fn a_missing_opcode_is_named() {
        let err = lacks("IORING_OP_SEND");
        assert_eq!(err.status, -libc::ENOSYS);
        assert_eq!(
            err.message,
            "io_uring unavailable: kernel lacks IORING_OP_SEND"
        );
    }
}
