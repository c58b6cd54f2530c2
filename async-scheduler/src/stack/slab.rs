//! The stack allocator: slabs of guarded stacks, one free list per size
//! class.
//!
//! # What it owns
//!
//! Every slab mapping of one scheduler, grouped by usable stack size (a
//! *size class*; programs normally use one or two). A slab holds up to
//! [`STACKS_PER_SLAB`] stacks and is carved lazily: a stack's guard page is
//! installed the first time the slot is handed out, so a program with one
//! coroutine maps one slab and makes two system calls.
//!
//! # Invariants
//!
//! - **A-I1** Every slot index below a slab's `carved` has its guard page
//!   installed (stack S-I2); slots at or above it were never handed out.
//! - **A-I2** A slot is either handed out (counted in `in_use`) or on its
//!   class's free list, never both; free slots keep their guard page.
//! - **A-I3** A released slot's usable pages are given back to the kernel
//!   (`MADV_DONTNEED`), so a burst of coroutines does not pin its memory
//!   after the fibers beyond `pool_max` are retired. The guard page is never
//!   included in that range.
//! - **A-I4** Slabs are never unmapped before the allocator is dropped (stack
//!   S-I5): the count of mappings is bounded by the peak number of stacks in
//!   use, divided by [`STACKS_PER_SLAB`].
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

/// Stacks per slab, at most (fewer for very large stacks, see
/// [`MAX_SLAB_BYTES`]).
pub(crate) const STACKS_PER_SLAB: usize = 64;

/// The largest slab mapping; a class with bigger stacks puts fewer in a slab.
const MAX_SLAB_BYTES: usize = 256 << 20;

struct Slab {
    addr: usize,
    len: usize,
    /// Slots handed out at least once (A-I1).
    carved: usize,
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
}

/// The stack allocator of one scheduler. See the module doc.
pub(crate) struct Stacks {
    page: usize,
    classes: Vec<SizeClass>,
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
            let limit = slab.addr + index * class.stride;
            // SAFETY: `limit` is the first page of slot `index`, inside the
            // slab mapping this allocator owns (S-I5), never handed out
            // before (A-I1), so nothing uses it.
            unsafe { guard::install(limit, page)? };
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

    /// Takes a slot back (S-I4: nothing runs on it any more) and returns its
    /// pages to the kernel (A-I3).
    pub(crate) fn release(&mut self, slot: StackSlot) {
        let page = self.page;
        let class = &mut self.classes[slot.class as usize];
        debug_assert_eq!(
            class.slabs[slot.slab as usize].addr + slot.index as usize * class.stride,
            slot.limit
        );
        // SAFETY: the usable range of a slot this allocator handed out, in a
        // mapping it owns (S-I5); the caller guarantees nothing runs on it or
        // will resume on it (S-I4), so discarding its contents is harmless.
        // The guard page (the first page) is outside the range (A-I3).
        unsafe {
            libc::madvise(
                (slot.limit + page) as *mut libc::c_void,
                slot.usable,
                libc::MADV_DONTNEED,
            )
        };
        class.in_use -= 1;
        class.free.push((slot.slab, slot.index));
    }

    /// Counters over every size class.
    pub(crate) fn stats(&self) -> StackStats {
        let mut s = StackStats::default();
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
    Ok(Slab {
        addr: addr as usize,
        len,
        carved: 0,
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
                in_use: 2
            }
        );
        // Writing the whole usable range works (S-I3).
        // SAFETY: the usable range of a slot we hold.
        unsafe { std::ptr::write_bytes((c.limit + page) as *mut u8, 0xa5, c.usable) };
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
