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

use super::native::NativeType;
use super::BLOCK;

/// Calls `f` with consecutive blocks of the `n` values of the split page
/// `src`, whose length is `n * S::SIZE`.
#[inline]
pub(crate) fn for_each_block<S: NativeType>(src: &[u8], n: usize, mut f: impl FnMut(&[S])) {
    let mut gathered = [S::Bytes::default(); BLOCK];
    let mut values = [S::default(); BLOCK];
    let mut start = 0;
    while start < n {
        let len = BLOCK.min(n - start);
        // Gather byte `b` of the block's elements from plane `b`.
        for (b, plane) in src.chunks_exact(n).take(S::SIZE).enumerate() {
            let part = plane.get(start..start + len).unwrap_or_default();
            for (bytes, &byte) in gathered.iter_mut().zip(part) {
                if let Some(slot) = bytes.as_mut().get_mut(b) {
                    *slot = byte;
                }
            }
        }
        for (value, bytes) in values.iter_mut().zip(gathered.iter().take(len)) {
            *value = S::from_le_bytes(*bytes);
        }
        f(values.get(..len).unwrap_or_default());
        start += len;
    }
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
        assert_eq!(collect::<u16>(&[0x02, 0x04, 0x01, 0x03], 2), [0x0102, 0x0304]);
        assert_eq!(split(&[1.0f32, 2.0]), [0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x3F, 0x40]);
    }

    #[test]
    fn round_trips_across_block_edges() {
        for n in [0, 1, 2, 3, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7] {
            let values: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
            assert_eq!(collect::<u64>(&split(&values), n), values, "n = {n}");
            let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
            assert_eq!(collect::<u32>(&split(&values), n), values, "n = {n}");
            let values: Vec<i16> = (0..n as i16).map(|i| i.wrapping_mul(-7919)).collect();
            assert_eq!(collect::<i16>(&split(&values), n), values, "n = {n}");
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
