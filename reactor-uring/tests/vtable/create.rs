//! `create`: options, and refusals reported in one line.

use async_abi::*;

use crate::support::*;

#[test]
fn unknown_uring_option_is_refused_and_other_prefixes_are_ignored() {
    let (status, message) = create(&[("uring.foo", "1")]).err().unwrap();
    assert_eq!(status, AA_E_INVALID);
    assert_eq!(
        message,
        "unknown reactor option \"uring.foo\" (known: uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)"
    );
    let lp = crate::uring_loop!(&[("mio.events_capacity", "64"), ("uring.sq_entries", "8")]);
    lp.finish();
}

#[test]
fn unprefixed_option_is_refused_with_how_to_write_it() {
    let (status, message) = create(&[("foo", "1")]).err().unwrap();
    assert_eq!(status, AA_E_INVALID);
    assert_eq!(
        message,
        "unknown reactor option \"foo\": reactor options are written uring.<option> (known: uring.sq_entries, uring.single_issuer, uring.defer_taskrun, uring.multishot_accept, uring.multishot_recv, uring.inline_streams)"
    );
}

#[test]
fn bad_sq_entries_is_refused_with_the_value() {
    let (status, message) = create(&[("uring.sq_entries", "0")]).err().unwrap();
    assert_eq!(status, AA_E_INVALID);
    assert_eq!(
        message,
        "invalid value \"0\" for reactor option \"uring.sq_entries\": expected an integer from 1 to 32768"
    );
}

#[test]
fn the_vtable_advertises_every_kind_native_io_and_inline_streams() {
    let (vt, _) = vtable();
    assert_eq!(
        vt.caps,
        AA_CAP_TIMER
            | AA_CAP_IO_INLINE
            | AA_CAP_POLL
            | AA_CAP_IO
            | AA_CAP_TRIGGER
            | AA_CAP_IO_NATIVE
            | AA_CAP_SIGNAL
            | AA_CAP_PROCESS
            | AA_CAP_FS_WATCH
            | AA_CAP_DNS
            | AA_CAP_IO_DGRAM
            | AA_CAP_IO_FILE
            | AA_CAP_IO_FTRUNCATE
    );
    assert_eq!(vt.hdr.iface_minor, 2);
    assert!(vt.signal_new.is_some() && vt.process_new.is_some());
    assert!(vt.fs_watch_new.is_some() && vt.dns_resolve.is_some());
    assert!(vt.instance_caps.is_some());
}

#[test]
fn an_instance_has_the_plugin_caps_less_only_optional_ones_its_kernel_lacks() {
    let (vt, _) = vtable();
    let lp = crate::uring_loop!();
    // SAFETY: a live reactor of this thread.
    let caps = unsafe { (vt.instance_caps.unwrap())(lp.r) };
    let optional = AA_CAP_IO_DGRAM | AA_CAP_IO_FILE | AA_CAP_IO_FTRUNCATE;
    assert_eq!(caps & !optional, vt.caps & !optional, "{caps:#x}");
    assert_eq!(caps & !vt.caps, 0, "never a bit the plugin lacks");
    lp.finish();
}

/// Installs, on the calling thread only, a seccomp filter that makes
/// `io_uring_setup` fail with `EPERM`, as a container policy would.
fn forbid_io_uring_setup_on_this_thread() {
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let nr = libc::SYS_io_uring_setup as u32;
    let filter = [
        // A = seccomp_data.nr
        libc::sock_filter {
            code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
            jt: 0,
            jf: 0,
            k: 0,
        },
        // if A == nr goto errno else goto allow
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: nr,
        },
        libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
        libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ALLOW,
        },
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: plain prctl calls; `prog` points to a filter that outlives the
    // call (the kernel copies it). Without SECCOMP_FILTER_FLAG_TSYNC the
    // filter applies to this thread only, which the test owns.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const _
            ),
            0,
            "seccomp: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[test]
fn a_refused_io_uring_setup_fails_create_with_eperm_and_one_line() {
    // Only meaningful where io_uring works in the first place.
    let Some(lp) = create_or_skip(&[]) else {
        return;
    };
    lp.finish();
    // A thread of its own: the filter stays with it.
    let result = std::thread::spawn(|| {
        forbid_io_uring_setup_on_this_thread();
        create(&[]).err()
    })
    .join()
    .unwrap();
    let (status, message) = result.expect("create succeeded without io_uring_setup");
    assert_eq!(status, -libc::EPERM);
    assert!(
        message.starts_with(
            "io_uring unavailable: io_uring_setup failed: Operation not permitted (os error 1)"
        ),
        "{message}"
    );
    assert!(!message.contains('\n'));
}
