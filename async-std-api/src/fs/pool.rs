//! The one way `fs` runs blocking work: on the runtime's blocking pool
//! while the calling coroutine waits (`core::offload`, rules OF1-OF3).

use std::io;
use std::panic::resume_unwind;

use crate::core::offload::offload;

/// Runs `f` on the blocking pool and returns its result. A panic of `f`
/// is resumed on the coroutine (it is a bug in `f`, as it would be on the
/// caller's thread with std); a cancellation or a pool that cannot take
/// the work is an `io::Error` (OF2: the work is then detached).
#[track_caller]
pub(super) fn blocking<T, F>(what: &'static str, f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    match offload(what, f) {
        Ok(Ok(r)) => r,
        Ok(Err(panic)) => resume_unwind(panic),
        Err(e) => Err(e.into()),
    }
}
