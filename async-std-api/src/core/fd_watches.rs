//! Readiness watches kept per descriptor number, for code that waits on
//! descriptors it does not own (the C library hooks): the first wait on a
//! number makes a watch, later waits reuse it, so a stream read that waits
//! costs a suspension, not a registration and a deregistration.
//!
//! Rules:
//! - **FW1** A watch is made on a duplicate of the descriptor that the
//!   reactor owns (RD5): the owner may close its number at any time.
//! - **FW2** A watch is valid under the generation the caller gives for the
//!   number (the hooks advance it on every close, `dup2` and creation); a
//!   lookup under another generation disposes the old watch and makes a new
//!   one. The owner of a descriptor closing it on the loop thread removes
//!   the watch first ([`FdWatches::remove`]), so its duplicate is closed
//!   before the descriptor is: the close is the last, as the owner expects
//!   (a peer sees the end of the stream).
//! - **FW3** A close the loop thread cannot see (another thread's) is
//!   counted by the caller; when the count moved, the next lookup first
//!   drops every watch whose number's generation moved.
//! - **FW4** Disposal happens outside the map's borrow: disposing closes
//!   the duplicate, which may come back here (a hooked `close`), and finds
//!   the map free.
//! - **FW5** Teardown drops every watch before the reactor goes.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::rc::Rc;

use super::readiness::Readiness;
use super::runtime::io::{FdWait, WaitText};
use super::runtime::Runtime;

/// A number's watch and the generation it is valid under (FW2), with the
/// descriptions of its last read and write waits (the call's name and the
/// text made of it), so a transfer that waits copies its text instead of
/// writing the digits again.
type Slot = Option<(u32, Rc<Readiness>, Texts)>;

/// The last read wait's description, then the last write wait's.
type Texts = [Option<(&'static str, WaitText)>; 2];

/// The watches of one runtime (module doc).
#[derive(Default)]
#[cfg_attr(not(feature = "hooks"), allow(dead_code))]
pub(crate) struct FdWatches {
    /// Indexed by descriptor number (small and dense: no hashing).
    map: RefCell<Vec<Slot>>,
    /// FW3: the remote-close count at the last sweep.
    swept_at: Cell<u64>,
}

#[cfg_attr(not(feature = "hooks"), allow(dead_code))]
impl FdWatches {
    /// The watch for `fd` under generation `gen` (FW1, FW2), sweeping
    /// first when `remote_closes` moved (FW3; `current` gives a number's
    /// generation now).
    ///
    /// # Errors
    ///
    /// The reactor's or the system's (no poll watches, `EMFILE` for the
    /// duplicate).
    pub(crate) fn watch(
        &self,
        rt: &Runtime,
        borrowed: BorrowedFd<'_>,
        gen: u32,
        remote_closes: u64,
        current: impl Fn(RawFd) -> u32,
    ) -> io::Result<Rc<Readiness>> {
        let fd = borrowed.as_raw_fd();
        let Ok(at) = usize::try_from(fd) else {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        };
        let mut gone: Vec<Rc<Readiness>> = Vec::new();
        if self.swept_at.replace(remote_closes) != remote_closes {
            if let Ok(mut map) = self.map.try_borrow_mut() {
                for (n, slot) in map.iter_mut().enumerate() {
                    if let Some((g, _, _)) = slot {
                        if current(n as RawFd) != *g {
                            gone.extend(slot.take().map(|(_, r, _)| r));
                        }
                    }
                }
            }
        }
        let found = self.map.borrow().get(at).cloned().flatten();
        let result = match found {
            Some((g, r, _)) if g == gen => Ok(r),
            stale => {
                if let Some((_, old, _)) = stale {
                    gone.push(old);
                    if let Some(slot) = self.map.borrow_mut().get_mut(at) {
                        *slot = None;
                    }
                }
                let made = Readiness::new_dup(rt, borrowed).map(Rc::new);
                if let Ok(r) = &made {
                    let mut map = self.map.borrow_mut();
                    if map.len() <= at {
                        map.resize_with(at + 1, || None);
                    }
                    map[at] = Some((gen, r.clone(), [None, None]));
                }
                made
            }
        };
        drop(gone); // FW4: after the borrows
        result
    }

    /// The watch made for `fd` under generation `gen`, if there is one and
    /// no close elsewhere waits for a sweep (FW3: `remote_closes` is the
    /// count now); makes no watch, sweeps nothing.
    #[inline]
    pub(crate) fn cached(&self, fd: RawFd, gen: u32, remote_closes: u64) -> Option<Rc<Readiness>> {
        if self.swept_at.get() != remote_closes {
            return None;
        }
        let map = self.map.try_borrow().ok()?;
        match map.get(usize::try_from(fd).ok()?)? {
            Some((g, r, _)) if *g == gen => Some(r.clone()),
            _ => None,
        }
    }

    /// The description of a wait by `call` on `fd`'s watch in direction
    /// `write`: made once per call name and direction, copied after (asked
    /// only by a transfer that waits).
    pub(crate) fn wait_text(&self, fd: RawFd, write: bool, call: &'static str) -> WaitText {
        let made = || WaitText::new(FdWait(call, fd));
        let Ok(mut map) = self.map.try_borrow_mut() else {
            return made();
        };
        let Some(Some((_, _, texts))) = usize::try_from(fd).ok().and_then(|at| map.get_mut(at))
        else {
            return made();
        };
        match &mut texts[usize::from(write)] {
            // The same call site passes the same string: its address is
            // enough (another site's copy of the name only makes the text
            // again).
            Some((c, t)) if std::ptr::eq(*c, call) => *t,
            slot => {
                let t = made();
                *slot = Some((call, t));
                t
            }
        }
    }

    /// Drops the watch for `fd` (FW2): `Some(true)` if there was one,
    /// `Some(false)` if not, `None` if the map was busy (a re-entrant call:
    /// the watch goes at the next lookup).
    pub(crate) fn remove(&self, fd: RawFd) -> Option<bool> {
        let mut map = self.map.try_borrow_mut().ok()?;
        let gone = usize::try_from(fd)
            .ok()
            .and_then(|at| map.get_mut(at))
            .and_then(Option::take);
        drop(map);
        let found = gone.is_some();
        drop(gone); // FW4
        Some(found)
    }

    /// FW5: drops every watch.
    pub(crate) fn clear(&self) {
        let all: Vec<_> = self.map.borrow_mut().drain(..).collect();
        drop(all);
    }
}
