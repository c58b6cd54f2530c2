//! The descriptor table is grown before the first loop runs (runtime R6):
//! a loop opening hundreds of sockets never waits in the kernel for the
//! table to double.

use async_std_api::{net, spawn, Builder};

/// The kernel's current table size for this process (`FDSize` in
/// `/proc/self/status`).
fn table_slots() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status")
        .lines()
        .find_map(|l| l.strip_prefix("FDSize:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("an FDSize line")
}

/// The soft limit on open descriptors.
fn soft_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid place for the kernel to write.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_cur
}

#[test]
fn the_descriptor_table_has_room_for_4096_before_main_runs_and_300_sockets_do_not_grow_it() {
    let (before, after) = Builder::new()
        .run(|| {
            let before = table_slots();
            let listener = net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener.local_addr().expect("addr");
            let clients: Vec<_> = (0..150)
                .map(|_| spawn(move || std::net::TcpStream::connect(addr).expect("connect")))
                .collect();
            let accepted: Vec<_> = (0..150)
                .map(|_| listener.accept().expect("accept"))
                .collect();
            let clients: Vec<_> = clients
                .into_iter()
                .map(|c| c.join().expect("client"))
                .collect();
            let after = table_slots();
            drop((clients, accepted));
            (before, after)
        })
        .expect("runtime");
    let want = 4096.min(soft_limit());
    assert!(
        before >= want,
        "the table had {before} slots at start, want {want}"
    );
    assert_eq!(after, before, "300 sockets grew the table");
}
