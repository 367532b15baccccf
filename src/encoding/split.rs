//! Byte-stream split (spec: "Encodings"; the Split* column types).
//!
//! The first bytes of all elements come first, then all second bytes, and so
//! on, which groups the similar bytes of similar values for the compressor:
//!
//! ```text
//!  SplitUInt16 [0x0102, 0x0304]
//!    plain:  02 01 | 04 03
//!    split:  02 04 | 01 03      (byte 0 of each element, then byte 1)
//!
//!  SplitReal32 [1.0, 2.0] = bits [3F800000, 40000000]
//!    split:  00 00 | 00 00 | 80 00 | 3F 40
//! ```
//!
//! A page of `n` elements of `N` bytes holds `N` planes of `n` bytes; byte
//! `b` of element `i` is at `b * n + i` (ROOT: `CastSplitUnpack` in
//! tree/ntuple/src/RColumnElement.hxx). SplitIndex and SplitInt columns
//! apply delta or zigzag to the values after unsplitting.

use std::ops::{BitOr, Range, Shl};

use super::native::NativeType;
use super::BLOCK;

/// Calls `f` with consecutive blocks of the `n` values of the split page
/// `src`, whose length is `n * S::SIZE`.
#[inline]
pub(crate) fn for_each_block<S: NativeType>(src: &[u8], n: usize, f: impl FnMut(&[S])) {
    for_each_block_in(src, n, 0..n, f);
}

/// Calls `f` with consecutive blocks of the values `sub` of the split page
/// `src` of `n` values (`src.len() == n * S::SIZE`, `sub` within `0..n`):
/// only the bytes of those values are read.
#[inline]
pub(crate) fn for_each_block_in<S: NativeType>(
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    mut f: impl FnMut(&[S]),
) {
    let mut gathered = [S::Word::default(); BLOCK];
    let mut values = [S::default(); BLOCK];
    let mut full = Vec::with_capacity(BLOCK);
    let mut start = sub.start;
    while start < sub.end {
        let len = BLOCK.min(sub.end - start);
        full.clear();
        if len == BLOCK && extend_full_block(src, n, start, &mut full, &|value: S| value) {
            f(&full);
            start += len;
            continue;
        }
        if S::SIZE == 8 && len == BLOCK {
            // Eight planes of eight bytes are an 8x8 byte matrix to transpose.
            for (group, chunk) in values.chunks_exact_mut(8).enumerate() {
                let at = start + 8 * group;
                let mut rows = [0u64; 8];
                for (row, plane) in rows.iter_mut().zip(src.chunks_exact(n)) {
                    let bytes = plane.get(at..).and_then(|rest| rest.first_chunk::<8>());
                    *row = bytes.map_or(0, |b| u64::from_le_bytes(*b));
                }
                transpose8x8(&mut rows);
                for (value, row) in chunk.iter_mut().zip(rows) {
                    *value = S::from_le_slice(&row.to_le_bytes());
                }
            }
        } else {
            gathered.fill(S::Word::default());
            // Byte `b` of the block's elements comes from plane `b`; shifting
            // whole planes into lanes of the element's width vectorises.
            for (b, plane) in src.chunks_exact(n).take(S::SIZE).enumerate() {
                let part = plane.get(start..start + len).unwrap_or_default();
                let shift = 8 * b as u32;
                for (word, &byte) in gathered.iter_mut().zip(part) {
                    *word |= S::Word::from(byte) << shift;
                }
            }
            for (value, &word) in values.iter_mut().zip(gathered.iter().take(len)) {
                *value = S::from_word(word);
            }
        }
        f(values.get(..len).unwrap_or_default());
        start += len;
    }
}

/// Appends `map` of the values `sub` of the split page `src` of `n` values
/// to `out`. Full blocks go straight from the byte planes into `out` (the
/// last interleave writes the output); the rest goes through
/// [`for_each_block_in`].
#[inline]
pub(crate) fn extend_in<S: NativeType, T>(
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    out: &mut Vec<T>,
    map: impl Fn(S) -> T,
) {
    let mut start = sub.start;
    while start + BLOCK <= sub.end && extend_full_block(src, n, start, out, &map) {
        start += BLOCK;
    }
    for_each_block_in::<S>(src, n, start..sub.end, |block| {
        out.extend(block.iter().map(|&value| map(value)))
    });
}

/// Unsplits the full block of 2-, 4- or 8-byte values that starts at
/// element `start`, appending `map` of each to `out`. Pairs of byte planes
/// are interleaved into 16-bit words, pairs of those into 32-bit words and
/// so on: each step is a loop over fixed-size arrays that the compiler turns
/// into vector unpack instructions, and the last one writes `out`. False
/// (and nothing appended) for other widths or short planes.
#[inline(always)]
fn extend_full_block<S: NativeType, T>(
    src: &[u8],
    n: usize,
    start: usize,
    out: &mut Vec<T>,
    map: &impl Fn(S) -> T,
) -> bool {
    let plane = |b: usize| {
        src.get(b * n + start..)
            .and_then(|rest| rest.first_chunk::<BLOCK>())
    };
    let mut w16 = [[0u16; BLOCK]; 4];
    let planes = S::SIZE.min(8);
    if planes < 2 {
        return false;
    }
    for (k, pair) in w16.iter_mut().enumerate().take(planes / 2) {
        let (Some(lo), Some(hi)) = (plane(2 * k), plane(2 * k + 1)) else {
            return false;
        };
        interleave(lo, hi, pair, u16::from, 8);
    }
    let [a, b, c, d] = &w16;
    match S::SIZE {
        2 => out.extend(a.iter().map(|&w| map(S::from_bits64(u64::from(w))))),
        4 => out.extend(a.iter().zip(b).map(|(&lo, &hi)| {
            map(S::from_bits64(u64::from(
                u32::from(lo) | (u32::from(hi) << 16),
            )))
        })),
        8 => {
            let (mut lo, mut hi) = ([0u32; BLOCK], [0u32; BLOCK]);
            interleave(a, b, &mut lo, u32::from, 16);
            interleave(c, d, &mut hi, u32::from, 16);
            out.extend(
                lo.iter()
                    .zip(&hi)
                    .map(|(&l, &h)| map(S::from_bits64(u64::from(l) | (u64::from(h) << 32)))),
            );
        }
        _ => return false,
    }
    true
}

/// `out[i] = widen(lo[i]) | widen(hi[i]) << shift`.
#[inline(always)]
fn interleave<N: Copy, W: Copy + BitOr<Output = W> + Shl<u32, Output = W>>(
    lo: &[N; BLOCK],
    hi: &[N; BLOCK],
    out: &mut [W; BLOCK],
    widen: impl Fn(N) -> W,
    shift: u32,
) {
    for (o, (&l, &h)) in out.iter_mut().zip(lo.iter().zip(hi)) {
        *o = widen(l) | (widen(h) << shift);
    }
}

/// Transposes the 8x8 byte matrix whose row `r` is `rows[r]` and whose
/// column `c` is byte `c` (little-endian) of each row: afterwards byte `c`
/// of `rows[r]` is what byte `r` of `rows[c]` was. Swaps the off-diagonal
/// 4x4, then 2x2, then 1x1 blocks.
#[inline]
fn transpose8x8(rows: &mut [u64; 8]) {
    let [r0, r1, r2, r3, r4, r5, r6, r7] = rows;
    #[inline]
    fn swap(a: &mut u64, b: &mut u64, shift: u32, mask: u64) {
        let t = ((*a >> shift) ^ *b) & mask;
        *a ^= t << shift;
        *b ^= t;
    }
    const M32: u64 = 0x0000_0000_FFFF_FFFF;
    const M16: u64 = 0x0000_FFFF_0000_FFFF;
    const M8: u64 = 0x00FF_00FF_00FF_00FF;
    swap(r0, r4, 32, M32);
    swap(r1, r5, 32, M32);
    swap(r2, r6, 32, M32);
    swap(r3, r7, 32, M32);
    swap(r0, r2, 16, M16);
    swap(r1, r3, 16, M16);
    swap(r4, r6, 16, M16);
    swap(r5, r7, 16, M16);
    swap(r0, r1, 8, M8);
    swap(r2, r3, 8, M8);
    swap(r4, r5, 8, M8);
    swap(r6, r7, 8, M8);
}

/// Appends the split encoding of `values` to `out`.
pub(crate) fn encode<S: NativeType>(values: impl Iterator<Item = S> + Clone, out: &mut Vec<u8>) {
    out.reserve(values.size_hint().0.saturating_mul(S::SIZE));
    for b in 0..S::SIZE {
        out.extend(
            values
                .clone()
                .map(|value| value.to_le_bytes().as_ref().get(b).copied().unwrap_or(0)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect<S: NativeType>(src: &[u8], n: usize) -> Vec<S> {
        let mut out = Vec::new();
        for_each_block::<S>(src, n, |block| out.extend_from_slice(block));
        out
    }

    fn split<S: NativeType>(values: &[S]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(values.iter().copied(), &mut out);
        out
    }

    #[test]
    fn worked_examples() {
        assert_eq!(split(&[0x0102u16, 0x0304]), [0x02, 0x04, 0x01, 0x03]);
        assert_eq!(
            collect::<u16>(&[0x02, 0x04, 0x01, 0x03], 2),
            [0x0102, 0x0304]
        );
        assert_eq!(
            split(&[1.0f32, 2.0]),
            [0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x3F, 0x40]
        );
    }

    #[test]
    fn round_trips_across_block_edges() {
        for n in [0, 1, 2, 3, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7] {
            let values: Vec<u64> = (0..n as u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect();
            assert_eq!(collect::<u64>(&split(&values), n), values, "n = {n}");
            let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
            assert_eq!(collect::<u32>(&split(&values), n), values, "n = {n}");
            let values: Vec<i16> = (0..n as i16).map(|i| i.wrapping_mul(-7919)).collect();
            assert_eq!(collect::<i16>(&split(&values), n), values, "n = {n}");
        }
    }

    #[test]
    fn transpose_of_an_8x8_byte_matrix() {
        let mut rows: [u64; 8] = std::array::from_fn(|r| {
            u64::from_le_bytes(std::array::from_fn(|c| (16 * r + c) as u8))
        });
        transpose8x8(&mut rows);
        for (r, row) in rows.iter().enumerate() {
            assert_eq!(
                row.to_le_bytes(),
                std::array::from_fn::<u8, 8, _>(|c| (16 * c + r) as u8)
            );
        }
    }

    #[test]
    fn reals_keep_their_bits() {
        let values = [
            f64::NAN,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE / 4.0,
            f64::MAX,
        ];
        let back = collect::<f64>(&split(&values), values.len());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
    }
}
