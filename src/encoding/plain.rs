//! Plain pages: little-endian values back to back (spec: "Encodings"; every
//! non-split, non-packed column type, and Switch).
//!
//! ```text
//!  UInt16 [0x0102, 0x0304]  ->  02 01 04 03
//!  Real32 [1.0]             ->  00 00 80 3F
//!  Switch [(index 5, tag 2)] -> 05 00 00 00 00 00 00 00  02 00 00 00
//!                               64-bit index              32-bit tag
//! ```
//!
//! A Switch element is 12 bytes, the index then the tag, never split
//! (ROOT: `RColumnElement<RColumnSwitch, kSwitch>` copies 12 bytes per
//! element in tree/ntuple/src/RColumnElement.hxx).

use super::native::NativeType;
use super::BLOCK;

/// Calls `f` with consecutive blocks of the values in `src`, whose length is
/// a multiple of `S::SIZE`.
#[inline]
pub(crate) fn for_each_block<S: NativeType>(src: &[u8], mut f: impl FnMut(&[S])) {
    let mut values = [S::default(); BLOCK];
    for chunk in src.chunks(BLOCK * S::SIZE) {
        let mut len = 0;
        for (value, bytes) in values.iter_mut().zip(chunk.chunks_exact(S::SIZE)) {
            *value = S::from_le_slice(bytes);
            len += 1;
        }
        f(values.get(..len).unwrap_or_default());
    }
}

/// Appends the little-endian bytes of `values` to `out`.
pub(crate) fn encode<S: NativeType>(values: impl Iterator<Item = S>, out: &mut Vec<u8>) {
    for value in values {
        out.extend_from_slice(value.to_le_bytes().as_ref());
    }
}

/// Size of one Switch element: a 64-bit index and a 32-bit tag.
pub(crate) const SWITCH_SIZE: usize = 12;

/// Appends the index and tag of each 12-byte Switch element of `src`.
pub(crate) fn decode_switch(src: &[u8], index: &mut Vec<u64>, tag: &mut Vec<u32>) {
    for element in src.chunks_exact(SWITCH_SIZE) {
        let (i, t) = element.split_at(8);
        index.push(u64::from_le_slice(i));
        tag.push(u32::from_le_slice(t));
    }
}

/// Appends one 12-byte Switch element per pair.
pub(crate) fn encode_switch(index: &[u64], tag: &[u32], out: &mut Vec<u8>) {
    for (i, t) in index.iter().zip(tag) {
        out.extend_from_slice(&i.to_le_bytes());
        out.extend_from_slice(&t.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect<S: NativeType>(src: &[u8]) -> Vec<S> {
        let mut out = Vec::new();
        for_each_block::<S>(src, |block| out.extend_from_slice(block));
        out
    }

    #[test]
    fn worked_example() {
        let mut bytes = Vec::new();
        encode([0x0102u16, 0x0304].into_iter(), &mut bytes);
        assert_eq!(bytes, [0x02, 0x01, 0x04, 0x03]);
        assert_eq!(collect::<u16>(&bytes), [0x0102, 0x0304]);
    }

    #[test]
    fn blocks_cover_long_and_empty_input() {
        let values: Vec<u64> = (0..(BLOCK as u64 * 3 + 5))
            .map(|i| i * 0x0101_0101_0101)
            .collect();
        let mut bytes = Vec::new();
        encode(values.iter().copied(), &mut bytes);
        assert_eq!(collect::<u64>(&bytes), values);
        assert!(collect::<u64>(&[]).is_empty());
    }

    #[test]
    fn switch_layout() {
        let mut bytes = Vec::new();
        encode_switch(&[5, u64::MAX], &[2, 0x0A0B_0C0D], &mut bytes);
        assert_eq!(
            bytes,
            [
                5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, // index 5, tag 2
                0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x0D, 0x0C, 0x0B, 0x0A,
            ]
        );
        let (mut index, mut tag) = (Vec::new(), Vec::new());
        decode_switch(&bytes, &mut index, &mut tag);
        assert_eq!(index, [5, u64::MAX]);
        assert_eq!(tag, [2, 0x0A0B_0C0D]);
    }
}
