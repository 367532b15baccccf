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
        push_each(out, deltas, |d| {
            sum = sum.wrapping_add(d);
            sum.widen()
        });
        self.sum = sum;
    }
}

/// Appends `value(d)` for each of `deltas` to `out`, written straight into
/// its spare capacity. The running sums above, written through
/// `Vec::extend` of a closure that updates the sum, kept the sum in memory
/// (it is captured by reference, and may alias the output for all the
/// compiler knows): each value then waited for the store and load of the
/// one before, about 2 ns a value instead of a few tenths.
#[inline(always)]
fn push_each<D: Copy>(out: &mut Vec<u64>, deltas: &[D], mut value: impl FnMut(D) -> u64) {
    out.reserve(deltas.len());
    let len = out.len();
    let spare = out.spare_capacity_mut();
    let written = spare.len().min(deltas.len());
    for (slot, &d) in spare.iter_mut().zip(deltas) {
        slot.write(value(d));
    }
    // SAFETY: the first `written` slots past `len` were written above
    // (`zip` stops at the shorter of the two, which has `written` items).
    unsafe { out.set_len(len + written) };
}

impl RunningSum<u64> {
    /// A sum that starts at `sum`.
    pub(crate) fn starting_at(sum: u64) -> Self {
        Self { sum }
    }

    /// Appends the values of byte-wide deltas to `out`.
    #[inline]
    pub(crate) fn extend_narrow(&mut self, deltas: &[u8], out: &mut Vec<u64>) {
        let mut sum = self.sum;
        push_each(out, deltas, |d| {
            sum = sum.wrapping_add(u64::from(d));
            sum
        });
        self.sum = sum;
    }
}

/// A split page of `n` deltas of type `S` whose deltas past the first fit
/// a byte: the first delta, whole, and the low byte plane, whose bytes past
/// the first are the other deltas. Offset pages look like this: the first
/// delta is the page's first end offset in the cluster, the others are the
/// sizes of entries' collections.
pub(crate) fn narrow_split<S: Delta>(src: &[u8], n: usize) -> Option<(u64, &[u8])> {
    if n == 0 || src.len() != n.checked_mul(S::SIZE)? {
        return None;
    }
    let (low, high) = src.split_at(n);
    let mut first = u64::from(*low.first()?);
    for (plane, bytes) in high.chunks_exact(n).enumerate() {
        let (&head, rest) = bytes.split_first()?;
        first |= u64::from(head) << (8 * (plane + 1));
        // Whole chunks OR-ed together vectorise; a non-zero chunk stops early.
        let zero = rest
            .chunks(4096)
            .all(|chunk| chunk.iter().fold(0u8, |acc, &b| acc | b) == 0);
        if !zero {
            return None;
        }
    }
    Some((first, low))
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
        assert_eq!(narrow_split::<u32>(&page, 4), Some((3, &page[..4])));
        let mut out = Vec::new();
        RunningSum::<u64>::default().extend_narrow(&page[..4], &mut out);
        assert_eq!(out, [3, 5, 5, 9]);
        // A later delta of 256 has a byte in the second plane.
        let mut wide = page;
        wide[5] = 1;
        assert_eq!(narrow_split::<u32>(&wide, 4), None);
        wide[5] = 0;
        wide[15] = 1;
        assert_eq!(narrow_split::<u32>(&wide, 4), None);
        // The first delta may be wide: a page that starts past the
        // cluster's first entries.
        let mut later = page;
        later[0] = 0x34;
        later[4] = 0x12;
        later[12] = 0x01;
        assert_eq!(
            narrow_split::<u32>(&later, 4),
            Some((0x0100_1234, &later[..4]))
        );
        assert_eq!(narrow_split::<u64>(&later, 2), None);
        assert_eq!(narrow_split::<u32>(&page[..3], 4), None);
        assert_eq!(narrow_split::<u32>(&[], 0), None);
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
