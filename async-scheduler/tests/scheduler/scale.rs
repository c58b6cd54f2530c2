//! 100,000 coroutines suspended at once, on the default stack size and the
//! default `vm.max_map_count`.

use crate::engine_tests;
use crate::host::{ev, ok, take_events};

const N: usize = 100_000;

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .expect("read /proc/self/maps")
        .lines()
        .count()
}

engine_tests! {
    fn hundred_thousand_coroutines_suspend_at_once(h) {
        let before = mappings();
        let waiters: Vec<_> = (0..N)
            .map(|_| h.spawn(move |_| {
                let status = h.suspend();
                assert_eq!(status, 1);
            }))
            .collect();
        h.spawn(move |_| {
            let stats = h.stats();
            assert_eq!(stats.live_coroutines, N + 1);
            assert_eq!(stats.stacks_in_use, N + 1);
            if stats.guard_mode == "mprotect" {
                eprintln!("skipped the mapping count: guard pages use mprotect on this kernel");
            } else {
                let now = mappings();
                ev(format!("{} slabs, {} more mappings", stats.slabs, now.saturating_sub(before)));
                assert!(now < 10_000, "{now} mappings with {N} live coroutines");
            }
            for c in waiters {
                ok(h.enqueue(c, 1));
            }
        });
        ok(h.run());
        let events = take_events();
        eprintln!("{events:?}");
        let stats = h.stats();
        assert_eq!(stats.finished as usize, N + 1);
        assert_eq!(stats.live_coroutines, 0);
    }
}
