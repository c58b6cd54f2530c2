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
//! with one coroutine maps one slab and makes three system calls (the
//! mapping, its no-huge-pages advice, the guard).
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
//!   S-I5). They are carved from *regions*, reservations of consecutive
//!   slabs that double in size (1 slab, 2, 4, ... up to
//!   [`MAX_REGION_BYTES`]), so a million stacks cost about 70 `mmap`s, not
//!   15,600: each `mmap` takes the process's memory-map lock for writing
//!   and makes the page faults of every other thread wait (measured with
//!   two loops: the slab `mmap`s and the faults they stalled were the
//!   largest cost after the page clearing itself). A region that cannot be
//!   reserved (strict overcommit) falls back to one slab.
//! - **A-I6** Regions never hold transparent huge pages (`MAP_STACK` and
//!   `MADV_NOHUGEPAGE`): under THP `always` a stack's first touch would
//!   otherwise fault in 2 MiB, and a million stacks would need terabytes.
//!   The flag also keeps the kernel from merging a region with a
//!   neighbouring `malloc` heap: a heap growing by `mprotect` next to a
//!   merged region write-locks the region's VMA, stalling the page faults
//!   of every stack in it (measured with two loops, where the other loop's
//!   arena was the neighbour).
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
//! The loop thread, through `&mut self` for one call at a time; and the
//! prefault helper (prefault.rs), which installs the guards and populates
//! the top pages of slabs it was given and the loop has not adopted yet
//! (prefault P-I1): such a slab joins its class with every guard in
//! (`guarded == per_slab`, A-I1) or, if the helper did not install them,
//! none.
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

use std::collections::VecDeque;
use std::io;

use super::prefault::{self, Prefault};
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

/// The largest region (A-I4): address space only, `MAP_NORESERVE`, nothing
/// is resident until a stack touches it.
const MAX_REGION_BYTES: usize = 4 << 30;

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
    /// Slots handed out at least once (A-I1).
    carved: usize,
    /// Slots whose guard page is installed, at least `carved` (A-I1).
    guarded: usize,
}

/// A slab of a class reserved for the prefault helper and back from it.
#[derive(Debug, Clone, Copy)]
struct Ahead {
    addr: usize,
    /// Every slot's guard is in (prefault P-I4).
    guarded: bool,
    /// The helper prepared it, rather than handing it back unprepared.
    prepared: bool,
}

impl Ahead {
    fn from(job: prefault::Job, prepared: bool) -> Ahead {
        Ahead {
            addr: job.addr,
            guarded: prepared && job.guarded,
            prepared,
        }
    }
}

struct SizeClass {
    usable: usize,
    stride: usize,
    per_slab: usize,
    slabs: Vec<Slab>,
    /// Where the next slab is carved: `[next, end)` of the newest region.
    next: usize,
    end: usize,
    /// Regions reserved so far (A-I4), for the size of the next one.
    regions: u32,
    /// Released slots, as `(slab, index)` (A-I2); reused last-in first-out.
    free: Vec<(u32, u32)>,
    in_use: usize,
    /// Slabs with the prefault helper, or back from it and not adopted
    /// yet (prefault P-I2).
    ahead: usize,
    /// Slabs back from the helper, oldest first.
    ready: VecDeque<Ahead>,
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
    /// Slabs the prefault helper prepared and the loop adopted.
    pub(crate) prepared: u64,
}

/// The stack allocator of one scheduler. See the module doc.
pub(crate) struct Stacks {
    page: usize,
    classes: Vec<SizeClass>,
    /// Every region mapped, as `(address, length)`: unmapped on drop.
    regions: Vec<(usize, usize)>,
    given_back: u64,
    give_back_calls: u64,
    prepared: u64,
    /// Whether slabs may be prepared on a helper thread (prefault.rs).
    prefault_mode: prefault::Mode,
    /// This allocator's scheduler, counted alive (prefault P-I5).
    _alive: prefault::Alive,
    /// The helper, once a class has carved `prefault::START_AFTER` slabs.
    prefault: Option<Prefault>,
}

impl std::fmt::Debug for Stacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stacks")
            .field("stats", &self.stats())
            .finish()
    }
}

impl Stacks {
    /// An allocator with nothing mapped yet, which prepares slabs on a
    /// helper thread during bursts as `prefault` says (prefault.rs).
    pub(crate) fn new(prefault: prefault::Mode) -> Stacks {
        Stacks {
            page: page_size(),
            classes: Vec::new(),
            regions: Vec::new(),
            given_back: 0,
            give_back_calls: 0,
            prepared: 0,
            prefault_mode: prefault,
            _alive: prefault::Alive::new(),
            prefault: None,
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
                    next: 0,
                    end: 0,
                    regions: 0,
                    free: Vec::new(),
                    in_use: 0,
                    ahead: 0,
                    ready: VecDeque::new(),
                });
                self.classes.len() - 1
            }
        };
        let free = self.classes[class_idx].free.pop();
        let (slab_idx, index) = if let Some(slot) = free {
            slot
        } else {
            let class = &self.classes[class_idx];
            let need_slab = class
                .slabs
                .last()
                .is_none_or(|s| s.carved == class.per_slab);
            if need_slab {
                self.new_slab(class_idx)?;
            }
            let class = &mut self.classes[class_idx];
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
        let class = &mut self.classes[class_idx];
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

    /// Waits until the prefault helper has finished every slab it holds
    /// (tests only).
    #[cfg(test)]
    fn settle(&mut self) {
        let mut out: usize = self.classes.iter().map(|c| c.ahead - c.ready.len()).sum();
        while out > 0 && self.wait_for_helper() {
            out -= 1;
        }
    }

    /// Takes every slab the helper has finished into its class's `ready`.
    fn collect_ready(&mut self) {
        while let Some(job) = self.prefault.as_ref().and_then(Prefault::ready) {
            self.file_prepared(job);
        }
    }

    /// Waits for the next slab the helper finishes and takes it into its
    /// class's `ready`; false if there is no helper to wait for.
    fn wait_for_helper(&mut self) -> bool {
        let Some(job) = self.prefault.as_ref().and_then(Prefault::wait) else {
            return false;
        };
        self.file_prepared(job);
        true
    }

    /// A slab back from the helper joins its class's `ready`.
    fn file_prepared(&mut self, job: prefault::Job) {
        self.classes[job.class as usize]
            .ready
            .push_back(Ahead::from(job, true));
    }

    /// Starts carving a new slab of class `class_idx`: one the prefault
    /// helper has prepared if one is ready, else the next of the class's
    /// region; then keeps the helper `prefault::AHEAD` slabs ahead from the
    /// class's `prefault::START_AFTER`th slab on.
    fn new_slab(&mut self, class_idx: usize) -> io::Result<()> {
        self.collect_ready();
        let slab = loop {
            let class = &mut self.classes[class_idx];
            if let Some(ahead) = class.ready.pop_front() {
                class.ahead -= 1;
                self.prepared += u64::from(ahead.prepared);
                break Slab {
                    addr: ahead.addr,
                    carved: 0,
                    guarded: if ahead.guarded { class.per_slab } else { 0 },
                };
            }
            match reserve_slab(class, &mut self.regions) {
                Ok(addr) => {
                    break Slab {
                        addr,
                        carved: 0,
                        guarded: 0,
                    }
                }
                // The kernel refused a region while the helper holds slabs
                // of this class: one of those is better than a failed spawn.
                Err(e) => {
                    if class.ahead == 0 || !self.wait_for_helper() {
                        return Err(e);
                    }
                }
            }
        };
        let class = &mut self.classes[class_idx];
        class.slabs.push(slab);
        if self.prefault_mode == prefault::Mode::Off || class.slabs.len() < prefault::START_AFTER {
            return Ok(());
        }
        if self.prefault.is_none() {
            if !self.prefault_mode.allows_start() {
                // P-I5: asked once, the answer kept.
                self.prefault_mode = prefault::Mode::Off;
                return Ok(());
            }
            match Prefault::start() {
                Ok(pf) => self.prefault = Some(pf),
                Err(e) => {
                    self.prefault_mode = prefault::Mode::Off;
                    async_abi::plugin_debug!("stack prefault helper not started: {e}");
                    return Ok(());
                }
            }
        }
        let Some(pf) = &self.prefault else {
            return Ok(());
        };
        let class = &mut self.classes[class_idx];
        while class.ahead < prefault::AHEAD {
            // A region the kernel refuses now is not an error of this
            // allocation: the next carve asks again.
            let Ok(addr) = reserve_slab(class, &mut self.regions) else {
                break;
            };
            let job = prefault::Job {
                class: class_idx as u32,
                addr,
                slots: class.per_slab,
                stride: class.stride,
                page: self.page,
                guarded: false,
            };
            class.ahead += 1;
            if let Err(job) = pf.submit(job) {
                // The helper is gone: the slab is the class's own again,
                // unprepared.
                class.ready.push_back(Ahead::from(job, false));
                self.prefault_mode = prefault::Mode::Off;
                break;
            }
        }
        Ok(())
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
            prepared: self.prepared,
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
        // Prefault P-I3: the helper is done with every slab before any
        // mapping goes.
        self.prefault = None;
        for &(addr, len) in &self.regions {
            // SAFETY: a mapping this allocator made with exactly this
            // address and length; no fiber is left to run on it (module
            // drop order, S-I5).
            unsafe { libc::munmap(addr as *mut libc::c_void, len) };
        }
    }
}

/// The address of the class's next slab, from its newest region or a new
/// one (A-I4).
fn reserve_slab(class: &mut SizeClass, regions: &mut Vec<(usize, usize)>) -> io::Result<usize> {
    let len = class.per_slab * class.stride;
    if class.end - class.next < len {
        let (addr, region) = map_region(len, class.regions)?;
        regions.push((addr, region));
        class.regions += 1;
        (class.next, class.end) = (addr, addr + region);
    }
    let addr = class.next;
    class.next += len;
    Ok(addr)
}

/// Reserves the class's next region (A-I4): `2^nth` slabs of `slab_len`
/// bytes, at most [`MAX_REGION_BYTES`], and one slab if the kernel refuses
/// the larger reservation. Returns its address and length.
fn map_region(slab_len: usize, nth: u32) -> io::Result<(usize, usize)> {
    let slabs = 1usize
        .checked_shl(nth)
        .unwrap_or(usize::MAX)
        .min(MAX_REGION_BYTES / slab_len)
        .max(1);
    match map(slabs * slab_len) {
        Err(e) if slabs > 1 && e.raw_os_error() == Some(libc::ENOMEM) => {
            Ok((map(slab_len)?, slab_len))
        }
        r => Ok((r?, slabs * slab_len)),
    }
}

fn map(len: usize) -> io::Result<usize> {
    // SAFETY: a fresh anonymous mapping at an address the kernel picks; it
    // aliases nothing.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // No huge pages in stacks (A-I6): `MAP_STACK` says so from Linux 6.7,
    // this call on older kernels; an error only means the kernel has no
    // transparent huge pages to refuse.
    // SAFETY: advice on the mapping made just above; it changes no content.
    unsafe { libc::madvise(addr, len, libc::MADV_NOHUGEPAGE) };
    super::overflow::note_slab(addr as usize, len);
    Ok(addr as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_carved_in_order_and_reused_after_release() {
        let mut stacks = Stacks::new(prefault::Mode::Off);
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
                prepared: 0,
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
        let mut stacks = Stacks::new(prefault::Mode::Off);
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

        if let Err(why) = faults_in_child(
            "a_batch_is_given_back_in_one_call_and_keeps_its_guards",
            "ASYNC_SCHEDULER_TEST_GUARD_AFTER_BATCH",
        ) {
            panic!("the guard inside a given-back run did not fault: {why}");
        }
    }

    /// Runs the test `name` of this module alone in a child process with
    /// `env` set, where it touches a guard page: `Err` with the child's
    /// status and stderr unless the child died of the fault.
    fn faults_in_child(name: &str, env: &str) -> Result<(), String> {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                &format!("stack::slab::tests::{name}"),
                "--exact",
                "--test-threads=1",
            ])
            .env(env, "1")
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
        if faulted {
            Ok(())
        } else {
            Err(format!("{:?}\n{stderr}", out.status))
        }
    }

    #[test]
    fn teardown_abandons_slots_without_a_system_call() {
        let mut stacks = Stacks::new(prefault::Mode::Off);
        for s in six_touched_slots(&mut stacks) {
            stacks.abandon(s);
        }
        let st = stacks.stats();
        assert_eq!((st.in_use, st.given_back, st.give_back_calls), (0, 0, 0));
    }

    #[test]
    fn regions_double_so_seventy_slabs_take_seven_mappings() {
        let mut stacks = Stacks::new(prefault::Mode::Off);
        let n = 70 * STACKS_PER_SLAB;
        let slots: Vec<_> = (0..n)
            .map(|_| stacks.alloc(4 * page_size()).unwrap())
            .collect();
        assert_eq!(stacks.stats().slabs, 70);
        // 1 + 2 + 4 + 8 + 16 + 32 slabs = 63, the seventh region holds 64.
        let lens: Vec<_> = stacks.regions.iter().map(|r| r.1).collect();
        let slab = STACKS_PER_SLAB * 5 * page_size();
        assert_eq!(lens, [1, 2, 4, 8, 16, 32, 64].map(|k| k * slab));
        // Within a slab, each slot begins where the one carved before it
        // ends; no two slots overlap anywhere.
        for w in slots.windows(2) {
            assert!(w[0].base <= w[1].limit || w[1].base <= w[0].limit);
            if w[0].slab == w[1].slab {
                assert_eq!(w[1].limit, w[0].base, "slab {}", w[0].slab);
            }
        }
        for s in slots {
            stacks.release(s);
        }
    }

    /// The `VmFlags` line of the mapping holding `addr` (`/proc/self/smaps`).
    fn vm_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = (lo..hi).contains(&addr);
                        continue;
                    }
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.trim().to_owned();
                }
            }
        }
        panic!("no mapping holds {addr:#x}");
    }

    #[test]
    fn a_region_refuses_huge_pages() {
        let mut stacks = Stacks::new(prefault::Mode::Off);
        let slot = stacks.alloc(4 * page_size()).unwrap();
        let flags = vm_flags(slot.base - 1);
        if std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            assert!(
                flags.split(' ').any(|f| f == "nh"),
                "stack region without MADV_NOHUGEPAGE: {flags}"
            );
        }
        stacks.release(slot);
    }

    #[test]
    fn a_region_the_kernel_refuses_falls_back_to_one_slab() {
        let mut stacks = Stacks::new(prefault::Mode::Off);
        let first = stacks.alloc(4 * page_size()).unwrap();
        if std::env::var_os("ASYNC_SCHEDULER_TEST_REGION_LIMIT").is_some() {
            // Room for one more slab but not the two the next region asks.
            let slab = STACKS_PER_SLAB * 5 * page_size();
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let vm_kib: usize = status
                .lines()
                .find_map(|l| l.strip_prefix("VmSize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap();
            let limit = (vm_kib * 1024 + slab + slab / 2) as libc::rlim_t;
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: libc::RLIM_INFINITY,
            };
            // SAFETY: setrlimit reads the struct; this child process exists
            // to run under the limit.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &rl) }, 0);
            // The rest of the first slab, then a whole second one.
            let more: Vec<_> = (1..2 * STACKS_PER_SLAB)
                .map(|_| stacks.alloc(4 * page_size()).unwrap())
                .collect();
            assert_eq!(stacks.stats().slabs, 2);
            assert_eq!(stacks.regions.len(), 2);
            assert_eq!(stacks.regions[1].1, slab, "fell back to one slab");
            // The next slab finds no room at all: the error says so.
            let e = stacks.alloc(4 * page_size()).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENOMEM));
            println!("fallback-ok {}", more.len());
            return;
        }
        stacks.release(first);
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "stack::slab::tests::a_region_the_kernel_refuses_falls_back_to_one_slab",
                "--exact",
                "--test-threads=1",
                "--nocapture",
            ])
            .env("ASYNC_SCHEDULER_TEST_REGION_LIMIT", "1")
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success()
                && stdout.contains(&format!("fallback-ok {}", 2 * STACKS_PER_SLAB - 1)),
            "{:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn a_slab_holds_64_stacks_then_a_new_one_is_mapped() {
        let mut stacks = Stacks::new(prefault::Mode::Off);
        let slots: Vec<_> = (0..STACKS_PER_SLAB + 1)
            .map(|_| stacks.alloc(4 * page_size()).unwrap())
            .collect();
        assert_eq!(stacks.stats().slabs, 2);
        for s in slots {
            stacks.release(s);
        }
        assert_eq!(stacks.stats().in_use, 0);
    }

    #[test]
    fn a_burst_adopts_the_slabs_the_helper_prepared() {
        let page = page_size();
        let usable = 16 * page;
        let mut stacks = Stacks::new(prefault::Mode::On);
        let mut held = Vec::new();
        for _ in 0..prefault::START_AFTER * STACKS_PER_SLAB {
            held.push(stacks.alloc(usable).unwrap());
        }
        // The eighth slab sent the next two to the helper (P-I2).
        stacks.settle();
        let class = &stacks.classes[0];
        assert_eq!(
            (class.ahead, class.ready.len()),
            (prefault::AHEAD, prefault::AHEAD)
        );
        let Ahead {
            addr: next,
            guarded,
            prepared,
        } = class.ready[0];
        assert!(guarded && prepared, "the helper installed the guards");
        let stride = usable + page;
        // Without MADV_POPULATE_WRITE (Linux before 5.14) the helper only
        // installs guards.
        for i in (0..STACKS_PER_SLAB).filter(|_| prefault::populates()) {
            // Only the top page of each slot is in: the page a first run
            // touches (fiber F-I8); the rest of the stack is left alone.
            let pages = resident(next + i * stride + page, usable);
            assert!(
                pages[..pages.len() - 1].iter().all(|r| !r),
                "slot {i}: {pages:?}"
            );
            assert!(
                pages[pages.len() - 1],
                "slot {i}'s top page is not populated"
            );
        }
        let first = stacks.alloc(usable).unwrap();
        assert_eq!(first.limit, next, "the oldest prepared slab is carved next");
        let st = stacks.stats();
        assert_eq!((st.prepared, st.slabs), (1, prefault::START_AFTER + 1));
        // The helper is kept AHEAD slabs ahead again.
        assert_eq!(stacks.classes[0].ahead, prefault::AHEAD);
        if std::env::var_os("ASYNC_SCHEDULER_TEST_PREPARED_GUARD").is_some() {
            // SAFETY: reading a guard page faults and kills this child,
            // which is what the parent checks.
            let v = unsafe { std::ptr::read_volatile(first.limit as *const u8) };
            unreachable!("read {v} from the guard of a prepared slot");
        }
        // The prepared slot is usable whole and reads as zero (S-I3).
        // SAFETY: the usable range of a slot we hold.
        unsafe {
            assert_eq!(*((first.base - 8) as *const u8), 0);
            std::ptr::write_bytes((first.limit + page) as *mut u8, 0xa5, first.usable);
        }
        if let Err(why) = faults_in_child(
            "a_burst_adopts_the_slabs_the_helper_prepared",
            "ASYNC_SCHEDULER_TEST_PREPARED_GUARD",
        ) {
            panic!("a prepared slot's guard did not fault: {why}");
        }
    }

    #[test]
    fn dropping_the_allocator_joins_the_helper_first() {
        let mut stacks = Stacks::new(prefault::Mode::On);
        for _ in 0..prefault::START_AFTER * STACKS_PER_SLAB {
            stacks.alloc(4 * page_size()).unwrap();
        }
        // Dropped while the helper has two slabs to prepare: P-I3 wants it
        // finished before the mappings go, not merely told to stop.
        let helper = stacks
            .prefault
            .as_ref()
            .expect("the helper started")
            .watch();
        drop(stacks);
        assert!(
            helper.upgrade().is_none(),
            "the helper outlived its allocator"
        );
    }

    #[test]
    fn a_small_program_or_mode_off_starts_no_helper() {
        let mut small = Stacks::new(prefault::Mode::On);
        let mut off = Stacks::new(prefault::Mode::Off);
        for _ in 0..(prefault::START_AFTER - 1) * STACKS_PER_SLAB {
            small.alloc(4 * page_size()).unwrap();
        }
        for _ in 0..4 * prefault::START_AFTER * STACKS_PER_SLAB {
            off.alloc(4 * page_size()).unwrap();
        }
        assert!(small.prefault.is_none() && off.prefault.is_none());
        assert_eq!((small.classes[0].ahead, off.classes[0].ahead), (0, 0));
    }

    #[test]
    fn a_slab_handed_back_unprepared_is_carved_and_guarded_by_the_loop() {
        let page = page_size();
        let mut stacks = Stacks::new(prefault::Mode::Off);
        for _ in 0..STACKS_PER_SLAB {
            stacks.alloc(4 * page).unwrap();
        }
        // What `new_slab` does when the helper is gone (submit failed).
        let class = &mut stacks.classes[0];
        let addr = reserve_slab(class, &mut stacks.regions).unwrap();
        let job = prefault::Job {
            class: 0,
            addr,
            slots: class.per_slab,
            stride: class.stride,
            page,
            guarded: true,
        };
        class.ahead += 1;
        class.ready.push_back(Ahead::from(job, false));
        let next = stacks.alloc(4 * page).unwrap();
        assert_eq!(next.limit, addr, "the handed-back slab is carved next");
        let st = stacks.stats();
        assert_eq!((st.prepared, st.slabs), (0, 2), "not counted as prepared");
        assert_eq!(
            stacks.classes[0].slabs[1].guarded, GUARD_AHEAD,
            "the loop guarded it"
        );
    }

    #[test]
    fn auto_starts_no_helper_when_schedulers_fill_the_cpus() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        // With as many schedulers alive as this thread may use CPUs (P-I5),
        // whatever other tests hold besides.
        let _others: Vec<_> = (0..cpus).map(|_| prefault::Alive::new()).collect();
        assert!(!prefault::Mode::Auto.allows_start());
        let mut stacks = Stacks::new(prefault::Mode::Auto);
        for _ in 0..prefault::START_AFTER * STACKS_PER_SLAB + 1 {
            stacks.alloc(4 * page_size()).unwrap();
        }
        assert!(stacks.prefault.is_none());
        assert_eq!(
            stacks.prefault_mode,
            prefault::Mode::Off,
            "asked once, not per slab"
        );
    }
}
