//! Reduced-precision reals (spec: column types Real16, Real32Trunc,
//! Real32Quant).
//!
//! **Real16** is IEEE 754 half precision, 16 bits, plain or split. ROOT
//! converts with `HalfToFloat` / `FloatToHalf` (core/foundation/inc/ROOT/
//! RFloat16.hxx): exact widening, round-to-nearest-even narrowing. A double
//! field is read as `(double) HalfToFloat(h)`.
//!
//! ```text
//!  Real16 [1.0, -2.0]  ->  00 3C 00 C0
//! ```
//!
//! **Real32Trunc** with `k` bits (10 to 31) keeps the top `k` bits of the
//! float's IEEE representation: sign, 8 exponent bits and `k - 9` mantissa
//! bits. Each item is `bits >> (32 - k)`, bit-packed (see `bits`); reading
//! shifts it back, `f32::from_bits(item << (32 - k))`, so the cut mantissa
//! bits read as zero. ROOT's writer truncates (no rounding). A double field
//! is read as `(double)` of that float (tree/ntuple/src/RColumnElement.hxx,
//! `RColumnElement<float|double, kReal32Trunc>`).
//!
//! ```text
//!  k = 12: 1.5f = 0x3FC00000 -> item 0x3FC -> FC 03 (12 bits)
//! ```
//!
//! **Real32Quant** with `k` bits (1 to 32) and the column's inclusive range
//! `[min, max]` stores `q = (u32)(0.5 + (x - min) * ((2^k - 1) / (max - min)))`
//! bit-packed. ROOT reads (`Quantize::UnquantizeReals`, same file), all in
//! double precision, then casts to the field type:
//!
//! ```text
//!  scale = (max - min) / (2^k - 1)         (2^k - 1 converted to double)
//!  e     = (double) q * scale + min        (a multiply, then an add; no FMA)
//!  e     = std::min(e, max)                (i.e. max < e ? max : e)
//!  value = (T) e                           (T = float or double)
//!
//!  k = 2, [-1, 1]: q = 0, 1, 2, 3 -> -1, -1/3, 1/3, 1
//! ```

use super::native::NativeType;

/// The single precision value of half precision bits, as ROOT's portable
/// `HalfToFloat` computes it: exact, and NaN payloads kept bit for bit.
///
/// Branch-free, so that loops over a page compile to vector code: the three
/// cases are computed for every value and one is picked.
#[inline]
pub(crate) fn half_to_f32(half: u16) -> f32 {
    /// The half's exponent bits, moved to where a float's are.
    const EXPONENT: u32 = 0x7C00 << 13;
    /// The bits of the float 2^-14, the smallest normal half.
    const TWO_TO_MINUS_14: u32 = 113 << 23;
    let h = u32::from(half);
    let sign = (h & 0x8000) << 16;
    // The exponent and mantissa, at a float's bit positions.
    let magnitude = (h & 0x7FFF) << 13;
    let exponent = magnitude & EXPONENT;
    // Normal numbers: the exponent's bias goes from 15 to 127.
    let normal = magnitude + ((127 - 15) << 23);
    // Infinities and NaNs: all exponent bits set, the mantissa (a NaN's
    // payload, signalling or not) kept as it is.
    let special = magnitude | 0x7F80_0000;
    // Zeros and subnormals, mantissa * 2^-24: the float 2^-14 * (1 + m/2^10)
    // less 2^-14, exactly.
    let subnormal =
        (f32::from_bits(magnitude + TWO_TO_MINUS_14) - f32::from_bits(TWO_TO_MINUS_14)).to_bits();
    let bits = if exponent == EXPONENT {
        special
    } else if exponent == 0 {
        subnormal
    } else {
        normal
    };
    f32::from_bits(sign | bits)
}

/// The half precision bits of `value`, rounded to nearest even.
#[inline]
pub(crate) fn f32_to_half(value: f32) -> u16 {
    half::f16::from_f32(value).to_bits()
}

/// The float whose top `bits` bits (10 to 31) are `item`.
#[inline]
pub(crate) fn trunc_to_f32(item: u32, bits: u32) -> f32 {
    f32::from_bits(item << (32 - bits))
}

/// The top `bits` bits (10 to 31) of `value`.
#[inline]
pub(crate) fn f32_to_trunc(value: f32, bits: u32) -> u32 {
    value.to_bits() >> (32 - bits)
}

/// ROOT's quantisation of reals in `[min, max]` to `bits` bits (1 to 32).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quantizer {
    min: f64,
    max: f64,
    /// `2^bits - 1`, as a double.
    quant_max: f64,
    /// `(max - min) / quant_max`, the step for reading.
    step: f64,
}

impl Quantizer {
    /// A quantiser; the caller has checked `bits` and that the range is finite.
    pub(crate) fn new(min: f64, max: f64, bits: u32) -> Self {
        let quant_max = ((1u64 << bits) - 1) as f64;
        Self {
            min,
            max,
            quant_max,
            step: (max - min) / quant_max,
        }
    }

    /// The real of quantised integer `q`, as ROOT computes it.
    #[inline]
    pub(crate) fn unquantize(&self, q: u32) -> f64 {
        let e = f64::from(q) * self.step + self.min;
        if self.max < e {
            self.max
        } else {
            e
        }
    }

    /// The quantised integer of `value`, or `None` if it lies outside the
    /// range (or is NaN), which ROOT refuses to write.
    pub(crate) fn quantize<T: NativeType>(&self, value: T) -> Option<u32> {
        let x = value.cast::<f64>();
        if !(self.min <= x && x <= self.max) {
            return None;
        }
        let scale = self.quant_max / (self.max - self.min);
        let e = 0.5 + (x - self.min) * scale;
        // `min == max` gives 0 * inf = NaN, which casts to 0.
        Some(e as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_worked_example_and_specials() {
        assert_eq!(f32_to_half(1.0).to_le_bytes(), [0x00, 0x3C]);
        assert_eq!(f32_to_half(-2.0).to_le_bytes(), [0x00, 0xC0]);
        assert_eq!(half_to_f32(0x3C00), 1.0);
        assert_eq!(half_to_f32(0x7BFF), 65504.0);
        assert_eq!(half_to_f32(0x0001), 2f32.powi(-24)); // smallest denormal
        assert_eq!(half_to_f32(0x03FF), 1023.0 * 2f32.powi(-24)); // largest denormal
        assert_eq!(half_to_f32(0x8000).to_bits(), 0x8000_0000); // -0.0
        assert_eq!(half_to_f32(0x7C00), f32::INFINITY);
        assert_eq!(half_to_f32(0xFC00), f32::NEG_INFINITY);
        // NaN payloads stay as they are, signalling ones too.
        assert_eq!(half_to_f32(0x7C01).to_bits(), 0x7F80_2000);
        assert_eq!(half_to_f32(0xFE00).to_bits(), 0xFFC0_0000);
        // Narrowing rounds to nearest even.
        assert_eq!(f32_to_half(1.0 + 2f32.powi(-11)), 0x3C00);
        assert_eq!(f32_to_half(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02);
        assert_eq!(f32_to_half(1e6), 0x7C00);
    }

    #[test]
    fn every_half_widens_as_the_half_crate_does_but_keeps_nan_payloads() {
        for h in 0..=u16::MAX {
            let expected = if h & 0x7C00 == 0x7C00 && h & 0x03FF != 0 {
                // ROOT's HalfToFloat: sign, all exponent bits, the payload.
                u32::from(h & 0x8000) << 16 | 0x7F80_0000 | u32::from(h & 0x03FF) << 13
            } else {
                half::f16::from_bits(h).to_f32().to_bits()
            };
            assert_eq!(half_to_f32(h).to_bits(), expected, "{h:#06x}");
        }
    }

    #[test]
    fn every_half_widens_exactly() {
        for h in 0..=u16::MAX {
            let f = half_to_f32(h);
            if f.is_nan() {
                continue;
            }
            assert_eq!(f32_to_half(f), h, "{h:#06x}");
        }
    }

    #[test]
    fn trunc_worked_example() {
        assert_eq!(f32_to_trunc(1.5, 12), 0x3FC);
        assert_eq!(trunc_to_f32(0x3FC, 12), 1.5);
        // The cut mantissa bits read as zero: truncation toward zero.
        let x = f32::from_bits(0x3FAB_CDEF);
        assert_eq!(trunc_to_f32(f32_to_trunc(x, 16), 16).to_bits(), 0x3FAB_0000);
        assert_eq!(
            trunc_to_f32(f32_to_trunc(-0.0, 10), 10).to_bits(),
            0x8000_0000
        );
        assert_eq!(
            trunc_to_f32(f32_to_trunc(f32::INFINITY, 10), 10),
            f32::INFINITY
        );
        assert!(trunc_to_f32(f32_to_trunc(f32::NAN, 10), 10).is_nan());
        assert_eq!(trunc_to_f32(f32_to_trunc(x, 31), 31).to_bits(), 0x3FAB_CDEE);
    }

    #[test]
    fn quant_worked_example() {
        let q = Quantizer::new(-1.0, 1.0, 2);
        assert_eq!(q.unquantize(0), -1.0);
        assert_eq!(q.unquantize(1), 1.0 * (2.0 / 3.0) - 1.0);
        assert_eq!(q.unquantize(2), 2.0 * (2.0 / 3.0) - 1.0);
        assert_eq!(q.unquantize(3), 1.0);
        assert_eq!(q.quantize(-1.0f64), Some(0));
        assert_eq!(q.quantize(-0.4f64), Some(1));
        assert_eq!(q.quantize(1.0f32), Some(3));
        assert_eq!(q.quantize(1.5f64), None);
        assert_eq!(q.quantize(f64::NAN), None);
    }

    #[test]
    fn quant_never_leaves_the_range() {
        for bits in [1, 7, 16, 31, 32] {
            let q = Quantizer::new(-3.7, 1e5, bits);
            let top = ((1u64 << bits) - 1) as u32;
            for item in [0, 1, top / 2, top - 1, top] {
                let v = q.unquantize(item);
                assert!((-3.7..=1e5).contains(&v), "bits {bits} item {item}: {v}");
            }
            assert!((q.unquantize(top) - 1e5).abs() <= 1e-10, "bits {bits}");
            assert_eq!(q.quantize(1e5f64), Some(top));
            assert_eq!(q.quantize(-3.7f64), Some(0));
        }
        // A zero-width range reads and writes its single value.
        let q = Quantizer::new(2.5, 2.5, 8);
        assert_eq!(q.quantize(2.5f64), Some(0));
        assert_eq!(q.unquantize(0), 2.5);
        assert_eq!(q.unquantize(255), 2.5);
    }
}
