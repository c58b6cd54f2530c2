//! Thread-locals of other runtimes kept per coroutine, so that code which
//! enters one on every call (the `postgres` crate's client enters its own
//! tokio runtime for each query) can be inside it in many coroutines of
//! one thread at once.
//!
//! With the hooks on, a coroutine can suspend inside such a call (tokio
//! parks in `epoll_wait`, which the hooks turn into a wait of the
//! coroutine), and the next coroutine to call in finds the thread's state
//! saying "already inside a runtime": tokio refuses ("Cannot start a
//! runtime from within a runtime"), and its guards assume that they are
//! dropped in the reverse order of their making on each thread. A thread
//! per coroutine would keep each one's state apart; here each coroutine
//! keeps its own copy of the few thread-locals named below, moved in as it
//! runs and out as it suspends, as Swoole saves and restores the engine's
//! globals per coroutine.
//!
//! - **FT1** Which thread-locals: tokio's runtime context
//!   (`tokio::runtime::context::CONTEXT`, every tokio 1 in the program),
//!   found by name among the thread-local symbols of the executable's
//!   symbol table, once per process, after a probe of this crate stored the
//!   same way was found where FT2 expects it. A stripped executable, or one
//!   whose standard library stores thread-locals differently, has none
//!   found: then nothing is swapped and such a runtime works in one
//!   coroutine of a thread at a time, as tokio alone allows.
//! - **FT2** What moves is the value only, never std's record of whether
//!   its destructor is registered (the word after the value): a value is
//!   registered once per thread and dropped once, at the thread's end,
//!   whichever coroutine's value the thread holds then. Every field of
//!   tokio's context is a `Cell` or a `RefCell`, so the bytes under a
//!   reference a suspended frame holds may change while it is suspended;
//!   they are its own again before it runs.
//! - **FT3** A coroutine starts with the value's initial bytes (the
//!   thread-local's initialiser, read from the executable), as a new
//!   thread would. While no coroutine runs, the thread holds the loop's own
//!   value. A coroutine whose value is the initial one keeps nothing (most
//!   never touch tokio); one whose value differs keeps it in a small box of
//!   its own while suspended. A coroutine that ends inside such a runtime
//!   (it leaked an entered guard) leaks what the value holds, as a thread
//!   that ends without running destructors would.
//! - **FT4** Only with the hooks on: without them a coroutine cannot
//!   suspend inside another runtime's call, and nothing is looked up or
//!   swapped. What is kept apart is each coroutine's view of the thread,
//!   not the runtimes: one tokio runtime shared by two coroutines of a
//!   thread (a global runtime behind a synchronous wrapper) still has one
//!   core, and the second `block_on` waits for it on a condition variable,
//!   which no hook sees: the thread blocks while the first waits. Give
//!   each coroutine its own runtime, as the `postgres` crate's clients do.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use object::read::elf::{ElfFile64, ProgramHeader};
use object::read::ReadCache;
use object::{Object, ObjectSymbol, ReadRef, SymbolKind};

use crate::core::state::CoroState;

/// One thread-local found (FT1): where it lies in the executable's TLS
/// block, and its value's initial bytes.
struct Found {
    offset: usize,
    init: Vec<u8>,
}

/// What the lookup found in this process (FT1), once: the thread-locals,
/// and where this crate's probe lies in the TLS block.
struct Lookup {
    found: Vec<Found>,
    probe: usize,
}

fn lookup_once() -> Option<&'static Lookup> {
    static FOUND: OnceLock<Option<Lookup>> = OnceLock::new();
    FOUND.get_or_init(lookup).as_ref()
}

/// A thread-local of this crate stored as the ones looked for (a constant
/// initialiser, a destructor): found the same way, it shows that std lays
/// such storage out as FT2 assumes (the value first, a word after it, its
/// initial bytes in the image) before anything is swapped; a standard
/// library that lays it out otherwise has nothing found.
struct Probe([u64; 2]);

impl Drop for Probe {
    // Only to have a destructor, as tokio's context has: std then keeps the
    // registration word FT2 leaves alone.
    fn drop(&mut self) {}
}

const PROBE_INIT: [u64; 2] = [0x5a5a_0f0f_1234_5678, 0x0123_4567_89ab_cdef];

thread_local! {
    static FT_PROBE: Probe = const { Probe(PROBE_INIT) };
}

/// Whether `name` contains `needle`.
fn contains(name: &[u8], needle: &[u8]) -> bool {
    name.windows(needle.len()).any(|w| w == needle)
}

/// Whether a mangled name is the probe's storage.
fn is_probe(name: &[u8]) -> bool {
    contains(name, b"11foreign_tls8FT_PROBE") && contains(name, b"__RUST_STD_INTERNAL_VAL")
}

/// Whether a mangled symbol name is tokio's runtime context's storage:
/// legacy and v0 manglings both spell the path as length-prefixed names.
fn is_tokio_context(name: &[u8]) -> bool {
    contains(name, b"5tokio")
        && contains(name, b"7runtime7context7CONTEXT")
        && contains(name, b"__RUST_STD_INTERNAL_VAL")
}

/// FT1: reads the executable's symbol table and its TLS segment.
fn lookup() -> Option<Lookup> {
    let file = std::fs::File::open("/proc/self/exe").ok()?;
    let cache = ReadCache::new(file);
    let elf = ElfFile64::<object::Endianness, _>::parse(&cache).ok()?;
    let endian = elf.endian();
    let tls = elf
        .elf_program_headers()
        .iter()
        .find(|p| p.p_type(endian) == object::elf::PT_TLS)?;
    let (image_at, image_len) = (tls.p_offset(endian), tls.p_filesz(endian));
    let mut out = Vec::new();
    let mut probe = None;
    for sym in elf.symbols() {
        if sym.kind() != SymbolKind::Tls {
            continue;
        }
        let name = sym.name_bytes().unwrap_or(b"");
        if is_probe(name) {
            let want = std::mem::size_of::<Probe>() as u64;
            let image = (&cache)
                .read_bytes_at(image_at + sym.address(), want)
                .ok()?;
            let init: Vec<u8> = PROBE_INIT.iter().flat_map(|w| w.to_ne_bytes()).collect();
            // FT2's layout: the value's bytes first, one word after them.
            if sym.size() != want + 8 || sym.address() + want > image_len || image != &init[..] {
                return None;
            }
            probe = Some(usize::try_from(sym.address()).ok()?);
            continue;
        }
        if !is_tokio_context(name) {
            continue;
        }
        // FT2: std's eager storage is the value, then its state word.
        let (offset, size) = (sym.address(), sym.size());
        if size < 16 || size % 8 != 0 {
            continue;
        }
        let len = (size - 8) as usize;
        // The initial bytes: from the image (`.tdata`), zeros past it
        // (`.tbss`).
        let mut init = vec![0u8; len];
        let from_image = image_len.saturating_sub(offset).min(len as u64) as usize;
        if from_image > 0 {
            let bytes = (&cache)
                .read_bytes_at(image_at + offset, from_image as u64)
                .ok()?;
            init[..from_image].copy_from_slice(bytes);
        }
        out.push(Found {
            offset: usize::try_from(offset).ok()?,
            init,
        });
    }
    Some(Lookup {
        found: out,
        probe: probe?,
    })
}

/// glibc's `struct dl_phdr_info` up to the calling thread's TLS block of
/// the object (the `libc` crate stops before those fields).
#[repr(C)]
struct PhdrInfo {
    addr: usize,
    name: *const u8,
    phdr: *const c_void,
    phnum: u16,
    adds: u64,
    subs: u64,
    tls_modid: usize,
    tls_data: *mut c_void,
}

/// The calling thread's TLS block of the executable (the first object
/// `dl_iterate_phdr` reports).
fn thread_block() -> Option<usize> {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: usize,
        out: *mut c_void,
    ) -> c_int {
        if size >= std::mem::size_of::<PhdrInfo>() {
            // SAFETY: glibc passes a `dl_phdr_info` of `size` bytes, which
            // covers `PhdrInfo`'s layout (glibc's own, field for field);
            // `out` is the `usize` below.
            unsafe { *out.cast::<usize>() = (*info.cast::<PhdrInfo>()).tls_data as usize };
        }
        1 // the executable is reported first: stop there
    }
    let mut block = 0usize;
    // SAFETY: `first` matches the callback type and writes only `block`,
    // which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut block).cast()) };
    (block != 0).then_some(block)
}

/// One loop thread's swapping of the thread-locals found (FT1-FT3).
pub(crate) struct ForeignTls {
    /// The values' addresses on this thread, with their initial bytes.
    slots: Vec<(*mut u8, &'static [u8])>,
    /// The length of all values together: the size of a saved copy.
    total: usize,
    /// While a coroutine with values of its own runs: the loop's.
    root: Cell<Option<Box<[u8]>>>,
    /// A box kept for the next copy.
    spare: Cell<Option<Box<[u8]>>>,
}

impl ForeignTls {
    /// The swapping for the calling thread, if the program has any of the
    /// thread-locals (FT1).
    pub(crate) fn for_this_thread() -> Option<ForeignTls> {
        let lookup = lookup_once()?;
        let found = &lookup.found;
        if found.is_empty() {
            return None;
        }
        let block = thread_block()?;
        // FT2: the probe's value is where the symbol table and the TLS
        // block say it is, so the others' values are too.
        let (probe, intact) = FT_PROBE.with(|p| (p as *const Probe as usize, p.0 == PROBE_INIT));
        if probe != block + lookup.probe || !intact {
            return None;
        }
        let slots: Vec<_> = found
            .iter()
            .map(|f| ((block + f.offset) as *mut u8, f.init.as_slice()))
            .collect();
        let total = slots.iter().map(|(_, i)| i.len()).sum();
        Some(ForeignTls {
            slots,
            total,
            root: Cell::new(None),
            spare: Cell::new(None),
        })
    }

    /// Whether the thread holds the initial values.
    fn is_init(&self) -> bool {
        self.slots.iter().all(|&(at, init)| {
            // SAFETY: `at` is this thread's value of a live thread-local
            // of `init.len()` bytes (FT1), read as bytes; nothing else
            // runs on this thread meanwhile.
            unsafe { std::slice::from_raw_parts(at, init.len()) == init }
        })
    }

    /// Exchanges the thread's values with `saved`.
    fn swap(&self, saved: &mut [u8]) {
        let mut from = 0;
        for &(at, init) in &self.slots {
            let part = &mut saved[from..from + init.len()];
            // SAFETY: as in `is_init`; `part` is our own buffer, apart
            // from the thread-local.
            unsafe { std::ptr::swap_nonoverlapping(at, part.as_mut_ptr(), init.len()) };
            from += init.len();
        }
    }

    /// Moves the thread's values into a box and leaves the initial ones.
    fn take_out(&self) -> Box<[u8]> {
        let mut b = self
            .spare
            .take()
            .unwrap_or_else(|| vec![0u8; self.total].into_boxed_slice());
        let mut from = 0;
        for &(at, init) in &self.slots {
            // SAFETY: as in `is_init`; writing the initialiser's bytes
            // makes the initial value (FT3), and the old value's bytes
            // moved into the box (not dropped, not duplicated).
            unsafe {
                std::ptr::copy_nonoverlapping(at, b[from..].as_mut_ptr(), init.len());
                std::ptr::copy_nonoverlapping(init.as_ptr(), at, init.len());
            }
            from += init.len();
        }
        b
    }

    /// Moves a box's values into the thread, whose values are initial
    /// ones (nothing to drop), and keeps the box.
    fn put_back(&self, b: Box<[u8]>) {
        let mut from = 0;
        for &(at, init) in &self.slots {
            // SAFETY: as in `is_init`; the thread's value is an initial
            // one, which owns nothing, so overwriting it loses nothing.
            unsafe { std::ptr::copy_nonoverlapping(b[from..].as_ptr(), at, init.len()) };
            from += init.len();
        }
        self.spare.set(Some(b));
    }

    /// `me` starts or resumes: it gets its values (FT3).
    pub(crate) fn enter(&self, me: &CoroState) {
        // Enter and leave alternate on a thread: the loop's own value is
        // home whenever no coroutine runs.
        debug_assert!(
            {
                let r = self.root.take();
                let home = r.is_none();
                self.root.set(r);
                home
            },
            "ForeignTls::enter with a coroutine's values in place"
        );
        match me.foreign_tls.take() {
            Some(mut b) => {
                self.swap(&mut b);
                self.root.set(Some(b));
            }
            None if !self.is_init() => self.root.set(Some(self.take_out())),
            None => {}
        }
    }

    /// `me` suspends or ends: it keeps its values, the loop gets its own
    /// back (FT3).
    pub(crate) fn leave(&self, me: &CoroState) {
        let root = self.root.take();
        if self.is_init() {
            if let Some(b) = root {
                self.put_back(b);
            }
            return;
        }
        let mine = match root {
            Some(mut b) => {
                self.swap(&mut b);
                b
            }
            None => self.take_out(),
        };
        me.foreign_tls.set(Some(mine));
    }
}
