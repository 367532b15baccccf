//! Bit-packed pages (spec: "Encodings"; Bit, Real32Trunc, Real32Quant).
//!
//! All three use one layout: items of `k` bits back to back in a bit stream
//! that fills each byte from its least significant bit. Item `i` occupies
//! stream bits `i*k .. (i+1)*k`, its least significant bit first; stream bit
//! `j` is bit `j % 8` of byte `j / 8`. A page of `n` items is
//! `ceil(n * k / 8)` bytes, and the unused high bits of the last byte carry
//! no meaning (ROOT's Bit packing may leave stale bits there).
//!
//! ```text
//!  Bit, k = 1:  [1, 0, 1, 1, 0, 0, 0, 0, 1]  ->  0x0D 0x01
//!  k = 12:      [0xABC, 0x123]               ->  BC 3A 12
//!               byte 0 = low 8 bits of item 0, byte 1 = its high 4 bits
//!               (0xA) | low 4 bits of item 1 (0x3) << 4, byte 2 = 0x12
//! ```
//!
//! ROOT writes Real32Trunc and Real32Quant through `BitPacking::PackBits`
//! (tree/ntuple/src/RColumnElement.cxx), which fills 64-bit words from their
//! least significant bit and stores them little-endian, the last word only
//! up to its last used byte: the same stream. Bit columns are packed byte by
//! byte with `std::bitset<8>`, bit `i % 8` of byte `i / 8` (the
//! `RColumnElement<bool, kBit>` packer in tree/ntuple/src/RColumnElement.hxx).
//! Arrow's validity and boolean buffers use this bit order too.

/// A growable sequence of bits, packed least significant bit first, as in
/// Arrow's boolean and validity buffers.
///
/// `bytes` always holds exactly `ceil(len / 8)` bytes and the bits past
/// `len` are zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BitVec {
    bytes: Vec<u8>,
    len: usize,
}

impl BitVec {
    /// An empty sequence.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty sequence with room for `bits` bits.
    pub fn with_capacity(bits: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bits.div_ceil(8)),
            len: 0,
        }
    }

    /// The number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The packed bytes, `ceil(len / 8)` of them.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The packed bytes and the number of bits.
    pub fn into_parts(self) -> (Vec<u8>, usize) {
        (self.bytes, self.len)
    }

    /// Bit `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<bool> {
        if i >= self.len {
            return None;
        }
        self.bytes.get(i / 8).map(|byte| byte >> (i % 8) & 1 == 1)
    }

    /// The bits in order.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| {
            self.bytes
                .get(i / 8)
                .is_some_and(|byte| byte >> (i % 8) & 1 == 1)
        })
    }

    /// Makes room for `additional` more bits.
    pub fn reserve(&mut self, additional: usize) {
        let needed = self.len.saturating_add(additional).div_ceil(8);
        self.bytes.reserve(needed.saturating_sub(self.bytes.len()));
    }

    /// Removes all bits.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.len = 0;
    }

    /// Appends one bit.
    pub fn push(&mut self, bit: bool) {
        let shift = self.len % 8;
        if shift == 0 {
            self.bytes.push(0);
        }
        if let Some(last) = self.bytes.last_mut() {
            *last |= u8::from(bit) << shift;
        }
        self.len += 1;
    }

    /// Appends the first `n` bits of `packed` (least significant bit first),
    /// or all its bits if it holds fewer.
    pub fn extend_packed(&mut self, packed: &[u8], n: usize) {
        let n = n.min(packed.len().saturating_mul(8));
        let src = packed.get(..n.div_ceil(8)).unwrap_or_default();
        let shift = self.len % 8;
        if shift == 0 {
            self.bytes.extend_from_slice(src);
        } else {
            // Merge into the partly filled last byte.
            let mut carry = self.bytes.pop().unwrap_or(0);
            self.bytes.reserve(src.len() + 1);
            for &byte in src {
                self.bytes.push(carry | byte << shift);
                carry = byte >> (8 - shift);
            }
            self.bytes.push(carry);
        }
        self.len += n;
        self.trim();
    }

    /// Appends bits `start..start + n` of `packed` (least significant bit
    /// first), or as many of them as `packed` holds.
    pub fn extend_from_bits(&mut self, packed: &[u8], start: usize, n: usize) {
        let available = packed.len().saturating_mul(8).saturating_sub(start);
        let n = n.min(available);
        let first = start / 8;
        let shift = start % 8;
        let bytes = packed.get(first..).unwrap_or_default();
        if shift == 0 {
            self.extend_packed(bytes, n);
            return;
        }
        // Realign to a byte boundary: each byte takes the high bits of one
        // stored byte and the low bits of the next.
        let aligned: Vec<u8> = (0..n.div_ceil(8))
            .map(|i| {
                let lo = bytes.get(i).copied().unwrap_or(0) >> shift;
                let hi = bytes.get(i + 1).copied().unwrap_or(0) << (8 - shift);
                lo | hi
            })
            .collect();
        self.extend_packed(&aligned, n);
    }

    /// Drops bytes past `ceil(len / 8)` and clears the bits past `len`.
    fn trim(&mut self) {
        self.bytes.truncate(self.len.div_ceil(8));
        let used = self.len % 8;
        if used != 0 {
            if let Some(last) = self.bytes.last_mut() {
                *last &= (1u8 << used) - 1;
            }
        }
    }
}

impl Extend<bool> for BitVec {
    fn extend<I: IntoIterator<Item = bool>>(&mut self, iter: I) {
        let mut iter = iter.into_iter();
        self.reserve(iter.size_hint().0);
        // Fill the partial last byte bit by bit, then whole bytes at once.
        while self.len % 8 != 0 {
            match iter.next() {
                Some(bit) => self.push(bit),
                None => return,
            }
        }
        loop {
            let mut byte = 0u8;
            let mut count = 0;
            for bit in iter.by_ref().take(8) {
                byte |= u8::from(bit) << count;
                count += 1;
            }
            if count == 0 {
                return;
            }
            self.bytes.push(byte);
            self.len += count;
            if count < 8 {
                return;
            }
        }
    }
}

impl FromIterator<bool> for BitVec {
    fn from_iter<I: IntoIterator<Item = bool>>(iter: I) -> Self {
        let mut bits = BitVec::new();
        bits.extend(iter);
        bits
    }
}

/// Reads item `i` of `bits` bits (1 to 32) from the bit stream `src`; bits
/// past the end of `src` read as zero.
#[inline]
fn item(src: &[u8], i: usize, bits: u32) -> u32 {
    let pos = i * bits as usize;
    let (byte, shift) = (pos / 8, pos % 8);
    let word = match src.get(byte..).and_then(|rest| rest.first_chunk::<8>()) {
        Some(word) => u64::from_le_bytes(*word),
        None => {
            let mut word = [0u8; 8];
            let rest = src.get(byte..).unwrap_or_default();
            for (dst, &b) in word.iter_mut().zip(rest) {
                *dst = b;
            }
            u64::from_le_bytes(word)
        }
    };
    // `shift + bits <= 39`, so one 64-bit load holds the whole item.
    ((word >> shift) & ((1u64 << bits) - 1)) as u32
}

/// The `n` items of `bits` bits (1 to 32) of the bit stream `src`, which the
/// caller has checked to be `ceil(n * bits / 8)` bytes long.
#[inline]
#[cfg(test)]
pub(crate) fn unpack(src: &[u8], n: usize, bits: u32) -> impl Iterator<Item = u32> + '_ {
    unpack_in(src, 0..n, bits)
}

/// The items `sub` of a bit stream, as [`unpack`] gives them.
pub(crate) fn unpack_in(
    src: &[u8],
    sub: std::ops::Range<usize>,
    bits: u32,
) -> impl Iterator<Item = u32> + '_ {
    sub.map(move |i| item(src, i, bits))
}

/// Appends `map` of the items `sub` of the bit stream `src` of `bits`-bit
/// items (1 to 32) to `out`, as [`unpack_in`] reads them.
///
/// Each width has its own loop over groups of 8 items (`bits` bytes, so a
/// group starts on a byte): with the width a constant, every item's word
/// and shift are constants too, and a group is a few loads, shifts and
/// masks with no branch.
pub(crate) fn extend_unpacked<T>(
    src: &[u8],
    sub: std::ops::Range<usize>,
    bits: u32,
    out: &mut Vec<T>,
    map: impl Fn(u32) -> T,
) {
    macro_rules! by_width {
        ($($b:literal)*) => {
            match bits {
                $($b => extend_unpacked_as::<$b, T>(src, sub, out, map),)*
                _ => out.extend(unpack_in(src, sub, bits).map(map)),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

/// [`extend_unpacked`] for items of `B` bits.
#[inline]
fn extend_unpacked_as<const B: usize, T>(
    src: &[u8],
    sub: std::ops::Range<usize>,
    out: &mut Vec<T>,
    map: impl Fn(u32) -> T,
) {
    const GROUP: usize = 8;
    let mask = (1u64 << B) - 1;
    // Items before the first whole group, one at a time.
    let mut i = sub.start.next_multiple_of(GROUP).min(sub.end);
    out.extend((sub.start..i).map(|k| map(item(src, k, B as u32))));
    while i + GROUP <= sub.end {
        // Group `i / 8` is bytes `i / 8 * B ..` plus `B`; its items lie in
        // the first four 64-bit words read from there.
        let Some(bytes) = src
            .get(i / GROUP * B..)
            .and_then(|rest| rest.first_chunk::<32>())
        else {
            break; // the page's last bytes: the loop below reads them
        };
        let mut words = [0u64; 4];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        }
        let mut items = [0u32; GROUP];
        for (j, item) in items.iter_mut().enumerate() {
            let at = j * B;
            let (w, shift) = (at / 64, at % 64);
            let lo = words.get(w).copied().unwrap_or_default() >> shift;
            // An item that runs into the next word takes its high bits there.
            let hi = if shift + B > 64 {
                words.get(w + 1).copied().unwrap_or_default() << (64 - shift)
            } else {
                0
            };
            *item = ((lo | hi) & mask) as u32;
        }
        out.extend(items.iter().map(|&x| map(x)));
        i += GROUP;
    }
    out.extend((i..sub.end).map(|k| map(item(src, k, B as u32))));
}

/// Appends the low `bits` bits (1 to 32) of each item to `out` as a bit
/// stream, `ceil(n * bits / 8)` bytes with the unused high bits zero.
pub(crate) fn pack(items: impl Iterator<Item = u32>, bits: u32, out: &mut Vec<u8>) {
    let mask = (1u64 << bits) - 1;
    let mut acc = 0u64;
    let mut filled = 0u32;
    for item in items {
        acc |= (u64::from(item) & mask) << filled;
        filled += bits;
        while filled >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            filled -= 8;
        }
    }
    if filled > 0 {
        out.push(acc as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(items: &[u32], bits: u32) -> Vec<u8> {
        let mut out = Vec::new();
        pack(items.iter().copied(), bits, &mut out);
        out
    }

    #[test]
    fn worked_examples() {
        assert_eq!(packed(&[1, 0, 1, 1, 0, 0, 0, 0, 1], 1), [0x0D, 0x01]);
        assert_eq!(packed(&[0xABC, 0x123], 12), [0xBC, 0x3A, 0x12]);
        assert_eq!(
            unpack(&[0xBC, 0x3A, 0x12], 2, 12).collect::<Vec<_>>(),
            [0xABC, 0x123]
        );
    }

    /// A mask of the low `bits` bits (1 to 32).
    fn low_bits(bits: u32) -> u32 {
        u32::MAX >> (32 - bits)
    }

    #[test]
    fn grouped_unpacking_reads_what_unpack_reads() {
        for bits in 1..=32u32 {
            let mask = low_bits(bits);
            for n in [0usize, 1, 7, 8, 9, 16, 31, 40, 41, 100, 333] {
                let items: Vec<u32> = (0..n as u32)
                    .map(|i| i.wrapping_mul(0x9E37_79B9).rotate_left(i % 29) & mask)
                    .collect();
                let mut bytes = packed(&items, bits);
                // Stale bits past the last item (ROOT's Bit pages may have
                // them) must not leak into it.
                if let Some(last) = bytes.last_mut() {
                    let used = (n * bits as usize) % 8;
                    if used != 0 {
                        *last |= 0xFF << used;
                    }
                }
                let starts = [0, 1, 3, 7, 8, 9, 17, n / 2, n.saturating_sub(1), n];
                for start in starts.into_iter().filter(|&s| s <= n) {
                    for end in [start, start + 1, start + 8, start + 13, start + 64, n] {
                        if end > n {
                            continue;
                        }
                        let mut got = vec![u64::MAX];
                        extend_unpacked(&bytes, start..end, bits, &mut got, u64::from);
                        let expected: Vec<u64> = std::iter::once(u64::MAX)
                            .chain(items[start..end].iter().map(|&x| u64::from(x)))
                            .collect();
                        assert_eq!(got, expected, "bits {bits} n {n} items {start}..{end}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_width_round_trips() {
        for bits in 1..=32u32 {
            let mask = low_bits(bits);
            for n in [0usize, 1, 2, 7, 8, 9, 63, 64, 65, 200] {
                let items: Vec<u32> = (0..n as u32)
                    .map(|i| i.wrapping_mul(0x9E37_79B9) & mask)
                    .collect();
                let bytes = packed(&items, bits);
                assert_eq!(
                    bytes.len(),
                    (n * bits as usize).div_ceil(8),
                    "bits {bits} n {n}"
                );
                assert_eq!(
                    unpack(&bytes, n, bits).collect::<Vec<_>>(),
                    items,
                    "bits {bits} n {n}"
                );
            }
        }
    }

    #[test]
    fn items_wider_than_their_width_are_masked_when_packed() {
        assert_eq!(packed(&[0xFFFF_FFFF, 0], 4), [0x0F]);
    }

    #[test]
    fn short_input_reads_zeros() {
        assert_eq!(unpack(&[0xFF], 3, 4).collect::<Vec<_>>(), [0xF, 0xF, 0]);
    }

    #[test]
    fn bitvec_push_get_iter() {
        let mut bits = BitVec::new();
        for i in 0..20 {
            bits.push(i % 3 == 0);
        }
        assert_eq!(bits.len(), 20);
        assert_eq!(bits.as_bytes().len(), 3);
        assert_eq!(bits.get(3), Some(true));
        assert_eq!(bits.get(4), Some(false));
        assert_eq!(bits.get(20), None);
        assert!(bits.iter().enumerate().all(|(i, b)| b == (i % 3 == 0)));
    }

    #[test]
    fn extend_packed_at_every_offset_masks_stale_bits() {
        // 0xFF with n = 3: the five high bits are stale and must not appear.
        let src = [0b1010_1101u8, 0xFF];
        for start in 0..17 {
            let mut bits: BitVec = (0..start).map(|i| i % 2 == 1).collect();
            bits.extend_packed(&src, 11);
            assert_eq!(bits.len(), start + 11);
            let expected: Vec<bool> = (0..start)
                .map(|i| i % 2 == 1)
                .chain((0..11).map(|j| src[j / 8] >> (j % 8) & 1 == 1))
                .collect();
            assert_eq!(bits.iter().collect::<Vec<_>>(), expected, "start {start}");
            assert_eq!(bits.as_bytes().len(), (start + 11).div_ceil(8));
            let used = bits.len() % 8;
            if used != 0 {
                assert_eq!(bits.as_bytes().last().unwrap() >> used, 0, "start {start}");
            }
        }
    }

    #[test]
    fn extend_packed_clamps_to_the_input() {
        let mut bits = BitVec::new();
        bits.extend_packed(&[0xFF], 100);
        assert_eq!(bits.len(), 8);
        bits.extend_packed(&[], 5);
        assert_eq!(bits.len(), 8);
    }

    #[test]
    fn extend_from_bools_matches_push() {
        for start in 0..10 {
            for n in 0..20 {
                let mut a: BitVec = (0..start).map(|i| i % 2 == 0).collect();
                let mut b = a.clone();
                let new: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
                a.extend(new.iter().copied());
                for &bit in &new {
                    b.push(bit);
                }
                assert_eq!(a, b, "start {start} n {n}");
            }
        }
    }

    /// A run of bits taken from any bit position matches the same bits
    /// pushed one by one, whatever the fill of the last byte before it, and
    /// a run past the end of the input is cut short.
    #[test]
    fn extend_from_bits_matches_push() {
        let packed = [0b1011_0010u8, 0x5A, 0xC3, 0x0F];
        let source = BitVec::from_iter((0..32).map(|i| packed[i / 8] >> (i % 8) & 1 == 1));
        for fill in 0..9 {
            for start in 0..33 {
                for n in 0..34 {
                    let mut a: BitVec = (0..fill).map(|i| i % 3 == 0).collect();
                    let mut b = a.clone();
                    a.extend_from_bits(&packed, start, n);
                    for i in start..(start + n).min(32) {
                        b.push(source.get(i).unwrap());
                    }
                    assert_eq!(a, b, "fill {fill} start {start} n {n}");
                }
            }
        }
    }
}
