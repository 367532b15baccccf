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

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: glibc::AlignedOnMalloc = glibc::AlignedOnMalloc;

/// Keeps allocations up to 32 MiB in glibc's heap and up to 256 MiB of
/// freed memory in the process. Call first thing in `main`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune() {
    // SAFETY: mallopt only sets parameters of glibc's malloc; it is called
    // first thing in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// Nothing to tune: mimalloc is the allocator.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::alloc::{GlobalAlloc, Layout, System};

    /// What glibc's `malloc` aligns to on 64-bit targets.
    const MALLOC_ALIGN: usize = 16;

    /// The system allocator, except that allocations aligned beyond what
    /// `malloc` gives (Arrow's buffers ask for 64 bytes) are `malloc`
    /// blocks with the aligned address inside.
    ///
    /// glibc serves an aligned allocation of `n` bytes from a free block of
    /// at least `n` plus the alignment and cuts the rest off, so the block an
    /// aligned allocation frees is too small for the next one of the same
    /// size: a stream of same-sized Arrow arrays (a cast's output, batch
    /// after batch) then takes fresh memory each time. Plain `malloc` blocks
    /// of one size serve each other. Q1 on the 2,000,000-event benchmark
    /// file: 4,436 -> 3,276 page faults and 0.0233 -> 0.0191 s; Q2
    /// 4,582 -> 3,550 and 0.0627 -> 0.0527 s (BENCHMARKS.md).
    pub struct AlignedOnMalloc;

    /// The block `malloc` gave for an over-aligned allocation is stored in
    /// the word before the address handed out.
    const PREFIX: usize = std::mem::size_of::<usize>();

    // SAFETY: every method hands out either System's memory for the same
    // layout, or memory inside a malloc block of `size + align` bytes at an
    // address aligned to `align` (at least MALLOC_ALIGN past the block's
    // start, so the word before it is inside the block too, and at most
    // `align` past it, so `size` bytes fit). `dealloc` and `realloc` tell
    // the two apart by the layout's alignment, as they were allocated.
    unsafe impl GlobalAlloc for AlignedOnMalloc {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if layout.align() <= MALLOC_ALIGN {
                return unsafe { System.alloc(layout) };
            }
            let Some(size) = layout.size().checked_add(layout.align()) else {
                return std::ptr::null_mut();
            };
            // SAFETY: malloc of a non-zero size.
            let block = unsafe { libc::malloc(size) }.cast::<u8>();
            if block.is_null() {
                return block;
            }
            // The alignment is a power of two above MALLOC_ALIGN and the
            // block is MALLOC_ALIGN-aligned, so the offset is in
            // MALLOC_ALIGN..=align.
            let offset = layout.align() - (block as usize & (layout.align() - 1));
            // SAFETY: offset <= align, within the block of size + align.
            let aligned = unsafe { block.add(offset) };
            // SAFETY: offset >= MALLOC_ALIGN >= PREFIX, so the word before
            // `aligned` is inside the block; it is aligned for usize
            // because `aligned` is.
            unsafe { aligned.sub(PREFIX).cast::<usize>().write(block as usize) };
            aligned
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if layout.align() <= MALLOC_ALIGN {
                return unsafe { System.dealloc(ptr, layout) };
            }
            // SAFETY: `alloc` stored the block in the word before `ptr`.
            let block = unsafe { ptr.sub(PREFIX).cast::<usize>().read() };
            // SAFETY: the block came from malloc and is freed once.
            unsafe { libc::free(block as *mut libc::c_void) };
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            if layout.align() <= MALLOC_ALIGN {
                return unsafe { System.alloc_zeroed(layout) };
            }
            // SAFETY: as `alloc`; the whole layout is then cleared.
            let ptr = unsafe { self.alloc(layout) };
            if !ptr.is_null() {
                unsafe { ptr.write_bytes(0, layout.size()) };
            }
            ptr
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if layout.align() <= MALLOC_ALIGN {
                return unsafe { System.realloc(ptr, layout, new_size) };
            }
            // SAFETY: the caller guarantees that the new layout is valid.
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            // SAFETY: as `alloc`.
            let new = unsafe { self.alloc(new_layout) };
            if !new.is_null() {
                // SAFETY: both hold at least the smaller size; they are
                // different allocations.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
            }
            new
        }
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    use super::glibc::AlignedOnMalloc;

    #[test]
    fn over_aligned_blocks_are_aligned_and_whole() {
        for align in [32, 64, 128, 4096] {
            for size in [1, 63, 64, 1000, 128 << 10] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero layout; each block is written within its
                // size and freed once with its layout.
                unsafe {
                    let ptr = AlignedOnMalloc.alloc(layout);
                    assert!(!ptr.is_null());
                    assert_eq!(ptr as usize % align, 0, "{size} bytes at {align}");
                    ptr.write_bytes(0xA5, size);
                    let grown = AlignedOnMalloc.realloc(ptr, layout, size * 3);
                    assert_eq!(grown as usize % align, 0);
                    let kept = std::slice::from_raw_parts(grown, size);
                    assert!(kept.iter().all(|&b| b == 0xA5), "{size} bytes at {align}");
                    AlignedOnMalloc
                        .dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());

                    let zeroed = AlignedOnMalloc.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0);
                    assert!(std::slice::from_raw_parts(zeroed, size)
                        .iter()
                        .all(|&b| b == 0));
                    AlignedOnMalloc.dealloc(zeroed, layout);
                }
            }
        }
    }
}
