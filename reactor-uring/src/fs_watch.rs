//! Filesystem watches (`fs_watch_new`), on one inotify instance per
//! reactor.
//!
//! # What this module owns
//!
//! [`Inotify`], made at the first `fs_watch_new` and kept until `destroy`:
//! the inotify descriptor (non-blocking), the ring `READ` that is always
//! armed on it (ops/inotify.rs: the op owns its buffer), and, per kernel
//! watch descriptor, the active watches of that inode in creation order.
//! Two watches of one path share the kernel's watch: `inotify_add_watch`
//! answers with the same descriptor.
//!
//! # Invariants
//!
//! - **FW1** A watch is in `by_wd[wd]` exactly while it is active; the
//!   kernel watch is removed (`inotify_rm_watch`) when the last watch of
//!   its descriptor stops, and records for a descriptor with no entry are
//!   stale and dropped.
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
//! - **FW4** Each completed `READ` is parsed, re-armed, then called back:
//!   the re-armed read reaches the kernel at the next `io_uring_enter`, so
//!   changes that callbacks make are reported by a later iteration (reactor
//!   invariant R6).
//!
//! # Access
//!
//! Loop thread only; no borrow is held across a callback (R1).
//!
//! # Drop order
//!
//! `destroy` cancels the `READ` and waits for its final completion (the
//! kernel may write its buffer until then), then closes the descriptor,
//! which drops every kernel watch.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use async_abi::{AA_EVENT_FS_WATCH, AA_EVF_HIDDEN, AA_FS_CHANGE, AA_FS_RENAME};

use crate::error::{Error, Result};
use crate::event::{Event, FsWatchState, State};
use crate::ffi::HostCallback;
use crate::ops::{sys, OpKey};
use crate::reactor::{check_flags, Reactor};

/// The inotify events every watch asks for (FW2).
const WATCH_MASK: u32 = RENAME_MASK | CHANGE_MASK;
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
pub(crate) struct Inotify {
    pub(crate) fd: OwnedFd,
    /// The `READ` in flight, until `destroy` drains it (or it failed).
    pub(crate) op: Option<OpKey>,
    by_wd: HashMap<i32, Vec<Rc<Event>>>,
}

/// One inotify record, copied out of the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    wd: i32,
    mask: u32,
    name: Vec<u8>,
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
pub(crate) fn parse(buf: &[u8], out: &mut Vec<Change>) {
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

impl Reactor {
    /// `fs_watch_new`.
    pub(crate) fn fs_watch_new(
        &self,
        path: &CStr,
        flags: u32,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        check_flags("fs_watch_new", flags, AA_EVF_HIDDEN)?;
        self.open_inotify()?;
        let wd = {
            let inotify = self.inotify.borrow();
            let inotify = inotify.as_ref().expect("opened above");
            sys::inotify_add(&inotify.fd, path, WATCH_MASK).map_err(|e| {
                Error::os(format_args!("fs_watch_new: {}", path.to_string_lossy()), &e)
            })?
        };
        let state = State::FsWatch(FsWatchState { wd, active: true });
        let ev = self.new_event(AA_EVENT_FS_WATCH, flags, callback, None, state);
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.by_wd.entry(wd).or_default().push(Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(ev)
    }

    /// Makes the reactor's [`Inotify`] and arms its `READ`, if it has none
    /// yet.
    fn open_inotify(&self) -> Result<()> {
        if self.inotify.borrow().is_some() {
            return Ok(());
        }
        let fd = sys::inotify_init().map_err(|e| Error::os("fs_watch_new: inotify_init1", &e))?;
        let raw = fd.as_raw_fd();
        *self.inotify.borrow_mut() = Some(Inotify {
            fd,
            op: None,
            by_wd: HashMap::new(),
        });
        let key = self.arm_inotify(raw);
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            inotify.op = Some(key);
        }
        Ok(())
    }

    /// Stops a watch (cancel, close, dispose); returns whether it was
    /// active (FW1).
    pub(crate) fn fs_watch_stop(&self, ev: &Rc<Event>) -> bool {
        let wd = match &mut *ev.state.borrow_mut() {
            State::FsWatch(w) if w.active => {
                w.active = false;
                w.wd
            }
            _ => return false,
        };
        if let Some(inotify) = self.inotify.borrow_mut().as_mut() {
            if let Some(list) = inotify.by_wd.get_mut(&wd) {
                list.retain(|w| !Rc::ptr_eq(w, ev));
                if list.is_empty() {
                    inotify.by_wd.remove(&wd);
                    sys::inotify_rm(&inotify.fd, wd);
                }
            }
        }
        self.touch(ev);
        true
    }

    /// Calls back for each record (FW2, FW3).
    pub(crate) fn deliver_changes(&self, changes: Vec<Change>) -> i32 {
        let mut count = 0;
        for change in changes {
            let (watches, status, bits, ends) = {
                let mut inotify = self.inotify.borrow_mut();
                let Some(inotify) = inotify.as_mut() else {
                    return count;
                };
                if change.mask & libc::IN_Q_OVERFLOW != 0 {
                    let all: Vec<Rc<Event>> = inotify.by_wd.values().flatten().cloned().collect();
                    (all, 0, AA_FS_RENAME | AA_FS_CHANGE, false)
                } else if change.mask & libc::IN_IGNORED != 0 {
                    match inotify.by_wd.remove(&change.wd) {
                        Some(list) => (list, -libc::ENOENT, 0, true),
                        None => continue,
                    }
                } else {
                    let bits = change_bits(change.mask);
                    match inotify.by_wd.get(&change.wd) {
                        Some(list) if bits != 0 => (list.clone(), 0, bits, false),
                        _ => continue,
                    }
                }
            };
            for ev in watches {
                let active = match &mut *ev.state.borrow_mut() {
                    State::FsWatch(w) if w.active => {
                        if ends {
                            w.active = false;
                        }
                        true
                    }
                    _ => false,
                };
                if ends {
                    self.touch(&ev);
                }
                if !active || !ev.deliverable() {
                    continue;
                }
                if ends {
                    ev.callback.notify(&*ev, status, 0);
                } else {
                    ev.callback.notify_fs(&*ev, bits, &change.name);
                }
                count += 1;
            }
        }
        count
    }

    /// `destroy`, first step: takes the `READ` to drain (with the waker's,
    /// reactor.rs) before the descriptor may close.
    pub(crate) fn take_inotify_op(&self) -> Option<OpKey> {
        self.inotify.borrow_mut().as_mut().and_then(|i| i.op.take())
    }

    /// `destroy`, last step: closes the inotify descriptor.
    pub(crate) fn close_inotify(&self) {
        self.inotify.borrow_mut().take();
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
