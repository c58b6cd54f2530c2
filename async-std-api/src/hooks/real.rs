//! The C library's own functions, which the hooks call when they pass a
//! call through and to do the work once a wait is over.
//!
//! Each is looked up once with `dlsym(RTLD_NEXT, name)`: the next
//! definition after the one being called, which for hooks defined in the
//! executable is the C library's (libco, libgo and coost do the same). The
//! address is kept in an atomic and read with one relaxed load per call.
//! Lookups may run before `main` (std's start-up polls the standard
//! descriptors), on any thread, concurrently: two threads that both look a
//! name up store the same address.
//!
//! # Safety
//!
//! Every function here is `unsafe` with the contract of the C function it
//! forwards to: the caller passes what the C library expects. The
//! transmutes turn a `dlsym` result into the function type the C library
//! declares for that name (the types are spelled out at each entry).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use libc::{
    addrinfo, epoll_event, fd_set, hostent, iovec, msghdr, nfds_t, off64_t, off_t, pid_t, pollfd,
    rusage, sigset_t, size_t, sockaddr, socklen_t, ssize_t, timespec, timeval,
};

/// The address of `name` in the next object after this one, resolved on
/// first use. A C library without it ends the process with one line: the
/// hooks cannot pass the call on, and carrying on would call address 0.
#[cold]
#[inline(never)]
fn resolve(slot: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    // SAFETY: `name` is a NUL-terminated string; RTLD_NEXT is valid for a
    // call from code in a loaded object.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if p.is_null() {
        let msg = format!(
            "async-std-api hooks: the C library has no {}: cannot pass the call on; aborting\n",
            name.to_string_lossy()
        );
        // SAFETY: writing a buffer we own to standard error.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        std::process::abort();
    }
    slot.store(p, Ordering::Relaxed);
    p
}

/// Declares `pub(super) unsafe fn $name(args) -> ret` calling the C
/// library's `$name` through a pointer resolved once. A variadic C function
/// is declared with its fixed parameters, then `;` and the variadic
/// arguments the hooks pass (as the C type the call site would).
macro_rules! real {
    ($( $name:ident : fn($($arg:ident: $ty:ty),* $(; $($va:ident: $vt:ty),*)?) -> $ret:ty; )*) => {$(
        #[doc = concat!("The C library's `", stringify!($name), "`.")]
        ///
        /// # Safety
        ///
        /// The C function's contract.
        #[inline]
        pub(super) unsafe fn $name($($arg: $ty,)* $($($va: $vt),*)?) -> $ret {
            static SLOT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
            let mut p = SLOT.load(Ordering::Relaxed);
            if p.is_null() {
                p = resolve(&SLOT, real!(@cstr $name));
            }
            real!(@call p, ($($arg: $ty),*) ($($($va: $vt),*)?) -> $ret)
        }
    )*};
    (@call $p:ident, ($($arg:ident: $ty:ty),*) () -> $ret:ty) => {{
        // SAFETY: `p` is the C library's function of this name, whose C
        // type is the one spelled here.
        let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { std::mem::transmute($p) };
        // SAFETY: the caller upholds the C function's contract.
        unsafe { f($($arg),*) }
    }};
    (@call $p:ident, ($($arg:ident: $ty:ty),*) ($($va:ident: $vt:ty),+) -> $ret:ty) => {{
        // SAFETY: `p` is the C library's variadic function of this name,
        // whose fixed parameters are the ones spelled here.
        let f: unsafe extern "C" fn($($ty),*, ...) -> $ret = unsafe { std::mem::transmute($p) };
        // SAFETY: the caller upholds the C function's contract; the
        // variadic arguments go as the C call site would pass them.
        unsafe { f($($arg),*, $($va),+) }
    }};
    (@cstr $name:ident) => {
        match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => unreachable!(),
        }
    };
}

real! {
    read: fn(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t;
    readv: fn(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t;
    pread64: fn(fd: c_int, buf: *mut c_void, n: size_t, off: off64_t) -> ssize_t;
    preadv64: fn(fd: c_int, iov: *const iovec, n: c_int, off: off64_t) -> ssize_t;
    write: fn(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t;
    writev: fn(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t;
    pwrite64: fn(fd: c_int, buf: *const c_void, n: size_t, off: off64_t) -> ssize_t;
    pwritev64: fn(fd: c_int, iov: *const iovec, n: c_int, off: off64_t) -> ssize_t;
    recv: fn(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t;
    recvfrom: fn(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t;
    recvmsg: fn(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t;
    send: fn(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t;
    sendto: fn(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t;
    sendmsg: fn(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t;
    accept: fn(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    accept4: fn(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
    connect: fn(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    socket: fn(domain: c_int, ty: c_int, protocol: c_int) -> c_int;
    socketpair: fn(domain: c_int, ty: c_int, protocol: c_int, sv: *mut c_int) -> c_int;
    close: fn(fd: c_int) -> c_int;
    pipe: fn(fds: *mut c_int) -> c_int;
    pipe2: fn(fds: *mut c_int, flags: c_int) -> c_int;
    eventfd: fn(initval: c_uint, flags: c_int) -> c_int;
    dup: fn(fd: c_int) -> c_int;
    dup2: fn(fd: c_int, to: c_int) -> c_int;
    dup3: fn(fd: c_int, to: c_int, flags: c_int) -> c_int;
    poll: fn(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int;
    ppoll: fn(fds: *mut pollfd, n: nfds_t, timeout: *const timespec, mask: *const sigset_t) -> c_int;
    select: fn(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, timeout: *mut timeval) -> c_int;
    pselect: fn(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, timeout: *const timespec, mask: *const sigset_t) -> c_int;
    epoll_wait: fn(epfd: c_int, events: *mut epoll_event, max: c_int, timeout: c_int) -> c_int;
    epoll_pwait: fn(epfd: c_int, events: *mut epoll_event, max: c_int, timeout: c_int, mask: *const sigset_t) -> c_int;
    fcntl: fn(fd: c_int, cmd: c_int; arg: usize) -> c_int;
    ioctl: fn(fd: c_int, request: libc::c_ulong; arg: usize) -> c_int;
    setsockopt: fn(fd: c_int, level: c_int, name: c_int, value: *const c_void, len: socklen_t) -> c_int;
    sleep: fn(secs: c_uint) -> c_uint;
    usleep: fn(us: libc::useconds_t) -> c_int;
    nanosleep: fn(req: *const timespec, rem: *mut timespec) -> c_int;
    clock_nanosleep: fn(clock: libc::clockid_t, flags: c_int, req: *const timespec, rem: *mut timespec) -> c_int;
    getaddrinfo: fn(node: *const c_char, service: *const c_char, hints: *const addrinfo, res: *mut *mut addrinfo) -> c_int;
    freeaddrinfo: fn(res: *mut addrinfo) -> ();
    gethostbyname: fn(name: *const c_char) -> *mut hostent;
    gethostbyname2: fn(name: *const c_char, af: c_int) -> *mut hostent;
    getpwnam: fn(name: *const c_char) -> *mut libc::passwd;
    getpwuid: fn(uid: libc::uid_t) -> *mut libc::passwd;
    getpwnam_r: fn(name: *const c_char, pwd: *mut libc::passwd, buf: *mut c_char, len: size_t, result: *mut *mut libc::passwd) -> c_int;
    getpwuid_r: fn(uid: libc::uid_t, pwd: *mut libc::passwd, buf: *mut c_char, len: size_t, result: *mut *mut libc::passwd) -> c_int;
    getgrnam: fn(name: *const c_char) -> *mut libc::group;
    getgrgid: fn(gid: libc::gid_t) -> *mut libc::group;
    getnameinfo: fn(addr: *const sockaddr, addrlen: socklen_t, host: *mut c_char, hostlen: socklen_t, serv: *mut c_char, servlen: socklen_t, flags: c_int) -> c_int;
    open64: fn(path: *const c_char, flags: c_int; mode: c_uint) -> c_int;
    openat64: fn(dirfd: c_int, path: *const c_char, flags: c_int; mode: c_uint) -> c_int;
    fsync: fn(fd: c_int) -> c_int;
    fdatasync: fn(fd: c_int) -> c_int;
    waitpid: fn(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t;
    wait4: fn(pid: pid_t, status: *mut c_int, options: c_int, usage: *mut rusage) -> pid_t;
    waitid: fn(idtype: libc::idtype_t, id: libc::id_t, info: *mut libc::siginfo_t, options: c_int) -> c_int;
}

/// `off_t` and `off64_t` are one type on the 64-bit targets the hooks
/// build for; `pread`/`pwrite` forward to the 64-bit entry points.
const _: () = assert!(std::mem::size_of::<off_t>() == std::mem::size_of::<off64_t>());
