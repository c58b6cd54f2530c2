//! Pinning a loop thread to a core (`Builder::pin`): one system call, the
//! only unsafe code of `per_core`.
#![allow(unsafe_code)]

/// Pins the calling thread to core `i` (modulo the cores this process may
/// use); a refusal is logged and the thread stays where it is.
pub(super) fn to_core(i: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let core = i % cores;
    // SAFETY: `cpu_set_t` is a plain bit array for which all zeroes is the
    // empty set (what CPU_ZERO writes).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`: `core` is below the
    // number of cores, which the kernel caps below the set's 1024 bits.
    unsafe { libc::CPU_SET(core, &mut set) };
    // SAFETY: `set` is a live, initialised `cpu_set_t` of the size passed;
    // the kernel only reads it, and pid 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        tracing::warn!(
            target: "async_std_api::runtime",
            "run_per_core: cannot pin loop {i} to core {core}: {}",
            std::io::Error::last_os_error()
        );
    }
}
