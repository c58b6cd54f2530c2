//! [`watch`]: changes to a file or to a directory's entries, read in a
//! loop, on the reactor's filesystem watch (`AA_CAP_FS_WATCH`).
//!
//! Owns: a [`Watcher`]'s reactor event and the queue its changes wait in
//! until they are read.
//!
//! Invariants:
//! - **WA1** A change is turned into a [`WatchEvent`] when the reactor
//!   delivers it, on the loop thread. The ABI says only "renamed" (an entry
//!   appeared or went) or "changed" (`AA_FS_RENAME`, `AA_FS_CHANGE`), so an
//!   appearance or a disappearance is told apart by looking at the name
//!   then (`lstat`): it exists, `Created`; it does not, `Removed`. A
//!   `Removed` still last in the queue followed by a `Created` of another
//!   name is one `Renamed` (a rename inside the directory reports the old
//!   name going, then the new one appearing, back to back). Two identical
//!   events in a row are one.
//! - **WA2** The queue holds at most [`QUEUE_CAP`] events: a change that
//!   finds it full is dropped and marks the queue as having lost changes;
//!   the reader then gets one [`WatchEvent::Overflow`] where the loss
//!   happened (after the events queued before it), as it does when the
//!   system's own queue overflowed.
//! - **WA3** The watch ends when the reactor says so (status < 0: the
//!   watched path was deleted, `-ENOENT`, or an error): the queued events
//!   are still read, then the iteration ends (after one `Err` for an
//!   error).
//! - **WA4** A reader's wait re-checks the queue after every resume (W2)
//!   and leaves its wake-up lists when it returns (W4); its own
//!   cancellation wins, then a queued event, then the until-trigger (W3).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::panic::Location;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use async_abi::{AaStatus, AA_E_INVALID, AA_E_UNSUPPORTED, AA_FS_CHANGE, AA_FS_RENAME};

use crate::core::awaitable::sealed::Sealed as _;
use crate::core::awaitable::{sealed, Awaitable};
use crate::core::error::Cancelled;
use crate::core::runtime::{self, FsWatchEvent, Runtime};
use crate::core::state::CoroState;
use crate::core::wait::{checkpoint, outside_runtime, suspend_once, with_me};
use crate::core::waiters::{Completion, Notify, NotifySubscription, Subscription};

/// How many events a [`Watcher`] keeps for its reader (WA2).
pub(crate) const QUEUE_CAP: usize = 1024;

/// `ENOENT` on Linux: the watched path was deleted (WA3).
const ENOENT: AaStatus = 2;

/// One change seen by a [`Watcher`]. Names are relative to the watched
/// directory; an empty name is the watched path itself (a watched file,
/// or the directory being removed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchEvent {
    /// An entry appeared (created, or moved in).
    Created(PathBuf),
    /// An entry's contents or metadata changed (consecutive changes of one
    /// entry not yet read are one event).
    Modified(PathBuf),
    /// An entry went (removed, or moved out).
    Removed(PathBuf),
    /// An entry was renamed inside the directory.
    Renamed {
        /// The old name.
        from: PathBuf,
        /// The new name.
        to: PathBuf,
    },
    /// Changes were lost (the watcher's queue of 1,024 events
    /// or the system's overflowed): look at the directory again.
    Overflow,
}

impl WatchEvent {
    /// The entry's name (the new one for a rename); `None` for
    /// [`Overflow`](WatchEvent::Overflow).
    #[must_use]
    pub fn name(&self) -> Option<&Path> {
        match self {
            WatchEvent::Created(n) | WatchEvent::Modified(n) | WatchEvent::Removed(n) => Some(n),
            WatchEvent::Renamed { to, .. } => Some(to),
            WatchEvent::Overflow => None,
        }
    }
}

struct Shared {
    root: PathBuf,
    queue: RefCell<VecDeque<WatchEvent>>,
    /// Changes were dropped since the last event queued (WA2).
    lost: Cell<bool>,
    /// The status the watch ended with (WA3), and whether the reader has
    /// been told.
    end: Cell<Option<AaStatus>>,
    end_told: Cell<bool>,
    /// Wakes the readers of each change.
    arrived: Notify,
    /// The [`Awaitable`]: done at the first change (or the end).
    first: Completion,
}

impl Shared {
    /// WA1: a change from the reactor.
    fn on_change(&self, status: AaStatus, bits: u32, name: &[u8]) {
        if status < 0 {
            if self.end.get().is_none() {
                self.end.set(Some(status));
            }
        } else if bits & (AA_FS_RENAME | AA_FS_CHANGE) == AA_FS_RENAME | AA_FS_CHANGE
            && name.is_empty()
        {
            self.lost.set(true);
        } else if bits & AA_FS_RENAME != 0 {
            let name = PathBuf::from(OsStr::from_bytes(name));
            let full = if name.as_os_str().is_empty() {
                self.root.clone()
            } else {
                self.root.join(&name)
            };
            if full.symlink_metadata().is_ok() {
                self.push(WatchEvent::Created(name));
            } else {
                self.push(WatchEvent::Removed(name));
            }
        } else if bits & AA_FS_CHANGE != 0 {
            self.push(WatchEvent::Modified(PathBuf::from(OsStr::from_bytes(name))));
        } else {
            return;
        }
        if !self.first.is_done() {
            self.first.complete();
        }
        self.arrived.wake_all();
    }

    /// WA1 (pairing, coalescing), WA2 (the bound).
    fn push(&self, ev: WatchEvent) {
        let mut q = self.queue.borrow_mut();
        if !self.lost.get() {
            if let (WatchEvent::Created(to), Some(back)) = (&ev, q.back_mut()) {
                if let WatchEvent::Removed(from) = back {
                    if !from.as_os_str().is_empty() && !to.as_os_str().is_empty() && from != to {
                        let from = std::mem::take(from);
                        *back = WatchEvent::Renamed {
                            from,
                            to: to.clone(),
                        };
                        return;
                    }
                }
            }
            if q.back() == Some(&ev) {
                return;
            }
        }
        if q.len() >= QUEUE_CAP {
            self.lost.set(true);
            return;
        }
        if self.lost.replace(false) {
            q.push_back(WatchEvent::Overflow);
        }
        q.push_back(ev);
    }

    /// Whether the only queued event is a removal that an appearance
    /// could still pair with (WA1).
    fn removal_may_pair(&self) -> bool {
        let q = self.queue.borrow();
        q.len() == 1
            && !self.lost.get()
            && matches!(q.front(), Some(WatchEvent::Removed(n)) if !n.as_os_str().is_empty())
    }

    /// The next thing for a reader, if any: an event, the lost-changes
    /// marker, or the end (`Some(None)`, WA3).
    fn take(&self) -> Option<Option<io::Result<WatchEvent>>> {
        if let Some(ev) = self.queue.borrow_mut().pop_front() {
            return Some(Some(Ok(ev)));
        }
        if self.lost.replace(false) {
            return Some(Some(Ok(WatchEvent::Overflow)));
        }
        let status = self.end.get()?;
        if self.end_told.replace(true) || status == -ENOENT {
            return Some(None);
        }
        Some(Some(Err(io::Error::other(format!(
            "the watch of {} ended: {}",
            self.root.display(),
            runtime::status_text(status)
        )))))
    }
}

/// A watch of a file or of a directory's entries, made by [`watch`]: read
/// its [`WatchEvent`]s in a loop.
///
/// [`next`](Iterator::next) (it is an [`Iterator`], also as `&Watcher`)
/// suspends until a change arrives and returns it;
/// [`next_until`](Watcher::next_until) bounds that wait with any
/// [`Awaitable`] (a [`timeout`](crate::timeout), a signal, a coroutine);
/// [`try_next`](Watcher::try_next) never waits. Changes that arrive while
/// nobody reads wait in a queue of 1,024 events; beyond that they are
/// dropped and the reader gets one [`WatchEvent::Overflow`] in their place
/// (look again). The iteration ends (`None`) when the watched path is
/// deleted, after the events queued before.
///
/// A `Watcher` is also an [`Awaitable`] that completes at the first change
/// after it was made: `handle.join_until(&watcher)` waits for a coroutine
/// until something changes.
///
/// A watcher with a reader waiting keeps the program alive (it waits for
/// something that can happen); dropping it stops the watch.
///
/// # How changes are told apart
///
/// The reactor reports "an entry appeared or went" and "an entry changed"
/// (the ABI's `AA_FS_RENAME`, `AA_FS_CHANGE`); the watcher looks at the
/// name when the report arrives to tell a creation from a removal, and
/// takes a removal immediately followed by an appearance of another name
/// (what a rename inside the directory reports) as one
/// [`Renamed`](WatchEvent::Renamed). So a file created and removed before
/// the loop saw either is reported removed, and a removal immediately
/// followed by an unrelated creation, before the reader took the removal,
/// reads as a rename. A rename out of the directory is a removal, into it
/// a creation.
///
/// # Examples
///
/// ```
/// use async_std_api::fs::{self, WatchEvent};
/// use async_std_api::{run, timeout};
///
/// run(|| -> std::io::Result<()> {
///     let dir = std::env::temp_dir().join(format!("watch-doc-{}", std::process::id()));
///     fs::create_dir_all(&dir)?;
///     let mut watcher = fs::watch(&dir)?;
///     fs::write(dir.join("new.txt"), "hi")?;
///     let first = watcher.next().unwrap()?;
///     assert_eq!(first, WatchEvent::Created("new.txt".into()));
///     // Bounded: nothing else happens within 10 ms after the writes.
///     while let Some(Ok(ev)) = watcher.next_until(&timeout(10)) {
///         assert_eq!(ev, WatchEvent::Modified("new.txt".into()));
///     }
///     fs::remove_dir_all(&dir)
/// })
/// .unwrap()
/// .unwrap();
/// ```
pub struct Watcher {
    shared: Rc<Shared>,
    _event: FsWatchEvent,
}

/// Watches `path`: a file's changes, or a directory's entries (not its
/// subdirectories' entries); see [`Watcher`].
///
/// It does not suspend: the watch is made at once, so a change right after
/// `watch` returns is seen.
///
/// # Errors
///
/// - `NotFound` if `path` does not exist, `PermissionDenied` if it cannot
///   be read, another system error (`ENOSPC`: the system's limit of
///   watches), each naming the path;
/// - `InvalidInput` for an empty path or one with a NUL byte;
/// - `Unsupported` if the reactor cannot watch the filesystem (no
///   `AA_CAP_FS_WATCH`), naming the reactor and the capability.
///
/// # Panics
///
/// Outside a runtime.
///
/// # Examples
///
/// ```
/// use async_std_api::{fs, run};
///
/// run(|| {
///     let err = fs::watch("/no/such/dir").unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
///     assert!(err.to_string().starts_with("cannot watch /no/such/dir: "), "{err}");
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn watch<P: AsRef<Path>>(path: P) -> io::Result<Watcher> {
    let path = path.as_ref();
    let root = if path.as_os_str().is_empty() {
        PathBuf::new()
    } else {
        std::path::absolute(path)?
    };
    let shared = Rc::new(Shared {
        root,
        queue: RefCell::new(VecDeque::new()),
        lost: Cell::new(false),
        end: Cell::new(None),
        end_told: Cell::new(false),
        arrived: Notify::new(),
        first: Completion::new(),
    });
    let made = runtime::with_runtime(|rt| {
        if !rt.reactor.has_fs_watch() {
            return Err(unsupported(path, rt.reactor.label()));
        }
        let on_change = {
            let shared = shared.clone();
            Box::new(move |status, bits, name: &[u8]| shared.on_change(status, bits, name))
        };
        rt.reactor
            .fs_watch(shared.root.as_os_str().as_bytes(), on_change)
            .map_err(|status| watch_error(path, status))
    });
    // Not in a closure: the panic names the caller's line.
    let Some(made) = made else {
        outside_runtime("fs::watch")
    };
    Ok(Watcher {
        shared,
        _event: made?,
    })
}

fn unsupported(path: &Path, reactor: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "cannot watch {}: reactor \"{reactor}\" lacks AA_CAP_FS_WATCH",
            path.display()
        ),
    )
}

fn watch_error(path: &Path, status: AaStatus) -> io::Error {
    let path = path.display();
    match status {
        AA_E_UNSUPPORTED => io::Error::new(
            io::ErrorKind::Unsupported,
            format!("cannot watch {path}: the reactor does not support filesystem watches"),
        ),
        AA_E_INVALID => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot watch {path}: the path is empty or contains a NUL byte"),
        ),
        s if s < 0 && s > -4096 => {
            let os = io::Error::from_raw_os_error(-s);
            io::Error::new(os.kind(), format!("cannot watch {path}: {os}"))
        }
        s => io::Error::other(format!("cannot watch {path}: {}", runtime::status_text(s))),
    }
}

impl Watcher {
    /// The watched path (made absolute).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.shared.root
    }

    /// How many events wait to be read (at most 1,024, WA2); a lost-changes
    /// marker not yet read is not counted.
    #[must_use]
    pub fn queued(&self) -> usize {
        self.shared.queue.borrow().len()
    }

    /// The next event if one is queued; never suspends. `None` also once
    /// the watch ended.
    #[must_use]
    pub fn try_next(&self) -> Option<WatchEvent> {
        match self.shared.take() {
            Some(Some(Ok(ev))) => Some(ev),
            _ => None,
        }
    }

    /// The next event, waiting at most until `until` completes.
    ///
    /// Returns `None` when the watch ended (WA3), as [`next`](Iterator::next).
    ///
    /// # Errors
    ///
    /// Within `Some`: an [`io::Error`] of kind
    /// [`TimedOut`](io::ErrorKind::TimedOut) if `until` completed first
    /// (the watcher stays usable); the calling coroutine's cancellation;
    /// the reactor's error if the watch ended with one.
    ///
    /// # Panics
    ///
    /// Outside a coroutine.
    ///
    /// # Cancellation
    ///
    /// A cancellation point; a cancelled wait takes no event (it stays
    /// queued for the next read).
    #[track_caller]
    pub fn next_until(&self, until: &impl Awaitable) -> Option<io::Result<WatchEvent>> {
        self.wait(Some(until.completion()), Location::caller())
    }

    #[track_caller]
    fn wait(
        &self,
        until: Option<&Completion>,
        at: &'static Location<'static>,
    ) -> Option<io::Result<WatchEvent>> {
        let sh = &self.shared;
        with_me("fs watch", |rt, me| {
            if let Err(c) = checkpoint(me) {
                return Some(Err(c.into()));
            }
            // WA4: both leave their lists when this returns or unwinds.
            let _arrived = NotifySubscription::new(&sh.arrived, me);
            let _until = until.map(|u| Subscription::new(u, me));
            let what = self.describe();
            let mut settled = false;
            loop {
                if !settled && sh.removal_may_pair() {
                    // WA1: the new name of a rename may be one reactor
                    // pass behind the old one.
                    settled = true;
                    if let Err(c) = one_reactor_pass(rt, me, at) {
                        return Some(Err(c.into()));
                    }
                    continue;
                }
                if let Some(next) = sh.take() {
                    return next;
                }
                if until.is_some_and(Completion::is_done) {
                    return Some(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "no change under {} before the until trigger completed",
                            sh.root.display()
                        ),
                    )));
                }
                if let Err(c) = suspend_once(rt, me, what.as_bytes(), at) {
                    return Some(Err(c.into()));
                }
            }
        })
    }
}

/// Suspends `me` until the reactor has run once (a zero-delay timer fires
/// only from the reactor), as `core::budget` gives the loop back (B3).
fn one_reactor_pass(
    rt: &Runtime,
    me: &Rc<CoroState>,
    at: &'static Location<'static>,
) -> Result<(), Cancelled> {
    let fired = Rc::new(Cell::new(false));
    let (f, who) = (fired.clone(), me.clone());
    let Ok(_timer) = rt.reactor.timer(
        0,
        Box::new(move |_status| {
            f.set(true);
            runtime::wake(&who);
        }),
    ) else {
        return Ok(()); // no timer: take the removal as it is
    };
    while !fired.get() {
        suspend_once(rt, me, b"fs watch: one reactor pass", at)?;
    }
    Ok(())
}

impl Iterator for Watcher {
    type Item = io::Result<WatchEvent>;

    /// Waits for the next event (see [`Watcher`]); `None` once the watch
    /// ended. An `Err` is the calling coroutine's cancellation (or the
    /// reactor's error ending the watch); the watcher stays usable after a
    /// cancellation. Panics outside a coroutine.
    #[track_caller]
    fn next(&mut self) -> Option<io::Result<WatchEvent>> {
        self.wait(None, Location::caller())
    }
}

impl Iterator for &Watcher {
    type Item = io::Result<WatchEvent>;

    #[track_caller]
    fn next(&mut self) -> Option<io::Result<WatchEvent>> {
        self.wait(None, Location::caller())
    }
}

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watcher")
            .field("path", &self.shared.root)
            .field("queued", &self.shared.queue.borrow().len())
            .field("ended", &self.shared.end.get().is_some())
            .finish()
    }
}

#[allow(private_interfaces)] // sealed: see `awaitable`
impl sealed::Sealed for Watcher {
    fn completion(&self) -> &Completion {
        &self.shared.first
    }
    fn describe(&self) -> String {
        format!("fs watch {}", self.shared.root.display())
    }
}

impl Awaitable for Watcher {}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Shared {
        Shared {
            root: std::env::temp_dir().join(format!("watch-unit-{}", std::process::id())),
            queue: RefCell::new(VecDeque::new()),
            lost: Cell::new(false),
            end: Cell::new(None),
            end_told: Cell::new(false),
            arrived: Notify::new(),
            first: Completion::new(),
        }
    }

    fn drain(sh: &Shared) -> Vec<WatchEvent> {
        std::iter::from_fn(|| sh.take().flatten().map(Result::unwrap)).collect()
    }

    fn created(n: &str) -> WatchEvent {
        WatchEvent::Created(n.into())
    }

    fn removed(n: &str) -> WatchEvent {
        WatchEvent::Removed(n.into())
    }

    #[test]
    fn a_removal_then_an_appearance_of_another_name_is_a_rename() {
        let sh = shared();
        sh.push(removed("a"));
        sh.push(created("b"));
        // The same name back again is not a rename; nor is the watched
        // path itself.
        sh.push(removed("c"));
        sh.push(created("c"));
        sh.push(removed(""));
        sh.push(created("d"));
        assert_eq!(
            drain(&sh),
            [
                WatchEvent::Renamed {
                    from: "a".into(),
                    to: "b".into()
                },
                removed("c"),
                created("c"),
                removed(""),
                created("d"),
            ]
        );
    }

    #[test]
    fn identical_events_in_a_row_are_one() {
        let sh = shared();
        for _ in 0..3 {
            sh.push(WatchEvent::Modified("m".into()));
        }
        sh.push(created("m"));
        sh.push(WatchEvent::Modified("m".into()));
        assert_eq!(
            drain(&sh),
            [
                WatchEvent::Modified("m".into()),
                created("m"),
                WatchEvent::Modified("m".into())
            ]
        );
    }

    #[test]
    fn a_full_queue_drops_changes_and_marks_where() {
        let sh = shared();
        for i in 0..QUEUE_CAP + 10 {
            sh.push(created(&format!("f{i}")));
        }
        assert_eq!(sh.queue.borrow().len(), QUEUE_CAP);
        // Room again: the marker goes before the next event.
        assert_eq!(sh.take().flatten().unwrap().unwrap(), created("f0"));
        sh.push(created("late"));
        let rest = drain(&sh);
        assert_eq!(rest.len(), QUEUE_CAP + 1);
        assert_eq!(rest[QUEUE_CAP - 2], created(&format!("f{}", QUEUE_CAP - 1)));
        assert_eq!(rest[QUEUE_CAP - 1], WatchEvent::Overflow);
        assert_eq!(rest[QUEUE_CAP], created("late"));
        // A loss with nothing after it is reported when the queue empties.
        sh.lost.set(true);
        assert_eq!(drain(&sh), [WatchEvent::Overflow]);
    }

    #[test]
    fn the_end_is_none_for_a_deletion_and_one_error_otherwise() {
        let sh = shared();
        sh.push(created("x"));
        sh.end.set(Some(-ENOENT));
        assert_eq!(drain(&sh), [created("x")]);
        assert!(matches!(sh.take(), Some(None)));
        let sh = shared();
        sh.end.set(Some(async_abi::AA_E_CLOSED));
        assert!(matches!(sh.take(), Some(Some(Err(_)))));
        assert!(matches!(sh.take(), Some(None)));
    }

    #[test]
    fn errors_name_the_path_and_keep_the_kind() {
        let p = Path::new("/w");
        let e = unsupported(p, "mine");
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert_eq!(
            e.to_string(),
            "cannot watch /w: reactor \"mine\" lacks AA_CAP_FS_WATCH"
        );
        let e = watch_error(p, -13);
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(
            e.to_string(),
            "cannot watch /w: Permission denied (os error 13)"
        );
        let e = watch_error(p, AA_E_INVALID);
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
