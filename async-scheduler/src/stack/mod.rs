//! Coroutine stacks: the contract every engine relies on, and where stacks
//! come from.
//!
//! A stack is a [`StackSlot`] carved from a large anonymous mapping, a *slab*
//! ([`slab`]), with one guard page at its low end ([`guard`]):
//!
//! ```text
//!  slab (one mmap, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, 64 stacks)
//!  low addresses                                               high addresses
//!  +-------+------------------+-------+------------------+-----+-------+------
//!  | guard |   stack 0 usable | guard |   stack 1 usable | ... | guard | ...
//!  +-------+------------------+-------+------------------+-----+-------+------
//!  ^limit          stride = page + usable          ^base (top)
//!
//!  one stack, as an engine sees it when a fiber first runs (grows downwards):
//!
//!  base (16-byte aligned, = limit + stride) ----------------------------+
//!    | engine's initial frame: context: fcontext's 64-byte save area and  |
//!    |   the trampoline return address (make_fcontext);                   |
//!    |   corosensei: the fiber closure and the parent link (init_stack)   |
//!    | fiber_main's frame (fiber.rs), then the coroutine entry's frames   |
//!    | ... grows down, touching pages on demand (MAP_NORESERVE) ...       |
//!  limit + page --- lowest usable byte ---------------------------------+
//!    | guard page: MADV_GUARD_INSTALL marker (or PROT_NONE), so an        |
//!    |   overflow faults (SIGSEGV) instead of writing into the stack below;|
//!    |   [`overflow`] turns that fault into a one-line report and abort   |
//!  limit -------------------------------------------------------------+
//! ```
//!
//! There is no parent link in the slot itself: a `context` fiber keeps its
//! saved stack pointer in its fiber record, a `corosensei` fiber keeps the
//! link to the scheduler's context at the top of its own stack.
//!
//! # The stack contract (invariants)
//!
//! - **S-I1** `base` and `limit` are page-aligned (so 16-byte aligned, as
//!   both engines require), `base - limit == page + usable`.
//! - **S-I2** `[limit, limit + page)` is a guard page for as long as the
//!   slot exists: any access faults.
//! - **S-I3** `[limit + page, base)` is readable and writable, and belongs to
//!   the holder of the slot alone, from `alloc` until `release`.
//! - **S-I4** A slot is released only when no code runs on it and nothing
//!   saved on it will be resumed (its fiber is parked for good or gone).
//! - **S-I5** The mapping outlives every slot carved from it: slabs are
//!   unmapped only when the allocator is dropped, with the scheduler, after
//!   every fiber is gone.
//!
//! # Who touches what
//!
//! The loop thread, through the scheduler's `RefCell<Stacks>`, borrowed
//! for the duration of one `alloc` or `release` and never across a switch;
//! and, for slabs handed to it and not adopted yet, the prefault helper
//! thread ([`prefault`]), which only installs guards and populates pages.
//!
//! # Drop order
//!
//! Fibers first (each returns its slot), then the allocator, which unmaps
//! every slab.
//!
//! # Safety
//!
//! This module and its children call `mmap`, `madvise`, `mprotect` and
//! `munmap` on memory they mapped themselves; each call cites the invariant
//! above that makes it sound.

// On the unsafe inventory (lib.rs): see the `# Safety` section above.
#![allow(unsafe_code)]

pub(crate) mod guard;
pub(crate) mod overflow;
pub(crate) mod prefault;
pub(crate) mod slab;

pub(crate) use slab::Stacks;

/// One stack carved from a slab; see the module doc for the layout and the
/// contract (S-I1..S-I5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StackSlot {
    /// Highest address, exclusive: the initial stack pointer.
    pub(crate) base: usize,
    /// Lowest address, the start of the guard page.
    pub(crate) limit: usize,
    /// Usable bytes, `base - limit - page`.
    pub(crate) usable: usize,
    /// Which size class, slab and slot this is, for `release`.
    pub(crate) class: u32,
    pub(crate) slab: u32,
    pub(crate) index: u32,
}

/// The page size of this process, read once.
pub(crate) fn page_size() -> usize {
    use std::sync::OnceLock;
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no memory-safety preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 0 {
            page as usize
        } else {
            4096
        }
    })
}
