//! Delta (spec: "Encodings"; SplitIndex32, SplitIndex64).
//!
//! Offset columns store the first element as is and every other element as
//! the difference from the one before; the differences are then split.
//! Decoding is a running sum, wrapping at the column's width (ROOT:
//! `CastDeltaSplitUnpack` in tree/ntuple/src/RColumnElement.hxx adds in the
//! 32-bit type for SplitIndex32):
//!
//! ```text
//!  end offsets  [3, 5, 5, 9]
//!  deltas       [3, 2, 0, 4]
//!  SplitIndex32 03 02 00 04 | 00 00 00 00 | 00 00 00 00 | 00 00 00 00
//! ```
//!
//! Each page starts its sum from zero: pages decode on their own.

use super::native::NativeType;

/// An unsigned index type of an offset column.
pub(crate) trait Delta: NativeType {
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_sub(self, other: Self) -> Self;
    fn widen(self) -> u64;
}

macro_rules! delta {
    ($t:ty) => {
        impl Delta for $t {
            #[inline]
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            #[inline]
            fn wrapping_sub(self, other: Self) -> Self {
                <$t>::wrapping_sub(self, other)
            }
            #[inline]
            fn widen(self) -> u64 {
                u64::from(self)
            }
        }
    };
}

delta!(u32);
delta!(u64);

/// Turns deltas into values: a running sum carried across blocks.
#[derive(Debug, Default)]
pub(crate) struct RunningSum<S> {
    sum: S,
}

impl<S: Delta> RunningSum<S> {
    /// Appends the values of a block of deltas to `out`.
    #[inline]
    pub(crate) fn extend(&mut self, deltas: &[S], out: &mut Vec<u64>) {
        let mut sum = self.sum;
        out.extend(deltas.iter().map(|&d| {
            sum = sum.wrapping_add(d);
            sum.widen()
        }));
        self.sum = sum;
    }
}

impl RunningSum<u64> {
    /// Appends the values of byte-wide deltas to `out`.
    #[inline]
    pub(crate) fn extend_narrow(&mut self, deltas: &[u8], out: &mut Vec<u64>) {
        let mut sum = self.sum;
        out.extend(deltas.iter().map(|&d| {
            sum = sum.wrapping_add(u64::from(d));
            sum
        }));
        self.sum = sum;
    }
}

/// The low byte plane of the split page `src` of `n` values, when every
/// other plane is zero: the deltas are then these bytes.
pub(crate) fn narrow_split(src: &[u8], n: usize) -> Option<&[u8]> {
    let (low, high) = src.split_at_checked(n)?;
    // Whole chunks OR-ed together vectorise; a non-zero chunk stops early.
    let zero = high
        .chunks(4096)
        .all(|chunk| chunk.iter().fold(0u8, |acc, &b| acc | b) == 0);
    zero.then_some(low)
}

/// The deltas of `values`: the first as is, then the differences.
pub(crate) fn deltas<S: Delta>(values: &[S]) -> impl Iterator<Item = S> + Clone + '_ {
    let previous = std::iter::once(S::default()).chain(values.iter().copied());
    values.iter().zip(previous).map(|(&v, p)| v.wrapping_sub(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        let d: Vec<u32> = deltas(&[3u32, 5, 5, 9]).collect();
        assert_eq!(d, [3, 2, 0, 4]);
        let mut out = Vec::new();
        RunningSum::default().extend(&d, &mut out);
        assert_eq!(out, [3, 5, 5, 9]);
    }

    #[test]
    fn sums_carry_across_blocks() {
        let mut sum = RunningSum::<u64>::default();
        let mut out = Vec::new();
        sum.extend(&[1, 2], &mut out);
        sum.extend(&[3], &mut out);
        assert_eq!(out, [1, 3, 6]);
    }

    #[test]
    fn narrow_pages_take_the_low_plane() {
        // Deltas [3, 2, 0, 4] split in 32 bits: the upper planes are zero.
        let page = [3, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(narrow_split(&page, 4), Some(&page[..4]));
        let mut out = Vec::new();
        RunningSum::<u64>::default().extend_narrow(&page[..4], &mut out);
        assert_eq!(out, [3, 5, 5, 9]);
        // A delta of 256 has a byte in the second plane.
        let mut wide = page;
        wide[5] = 1;
        assert_eq!(narrow_split(&wide, 4), None);
        assert_eq!(narrow_split(&page[..3], 4), None);
    }

    #[test]
    fn wrapping() {
        // Decreasing offsets (corrupt, or wrapped) still decode, in the column's width.
        let values = [u32::MAX, 0, 7, 2];
        let d: Vec<u32> = deltas(&values).collect();
        let mut out = Vec::new();
        RunningSum::default().extend(&d, &mut out);
        assert_eq!(out, [u32::MAX as u64, 0, 7, 2]);
        let mut out = Vec::new();
        RunningSum::<u32>::default().extend(&[u32::MAX, 2], &mut out);
        assert_eq!(out, [u32::MAX as u64, 1]);
        let mut out = Vec::new();
        RunningSum::<u64>::default().extend(&[u64::MAX, 2], &mut out);
        assert_eq!(out, [u64::MAX, 1]);
        assert_eq!(deltas::<u64>(&[]).count(), 0);
    }
}
