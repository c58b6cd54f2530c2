//! Filesystem watches on one inotify instance per reactor: the kit's half
//! (the descriptor, the kernel watches, the records and whom they are for).
//! The reactor reads the descriptor its own way (readiness and
//! [`Inotify::read_ready`], or a ring `READ` into its own buffer and
//! [`parse`]) and calls its watches back.
//!
//! # What this module owns
//!
//! [`Inotify`]: the inotify descriptor (non-blocking, close-on-exec) and,
//! per kernel watch descriptor, the active watches of that inode in
//! creation order. Two watches of one path share the kernel's watch:
//! `inotify_add_watch` answers with the same descriptor.
//!
//! # Invariants
//!
//! - **FW1** A watch is listed under its descriptor exactly while it is
//!   active; the kernel watch is removed (`inotify_rm_watch`) when the last
//!   watch of its descriptor stops, and records for a descriptor with no
//!   entry are stale and dropped.
//! - **FW2** Every record is one callback per active watch of its
//!   descriptor: `IN_CREATE`, `IN_DELETE`, `IN_MOVED_FROM`, `IN_MOVED_TO`,
//!   `IN_DELETE_SELF` and `IN_MOVE_SELF` are `AA_FS_RENAME`; `IN_MODIFY`,
//!   `IN_ATTRIB` and `IN_CLOSE_WRITE` are `AA_FS_CHANGE`. The name is the
//!   entry's, relative to the watched directory, empty for the watched
//!   file or directory itself, and lent for the call only (AA-R3).
//! - **FW3** When the kernel drops a watch (`IN_IGNORED`: its inode was
//!   deleted, or its filesystem unmounted), each of its watches is called
//!   once more with `-ENOENT` and is inactive from then on. A queue
//!   overflow (`IN_Q_OVERFLOW`: records were lost) is reported to every
//!   active watch as `AA_FS_RENAME | AA_FS_CHANGE` with an empty name.
//!
//! # What the reactor does
//!
//! `fs_watch_new`: [`Inotify::open`] once (and watch its descriptor),
//! [`Inotify::add`], make the event, [`Inotify::list`]. Cancel, close,
//! dispose: [`Inotify::remove`]. When records arrive: for each, with no
//! borrow of the `Inotify` held across the callbacks, [`Inotify::route`]
//! gives the watches to call, the status and bits, and whether the watch
//! ends (FW3: mark those inactive).
//!
//! # Safety
//!
//! The system calls take the owned descriptor (a wrong number could only
//! give `EBADF`), a NUL-terminated path borrowed for the call, and a local
//! buffer of the length passed.
//!
//! # Drop order
//!
//! Dropping [`Inotify`] closes the descriptor, which drops every kernel
//! watch; a reactor that reads it through the kernel (a ring `READ`) must
//! first wait for that read's final completion.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;

use async_abi::{AaStatus, AA_FS_CHANGE, AA_FS_RENAME};

use crate::error::{Error, Result};
use crate::traits::Event;
use crate::watch::WatchList;

/// The inotify events every watch asks for (FW2).
pub const WATCH_MASK: u32 = RENAME_MASK | CHANGE_MASK;
const RENAME_MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;
const CHANGE_MASK: u32 = libc::IN_MODIFY | libc::IN_ATTRIB | libc::IN_CLOSE_WRITE;

/// The size of `struct inotify_event` before its name.
const HEADER: usize = 16;

/// A reactor's inotify instance (see the module doc).
#[derive(Debug)]
pub struct Inotify<T> {
    fd: OwnedFd,
    watches: WatchList<i32, T>,
}

/// One inotify record, copied out of the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    wd: i32,
    mask: u32,
    /// The entry's name (empty for the watched path itself).
    pub name: Vec<u8>,
}

/// Whom one record is for and what they are told (FW2, FW3).
#[derive(Debug)]
pub struct Route<T> {
    /// The watches to call back (those still active, the caller checks).
    pub watchers: Vec<Rc<T>>,
    /// 0, or `-ENOENT` when the watch ends.
    pub status: AaStatus,
    /// The `AA_FS_*` bits (0 when the watch ends).
    pub bits: u32,
    /// The kernel dropped the watch: its watches become inactive (FW3).
    pub ends: bool,
}

/// The `AA_FS_*` bits of an inotify mask (FW2).
fn change_bits(mask: u32) -> u32 {
    let mut bits = 0;
    if mask & RENAME_MASK != 0 {
        bits |= AA_FS_RENAME;
    }
    if mask & CHANGE_MASK != 0 {
        bits |= AA_FS_CHANGE;
    }
    bits
}

/// Appends the records in `buf` (what one `read` of an inotify descriptor
/// gave: whole records only) to `out`.
pub fn parse(buf: &[u8], out: &mut Vec<Change>) {
    let word = |at: usize| -> [u8; 4] { buf[at..at + 4].try_into().expect("4 bytes") };
    let mut at = 0;
    while at + HEADER <= buf.len() {
        let wd = i32::from_ne_bytes(word(at));
        let mask = u32::from_ne_bytes(word(at + 4));
        let len = u32::from_ne_bytes(word(at + 12)) as usize;
        let end = (at + HEADER + len).min(buf.len());
        let raw = &buf[at + HEADER..end];
        let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
        out.push(Change {
            wd,
            mask,
            name: name.to_vec(),
        });
        at = end;
    }
}

/// Turns `-1` into the thread's last OS error.
fn check(res: libc::c_int) -> io::Result<libc::c_int> {
    if res == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(res)
    }
}

/// Calls each watch back for each record (FW2, FW3), with no borrow held:
/// `route` is [`Inotify::route`] on the reactor's instance (`None` once it
/// is gone), `mark(ev, ends)` says whether the watch is still active and,
/// when `ends`, makes it inactive (and reconciles its alive count). Returns
/// the number of callbacks run.
pub fn deliver<E: Event>(
    changes: Vec<Change>,
    mut route: impl FnMut(&Change) -> Option<Option<Route<E>>>,
    mut mark: impl FnMut(&Rc<E>, bool) -> bool,
) -> i32 {
    let mut count = 0;
    for change in changes {
        let Some(route) = route(&change) else {
            return count;
        };
        let Some(route) = route else { continue };
        for ev in route.watchers {
            if !mark(&ev, route.ends) || !ev.deliverable() {
                continue;
            }
            if route.ends {
                ev.callback().notify(&*ev, route.status, 0);
            } else {
                ev.callback().notify_fs(&*ev, route.bits, &change.name);
            }
            count += 1;
        }
    }
    count
}

impl<T> Inotify<T> {
    /// A new inotify instance: non-blocking, close-on-exec.
    pub fn open() -> Result<Inotify<T>> {
        // SAFETY: no pointer arguments.
        let fd = check(unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) })
            .map_err(|e| Error::os("fs_watch_new: inotify_init1", &e))?;
        Ok(Inotify {
            // SAFETY: `fd` was just returned by `inotify_init1` and is ours
            // alone.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            watches: WatchList::default(),
        })
    }

    /// The descriptor, to watch for readability or read through the kernel.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// `inotify_add_watch`: the kernel watch descriptor of `path` (the same
    /// one for every watch of the same inode).
    pub fn add(&self, path: &CStr) -> Result<i32> {
        // SAFETY: the owned descriptor; `path` is NUL-terminated and
        // borrowed for the call.
        let res =
            unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), WATCH_MASK) };
        check(res)
            .map_err(|e| Error::os(format_args!("fs_watch_new: {}", path.to_string_lossy()), &e))
    }

    /// Lists a new watch under `wd` (after [`Inotify::add`], FW1).
    pub fn list(&mut self, wd: i32, watch: Rc<T>) {
        self.watches.add(wd, watch);
    }

    /// Unlists a watch that stopped; the kernel watch goes with the last
    /// one of its descriptor (FW1). `EINVAL` (the kernel already dropped
    /// it: its inode was deleted) is not an error.
    pub fn remove(&mut self, wd: i32, watch: &Rc<T>) {
        if self.watches.remove(wd, watch) {
            // SAFETY: the owned descriptor; no pointer arguments.
            let _ = unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
        }
    }

    /// Reads every queued record (the descriptor was readable) into `out`.
    pub fn read_ready(&self, out: &mut Vec<Change>) {
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: the owned descriptor; `buf` is a local writable for
            // its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            match n {
                n if n > 0 => parse(&buf[..n as usize], out),
                0 => break,
                _ => {
                    let e = io::Error::last_os_error();
                    match e.kind() {
                        io::ErrorKind::Interrupted => continue,
                        io::ErrorKind::WouldBlock => break,
                        _ => {
                            async_abi::plugin_error!("reading the inotify descriptor failed: {e}");
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Whom `change` is for (FW2, FW3); `None` for a stale or uninteresting
    /// record. A watch that ends is unlisted here.
    pub fn route(&mut self, change: &Change) -> Option<Route<T>> {
        if change.mask & libc::IN_Q_OVERFLOW != 0 {
            return Some(Route {
                watchers: self.watches.all(),
                status: 0,
                bits: AA_FS_RENAME | AA_FS_CHANGE,
                ends: false,
            });
        }
        if change.mask & libc::IN_IGNORED != 0 {
            return Some(Route {
                watchers: self.watches.take(change.wd)?,
                status: -libc::ENOENT,
                bits: 0,
                ends: true,
            });
        }
        let bits = change_bits(change.mask);
        if bits == 0 {
            return None;
        }
        Some(Route {
            watchers: self.watches.get(change.wd)?,
            status: 0,
            bits,
            ends: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(wd: i32, mask: u32, name: &[u8], padded: usize) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&wd.to_ne_bytes());
        out.extend_from_slice(&mask.to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes());
        out.extend_from_slice(&(padded as u32).to_ne_bytes());
        let mut name = name.to_vec();
        name.resize(padded, 0);
        out.extend_from_slice(&name);
        out
    }

    #[test]
    fn records_parse_with_their_names_unpadded() {
        let mut buf = record(1, libc::IN_CREATE, b"a.txt", 16);
        buf.extend(record(2, libc::IN_MODIFY, b"", 0));
        let mut out = Vec::new();
        parse(&buf, &mut out);
        assert_eq!(
            out,
            vec![
                Change {
                    wd: 1,
                    mask: libc::IN_CREATE,
                    name: b"a.txt".to_vec()
                },
                Change {
                    wd: 2,
                    mask: libc::IN_MODIFY,
                    name: Vec::new()
                },
            ]
        );
    }

    #[test]
    fn masks_map_to_rename_and_change() {
        assert_eq!(change_bits(libc::IN_MOVED_TO), AA_FS_RENAME);
        assert_eq!(change_bits(libc::IN_CLOSE_WRITE), AA_FS_CHANGE);
        assert_eq!(change_bits(libc::IN_OPEN), 0);
    }
}
