//! Unsplitting 4-byte values with streaming stores.
//!
//! A page of 1 MiB decoded for a read of many columns is written once and
//! read, if at all, only after the pages of the other columns: by then it
//! has left the cache. Ordinary stores first read each line of the fresh
//! output from memory; streaming (non-temporal) stores write whole lines
//! without reading them and keep the output from pushing the zstd buffers
//! out of the cache. Unsplitting into memory that is not cached, one core
//! of the machine of BENCHMARKS.md writes about 19 GB/s with ordinary
//! stores and 34 GB/s with streaming ones.
//!
//! SSE2 is part of every x86-64 processor, so no detection is needed; other
//! architectures use the ordinary kernels of [`super::split`].

use std::ops::Range;

use super::native::NativeType;

/// Outputs shorter than this many values use ordinary stores: a small
/// output is likely read again while it is still cached.
pub(crate) const MIN_VALUES: usize = 16 * 1024;

/// Appends the values `sub` of the split page `src` of `n` 4-byte values to
/// `out` as their bits (zigzag-decoded if `zigzag`), with streaming stores.
/// False, and nothing appended, where the kernel does not apply: `T` not 4
/// bytes, `src` shorter than `4 * n`, `sub` outside `0..n`, or another
/// architecture.
pub(crate) fn extend_u32_bits<T: NativeType>(
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    out: &mut Vec<T>,
    zigzag: bool,
) -> bool {
    if T::SIZE != 4
        || std::mem::size_of::<T>() != 4
        || sub.start > sub.end
        || sub.end > n
        || src.len() / 4 < n
    {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let len = sub.len();
        let plane = |b: usize| src.get(b * n..(b + 1) * n).unwrap_or_default();
        let planes = [plane(0), plane(1), plane(2), plane(3)];
        out.reserve(len);
        let Some(spare) = out.spare_capacity_mut().get_mut(..len) else {
            return false;
        };
        // SAFETY: `spare` holds `len` writable slots of 4 bytes, aligned
        // for `T` (4 bytes), each plane holds the `n >= sub.end` bytes the
        // kernel reads, and all `len` slots are written before `set_len`
        // counts them.
        unsafe {
            sse2::unsplit(planes, sub, spare.as_mut_ptr().cast::<u32>(), zigzag);
            out.set_len(out.len() + len);
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (src, n, sub, out, zigzag);
        false
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;
    use std::ops::Range;

    use super::super::zigzag::Zigzag;

    /// The value of element `i`: byte `b` from plane `b`.
    #[inline(always)]
    fn gather(planes: &[&[u8]; 4], i: usize, zigzag: bool) -> u32 {
        let bits = u32::from_le_bytes(planes.map(|p| p.get(i).copied().unwrap_or(0)));
        if zigzag {
            bits.decode() as u32
        } else {
            bits
        }
    }

    /// Writes the values `sub` of `planes` to `dst[0..sub.len()]`.
    ///
    /// # Safety
    /// `dst` must be valid for `sub.len()` writes of `u32` and 4-byte
    /// aligned, and every plane must hold at least `sub.end` bytes.
    pub(super) unsafe fn unsplit(
        planes: [&[u8]; 4],
        sub: Range<usize>,
        dst: *mut u32,
        zigzag: bool,
    ) {
        let len = sub.len();
        // Scalar stores up to the first 64-byte line of the output, so that
        // each vector step writes one whole line.
        let misaligned = (dst as usize) % 64;
        let head = if misaligned == 0 {
            0
        } else {
            ((64 - misaligned) / 4).min(len)
        };
        let mut k = 0;
        while k < head {
            dst.add(k).write(gather(&planes, sub.start + k, zigzag));
            k += 1;
        }
        let one = _mm_set1_epi32(1);
        let zero = _mm_setzero_si128();
        let decode = |w: __m128i| {
            if zigzag {
                _mm_xor_si128(
                    _mm_srli_epi32(w, 1),
                    _mm_sub_epi32(zero, _mm_and_si128(w, one)),
                )
            } else {
                w
            }
        };
        let [p0, p1, p2, p3] = planes.map(<[u8]>::as_ptr);
        while k + 16 <= len {
            let i = sub.start + k;
            let load = |plane: *const u8| _mm_loadu_si128(plane.add(i).cast::<__m128i>());
            let (a, b, c, d) = (load(p0), load(p1), load(p2), load(p3));
            let ab_lo = _mm_unpacklo_epi8(a, b);
            let ab_hi = _mm_unpackhi_epi8(a, b);
            let cd_lo = _mm_unpacklo_epi8(c, d);
            let cd_hi = _mm_unpackhi_epi8(c, d);
            let out = dst.add(k).cast::<__m128i>();
            _mm_stream_si128(out, decode(_mm_unpacklo_epi16(ab_lo, cd_lo)));
            _mm_stream_si128(out.add(1), decode(_mm_unpackhi_epi16(ab_lo, cd_lo)));
            _mm_stream_si128(out.add(2), decode(_mm_unpacklo_epi16(ab_hi, cd_hi)));
            _mm_stream_si128(out.add(3), decode(_mm_unpackhi_epi16(ab_hi, cd_hi)));
            k += 16;
        }
        while k < len {
            dst.add(k).write(gather(&planes, sub.start + k, zigzag));
            k += 1;
        }
        // Streaming stores are weakly ordered: make them visible before
        // the output is handed to another thread.
        _mm_sfence();
    }
}
