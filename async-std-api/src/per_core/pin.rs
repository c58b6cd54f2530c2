//! Pinning a loop thread to a core (`Builder::pin`): two system calls, the
//! only unsafe code of `per_core`.
#![allow(unsafe_code)]

/// Pins the calling thread to the `i`-th core this process may run on
/// (modulo their number); a refusal is logged and the thread stays where
/// it is.
pub(super) fn to_core(i: usize) {
    const SIZE: usize = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `cpu_set_t` is a plain bit array for which all zeroes is the
    // empty set (what CPU_ZERO writes).
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `allowed` is a live `cpu_set_t` of SIZE bytes the kernel
    // writes; pid 0 is the calling thread.
    if unsafe { libc::sched_getaffinity(0, SIZE, &mut allowed) } != 0 {
        return refused(i, None);
    }
    let mut cpus = Vec::new();
    for c in 0..libc::CPU_SETSIZE as usize {
        // SAFETY: CPU_ISSET reads one bit inside `allowed`: every index
        // below CPU_SETSIZE is inside the set.
        if unsafe { libc::CPU_ISSET(c, &allowed) } {
            cpus.push(c);
        }
    }
    let Some(&core) = cpus.get(i % cpus.len().max(1)) else {
        return refused(i, None);
    };
    // SAFETY: as above, all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`: `core` came from the
    // loop above, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(core, &mut set) };
    // SAFETY: `set` is a live, initialised `cpu_set_t` of SIZE bytes; the
    // kernel only reads it, and pid 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, SIZE, &set) } != 0 {
        refused(i, Some(core));
    }
}

fn refused(i: usize, core: Option<usize>) {
    let core = core.map_or_else(|| "a core".to_owned(), |c| format!("core {c}"));
    tracing::warn!(
        target: "async_std_api::runtime",
        "run_per_core: cannot pin loop {i} to {core}: {}",
        std::io::Error::last_os_error()
    );
}
