//! The stack allocator: slabs of guarded stacks, one free list per size
//! class.
//!
//! # What it owns
//!
//! Every slab mapping of one scheduler, grouped by usable stack size (a
//! *size class*; programs normally use one or two). A slab holds up to
//! [`STACKS_PER_SLAB`] stacks and is carved lazily: a stack's guard page is
//! installed the first time the slot is handed out (with those of the next
//! [`GUARD_AHEAD`] slots once the guard mode is known, A-I1), so a program
//! with one coroutine maps one slab and makes two system calls.
//!
//! # Invariants
//!
//! - **A-I1** Every slot index below a slab's `guarded` has its guard page
//!   installed (stack S-I2), and `guarded >= carved`; slots at or above
//!   `carved` were never handed out. Guards are installed [`GUARD_AHEAD`]
//!   slots at a time (one system call, guard G-I2) when `carved` reaches
//!   `guarded`: a guard on a slot not yet used costs a page-table entry and
//!   protects nothing yet, which is harmless.
//! - **A-I2** A slot is either handed out (counted in `in_use`) or on its
//!   class's free list, never both; free slots keep their guard page.
//! - **A-I3** A released slot's usable pages are given back to the kernel
//!   ([`GIVE_BACK`]) before it goes on the free list, so a burst of
//!   coroutines does not pin its memory after the idle fibers beyond
//!   `stack_pool` are evicted. Warm stacks are kept by the fiber pool
//!   (fiber.rs F-I4), not here: whatever reaches this allocator is cold.
//!   The exception is [`Stacks::abandon`], used only on the way to `munmap`.
//! - **A-I4** Slabs are never unmapped before the allocator is dropped (stack
//!   S-I5): the count of mappings is bounded by the peak number of stacks in
//!   use, divided by [`STACKS_PER_SLAB`].
//! - **A-I5** [`Stacks::release_batch`] gives a batch back with one
//!   `madvise` per run of slots adjacent in one slab: the range of a run
//!   spans the guard pages between its slots. That is sound because neither
//!   advice removes a guard: `MADV_GUARD_INSTALL` markers survive
//!   `MADV_DONTNEED` (the kernel documents it, and the unit test
//!   `a_batch_is_given_back_in_one_call_and_keeps_its_guards` touches a guard
//!   inside a given-back run in a child process and sees the fault), and a
//!   `PROT_NONE` page has nothing to discard and keeps its protection. A
//!   run's first guard page (the lowest) is never in the range.
//!
//! # Who touches what
//!
//! The loop thread only, through `&mut self` for one call at a time.
//!
//! # Drop order
//!
//! The scheduler drops its fibers (returning their slots) before this;
//! dropping unmaps every slab whatever its slots' state.
//!
//! # Safety
//!
//! The `mmap`/`madvise`/`munmap` calls below only touch mappings this
//! allocator created, at offsets computed from the slab's own address and
//! length.

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

use std::io;

use super::{guard, page_size, StackSlot};

/// Guards installed together when a slab's next slot is first carved
/// (A-I1): a million coroutines make 62,500 `process_madvise` calls, not
/// a million `madvise`s (measured on this project's development VM: 0.8 s
/// against 1.3 s for a million guards). The process's very first guard is
/// one `madvise`, which probes the mode (guard G-I1).
const GUARD_AHEAD: usize = 16;

/// Stacks per slab, at most (fewer for very large stacks, see
/// [`MAX_SLAB_BYTES`]).
pub(crate) const STACKS_PER_SLAB: usize = 64;

/// The largest slab mapping; a class with bigger stacks puts fewer in a slab.
const MAX_SLAB_BYTES: usize = 256 << 20;

/// The most idle fibers one eviction gives back together (fiber.rs F-I4):
/// bounds the batch, which lives in an array on the parking fiber's stack.
pub(crate) const MAX_EVICT_BATCH: usize = 32;

/// How released stacks are given back (A-I3): `MADV_DONTNEED`, not
/// `MADV_FREE`. Measured on the development VM (README, "Stack pool"):
/// `MADV_FREE` made the give-back call cheaper and a reuse fault-free, but
/// the pages stay in the process's RSS until the kernel runs short of
/// memory, which is what the bound is there to prevent; with `DONTNEED`
/// the RSS drops at once and the difference in time was within noise once
/// give-backs come in batches.
pub(crate) const GIVE_BACK: libc::c_int = libc::MADV_DONTNEED;

struct Slab {
    addr: usize,
    len: usize,
    /// Slots handed out at least once (A-I1).
    carved: usize,
    /// Slots whose guard page is installed, at least `carved` (A-I1).
    guarded: usize,
}

struct SizeClass {
    usable: usize,
    stride: usize,
    per_slab: usize,
    slabs: Vec<Slab>,
    /// Released slots, as `(slab, index)` (A-I2); reused last-in first-out.
    free: Vec<(u32, u32)>,
    in_use: usize,
}

/// Counters for tests and the benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StackStats {
    /// Slab mappings alive.
    pub(crate) slabs: usize,
    /// Stacks ever carved (guard installed).
    pub(crate) carved: usize,
    /// Stacks handed out now.
    pub(crate) in_use: usize,
    /// Stacks given back to the kernel (A-I3).
    pub(crate) given_back: u64,
    /// `madvise` calls that gave them back (A-I5: one per run of adjacent
    /// slots in a batch).
    pub(crate) give_back_calls: u64,
}

/// The stack allocator of one scheduler. See the module doc.
pub(crate) struct Stacks {
    page: usize,
    classes: Vec<SizeClass>,
    given_back: u64,
    give_back_calls: u64,
}

impl std::fmt::Debug for Stacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stacks")
            .field("stats", &self.stats())
            .finish()
    }
}

impl Stacks {
    /// An allocator with nothing mapped yet.
    pub(crate) fn new() -> Stacks {
        Stacks {
            page: page_size(),
            classes: Vec::new(),
            given_back: 0,
            give_back_calls: 0,
        }
    }

    /// Hands out a stack with `usable` bytes (page-aligned, from
    /// `options::stack_size`).
    ///
    /// # Errors
    ///
    /// The OS error of `mmap` or of installing the guard page.
    pub(crate) fn alloc(&mut self, usable: usize) -> io::Result<StackSlot> {
        let page = self.page;
        let class_idx = match self.classes.iter().position(|c| c.usable == usable) {
            Some(i) => i,
            None => {
                let stride = usable + page;
                self.classes.push(SizeClass {
                    usable,
                    stride,
                    per_slab: (MAX_SLAB_BYTES / stride).clamp(1, STACKS_PER_SLAB),
                    slabs: Vec::new(),
                    free: Vec::new(),
                    in_use: 0,
                });
                self.classes.len() - 1
            }
        };
        let class = &mut self.classes[class_idx];
        let (slab_idx, index) = if let Some(slot) = class.free.pop() {
            slot
        } else {
            let need_slab = class
                .slabs
                .last()
                .is_none_or(|s| s.carved == class.per_slab);
            if need_slab {
                class.slabs.push(map_slab(class.per_slab * class.stride)?);
            }
            let slab_idx = class.slabs.len() - 1;
            let slab = &mut class.slabs[slab_idx];
            let index = slab.carved;
            if index == slab.guarded {
                // A-I1: the guards of the next slots too, in one system
                // call where the kernel allows it (guard G-I2), once guards
                // are known not to split the mapping.
                let ahead = match guard::mode() {
                    Some(guard::GuardMode::Madvise) => GUARD_AHEAD,
                    _ => 1,
                };
                let end = (index + ahead).min(class.per_slab);
                let mut pages = [0usize; GUARD_AHEAD];
                for (p, i) in pages.iter_mut().zip(index..end) {
                    *p = slab.addr + i * class.stride;
                }
                // SAFETY: each page is the first of a slot of this slab
                // (inside the mapping this allocator owns, S-I5) at or
                // above `carved`: never handed out (A-I1), so nothing uses
                // it.
                unsafe { guard::install_many(&pages[..end - index], page)? };
                slab.guarded = end;
            }
            slab.carved += 1;
            (slab_idx as u32, index as u32)
        };
        class.in_use += 1;
        let slab = &class.slabs[slab_idx as usize];
        let limit = slab.addr + index as usize * class.stride;
        Ok(StackSlot {
            base: limit + class.stride,
            limit,
            usable: class.usable,
            class: class_idx as u32,
            slab: slab_idx,
            index,
        })
    }

    /// Takes slots back (S-I4: nothing runs on any of them any more) and
    /// gives their pages to the kernel (A-I3), with one `madvise` per run of
    /// slots adjacent in a slab (A-I5). Reorders `slots`.
    pub(crate) fn release_batch(&mut self, slots: &mut [StackSlot]) {
        slots.sort_unstable_by_key(|s| (s.class, s.limit));
        let mut i = 0;
        while i < slots.len() {
            let first = slots[i];
            let mut last = first;
            let mut j = i + 1;
            while j < slots.len()
                && (slots[j].class, slots[j].slab) == (first.class, first.slab)
                && slots[j].limit == last.base
            {
                last = slots[j];
                j += 1;
            }
            self.give_back(first.limit + self.page, last.base);
            for slot in &slots[i..j] {
                self.take_back(*slot);
            }
            self.given_back += (j - i) as u64;
            i = j;
        }
    }

    /// Takes one slot back and gives its pages to the kernel (A-I3).
    pub(crate) fn release(&mut self, mut slot: StackSlot) {
        self.release_batch(std::slice::from_mut(&mut slot));
    }

    /// Takes a slot back without giving its pages to the kernel: only for
    /// the scheduler's teardown, where the slab is unmapped right after
    /// (A-I3's exception), so the `madvise` would be wasted.
    pub(crate) fn abandon(&mut self, slot: StackSlot) {
        self.take_back(slot);
    }

    fn take_back(&mut self, slot: StackSlot) {
        let class = &mut self.classes[slot.class as usize];
        debug_assert_eq!(
            class.slabs[slot.slab as usize].addr + slot.index as usize * class.stride,
            slot.limit
        );
        class.in_use -= 1;
        class.free.push((slot.slab, slot.index));
    }

    /// Gives `[from, to)` back to the kernel: the usable range of one slot,
    /// or of a run of adjacent slots with the guard pages between them.
    fn give_back(&mut self, from: usize, to: usize) {
        self.give_back_calls += 1;
        // SAFETY: `[from, to)` lies inside one slab this allocator mapped
        // (S-I5): from the first usable byte of a slot to the top of the
        // same or a later slot of that slab. Every slot in it was handed out
        // by this allocator and the caller guarantees nothing runs on it or
        // will resume on it (S-I4), so discarding its contents is harmless;
        // the guard pages inside the range keep their guard (A-I5), and the
        // first slot's own guard is below `from`.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, GIVE_BACK) };
    }

    /// Counters over every size class.
    pub(crate) fn stats(&self) -> StackStats {
        let mut s = StackStats {
            given_back: self.given_back,
            give_back_calls: self.give_back_calls,
            ..StackStats::default()
        };
        for c in &self.classes {
            s.slabs += c.slabs.len();
            s.carved += c.slabs.iter().map(|slab| slab.carved).sum::<usize>();
            s.in_use += c.in_use;
        }
        s
    }
}

impl Drop for Stacks {
    fn drop(&mut self) {
        for class in &self.classes {
            for slab in &class.slabs {
                // SAFETY: a mapping this allocator made with exactly this
                // address and length; no fiber is left to run on it (module
                // drop order, S-I5).
                unsafe { libc::munmap(slab.addr as *mut libc::c_void, slab.len) };
            }
        }
    }
}

fn map_slab(len: usize) -> io::Result<Slab> {
    // SAFETY: a fresh anonymous mapping at an address the kernel picks; it
    // aliases nothing.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    super::overflow::note_slab(addr as usize, len);
    Ok(Slab {
        addr: addr as usize,
        len,
        carved: 0,
        guarded: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_carved_in_order_and_reused_after_release() {
        let mut stacks = Stacks::new();
        let page = page_size();
        let a = stacks.alloc(16 * page).unwrap();
        let b = stacks.alloc(16 * page).unwrap();
        assert_eq!(a.base - a.limit, 17 * page);
        assert_eq!(b.limit, a.base, "slots are adjacent in one slab");
        assert_eq!(stacks.stats().slabs, 1);
        stacks.release(a);
        let c = stacks.alloc(16 * page).unwrap();
        assert_eq!(c, a, "a released slot is handed out again");
        assert_eq!(
            stacks.stats(),
            StackStats {
                slabs: 1,
                carved: 2,
                in_use: 2,
                given_back: 1,
                give_back_calls: 1,
            }
        );
        // Writing the whole usable range works (S-I3).
        // SAFETY: the usable range of a slot we hold.
        unsafe { std::ptr::write_bytes((c.limit + page) as *mut u8, 0xa5, c.usable) };
    }

    /// Which pages of `[addr, addr + len)` are resident (mincore).
    fn resident(addr: usize, len: usize) -> Vec<bool> {
        let page = page_size();
        let mut vec = vec![0u8; len.div_ceil(page)];
        // SAFETY: `[addr, addr + len)` is inside a live mapping of the
        // allocator under test; `vec` has one byte per page.
        let rc = unsafe { libc::mincore(addr as *mut libc::c_void, len, vec.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", io::Error::last_os_error());
        vec.iter().map(|b| b & 1 == 1).collect()
    }

    /// Six adjacent slots, every usable byte written.
    fn six_touched_slots(stacks: &mut Stacks) -> Vec<StackSlot> {
        let page = page_size();
        let slots: Vec<_> = (0..6).map(|_| stacks.alloc(4 * page).unwrap()).collect();
        for s in &slots {
            // SAFETY: the usable range of a slot we hold (S-I3).
            unsafe { std::ptr::write_bytes((s.limit + page) as *mut u8, 0x5a, s.usable) };
        }
        slots
    }

    #[test]
    fn a_batch_is_given_back_in_one_call_and_keeps_its_guards() {
        let page = page_size();
        let mut stacks = Stacks::new();
        let s = six_touched_slots(&mut stacks);
        // Out of order on purpose: slots 1, 2, 3 form one run, 5 another.
        let mut batch = [s[3], s[5], s[1], s[2]];
        if std::env::var_os("ASYNC_SCHEDULER_TEST_GUARD_AFTER_BATCH").is_some() {
            stacks.release_batch(&mut batch);
            // The guard of slot 2 lies inside the first run's range.
            // SAFETY: reading a guard page cannot corrupt anything: it
            // faults and the child dies, which is what the parent checks.
            let v = unsafe { std::ptr::read_volatile(s[2].limit as *const u8) };
            unreachable!("read {v} from a guard page given back inside a run");
        }
        stacks.release_batch(&mut batch);
        let st = stacks.stats();
        assert_eq!((st.given_back, st.give_back_calls, st.in_use), (4, 2, 2));
        for (i, slot) in s.iter().enumerate() {
            let pages = resident(slot.limit + page, slot.usable);
            let expect = i == 0 || i == 4;
            assert!(
                pages.iter().all(|&r| r == expect),
                "slot {i}: resident {pages:?}, expected {expect}"
            );
        }
        // Reused slots come back zeroed (given back), the kept ones intact.
        let again = stacks.alloc(4 * page).unwrap();
        // SAFETY: the usable range of a slot we hold.
        assert_eq!(unsafe { *((again.limit + page) as *const u8) }, 0);
        // SAFETY: slot 0 is still ours.
        assert_eq!(unsafe { *((s[0].limit + page) as *const u8) }, 0x5a);

        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "stack::slab::tests::a_batch_is_given_back_in_one_call_and_keeps_its_guards",
                "--exact",
                "--test-threads=1",
            ])
            .env("ASYNC_SCHEDULER_TEST_GUARD_AFTER_BATCH", "1")
            .output()
            .expect("run the child");
        use std::os::unix::process::ExitStatusExt;
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Under AddressSanitizer (build.rs), ASan's handler reports the fault.
        let faulted = if cfg!(asan) {
            stderr.contains("ERROR: AddressSanitizer: SEGV")
        } else {
            out.status.signal() == Some(libc::SIGSEGV)
        };
        assert!(
            faulted,
            "the guard inside a given-back run did not fault: {:?}\n{stderr}",
            out.status
        );
    }

    #[test]
    fn teardown_abandons_slots_without_a_system_call() {
        let mut stacks = Stacks::new();
        for s in six_touched_slots(&mut stacks) {
            stacks.abandon(s);
        }
        let st = stacks.stats();
        assert_eq!((st.in_use, st.given_back, st.give_back_calls), (0, 0, 0));
    }

    #[test]
    fn a_slab_holds_64_stacks_then_a_new_one_is_mapped() {
        let mut stacks = Stacks::new();
        let slots: Vec<_> = (0..STACKS_PER_SLAB + 1)
            .map(|_| stacks.alloc(4 * page_size()).unwrap())
            .collect();
        assert_eq!(stacks.stats().slabs, 2);
        for s in slots {
            stacks.release(s);
        }
        assert_eq!(stacks.stats().in_use, 0);
    }
}
