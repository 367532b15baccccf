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
