//! The command's memory allocator; `examples/scan.rs` includes this file so
//! that the decode benchmark runs with the same one.
//!
//! Batches of about the same sizes are allocated and freed over and over.
//! On glibc the system allocator serves them best once its large blocks stay
//! in its heap (not mapped and unmapped each time) and freed memory is not
//! handed back at once: then the same pages are written again instead of
//! fresh ones the kernel must map and clear. Against mimalloc, on the
//! 2,000,000-event benchmark file: Q5 0.559 -> 0.478 s, Q8 1.560 -> 1.335 s,
//! a full decode 0.151 -> 0.141 s with 69 MB peak RSS instead of 94 MB
//! (BENCHMARKS.md). Elsewhere, mimalloc.
//!
//! The heaps of glibc's thread arenas (where the decoding threads allocate)
//! are also put in transparent huge pages, which the kernel then maps 2 MiB
//! at a time: a full decode of that file takes 1,500 page faults instead of
//! 16,700 and 8% less CPU time (BENCHMARKS.md). This needs the heaps
//! readable and writable in one piece from the start (`M_TOP_PAD`), or
//! glibc grows them a few pages at a time and no 2 MiB range is whole.

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: huge::HugeHeaps = huge::HugeHeaps;

/// Allocations of this size and more are mapped on their own by glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: usize = 32 << 20;

/// Keeps allocations up to 32 MiB in glibc's heap and up to 256 MiB of
/// freed memory in the process, and makes each heap of a thread arena
/// writable in one piece. Call first thing in `main`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune() {
    // SAFETY: mallopt only sets parameters of glibc's malloc; it is called
    // first thing in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TOP_PAD, huge::HEAP_SIZE as libc::c_int);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod huge {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// glibc reserves each heap of a thread arena as this many bytes at an
    /// address that is a multiple of it (`HEAP_MAX_SIZE` on 64-bit
    /// targets), which is how it finds the heap of a block itself.
    pub const HEAP_SIZE: usize = 64 << 20;

    /// Blocks smaller than this do not look for their heap: the first
    /// large block of a heap advises all of it.
    const LARGE: usize = 128 << 10;

    /// glibc's malloc, with every thread arena heap that holds a large block
    /// advised to use transparent huge pages.
    pub struct HugeHeaps;

    /// The heaps advised so far; once all are taken, later heaps are left
    /// as they are.
    static ADVISED: [AtomicUsize; 64] = [const { AtomicUsize::new(0) }; 64];

    /// Advises the heap of the block `p` of `size` bytes to use huge pages,
    /// once per heap. Blocks of the main arena (below the program break)
    /// and those glibc may map on their own (near the mmap threshold or
    /// above) are left alone. A heap glibc unmaps and later maps again at
    /// the same address is not advised again: glibc keeps freed memory up
    /// to the trim threshold, so this is rare, and costs only the advice.
    fn advise(p: *mut u8, size: usize) {
        if p.is_null() || !(LARGE..super::MMAP_THRESHOLD / 2).contains(&size) {
            return;
        }
        let addr = p as usize;
        // SAFETY: sbrk(0) only reads the current program break.
        let brk = unsafe { libc::sbrk(0) } as usize;
        if addr < brk {
            return;
        }
        let heap = addr & !(HEAP_SIZE - 1);
        for slot in &ADVISED {
            match slot.compare_exchange(0, heap, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {
                    // SAFETY: the range is the glibc heap that holds `p`;
                    // the advice changes how the kernel backs it, not its
                    // contents.
                    unsafe {
                        libc::madvise(heap as *mut libc::c_void, HEAP_SIZE, libc::MADV_HUGEPAGE)
                    };
                    return;
                }
                Err(seen) if seen == heap => return,
                Err(_) => {}
            }
        }
    }

    // SAFETY: every call goes to the system allocator unchanged; `advise`
    // only gives the kernel a hint about memory the allocator owns.
    unsafe impl GlobalAlloc for HugeHeaps {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc(layout) };
            advise(p, layout.size());
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc_zeroed(layout) };
            advise(p, layout.size());
            p
        }

        unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
            unsafe { System.dealloc(p, layout) }
        }

        unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
            let q = unsafe { System.realloc(p, layout, size) };
            advise(q, size);
            q
        }
    }
}

/// Nothing to tune: mimalloc is the allocator.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}
